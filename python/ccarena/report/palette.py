"""The report's flavor colours: one colour per flavor in every figure of a report, as an object
the figures are given (:class:`FlavorPalette`).

Colours are colour-blind safe; a few common flavors are pinned to the same colour in every
report (CUBIC blue, Reno vermilion, …), the others take the free colours in the order the report
meets them. A report fixes the order once (:meth:`FlavorPalette.set_order`) and hands the
assignment to the processes drawing in parallel (:meth:`FlavorPalette.slots`,
:meth:`FlavorPalette.restore`).
"""

from __future__ import annotations

from typing import Sequence

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#332288", "#117733", "#882255", "#999933", "#44AA99", "#AA4499", "#DDCC77",
           "#88CCEE", "#CC6677")
"""Flavor colours: Okabe & Ito's colour-blind-safe set ("Color Universal Design", 2008; yellow
left out, unreadable on white) followed by Paul Tol's "muted" scheme (personal.sron.nl/~pault)."""

# DCTCP is orange, not sky blue: it is most often drawn beside CUBIC's blue.
PINNED = {"cubic": 0, "reno": 1, "bbr": 2, "newreno": 3, "dctcp": 4, "bbr3": 5, "udt": 6,
          "vegas": 7, "tahoe": 8, "udp-cbr": 9}
"""Flavors that have the same colour in every report (an index into :data:`PALETTE`); the others
take the free colours in the order they appear (:meth:`FlavorPalette.set_order`)."""


class FlavorPalette:
    """Flavor → colour (hex) for one report: pinned flavors (:data:`PINNED`) keep theirs, the
    others take the free :data:`PALETTE` entries in the order they are first asked for (or set by
    :meth:`set_order`); beyond the palette, colours repeat."""

    def __init__(self, slots: dict[str, int] | None = None) -> None:
        self._slots: dict[str, int] = dict(slots or {})

    def set_order(self, flavors: Sequence[str]) -> None:
        """Fix every flavor's colour for the figures that follow (a report calls this once with
        all its flavors, in the order they appear)."""
        self._slots.clear()
        for flavor in dict.fromkeys(str(f) for f in flavors):
            self._slot(flavor)

    def slots(self) -> dict[str, int]:
        """The current flavor → palette index map (to hand to a process drawing in parallel)."""
        return dict(self._slots)

    def restore(self, slots: dict[str, int]) -> None:
        """Take over a map from :meth:`slots`: the same colours as the palette it came from."""
        self._slots.clear()
        self._slots.update(slots)

    def color(self, flavor: str) -> str:
        """The colour (hex) of ``flavor``: the same in every figure drawn with this palette."""
        return PALETTE[self._slot(str(flavor))]

    def _slot(self, flavor: str) -> int:
        if flavor not in self._slots:
            used = set(self._slots.values())
            pinned = PINNED.get(flavor)
            if pinned is not None and pinned not in used:
                self._slots[flavor] = pinned
            else:
                # Pinned colours stay free for their flavors while those have none yet.
                reserved = {PINNED[f] for f in PINNED if f not in self._slots and f != flavor}
                free = [i for i in range(len(PALETTE)) if i not in used and i not in reserved]
                self._slots[flavor] = free[0] if free else len(self._slots) % len(PALETTE)
        return self._slots[flavor]


CLASS_COLORS = {"l4s": "#44AA99", "classic": "#AA4499"}
"""DualPI2's queues (RFC 9332 §2.1) in every figure that tells them apart: L4S teal, Classic
purple (Paul Tol's "muted" scheme, colour-blind safe), whichever flavors fill them."""

CLASS_LABELS = {"l4s": "L4S", "classic": "Classic"}
"""DualPI2's queues as the figures name them."""
