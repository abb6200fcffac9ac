"""UDT on real sockets, on a relay-emulated 50 Mbit/s, 40 ms RTT path, beside the simulator's UDT
(crates/cc/src/udt.rs, crates/transport/src/udt) on the same scenario: ccarena's own UDT (the
simulator's code driven over UDP sockets by crates/udp, ``udt_impl = "ccarena"``) and the
reference UDT4 (Debian's libudt through ``tools/udt-peer``, ``udt_impl = "libudt"``).

Measured first (6 s, 100-packet queue; this 2-core machine under a load average of ~7):

- simulator: 38.87 Mbit/s goodput, rate increase after 2 s 1.20 Mbit/s per second, RTT floor
  40.02 ms, 130 packets retransmitted (one loss episode, at the end of slow start);
- ccarena's UDT on udp, eight runs: 31.8–35.2 Mbit/s (0.82–0.90 of the simulator's), increase
  0.97–1.12 Mbit/s per second, RTT floor 40.19–40.25 ms, 130–157 packets retransmitted in the
  same single episode;
- libudt, sixteen runs: 22.9–29.7 Mbit/s in fifteen (median 25.9; 0.59–0.76 of the
  simulator's), increase 0.9–1.0 Mbit/s per second, smoothed-RTT floor 40.4–41.2 ms, 170–270
  packets retransmitted in the same single episode (1,618 in one run). In the sixteenth libudt fell
  into a retransmission storm (70,982 packets retransmitted, 3.1 Mbit/s delivered): libudt's own
  behaviour (docs/udp-backend.md), so a run is retried once, as the other kernel tests do.

The bands, and why (docs/udp-backend.md, "UDT flows"):

- **ccarena's UDT: goodput 0.78–1.02 of the simulator's, retransmissions 0.7–1.5 times.** The
  same code on real time: its payload is 1427 bytes, not 1456 (ccarena's header and UDT_DATA
  frame; −2 %), and it leaves slow start at the receiver's smoothed arrival speed, which real
  arrival jitter puts at 30–38 Mbit/s where the simulator has 38 (−3 to −16 % over 6 s). The band
  is the measured 0.82–0.90 widened by half that spread again each way.

- **libudt: goodput 0.55–0.85 of the simulator's.** Both leave slow start at their smoothed
  receive rate, but libudt's estimate is far lower when the first loss comes: it continues at
  22–23 Mbit/s, the simulator's UDT at 38 (34 after its first congestion period); why is not
  pinned down (UDT4's 7/8 smoothing from 16 packets/s, its median filter over bursty arrivals).
  After that both climb by the same DAIMD step, so the gap of ~13 Mbit/s persists over 6 s:
  (38.87 − 13)/38.87 = 0.67. The band is that −0.12/+0.18, beyond the spread of the runs
  (0.59–0.76).
- **Increase 0.6–1.6 Mbit/s per second, all three.** With 6–10 Mbit/s spare (the simulator's B − C;
  UDT4 caps the spare at B/9 ≈ 5.5 after a decrease: the same decade 10⁷ bit/s), the increase is
  10⁷·β/MSS = 0.01 packets per SYN (10 ms): 100 packets/s per second, 1.17–1.20 Mbit/s per
  second of payload. libudt's is a little lower (an increase only on an ACK arriving at least a
  SYN after the last one, with real timer jitter); the band is the theory ± ½.
- **RTT floor within 2 ms** (libudt's is its smoothed RTT's minimum; it exposes no per-ACK
  samples).
"""

from __future__ import annotations

import numpy as np
import pytest
from ccarena.backends import get_backend
from ccarena.errors import UserError
from kernelutil import requires_root

pytestmark = requires_root

DURATION_S = 6.0
PATH = {"kind": "single_link",
        "link": {"rate": "50Mbps", "delay": "20ms", "queue": {"limit": "100pkt"}}}
