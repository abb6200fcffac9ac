"""ccarena's engine beside ns-3 3.44 on the four dumbbell cells of issue 35's grid, side by side on
this machine: 1 NewReno flow at 10 Mbit/s, 10 and 100 NewReno flows at 100 Mbit/s, 2 CUBIC flows at
10 Mbit/s; a 100-packet DropTail bottleneck with 20 ms of delay, 1 Gbit/s access links of 1 ms,
60 simulated seconds, every flow a bulk transfer from 0 s, ``host = "rfc"`` (the published models,
as ns-3 runs them).

    python3 benches/ns3_grid.py --ns3-python /tmp/ns3venv/bin/python [--duration 60] [--cells ...]

ns-3 comes from a throw-away virtual environment holding the ``ns3`` wheel (``python3 -m venv
/tmp/ns3venv && /tmp/ns3venv/bin/pip install "ns3==3.44.*"``: its first import builds cppyy, minutes);
each cell runs in ccarena's own ns-3 program (:mod:`ccarena.references.ns3_cell`, the calibration
reference: the same dumbbell from the same resolved spec), and its figure is the wall time of
``Simulator::Run`` alone (``events_wall_s``): not the interpreter, nor cppyy compiling the program
(the wheel's libraries are its release build, with ns-3's logging and asserts compiled in; the
program's own per-ACK trace callbacks and packet sink are C++ compiled by cppyy's JIT).
ccarena's figure is its engine alone: ``Simulation`` built from the same resolved spec, then
``run_until`` the end, timed (the build is printed beside it). Both take the minimum over their
repetitions (ns-3 2, ccarena 3), alternating: ns-3's repetitions run between ccarena's, so a burst
of hypervisor steal hits both. Each line also prints both simulators' total goodput, so a reader
can see they did the same work (a faster engine that delivered less would not be faster).

Figures are for people (issue 35 and the README): nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from ccarena import _engine  # noqa: E402
from ccarena.experiment import expand  # noqa: E402
from ccarena.references.ns3_suite import ns3_cell  # noqa: E402
from ccarena.scenario import load_scenario  # noqa: E402

CELLS = {
    "1-newreno-10mbps": ("newreno", 1, "10Mbps"),
    "10-newreno-100mbps": ("newreno", 10, "100Mbps"),
    "100-newreno-100mbps": ("newreno", 100, "100Mbps"),
    "2-cubic-10mbps": ("cubic", 2, "10Mbps"),
}
"""Cell name → (flavor, flows, bottleneck rate)."""


def scenario(name: str, duration_s: float) -> dict[str, Any]:
    """The ccarena scenario of one grid cell (every flow from 0 s, one host pair per flow)."""
    flavor, flows, rate = CELLS[name]
    return {"name": name, "duration": f"{duration_s}s", "seed": 1, "host": "rfc",
            "topology": {"kind": "dumbbell", "pairs": flows,
                         "bottleneck": {"rate": rate, "delay": "20ms", "queue": {"limit": "100pkt"}},
                         "access": {"rate": "1Gbps", "delay": "1ms"}},
            "flows": [{"from": f"left{i}", "to": f"right{i}", "flavor": flavor} for i in range(flows)]}


def ccarena_engine(spec_json: str, duration_ns: int) -> tuple[float, float, float]:
    """(build s, run s, total goodput bit/s) of one engine run of ``spec_json``."""
    t0 = time.perf_counter()
    sim = _engine.Simulation(spec_json, None)
    t1 = time.perf_counter()
    sim.run_until(duration_ns)
    t2 = time.perf_counter()
    flows = dict(sim.results())["flows"]
    import numpy as np

    delivered = np.frombuffer(flows["bytes_delivered"], dtype="<f8") if "bytes_delivered" in flows else None
    goodput = float("nan") if delivered is None else 8 * float(delivered.sum()) / (duration_ns / 1e9)
    return t1 - t0, t2 - t1, goodput


def ns3_runs(python: str, cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each cell's ns-3 result (:mod:`ccarena.references.ns3_cell`), in one ns-3 process. A
    short copy of the first cell runs first and is dropped: the process's first simulation also
    pays for cppyy compiling what it first calls (a 1-flow cell measured 4.4 s first, ~1.4 s
    after another)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    warm_up = {**cells[0], "duration_s": min(1.0, cells[0]["duration_s"])}
    done = subprocess.run([python, "-m", "ccarena.references.ns3_cell", "-"],
                          input=json.dumps([warm_up, *cells]),
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        sys.exit(f"ns-3 process failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])[1:]


def main() -> None:
    """Run the grid and print one line per cell."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ns3-python", default="/tmp/ns3venv/bin/python",
                        help="an interpreter with the ns3 wheel (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=60.0, help="simulated seconds (default 60)")
    parser.add_argument("--cells", nargs="*", default=list(CELLS), choices=list(CELLS))
    parser.add_argument("--ns3-repeats", type=int, default=2)
    parser.add_argument("--ccarena-repeats", type=int, default=3)
    args = parser.parse_args()

    plans = {name: expand(load_scenario(scenario(name, args.duration)))[0] for name in args.cells}
    specs = {name: plan.resolved.spec.to_json() for name, plan in plans.items()}
    cells = [ns3_cell(plans[name]) for name in args.cells]
    duration_ns = int(args.duration * 1e9)
    ours: dict[str, list[tuple[float, float, float]]] = {name: [] for name in args.cells}
    theirs: dict[str, list[dict[str, Any]]] = {name: [] for name in args.cells}
    rounds = max(args.ns3_repeats, args.ccarena_repeats)
    for r in range(rounds):
        for name in args.cells:
            if r < args.ccarena_repeats:
                ours[name].append(ccarena_engine(specs[name], duration_ns))
        if r < args.ns3_repeats:
            for name, result in zip(args.cells, ns3_runs(args.ns3_python, cells)):
                theirs[name].append(result)
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)

    print(f"{args.duration:g} simulated s per cell; ns-3: Simulator::Run wall s, min of "
          f"{args.ns3_repeats}; ccarena: engine run wall s, min of {args.ccarena_repeats}")
    print(f"{'cell':<22}{'ns-3 s':>9}{'ccarena s':>11}{'build s':>9}{'speed-up':>10}"
          f"{'ns-3 Mb/s':>11}{'ours Mb/s':>11}")
    for name in args.cells:
        ns3_s = min(t["events_wall_s"] for t in theirs[name])
        ns3_goodput = sum(f["goodput_bps"] for f in theirs[name][0]["flows"])
        build_s = min(o[0] for o in ours[name])
        run_s = min(o[1] for o in ours[name])
        print(f"{name:<22}{ns3_s:>9.2f}{run_s:>11.3f}{build_s:>9.3f}{ns3_s / run_s:>9.0f}×"
              f"{ns3_goodput / 1e6:>11.2f}{ours[name][0][2] / 1e6:>11.2f}")


if __name__ == "__main__":
    main()
