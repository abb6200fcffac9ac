"""Topology builders produce the explicit graph and routes; the resolver writes every value the
engine needs, and the engine accepts the result."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from ccarena import _engine
from ccarena.experiment import resolve_run
from ccarena.runspec import TCP_DEFAULTS
from ccarena.scenario import validate_scenario

DUMBBELL = {
    "name": "t", "duration": "1s", "seed": 5,
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "bottleneck": {"rate": "10Mbps", "delay": "10ms", "loss": "1%"},
                 "access": {"rate": "100Mbps", "delay": "1ms"}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "cubic"},
              {"from": "left1", "to": "right1", "flavor": "reno", "start": "0.5s", "mss": "1000B"},
              {"from": "right1", "to": "left0", "flavor": "udp-cbr", "rate": "1Mbps",
               "packet_size": "200B", "stop": "0.8s"}],
}


def resolved(raw: dict):
    return resolve_run(validate_scenario(raw), seed=11)


def test_dumbbell_graph_links_and_routes():
    run = resolved(DUMBBELL)
    spec = run.spec.to_dict()
    names = [n["name"] for n in spec["nodes"]]
    assert names == ["left0", "left1", "right0", "right1", "r0", "r1"]
    assert [n["kind"] for n in spec["nodes"]] == ["host"] * 4 + ["router"] * 2
    assert len(spec["links"]) == 2 * (1 + 4)          # bottleneck + 4 access links, both directions
    by_name = {link["name"]: link for link in spec["links"]}
    assert by_name["r0->r1"]["loss"] == pytest.approx(0.01)  # loss applies left to right only
    assert by_name["r1->r0"]["loss"] == 0.0
    assert by_name["r0->r1"]["queue"] == {"discipline": "droptail", "limit_packets": 100, "limit_bytes": None,
                                          "ecn_threshold_packets": None, "ecn_threshold_bytes": None}
    assert by_name["left0->r0"]["queue"]["limit_packets"] == 1000
    # The engine computes the routes: no table in the spec, the paths asked of the engine.
    assert spec["routes"] == [] and spec["routing"] == {"mode": "ecmp"}
    cubic = run.derived["flows"][0]
    assert [spec["links"][i]["name"] for i in cubic["path_links"]] == ["left0->r0", "r0->r1", "r1->right0"]
    assert [spec["links"][i]["name"] for i in cubic["reverse_path_links"]] == ["right0->r1", "r1->r0", "r0->left0"]


def test_single_link_graph():
    raw = {"name": "s", "duration": "1s",
           "topology": {"kind": "single_link", "link": {"rate": "5Mbps", "delay": "7ms", "reverse_loss": "2%"}},
           "flows": [{"from": "a", "to": "b", "flavor": "newreno"}]}
    run = resolved(raw)
    spec = run.spec.to_dict()
    assert [link["name"] for link in spec["links"]] == ["a->b", "b->a"]
    assert spec["links"][1]["loss"] == pytest.approx(0.02)
    assert (run.derived["flows"][0]["path_links"], run.derived["flows"][0]["reverse_path_links"]) == ([0], [1])


def test_every_default_is_explicit_and_overrides_apply():
    run = resolved(DUMBBELL)
    cubic, reno, cbr = run.spec.to_dict()["flows"]
    catalogue = {f["name"]: f for f in _engine.flavors()}
    for key, value in TCP_DEFAULTS.items():
        if key not in ("mss_bytes",):
            assert reno[key] == value, key
    assert cubic["mss_bytes"] == 1448 and reno["mss_bytes"] == 1000
    assert cubic["recovery"] == catalogue["cubic"]["default_recovery"] == "linux"
    assert reno["recovery"] == "reno"
    assert cubic["params"] == {p["name"]: float(p["default"]) for p in catalogue["cubic"]["params"]}
    assert reno["start_ns"] == 500_000_000 and reno["stop_ns"] is None and reno["bytes"] is None
    assert cbr["kind"] == "udp_cbr" and cbr["rate_bps"] == 1_000_000 and cbr["packet_bytes"] == 200
    assert cbr["stop_ns"] == 800_000_000 and cbr["header_bytes"] == 28
    assert run.spec.seed == 11 and run.spec.sample_interval_ns == 100_000_000


def test_derived_path_facts():
    run = resolved(DUMBBELL)
    cubic = run.derived["flows"][0]
    # Propagation 2·(1 + 10 + 1) ms plus serialization of a 1500-byte packet out and a 52-byte ACK back.
    data_bits, ack_bits = 1500 * 8, 52 * 8
    expected = 0.024 + data_bits * (2 / 100e6 + 1 / 10e6) + ack_bits * (2 / 100e6 + 1 / 10e6)
    assert cubic["base_rtt_s"] == pytest.approx(expected)
    assert cubic["path_loss"] == pytest.approx(0.01)
    assert cubic["bottleneck_rate_bps"] == 10_000_000
    roles = {link["name"]: link["role"] for link in run.derived["links"]}
    assert roles["r0->r1"] == "bottleneck" and roles["left1->r0"] == "access"


def test_the_engine_accepts_the_resolved_spec_and_rejects_a_missing_field():
    run = resolved(DUMBBELL)
    sim = _engine.Simulation(run.spec.to_json())
    sim.run_until(sim.duration_ns)
    assert sim.finished
    broken = run.spec.to_dict()
    del broken["flows"][0]["min_rto_ns"]
    with pytest.raises(ValueError):
        _engine.Simulation(json.dumps(broken))


def test_spec_hash_changes_with_any_value():
    a = resolved(DUMBBELL)
    other = copy.deepcopy(DUMBBELL)
    other["topology"]["bottleneck"]["delay"] = "11ms"
    assert a.spec_sha256() == resolved(DUMBBELL).spec_sha256()
    assert a.spec_sha256() != resolved(other).spec_sha256()


def _growing_red(queue: dict) -> dict:
    raw = copy.deepcopy(DUMBBELL)
    raw["duration"] = "10s"
    raw["topology"]["bottleneck"]["queue"] = {"discipline": "red", "limit": "20pkt", **queue}
    raw["events"] = [{"at": "2s", "every": "2s", "link": "r0->r1", "increase": {"limit": "20pkt"}}]
    return raw


def test_red_thresholds_left_to_their_defaults_follow_a_growing_limit():
    spec = resolved(_growing_red({})).spec
    changes = [(e.set.limit_packets, e.set.red_min_th_packets, e.set.red_max_th_packets)
               for e in spec.events]
    # A quarter and three quarters of each new limit, as the thresholds of the first one are.
    assert changes == [(40, 10, 30), (60, 15, 45), (80, 20, 60), (100, 25, 75)]
    red = next(link for link in spec.links if link.name == "r0->r1").queue.red
    assert (red.min_th_packets, red.max_th_packets) == (5, 15)


def test_explicit_red_thresholds_stay_and_one_default_follows():
    explicit = resolved(_growing_red({"min_th": "2pkt", "max_th": "8pkt"})).spec
    assert all(e.set.red_min_th_packets is None and e.set.red_max_th_packets is None
               for e in explicit.events)
    assert '"red_min_th_packets"' not in explicit.to_json()  # optional keys stay out when unset
    mixed = resolved(_growing_red({"min_th": "2pkt"})).spec
    assert [(e.set.red_min_th_packets, e.set.red_max_th_packets) for e in mixed.events][:2] == \
        [(2, 30), (2, 45)]


def test_a_copied_spec_serializes_its_own_values():
    """The spec's JSON is computed once per spec; a copy with changes (the Linux-recovery twin is
    made this way) must not reuse the original's."""
    from ccarena.experiment import expand
    from ccarena.scenario import load_scenario

    spec = expand(load_scenario(Path(__file__).resolve().parents[2] / "examples" / "quickstart.toml"))[0].resolved.spec
    before = spec.to_json()
    flows = tuple(f.model_copy(update={"recovery": "linux"}) for f in spec.flows)
    twin = spec.model_copy(update={"flows": flows})
    assert '"recovery":"linux"' in twin.to_json() and twin.to_json() != before
    assert spec.to_json() == before and twin.sha256() != spec.sha256()


