"""Benchmark of ``ccarena calibrate --quick``'s wall time on this machine (issue 19: the quick
suite runs in under 3 minutes on 2 cores, every cell on both backends). Needs root (the kernel
backend)::

    sudo python3 benches/calibrate_quick.py               # 1 run
    sudo python3 benches/calibrate_quick.py --repeats 3

Each run is the command as a user types it (``ccarena calibrate --quick -q --no-report`` in a
fresh directory). Printed per run: wall seconds, CPU seconds of the command and its children, the
share of the CPU the hypervisor stole meanwhile (a kernel cell waits in real time, so a stolen CPU
stretches the wall time), and the number of cells; then the minimum and median against the
180 s target. The calibration's figures themselves are judged by tests/kernel/test_calibrate.py.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from ccarena.backends.kernel.testbed import cpu_times, steal_fraction

TARGET_S = 180.0
"""The quick suite's wall-time target (issue 19), seconds."""


def children_cpu_s() -> float:
    """User + system CPU seconds of this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(out: Path) -> tuple[float, float, float, int]:
    """One ``calibrate --quick`` into ``out``: (wall s, CPU s, steal share, cells). Raises
    ``SystemExit`` with the command's error output when it fails."""
    before_cpu, before_stat, started = children_cpu_s(), cpu_times(), time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ccarena", "calibrate", "--quick", "--out", str(out),
                           "-q", "--no-report"], capture_output=True, text=True, cwd=out.parent)
    wall_s = time.monotonic() - started
    steal = steal_fraction(before_stat, cpu_times())
    if proc.returncode != 0:
        raise SystemExit(f"calibrate --quick failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    cells = len(pd.read_parquet(out / "calibration.parquet"))
    return wall_s, children_cpu_s() - before_cpu, steal, cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="runs of the suite (default 1)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root: the quick suite runs its cells on the kernel backend too")
    walls = []
    with tempfile.TemporaryDirectory(prefix="bench-calibrate-") as tmp:
        for i in range(max(1, args.repeats)):
            wall_s, cpu_s, steal, cells = run_once(Path(tmp) / f"quick-{i}")
            walls.append(wall_s)
            print(f"run {i}: {wall_s:.0f} s wall, {cpu_s:.0f} s CPU, steal {100 * steal:.1f}%, "
                  f"{cells} cells", flush=True)
    print(f"calibrate --quick: min {min(walls):.0f} s, median {statistics.median(walls):.0f} s "
          f"(target < {TARGET_S:.0f} s)")


if __name__ == "__main__":
    main()
