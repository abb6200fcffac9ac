"""The udp backend's side of ECN, without root: a flow with ``ecn = true`` (Prague, CUBIC) passes
the backend's check, its sender is configured with ECN, and the flows table carries the sink's
CE counts in the simulator's ``ce_packets``/``ce_bytes`` columns (0 for Not-ECT datagrams; a
kernel TCP flow's are its receiver's ``tcpi_received_ce``, on Linux 6.18 and later, NaN before)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from ccarena.backends.kernel import measured_tables
from ccarena.backends.udp import endpoint_flows
from ccarena.errors import UserError

PATH = {"kind": "single_link",
        "link": {"rate": "20Mbps", "delay": "20ms", "queue": {"discipline": "dualpi2", "limit": "200pkt"}}}


def _spec(flows: list[dict]):
    from ccarena.experiment import apply_backends, expand
    from ccarena.scenario import load_scenario

    raw = {"name": "ecn", "duration": "1s", "topology": PATH,
           "flows": [{"from": "a", "to": "b", **f} for f in flows]}
    return apply_backends(expand(load_scenario(raw))[:1], ["udp"])[0].resolved.spec


def test_ecn_flows_pass_the_check_and_their_sender_asks_for_ecn() -> None:
    spec = _spec([{"flavor": "prague", "ecn": True}, {"flavor": "cubic", "ecn": True}, {"flavor": "cubic"}])
    for i, flow in enumerate(spec.flows):
        endpoint_flows.check_flow(f"flows[{i}]", flow)
    configs = [endpoint_flows.sender_config(spec, i, 0, Path("/nonexistent"), "10.0.0.1", "10.0.0.2")
               for i in range(3)]
    assert [c["ecn"] for c in configs] == [True, True, False]
    assert configs[0]["flavor"] == "prague"


def test_a_flavor_the_transport_lacks_is_still_refused() -> None:
    spec = _spec([{"flavor": "cubic", "ecn": True, "mss": "1460B"}])
    with pytest.raises(UserError, match="do not fit one UDP datagram"):
        endpoint_flows.check_flow("flows[0]", spec.flows[0])


def _results(ce_packets: int, ce_bytes: int) -> dict:
    send = {"samples": [{"time_s": 0.1, "sent_bytes": 10_000, "srtt_s": 0.041}],
            "at_end": {"bytes_sent": 10_000, "offered_bytes": 10_000},
            "drained": {"data_segs_out": 10, "total_retrans": 0, "fast_recoveries": 0, "spurious_rtos": 0,
                        "accecn_ce_bytes": ce_bytes}}
    recv = {"samples": [{"time_s": 0.1, "delivered_bytes": 10_000}], "at_end_bytes": 10_000,
            "drained": {"data_segs_in": 10}, "duplicate_bytes": 0,
            "ecn": {"feedback": "accecn", "not_ect_packets": 0, "ect1_packets": 10 - ce_packets,
                    "ect0_packets": 0, "ce_packets": ce_packets, "ce_bytes": ce_bytes}}
    return {"send": send, "recv": recv}


def test_the_flows_table_carries_the_sink_s_ce_counts() -> None:
    spec = _spec([{"flavor": "prague", "ecn": True}, {"flavor": "cubic"}])
    r0, r1 = _results(3, 4305), _results(0, 0)
    results = {(0, "send"): r0["send"], (0, "recv"): r0["recv"], (1, "send"): r1["send"], (1, "recv"): r1["recv"]}
    flows, _ = endpoint_flows.flow_rows(spec, results)
    table = measured_tables.frame(flows, measured_tables.FLOW_COLUMNS)
    cols = list(table.columns)
    # The simulator's order: right after rtt_samples.
    assert cols[cols.index("rtt_samples") + 1:cols.index("rtt_samples") + 3] == ["ce_packets", "ce_bytes"]
    assert table["ce_packets"].tolist() == [3, 0]
    assert table["ce_bytes"].tolist() == [4305, 0]


def test_kernel_tcp_rows_have_no_ce_counts() -> None:
    spec = _spec([{"flavor": "cubic", "ecn": True}])
    r = _results(0, 0)
    flows, _ = measured_tables.flow_rows(spec, {(0, "send"): r["send"], (0, "recv"): r["recv"]})
    table = measured_tables.frame(flows, measured_tables.FLOW_COLUMNS)
    assert math.isnan(table["ce_packets"].iloc[0]) and math.isnan(table["ce_bytes"].iloc[0])
