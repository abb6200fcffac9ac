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

Printed per executor: wall seconds (start-up of the pool or cluster included), and the scheduling
overhead per run = (wall × workers − T1) / runs — the worker time not spent running runs,
start-up and shutdown included —, and the same with the start-up left out (the executor's wall
from its first to its last result: its steady-state cost per task). On a machine with fewer free
cores than ``--workers`` the overhead includes the contention.
"""

from __future__ import annotations

import argparse
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
    points = 100 if runs >= 100 else runs
    values = ", ".join(f'"{0.01 * i:.2f}%"' for i in range(points))
    return SWEEP.replace("{values}", values).replace("{repeats}", str(max(1, runs // points)))


def finish_times(root: Path) -> list[float]:
    """Modification times of the run directories (when each was renamed into place), sorted."""
    return sorted(p.stat().st_mtime for p in (root / "runs").iterdir())


def one(kind: str, scenario: Path, out: Path, workers: int) -> tuple[float, float, int]:
    """Wall seconds of the whole experiment, seconds from the first run's completion to the last,
    and the number of runs."""
    from ccarena.executor import run_experiment
    from ccarena.scenario import ExecutorOptions, load_scenario

    loaded = load_scenario(scenario)
    executor = ExecutorOptions(kind="process" if kind in ("serial", "process") else kind,
                               workers=workers if kind == "dask-local" else None)
    jobs = 1 if kind == "serial" else workers
    started = time.perf_counter()
    outcome = run_experiment(loaded, out, jobs=jobs, show_progress=False, executor=executor)
    wall = time.perf_counter() - started
    assert not outcome.failed and len(outcome.completed) == len(outcome.plans)
    times = finish_times(out)
    return wall, times[-1] - times[0], len(outcome.plans)


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
            t1, t1_span, runs = one("serial", scenario, Path(tmp) / f"serial-{i}", 1)
            print(f"serial: {runs} runs in {t1:.2f} s in this process = {t1 / runs * 1e3:.1f} ms per "
                  "run (T1: the runs' own cost)", flush=True)
            for kind in ("process", "dask-local"):
                wall, span, runs = one(kind, scenario, Path(tmp) / f"{kind}-{i}", args.workers)
                overhead = (wall * args.workers - t1) / runs
                steady = (span * args.workers - t1_span) / runs
                print(f"{kind}: {runs} runs on {args.workers} workers in {wall:.2f} s wall; "
                      f"scheduling overhead {overhead * 1e3:.1f} ms per run (start-up included), "
                      f"{steady * 1e3:.1f} ms per run first-to-last result", flush=True)


if __name__ == "__main__":
    main()
