"""Scenarios choose any engine flavor, with parameters, ECN marking and UDT flows, and the
resolved spec carries every value explicitly."""

from __future__ import annotations

import pytest
from ccarena import _engine
from ccarena.errors import UserError
from ccarena.experiment import expand
from ccarena.scenario import load_scenario


def scenario(flows: list[dict], queue: dict | None = None) -> dict:
    return {
        "name": "flavors", "duration": "2s", "seed": 1,
        "topology": {"kind": "dumbbell", "pairs": 2,
                     "bottleneck": {"rate": "50Mbps", "delay": "5ms",
                                    "queue": queue or {"limit": "100pkt"}}},
        "flows": flows,
    }


def resolved_flows(raw: dict) -> list[dict]:
    return expand(load_scenario(raw))[0].resolved.spec.to_dict()["flows"]


def test_flavor_table_sets_parameters_and_keeps_the_other_defaults():
    flows = resolved_flows(scenario([{"from": "left0", "to": "right0",
                                      "flavor": {"name": "vegas", "alpha": 1, "beta": 3}}]))
    defaults = {p["name"]: p["default"] for p in {f["name"]: f for f in _engine.flavors()}["vegas"]["params"]}
    assert flows[0]["flavor"] == "vegas"
    assert flows[0]["params"] == {**defaults, "alpha": 1.0, "beta": 3.0}


def test_dctcp_negotiates_ecn_and_the_queue_marks_at_its_threshold():
    raw = scenario([{"from": "left0", "to": "right0", "flavor": "dctcp"},
                    {"from": "left1", "to": "right1", "flavor": "cubic"}],
                   queue={"limit": "100pkt", "ecn_threshold": "20pkt"})
    spec = expand(load_scenario(raw))[0].resolved.spec.to_dict()
    assert [f["ecn"] for f in spec["flows"]] == [True, False]
    bottleneck = next(link for link in spec["links"] if link["name"] == "r0->r1")
    assert bottleneck["queue"]["ecn_threshold_packets"] == 20


def test_udt_flow_resolves_to_the_udt_kind_with_every_field():
    flows = resolved_flows(scenario([{"from": "left0", "to": "right0", "flavor": "udt", "bytes": "10MB"}]))
    udt = flows[0]
    assert udt["kind"] == "udt" and udt["bytes"] == 10_000_000
    for field in ("mss_bytes", "header_bytes", "ack_bytes", "syn_interval_ns", "flow_window_packets",
                  "initial_rtt_ns", "min_exp_ns", "params"):
        assert field in udt


@pytest.mark.parametrize("flow, queue, fragment", [
    ({"flavor": {"name": "vegas", "alpah": 1}}, None, "flows[0].params.alpah"),
    ({"flavor": {"alpha": 1}}, None, "flows[0].flavor: a flavor table needs a name"),
    ({"flavor": "udt", "recovery": "sack"}, None, "flows[0].recovery"),
    ({"flavor": "cubic"}, {"limit": "100pkt", "ecn_threshold": "200pkt"}, "ecn_threshold"),
])
def test_bad_flavor_settings_name_the_field(flow, queue, fragment):
    raw = scenario([{"from": "left0", "to": "right0", **flow}], queue=queue)
    with pytest.raises(UserError) as err:
        load_scenario(raw)
    assert fragment in str(err.value)
