"""Benchmark of the front end against the engine (issue 17): what a whole ``ccarena`` command
costs beside the simulation it runs.

    python3 benches/frontend.py                 # every case, 1 repetition
    python3 benches/frontend.py --case flows100 --repeats 3
    python3 benches/frontend.py --case flows1000
    python3 benches/frontend.py --case sweep400 --jobs 2

Cases:
- ``flows100``: one 60 s run of 100 CUBIC flows on a 100 Mbps dumbbell. Engine seconds are the
  engine alone (``Simulation.run_until`` + ``results``, measured in this process on the same spec);
  whole-command seconds are ``ccarena run --no-report`` as a user types it (a subprocess: start-up,
  imports, spec, metrics, Parquet, summary), the package byte-compiled as ``pip install .``
  leaves it. Target: whole ≤ 1.3 × engine.
- ``flows1000``: the same for one 20 s run of 1,000 CUBIC flows on a 1 Gbps dumbbell (issue 16).
  Target: whole ≤ 1.5 × engine.
- ``sweep400``: 400 runs (100 loss values × 4 repeats) of one 5 s Reno flow. Engine seconds are the
  sum over runs of the engine alone; the front end's time per run is (whole CPU of the command and
  its workers − engine CPU) / runs. Target: ≤ 0.05 s per run. Then ``ccarena report`` of the
  experiment: target ≤ 10 s on 2 cores.

Printed: engine s, whole s, the front end's share, per-run overhead, report s; for the runs of many
flows, also the start-up floor (a process that only imports what ``ccarena run`` needs before its
engine can start) beside what the target leaves the whole front end.
"""

from __future__ import annotations

import argparse
import compileall
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

def cubic_dumbbell(name: str, duration: str, pairs: int, rate: str, limit_packets: int) -> str:
    """A scenario of ``pairs`` bulk CUBIC flows, one per pair, across a dumbbell whose bottleneck
    has ``rate``, 20 ms of delay and a DropTail queue of ``limit_packets``."""
    head = f"""
name = "{name}"
duration = "{duration}"
[topology]
kind = "dumbbell"
pairs = {pairs}
bottleneck = {{ rate = "{rate}", delay = "20ms", queue = {{ limit = "{limit_packets}pkt" }} }}
"""
    return head + "".join(f'[[flows]]\nfrom = "left{i}"\nto = "right{i}"\nflavor = "cubic"\n'
                          for i in range(pairs))


FLOWS100 = cubic_dumbbell("bench-flows100", "60s", 100, "100Mbps", 1000)
FLOWS1000 = cubic_dumbbell("bench-flows1000", "20s", 1000, "1Gbps", 10000)

SWEEP400 = """
name = "bench-sweep400"
duration = "5s"
[topology]
kind = "single_link"
link = { rate = "20Mbps", delay = "10ms", loss = "0%", queue = { limit = "100pkt" } }
[[flows]]
from = "a"
to = "b"
flavor = "reno"
[sweep]
"topology.link.loss" = [{values}]
repeats = 4
"""


def engine_seconds(scenario: Path) -> tuple[float, int]:
    """Wall seconds of the engine alone over every run of ``scenario`` (same specs as
    ``ccarena run`` builds), and the number of runs."""
    from ccarena import _engine
    from ccarena.experiment import expand
    from ccarena.scenario import load_scenario

    plans = expand(load_scenario(scenario))
    total = 0.0
    for plan in plans:
        text = plan.resolved.spec.to_json()
        started = time.perf_counter()
        sim = _engine.Simulation(text)
        sim.run_until(int(sim.duration_ns))
        sim.results()
        total += time.perf_counter() - started
    return total, len(plans)


