"""The kernel backend measures what the scenario configured — rate, RTT floor, queue limit, random
loss — with either link emulation (:mod:`ccarena.backends.kernel.emulation_choice`): ccarena's link relay, or the
kernel's qdiscs (htb, with the relay for the delay where the kernel has no netem)."""

from __future__ import annotations

import numpy as np
import pytest
from ccarena.backends.kernel.backend import run_kernel
from kernelutil import requires_root, spec_of

pytestmark = requires_root

MODES = ("relay", "tc")


@pytest.mark.parametrize("mode", MODES)
def test_single_cubic_flow_fills_the_link_and_sees_the_configured_rtt(tag: str, mode: str) -> None:
    raw = {"name": "one-cubic", "duration": "10s",
           "topology": {"kind": "single_link",
                        "link": {"rate": "10Mbps", "delay": "20ms", "queue": {"limit": "100pkt"}}},
           "flows": [{"from": "a", "to": "b", "flavor": "cubic"}]}
    spec, derived = spec_of(raw)
    emulation: dict = {}
    tables = run_kernel(spec, mode=mode, emulation=emulation)
    flows, samples, queues = tables["flows"], tables["samples"], tables["queues"]
    rate_bps = 10e6
    steady = samples[(samples["time_s"] > 2.0)]
    goodput_bps = float(steady["goodput_bps"].mean())
    mean_bps = float(flows["bytes_delivered"].iloc[0]) * 8 / 10.0
    base_rtt_s = derived["flows"][0]["base_rtt_s"]
    rtt_min_s = float(flows["rtt_min_s"].iloc[0])
    forward = queues[queues["link"] == 0]
    print(f"{mode}: cubic goodput after 2 s: {goodput_bps / rate_bps:.1%} of the rate; over the whole "
          f"run {mean_bps / rate_bps:.1%}; RTT floor {rtt_min_s * 1e3:.2f} ms vs configured "
          f"{base_rtt_s * 1e3:.2f} ms; queue max {int(forward['backlog_packets'].max())} packets, "
          f"{int(forward['drops'].max())} drops; relay lateness {emulation['lateness_ns']}")
    assert emulation["mechanisms"]["mode"] == mode
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
    # CUBIC fills the 100-packet queue (a BDP is 34 packets) and never past the limit.
    assert 90 <= forward["backlog_packets"].max() <= 100
    assert forward["drops"].iloc[-1] > 0
    assert (forward["arrivals"] == forward["departures"] + forward["drops"] + forward["backlog_packets"]).all()
    if mode == "relay":
        # The relay times every packet's wait: with B packets ahead a packet waits B·1.2 ms, so
        # over the run the mean wait follows the mean backlog.
        busy = forward[forward["sojourn_mean_s"].notna()]
        assert len(busy) >= 90
        ratio = busy["sojourn_mean_s"].mean() / (busy["backlog_packets"].mean() * 1500 * 8 / rate_bps)
        assert 0.8 <= ratio <= 1.25, ratio


@pytest.mark.parametrize("mode", MODES)
def test_one_percent_random_loss_is_measured_within_0_8_to_1_2_percent(tag: str, mode: str) -> None:
    # 8 Mbit/s of 200-byte datagrams for 10 s: 50,000 packets through a 20 Mbit/s link.
    raw = {"name": "loss", "duration": "10s",
           "topology": {"kind": "single_link",
                        "link": {"rate": "20Mbps", "delay": "0ms", "loss": "1%",
                                 "queue": {"limit": "1000pkt"}}},
           "flows": [{"from": "a", "to": "b", "flavor": "udp-cbr", "rate": "8Mbps",
                      "packet_size": "200B"}]}
    spec, _ = spec_of(raw)
    emulation: dict = {}
    tables = run_kernel(spec, mode=mode, emulation=emulation)
    flow = tables["flows"].iloc[0]
    link = tables["links"].iloc[0]
    sent, lost = int(flow["packets_sent"]), int(flow["packets_lost"])
    relay = emulation.get("relay") or {}
    overflow = sum(p[d]["dropped_overflow"] for p in relay.get("pipes", []) for d in ("a_to_b", "b_to_a"))
    print(f"{mode}: loss configured 1%: measured {lost / sent:.3%} over {sent} packets; the "
          f"{emulation['mechanisms']['loss']} dropped {int(link['packets_lost_wire'])}; queue drops "
          f"{int(link['packets_dropped_queue'])}; lost inside the relay {overflow}")
    assert emulation["mechanisms"]["loss"] == ("relay" if mode == "relay" else "nft")
    assert sent >= 10_000
    assert 0.008 <= lost / sent <= 0.012
    assert int(link["packets_dropped_queue"]) == 0
    assert int(link["packets_lost_wire"]) == lost  # every missing datagram is one the link lost


