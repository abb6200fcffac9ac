"""The kernel backend measures what the scenario configured: rate, RTT floor, random loss."""

from __future__ import annotations

import numpy as np

from ccarena.kernel.backend import run_kernel

from kernelutil import requires_root, spec_of

pytestmark = requires_root


def test_single_cubic_flow_fills_the_link_and_sees_the_configured_rtt(tag: str) -> None:
    raw = {"name": "one-cubic", "duration": "10s",
           "topology": {"kind": "single_link",
                        "link": {"rate": "10Mbps", "delay": "20ms", "queue": {"limit": "100pkt"}}},
           "flows": [{"from": "a", "to": "b", "flavor": "cubic"}]}
    spec, derived = spec_of(raw)
    emulation: dict = {}
    tables = run_kernel(spec, emulation=emulation)
    flows, samples = tables["flows"], tables["samples"]
    rate_bps = 10e6
    steady = samples[(samples["time_s"] > 2.0)]
    goodput_bps = float(steady["goodput_bps"].mean())
    mean_bps = float(flows["bytes_delivered"].iloc[0]) * 8 / 10.0
    base_rtt_s = derived["flows"][0]["base_rtt_s"]
    rtt_min_s = float(flows["rtt_min_s"].iloc[0])
    print(f"cubic goodput after 2 s: {goodput_bps / rate_bps:.1%} of the rate; over the whole run "
          f"{mean_bps / rate_bps:.1%}; RTT floor {rtt_min_s * 1e3:.2f} ms vs configured "
          f"{base_rtt_s * 1e3:.2f} ms; relay lateness {emulation['lateness_ns']}")
    assert 0.90 * rate_bps <= goodput_bps <= 1.00 * rate_bps
    assert 0.85 * rate_bps <= mean_bps <= 1.00 * rate_bps
    assert abs(rtt_min_s - base_rtt_s) <= 0.002
    assert emulation["mechanisms"]["delay"] in ("relay", "netem")
    if emulation["mechanisms"]["delay"] == "relay":
        lateness = emulation["lateness_ns"]["a->b a_to_b"]
        assert lateness["p50"] < 1_000_000  # the relay's median error is below 1 ms
    # The samples are the simulator's: one row per 100 ms from 0.1 s to 10 s.
    assert np.allclose(samples["time_s"].to_numpy(), np.arange(1, 101) / 10)
    assert samples["cwnd_bytes"].notna().all() and samples["srtt_s"].notna().all()


def test_one_percent_random_loss_is_measured_within_0_8_to_1_2_percent(tag: str) -> None:
    # 8 Mbit/s of 200-byte datagrams for 10 s: 50,000 packets through a 20 Mbit/s link.
    raw = {"name": "loss", "duration": "10s",
           "topology": {"kind": "single_link",
                        "link": {"rate": "20Mbps", "delay": "0ms", "loss": "1%",
                                 "queue": {"limit": "1000pkt"}}},
           "flows": [{"from": "a", "to": "b", "flavor": "udp-cbr", "rate": "8Mbps",
                      "packet_size": "200B"}]}
    spec, _ = spec_of(raw)
    tables = run_kernel(spec)
    flow = tables["flows"].iloc[0]
    link = tables["links"].iloc[0]
    sent, lost = int(flow["packets_sent"]), int(flow["packets_lost"])
    print(f"loss configured 1%: measured {lost / sent:.3%} over {sent} packets; "
          f"the rule dropped {int(link['packets_lost_wire'])}; queue drops {int(link['packets_dropped_queue'])}")
    assert sent >= 10_000
    assert 0.008 <= lost / sent <= 0.012
    assert int(link["packets_dropped_queue"]) == 0
    assert int(link["packets_lost_wire"]) == lost  # every missing datagram is one the rule dropped
