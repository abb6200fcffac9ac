"""``leaf_spine``: a two-tier Clos fabric; every leaf connects to every spine.

``leaves`` leaf switches with ``hosts_per_leaf`` hosts each, ``spines`` spine switches. Names:
hosts ``leaf{l}-h{h}``, leaves ``leaf{l}``, spines ``spine{s}`` (from 0). Layers: hosts 0, leaves 1,
spines 2.

Link classes (default 10 Gbps, 1 µs, no loss, 100-packet queue; both directions' role is the class
name):

- ``host``: host–leaf, the downlink;
- ``fabric``: leaf–spine, the uplink.

The oversubscription ratio of a leaf is what its hosts can send over what its uplinks carry:
``hosts_per_leaf · host rate / (spines · fabric rate)`` (:attr:`LeafSpine.oversubscription`;
1 is full bisection). ``loss`` applies upwards, ``reverse_loss`` downwards. TOML::

    [topology]
    kind = "leaf_spine"
    spines = 2
    leaves = 4
    hosts_per_leaf = 8
    host = { rate = "10Gbps", delay = "1us" }
    fabric = { rate = "40Gbps", delay = "1us" }      # 8·10 / (2·40): 1:1

    [[topology.overrides]]           # one link's own values (ccarena.topology.wiring)
    link = "leaf0--spine1"
    rate = "10Gbps"
"""

from __future__ import annotations

from typing import Iterator, Literal

from pydantic import Field, model_validator

from ccarena.topology.network import Node
from ccarena.topology.wiring import MAX_HOSTS, FabricLink, Wire, Wired, check_host_count

MAX_SWITCHES = 4096
"""The most switches of one tier (a bound on the size of a typo, far above real fabrics)."""


def oversubscription_text(ratio: float) -> str:
    """``"2:1"`` / ``"1:1 (full bisection)"`` / ``"1:2"``."""
    if ratio >= 1:
        text = f"{ratio:.3g}:1"
    else:
        text = f"1:{1 / ratio:.3g}"
    return text + (" (full bisection)" if abs(ratio - 1) < 1e-9 else "")


class LeafSpine(Wired):
    """Scenario model of the leaf-spine fabric."""

    CLASSES = ("host", "fabric")

    kind: Literal["leaf_spine"]
    spines: int = Field(ge=1, le=MAX_SWITCHES)
    leaves: int = Field(ge=1, le=MAX_SWITCHES)
    hosts_per_leaf: int = Field(ge=1, le=MAX_HOSTS)
    host: FabricLink = FabricLink()
    fabric: FabricLink = FabricLink()

    @model_validator(mode="after")
    def _runnable(self) -> "LeafSpine":
        check_host_count("hosts_per_leaf", self.leaves * self.hosts_per_leaf,
                         f"{self.leaves} leaves × {self.hosts_per_leaf}")
        return self

    @property
    def oversubscription(self) -> float:
        """Host capacity over uplink capacity of a leaf (1 = full bisection)."""
        return self.hosts_per_leaf * self.host.rate_bps / (self.spines * self.fabric.rate_bps)

    def plan_nodes(self) -> list[Node]:
        """Per leaf: its hosts then the leaf; then the spines."""
        nodes: list[Node] = []
        for leaf in range(self.leaves):
            nodes += [Node(f"leaf{leaf}-h{h}", "host", 0) for h in range(self.hosts_per_leaf)]
            nodes.append(Node(f"leaf{leaf}", "router", 1))
        nodes += [Node(f"spine{s}", "router", 2) for s in range(self.spines)]
        return nodes

    def plan_wires(self) -> Iterator[Wire]:
        """Host–leaf, then leaf–spine; lower end first."""
        for leaf in range(self.leaves):
            for h in range(self.hosts_per_leaf):
                yield Wire(f"leaf{leaf}-h{h}", f"leaf{leaf}", "host")
            for s in range(self.spines):
                yield Wire(f"leaf{leaf}", f"spine{s}", "fabric")

    def summary(self) -> str:
        """One line: the kind's size and oversubscription."""
        return (f"leaf-spine: {self.leaves * self.hosts_per_leaf} hosts, {self.leaves} leaves, "
                f"{self.spines} spines; oversubscription "
                f"{oversubscription_text(self.oversubscription)}")
