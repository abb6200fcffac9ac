"""QUIC through the front end (issue 33, item 1): a TCP-flavor flow's ``transport = "quic"`` and
its QUIC fields are validated with one clear line per mistake, reach the engine spec as
``quic = {...}`` with RFC 9000/9002's defaults (and stay out of the JSON of every TCP flow, so
existing specs hash as before), name the connection ``quic-<flavor>`` in the results, and are
refused in one line by the kernel and udp backends before anything is probed. The end-to-end run
is skipped until the engine has QUIC."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import ccarena
from ccarena import flavors
from ccarena.analysis import metrics
from ccarena.analysis.datacenter_metrics import HEADER_BYTES
from ccarena.backends.kernel import backend as kernel_backend
from ccarena.backends.kernel.preflight import NO_KERNEL_QUIC
from ccarena.backends.udp.endpoint_flows import check_tcp_flow, quic_mss_on_the_wire, quic_settings
from ccarena.errors import UserError
from ccarena.experiment import expand
from ccarena.runspec import (
    QUIC_DATA_OVERHEAD_BYTES,
    QUIC_DEFAULTS,
    TCP_DEFAULTS,
    TRANSPORTS,
    QuicSpec,
    RunSpec,
    quic_payload_bytes,
)
from ccarena.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _dumbbell(flows: list[dict], duration: str = "2s", loss: str = "0%") -> dict:
    return {"name": "quic-test", "duration": duration, "seed": 5,
            "topology": {"kind": "dumbbell", "pairs": 2,
                         "bottleneck": {"rate": "10Mbps", "delay": "10ms", "loss": loss,
                                        "queue": {"limit": "50pkt"}},
                         "access": {"rate": "1Gbps", "delay": "1ms"}},
            "flows": flows, "output": {"sample_interval": "100ms"}}


QUIC = {"from": "left0", "to": "right0", "flavor": "cubic", "transport": "quic"}
TCP = {"from": "left1", "to": "right1", "flavor": "cubic"}


def _resolved(raw: dict):
    return expand(load_scenario(raw))[0].resolved


def _error(flow: dict) -> str:
    with pytest.raises(UserError) as caught:
        load_scenario(_dumbbell([flow]))
    return str(caught.value)


# ----------------------------------------------------------------------------- the spec model

def test_the_spec_model_has_the_rfc_defaults_and_its_bounds() -> None:
    assert TRANSPORTS == ("tcp", "quic")
    assert QUIC_DEFAULTS == {"max_ack_delay_ns": 25_000_000, "ack_eliciting_threshold": 2,
                             "reordering_threshold": 1, "initial_rtt_ns": 333_000_000,
                             "max_stream_data_bytes": None, "pacing": True}
    # The packet keeps the TCP segment's wire size: 1448 + 52 − 63 = 1437 B of stream data.
    assert QUIC_DATA_OVERHEAD_BYTES == 63
    assert quic_payload_bytes(TCP_DEFAULTS["mss_bytes"], TCP_DEFAULTS["header_bytes"]) == 1437
    assert quic_payload_bytes(5, 52) == 0
    for bad in ({"ack_eliciting_threshold": 0}, {"ack_eliciting_threshold": 1001},
                {"initial_rtt_ns": 0}, {"reordering_threshold": -1}, {"max_stream_data_bytes": 0}):
        with pytest.raises(ValueError):
            QuicSpec(**bad)
    assert QuicSpec(reordering_threshold=0).reordering_threshold == 0  # never ACK at once
    # TCP_DEFAULTS (the host settings a scenario flow may give) does not list the QUIC table.
    assert "quic" not in TCP_DEFAULTS


# ----------------------------------------------------------------------------- schema

def test_a_quic_flow_is_accepted_with_every_field_it_keeps() -> None:
    loaded = load_scenario(_dumbbell([dict(QUIC, bytes="1MB", rwnd="2MB", sndbuf="4MB", ecn=True,
                                           initial_cwnd="4pkt", mss="1200B",
                                           params={"beta": 0.7},
                                           max_ack_delay="5ms", ack_eliciting_threshold=10,
                                           reordering_threshold=0, max_stream_data="1MB"), TCP]))
    quic, tcp = loaded.scenario.flows
    assert quic.is_quic and quic.engine_kind == "tcp"
    assert not tcp.is_quic and tcp.transport is None and tcp.engine_kind == "tcp"
    # Unnamed flows are named by the label they are compared under.
    assert loaded.scenario.flow_names() == ["quic-cubic", "cubic"]


@pytest.mark.parametrize("field, value, fragment", [
    ("recovery", "prr", "RFC 9002's rules"),
    ("dupthresh", 5, "3 packets or 9/8 RTT"),
    ("min_rto", "10ms", "probe timeout"),
    ("initial_rto", "2s", "probe timeout"),
    ("max_rto", "60s", "probe timeout"),
    ("delayed_ack", "10ms", "give max_ack_delay instead"),
    ("ack_every", 4, "give ack_eliciting_threshold instead"),
])
def test_a_quic_flow_refuses_each_tcp_only_field_naming_it_and_the_fix(field: str, value, fragment: str) -> None:
    message = _error(dict(QUIC, **{field: value}))
    assert message.startswith(f"flows[0].{field}: is a TCP setting and this flow runs over QUIC")
    assert fragment in message and 'give transport = "tcp"' in message
    assert "\n" not in message


@pytest.mark.parametrize("field, value", [("subflows", 2), ("coupling", "uncoupled"),
                                          ("scheduler", "roundrobin"), ("join_delay", "5ms")])
def test_a_quic_flow_refuses_multipath_fields(field: str, value) -> None:
    assert _error(dict(QUIC, **{field: value})).startswith(
        f"flows[0].{field}: a QUIC connection is single-path")


@pytest.mark.parametrize("field, value", [("max_ack_delay", "5ms"), ("ack_eliciting_threshold", 4),
                                          ("reordering_threshold", 0), ("max_stream_data", "1MB")])
@pytest.mark.parametrize("transport", [None, "tcp"])
def test_a_quic_field_without_transport_quic_asks_for_it(field: str, value, transport: str | None) -> None:
    flow = dict(TCP, **{field: value})
    if transport is not None:
        flow["transport"] = transport
    assert _error(flow).startswith(f'flows[0].{field}: is a QUIC setting; give transport = "quic"')


@pytest.mark.parametrize("flow", [
    {"from": "left0", "to": "right0", "flavor": "udp-cbr", "rate": "1Mbps", "transport": "quic"},
    {"from": "left0", "to": "right0", "flavor": "udt", "transport": "quic"},
    {"from": "left0", "to": "right0", "flavor": "udt", "max_ack_delay": "5ms"},
])
def test_only_tcp_flavors_take_a_transport_or_quic_fields(flow: dict) -> None:
    message = _error(flow)
    assert message.startswith("flows[0].")
    assert "only TCP flavors take" in message and 'flavor = "cubic"' in message


def test_sizes_that_leave_a_quic_packet_no_room_are_refused() -> None:
    assert _error(dict(QUIC, mss="11B")).startswith("flows[0].mss: 11 B leaves a QUIC packet no stream data")
    load_scenario(_dumbbell([dict(QUIC, mss="12B")]))  # one byte of stream data
    assert _error(dict(QUIC, max_stream_data="1436B")).startswith(
        "flows[0].max_stream_data: 1436 B is less than one packet's stream data (1437 B)")
    assert "transport" in _error(dict(QUIC, transport="sctp"))


def test_a_traffic_template_may_run_its_flows_over_quic() -> None:
    raw = _dumbbell([])
    raw["traffic"] = [{"pattern": "permutation", "flow": {"flavor": "cubic", "transport": "quic",
                                                          "max_ack_delay": "5ms"}}]
    spec = _resolved(raw).spec
    assert spec.flows and all(f.quic is not None and f.quic.max_ack_delay_ns == 5_000_000
                              for f in spec.flows)


# ----------------------------------------------------------------------------- resolve

def test_resolve_builds_the_quic_settings_and_leaves_tcp_specs_unchanged() -> None:
    plain = _resolved(_dumbbell([TCP])).spec
    resolved = _resolved(_dumbbell([dict(QUIC, max_ack_delay="5ms", reordering_threshold=0,
                                         max_stream_data="2MB"), TCP]))
    quic, tcp = resolved.spec.flows
    assert quic.quic == QuicSpec(max_ack_delay_ns=5_000_000, ack_eliciting_threshold=2,
                                 reordering_threshold=0, initial_rtt_ns=333_000_000,
                                 max_stream_data_bytes=2_000_000, pacing=True)
    assert quic.kind == "tcp" and quic.flavor == "cubic" and quic.mptcp is None
    assert tcp.quic is None
    flows = json.loads(resolved.spec.to_json())["flows"]
    assert flows[0]["quic"] == {"max_ack_delay_ns": 5_000_000, "ack_eliciting_threshold": 2,
                                "reordering_threshold": 0, "initial_rtt_ns": 333_000_000,
                                "max_stream_data_bytes": 2_000_000, "pacing": True}
    assert "quic" not in flows[1]
    # A TCP flow's JSON is what it was before QUIC existed (the stored runs' hashes hold).
    assert json.loads(plain.to_json())["flows"][0] == {**flows[1], "name": "cubic"}
    # The spec reads back from run.json.
    assert RunSpec.from_dict(resolved.spec.to_dict()) == resolved.spec
    # Defaults when the flow gives none.
    assert _resolved(_dumbbell([QUIC])).spec.flows[0].quic == QuicSpec()


def test_a_quic_flows_derived_facts_count_its_stream_data_per_packet() -> None:
    resolved = _resolved(_dumbbell([QUIC, TCP]))
    quic, tcp = resolved.derived["flows"]
    assert quic["mss_bytes"] == 1437 and tcp["mss_bytes"] == 1448
    # The same wire size per data packet: the same base RTT but for the ACK's size.
    assert quic["base_rtt_s"] == pytest.approx(tcp["base_rtt_s"], rel=1e-3)


# ----------------------------------------------------------------------------- labels

def test_quic_flows_are_compared_under_their_own_label() -> None:
    assert flavors.quic_label("cubic", "quic") == "quic-cubic"
    assert flavors.quic_label("cubic", "tcp") == "cubic"
    assert flavors.quic_label("udp-cbr", "udp_cbr") == "udp-cbr"
    assert HEADER_BYTES["quic"] == QUIC_DATA_OVERHEAD_BYTES


def test_the_flow_table_relabels_quic_rows_and_keeps_their_loss_models() -> None:
    """An engine flows table with a QUIC and a TCP CUBIC flow (as the engine writes it, kind
    "quic"): the QUIC one is compared as quic-cubic, and the loss-response models still apply
    to it (one single-path controller)."""
    rows = []
    for i, kind in enumerate(("quic", "tcp")):
        rows.append({"flow": i, "name": f"f{i}", "kind": kind, "flavor": "cubic", "recovery": "linux",
                     "start_s": 0.0, "end_s": float("nan"), "bytes_delivered": 1e6, "bytes_sent": 1.1e6,
                     "bytes_offered": float("nan"), "packets_lost": 10, "packets_sent": 800,
                     "packets_retransmitted": 10, "packets_received": 790,
                     "completion_time_s": float("nan")})
    flows = pd.DataFrame(rows)
    samples = pd.DataFrame({"flow": [0, 1], "time_s": [0.1, 0.1], "goodput_bps": [1e6, 1e6]})
    derived = {"flows": [{"name": "f0", "base_rtt_s": 0.04, "path_loss": 0.01, "mss_bytes": 1437,
                          "bottleneck_rate_bps": 1e7, "path_links": []},
                         {"name": "f1", "base_rtt_s": 0.04, "path_loss": 0.01, "mss_bytes": 1448,
                          "bottleneck_rate_bps": 1e7, "path_links": []}]}
    out = metrics.flow_table(flows, samples, derived, duration_s=2.0, sample_interval_s=0.1)
    assert list(out["flavor"]) == ["quic-cubic", "cubic"]
    assert out["mathis_bps"].notna().all() and out["cubic_bps"].notna().all()


# ----------------------------------------------------------------------------- backends

def test_the_kernel_backend_refuses_a_quic_flow_before_probing_anything(monkeypatch) -> None:
    spec = _resolved(_dumbbell([TCP, QUIC])).spec

    def no_probe():
        raise AssertionError("the machine was probed for a run that cannot start")

    monkeypatch.setattr(kernel_backend.capabilities, "detect", no_probe)
    with pytest.raises(UserError) as caught:
        kernel_backend.KernelBackend().check(spec)
    assert str(caught.value) == f"flows[1].transport: {NO_KERNEL_QUIC}; use --backend sim"
    assert "Linux has no kernel QUIC" in NO_KERNEL_QUIC and "simulator" in NO_KERNEL_QUIC


def test_the_udp_backend_takes_a_quic_flow_and_refuses_what_its_wire_cannot_carry() -> None:
    spec = _resolved(_dumbbell([QUIC, TCP])).spec
    check_tcp_flow("flows[0]", spec.flows[0])  # the simulator's QUIC transport in ccarena's frames
    check_tcp_flow("flows[1]", spec.flows[1])  # the TCP flow is the udp backend's as before
    assert quic_mss_on_the_wire(spec.flows[0]) == 1435  # the simulator's 1437 cut to a datagram
    cfg = quic_settings(spec.flows[0])
    assert cfg["ack_eliciting_threshold"] == spec.flows[0].quic.ack_eliciting_threshold
    slow = spec.flows[0].model_copy(update={"quic": spec.flows[0].quic.model_copy(
        update={"max_ack_delay_ns": 2**14 * 1_000_000})})
    with pytest.raises(UserError, match=r"^flows\[0\]\.quic\.max_ack_delay: RFC 9000 §18\.2") as caught:
        check_tcp_flow("flows[0]", slow)
    assert "\n" not in str(caught.value)


# ----------------------------------------------------------------------------- the study

def test_the_study_validates_and_compares_each_transport() -> None:
    plans = expand(load_scenario(EXAMPLES / "quic-vs-tcp.toml"))
    parts = {}
    for plan in plans:
        parts.setdefault(plan.part, []).append(plan)
    assert set(parts) == {"loss", "reordering", "buffers", "shared-bottleneck", "1gbps", "cellular", "linux"}
    for name, runs in parts.items():
        kinds = {f.quic is not None for plan in runs for f in plan.resolved.spec.flows}
        # The linux part is Linux's TCP (--backend sim,kernel); Linux has no kernel QUIC.
        assert kinds == ({False} if name == "linux" else {True, False}), f"{name}: transports {kinds}"
    assert len(plans) <= 64  # a study that runs in well under two minutes on two cores


# ----------------------------------------------------------------------------- end to end

def _engine_has_quic() -> None:
    from ccarena import _engine

    spec = _resolved(_dumbbell([QUIC])).spec
    try:
        _engine.Simulation(spec.to_json())
    except ValueError as err:
        if "quic" in str(err).lower():
            pytest.skip(f"the engine has no QUIC yet: {err}")
        raise


def test_a_quic_flow_runs_on_the_simulator_beside_a_tcp_flow(tmp_path: Path) -> None:
    _engine_has_quic()
    raw = _dumbbell([dict(QUIC, name="quic"), dict(TCP, name="tcp", bytes="300KB")], duration="3s",
                    loss="1%")
    result = ccarena.run(raw, tmp_path / "out", jobs=1, report=False)
    flows = result.flows.set_index("name")
    assert flows.loc["quic", "kind"] == "quic" and flows.loc["tcp", "kind"] == "tcp"
    assert flows.loc["quic", "flavor"] == "quic-cubic" and flows.loc["tcp", "flavor"] == "cubic"
    assert flows.loc["quic", "goodput_mean_bps"] > 1e6  # a 10 Mbit/s bottleneck, two flows
    assert flows.loc["quic", "packets_lost"] > 0  # 1% random loss over ~1,000 packets
    assert flows.loc["quic", "mss_bytes"] == 1437
    assert flows.loc["tcp", "fct_s"] > 0
