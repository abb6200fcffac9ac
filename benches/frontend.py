"""Benchmark of the front end against the engine (issue 17): what a whole ``ccarena`` command
costs beside the simulation it runs.

    python3 benches/frontend.py                 # every case, 1 repetition
    python3 benches/frontend.py --case flows100 --repeats 3
    python3 benches/frontend.py --case flows1000
    python3 benches/frontend.py --case sweep400 --jobs 2
    python3 benches/frontend.py --case run100 --repeats 3 --baseline /tmp/old/python

Cases:
- ``flows100``: one 60 s run of 100 CUBIC flows on a 100 Mbps dumbbell. Engine seconds are the
  engine alone (``Simulation.run_until`` + ``results``, measured in this process on the same spec);
  whole-command seconds are ``ccarena run --no-report`` as a user types it (a subprocess: start-up,
  imports, spec, metrics, Parquet, summary), the package byte-compiled as ``pip install .``
  leaves it. Target: whole ≤ 1.3 × engine.
- ``flows1000``: the same for one 20 s run of 1,000 CUBIC flows on a 1 Gbps dumbbell (issue 16).
  Target: whole ≤ 1.5 × engine.
- ``run100``: the ``flows100`` scenario as a user runs it, report included: ``ccarena run -j 1``
  (summary, verdict, report.html and its figures), beside the engine's own time in that command
  (``timing.engine_s`` of its run.json), and the command's CPU over the machine's cores (the
  least wall time any overlap of its work could reach). Target (issue 29): whole ≤ 3 × engine.
- ``sweep400``: 400 runs (100 loss values × 4 repeats) of one 5 s Reno flow. Engine seconds are the
  sum over runs of the engine alone; the front end's time per run is (whole CPU of the command and
  its workers − engine CPU) / runs. Target: ≤ 0.05 s per run. Then ``ccarena report`` of the
  experiment beside the runs' time (issue 29: the report never slower than the runs, ≥ 10 runs).
- ``report004``: the seed-004 file (examples/seeds/004-tcp-flavors-matrix.toml, 95 runs: Reno,
  CUBIC, Vegas alone and the 4×4 matrix × 5 repeats) with 15 s runs: ``ccarena run --no-report``
  then ``ccarena report`` of it. Target (issue 29): report ≤ runs, and ≤ 10 s on 2 cores.
- ``scale`` (not in ``all``: minutes): the scale benchmark's runs as scenarios — CUBIC
  dumbbells of 1, 10, 100, 1,000 and 10,000 flows at 1 Gbps for 4 s, and the k = 16 fat-tree's
  1,024 flows across pods for 150 ms on two threads — each as one ``ccarena run --no-report``,
  the whole command beside its engine's own time (issue 35 item 5).
- ``rerun``: ``ccarena run`` of a finished experiment again (the quickstart, then the seed-004
  one of ``report004``): the runs are skipped and the report is kept. Target: ≤ 1.5 s.

``--baseline DIR`` runs every command a second time with ``PYTHONPATH=DIR`` (e.g. an older tree's
``python/`` with the engine copied in, from ``git archive``) and prints its numbers as "before".
On a machine shared with other work, read the CPU seconds beside the wall seconds: wall time
stretches with the load, CPU time much less.

Printed: engine s, whole s, the front end's share, per-run overhead, report s; for the runs of many
flows, also the start-up floor (a process that only imports what ``ccarena run`` needs before its
engine can start) beside what the target leaves the whole front end.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
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

# The scale benchmark's runs (benches/scale.rs, issue 35 item 5) as a user writes them: CUBIC
# dumbbells at 1 Gbps by flow count, and the k = 16 fat-tree's 1,024 flows across pods.
SCALE_DUMBBELLS = {n: cubic_dumbbell(f"bench-dumbbell{n}", "4s", n, "1Gbps", 10000)
                   for n in (1, 10, 100, 1000, 10000)}
FATTREE16 = """
name = "bench-fattree16"
duration = "150ms"
[topology]
kind = "fat_tree"
k = 16
host = { rate = "10Gbps", delay = "1us", queue = { limit = "100pkt" } }
edge = { rate = "10Gbps", delay = "1us", queue = { limit = "100pkt" } }
core = { rate = "10Gbps", delay = "1us", queue = { limit = "100pkt" } }
[[traffic]]
pattern = "stride"
stride = 512
jitter = "100ms"
flow = { flavor = "cubic" }
[engine]
threads = 2
"""

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


BASELINE: str | None = None
"""``PYTHONPATH`` of the tree that gives the "before" numbers (``--baseline``); None: this one."""


def command(args: list[str], baseline: bool = False) -> tuple[float, float]:
    """Wall and CPU seconds (the command and its children) of ``python -m ccarena ARGS``; with
    ``baseline``, of the tree at :data:`BASELINE`."""
    env = {**os.environ, "PYTHONPATH": BASELINE} if baseline and BASELINE else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ccarena", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


# What `ccarena run` imports before its first run can start (the command line, the scenario and
# spec models, the executor), in a process tuned as the command's is.
STARTUP = ("from ccarena.process_setup import tune_process; tune_process(); import ccarena.cli, "
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


def bench_scale(tmp: Path) -> None:
    """The whole ``ccarena run --no-report -j 1`` of each of :data:`SCALE_DUMBBELLS` and of
    :data:`FATTREE16` (two threads) beside its engine's own time in that command
    (:func:`engine_in_command`), once each: what issue 35 item 5 asks beside the scale
    benchmark's engine figures. Minutes: the fat-tree's engine alone takes about 40 s."""
    cases = [(f"dumbbell-{n}", text) for n, text in SCALE_DUMBBELLS.items()] + [("fattree-k16", FATTREE16)]
    for case, text in cases:
        scenario = tmp / f"{case}.toml"
        scenario.write_text(text)
        out = tmp / case
        wall, cpu = command(["run", str(scenario), "-o", str(out), "--force", "-q", "--no-report", "-j", "1"])
        engine = engine_in_command(out)
        print(f"{case}: whole command {wall:.2f} s wall / {cpu:.2f} s CPU, engine {engine:.2f} s, "
              f"front end {wall - engine:.2f} s, ratio {wall / engine:.2f}", flush=True)


def engine_in_command(out: Path) -> float:
    """The wall seconds of the engine in the command's own run (``timing.engine_s`` of the one
    run's run.json: building and running the simulation, without the front end's work on the
    other thread; ``timing.wall_s`` in records that predate it): the same machine moment as the
    whole command's time, where the engine measured alone comes seconds earlier — this VM's speed
    drifts between."""
    (record,) = [json.loads(p.read_text()) for p in out.glob("runs/*/run.json")]
    timing = record["timing"]
    return float(timing.get("engine_s") or timing["wall_s"])


def bench_run100(tmp: Path, repeats: int) -> None:
    """``ccarena run -j 1`` of :data:`FLOWS100` with its report, ``repeats`` times (this tree and
    the baseline's alternately): the whole command's wall and CPU seconds beside the engine's own
    (:func:`engine_in_command`); then the medians and minima. Target: whole ≤ 3 × engine."""
    scenario = tmp / "run100.toml"
    scenario.write_text(FLOWS100)
    seen: dict[str, list[tuple[float, float, float]]] = {}
    cores = os.cpu_count() or 1
    for i in range(repeats):
        for label, baseline in _trees():
            out = tmp / f"run100-{label}-{i}"
            wall, cpu = command(["run", str(scenario), "-o", str(out), "--force", "-q", "-j", "1"],
                                baseline)
            engine = engine_in_command(out)
            seen.setdefault(label, []).append((wall, cpu, engine))
            # The command's CPU spread over every core is the least wall time any overlap of
            # its work could reach: beside 3 × engine, it says whether the target is reachable.
            print(f"run100 {label}: whole command {wall:.2f} s wall / {cpu:.2f} s CPU (at best "
                  f"{cpu / cores:.2f} s wall on {cores} cores), engine {engine:.2f} s, ratio "
                  f"{wall / engine:.2f} (target ≤ 3: {3 * engine:.2f} s)", flush=True)
    for label, rows in seen.items():
        walls, ratios = [w for w, _, _ in rows], [w / e for w, _, e in rows]
        floors = [c / cores / e for _, c, e in rows]
        print(f"run100 {label}: whole command min {min(walls):.2f} / median "
              f"{statistics.median(walls):.2f} s; ratio to the engine min {min(ratios):.2f} / "
              f"median {statistics.median(ratios):.2f}, its CPU over {cores} cores alone "
              f"{statistics.median(floors):.2f} × the engine (of {len(rows)}; target ≤ 3)",
              flush=True)


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
        for label, baseline in _trees():
            report_wall, report_cpu = command(["report", str(out)], baseline)
            print(f"sweep400 {label}: report {report_wall:.2f} s wall / {report_cpu:.2f} s CPU "
                  f"beside the runs' {wall:.2f} s wall (report ÷ runs {report_wall / wall:.2f}; "
                  "target ≤ 1)", flush=True)


def _trees() -> list[tuple[str, bool]]:
    """("after", False) for this tree, then ("before", True) with ``--baseline``."""
    return [("after", False)] + ([("before", True)] if BASELINE else [])


def seed004_text() -> str:
    """The seed-004 scenario with 15 s runs instead of 50 s (the issue's measurement)."""
    path = Path(__file__).resolve().parents[1] / "examples" / "seeds" / "004-tcp-flavors-matrix.toml"
    text = path.read_text()
    assert 'duration = "50s"' in text
    return text.replace('duration = "50s"', 'duration = "15s"')


def bench_report004(tmp: Path, jobs: int, repeats: int = 1) -> Path:
    """Run the seed-004 file (15 s runs) without its report, then time ``ccarena report`` of it
    ``repeats`` times (this tree and the baseline's alternately; minimum and median when more
    than one); returns the experiment directory."""
    scenario = tmp / "seed004.toml"
    scenario.write_text(seed004_text())
    out = tmp / "s004"
    wall, cpu = command(["run", str(scenario), "-o", str(out), "--force", "-q", "--no-report",
                         "-j", str(jobs)])
    print(f"report004: 95 runs of 15 s: {wall:.2f} s wall / {cpu:.2f} s CPU with -j {jobs}",
          flush=True)
    seen: dict[str, list[float]] = {}
    for _ in range(repeats):
        for label, baseline in _trees():
            report_wall, report_cpu = command(["report", str(out)], baseline)
            seen.setdefault(label, []).append(report_wall)
            print(f"report004 {label}: report {report_wall:.2f} s wall / {report_cpu:.2f} s CPU "
                  f"(report ÷ runs {report_wall / wall:.2f}; targets: ≤ 1 and ≤ 10 s)", flush=True)
    if repeats > 1:
        for label, walls in seen.items():
            print(f"report004 {label}: report min {min(walls):.2f} / median "
                  f"{statistics.median(walls):.2f} s wall (of {len(walls)})", flush=True)
    return out


def bench_rerun(tmp: Path, repeats: int, seed004: Path | None) -> None:
    """``ccarena run`` again of a finished experiment (its report written by the first run): the
    quickstart, and the seed-004 directory of :func:`bench_report004` when there is one."""
    quickstart = Path(__file__).resolve().parents[1] / "examples" / "quickstart.toml"
    cases = [("quickstart", quickstart, tmp / "rerun-quickstart")]
    if seed004 is not None:
        cases.append(("seed-004", tmp / "seed004.toml", seed004))
    for name, scenario, out in cases:
        for label, baseline in _trees():
            command(["run", str(scenario), "-o", str(out), "-q", "-j", "2"], baseline)  # finish it
            walls, cpus = [], []
            for _ in range(repeats):
                wall, cpu = command(["run", str(scenario), "-o", str(out), "-q"], baseline)
                walls.append(wall)
                cpus.append(cpu)
            print(f"rerun {label}: {name} finished, run again: {statistics.median(walls):.2f} s wall / "
                  f"{statistics.median(cpus):.2f} s CPU (median of {repeats}; target ≤ 1.5 s)",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=["flows100", "flows1000", "run100", "sweep400", "report004",
                                           "rerun", "scale", "all"], default="all")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--baseline", help="PYTHONPATH of a tree to compare with (\"before\")")
    args = parser.parse_args()
    global BASELINE
    BASELINE = args.baseline
    # What `pip install .` leaves: the package byte-compiled. An editable install on a machine
    # with PYTHONDONTWRITEBYTECODE=1 (this VM) would compile every module in every command.
    import ccarena

    compileall.compile_dir(Path(ccarena.__file__).parent, quiet=1)
    if BASELINE:
        compileall.compile_dir(Path(BASELINE) / "ccarena", quiet=1)
    with tempfile.TemporaryDirectory(prefix="ccarena-bench-") as tmp:
        if args.case in ("flows100", "all"):
            bench_flows(Path(tmp), args.repeats, "flows100", FLOWS100, 1.3)
        if args.case in ("flows1000", "all"):
            bench_flows(Path(tmp), args.repeats, "flows1000", FLOWS1000, 1.5)
        if args.case in ("run100", "all"):
            bench_run100(Path(tmp), max(args.repeats, 1))
        if args.case in ("sweep400", "all"):
            bench_sweep400(Path(tmp), args.repeats, args.jobs)
        seed004 = None
        if args.case in ("report004", "all"):
            seed004 = bench_report004(Path(tmp), args.jobs, args.repeats)
        if args.case in ("rerun", "all"):
            bench_rerun(Path(tmp), max(args.repeats, 3), seed004)
        if args.case == "scale":
            bench_scale(Path(tmp))


if __name__ == "__main__":
    main()