RAW = {"name": "udt-real", "duration": f"{DURATION_S:g}s", "topology": PATH,
       "flows": [{"from": "a", "to": "b", "flavor": "udt"}]}
GOODPUT_RATIO = {"ccarena": (0.78, 1.02), "libudt": (0.55, 0.85)}
RETRANSMITTED_RATIO = (0.7, 1.5)
"""ccarena's UDT's packets retransmitted over the simulator's (libudt's NAK handling differs)."""
INCREASE_MBPS_PER_S = (0.6, 1.6)


def _spec(raw: dict, backend: str):
    from ccarena.experiment import apply_backends, expand
    from ccarena.scenario import load_scenario

    return apply_backends(expand(load_scenario(raw))[:1], [backend])[0].resolved.spec


def _run(raw: dict, backend: str, udt_impl: str = "ccarena"):
    options = {"emulation": "relay", "udt_impl": udt_impl} if backend == "udp" else {}
    return get_backend(backend, options).run(_spec(raw, backend))


def _increase_mbps_per_s(samples) -> float:
    """The slope of the sending rate from 2 s on (after the slow-start episode), Mbit/s per s."""
    late = samples[(samples["flow"] == 0) & (samples["time_s"] >= 2.0)]
    return float(np.polyfit(late["time_s"].to_numpy(float),
                            late["pacing_rate_bps"].to_numpy(float), 1)[0]) / 1e6


@pytest.mark.parametrize("impl", ["ccarena", "libudt"])
def test_udt_on_real_sockets_beside_the_simulators_udt(tag: str, impl: str) -> None:
    sim = _run(RAW, "sim").tables
    sim_flow = sim["flows"].iloc[0]
    sim_goodput = float(sim_flow["bytes_delivered"]) * 8 / DURATION_S
    sim_increase = _increase_mbps_per_s(sim["samples"])
    assert INCREASE_MBPS_PER_S[0] <= sim_increase <= INCREASE_MBPS_PER_S[1], sim_increase

    def measure() -> list[str]:
        result = _run(RAW, "udp", impl)
        flow, samples = result.tables["flows"].iloc[0], result.tables["samples"]
        goodput = float(flow["bytes_delivered"]) * 8 / DURATION_S
        increase = _increase_mbps_per_s(samples)
        print(f"goodput sim {sim_goodput / 1e6:.2f}, {impl} {goodput / 1e6:.2f} Mbit/s "
              f"(ratio {goodput / sim_goodput:.2f}); increase sim {sim_increase:.2f}, {impl} "
              f"{increase:.2f} Mbit/s per s; RTT floor sim {sim_flow['rtt_min_s'] * 1e3:.2f}, {impl} "
              f"{flow['rtt_min_s'] * 1e3:.2f} ms; retransmitted sim {sim_flow['packets_retransmitted']}, "
              f"{impl} {flow['packets_retransmitted']}")
        # The simulator's tables, filled from UDT4's own counters.
        assert result.record["transport"]["implementation"] == [impl]
        assert flow["kind"] == "udt" and flow["flavor"] == "udt"
        assert np.allclose(samples["time_s"].to_numpy(), np.arange(1, 61) / 10)
        assert flow["packets_sent"] > 0 and flow["packets_received"] > 0
        assert flow["sender_cpu_s"] > 0 and flow["cpu_mhz"] > 0  # CPU per megabit (seed 001, Table 1)
        failures = []
        ratio = goodput / sim_goodput
        low, high = GOODPUT_RATIO[impl]
        if not low <= ratio <= high:
            failures.append(f"goodput ratio {ratio:.2f} outside {low}–{high}")
        retransmitted = float(flow["packets_retransmitted"]) / float(sim_flow["packets_retransmitted"])
        if impl == "ccarena" and not RETRANSMITTED_RATIO[0] <= retransmitted <= RETRANSMITTED_RATIO[1]:
            failures.append(f"retransmitted {retransmitted:.2f} × the simulator's")
        if not INCREASE_MBPS_PER_S[0] <= increase <= INCREASE_MBPS_PER_S[1]:
            failures.append(f"increase {increase:.2f} Mbit/s per s outside {INCREASE_MBPS_PER_S}")
        if abs(float(flow["rtt_min_s"]) - float(sim_flow["rtt_min_s"])) > 0.002:
            failures.append(f"RTT floor {flow['rtt_min_s']:.4f} vs simulated {sim_flow['rtt_min_s']:.4f} s")
        return failures

    failures = measure()
    if failures:
        print("retrying once:", failures)
        failures = measure()
    assert not failures, failures


