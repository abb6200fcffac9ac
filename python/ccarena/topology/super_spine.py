"""``super_spine``: pods of leaf-spine fabrics joined by a layer of super-spines (a three-tier
Clos, as Facebook's data center fabric: Andreyev, "Introducing data center fabric, the
next-generation Facebook data center network", 2014).

Each of ``pods`` pods has ``leaves_per_pod`` leaves with ``hosts_per_leaf`` hosts each, and
``spines_per_pod`` spines; every leaf connects to every spine of its pod. The ``super_spines``
form ``spines_per_pod`` planes of ``super_spines / spines_per_pod`` switches each (so
``super_spines`` must be a multiple of ``spines_per_pod``): spine j of every pod connects to every
super-spine of plane j, i.e. super-spines j·m … j·m + m − 1 with m = super_spines / spines_per_pod
(Facebook's rule: "each fabric switch of a pod connects to each spine switch within its local
plane"). Any two pods are then joined through every plane.

Names: hosts ``pod{p}-leaf{l}-h{h}``, leaves ``pod{p}-leaf{l}``, spines ``pod{p}-spine{s}``,
super-spines ``superspine{x}`` (from 0). Layers: hosts 0, leaves 1, spines 2, super-spines 3.

Link classes (default 10 Gbps, 1 µs, no loss, 100-packet queue; both directions' role is the class
name): ``host`` (host–leaf), ``fabric`` (leaf–spine), ``spine`` (spine–super-spine). ``loss``
applies upwards, ``reverse_loss`` downwards. TOML::

    [topology]
    kind = "super_spine"
    pods = 2
    spines_per_pod = 2
    leaves_per_pod = 2
    hosts_per_leaf = 4
    super_spines = 4
    fabric = { rate = "10Gbps", delay = "1us" }
    spine = { rate = "40Gbps", delay = "10us" }

Oversubscription: at a leaf ``hosts_per_leaf · host / (spines_per_pod · fabric)``
(:attr:`SuperSpine.oversubscription`), at a pod spine ``leaves_per_pod · fabric / (m · spine)``
(:attr:`SuperSpine.spine_oversubscription`).
"""

from __future__ import annotations

from typing import Iterator, Literal

from pydantic import Field, model_validator

from ccarena.errors import FieldError
from ccarena.topology.leaf_spine import MAX_SWITCHES, oversubscription_text
from ccarena.topology.network import Node
from ccarena.topology.wiring import MAX_HOSTS, FabricLink, Wire, Wired, check_host_count


class SuperSpine(Wired):
    """Scenario model of the super-spine (three-tier Clos) fabric."""

    CLASSES = ("host", "fabric", "spine")

    kind: Literal["super_spine"]
    pods: int = Field(ge=1, le=MAX_SWITCHES)
    spines_per_pod: int = Field(ge=1, le=MAX_SWITCHES)
    leaves_per_pod: int = Field(ge=1, le=MAX_SWITCHES)
    hosts_per_leaf: int = Field(ge=1, le=MAX_HOSTS)
    super_spines: int = Field(ge=1, le=MAX_SWITCHES)
    host: FabricLink = FabricLink()
    fabric: FabricLink = FabricLink()
    spine: FabricLink = FabricLink()

    @model_validator(mode="after")
    def _planes_and_size(self) -> "SuperSpine":
        if self.super_spines % self.spines_per_pod:
            raise FieldError("super_spines", f"{self.super_spines} is not a multiple of "
                                             f"spines_per_pod ({self.spines_per_pod}): spine j of "
                                             "each pod connects to super-spine plane j, so every "
                                             "plane needs as many super-spines")
        check_host_count("hosts_per_leaf", self.pods * self.leaves_per_pod * self.hosts_per_leaf,
                         f"{self.pods} pods × {self.leaves_per_pod} leaves × {self.hosts_per_leaf}")
        return self

    @property
    def per_plane(self) -> int:
        """Super-spines per plane (m)."""
        return self.super_spines // self.spines_per_pod

    @property
    def oversubscription(self) -> float:
        """Host capacity over uplink capacity of a leaf (1 = full bisection)."""
        return self.hosts_per_leaf * self.host.rate_bps / (self.spines_per_pod * self.fabric.rate_bps)

    @property
    def spine_oversubscription(self) -> float:
        """Downlink capacity over uplink capacity of a pod spine (1 = full bisection)."""
        return self.leaves_per_pod * self.fabric.rate_bps / (self.per_plane * self.spine.rate_bps)

    def plan_nodes(self) -> list[Node]:
        """Per pod: hosts, leaves, spines; then the super-spines."""
        nodes: list[Node] = []
        for p in range(self.pods):
            for leaf in range(self.leaves_per_pod):
                nodes += [Node(f"pod{p}-leaf{leaf}-h{h}", "host", 0) for h in range(self.hosts_per_leaf)]
            nodes += [Node(f"pod{p}-leaf{leaf}", "router", 1) for leaf in range(self.leaves_per_pod)]
            nodes += [Node(f"pod{p}-spine{s}", "router", 2) for s in range(self.spines_per_pod)]
        nodes += [Node(f"superspine{x}", "router", 3) for x in range(self.super_spines)]
        return nodes

    def plan_wires(self) -> Iterator[Wire]:
        """Host–leaf, leaf–spine, spine–super-spine (plane rule above); lower end first."""
        m = self.per_plane
        for p in range(self.pods):
            for leaf in range(self.leaves_per_pod):
                name = f"pod{p}-leaf{leaf}"
                for h in range(self.hosts_per_leaf):
                    yield Wire(f"{name}-h{h}", name, "host")
                for s in range(self.spines_per_pod):
                    yield Wire(name, f"pod{p}-spine{s}", "fabric")
            for s in range(self.spines_per_pod):
                for x in range(s * m, (s + 1) * m):
                    yield Wire(f"pod{p}-spine{s}", f"superspine{x}", "spine")

    def summary(self) -> str:
        """One line: the kind's size and oversubscription."""
        hosts = self.pods * self.leaves_per_pod * self.hosts_per_leaf
        return (f"super-spine: {hosts} hosts, {self.pods} pods of {self.leaves_per_pod} leaves "
                f"and {self.spines_per_pod} spines,\n{self.super_spines} super-spines in "
                f"{self.spines_per_pod} planes; oversubscription leaf "
                f"{oversubscription_text(self.oversubscription)}, spine "
                f"{oversubscription_text(self.spine_oversubscription)}")
