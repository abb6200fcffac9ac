"""``fat_tree``: the k-ary fat-tree of Al-Fares, Loukissas and Vahdat, "A Scalable, Commodity Data
Center Network Architecture", SIGCOMM 2008, §3.

``k`` (even) pods; each pod has k/2 edge and k/2 aggregation switches; each edge switch connects k/2
hosts and every aggregation switch of its pod; (k/2)² core switches, where aggregation switch i of
every pod connects to cores i·k/2 … i·k/2 + k/2 − 1 (§3.2: core j's port p goes to pod p). So:
k³/4 hosts, k²/2 edge, k²/2 aggregation and k²/4 core switches (5k²/4), 3k³/4 links.

Names: hosts ``pod{p}-edge{e}-h{h}``, edge ``pod{p}-edge{e}``, aggregation ``pod{p}-agg{a}``,
core ``core{c}`` (all from 0). Layers: hosts 0, edge 1, aggregation 2, core 3.

Link classes (each a link table; default 10 Gbps, 1 µs, no loss, 100-packet queue; the role of
both directions is the class name):

- ``host``: host–edge;
- ``edge``: edge–aggregation;
- ``core``: aggregation–core.

``loss`` applies upwards (towards the core), ``reverse_loss`` downwards. TOML::

    [topology]
    kind = "fat_tree"
    k = 4
    host = { rate = "10Gbps", delay = "1us" }
    edge = { rate = "10Gbps", delay = "1us" }
    core = { rate = "10Gbps", delay = "5us", queue = { limit = "100pkt" } }

    [[topology.overrides]]           # one link's own values (ccarena.topology.wiring)
    link = "pod0-agg1--core2"
    rate = "1Gbps"

``k`` is at most 32 (8,192 hosts, :data:`ccarena.topology.wiring.MAX_HOSTS`).
"""

from __future__ import annotations

from typing import Iterator, Literal

from pydantic import Field, model_validator

from ccarena.errors import FieldError
from ccarena.topology.network import Node
from ccarena.topology.wiring import FabricLink, Wire, Wired, check_host_count


def host_name(pod: int, edge: int, host: int) -> str:
    """The name of host ``host`` under edge switch ``edge`` of pod ``pod``."""
    return f"pod{pod}-edge{edge}-h{host}"


class FatTree(Wired):
    """Scenario model of the k-ary fat-tree."""

    CLASSES = ("host", "edge", "core")

    kind: Literal["fat_tree"]
    k: int = Field(ge=2)
    host: FabricLink = FabricLink()
    edge: FabricLink = FabricLink()
    core: FabricLink = FabricLink()

    @model_validator(mode="after")
    def _k_even_and_runnable(self) -> "FatTree":
        k = self.k
        if k % 2:
            raise FieldError("k", f"must be even (k = {k}); a k-ary fat-tree has k/2 ports up and "
                                  f"k/2 down per switch, e.g. k = {k + 1}")
        check_host_count("k", k ** 3 // 4, f"k³/4 for k = {k}; the largest k is 32")
        return self

    @property
    def half(self) -> int:
        """k/2: hosts per edge switch, edge and aggregation switches per pod."""
        return self.k // 2

    def plan_nodes(self) -> list[Node]:
        """Per pod: its hosts, edge and aggregation switches; then the cores."""
        h = self.half
        nodes: list[Node] = []
        for p in range(self.k):
            nodes += [Node(host_name(p, e, i), "host", 0) for e in range(h) for i in range(h)]
            nodes += [Node(f"pod{p}-edge{e}", "router", 1) for e in range(h)]
            nodes += [Node(f"pod{p}-agg{a}", "router", 2) for a in range(h)]
        nodes += [Node(f"core{c}", "router", 3) for c in range(h * h)]
        return nodes

    def plan_wires(self) -> Iterator[Wire]:
        """Host–edge, edge–aggregation, aggregation–core; lower end first."""
        h = self.half
        for p in range(self.k):
            for e in range(h):
                edge = f"pod{p}-edge{e}"
                for i in range(h):
                    yield Wire(host_name(p, e, i), edge, "host")
                for a in range(h):
                    yield Wire(edge, f"pod{p}-agg{a}", "edge")
            for a in range(h):
                for j in range(h):
                    yield Wire(f"pod{p}-agg{a}", f"core{a * h + j}", "core")

    def summary(self) -> str:
        """One line: the kind's size."""
        k = self.k
        return (f"fat-tree k = {k}: {k ** 3 // 4} hosts, {3 * k ** 3 // 4} links\n"
                f"{5 * k * k // 4} switches: {k * k // 2} edge, {k * k // 2} aggregation, "
                f"{k * k // 4} core")
