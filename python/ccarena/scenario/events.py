"""Scheduled changes: the scenario's ``[[events]]`` → the engine spec's ``events``.

TOML::

    [[events]]                 # the bottleneck's rate drops to 5 Mbps at 20 s
    at = "20s"
    link = "bottleneck"
    set = { rate = "5Mbps" }

    [[events]]                 # seed 003: the buffer grows by 10 packets every 30 s
    at = "30s"
    every = "30s"
    link = "bottleneck"
    increase = { limit = "10pkt" }

A link can be taken down and brought back up (the simulator drops what it holds and reroutes
around it; docs/engine-spec.md, "Routing")::

    [[events]]                 # the cable r0-r1 fails at 10 s (both directions) ...
    at = "10s"
    link = "r0-r1"
    up = false

    [[events]]                 # ... and is repaired at 15 s
    at = "15s"
    link = "r0-r1"
    up = true

The same change can be written with the scenario's field paths, as the README's scenario reference shows:
``set = { "topology.bottleneck.queue.limit" = "20pkt" }`` (``topology.<link table>.<field>``, the
link table being ``bottleneck``, ``link`` or ``access``, the field ``rate``, ``delay``, ``loss``,
``reverse_loss`` or ``queue.limit``).

``link`` names a physical link by its role in the topology (``"bottleneck"``, ``"link"``,
``"access"`` — every access link), by its two ends (``"r0-r1"``, both directions) or one direction
(``"r0->r1"``). On both directions, ``rate``, ``delay`` and ``limit`` apply to each, ``loss`` to
the direction the topology's ``loss`` describes (the data direction) and ``reverse_loss`` to the
other; on one direction, ``loss`` applies to it. ``set`` gives new values; ``increase`` adds to the
values in force (applied once per firing). ``every`` repeats the event from ``at`` while the time
is before ``until`` (default: the end of the run).

The engine receives absolute values only: :func:`resolve_events` walks every firing in time order,
tracking each link's current rate, delay, loss and limit (docs/engine-spec.md, "events"). When
a change of the limit applies to a RED queue whose thresholds are defaults (fractions of the limit),
the event also gives the thresholds of the new limit; thresholds given explicitly stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field, model_validator

from ccarena.errors import FieldError, UserError
from ccarena.quantities import Fraction, QueueLimitValue, RateBps, StrictModel, TimeNs
from ccarena.runspec import EventSpec, LinkChangeSpec
from ccarena.topology.network import DirectedLink, Network
from ccarena.units import QueueLimit, format_time

MAX_FIRINGS = 100_000
"""A schedule that would fire more often than this is a mistake (``every`` too small)."""


class LinkChange(StrictModel):
    """The values an event sets (or adds): any of ``rate``, ``delay``, ``loss``, ``reverse_loss``,
    ``limit`` (the queue limit, in the queue's unit)."""

    rate_bps: RateBps | None = Field(None, alias="rate")
    delay_ns: TimeNs | None = Field(None, alias="delay")
    loss: Fraction | None = None
    reverse_loss: Fraction | None = None
    limit: QueueLimitValue | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> "LinkChange":
        if all(getattr(self, f) is None for f in type(self).model_fields):
            raise ValueError("names nothing to change: give rate, delay, loss, reverse_loss or limit")
        return self


PATH_FIELDS = {"rate": "rate", "delay": "delay", "loss": "loss", "reverse_loss": "reverse_loss",
               "queue.limit": "limit"}
"""Field-path form (``topology.bottleneck.<path>``) → the change's field."""


def _from_field_paths(data: Any) -> Any:
    """Rewrite ``set = {"topology.bottleneck.queue.limit" = "20pkt"}`` into ``link = "bottleneck",
    set = {limit = "20pkt"}`` (and the same for ``increase``)."""
    if not isinstance(data, dict) or "link" in data:
        return data
    out = dict(data)
    for kind in ("set", "increase"):
        change = data.get(kind)
        if not isinstance(change, dict) or not any(str(k).startswith("topology.") for k in change):
            continue
        tables, fields = set(), {}
        for key, value in change.items():
            parts = str(key).split(".", 2)
            if len(parts) < 3 or parts[0] != "topology" or parts[2] not in PATH_FIELDS:
                raise FieldError(f'{kind}."{key}"', "write topology.<link table>.<field>, e.g. "
                                 '"topology.bottleneck.queue.limit"; fields: ' + ", ".join(PATH_FIELDS))
            tables.add(parts[1])
            fields[PATH_FIELDS[parts[2]]] = value
        if len(tables) != 1:
            raise FieldError(kind, "one event changes one link table; split it into several [[events]]")
        out["link"] = tables.pop()
        out[kind] = fields
    return out


class Event(StrictModel):
    """One ``[[events]]`` table (see the module docstring)."""

    @model_validator(mode="before")
    @classmethod
    def _field_paths(cls, data: Any) -> Any:
        return _from_field_paths(data)

    at_ns: TimeNs = Field(alias="at")
    every_ns: TimeNs | None = Field(None, alias="every")
    until_ns: TimeNs | None = Field(None, alias="until")
    link: str
    set: LinkChange | None = None
    increase: LinkChange | None = None
    up: bool | None = None

    @model_validator(mode="after")
    def _one_change(self) -> "Event":
        if self.set is not None and self.increase is not None:
            raise FieldError("set", "give one of set = {...} (new values) or increase = {...} "
                                    "(added to the values in force), not both")
        if self.set is None and self.increase is None and self.up is None:
            raise FieldError("set", "give set = {...} (new values), increase = {...} (added to the "
                                    "values in force) or up = false / true (the link fails or "
                                    "comes back)")
        if self.every_ns is not None and self.every_ns <= 0:
            raise FieldError("every", "must be > 0")
        if self.until_ns is not None and self.every_ns is None:
            raise FieldError("until", "only a repeating event (with every) takes until")
        if self.until_ns is not None and self.until_ns <= self.at_ns:
            raise FieldError("until", "must be after `at`")
        return self

    @property
    def change(self) -> LinkChange | None:
        """The ``set`` or ``increase`` table (``None`` for an event that only sets ``up``)."""
        return self.set if self.set is not None else self.increase

    def firings(self, duration_ns: int) -> list[int]:
        """The times (ns) at which the event applies, before ``duration_ns``."""
        if self.every_ns is None:
            return [self.at_ns] if self.at_ns < duration_ns else []
        end = min(self.until_ns if self.until_ns is not None else duration_ns, duration_ns)
        count = (end - self.at_ns + self.every_ns - 1) // self.every_ns
        if count > MAX_FIRINGS:
            raise FieldError("every", f"fires {count} times; use a longer period")
        return [self.at_ns + k * self.every_ns for k in range(max(0, count))]


@dataclass
class _LinkState:
    rate_bps: int
    delay_ns: int
    loss: float
    limit: QueueLimit


def select_links(net: Network, selector: str) -> list[tuple[int, bool]]:
    """The directed links an event's ``link`` names, each with whether it was named as one of a
    duplex pair (True) or alone (False).

    Raises:
        FieldError: (field ``link``) nothing matches; the message lists what would.
    """
    both = [i for i, l in enumerate(net.links) if l.role.removesuffix("-reverse") == selector
            or l.physical == selector]
    if both:
        return [(i, True) for i in both]
    one = [i for i, l in enumerate(net.links) if l.name == selector]
    if one:
        return [(i, False) for i in one]
    roles = sorted({l.role.removesuffix("-reverse") for l in net.links})
    physical = list(dict.fromkeys(l.physical for l in net.links))
    shown = ", ".join(roles + physical[:6] + [net.links[0].name]) + (", ..." if len(physical) > 6 else "")
    raise FieldError("link", f"no link '{selector}' in this topology; name a role, a pair or one "
                             f"direction: {shown}")


def _limit_amount(limit: QueueLimit) -> int:
    return limit.packets if limit.packets is not None else int(limit.bytes or 0)


def resolve_events(events: list[Event], net: Network, duration_ns: int) -> list[EventSpec]:
    """The run spec's ``events``: one entry per firing and directed link, in time order
    (ties in the order the scenario lists the events), with absolute values.

    Raises:
        UserError: ``events[i].<field>: ...`` (an unknown link, a limit in the wrong unit, a
            ``reverse_loss`` on one direction, a value out of range after an increase).
    """
    states: dict[int, _LinkState] = {}  # made for the links events change (thousands have none)

    def state_of(link: int) -> _LinkState:
        if link not in states:
            l = net.links[link]  # noqa: E741
            states[link] = _LinkState(l.rate_bps, l.delay_ns, l.loss,
                                      QueueLimit(packets=l.queue.limit_packets,
                                                 bytes=l.queue.limit_bytes))
        return states[link]

    firings: list[tuple[int, int, Event]] = []
    selected: dict[int, list[tuple[int, bool]]] = {}
    for i, event in enumerate(events):
        try:
            selected[i] = select_links(net, event.link)
            for t in event.firings(duration_ns):
                firings.append((t, i, event))
        except FieldError as err:
            raise UserError(f"events[{i}].{err.field}: {err.message}") from None
    firings.sort(key=lambda f: (f[0], f[1]))
    out: list[EventSpec] = []
    for t, i, event in firings:
        for link, as_pair in selected[i]:
            try:
                out.append(EventSpec(time_ns=t, link=link,
                                     set=_apply(state_of(link), net.links[link], event, as_pair)))
            except FieldError as err:
                raise UserError(f"events[{i}].{err.field}: {err.message} (at "
                                f"{format_time(t / 1e9)} on {net.links[link].name})") from None
    return out


def _apply(state: _LinkState, link: DirectedLink, event: Event, as_pair: bool) -> LinkChangeSpec:
    """Update ``state`` by one firing of ``event`` and return the spec's ``set``."""
    add = event.increase is not None
    kind = "increase" if add else "set"
    out: dict[str, Any] = {"rate_bps": None, "delay_ns": None, "loss": None,
                           "limit_packets": None, "limit_bytes": None, "up": event.up}
    change = event.change
    if change is None:
        return LinkChangeSpec(**out)
    if change.rate_bps is not None and getattr(link.rate_bps, "trace_spec", None) is not None:
        raise FieldError(f"{kind}.rate", f"the link's rate follows a trace ({link.rate_bps.source}); "
                                         "change its delay, loss or queue instead")
    if change.rate_bps is not None:
        state.rate_bps = state.rate_bps + change.rate_bps if add else change.rate_bps
        out["rate_bps"] = state.rate_bps
    if change.delay_ns is not None:
        state.delay_ns = state.delay_ns + change.delay_ns if add else change.delay_ns
        out["delay_ns"] = state.delay_ns
    if change.reverse_loss is not None and not as_pair:
        raise FieldError(f"{kind}.reverse_loss", f"'{event.link}' is one direction; give its loss "
                                                 "as loss")
    loss = change.loss if (link.forward or not as_pair) else change.reverse_loss
    if loss is not None:
        state.loss = state.loss + loss if add else loss
        if not 0.0 <= state.loss <= 1.0:
            raise FieldError(f"{kind}.loss", f"the loss would become {state.loss:.4g} (outside 0–100%)")
        out["loss"] = state.loss
    if change.limit is not None:
        if (change.limit.packets is None) != (state.limit.packets is None):
            unit = "packets ('20pkt')" if state.limit.packets is not None else "bytes ('30KB')"
            raise FieldError(f"{kind}.limit", f"this queue's limit is in {unit}; give the change "
                                              "in the same unit")
        amount = _limit_amount(state.limit) + _limit_amount(change.limit) if add else \
            _limit_amount(change.limit)
        state.limit = QueueLimit(packets=amount) if state.limit.packets is not None else QueueLimit(bytes=amount)
        red = link.queue.red
        if red is not None:
            min_th, max_th = link.setting.red_thresholds(state.limit)
            if _limit_amount(max_th) > amount:
                raise FieldError(f"{kind}.limit", f"{amount} is below the RED queue's max_th "
                                                  f"({_limit_amount(max_th)}); RED needs max_th ≤ limit")
            if link.setting.red_follows_limit:
                unit = "packets" if min_th.packets is not None else "bytes"
                out[f"red_min_th_{unit}"] = _limit_amount(min_th)
                out[f"red_max_th_{unit}"] = _limit_amount(max_th)
        out["limit_packets"], out["limit_bytes"] = state.limit.packets, state.limit.bytes
    return LinkChangeSpec(**out)
