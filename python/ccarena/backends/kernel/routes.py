"""The Linux routes of the kernel backend's namespaces, from the resolved spec.

The simulator computes its routes itself (the spec's ``routing``; ``routes`` holds only static
overrides), so the kernel backend does the same here, as docs/engine-spec.md "Routing" says: for
each destination host a breadth-first search by hop count (networkx) gives every node's distance,
and a node's *next-hop set* is every link (in link index order) to a node one hop closer; hosts
other than the destination never forward (no set leads into one). All static ``routes`` entries
of one (node, destination) together replace that node's set (entry order, duplicates ignored). A
spec without ``routing`` (written before routes were computed) is its own complete table (the
last entry of a pair wins, as in the engine).

A set of several links becomes one multipath route (``ip route … nexthop via … nexthop via …``,
:mod:`ccarena.backends.kernel.netns`) that Linux picks from by the hash of the flow's 5-tuple
(``net.ipv4.fib_multipath_hash_policy = 1``): per-flow ECMP, as the simulator's ``mode = "ecmp"``
(hash-threshold, RFC 2992). The hash functions differ, so a flow may take another of the equal
paths than in the simulator; the set of paths is the same. ``mode = "spray"`` (per-packet) has
no faithful Linux equivalent and is refused (:mod:`ccarena.backends.kernel.preflight`).
"""

from __future__ import annotations

import networkx as nx

from ccarena.runspec import RunSpec


def next_hop_sets(spec: RunSpec) -> list[tuple[int, int, tuple[int, ...]]]:
    """``(node, destination host, links)`` for every node that can reach each host: the node's
    next-hop set (spec link indices, at least one)."""
    if spec.routing is None:
        last: dict[tuple[int, int], int] = {}
        for r in spec.routes:
            last[(int(r.node), int(r.dst))] = int(r.link)
        return [(node, dst, (link,)) for (node, dst), link in last.items()]
    hosts = {i for i, n in enumerate(spec.nodes) if n.kind == "host"}
    out_links: dict[int, list[int]] = {}
    for i, link in enumerate(spec.links):
        out_links.setdefault(int(link.from_), []).append(i)
    static: dict[tuple[int, int], list[int]] = {}
    for r in spec.routes:
        links = static.setdefault((int(r.node), int(r.dst)), [])
        if int(r.link) not in links:
            links.append(int(r.link))
    table: list[tuple[int, int, tuple[int, ...]]] = []
    for dst in sorted(hosts):
        # Edges into a host other than dst would make it a transit node: leave them out.
        g = nx.DiGraph()
        g.add_nodes_from(range(len(spec.nodes)))
        g.add_edges_from((int(l.from_), int(l.to)) for l in spec.links
                         if int(l.to) == dst or int(l.to) not in hosts)
        dist = nx.single_source_shortest_path_length(g.reverse(copy=False), dst)
        for node in range(len(spec.nodes)):
            if node == dst:
                continue
            if (node, dst) in static:
                table.append((node, dst, tuple(static[(node, dst)])))
                continue
            if node not in dist:
                continue
            closer = tuple(i for i in out_links.get(node, [])
                           if dist.get(int(spec.links[i].to)) == dist[node] - 1
                           and (int(spec.links[i].to) == dst or int(spec.links[i].to) not in hosts))
            if closer:
                table.append((node, dst, closer))
    return table


def next_hops(spec: RunSpec) -> list[tuple[int, int, int]]:
    """``(node, destination host, link)``: the first link of every next-hop set
    (:func:`next_hop_sets`), the path a single-path table would take."""
    return [(node, dst, links[0]) for node, dst, links in next_hop_sets(spec)]