def test_the_simulated_twin_of_a_kernel_run_models_linuxs_cubic_and_only_it():
    """With ``--backend sim,kernel`` the sim run's CUBIC flows get Linux's CUBIC parameters
    (RFC 8312's Reno-friendly factor, HyStart, 5% growth before the first loss, a window in whole
    packets) unless the
    scenario sets them, and every TCP flow its handshake's RTT sample; the kernel run keeps the
    catalogue's defaults (the kernel cannot be given parameters), and a sim-only run is the RFC
    flavor with an unchanged spec."""
    from ccarena.experiment import apply_backends, expand
    from ccarena.experiment.runids import LINUX_HOST_PARAMS, TWIN_LINK_JITTER
    from ccarena.scenario import load_scenario

    raw = copy.deepcopy(DUMBBELL)
    raw["flows"] = raw["flows"][:2] + [{"from": "left1", "to": "right1", "flavor": "cubic",
                                        "params": {"hystart": 0}}]
    plans = expand(load_scenario(raw))
    alone = apply_backends(plans, ["sim"])[0]
    sim, kernel = apply_backends(plans, ["sim", "kernel"])
    assert (sim.backend, kernel.backend) == ("sim", "kernel")
    assert alone.resolved.spec.sha256() == plans[0].resolved.spec.sha256()
    defaults = plans[0].resolved.spec.flows[0].params
    linux = LINUX_HOST_PARAMS["cubic"]
    assert sim.resolved.spec.flows[0].params == {**defaults, **linux}
    assert sim.resolved.spec.flows[2].params == {**defaults, **linux, "hystart": 0.0}
    assert sim.resolved.spec.flows[1].params == kernel.resolved.spec.flows[1].params  # reno
    assert kernel.resolved.spec.flows[0].params == defaults
    assert all(f.recovery == "linux" for f in sim.resolved.spec.flows[:3:2])
    # The twin's senders take the idle-path handshake's RTT sample, as the kernel's connect
    # before t0; the kernel run and a sim-only run have no such field in their specs.
    assert all(f.handshake_rtt for f in sim.resolved.spec.flows)
    assert not any(f.handshake_rtt for f in kernel.resolved.spec.flows + alone.resolved.spec.flows)
    assert "handshake_rtt" not in kernel.resolved.spec.to_json()
    # The twin's links jitter as the testbed's do; the kernel's spec and a sim-only run's do not.
    assert sim.resolved.spec.link_jitter == TWIN_LINK_JITTER > 0
    assert kernel.resolved.spec.link_jitter is None and alone.resolved.spec.link_jitter is None
    # The engine accepts the twin's parameters.
    _engine.Simulation(sim.resolved.spec.to_json())