SHARE_MARGIN = 0.15
"""UDT's share of the bytes delivered beside a CUBIC flow, udp − simulator. Measured (10 s, both
flows from 0): the simulator gives UDT 0.533; five runs of ccarena's UDT on udp 0.522, 0.507,
0.592, 0.576 and 0.434 (mean 0.526, sd 0.06): the margin is 2.5 sd. A starved UDT (libudt's
0.26–0.38 in three of four runs on this path, docs/udp-backend.md) or a UDT taking more than
two thirds fails it."""


def test_udt_beside_cubic_shares_the_path_as_the_simulator_predicts(tag: str) -> None:
    raw = dict(RAW, duration="10s", flows=[{"from": "a", "to": "b", "flavor": "udt"},
                                           {"from": "a", "to": "b", "flavor": "cubic"}])

    def share(tables) -> float:
        delivered = tables["flows"]["bytes_delivered"].to_numpy(dtype=float)
        return float(delivered[0] / delivered.sum())

    predicted = share(_run(raw, "sim").tables)

    def measure() -> list[str]:
        tables = _run(raw, "udp").tables
        measured = share(tables)
        total = float(tables["flows"]["bytes_delivered"].sum()) * 8 / 10.0
        print(f"UDT's share beside CUBIC: simulated {predicted:.3f}, udp {measured:.3f} "
              f"(together {total / 1e6:.1f} Mbit/s)")
        failures = []
        if abs(measured - predicted) > SHARE_MARGIN:
            failures.append(f"UDT's share {measured:.3f} vs simulated {predicted:.3f}")
        if total < 0.85 * 50e6:
            failures.append(f"the two flows used {total / 1e6:.1f} of 50 Mbit/s")
        return failures

    failures = measure()
    if failures:
        print("retrying once:", failures)
        failures = measure()
    assert not failures, failures


@pytest.mark.parametrize(("backend", "flow", "message"), [
    ("kernel", {}, "udt flows are not available on the kernel backend"),
    ("udp:libudt", {"params": {"beta": 3e-6}}, "params.beta: libudt runs UDT4's own rate control"),
    ("udp:ccarena", {"rwnd": "1MB"}, "rwnd: ccarena's UDT on the udp backend runs with UDT4's default"),
])
def test_what_cannot_run_is_refused_in_one_line(tag: str, backend: str, flow: dict, message: str) -> None:
    raw = dict(RAW, flows=[{"from": "a", "to": "b", "flavor": "udt", **flow}])
    name, _, impl = backend.partition(":")
    with pytest.raises(UserError, match=message) as err:
        get_backend(name, {"udt_impl": impl} if impl else {}).check(_spec(raw, name))
    assert "\n" not in str(err.value)


def test_a_machine_without_libudt_is_told_what_to_install(tag: str, monkeypatch, tmp_path) -> None:
    from ccarena.backends.udp import libudt

    monkeypatch.setattr(libudt, "HEADER", tmp_path / "absent" / "udt.h")
    with pytest.raises(UserError, match=r"libudt-dev is not installed \(apt-get install libudt-dev\)") as err:
        get_backend("udp", {"udt_impl": "libudt"}).check(_spec(RAW, "udp"))
    assert "\n" not in str(err.value)
