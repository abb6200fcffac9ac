"""``parking_lot``: ``hops`` bottleneck links in a line, one long flow's hosts across all of them
and a cross-traffic host pair on each.

Routers ``r0 … r{N}`` (N = ``hops``); hop i is ``r{i}``–``r{i+1}``. Hosts:

- ``long-src`` on ``r0`` and ``long-dst`` on ``r{N}``: the long flow crosses every hop;
- ``cross{i}-src`` on ``r{i}`` and ``cross{i}-dst`` on ``r{i+1}``: cross flow i crosses hop i only.

Link classes: ``bottleneck`` (the hops; role ``bottleneck`` from ``r{i}`` to ``r{i+1}``, the
direction of every flow above, and ``bottleneck-reverse`` back) and ``access`` (host–router, role
``access``). TOML::

    [topology]
    kind = "parking_lot"
    hops = 3
    bottleneck = { rate = "10Mbps", delay = "5ms", queue = { limit = "50pkt" } }
    access = { rate = "1Gbps", delay = "1ms" }

    [[flows]]
    from = "long-src"
    to = "long-dst"
    flavor = "cubic"
    [[flows]]
    from = "cross0-src"
    to = "cross0-dst"
    flavor = "cubic"

``loss`` applies in the flows' direction (towards ``r{N}``; host to router at the sources, router
to host at the destinations), ``reverse_loss`` on the ACK path. ``[[topology.overrides]]`` give a
single link its own values (``link = "r1--r2"``; see :mod:`ccarena.topology.wiring`).
"""

from __future__ import annotations

from typing import Iterator, Literal

from pydantic import Field

from ccarena.topology.links import AccessLink, Link
from ccarena.topology.network import Node
from ccarena.topology.wiring import MAX_HOSTS, Wire, Wired

LONG_SRC, LONG_DST = "long-src", "long-dst"
"""The long flow's hosts."""


def cross_hosts(hop: int) -> tuple[str, str]:
    """Cross flow ``hop``'s (source, destination) hosts."""
    return f"cross{hop}-src", f"cross{hop}-dst"


class ParkingLot(Wired):
    """Scenario model of the parking-lot topology."""

    CLASSES = ("bottleneck", "access")
    REVERSE_ROLES = {"bottleneck": "bottleneck-reverse"}

    kind: Literal["parking_lot"]
    hops: int = Field(ge=1, le=MAX_HOSTS // 2 - 1)
    bottleneck: Link
    access: AccessLink = AccessLink()

    def plan_nodes(self) -> list[Node]:
        """Hosts in line order (long-src, cross0-src, cross0-dst, …, long-dst), then routers."""
        hosts = [LONG_SRC]
        for i in range(self.hops):
            hosts += cross_hosts(i)
        hosts.append(LONG_DST)
        return [Node(h, "host", 0) for h in hosts] + \
            [Node(f"r{i}", "router", 1) for i in range(self.hops + 1)]

    def plan_wires(self) -> Iterator[Wire]:
        """Access links (sources host→router, destinations router→host), then the hops."""
        yield Wire(LONG_SRC, "r0", "access")
        for i in range(self.hops):
            src, dst = cross_hosts(i)
            yield Wire(src, f"r{i}", "access")
            yield Wire(f"r{i + 1}", dst, "access")
        yield Wire(f"r{self.hops}", LONG_DST, "access")
        for i in range(self.hops):
            yield Wire(f"r{i}", f"r{i + 1}", "bottleneck")

    def summary(self) -> str:
        """One line: the kind's size."""
        return (f"parking lot, {self.hops} hops: {LONG_SRC} → {LONG_DST} over all hops,\n"
                f"cross{{i}}-src → cross{{i}}-dst over hop i (r{{i}}–r{{i+1}})")
