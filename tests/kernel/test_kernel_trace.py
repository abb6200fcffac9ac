"""A trace-driven link on the kernel backend (issue 15): the relay runs the same capacity trace as
the simulator (crates/link/src/trace.rs, from the run's start instant), so a flow that keeps the
link busy gets the same rate, second by second, through real sockets as in the simulation; and
tc shaping, which cannot follow a trace, is refused in one line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from kernelutil import requires_root, run_cli

pytestmark = requires_root

RATES_MBPS = [12, 6, 18, 9, 15, 6, 12, 3, 9, 12]
"""Per-second capacity of the test trace (multiples of 3 Mbit/s: whole 1500-byte opportunities
per second), varying by up to 4× from one second to the next."""

SCENARIO = """
name = "trace"
duration = "{duration}s"
[topology]
kind = "dumbbell"
pairs = 1
bottleneck = {{ rate = {{ trace = "steps.mahi", loop = false }}, delay = "10ms", queue = {{ limit = "100pkt" }} }}
access = {{ rate = "1Gbps", delay = "1ms" }}
[kernel]
emulation = "{emulation}"
[[flows]]
from = "left0"
to = "right0"
flavor = "udp-cbr"
rate = "25Mbps"
packet_size = "1472B"
[output]
sample_interval = "1s"
"""


def _opportunities_ms() -> list[int]:
    lines = []
    for k, mbps in enumerate(RATES_MBPS):
        n = mbps * 1_000_000 // 12_000
        lines += [1000 * k + j * 1000 // n for j in range(n)]
    return lines


def _capacity_mbps(k: int) -> float:
    """Payload Mbit/s the trace lets reach the receiver in second k + 1: the opportunities of the
    window shifted back by the path behind the bottleneck (10 ms, then 1 ms and a 1500-byte frame
    at 1 Gbit/s on the access link: 11.012 ms)."""
    n = sum(1 for t in _opportunities_ms() if 1000 * k - 11.012 < t <= 1000 * (k + 1) - 11.012)
    return n * 1472 * 8 / 1e6


def _write(tmp_path: Path, emulation: str = "auto") -> Path:
    (tmp_path / "steps.mahi").write_text("".join(f"{t}\n" for t in _opportunities_ms()))
    scenario = tmp_path / "trace.toml"
    scenario.write_text(SCENARIO.format(duration=len(RATES_MBPS), emulation=emulation))
    return scenario


def _per_second_mbps(out: Path, run: str) -> list[float]:
    """The CBR flow's goodput in each second 1 … N (payload Mbit/s)."""
    samples = pd.read_parquet(out / "runs" / run / "samples.parquet")
    mine = samples[samples["flow"] == 0]
    return [float(mine[(mine["time_s"] > k + 0.5) & (mine["time_s"] <= k + 1.5)]["goodput_bps"].mean()) / 1e6
            for k in range(len(RATES_MBPS))]


def test_the_relay_follows_the_trace_as_the_simulator_does(tag: str, tmp_path: Path) -> None:
    scenario = _write(tmp_path)
    out = tmp_path / "out"
    done = run_cli("run", str(scenario), "--backend", "sim,kernel", "--out", str(out), "-q", "--no-report",
                   cwd=tmp_path, timeout=180)
    assert done.returncode == 0, done.stderr
    sim, kernel = _per_second_mbps(out, "r0"), _per_second_mbps(out, "r0@kernel")
    for k in range(1, len(RATES_MBPS)):
        capacity = _capacity_mbps(k)
        print(f"second {k + 1}: capacity {capacity:.2f} Mbit/s of payload, simulator {sim[k]:.2f}, relay {kernel[k]:.2f}")
        # The simulator carries the trace's capacity (its own test pins this to one packet).
        assert abs(sim[k] / capacity - 1) < 0.01, (k, sim[k], capacity)
        # Through real sockets on a loaded machine: within 10% of the simulator each second.
        assert abs(kernel[k] / sim[k] - 1) < 0.10, (k, kernel[k], sim[k])
    # Over the whole run, within 3%.
    assert abs(sum(kernel[1:]) / sum(sim[1:]) - 1) < 0.03, (kernel, sim)


def test_tc_shaping_with_a_trace_is_refused_in_one_line(tag: str, tmp_path: Path) -> None:
    scenario = _write(tmp_path, emulation="tc")
    done = run_cli("run", str(scenario), "--backend", "kernel", "--out", str(tmp_path / "o"), "-q",
                   cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "a rate that follows a trace needs the relay's link emulation" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
