"""Benchmark of the Dask executor against the process pool (issue 15): per-run scheduling overhead
on 1,000 short runs.

    python3 benches/dask_executor.py                       # 1,000 runs, 2 workers, once each
    python3 benches/dask_executor.py --runs 200 --workers 2 --repeats 3

The sweep: ``--runs`` runs of one Reno flow, 0.2 s simulated at 2 Mbit/s (a few ms of engine each),
so what is measured is what surrounds a run, not the run. Three ways, each into a fresh directory
through :func:`ccarena.executor.run_experiment` in this process:

- ``serial``: in this process, one run after another (``jobs = 1``): the runs' own cost (engine,
  metrics, the atomic write) with no scheduling at all; ``T1`` below;
- ``process``: the process pool with ``--workers`` processes (the default executor);
- ``dask-local``: a Dask ``LocalCluster`` of ``--workers`` single-threaded processes.

Printed per executor:

- wall seconds (start-up and shutdown of the pool or cluster included);
- CPU overhead per run = (CPU of this process and every worker process − CPU of ``serial``) / runs:
  what the executor costs beyond the runs themselves (start-up, the scheduler, serialising tasks,
  the workers' imports), read from ``getrusage`` (the workers are reaped children, or children of a
  reaped nanny); unlike wall time it does not depend on what else the machine runs;
- wall overhead per run = (wall × workers − T1) / runs. On a machine with fewer free cores than
  ``--workers`` (or busy with other work) it includes the contention; the CPU figure does not.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

SWEEP = """
name = "bench-dask"
duration = "0.2s"
seed = 5
[topology]
kind = "single_link"
link = { rate = "2Mbps", delay = "5ms", queue = { limit = "50pkt" } }
[[flows]]
from = "a"
to = "b"
flavor = "reno"
[sweep]
"topology.link.loss" = [{values}]
repeats = {repeats}
"""


def scenario_text(runs: int) -> str:
    points = min(100, runs)
    values = ", ".join(f'"{0.01 * i:.2f}%"' for i in range(points))
    return SWEEP.replace("{values}", values).replace("{repeats}", str(max(1, runs // points)))


def cpu_seconds() -> float:
    """CPU seconds of this process and its reaped children so far."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def one(kind: str, scenario: Path, out: Path, workers: int) -> tuple[float, float, int]:
    """Wall seconds of the whole experiment, CPU seconds (this process and its workers), and the
    number of runs."""
    from ccarena.executor import run_experiment
    from ccarena.scenario import ExecutorOptions, load_scenario

    loaded = load_scenario(scenario)
    executor = ExecutorOptions(kind="process" if kind in ("serial", "process") else kind,
                               workers=workers if kind == "dask-local" else None)
    jobs = 1 if kind == "serial" else workers
    cpu, started = cpu_seconds(), time.perf_counter()
    outcome = run_experiment(loaded, out, jobs=jobs, show_progress=False, executor=executor)
    wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    assert not outcome.failed and len(outcome.completed) == len(outcome.plans)
    return wall, cpu, len(outcome.plans)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ccarena-bench-dask-") as tmp:
        scenario = Path(tmp) / "sweep.toml"
        scenario.write_text(scenario_text(args.runs))
        for i in range(args.repeats):
            t1, t1_cpu, runs = one("serial", scenario, Path(tmp) / f"serial-{i}", 1)
            print(f"serial: {runs} runs in {t1:.2f} s wall, {t1_cpu:.2f} s CPU in this process = "
                  f"{t1_cpu / runs * 1e3:.1f} ms CPU per run (the runs' own cost)", flush=True)
            for kind in ("process", "dask-local"):
                wall, cpu, runs = one(kind, scenario, Path(tmp) / f"{kind}-{i}", args.workers)
                print(f"{kind}: {runs} runs on {args.workers} workers in {wall:.2f} s wall, "
                      f"{cpu:.2f} s CPU; overhead per run: {(cpu - t1_cpu) / runs * 1e3:.1f} ms CPU, "
                      f"{(wall * args.workers - t1) / runs * 1e3:.1f} ms wall×workers (start-up "
                      "included)", flush=True)


if __name__ == "__main__":
    main()
