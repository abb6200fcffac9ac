"""``chain``: ``routers`` routers in a line, a host at each end and optionally one per router.

Routers ``r0 … r{N-1}``; host ``a`` attaches to ``r0`` and host ``b`` to ``r{N-1}``; with
``router_hosts = true`` host ``h{i}`` also attaches to router ``r{i}`` (cross traffic that enters
and leaves mid-line). Link classes: ``hop`` (router–router; role ``hop`` from ``r{i}`` to
``r{i+1}``, ``hop-reverse`` back) and ``access`` (host–router, role ``access``). TOML::

    [topology]
    kind = "chain"
    routers = 3
    hop = { rate = "10Mbps", delay = "5ms", loss = "2%", queue = { limit = "50pkt" } }
    access = { rate = "1Gbps", delay = "1ms" }

    [[topology.overrides]]          # one link's own values (see ccarena.topology.wiring)
    link = "r1--r2"
    rate = "5Mbps"

``loss`` applies in the direction from ``a`` towards ``b`` (``r{i}`` to ``r{i+1}``; host to router
at ``a`` and at each ``h{i}``, router to host at ``b``), ``reverse_loss`` the other way.
Seed 000's ``linear`` topology is a chain of one router; this one has as many as you like.
"""

from __future__ import annotations

from typing import Iterator, Literal

from pydantic import Field, model_validator

from ccarena.errors import FieldError
from ccarena.topology.links import AccessLink, Link
from ccarena.topology.network import Node
from ccarena.topology.wiring import MAX_HOSTS, Wire, Wired


class Chain(Wired):
    """Scenario model of the chain topology."""

    CLASSES = ("hop", "access")
    REVERSE_ROLES = {"hop": "hop-reverse"}

    kind: Literal["chain"]
    routers: int = Field(ge=1, le=MAX_HOSTS)
    router_hosts: bool = False
    hop: Link | None = None
    access: AccessLink = AccessLink()

    @model_validator(mode="after")
    def _hop_given(self) -> "Chain":
        if self.routers > 1 and self.hop is None:
            raise FieldError("hop", f"is required for {self.routers} routers, e.g. "
                                    'hop = { rate = "10Mbps", delay = "5ms" }')
        return self

    def plan_nodes(self) -> list[Node]:
        """Hosts a, (h0 …), b, then routers r0 … in line order."""
        hosts = ["a"] + ([f"h{i}" for i in range(self.routers)] if self.router_hosts else []) + ["b"]
        return [Node(h, "host", 0) for h in hosts] + \
            [Node(f"r{i}", "router", 1) for i in range(self.routers)]

    def plan_wires(self) -> Iterator[Wire]:
        """Access links, then the hops in line order."""
        last = f"r{self.routers - 1}"
        yield Wire("a", "r0", "access")
        if self.router_hosts:
            for i in range(self.routers):
                yield Wire(f"h{i}", f"r{i}", "access")
        yield Wire(last, "b", "access")
        for i in range(self.routers - 1):
            yield Wire(f"r{i}", f"r{i + 1}", "hop")

    def summary(self) -> str:
        """One line: the kind's size."""
        hosts = 2 + (self.routers if self.router_hosts else 0)
        return f"chain of {self.routers} routers, {hosts} hosts"
