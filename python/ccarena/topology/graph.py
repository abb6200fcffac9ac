"""``graph``: the user's own network, as tables in the scenario or as a file.

In the scenario::

    [topology]
    kind = "graph"
    default = { rate = "1Gbps", delay = "1ms" }     # optional: values for links that give none

    [[topology.nodes]]
    name = "h1"
    kind = "host"                                   # or "router"
    [[topology.nodes]]
    name = "s1"
    kind = "router"
    [[topology.nodes]]
    name = "h2"
    kind = "host"

    [[topology.links]]
    a = "h1"
    b = "s1"
    rate = "10Mbps"
    delay = "5ms"
    loss = "1%"                 # from a to b; reverse_loss from b to a (default 0)
    queue = { limit = "50pkt" }
    role = "bottleneck"         # optional: the links' role (default "graph")
    [[topology.links]]
    a = "s1"
    b = "h2"                    # rate and delay from `default`

Or from a file (``file = "net.graphml"``): GraphML (``.graphml``), GML (``.gml``) or node-link JSON
(``.json``, networkx's ``node_link_data``), read with networkx. A relative path is relative to the
scenario file's directory. Node attribute ``kind`` (``host``/``router``; a node without one is a
host if listed in the topology's ``hosts = [...]``, else a router) and optional ``layer`` (for
drawings); edge attributes ``rate``, ``delay``, ``loss``, ``reverse_loss``, ``queue`` (a limit such as
``"50pkt"``, or in JSON a queue table) and ``role``, as strings with units like the scenario's; an
attribute an edge lacks comes from ``default``, other attributes are ignored. An undirected graph's
edge is one duplex link; in a directed one, u→v and v→u are the same duplex link (the first one
read gives its values); parallel edges are refused.

Every link needs a rate and a delay (its own or the default); node names must be distinct; every
host must reach every other host. Layers: hosts 0, routers 1, unless a node gives ``layer``.
Links are named ``a--b`` in ``[[events]]``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, model_validator

from ccarena.errors import FieldError
from ccarena.flavors import suggest
from ccarena.quantities import Fraction, StrictModel, TimeNs
from ccarena.topology.links import Link, LinkRateBps, Queue
from ccarena.topology.network import Network, Node
from ccarena.topology.wiring import (
    MAX_HOSTS,
    describe_link,
    link_name,
    unreachable_pair,
)

if TYPE_CHECKING:
    import networkx as nx  # imported where used: ~0.1 s that `ccarena run` need not pay

DEFAULT_ROLE = "graph"
"""The role of a graph's link that does not name one."""

READERS = {".graphml": "GraphML", ".gml": "GML", ".json": "node-link JSON"}
"""File extensions the ``file`` field reads, and their formats."""

LINK_ATTRIBUTES = ("rate", "delay", "loss", "reverse_loss", "queue", "role")
"""The edge attributes a graph file's links may carry."""


class GraphNode(StrictModel):
    """``[[topology.nodes]]``: a node's ``name``, ``kind`` and optional drawing ``layer``."""

    name: str = Field(min_length=1)
    kind: Literal["host", "router"]
    layer: int | None = Field(None, ge=0, le=16)


class GraphLink(StrictModel):
    """``[[topology.links]]``: a duplex link between nodes ``a`` and ``b``; fields not given come
    from the topology's ``default``."""

    a: str
    b: str
    rate_bps: LinkRateBps | None = Field(None, alias="rate")
    delay_ns: TimeNs | None = Field(None, alias="delay")
    loss: Fraction | None = None
    reverse_loss: Fraction | None = None
    queue: Queue | None = None
    role: str | None = Field(None, min_length=1)

    def resolved(self, default: Link | None) -> Link:
        """This link's values, missing ones from ``default`` (loss 0 and a 100-packet queue
        without one).

        Raises:
            FieldError: (``rate`` / ``delay``) neither this link nor a default gives it.
        """
        values: dict[str, Any] = {}
        for field, name in (("rate_bps", "rate"), ("delay_ns", "delay")):
            value = getattr(self, field)
            if value is None:
                if default is None:
                    raise FieldError(name, f"is required: the link {self.a}--{self.b} has no "
                                           f"{name} and there is no default link (default = "
                                           '{ rate = "1Gbps", delay = "1ms" })')
                value = getattr(default, field)
            values[field] = value
        fallback = {"loss": 0.0, "reverse_loss": 0.0, "queue": Queue()}
        for field in fallback:
            value = getattr(self, field)
            values[field] = value if value is not None else \
                (getattr(default, field) if default is not None else fallback[field])
        # model_construct() skips parsing the defaults: a graph link duplicates and reorders as its
        # default link does (edges carry no such attribute), else not at all.
        for field, none in (("duplicate", 0.0), ("reorder", 0.0), ("reorder_delay_ns", None)):
            values[field] = getattr(default, field) if default is not None else none
        return Link.model_construct(**values)


