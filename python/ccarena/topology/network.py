"""The explicit network a topology builder produces: nodes, directed links, routes.

This is the form the engine takes (docs/engine-spec.md): every link is one direction of a physical
link, and routes give, for each (node, destination host), the link to send on. Routes are computed
with networkx shortest paths (fewest hops; ties broken by the order links were added, so the result
is deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import networkx as nx

from ccarena.errors import UserError
from ccarena.runspec import QueueSpec
from ccarena.topology.links import Queue


@dataclass(frozen=True)
class Node:
    """A node: a ``host`` runs flow endpoints, a ``router`` only forwards.

    ``layer`` is the node's tier in its topology: hosts 0, edge/leaf (or a line's routers) 1,
    aggregation/spine 2, core/super-spine 3; drawings and per-tier metrics group by it.
    """

    name: str
    kind: Literal["host", "router"]
    layer: int = 0


@dataclass(frozen=True)
class DirectedLink:
    """One direction of a link: egress queue at ``src``, serialization at ``rate_bps``, then
    ``delay_ns`` of propagation to ``dst``. ``queue`` is the run spec's queue
    (:class:`ccarena.runspec.QueueSpec`), ``setting`` the scenario's queue table it was made from
    (:class:`ccarena.topology.links.Queue`: which RED thresholds follow the limit).

    ``role`` says what the link is in its topology ("bottleneck", "bottleneck-reverse",
    "access", "link", "link-reverse"); the report uses it to pick the queues to draw.
    ``physical`` names the duplex link both directions belong to (``"r0-r1"``); ``forward`` is
    True for the direction whose loss the topology table calls ``loss`` (data direction), False
    for ``reverse_loss``'s.
    """

    name: str
    src: str
    dst: str
    rate_bps: int
    delay_ns: int
    loss: float
    queue: QueueSpec
    setting: Queue
    role: str
    physical: str
    forward: bool


@dataclass
class Network:
    """Nodes and directed links of a topology, with routing by shortest path.

    Raises UserError from :meth:`path` when a destination cannot be reached.
    """

    nodes: list[Node] = field(default_factory=list)
    links: list[DirectedLink] = field(default_factory=list)

    def node_index(self) -> dict[str, int]:
        """Node name → index in :attr:`nodes`."""
        return {n.name: i for i, n in enumerate(self.nodes)}

    def hosts(self) -> list[str]:
        """Names of the host nodes, in order."""
        return [n.name for n in self.nodes if n.kind == "host"]

    _graph: nx.DiGraph | None = field(default=None, init=False, repr=False, compare=False)

    def graph(self) -> nx.DiGraph:
        """The network as a networkx DiGraph; each edge has ``link`` = its index in :attr:`links`.
        Built once and reused until a link is added."""
        if self._graph is not None:
            return self._graph
        g = nx.DiGraph()
        for node in self.nodes:
            g.add_node(node.name, kind=node.kind)
        for i, link in enumerate(self.links):
            if not g.has_edge(link.src, link.dst):
                g.add_edge(link.src, link.dst, link=i)
        self._graph = g
        return g

    def routes(self) -> list[tuple[int, int, int]]:
        """Routes as ``(node index, destination host index, link index)`` for every node that can
        reach every host (the next hop on a fewest-hops path)."""
        g = self.graph()
        index = self.node_index()
        out: list[tuple[int, int, int]] = []
        for dst in self.hosts():
            paths = nx.single_target_shortest_path(g, dst)
            for node in self.nodes:
                if node.name == dst or node.name not in paths:
                    continue
                next_hop = paths[node.name][1]
                out.append((index[node.name], index[dst], g[node.name][next_hop]["link"]))
        return out

    def path(self, src: str, dst: str) -> list[int]:
        """Link indices from host ``src`` to host ``dst`` along the routes.

        Raises:
            UserError: ``dst`` is unreachable from ``src``.
        """
        g = self.graph()
        try:
            nodes = nx.shortest_path(g, src, dst)
        except nx.NetworkXNoPath:
            raise UserError(f"no path from {src} to {dst} in the topology") from None
        return [g[a][b]["link"] for a, b in zip(nodes, nodes[1:])]

    def add_duplex(self, a: str, b: str, *, rate_bps: int, delay_ns: int, loss_ab: float,
                   loss_ba: float, queue: Queue, role: str, reverse_role: str | None = None,
                   forward_is_ab: bool = True, physical: str | None = None) -> None:
        """Add the two directions of a physical link between ``a`` and ``b``; both directions'
        queues get ``queue`` (the scenario's queue table). ``forward_is_ab``: whether a→b is the
        direction the topology's ``loss`` field describes (see :class:`DirectedLink`).
        ``physical``: the duplex link's name (default ``"a-b"``)."""
        self._graph = None
        spec = queue.spec_fields()
        physical = physical or f"{a}-{b}"
        for src, dst, loss, r, fwd in ((a, b, loss_ab, role, forward_is_ab),
                                       (b, a, loss_ba, reverse_role or role, not forward_is_ab)):
            self.links.append(DirectedLink(
                name=f"{src}->{dst}", src=src, dst=dst, rate_bps=rate_bps, delay_ns=delay_ns,
                loss=loss, queue=spec, setting=queue, role=r, physical=physical, forward=fwd))
