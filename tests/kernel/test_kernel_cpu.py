"""The kernel backend measures each sender's CPU cost (seed 001, Table 1): a saturating CUBIC flow
has CPU seconds and a finite MHz per Mbps, and a flow moving 20× the bytes costs more CPU."""

from __future__ import annotations

import math
import os

from ccarena.analysis import metrics
from ccarena.backends.kernel.backend import run_kernel
from kernelutil import requires_root, spec_of

pytestmark = requires_root

DURATION_S = 3.0


def _cubic_flow_at(rate: str) -> dict:
    raw = {"name": "cpu", "duration": f"{DURATION_S:g}s",
           "topology": {"kind": "single_link",
                        "link": {"rate": rate, "delay": "5ms", "queue": {"limit": "200pkt"}}},
           "flows": [{"from": "a", "to": "b", "flavor": "cubic"}]}
    spec, derived = spec_of(raw)
    emulation: dict = {}
    tables = run_kernel(spec, emulation=emulation)
    flows = metrics.flow_table(tables["flows"], tables["samples"], derived, DURATION_S, 0.1)
    machine = emulation["machine_cpu_s"]  # the whole machine's, in the run record
    assert all(s >= 0 for s in machine.values()), machine
    # Every CPU's time falls in some kind: the kinds add up to the run's wall time on each CPU
    # (tick-sampled, and a VM's stolen ticks may go missing: hence the wide band).
    total_s = sum(machine.values())
    cpus = os.cpu_count() or 1
    assert 0.5 * DURATION_S * cpus < total_s < 1.5 * DURATION_S * cpus + 1, machine
    return {**flows.iloc[0].to_dict(), "machine_softirq_s": machine["softirq_s"],
            "machine_kernel_s": machine["system_s"] + machine["softirq_s"]}


def test_a_saturating_flows_cpu_cost_grows_with_its_rate(tag: str) -> None:
    slow, fast = _cubic_flow_at("10Mbps"), _cubic_flow_at("200Mbps")
    for name, f in (("10 Mbit/s", slow), ("200 Mbit/s", fast)):
        print(f"{name}: goodput {f['goodput_mean_bps'] / 1e6:.1f} Mbit/s, sender CPU "
              f"{f['sender_cpu_s']:.3f} s over {f['sender_wall_s']:.2f} s ({f['cpu_percent']:.2f} %), "
              f"{f['cpu_mhz']:.0f} MHz, {f['mhz_per_mbps']:.3f} MHz/Mbps; machine-wide softirq "
              f"{f['machine_softirq_s']:.2f} s")
        assert f["sender_cpu_s"] > 0
        # The sending interval is the whole run (the flow never stops early).
        assert abs(f["sender_wall_s"] - DURATION_S) < 0.2
        assert math.isfinite(f["mhz_per_mbps"]) and f["mhz_per_mbps"] > 0
        assert f["cpu_percent"] == f["sender_cpu_s"] / f["sender_wall_s"] * 100
    assert fast["goodput_mean_bps"] > 10 * slow["goodput_mean_bps"]
    # The kernel's time is tick-sampled machine-wide: a 10 Mbit/s flow may land on no tick in 3 s
    # (CI saw 0.0 once), but 200 Mbit/s through the stack for 3 s cannot.
    assert fast["machine_kernel_s"] > 0
    # Measured on the project's 2-core VMs: 0.015 s vs 0.083 s (5.5×) over 4 s; copying 20× the
    # bytes into the socket must cost at least twice the CPU.
    assert fast["sender_cpu_s"] > 2 * slow["sender_cpu_s"]