def command(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (the command and its children) of ``python -m ccarena ARGS``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ccarena", *args], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


# What `ccarena run` imports before its first run can start (the command line, the scenario and
# spec models, the executor), in a process tuned as the command's is.
STARTUP = ("from ccarena.tuning import tune_process; tune_process(); import ccarena.cli, "
           "ccarena.scenario, ccarena.executor, ccarena.backends, ccarena.report.formats, "
           "ccarena.store.location")


def startup_seconds() -> float:
    """Wall seconds of a Python process that only starts and imports what ``ccarena run`` needs
    before its engine can start (:data:`STARTUP`): the front end's floor before any run."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", STARTUP], check=True)
    return time.perf_counter() - started


def bench_flows(tmp: Path, repeats: int, case: str, text: str, target: float) -> None:
    """One run of many flows: the engine alone, then ``ccarena run --no-report`` of the same,
    alternately ``repeats`` times; then the medians. This VM's speed drifts by a fifth within
    minutes (the hypervisor), so one pair can say 1.4 and the next 1.7: read the medians."""
    scenario = tmp / f"{case}.toml"
    scenario.write_text(text)
    engines, walls, inside, startups = [], [], [], []
    for i in range(repeats):
        startups.append(startup_seconds())
        engine, _ = engine_seconds(scenario)
        out = tmp / f"{case}-{i}"
        wall, _ = command(["run", str(scenario), "-o", str(out), "--force", "-q", "--no-report",
                           "-j", "1"])
        engines.append(engine)
        walls.append(wall)
        inside.append(engine_in_command(out))
        print(f"{case}: engine {engine:.2f} s, whole command {wall:.2f} s, "
              f"ratio {wall / engine:.2f} (target ≤ {target}), front end {wall - engine:.2f} s; "
              f"the engine inside the command {inside[-1]:.2f} s, ratio {wall / inside[-1]:.2f}",
              flush=True)
    if repeats > 1:
        engine, wall = statistics.median(engines), statistics.median(walls)
        ratio_inside = statistics.median(w / e for w, e in zip(walls, inside))
        print(f"{case}: median of {repeats}: engine {engine:.2f} s, whole command {wall:.2f} s, "
              f"ratio {wall / engine:.2f} (target ≤ {target}), front end {wall - engine:.2f} s; "
              f"ratio to the engine inside the command {ratio_inside:.2f}", flush=True)
    startup, engine = statistics.median(startups), statistics.median(engines)
    print(f"{case}: starting Python and importing what a run needs takes {startup:.2f} s before "
          f"any engine can start; the target leaves the whole front end "
          f"{(target - 1) * engine:.2f} s", flush=True)


def engine_in_command(out: Path) -> float:
    """The wall seconds the command's own run took from the engine's start to its tables
    (``timing.wall_s`` of the one run's run.json): the same machine moment as the whole command's
    time, where the engine measured alone comes seconds earlier — this VM's speed drifts between."""
    (record,) = [json.loads(p.read_text()) for p in out.glob("runs/*/run.json")]
    return float(record["timing"]["wall_s"])


def bench_sweep400(tmp: Path, repeats: int, jobs: int) -> None:
    values = ", ".join(f'"{0.05 * i:.2f}%"' for i in range(100))
    scenario = tmp / "sweep400.toml"
    scenario.write_text(SWEEP400.replace("{values}", values))
    for i in range(repeats):
        engine, runs = engine_seconds(scenario)
        out = tmp / f"s400-{i}"
        wall, cpu = command(["run", str(scenario), "-o", str(out), "--force", "-q", "--no-report",
                             "-j", str(jobs)])
        per_run = (cpu - engine) / runs
        print(f"sweep400: {runs} runs, engine {engine:.2f} s (sum), whole command {wall:.2f} s wall / "
              f"{cpu:.2f} s CPU with -j {jobs}; front end {per_run * 1e3:.1f} ms CPU per run "
              f"(target ≤ 50 ms)")
        report_wall, _ = command(["report", str(out)])
        print(f"sweep400: report {report_wall:.2f} s (target ≤ 10 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=["flows100", "flows1000", "sweep400", "all"], default="all")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    # What `pip install .` leaves: the package byte-compiled. An editable install on a machine
    # with PYTHONDONTWRITEBYTECODE=1 (this VM) would compile every module in every command.
    import ccarena

    compileall.compile_dir(Path(ccarena.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory(prefix="ccarena-bench-") as tmp:
        if args.case in ("flows100", "all"):
            bench_flows(Path(tmp), args.repeats, "flows100", FLOWS100, 1.3)
        if args.case in ("flows1000", "all"):
            bench_flows(Path(tmp), args.repeats, "flows1000", FLOWS1000, 1.5)
        if args.case in ("sweep400", "all"):
            bench_sweep400(Path(tmp), args.repeats, args.jobs)


if __name__ == "__main__":
    main()
