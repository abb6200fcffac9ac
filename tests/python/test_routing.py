"""Routing computed by the engine, end to end: a scenario's spec carries ``routing`` and only its
static routes (no all-pairs table), flow paths come from the engine, a link can fail and come back
in ``[[events]]``, and a bad static route is one line naming its field."""

from __future__ import annotations

import json

import ccarena
import pytest
from ccarena.experiment import resolve_run
from ccarena.scenario import validate_scenario


def _dumbbell(**extra) -> dict:
    scenario = {
        "name": "routing", "duration": "3s", "seed": 4,
        "topology": {"kind": "dumbbell", "pairs": 2,
                     "bottleneck": {"rate": "10Mbps", "delay": "5ms"},
                     "access": {"rate": "100Mbps", "delay": "1ms"}},
        "flows": [{"from": "left0", "to": "right0", "flavor": "cubic"},
                  {"from": "left1", "to": "right1", "flavor": "udp-cbr", "rate": "2Mbps"}],
    }
    scenario.update(extra)
    return scenario


def _run_specs(out) -> list[dict]:
    return [json.loads(p.read_text())["spec"] for p in sorted(out.glob("runs/*/run.json"))]


def test_a_dumbbell_runs_with_engine_routing_and_no_route_table(tmp_path):
    result = ccarena.run(_dumbbell(), tmp_path / "d", jobs=1)
    assert (result.summary["goodput_mean_bps"] > 0).all()
    specs = _run_specs(tmp_path / "d")
    assert specs, "run.json written"
    for spec in specs:
        assert spec["routing"] == {"mode": "ecmp"}
        assert spec["routes"] == [], "no all-pairs table: the engine computes the routes"
    assert (result.links["down_drops_packets"] == 0).all()


def test_a_link_down_event_drops_its_packets_and_the_flow_resumes(tmp_path):
    events = [{"at": "1s", "link": "r0-r1", "up": False}, {"at": "2s", "link": "r0-r1", "up": True}]
    result = ccarena.run(_dumbbell(events=events), tmp_path / "e", jobs=1)
    links = result.links.set_index("name")
    assert links.loc["r0->r1", "down_drops_packets"] > 0, "packets on the failed cable are lost"
    # The routers have no other way: packets reaching r0 while the cable is down find it down.
    spec = _run_specs(tmp_path / "e")[0]
    assert [e["set"].get("up") for e in spec["events"]] == [False, False, True, True]
    samples = result.samples
    cbr = samples[samples["name"] == "udp-cbr"] if "name" in samples else samples[samples["flow"] == 1]
    during = cbr[(cbr["time_s"] > 1.2) & (cbr["time_s"] <= 1.9)]["goodput_bps"]
    after = cbr[(cbr["time_s"] > 2.3)]["goodput_bps"]
    assert (during == 0).all(), "nothing crosses the cable while it is down"
    assert after.mean() > 1.5e6, "delivery resumes once it is back"


def test_static_routes_go_into_the_spec_and_bad_ones_name_their_field():
    ok = resolve_run(validate_scenario(_dumbbell(
        routing={"mode": "spray", "static": [{"node": "r0", "dst": "right0", "via": "r1"}]})), seed=1)
    spec = ok.spec.to_dict()
    names = [n["name"] for n in spec["nodes"]]
    assert spec["routing"] == {"mode": "spray"}
    [route] = spec["routes"]
    assert (names[route["node"]], names[route["dst"]]) == ("r0", "right0")
    assert spec["links"][route["link"]]["name"] == "r0->r1"
    # r1 sends right0's packets back to r0, which sends them to r1 again.
    looping = _dumbbell(routing={"static": [{"node": "r1", "dst": "right0", "via": "r0"}]})
    with pytest.raises(ccarena.UserError, match=r"routing\.static\[0\]: the static route at 'r1' for 'right0' .*loop"):
        resolve_run(validate_scenario(looping), seed=1)
    unknown = _dumbbell(routing={"static": [{"node": "r9", "dst": "right0", "via": "r1"}]})
    with pytest.raises(ccarena.UserError, match=r"routing\.static\[0\]\.node: unknown node 'r9'"):
        resolve_run(validate_scenario(unknown), seed=1)


def test_the_kernel_backend_routes_the_paths_the_engine_takes():
    from ccarena.backends.kernel.routes import next_hops

    run = resolve_run(validate_scenario(_dumbbell()), seed=1)
    spec = run.spec
    table = {(node, dst): link for node, dst, link in next_hops(spec)}
    for flow, facts in zip(spec.flows, run.derived["flows"]):
        for src, dst, path in ((flow.src, flow.dst, facts["path_links"]),
                               (flow.dst, flow.src, facts["reverse_path_links"])):
            at, walked = src, []
            while at != dst:
                walked.append(table[(at, dst)])
                at = spec.links[walked[-1]].to
            assert walked == path
    # A spec written before routing was computed is its own table.
    legacy = spec.model_copy(update={"routing": None})
    assert next_hops(legacy) == []