def _read_file(path: Path) -> "nx.Graph":
    """The graph in ``path`` by its extension.

    Raises:
        FieldError: (``file``) missing, unknown extension or not readable as its format.
    """
    suffix = path.suffix.lower()
    if suffix not in READERS:
        raise FieldError("file", f"{path}: unknown graph format '{suffix}'; use "
                                 f"{', '.join(f'{e} ({n})' for e, n in READERS.items())}")
    if not path.is_file():
        raise FieldError("file", f"{path}: no such file")
    import networkx as nx

    try:
        if suffix == ".graphml":
            return nx.read_graphml(path)
        if suffix == ".gml":
            return nx.read_gml(path)
        data = json.loads(path.read_text(encoding="utf-8"))
        edges = "links" if isinstance(data, dict) and "links" in data and "edges" not in data else "edges"
        return nx.node_link_graph(data, edges=edges)
    except Exception as err:  # every reader has its own exceptions; all mean a malformed file
        detail = str(err).replace("\n", " ")[:200] or type(err).__name__
        raise FieldError("file", f"{path}: not a valid {READERS[suffix]} file ({detail})") from None


def _file_tables(g: "nx.Graph", path: Path, hosts: list[str]) -> tuple[list[GraphNode], list[GraphLink]]:
    """The file's nodes and links as scenario tables.

    Raises:
        FieldError: (``file``) a node's kind or an edge's attribute is not valid.
    """
    listed = set(hosts)
    nodes = []
    for name, attrs in g.nodes(data=True):
        kind = attrs.get("kind", "host" if str(name) in listed else "router")
        try:
            nodes.append(GraphNode.model_validate(
                {"name": str(name), "kind": kind, "layer": attrs.get("layer")}))
        except ValidationError as err:
            raise FieldError("file", f"{path}: node '{name}': {_first_error(err)}") from None
    links = []
    seen: set[frozenset[str]] = set()
    for u, v, attrs in g.edges(data=True):
        key = frozenset((str(u), str(v)))
        if key in seen:
            if g.is_directed() and not g.is_multigraph():
                continue
            raise FieldError("file", f"{path}: two edges join {u} and {v}; give one duplex link")
        seen.add(key)
        table: dict[str, Any] = {"a": str(u), "b": str(v)}
        table.update({k: attrs[k] for k in LINK_ATTRIBUTES if k in attrs})
        if isinstance(table.get("queue"), (str, int)):
            table["queue"] = {"limit": table["queue"]}
        try:
            links.append(GraphLink.model_validate(table))
        except ValidationError as err:
            raise FieldError("file", f"{path}: edge {u}--{v}: {_first_error(err)}") from None
    return nodes, links