def test_scheduled_link_changes_apply_on_time_like_the_simulators(tag: str) -> None:
    # 20 Mbit/s, 20 ms each way, 100 packets; at 3 s the rate drops to 5 Mbit/s, at 6 s the
    # queue to 20 packets. The same spec through the simulator for comparison.
    from ccarena.backends.sim import run_spec

    raw = {"name": "events", "duration": "10s",
           "topology": {"kind": "single_link",
                        "link": {"rate": "20Mbps", "delay": "20ms", "queue": {"limit": "100pkt"}}},
           "flows": [{"from": "a", "to": "b", "flavor": "cubic"}],
           "events": [{"at": "3s", "link": "link", "set": {"rate": "5Mbps"}},
                      {"at": "6s", "link": "link", "set": {"limit": "20pkt"}}]}
    spec, _ = spec_of(raw)
    emulation: dict = {}
    kernel = run_kernel(spec, mode="relay", emulation=emulation)
    sim = run_spec(spec)

    def goodput(tables: dict, lo: float, hi: float) -> float:
        s = tables["samples"]
        return float(s[(s["time_s"] > lo) & (s["time_s"] <= hi)]["goodput_bps"].mean())

    def backlog_max(tables: dict, lo: float, hi: float) -> float:
        q = tables["queues"]
        q = q[(q["link"] == 0) & (q["time_s"] > lo) & (q["time_s"] <= hi)]
        return float(q["backlog_packets"].max())

    # Windows where both have settled (slow start's recovery, and the losses when the queue
    # shrinks, deliver in bursts). Goodput counts payload, 1448 of every 1500 bytes; a 100 ms
    # sample holds whole packets, hence the 3 % above the rate. The recovery after the queue
    # shrinks from 100 to 20 packets at 6 s lasts until ~8.5 s in the simulator with Linux's
    # recovery profile (~8.1 s with PRR alone); Linux settles sooner (a known departure, noted
    # on issue 19), so the last window starts at 8.6 s.
    payload = 1448 / 1500
    for lo, hi, rate in [(2.0, 3.0, 20e6), (4.0, 6.0, 5e6), (8.6, 9.6, 5e6)]:
        k, s = goodput(kernel, lo, hi), goodput(sim, lo, hi)
        print(f"({lo}, {hi}] s: kernel {k / 1e6:.2f} Mbit/s, sim {s / 1e6:.2f} Mbit/s, link {rate / 1e6:.0f}")
        assert 0.8 * rate * payload <= k <= rate * payload * 1.03
        assert abs(k - s) <= 0.15 * s
    # CUBIC kept the 100-packet queue busy at 5 Mbit/s; from 6 s it never holds more than 20.
    assert backlog_max(kernel, 4.0, 6.0) > 20
    assert backlog_max(kernel, 6.2, 9.6) <= 20
    link = kernel["links"].iloc[0]
    print(f"utilization {float(link['utilization']):.3f} (sim {float(sim['links'].iloc[0]['utilization']):.3f})")
    assert float(link["utilization"]) > 0.85  # busy time, right across the rate change
    lateness = emulation["lateness_ns"]["a->b a_to_b"]
    assert lateness["p50"] < 1_000_000
