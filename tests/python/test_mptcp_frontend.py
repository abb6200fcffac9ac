"""Multipath TCP through the front end (issue 32): the scenario fields reach the engine spec (and
stay out of its JSON when unused, so every existing spec hashes as before), the engine accepts
exactly the couplings and schedulers the scenario offers, a run stores its subflows, names an
MPTCP connection apart from single-path flows of its flavor, gives it no single-path loss model,
and draws its subflows; the udp backend refuses MPTCP in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ccarena
from ccarena import _engine
from ccarena.backends.udp.endpoint_flows import check_tcp_flow
from ccarena.errors import UserError
from ccarena.experiment import expand
from ccarena.runspec import COUPLED_FLAVOR, COUPLINGS, MPTCP_SCHEDULERS
from ccarena.scenario import load_scenario


def _dumbbell(flows: list[dict], duration: str = "4s") -> dict:
    return {"name": "mptcp-test", "duration": duration, "seed": 3,
            "topology": {"kind": "dumbbell", "pairs": 2,
                         "bottleneck": {"rate": "20Mbps", "delay": "10ms", "queue": {"limit": "100pkt"}},
                         "access": {"rate": "1Gbps", "delay": "1ms"}},
            "flows": flows, "output": {"sample_interval": "100ms"}}


MPTCP = {"name": "mp", "from": "left0", "to": "right0", "flavor": "reno", "subflows": 2, "coupling": "lia"}
TCP = {"name": "tcp", "from": "left1", "to": "right1", "flavor": "reno"}


def _spec(raw: dict):
    return expand(load_scenario(raw))[0].resolved


def test_the_fields_reach_the_spec_with_their_defaults_and_stay_out_of_plain_specs() -> None:
    resolved = _spec(_dumbbell([dict(MPTCP, coupling=None, join_delay="5ms"), TCP]))
    mp, tcp = resolved.spec.flows
    assert mp.mptcp is not None
    assert (mp.mptcp.subflows, mp.mptcp.coupling, mp.mptcp.scheduler, mp.mptcp.join_delay_ns) == (
        2, "uncoupled", "minrtt", 5_000_000)
    assert tcp.mptcp is None
    flows = json.loads(resolved.spec.to_json())["flows"]
    assert "mptcp" in flows[0] and "mptcp" not in flows[1]


def test_the_engine_takes_every_coupling_and_scheduler_the_scenario_offers_and_no_other() -> None:
    base = json.loads(_spec(_dumbbell([MPTCP, TCP])).spec.to_json())
    for coupling in COUPLINGS:
        for scheduler in MPTCP_SCHEDULERS:
            base["flows"][0]["mptcp"].update(coupling=coupling, scheduler=scheduler)
            base["flows"][0]["flavor"] = COUPLED_FLAVOR.get(coupling, "reno")
            _engine.Simulation(json.dumps(base))
    base["flows"][0]["mptcp"]["coupling"] = "wvegas2"
    with pytest.raises(ValueError, match=r"flows\[0\]\.mptcp\.coupling"):
        _engine.Simulation(json.dumps(base))
    base["flows"][0]["mptcp"].update(coupling="olia", scheduler="minrtt")
    base["flows"][0]["flavor"] = "cubic"
    with pytest.raises(ValueError, match=r"flows\[0\]\.mptcp\.coupling: olia couples Reno"):
        _engine.Simulation(json.dumps(base))
    base["flows"][0]["mptcp"]["coupling"] = "wvegas"
    base["flows"][0]["flavor"] = "reno"
    with pytest.raises(ValueError, match=r"flows\[0\]\.mptcp\.coupling: wvegas couples Vegas"):
        _engine.Simulation(json.dumps(base))


def test_each_subflow_of_an_mptcp_flow_has_its_path_in_the_derived_facts() -> None:
    raw = {"name": "ft", "duration": "1s",
           "topology": {"kind": "fat_tree", "k": 4},
           "flows": [{"from": "pod0-edge0-h0", "to": "pod3-edge0-h0", "flavor": "reno", "subflows": 4,
                      "coupling": "lia"},
                     {"from": "pod0-edge0-h1", "to": "pod3-edge0-h1", "flavor": "reno"}]}
    facts = _spec(raw).derived["flows"]
    paths = facts[0]["subflow_path_links"]
    assert len(paths) == 4 and paths[0] == facts[0]["path_links"]
    assert len({tuple(p) for p in paths}) >= 2, "ECMP spreads the subflows"
    assert "subflow_path_links" not in facts[1]


def test_a_run_stores_subflows_and_compares_the_connection_under_its_own_name(tmp_path: Path) -> None:
    raw = _dumbbell([MPTCP, dict(TCP, **{"bytes": "1MB"})])
    raw["topology"]["bottleneck"]["loss"] = "0.1%"
    result = ccarena.run(raw, tmp_path / "out", jobs=1, report=True)
    run_id = result.run_ids[0]
    flows = result.flows
    flows = flows[flows["run_id"] == run_id].set_index("name")
    assert flows.loc["mp", "flavor"] == "mptcp-lia" and flows.loc["tcp", "flavor"] == "reno"
    assert flows.loc["mp", "subflows"] == 2 and flows.loc["tcp", "subflows"] == 1
    assert flows.loc["mp", "coupling"] == "lia" and flows.loc["tcp", "coupling"] == ""
    # Mathis' model is a single-path connection's: none for the MPTCP connection.
    assert flows["mathis_bps"].isna()["mp"] and flows["mathis_bps"].notna()["tcp"]
    store = tmp_path / "out" / "runs" / run_id
    import pandas as pd

    subflows = pd.read_parquet(store / "subflows.parquet")
    assert set(subflows["subflow"]) == {0, 1} and set(subflows["name"]) == {"mp"}
    # The subflows' goodput adds up to about the connection's (its delivery is in order over both).
    samples = pd.read_parquet(store / "samples.parquet")
    connection = samples[samples["name"] == "mp"]["delivered_bytes"].max()
    assert subflows.groupby("subflow")["delivered_bytes"].max().sum() == pytest.approx(connection, rel=0.05)
    figures = tmp_path / "out" / "figures"
    assert any(p.name.endswith("-subflows.png") for p in figures.iterdir())


def test_the_udp_backend_refuses_mptcp_in_one_line() -> None:
    flow = _spec(_dumbbell([MPTCP, TCP])).spec.flows[0]
    with pytest.raises(UserError, match=r"^flows\[0\]\.subflows: the udp backend runs single-path"):
        check_tcp_flow("flows[0]", flow)


def test_a_coupled_connection_refuses_flavor_parameters_it_would_not_use() -> None:
    # The engine builds a coupled subflow's controller from the coupling alone: parameters of the
    # flavor would be silently dropped, so the scenario refuses them; uncoupled subflows take them.
    vegas = {**MPTCP, "flavor": {"name": "vegas", "alpha": 1, "beta": 3}, "coupling": "wvegas"}
    with pytest.raises(UserError, match=r"params: wvegas runs its own controller .* remove params"):
        load_scenario(_dumbbell([vegas, TCP]))
    uncoupled = {**vegas, "coupling": "uncoupled"}
    params = _spec(_dumbbell([uncoupled, TCP])).spec.flows[0].params
    assert (params["alpha"], params["beta"]) == (1.0, 3.0)


def test_opportunistic_reaches_the_spec_and_stays_out_of_its_json_when_off() -> None:
    on = _spec(_dumbbell([dict(MPTCP, coupling="uncoupled", opportunistic=True), TCP]))
    assert on.spec.flows[0].mptcp.opportunistic is True
    assert json.loads(on.spec.to_json())["flows"][0]["mptcp"]["opportunistic"] is True
    _engine.Simulation(on.spec.to_json())
    off = _spec(_dumbbell([MPTCP, TCP]))
    assert off.spec.flows[0].mptcp.opportunistic is False
    assert "opportunistic" not in json.loads(off.spec.to_json())["flows"][0]["mptcp"]
    # Alone, like every MPTCP field, it makes the flow an MPTCP connection (one subflow).
    alone = _spec(_dumbbell([dict(TCP, opportunistic=True)])).spec.flows[0].mptcp
    assert (alone.subflows, alone.opportunistic) == (1, True)


def test_a_bad_opportunistic_value_is_refused_in_one_line_naming_the_field() -> None:
    with pytest.raises(UserError, match=r"opportunistic") as e:
        load_scenario(_dumbbell([dict(MPTCP, opportunistic="sometimes"), TCP]))
    assert "\n" not in str(e.value).strip()
    udp = {"name": "u", "from": "left1", "to": "right1", "flavor": "udp-cbr", "rate": "1Mbps",
           "opportunistic": True}
    with pytest.raises(UserError, match=r"opportunistic"):
        load_scenario(_dumbbell([MPTCP, udp]))


def test_source_ports_reach_the_spec_give_subflows_its_default_and_stay_out_of_plain_specs() -> None:
    given = _spec(_dumbbell([dict(TCP, source_ports=[40001, 40002, 40003])])).spec
    m = given.flows[0].mptcp
    assert (m.subflows, m.source_ports) == (3, (40001, 40002, 40003))
    assert json.loads(given.to_json())["flows"][0]["mptcp"]["source_ports"] == [40001, 40002, 40003]
    _engine.Simulation(given.to_json())
    both = _spec(_dumbbell([dict(MPTCP, source_ports=[7, 9])])).spec.flows[0].mptcp
    assert (both.subflows, both.source_ports) == (2, (7, 9))
    # Without them the spec's JSON is what it was before the field existed.
    plain = _spec(_dumbbell([MPTCP, TCP])).spec
    assert plain.flows[0].mptcp.source_ports is None
    assert "source_ports" not in json.loads(plain.to_json())["flows"][0]["mptcp"]


@pytest.mark.parametrize("flow,says", [
    (dict(MPTCP, source_ports=[40001, 40002, 40003]),
     "gives 3 ports for subflows = 2: give one port per subflow, or leave subflows out"),
    (dict(TCP, source_ports=[]), "gives no port: give one source port per subflow"),
    (dict(TCP, source_ports=[0, 40002]), "0 is not a TCP port: give ports in 1..65535"),
    (dict(TCP, source_ports=[40001, 65536]), "65536 is not a TCP port: give ports in 1..65535"),
    (dict(TCP, source_ports=[40001, 40001]), "port 40001 is given twice: each subflow needs its own"),
    (dict(TCP, source_ports=list(range(40001, 40034))), "gives 33 ports: an MPTCP connection has at most 32"),
    ({"name": "u", "from": "left1", "to": "right1", "flavor": "udp-cbr", "rate": "1Mbps",
      "source_ports": [40001]}, "only TCP flows take `source_ports`"),
    (dict(TCP, flavor="udt", source_ports=[40001]), "a udt flow takes `bytes`, `params` and `rwnd` but not"),
    (dict(TCP, transport="quic", source_ports=[40001]), "a QUIC connection is single-path"),
])
def test_bad_source_ports_are_refused_in_one_line_naming_the_field(flow: dict, says: str) -> None:
    with pytest.raises(UserError, match=r"^flows\[0\]\.source_ports: ") as e:
        load_scenario(_dumbbell([flow]))
    assert says in str(e.value) and "\n" not in str(e.value).strip()


def test_a_traffic_generator_refuses_one_source_port_list_for_all_its_flows() -> None:
    raw = _dumbbell([TCP])
    raw["traffic"] = [{"pattern": "permutation", "flow": {"flavor": "reno", "source_ports": [40001, 40002]}}]
    with pytest.raises(UserError, match=r"^traffic\[0\]\.flow\.source_ports: every flow of the generator "
                                        r"would get the same source ports") as e:
        load_scenario(raw)
    assert "\n" not in str(e.value).strip()


def _two_paths(ports: list[int]) -> dict:
    """Host h0 to h1 over two equal-cost paths of 20 Mbit/s, through `fast` (10 ms RTT) and
    `slow` (200 ms); one MPTCP connection of two uncoupled Reno subflows with the given source
    ports, opportunistic retransmission on and a 50 kB connection buffer (twice the fast path's
    BDP), as crates/sim/tests/mptcp_opportunistic.rs."""
    links = [{"a": a, "b": b, "delay": delay} for r, delay in (("fast", "2.5ms"), ("slow", "50ms"))
             for a, b in (("h0", r), (r, "h1"))]
    return {"name": "two-paths", "duration": "3s", "seed": 1,
            "topology": {"kind": "graph", "default": {"rate": "20Mbps", "delay": "1ms",
                                                     "queue": {"limit": "100pkt"}},
                         "nodes": [{"name": "h0", "kind": "host"}, {"name": "h1", "kind": "host"},
                                   {"name": "fast", "kind": "router"}, {"name": "slow", "kind": "router"}],
                         "links": links},
            "flows": [{"name": "mp", "from": "h0", "to": "h1", "flavor": "reno", "coupling": "uncoupled",
                       "source_ports": ports, "opportunistic": True, "rwnd": "50KB"}],
            "output": {"sample_interval": "100ms"}}


def _routers(spec_json: str, names: list[str]) -> list[set[str]]:
    """Per subflow of flow 0, the routers its data and ACK paths cross (ECMP by its 5-tuple)."""
    def router(link: int) -> set[str]:
        return {n for n in names[link].replace("->", " ").split() if n in ("fast", "slow")}

    return [set().union(*(router(link) for link in data + ack))
            for data, ack in _engine.subflow_paths(spec_json)[0]]


def test_source_ports_steer_the_subflows_and_the_subflows_table_counts_opportunistic_resends(tmp_path: Path) -> None:
    import pandas as pd
    from ccarena.backends.kernel.measured_tables import SUBFLOW_COLUMNS

    spec = _spec(_two_paths([40000, 40001])).spec
    names = [link.name for link in spec.links]
    base = json.loads(spec.to_json())

    def routers(ports: list[int]) -> list[set[str]]:
        base["flows"][0]["mptcp"]["source_ports"] = ports
        return _routers(json.dumps(base), names)

    # The ports alone decide each subflow's path: some pair puts subflow 0 on the fast path and
    # subflow 1 on the slow one, and swapping the pair swaps the paths.
    pairs = ([a, b] for a in range(40000, 40100) for b in range(40000, 40100) if a != b)
    split = next(p for p in pairs if routers(p) == [{"fast"}, {"slow"}])
    assert routers(split[::-1]) == [{"slow"}, {"fast"}]

    result = ccarena.run(_two_paths(split), tmp_path / "out", jobs=1, report=False)
    subflows = pd.read_parquet(tmp_path / "out" / "runs" / result.run_ids[0] / "subflows.parquet")
    # The simulator's table has the kernel backend's columns (and the store's run_id and name).
    assert [c for c in subflows.columns if c not in ("run_id", "name")] == list(SUBFLOW_COLUMNS)
    last = subflows.groupby("subflow").last()
    assert last.loc[0, "opportunistic_retransmits"] > 0, "the fast subflow resends what the slow one holds"
    assert last.loc[0, "opportunistic_bytes"] >= last.loc[0, "opportunistic_retransmits"]
    assert last.loc[1, "penalisations"] > 0, "the slow subflow is penalised"
