"""The report's worker processes, spawned before this process has loaded what drawing needs.

A worker is a fresh interpreter that imports matplotlib, pandas and the report's modules before it
can draw (~1.5 s of one core). ``ccarena report`` and ``ccarena run`` spawn the workers a report
will draw with as soon as they know the experiment (:func:`spawn_for`, from ``experiment.json``
alone), so that the workers' imports run beside this process's own imports and summary instead of
after them; :func:`ccarena.report.html.start_workers` then hands them their work (or stops them
when the stored results call for none).

This module imports nothing heavy (json and the standard library's process pool): it is loaded
before matplotlib and pandas are.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

MANY_FLOWS = 6
"""Above this many flows in a run, the report draws no per-run figures (the same number as
:data:`ccarena.report.figures.MANY_FLOWS`, repeated here so as not to load matplotlib)."""
RUNS_DRAWN = 4
"""Sweep points whose first run gets its own time series (``draw_figures``' ``max_runs``)."""
PANELS_PER_PAGE = 24
"""Panels of a small-multiples page (:data:`ccarena.report.plots.SMALL_MULTIPLES_PER_FIGURE`)."""
TASKS_MIN = 6
"""Per-run figure tasks from which one part is drawn with workers
(:data:`ccarena.report.figures.PARALLEL_TASKS_MIN`)."""


def expected_workers(experiment: dict[str, Any], cores: int | None = None) -> int:
    """How many worker processes :func:`ccarena.report.html.start_workers` will want for the
    experiment described by ``experiment`` (``experiment.json`` as a dict), estimated from its
    planned runs: with several parts holding runs, one fewer than the parts (at most one fewer
    than the ``cores``); with one part, as many as its per-run figure tasks (the first runs of up
    to :data:`RUNS_DRAWN` sweep points and a small-multiples page per :data:`PANELS_PER_PAGE`
    points, none when a run has more than :data:`MANY_FLOWS` flows) when they are
    :data:`TASKS_MIN` or more, at most ``cores``; else 0."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    runs = [r for r in experiment.get("runs") or [] if isinstance(r, dict)]
    parts = {str(r.get("part") or "") for r in runs}
    if cores < 2 or not runs:
        return 0
    if len(parts) >= 2:
        return min(cores - 1, len(parts) - 1)
    if any(len((r.get("spec") or {}).get("flows") or []) > MANY_FLOWS for r in runs):
        return 0
    points = len({r.get("point") for r in runs})
    pages = math.ceil(points / PANELS_PER_PAGE) if points > RUNS_DRAWN else 0
    tasks = min(points, RUNS_DRAWN) + pages
    return min(cores, tasks) if tasks >= TASKS_MIN else 0


def spawn_for(root: str | Path) -> Any:
    """Spawn now the workers the report of the experiment at ``root`` will draw with
    (:func:`expected_workers`), each loading the report's modules at once; returns the
    :class:`concurrent.futures.ProcessPoolExecutor`, or None when the report wants none or
    ``experiment.json`` cannot be read (the command then reports that itself)."""
    try:
        experiment = json.loads((Path(root) / "experiment.json").read_bytes())
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep
        return None
    workers = expected_workers(experiment) if isinstance(experiment, dict) else 0
    if not workers:
        return None
    from concurrent.futures import ProcessPoolExecutor

    from ccarena.workers import WORKER_CONTEXT

    # spawn, not fork, and without the caller's __main__: ccarena.workers.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=WORKER_CONTEXT)
    # The pool spawns a worker per task submitted while none is idle: one task each.
    for _ in range(workers):
        pool.submit(load_drawing_modules)
    return pool


def load_drawing_modules() -> None:
    """A worker's first task: load what drawing a report needs (matplotlib, pandas, the report's
    modules), so that it is ready when the figures come."""
    import ccarena.report.html  # noqa: F401


def stop_now(pool: Any) -> None:
    """Stop ``pool``'s workers at once, whatever they are doing: a command that fails before its
    report is drawn (a damaged store, Ctrl-C) exits now instead of waiting for the workers to
    finish loading matplotlib. ``ProcessPoolExecutor`` has no public way to end its processes
    before Python 3.14 (``terminate_workers``): its process table is read here."""
    if pool is None:
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
