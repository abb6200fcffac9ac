"""The Linux routes of the kernel backend's namespaces, from the resolved spec.

The simulator computes its routes itself (the spec's ``routing``; ``routes`` holds only static
overrides), so the kernel backend does the same here for the networks it runs (a single link, a
dumbbell: one shortest path per destination): for each destination host, fewest hops with
networkx, hosts other than the destination never forwarding (as in the engine, docs/engine-spec.md
"Routing"); of equal-cost next hops the lowest-index link (the kernel gets one route per
destination). The spec's static routes replace the computed next hop of their (node, destination);
a spec without ``routing`` (written before routes were computed) is its own complete table.
"""

from __future__ import annotations

import networkx as nx

from ccarena.runspec import RunSpec


def next_hops(spec: RunSpec) -> list[tuple[int, int, int]]:
    """``(node, destination host, link)`` for every node that can reach each host."""
    if spec.routing is None:
        return [(int(r.node), int(r.dst), int(r.link)) for r in spec.routes]
    hosts = {i for i, n in enumerate(spec.nodes) if n.kind == "host"}
    out_links: dict[int, list[int]] = {}
    for i, link in enumerate(spec.links):
        out_links.setdefault(int(link.from_), []).append(i)
    static: dict[tuple[int, int], int] = {}
    for r in spec.routes:
        static.setdefault((int(r.node), int(r.dst)), int(r.link))
    table: list[tuple[int, int, int]] = []
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
                table.append((node, dst, static[(node, dst)]))
                continue
            if node not in dist:
                continue
            closer = [i for i in out_links.get(node, [])
                      if dist.get(int(spec.links[i].to)) == dist[node] - 1
                      and (int(spec.links[i].to) == dst or int(spec.links[i].to) not in hosts)]
            if closer:
                table.append((node, dst, min(closer)))
    return table
