"""The generated topologies (chain, parking_lot, fat_tree, leaf_spine, super_spine) and the user's
own graph: sizes, wiring, reachability, link classes and overrides, graph files, every bad input's
one-line message, ``ccarena topo`` drawings, and a short run of each kind through the normal path."""

from __future__ import annotations

import json
from collections import Counter, deque
from pathlib import Path

import ccarena
import networkx as nx
import pandas as pd
import pytest
from ccarena.cli import app
from ccarena.errors import UserError
from ccarena.scenario import load_scenario, validate_scenario
from ccarena.topology import KINDS, Network
from typer.testing import CliRunner

SLOW = {"rate": "20Mbps", "delay": "100us", "queue": {"limit": "50pkt"}}
"""A link class cheap to simulate (the end-to-end runs)."""

TOPOLOGIES = {
    "chain": {"kind": "chain", "routers": 3, "router_hosts": True,
              "hop": {"rate": "10Mbps", "delay": "2ms"}},
    "parking_lot": {"kind": "parking_lot", "hops": 3, "bottleneck": {"rate": "10Mbps", "delay": "2ms"}},
    "fat_tree": {"kind": "fat_tree", "k": 4, "host": SLOW, "edge": SLOW, "core": SLOW},
    "leaf_spine": {"kind": "leaf_spine", "spines": 2, "leaves": 3, "hosts_per_leaf": 4,
                   "host": SLOW, "fabric": SLOW},
    "super_spine": {"kind": "super_spine", "pods": 2, "spines_per_pod": 2, "leaves_per_pod": 2,
                    "hosts_per_leaf": 2, "super_spines": 4, "host": SLOW, "fabric": SLOW, "spine": SLOW},
    "graph": {"kind": "graph", "default": {"rate": "10Mbps", "delay": "1ms"},
              "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"},
                        {"name": "h3", "kind": "host"}, {"name": "s1", "kind": "router"},
                        {"name": "s2", "kind": "router"}],
              "links": [{"a": "h1", "b": "s1"}, {"a": "h2", "b": "s1"}, {"a": "s1", "b": "s2",
                         "rate": "5Mbps", "role": "bottleneck"}, {"a": "s2", "b": "h3"}]},
}
FLOWS = {
    "chain": [("a", "b"), ("h1", "h2")],
    "parking_lot": [("long-src", "long-dst"), ("cross1-src", "cross1-dst")],
    "fat_tree": [("pod0-edge0-h0", "pod3-edge1-h1"), ("pod1-edge0-h1", "pod2-edge1-h0")],
    "leaf_spine": [("leaf0-h0", "leaf2-h3"), ("leaf1-h1", "leaf2-h0")],
    "super_spine": [("pod0-leaf0-h0", "pod1-leaf1-h1"), ("pod0-leaf1-h0", "pod1-leaf0-h0")],
    "graph": [("h1", "h3"), ("h2", "h3")],
}


def topology(table: dict):
    return KINDS[table["kind"]].model_validate(table)


def scenario(table: dict, flows=(("pod0-edge0-h0", "pod0-edge0-h1"),), duration: str = "1s") -> dict:
    return {"name": "t", "duration": duration, "topology": table,
            "flows": [{"from": a, "to": b, "flavor": "cubic"} for a, b in flows]}


def error_of(raw: dict) -> str:
    with pytest.raises(UserError) as err:
        validate_scenario(raw)
    return str(err.value)


def undirected(net: Network) -> nx.Graph:
    return nx.Graph([(link.src, link.dst) for link in net.links])


def all_hosts_reachable(net: Network) -> bool:
    """Every host reaches every other: one breadth-first search from the first host over the
    directed links (both directions of each duplex link are present)."""
    out: dict[str, list[str]] = {}
    for link in net.links:
        out.setdefault(link.src, []).append(link.dst)
    hosts = net.hosts()
    seen, todo = {hosts[0]}, deque([hosts[0]])
    while todo:
        for nb in out.get(todo.popleft(), ()):
            if nb not in seen:
                seen.add(nb)
                todo.append(nb)
    return all(h in seen for h in hosts)


