"""``--backend udp``: ccarena's transport on real UDP sockets between the kernel backend's
namespaces, over its relay-emulated links, agrees with the simulator.

- One CUBIC flow on a 20 Mbit/s, 40 ms RTT path: goodput within 5 % and RTT floor within 2 ms of
  the simulator's.
- CUBIC and Reno sharing that path: CUBIC's share of the delivered bytes within the range the
  simulator itself predicts when the second flow starts 0 to 95 ms later (an offset the scenario
  cannot see, which moves the simulator's share by ±0.1), widened by ``SHARE_MARGIN``.
- A flavor the kernel lacks (Vegas, a finite transfer) runs and completes on udp, and the kernel
  backend refuses it.
- What the transport cannot do is refused in one line before anything starts.
- Prague (ECT(1), Accurate ECN) through the relay's DualPI2: ECT(1) on the wire, CE marks read
  by the sink and fed back, the L4S queue's delay about a millisecond, as in its simulated twin.
- A QUIC CUBIC flow (``transport = "quic"``) alone fills the path and matches its simulated twin;
  when a TCP CUBIC flow joins, the two share the path as the simulator predicts.

Real time on a shared 2-core machine: a measurement that misses is retried once, as the other
kernel tests do. The ``tag`` fixture checks that no namespace or process is left behind.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ccarena.backends import get_backend
from ccarena.errors import UserError
from kernelutil import requires_root

pytestmark = requires_root

PATH = {"kind": "single_link",
        "link": {"rate": "20Mbps", "delay": "20ms", "queue": {"limit": "100pkt"}}}
RATE_BPS = 20e6
SHARE_MARGIN = 0.10
"""Beyond the simulator's own range of shares: what real timing adds. Measured (8 s runs, queue
50 packets): the simulator's CUBIC share over 20 start offsets (0–95 ms) 0.692–0.876 (mean 0.746,
sd 0.049); seven udp runs 0.598, 0.610, 0.695, 0.697, 0.705, 0.721, 0.746 (mean 0.68, sd 0.05).
Two udp runs in seven land just below the simulator's range, within 0.1 of it (2 sd of the udp
spread); with this margin and the retry a miss is rare, while a fair split (0.5) or a starved
Reno (> 0.98) still fails."""


def _spec(raw: dict, backend: str):
    from ccarena.experiment import apply_backends, expand
    from ccarena.scenario import load_scenario

    plan = apply_backends(expand(load_scenario(raw))[:1], [backend])[0]
    return plan.resolved.spec, plan.resolved.derived


def _run(raw: dict, backend: str) -> dict:
    spec, _ = _spec(raw, backend)
    options = {"emulation": "relay"} if backend == "udp" else {}
    return get_backend(backend, options).run(spec).tables


def _twice(measure) -> None:
    """Run ``measure()`` (returns a list of failures); once more if it failed."""
    failures = measure()
    if failures:
        print("retrying once:", failures)
        failures = measure()
    assert not failures, failures


def test_a_single_cubic_flow_agrees_with_the_simulator(tag: str) -> None:
    raw = {"name": "one-cubic", "duration": "6s", "topology": PATH,
           "flows": [{"from": "a", "to": "b", "flavor": "cubic"}]}
    sim = _run(raw, "sim")["flows"].iloc[0]
    sim_goodput = float(sim["bytes_delivered"]) * 8 / 6.0
    sim_rtt = float(sim["rtt_min_s"])

    def measure() -> list[str]:
        tables = _run(raw, "udp")
        flow, samples = tables["flows"].iloc[0], tables["samples"]
        goodput = float(flow["bytes_delivered"]) * 8 / 6.0
        rtt = float(flow["rtt_min_s"])
        print(f"goodput sim {sim_goodput / 1e6:.2f} Mbit/s, udp {goodput / 1e6:.2f} Mbit/s "
              f"({goodput / sim_goodput - 1:+.1%}); RTT floor sim {sim_rtt * 1e3:.2f} ms, "
              f"udp {rtt * 1e3:.2f} ms")
        # The tables are the simulator's: one row per 100 ms, the transport's state in each.
        assert np.allclose(samples["time_s"].to_numpy(), np.arange(1, 61) / 10)
        assert samples["cwnd_bytes"].notna().all() and samples["srtt_s"].notna().all()
        assert flow["flavor"] == "cubic" and flow["packets_sent"] > 0
        # The sender's CPU cost, measured as for a kernel TCP sender (docs/metrics.md).
        assert flow["sender_cpu_s"] > 0 and abs(flow["sender_wall_s"] - 6.0) < 0.5
        failures = []
        if abs(goodput / sim_goodput - 1) > 0.05:
            failures.append(f"goodput {goodput:.0f} vs simulated {sim_goodput:.0f} bit/s")
        if abs(rtt - sim_rtt) > 0.002:
            failures.append(f"RTT floor {rtt:.4f} vs simulated {sim_rtt:.4f} s")
        return failures

    _twice(measure)


def _share(tables: dict) -> float:
    delivered = tables["flows"]["bytes_delivered"].to_numpy(dtype=float)
    return float(delivered[0] / delivered.sum())


def test_cubic_and_reno_share_the_path_as_the_simulator_predicts(tag: str) -> None:
    path = {"kind": "single_link",
            "link": {"rate": "20Mbps", "delay": "20ms", "queue": {"limit": "50pkt"}}}

    def raw(offset_ms: int) -> dict:
        return {"name": "share", "duration": "8s", "topology": path,
                "flows": [{"from": "a", "to": "b", "flavor": "cubic"},
                          {"from": "a", "to": "b", "flavor": "reno", "start": f"{offset_ms}ms"}]}

    predicted = np.array([_share(_run(raw(ms), "sim")) for ms in range(0, 100, 5)])
    low, high = predicted.min() - SHARE_MARGIN, predicted.max() + SHARE_MARGIN
    # The prediction is CUBIC's advantage over Reno (RFC 9438 §4.3: CUBIC is more aggressive
    # than Reno on a path of this BDP), not an even split.
    assert low > 0.55

    def measure() -> list[str]:
        tables = _run(raw(0), "udp")
        share = _share(tables)
        print(f"CUBIC's share: simulated {predicted.min():.3f}–{predicted.max():.3f} "
              f"(mean {predicted.mean():.3f}), udp {share:.3f}")
        assert (tables["flows"]["bytes_delivered"] > 0).all()
        return [] if low <= share <= high else [f"share {share:.3f} outside [{low:.3f}, {high:.3f}]"]

    _twice(measure)


def test_a_flavor_the_kernel_lacks_runs_on_udp(tag: str) -> None:
    raw = {"name": "vegas", "duration": "3s", "topology": PATH,
           "flows": [{"from": "a", "to": "b", "flavor": "vegas", "bytes": "2MB"}]}
    spec, _ = _spec(raw, "kernel")
    with pytest.raises(UserError, match="vegas"):
        get_backend("kernel", {"emulation": "relay"}).check(spec)
    flow = _run(raw, "udp")["flows"].iloc[0]
    print(f"vegas: 2 MB in {flow['completion_time_s']:.3f} s, RTT floor {flow['rtt_min_s'] * 1e3:.2f} ms")
    assert flow["flavor"] == "vegas"
    assert int(flow["bytes_delivered"]) == 2_000_000
    # 2 MB at 20 Mbit/s is 0.8 s of link time; slow start from 10 packets adds about 6 RTTs.
    assert 0.8 < float(flow["completion_time_s"]) < 2.5
    # Vegas keeps the queue short: its RTT floor is the path's.
    assert abs(float(flow["rtt_min_s"]) - 0.0406) < 0.002


@pytest.mark.parametrize("flow, message", [
    # UDT flows run ccarena's UDT (tests/kernel/test_udt_real.py) with UDT4's default flow window.
    ({"flavor": "udt", "rwnd": "1MB"}, "rwnd: ccarena's UDT on the udp backend runs with UDT4's"),
    ({"flavor": "cubic", "mss": "1460B"}, "do not fit one UDP datagram"),
])
def test_what_the_transport_cannot_do_is_refused_in_one_line(tag: str, flow: dict, message: str) -> None:
    raw = {"name": "bad", "duration": "1s", "topology": PATH,
           "flows": [{"from": "a", "to": "b", **flow}]}
    spec, _ = _spec(raw, "udp")
    with pytest.raises(UserError, match=message) as err:
        get_backend("udp", {"emulation": "relay"}).check(spec)
    assert "\n" not in str(err.value)


def test_the_report_puts_sim_and_udp_side_by_side(tag: str, tmp_path) -> None:
    from ccarena.executor import run_experiment
    from ccarena.results import Result
    from ccarena.scenario import load_scenario

    raw = {"name": "side-by-side-udp", "duration": "2s", "topology": PATH,
           "kernel": {"emulation": "relay"},  # [kernel] options apply to the udp backend too
           "flows": [{"from": "a", "to": "b", "flavor": "reno"}]}
    out = tmp_path / "out"
    outcome = run_experiment(load_scenario(raw), out, jobs=1, backends=["sim", "udp"])
    outcome.raise_for_failures()
    page = Path(Result(out, outcome).report()).read_text()
    assert 'id="side-by-side-udp"' in page and "udp − sim" in page
    assert 'id="side-by-side"' not in page  # no kernel run: no kernel section


def test_prague_through_the_relays_dualpi2_gets_its_marks_fed_back(tag: str) -> None:
    # One Prague flow alone in DualPI2's L4S queue (RFC 9332: ECT(1) packets, step-marked above
    # 1 ms of sojourn): it only keeps that queue short if the marks reach it, read from the IP
    # header at the sink and fed back in AccECN's counters; without them it would fill the
    # queue to its limit (200 packets, 120 ms at 20 Mbit/s) and the RTT would show it.
    path = {"kind": "single_link",
            "link": {"rate": "20Mbps", "delay": "20ms", "queue": {"discipline": "dualpi2", "limit": "200pkt"}}}
    raw = {"name": "prague-dualpi2", "duration": "4s", "topology": path,
           "flows": [{"from": "a", "to": "b", "flavor": "prague", "ecn": True}]}
    sim = _run(raw, "sim")["flows"].iloc[0]
    assert sim["ce_packets"] > 0

    def measure() -> list[str]:
        flow = _run(raw, "udp")["flows"].iloc[0]
        queueing = float(flow["rtt_p95_s"]) - float(flow["rtt_min_s"])
        sim_queueing = float(sim["rtt_p95_s"]) - float(sim["rtt_min_s"])
        goodput = float(flow["bytes_delivered"]) * 8 / 4.0
        sim_goodput = float(sim["bytes_delivered"]) * 8 / 4.0
        print(f"prague: CE {int(flow['ce_packets'])} packets / {int(flow['ce_bytes'])} bytes "
              f"(sim {int(sim['ce_packets'])}), RTT p95 − floor {queueing * 1e3:.2f} ms "
              f"(sim {sim_queueing * 1e3:.2f} ms), goodput {goodput / 1e6:.2f} Mbit/s "
              f"(sim {sim_goodput / 1e6:.2f})")
        failures = []
        if not (flow["ce_packets"] > 0 and flow["ce_bytes"] > 0):
            failures.append("no CE mark reached the sink")
        # The srtt samples (every 100 ms) of a flow whose marks came back: the L4S queue's
        # millisecond plus real timing's jitter, far below the 120 ms a deaf flow would build.
        if queueing > 0.010:
            failures.append(f"RTT p95 {queueing * 1e3:.1f} ms above the floor")
        # Prague under a 1 ms step at this BDP (100 packets) leaves the link partly idle, in the
        # simulator as here (measured: sim 12.2, udp 11.8–12.1 Mbit/s of 20).
        if abs(goodput / sim_goodput - 1) > 0.15:
            failures.append(f"goodput {goodput / 1e6:.2f} vs simulated {sim_goodput / 1e6:.2f} Mbit/s")
        return failures

    _twice(measure)


def test_a_quic_flow_fills_the_path_and_shares_it_with_tcp_as_the_simulator_predicts(tag: str) -> None:
    # QUIC (transport = "quic": the simulator's RFC 9002 sender and RFC 9000 receiver, in the
    # wire's QUIC_DATA and QUIC_ACK frames) with CUBIC alone for 3 s, then a TCP CUBIC flow
    # joins. Alone it must fill the path (≥ 85 % of 20 Mbit/s over 1–3 s) and match its
    # simulated twin (delivered bytes by 3 s within 5 %, RTT floor within 2 ms: the single
    # flow's bands); shared, the link stays full and QUIC's share of 3–6 s stays within
    # SHARE_MARGIN of the range the simulator gives when TCP joins 0 to 95 ms later (measured:
    # sim 0.69–0.80; udp 0.71, 0.80, 0.82). One 6 s run (9 s with set-up; a retry doubles it).
    def raw(offset_ms: int) -> dict:
        return {"name": "quic-then-tcp", "duration": "6s", "topology": PATH,
                "flows": [{"from": "a", "to": "b", "flavor": "cubic", "transport": "quic"},
                          {"from": "a", "to": "b", "flavor": "cubic", "start": f"{3000 + offset_ms}ms"}]}

    def phases(tables: dict) -> tuple[float, float, float, float]:
        s = tables["samples"]
        at = {(int(r.flow), round(r.time_s * 10)): float(r.delivered_bytes) for r in s.itertuples()}
        alone_bps = (at[(0, 30)] - at[(0, 10)]) * 8 / 2.0
        quic_shared, tcp_shared = at[(0, 60)] - at[(0, 30)], at[(1, 60)]
        return at[(0, 30)], alone_bps, quic_shared / (quic_shared + tcp_shared), \
            (quic_shared + tcp_shared) * 8 / 3.0

    sim_tables = _run(raw(0), "sim")
    sim_by3, sim_alone, _, _ = phases(sim_tables)
    sim_rtt = float(sim_tables["flows"].iloc[0]["rtt_min_s"])
    assert sim_alone >= 0.85 * RATE_BPS
    predicted = np.array([phases(_run(raw(ms), "sim"))[2] for ms in range(0, 100, 5)])
    low, high = predicted.min() - SHARE_MARGIN, predicted.max() + SHARE_MARGIN

    def measure() -> list[str]:
        tables = _run(raw(0), "udp")
        flows = tables["flows"]
        quic = flows.iloc[0]
        assert (quic["kind"], quic["recovery"], flows.iloc[1]["kind"]) == ("quic", "rfc9002", "tcp")
        by3, alone, share, shared_bps = phases(tables)
        rtt = float(quic["rtt_min_s"])
        print(f"QUIC alone {alone / 1e6:.2f} Mbit/s (sim {sim_alone / 1e6:.2f}); by 3 s {by3 / 1e6:.3f} MB "
              f"(sim {sim_by3 / 1e6:.3f}, {by3 / sim_by3 - 1:+.1%}); RTT floor {rtt * 1e3:.2f} ms "
              f"(sim {sim_rtt * 1e3:.2f}); shared: QUIC's share {share:.3f} "
              f"(sim {predicted.min():.3f}–{predicted.max():.3f}), "
              f"link {shared_bps / 1e6:.2f} Mbit/s; PTOs {quic['rto_count']}")
        failures = []
        if alone < 0.85 * RATE_BPS:
            failures.append(f"QUIC alone {alone / 1e6:.2f} Mbit/s < 85 % of the path")
        if abs(by3 / sim_by3 - 1) > 0.05:
            failures.append(f"QUIC by 3 s {by3:.0f} vs simulated {sim_by3:.0f} bytes")
        if abs(rtt - sim_rtt) > 0.002:
            failures.append(f"RTT floor {rtt:.4f} vs simulated {sim_rtt:.4f} s")
        if shared_bps < 0.85 * RATE_BPS:
            failures.append(f"shared link {shared_bps / 1e6:.2f} Mbit/s < 85 %")
        if not low <= share <= high:
            failures.append(f"QUIC's share {share:.3f} outside [{low:.3f}, {high:.3f}]")
        return failures

    _twice(measure)
