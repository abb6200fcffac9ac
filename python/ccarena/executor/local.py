"""Running an experiment's pending runs in this process, one after another, with a bar over each
run's simulated time; the progress display and outcome bookkeeping every executor shares (the
process pool: :mod:`ccarena.executor.process_pool`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ccarena.executor.run import backend_fields, execute_run, run_record, start_run
from ccarena.experiment import RunPlan
from ccarena.store import ExperimentStore

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from ccarena.backends import PendingRun
    from ccarena.executor import ExperimentOutcome


def progress_bar(console: Console, enabled: bool) -> Progress:
    """The progress display every executor shows (a bar over the experiment's runs)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, disable=not enabled, transient=False)


def note_result(outcome: ExperimentOutcome, result: dict[str, Any]) -> None:
    """Count one run's outcome (:func:`ccarena.executor.run.execute_run`'s return)."""
    if result["status"] == "complete":
        outcome.completed.append(result["run_id"])
        if "summary_inputs" in result:
            outcome.summary_inputs[result["run_id"]] = result["summary_inputs"]
    else:
        outcome.failed.append(result)


class Ticker:
    """A run's progress callback that can be given to the run before there is a bar to show it
    on (:func:`start_here`): it keeps the latest position and forwards it once :meth:`show` has
    named where. Called from the run's thread or the thread waiting for it."""

    def __init__(self) -> None:
        self.now_ns = 0
        self._show: Callable[[int], None] | None = None

    def __call__(self, now_ns: int, duration_ns: int) -> None:  # noqa: ARG002
        self.now_ns = now_ns
        show = self._show
        if show is not None:
            show(now_ns)

    def show(self, update: Callable[[int], None]) -> None:
        """Forward the run's position to ``update(now_ns)`` from now on (and once at once)."""
        self._show = update
        update(self.now_ns)


Started = tuple["PendingRun", Ticker, dict]
"""A run :func:`start_here` started: the run, its progress, its record (:func:`run_record`)."""


def stop_started(started: dict[str, Started]) -> None:
    """Stop every run in ``started`` (by run id) that is still working; one that has ended is
    left as it is (``cancel`` is idempotent)."""
    for run, _, _ in started.values():
        run.cancel()


def start_here(plan: RunPlan, name: str) -> Started | None:
    """Start ``plan``'s run in the background in this process (:func:`ccarena.executor.run.start_run`),
    for :func:`run_here` to finish (its ``started``); None when its backend cannot."""
    ticker = Ticker()
    pending = start_run(backend_fields(plan), plan.resolved.spec, ticker)
    return (pending, ticker, run_record(plan, name)) if pending is not None else None


def run_here(pending: list[RunPlan], store: ExperimentStore, name: str, outcome: ExperimentOutcome,
              console: Console, show: bool, total: int,
              started: dict[str, Started] | None = None) -> None:
    """Run in this process, one after another, with a bar over simulated time.

    ``started`` holds runs already started by :func:`start_here`, by run id: they are finished
    (waited for, stored) in their turn; any not reached (Ctrl-C, an error) is stopped."""
    started = dict(started or {})
    try:
        with progress_bar(console, show) as bar:
            runs = bar.add_task(f"{name}: runs", total=total, completed=len(outcome.skipped))
            for plan in pending:
                duration_s = plan.resolved.spec.duration_ns / 1e9
                sim = bar.add_task(f"{plan.run_id}: simulated s", total=duration_s)

                def tick(now_ns: int, duration_ns: int, task=sim) -> None:  # noqa: ARG001
                    bar.update(task, completed=now_ns / 1e9)

                early = started.pop(plan.run_id, None)
                if early is not None:
                    run, ticker, record = early
                    ticker.show(lambda now_ns, task=sim: tick(now_ns, 0, task))
                    result = execute_run(str(store.root), record, spec=plan.resolved.spec,
                                         pending=run, keep_summary_inputs=True)
                else:
                    result = execute_run(str(store.root), run_record(plan, name), tick,
                                         spec=plan.resolved.spec, keep_summary_inputs=True)
                bar.remove_task(sim)
                note_result(outcome, result)
                bar.advance(runs)
    finally:
        stop_started(started)