@pytest.mark.parametrize("k", [4, 8, 16])
def test_fat_tree_sizes_and_wiring(k):
    net = topology({"kind": "fat_tree", "k": k}).build()
    kinds = Counter(n.kind for n in net.nodes)
    assert kinds["host"] == k ** 3 // 4
    assert kinds["router"] == 5 * k * k // 4
    assert Counter(n.layer for n in net.nodes) == {0: k ** 3 // 4, 1: k * k // 2, 2: k * k // 2,
                                                  3: k * k // 4}
    assert len(net.links) == 2 * 3 * k ** 3 // 4
    roles = Counter(link.role for link in net.links)
    assert roles == {"host": k ** 3 // 2, "edge": k ** 3 // 2, "core": k ** 3 // 2}
    assert len({link.name for link in net.links}) == len(net.links)
    g = undirected(net)
    h = k // 2
    for c in range(h * h):
        # Core c reaches aggregation switch c // (k/2) of every pod, once (Al-Fares et al. §3.2).
        assert sorted(g[f"core{c}"]) == sorted(f"pod{p}-agg{c // h}" for p in range(k))
    for p in range(k):
        for e in range(h):
            edge = f"pod{p}-edge{e}"
            assert {n for n in g[edge] if "agg" in n} == {f"pod{p}-agg{a}" for a in range(h)}
            assert {n for n in g[edge] if "-h" in n} == {f"{edge}-h{i}" for i in range(h)}
    assert all_hosts_reachable(net)


@pytest.mark.parametrize("kind", sorted(TOPOLOGIES))
def test_every_host_reaches_every_host(kind):
    net = topology(TOPOLOGIES[kind]).build()
    assert all_hosts_reachable(net)
    assert {n.name for n in net.nodes} == set(topology(TOPOLOGIES[kind]).node_names())


def test_leaf_spine_oversubscription_and_counts():
    table = {"kind": "leaf_spine", "spines": 2, "leaves": 4, "hosts_per_leaf": 8,
             "host": {"rate": "10Gbps"}, "fabric": {"rate": "20Gbps"}}
    model = topology(table)
    assert model.oversubscription == pytest.approx(8 * 10 / (2 * 20))
    assert "oversubscription 2:1" in model.describe()[0]
    full = topology(dict(table, fabric={"rate": "40Gbps"}))
    assert full.oversubscription == pytest.approx(1.0)
    assert "1:1 (full bisection)" in full.describe()[0]
    net = model.build()
    assert Counter(n.layer for n in net.nodes) == {0: 32, 1: 4, 2: 2}
    assert Counter(link.role for link in net.links) == {"host": 64, "fabric": 16}
    g = undirected(net)
    assert set(g["leaf3"]) == {f"leaf3-h{i}" for i in range(8)} | {"spine0", "spine1"}


def test_super_spine_counts_planes_and_oversubscription():
    model = topology({"kind": "super_spine", "pods": 3, "spines_per_pod": 2, "leaves_per_pod": 4,
                      "hosts_per_leaf": 5, "super_spines": 6, "spine": {"rate": "40Gbps"}})
    net = model.build()
    assert Counter(n.layer for n in net.nodes) == {0: 60, 1: 12, 2: 6, 3: 6}
    # host links + leaf–spine (every leaf to every pod spine) + spine–super-spine (each spine to
    # the 3 super-spines of its plane).
    assert Counter(link.role for link in net.links) == {"host": 120, "fabric": 2 * 24, "spine": 2 * 18}
    g = undirected(net)
    for p in range(3):
        assert {n for n in g[f"pod{p}-spine0"] if n.startswith("super")} == \
            {"superspine0", "superspine1", "superspine2"}
        assert {n for n in g[f"pod{p}-spine1"] if n.startswith("super")} == \
            {"superspine3", "superspine4", "superspine5"}
    assert model.oversubscription == pytest.approx(5 * 10 / (2 * 10))
    assert model.spine_oversubscription == pytest.approx(4 * 10 / (3 * 40))
    assert all_hosts_reachable(net)


def test_chain_and_parking_lot_roles_and_loss_direction():
    chain = topology({"kind": "chain", "routers": 3, "hop": {"rate": "10Mbps", "delay": "5ms",
                                                             "loss": "2%"}}).build()
    by_name = {link.name: link for link in chain.links}
    assert by_name["r0->r1"].role == "hop" and by_name["r1->r0"].role == "hop-reverse"
    assert by_name["r1->r2"].loss == pytest.approx(0.02) and by_name["r2->r1"].loss == 0
    assert chain.hosts() == ["a", "b"]
    assert [n.layer for n in chain.nodes] == [0, 0, 1, 1, 1]
    lot = topology(TOPOLOGIES["parking_lot"]).build()
    assert lot.hosts() == ["long-src", "cross0-src", "cross0-dst", "cross1-src", "cross1-dst",
                           "cross2-src", "cross2-dst", "long-dst"]
    roles = Counter(link.role for link in lot.links)
    assert roles == {"bottleneck": 3, "bottleneck-reverse": 3, "access": 16}
    names = [lot.links[i].name for i in lot.path("long-src", "long-dst")]
    assert names == ["long-src->r0", "r0->r1", "r1->r2", "r2->r3", "r3->long-dst"]
    names = [lot.links[i].name for i in lot.path("cross1-src", "cross1-dst")]
    assert names == ["cross1-src->r1", "r1->r2", "r2->cross1-dst"]


def test_overrides_change_one_link_in_both_directions():
    model = topology({"kind": "fat_tree", "k": 4, "core": {"rate": "40Gbps", "delay": "5us"},
                      "overrides": [{"link": "core2--pod0-agg1", "rate": "1Gbps", "loss": "1%"}]})
    net = model.build()
    by_name = {link.name: link for link in net.links}
    assert by_name["pod0-agg1->core2"].rate_bps == 10 ** 9
    assert by_name["core2->pod0-agg1"].rate_bps == 10 ** 9
    assert by_name["pod0-agg1->core2"].loss == pytest.approx(0.01)   # upwards
    assert by_name["core2->pod0-agg1"].loss == 0
    assert by_name["pod0-agg1->core2"].delay_ns == 5000              # the class's, not overridden
    assert by_name["pod1-agg1->core2"].rate_bps == 40 * 10 ** 9
    assert by_name["pod0-agg1->core2"].physical == "pod0-agg1--core2"


def _write_graph(g: nx.Graph, path: Path) -> None:
    if path.suffix == ".graphml":
        nx.write_graphml(g, path)
    elif path.suffix == ".gml":
        nx.write_gml(g, path)
    else:
        path.write_text(json.dumps(nx.node_link_data(g, edges="links")))


@pytest.mark.parametrize("suffix", [".graphml", ".json", ".gml"])
def test_graph_file_round_trip(tmp_path, suffix):
    g = nx.Graph()
    for name in ("h1", "h2", "h3"):
        g.add_node(name, kind="host")
    g.add_node("core", kind="router")
    g.add_edge("h1", "core", rate="10Mbps", delay="5ms", loss="1%", queue="50pkt")
    g.add_edge("h2", "core", rate="20Mbps", delay="1ms", role="bottleneck")
    g.add_edge("core", "h3")                                 # takes the default class
    (tmp_path / "nets").mkdir()
    _write_graph(g, tmp_path / "nets" / f"net{suffix}")
    toml = tmp_path / "scenario.toml"
    toml.write_text(f'duration = "1s"\n[topology]\nkind = "graph"\nfile = "nets/net{suffix}"\n'
                    'default = { rate = "1Gbps", delay = "2ms" }\n'
                    '[[flows]]\nfrom = "h1"\nto = "h3"\nflavor = "cubic"\n')
    loaded = load_scenario(toml)   # the relative path is the scenario file's directory's
    net = loaded.scenario.network()
    assert {(n.name, n.kind) for n in net.nodes} == {(n, d["kind"]) for n, d in g.nodes(data=True)}
    assert {frozenset((link.src, link.dst)) for link in net.links} == {frozenset(e) for e in g.edges}
    by_name = {link.name: link for link in net.links}
    assert by_name["h1->core"].rate_bps == 10 ** 7 and by_name["h1->core"].loss == pytest.approx(0.01)
    assert by_name["h1->core"].queue.limit_packets == 50 and by_name["core->h1"].loss == 0
    assert by_name["h2->core"].role == "bottleneck" and by_name["h1->core"].role == "graph"
    assert by_name["core->h3"].rate_bps == 10 ** 9 and by_name["core->h3"].delay_ns == 2 * 10 ** 6


def test_graph_file_hosts_list_for_files_without_kinds(tmp_path):
    g = nx.path_graph(["x", "y", "z"])
    nx.write_graphml(g, tmp_path / "p.graphml")
    model = topology({"kind": "graph", "file": str(tmp_path / "p.graphml"), "hosts": ["x", "z"],
                      "default": {"rate": "1Mbps", "delay": "1ms"}})
    assert model.node_names() == {"x": "host", "y": "router", "z": "host"}


GRAPH_NODES = [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}]


@pytest.mark.parametrize("table, flows, expected", [
    ({"kind": "fat_tree", "k": 5}, None, "topology.k: must be even (k = 5)"),
    ({"kind": "fat_tree", "k": 34}, None, "topology.k: gives 9,826 hosts"),
    ({"kind": "fat_tree", "k": 34}, None, "at most 8,192 hosts (a k = 32 fat-tree)"),
    ({"kind": "fat_tree", "k": 4}, [("pod0-edge0-h0", "pod7-edge0-h0")],
     "flows[0].to: unknown node 'pod7-edge0-h0'"),
    ({"kind": "fat_tree", "k": 4}, [("pod0-edge0-h0", "pod0-edge0")],
     "flows[0].to: 'pod0-edge0' is a router"),
    ({"kind": "fat_tree", "k": 4, "overrides": [{"link": "pod0-agg1--core0", "rate": "1Gbps"}]},
     None, "topology.overrides[0].link: no link 'pod0-agg1--core0' in this fat_tree (did you mean"),
    ({"kind": "fat_tree", "k": 4, "overrides": [{"link": "pod0-agg0--core0", "speed": "1Gbps"}]},
     None, "topology.overrides[0].speed: unknown field"),
    ({"kind": "leaf_spine", "spines": 2, "leaves": 2000, "hosts_per_leaf": 5}, [("leaf0-h0", "leaf1-h0")],
     "topology.hosts_per_leaf: gives 10,000 hosts"),
    ({"kind": "super_spine", "pods": 2, "spines_per_pod": 2, "leaves_per_pod": 2, "hosts_per_leaf": 2,
      "super_spines": 3}, [("pod0-leaf0-h0", "pod1-leaf0-h0")],
     "topology.super_spines: 3 is not a multiple of spines_per_pod (2)"),
    ({"kind": "chain", "routers": 2}, [("a", "b")], "topology.hop: is required for 2 routers"),
    ({"kind": "graph", "nodes": GRAPH_NODES + [{"name": "c", "kind": "host"}],
      "links": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms"}]}, [("a", "b")],
     "topology.links: the network is disconnected: host 'a' cannot reach host 'c'"),
    ({"kind": "graph", "nodes": GRAPH_NODES, "links": [{"a": "a", "b": "b", "delay": "1ms"}]},
     [("a", "b")], "topology.links[0].rate: is required: the link a--b has no rate"),
    ({"kind": "graph", "nodes": GRAPH_NODES + [{"name": "a", "kind": "router"}],
      "links": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms"}]}, [("a", "b")],
     "topology.nodes[2].name: duplicate node name 'a' (also nodes[0])"),
    ({"kind": "graph", "nodes": GRAPH_NODES, "links": [{"a": "a", "b": "bb", "rate": "1Mbps",
                                                        "delay": "1ms"}]},
     [("a", "b")], "topology.links[0].b: unknown node 'bb' (did you mean 'b'?)"),
    ({"kind": "graph", "nodes": GRAPH_NODES, "links": [
        {"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms"},
        {"a": "b", "b": "a", "rate": "1Mbps", "delay": "1ms"}]},
     [("a", "b")], "topology.links[1]: a second link between b and a (also links[0])"),
    ({"kind": "graph", "file": "/nonexistent/net.graphml"}, [("a", "b")],
     "topology.file: /nonexistent/net.graphml: no such file"),
    ({"kind": "graph", "file": "net.csv"}, [("a", "b")], "topology.file: net.csv: unknown graph format"),
])
def test_bad_input_is_one_line_naming_the_field(table, flows, expected):
    message = error_of(scenario(table, flows or [("pod0-edge0-h0", "pod0-edge0-h1")]))
    assert expected in message
    assert "\n" not in message


def test_malformed_or_incomplete_graph_files(tmp_path):
    bad = tmp_path / "bad.graphml"
    bad.write_text("<graphml><graph><node id='a'/>")
    message = error_of(scenario({"kind": "graph", "file": str(bad)}, [("a", "b")]))
    assert message.startswith(f"topology.file: {bad}: not a valid GraphML file")
    broken = tmp_path / "bad.json"
    broken.write_text("{not json")
    assert "not a valid node-link JSON file" in error_of(scenario({"kind": "graph", "file": str(broken)},
                                                                  [("a", "b")]))
    g = nx.Graph()
    g.add_node("a", kind="host")
    g.add_node("b", kind="host")
    g.add_edge("a", "b", delay="1ms")
    nx.write_graphml(g, tmp_path / "norate.graphml")
    message = error_of(scenario({"kind": "graph", "file": str(tmp_path / "norate.graphml")}, [("a", "b")]))
    assert "topology.file:" in message and "edge a--b has no rate attribute" in message
    g.add_node("c", kind="switch")
    nx.write_graphml(g, tmp_path / "kind.graphml")
    message = error_of(scenario({"kind": "graph", "file": str(tmp_path / "kind.graphml"),
                                 "default": {"rate": "1Mbps", "delay": "1ms"}}, [("a", "b")]))
    assert "node 'c'" in message and "kind" in message


def test_topo_command_draws_svg_and_png(tmp_path):
    toml = tmp_path / "ft.toml"
    toml.write_text('duration = "1s"\n[topology]\nkind = "fat_tree"\nk = 4\n'
                    '[[flows]]\nfrom = "pod0-edge0-h0"\nto = "pod3-edge1-h1"\nflavor = "cubic"\n')
    runner = CliRunner()
    for name in ("topo.svg", "topo.png"):
        done = runner.invoke(app, ["topo", str(toml), "--out", str(tmp_path / name)])
        assert done.exit_code == 0, done.output
        assert (tmp_path / name).stat().st_size > 1000
        assert "16 hosts" in done.output
    assert (tmp_path / "topo.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "topo.png").read_bytes()[:4] == b"\x89PNG"
    done = runner.invoke(app, ["topo", str(toml), "--out", str(tmp_path / "topo.gif")])
    assert done.exit_code == 2 and "--out" in done.output
    toml.write_text(toml.read_text().replace("k = 4", "k = 3"))
    done = runner.invoke(app, ["topo", str(toml)])
    assert done.exit_code == 2
    assert done.output.strip().splitlines() == [f"error: {toml}: topology.k: must be even (k = 3); "
                                                "a k-ary fat-tree has k/2 ports up and k/2 down per "
                                                "switch, e.g. k = 4"]


@pytest.mark.parametrize("kind", sorted(TOPOLOGIES))
def test_short_run_on_every_kind(tmp_path, kind):
    raw = scenario(TOPOLOGIES[kind], FLOWS[kind], duration="0.2s")
    raw["name"] = kind
    result = ccarena.run(raw, tmp_path / kind, jobs=1, report=kind == "fat_tree")
    flows = result.flows
    assert len(flows) == 2 and (flows["bytes_delivered"] > 0).all()
    if kind == "fat_tree":
        page = (tmp_path / kind / "report.html").read_text()
        # The answer and its key figure open the page; the network opens the figures.
        first = page.index("<figure", page.index("<h2>Figures</h2>"))
        assert 'data-file="figures/topology.png"' in page[first:first + 400000].split("</figure>")[0]


@pytest.mark.parametrize("kind", sorted(TOPOLOGIES))
def test_conservation_and_determinism_on_every_kind(tmp_path, kind):
    """Every packet offered to a link is delivered, dropped (queue, wire, link down), or still
    queued or on the wire at the end; and the same seed gives bit-identical tables."""
    raw = scenario(TOPOLOGIES[kind], FLOWS[kind], duration="0.3s")
    raw["name"] = kind
    first = ccarena.run(raw, tmp_path / "a", jobs=1)
    links = first.links
    accounted = (links["packets_delivered"] + links["packets_dropped_queue"] + links["packets_lost_wire"]
                 + links["down_drops_packets"] + links["packets_queued_end"] + links["packets_in_flight_end"])
    assert (links["packets_in"] == accounted).all(), links[links["packets_in"] != accounted]
    assert links["packets_in"].sum() > 0
    again = ccarena.run(raw, tmp_path / "b", jobs=1)
    for table in ("flows", "links", "samples"):
        a = getattr(first, table).drop(columns=["run_id"], errors="ignore").reset_index(drop=True)
        b = getattr(again, table).drop(columns=["run_id"], errors="ignore").reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)
