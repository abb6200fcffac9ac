"""Running an experiment's pending runs on this machine: in this process (one after another, with
a bar over each run's time) or on a pool of spawned worker processes; rich progress bars; Ctrl-C
terminates the workers (their unfinished runs leave nothing in ``runs/``)."""

from __future__ import annotations

import multiprocessing
import signal
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ccarena.executor.run import execute_run, run_record
from ccarena.experiment import RunPlan
from ccarena.store import ExperimentStore

if TYPE_CHECKING:
    from ccarena.executor import ExperimentOutcome


def _worker_init() -> None:
    """Pool workers ignore SIGINT: the parent decides how a Ctrl-C ends the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _pool_task(args: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return execute_run(*args)


def progress_bar(console: Console, enabled: bool) -> Progress:
    """The progress display every executor shows (a bar over the experiment's runs)."""
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, disable=not enabled, transient=False)


def note_result(outcome: ExperimentOutcome, result: dict[str, Any]) -> None:
    """Count one run's outcome (:func:`ccarena.executor.run.execute_run`'s return)."""
    if result["status"] == "complete":
        outcome.completed.append(result["run_id"])
    else:
        outcome.failed.append(result)


def run_here(pending: list[RunPlan], store: ExperimentStore, name: str, outcome: ExperimentOutcome,
              console: Console, show: bool, total: int) -> None:
    """Run in this process, one after another, with a bar over simulated time."""
    with progress_bar(console, show) as bar:
        runs = bar.add_task(f"{name}: runs", total=total, completed=len(outcome.skipped))
        for plan in pending:
            duration_s = plan.resolved.spec.duration_ns / 1e9
            sim = bar.add_task(f"{plan.run_id}: simulated s", total=duration_s)

            def tick(now_ns: int, duration_ns: int, task=sim) -> None:
                bar.update(task, completed=now_ns / 1e9)

            result = execute_run(str(store.root), run_record(plan, name), tick)
            bar.remove_task(sim)
            note_result(outcome, result)
            bar.advance(runs)


def run_pool(pending: list[RunPlan], store: ExperimentStore, name: str, outcome: ExperimentOutcome,
              console: Console, show: bool, jobs: int, total: int) -> None:
    """Run on ``jobs`` spawned worker processes; Ctrl-C terminates them (their unfinished runs
    leave nothing in ``runs/``)."""
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(processes=jobs, initializer=_worker_init)
    try:
        with progress_bar(console, show) as bar:
            runs = bar.add_task(f"{name}: runs on {jobs} processes", total=total,
                                completed=len(outcome.skipped))
            tasks = [(str(store.root), run_record(plan, name)) for plan in pending]
            results = pool.imap_unordered(_pool_task, tasks, chunksize=1)
            remaining = len(tasks)
            while remaining:
                try:
                    result = results.next(timeout=0.2)
                except multiprocessing.TimeoutError:
                    continue
                remaining -= 1
                note_result(outcome, result)
                bar.advance(runs)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
