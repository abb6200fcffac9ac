"""The flavor catalogue, read from the engine: ``ccarena._engine.flavors()`` is the one source of
truth for TCP congestion controllers (names, family, source, default recovery, parameters).

The UDP transports below are not congestion controllers: the front end maps them to their own
engine flow kinds (``udp-cbr`` → ``kind = "udp_cbr"``), so they are listed here with the flow kind
they become.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from ccarena.errors import UserError

UDP_TRANSPORTS: dict[str, dict[str, Any]] = {
    "udp-cbr": {
        "name": "udp-cbr",
        "family": "udp",
        "summary": "constant bit rate datagrams: `rate` of payload in `packet_size` datagrams",
        "source": "ns-3 OnOffApplication semantics; iperf -u -b",
        "default_recovery": None,
        "params": [],
        "engine_kind": "udp_cbr",
    },
}
"""UDP transport name → its catalogue entry and the engine flow kind it runs as."""


def _engine() -> Any:
    try:
        from ccarena import _engine
    except ImportError as err:
        raise UserError("the simulator engine (ccarena._engine) is not built: run `pip install .` "
                        f"in the ccarena source tree ({err})") from None
    return _engine


@functools.lru_cache(maxsize=1)
def _catalogue() -> tuple[dict[str, Any], ...]:
    """The engine's catalogue, read once per process (it is fixed by the build; a scenario of
    100,000 flows asks for it for every flow)."""
    return tuple(_engine().flavors())


def available_flavors() -> list[dict[str, Any]]:
    """Every TCP flavor the engine implements, as ``_engine.flavors()`` returns them.

    Each entry: ``{"name", "family", "summary", "source", "default_recovery",
    "params": [{"name", "default", "doc"}]}``.

    Raises:
        UserError: the engine extension is not built.
    """
    return list(_catalogue())


@functools.lru_cache(maxsize=1)
def _by_name() -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in _catalogue()}


def engine_flavors() -> dict[str, dict[str, Any]]:
    """Every engine flavor (TCP congestion controllers and UDT) by name (a new dict each call)."""
    return dict(_by_name())


def engine_flavor(name: str) -> dict[str, Any]:
    """One engine flavor's catalogue entry, shared (not a copy: read it, do not change it).

    Raises:
        KeyError: not an engine flavor.
    """
    return _by_name()[name]


def tcp_flavors() -> dict[str, dict[str, Any]]:
    """TCP flavor name → catalogue entry: the engine flavors whose ``transport`` is ``"tcp"``."""
    return {name: f for name, f in _by_name().items() if f.get("transport", "tcp") == "tcp"}


def transport_of(name: str) -> str:
    """The transport a flavor runs on: ``"tcp"``, ``"udt"`` or ``"udp_cbr"``.

    Raises:
        KeyError: unknown flavor.
    """
    if name in UDP_TRANSPORTS:
        return UDP_TRANSPORTS[name]["engine_kind"]
    return _by_name()[name].get("transport", "tcp")


def all_flavors() -> dict[str, dict[str, Any]]:
    """Every name a flow's ``flavor`` may take: the engine's TCP flavors and the UDP transports."""
    out = dict(engine_flavors())
    for name, entry in UDP_TRANSPORTS.items():
        out.setdefault(name, entry)
    return out


def suggest(name: str, choices: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to ``name``, or ``""``."""
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_flavor_message(name: str) -> str:
    """The message for an unknown flavor, with the closest known name when there is one."""
    known = list(all_flavors())
    hint = suggest(name, known)
    if not hint:
        hint = f" (known: {', '.join(known)}; `ccarena flavors` lists them)"
    return f"unknown flavor '{name}'{hint}"


# ----------------------------------------------------------------------------- presentation

def catalogue_rows() -> list[tuple[str, str, str, str]]:
    """One row per flavor for ``ccarena flavors``: ``(name, family, default recovery, source)``
    (``"–"`` where a flavor has no loss recovery of its own)."""
    return [(f["name"], f["family"], f.get("default_recovery") or "–", f.get("source", ""))
            for f in all_flavors().values()]


def flavor_entry(name: str) -> dict[str, Any]:
    """One flavor's catalogue entry by name (engine flavor or UDP transport).

    Raises:
        UserError: no such flavor (the message names the closest one, or lists them).
    """
    known = all_flavors()
    if name not in known:
        raise UserError(unknown_flavor_message(name))
    return known[name]


def describe(name: str, width: int = 80) -> list[str]:
    """What ``ccarena flavors NAME`` prints: the flavor's family, summary, source and default
    recovery, then each parameter as ``name = default`` with its meaning, wrapped to ``width``
    columns (a parameter's name and default are never cut), and how to set them in a scenario.

    Raises:
        UserError: no such flavor.
    """
    import textwrap

    f = flavor_entry(name)
    width = max(int(width), 40)

    def wrapped(text: str, indent: str, first: str = "") -> list[str]:
        return textwrap.wrap(text, width=width, initial_indent=first or indent,
                             subsequent_indent=indent, break_long_words=False,
                             break_on_hyphens=False) or [first.rstrip()]

    lines = [f"{f['name']}: {f['family']} family, transport {f.get('transport') or f['family']}"]
    lines += wrapped(f.get("summary", ""), "  ")
    lines += wrapped(f"source: {f['source']}", "  ")
    if f.get("default_recovery"):
        lines.append(f"  default loss recovery: {f['default_recovery']} (a flow's recovery = "
                     "\"...\" sets another)")
    params = f.get("params") or []
    if not params:
        lines.append("parameters: none")
        return lines
    lines.append("parameters, with their defaults:")
    for p in params:
        lines.append(f"  {p['name']} = {p['default']:g}")
        lines += wrapped(p.get("doc", ""), "      ")
    example = f"{params[0]['name']} = {params[0]['default']:g}"
    lines += wrapped(f"set them in a flow: flavor = {{ name = \"{f['name']}\", {example} }}", "  ", "")
    return lines


def mptcp_label(flavor: str, coupling: str) -> str:
    """The name a Multipath TCP connection is compared under in the results (its ``flavor``
    column, its colour, its verdict): ``mptcp-<coupling>`` for a coupled one (LIA, OLIA, BALIA,
    wVegas: their subflows run the coupling's controller), ``mptcp-<flavor>`` for an
    uncoupled one (every subflow runs ``flavor``, as Linux does), so an MPTCP connection and a
    single-path flow of the same flavor are told apart. ``coupling`` empty: not MPTCP,
    ``flavor`` itself."""
    if not coupling:
        return flavor
    return f"mptcp-{flavor if coupling == 'uncoupled' else coupling}"


def quic_label(flavor: str, kind: str) -> str:
    """The name a flow is compared under in the results given its flows-table ``kind``: a QUIC
    connection (``kind == "quic"``, a TCP flavor's controller run over QUIC, RFC 9000/9002) is
    ``quic-<flavor>`` (``quic-cubic``), so the QUIC and TCP runs of one flavor are told apart in
    the report, compare and plot (their own series and colours), as :func:`mptcp_label` does for
    Multipath TCP; any other kind keeps ``flavor`` itself."""
    if kind != "quic":
        return flavor
    return f"quic-{flavor}"
