"""The explicit network a topology builder produces: nodes and directed links.

This is the form the engine takes (docs/engine-spec.md): every link is one direction of a physical
link. The engine computes the routes (shortest paths with equal-cost multipath, ``routing``);
:meth:`Network.path` is a stand-in for code that needs one fewest-hops path without the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import networkx as nx  # imported where used: ~0.1 s that `ccarena run` need not pay

from ccarena.errors import UserError
from ccarena.runspec import QueueSpec
from ccarena.topology.links import Queue, WireImpair


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
    duplicate: float = 0.0
    reorder: float = 0.0
    reorder_delay_ns: int | None = None


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
        import networkx as nx

        g = nx.DiGraph()
        for node in self.nodes:
            g.add_node(node.name, kind=node.kind)
        for i, link in enumerate(self.links):
            if not g.has_edge(link.src, link.dst):
                g.add_edge(link.src, link.dst, link=i)
        self._graph = g
        return g

    _toward: dict[str, dict[str, int]] = field(default_factory=dict, init=False, repr=False,
                                               compare=False)

    def _next_hops(self, dst: str) -> dict[str, int]:
        """Node name → the link it sends ``dst``'s packets on: the lowest-index link to a node one
        hop closer (one breadth-first search by hop count, cached per destination). Hosts other
        than ``dst`` do not forward, as in the engine."""
        if dst in self._toward:
            return self._toward[dst]
        kinds = {n.name: n.kind for n in self.nodes}
        into: dict[str, list[int]] = {}
        for i, link in enumerate(self.links):
            into.setdefault(link.dst, []).append(i)
        dist, frontier = {dst: 0}, [dst]
        while frontier:
            later = []
            for node in frontier:
                if node != dst and kinds[node] == "host":
                    continue
                for i in into.get(node, []):
                    src = self.links[i].src
                    if src not in dist:
                        dist[src] = dist[node] + 1
                        later.append(src)
            frontier = later
        hops: dict[str, int] = {}
        for i, link in enumerate(self.links):
            if (link.src in dist and link.src not in hops and dist.get(link.dst) == dist[link.src] - 1
                    and (link.dst == dst or kinds[link.dst] != "host")):
                hops[link.src] = i
        self._toward[dst] = hops
        return hops

    def path(self, src: str, dst: str) -> list[int]:
        """Link indices of a fewest-hops path from host ``src`` to host ``dst`` (at each node the
        lowest-index next hop; the engine may spread flows over equal-cost paths).

        Raises:
            UserError: ``dst`` is unreachable from ``src``.
        """
        hops = self._next_hops(dst)
        out, at = [], src
        while at != dst:
            if at not in hops:
                raise UserError(f"no path from {src} to {dst} in the topology")
            out.append(hops[at])
            at = self.links[hops[at]].dst
        return out

    def add_duplex(self, a: str, b: str, *, rate_bps: int, delay_ns: int, loss_ab: float,
                   loss_ba: float, queue: Queue, role: str, reverse_role: str | None = None,
                   forward_is_ab: bool = True, physical: str | None = None,
                   impair: WireImpair = WireImpair()) -> None:
        """Add the two directions of a physical link between ``a`` and ``b``; both directions'
        queues get ``queue`` (the scenario's queue table). ``forward_is_ab``: whether a→b is the
        direction the topology's ``loss`` field describes (see :class:`DirectedLink`).
        ``physical``: the duplex link's name (default ``"a-b"``). ``impair``: duplication and
        reordering, in both directions."""
        self._graph = None
        self._toward = {}
        spec = queue.spec_fields()
        physical = physical or f"{a}-{b}"
        for src, dst, loss, r, fwd in ((a, b, loss_ab, role, forward_is_ab),
                                       (b, a, loss_ba, reverse_role or role, not forward_is_ab)):
            self.links.append(DirectedLink(
                name=f"{src}->{dst}", src=src, dst=dst, rate_bps=rate_bps, delay_ns=delay_ns,
                loss=loss, queue=spec, setting=queue, role=r, physical=physical, forward=fwd,
                duplicate=impair.duplicate, reorder=impair.reorder,
                reorder_delay_ns=impair.reorder_delay_ns))