def _first_error(err: ValidationError) -> str:
    first = err.errors(include_url=False)[0]
    field = ".".join(str(x) for x in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    return f"{field}: {message}" if field else message


class Graph(StrictModel):
    """Scenario model of a user-defined network (tables or a file)."""

    kind: Literal["graph"]
    file: str | None = None
    hosts: list[str] = []
    nodes: list[GraphNode] = []
    links: list[GraphLink] = []
    default: Link | None = None
    _plan: tuple[list[Node], list[tuple[str, str, Link, str]]] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _network_is_sound(self) -> "Graph":
        if self.file is not None:
            if self.nodes or self.links:
                raise FieldError("file", "give the network as a file or as [[topology.nodes]] and "
                                         "[[topology.links]] tables, not both")
            path = Path(self.file)
            nodes, links = _file_tables(_read_file(path), path, self.hosts)
            node_field, link_field = "file", "file"
        else:
            if self.hosts:
                raise FieldError("hosts", "marks hosts of a file's nodes; [[topology.nodes]] give "
                                          'each node\'s kind = "host" or "router"')
            nodes, links = self.nodes, self.links
            node_field, link_field = "nodes", "links"
        if not nodes:
            raise FieldError(node_field, "the network has no nodes; give [[topology.nodes]] "
                                         "tables or a file")
        index: dict[str, int] = {}
        for i, node in enumerate(nodes):
            if node.name in index:
                where = f"nodes[{i}].name" if node_field == "nodes" else "file"
                raise FieldError(where, f"duplicate node name '{node.name}' (also "
                                        f"{'nodes[' + str(index[node.name]) + ']' if node_field == 'nodes' else 'an earlier node'})")
            index[node.name] = i
        host_names = [n.name for n in nodes if n.kind == "host"]
        if self.file is not None:
            unknown = [h for h in self.hosts if h not in index]
            if unknown:
                raise FieldError("hosts", f"'{unknown[0]}' is not a node of {self.file}")
        if len(host_names) < 2:
            raise FieldError(node_field, f"the network has {len(host_names)} host(s); flows need "
                                         'at least two nodes of kind = "host"')
        if len(host_names) > MAX_HOSTS:
            raise FieldError(node_field, f"{len(host_names):,} hosts; at most {MAX_HOSTS:,}")
        wires: list[tuple[str, str, Link, str]] = []
        adjacency: dict[str, list[str]] = {n.name: [] for n in nodes}
        pairs: dict[frozenset[str], int] = {}
        for i, link in enumerate(links):
            where = f"links[{i}]" if link_field == "links" else ""
            for end in ("a", "b"):
                name = getattr(link, end)
                if name not in index:
                    raise FieldError(f"{where}.{end}" if where else "file",
                                     f"unknown node '{name}'{suggest(name, list(index))} in link "
                                     f"{link.a}--{link.b}")
            if link.a == link.b:
                raise FieldError(where or "file", f"the link {link.a}--{link.b} joins a node to itself")
            key = frozenset((link.a, link.b))
            if key in pairs:
                raise FieldError(where or "file", f"a second link between {link.a} and {link.b} "
                                                  f"(also links[{pairs[key]}])")
            pairs[key] = i
            try:
                resolved = link.resolved(self.default)
            except FieldError as err:
                if where:
                    raise FieldError(f"{where}.{err.field}", err.message) from None
                raise FieldError("file", f"{self.file}: edge {link.a}--{link.b} has no {err.field} "
                                         "attribute and there is no default link (default = "
                                         '{ rate = "1Gbps", delay = "1ms" })') from None
            wires.append((link.a, link.b, resolved, link.role or DEFAULT_ROLE))
            adjacency[link.a].append(link.b)
            adjacency[link.b].append(link.a)
        missing = unreachable_pair(host_names, adjacency)
        if missing is not None:
            raise FieldError(link_field, f"the network is disconnected: host '{missing[0]}' cannot "
                                         f"reach host '{missing[1]}'")
        plan_nodes = [Node(n.name, n.kind, n.layer if n.layer is not None else
                           (0 if n.kind == "host" else 1)) for n in nodes]
        self._plan = (plan_nodes, wires)
        return self

    def _planned(self) -> tuple[list[Node], list[tuple[str, str, Link, str]]]:
        assert self._plan is not None, "validated on construction"
        return self._plan

    def node_names(self) -> dict[str, str]:
        """Every node name → its kind ("host" or "router")."""
        return {n.name: n.kind for n in self._planned()[0]}

    def build(self) -> Network:
        """The explicit network: the nodes in the order given, each link's two directions with
        its role (default ``"graph"``), ``loss`` from a to b and ``reverse_loss`` from b to a."""
        nodes, wires = self._planned()
        net = Network(nodes=list(nodes))
        for a, b, link, role in wires:
            net.add_duplex(a, b, rate_bps=link.rate_bps, delay_ns=link.delay_ns, loss_ab=link.loss,
                           loss_ba=link.reverse_loss, queue=link.queue, role=role,
                           physical=link_name(a, b), impair=link.impair())
        return net

    def describe(self) -> list[str]:
        """Lines for ``ccarena validate`` and ``ccarena topo``."""
        nodes, wires = self._planned()
        hosts = sum(1 for n in nodes if n.kind == "host")
        source = f" from {Path(self.file).name}" if self.file else ""
        lines = [f"graph{source}: {hosts} hosts, {len(nodes) - hosts} routers, {len(wires)} links"]
        if self.default is not None:
            lines.append(f"default: {describe_link(self.default)}")
        return lines
