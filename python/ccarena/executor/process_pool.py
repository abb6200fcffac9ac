"""Running an experiment's pending runs on a pool of spawned worker processes on this machine.

A worker that dies in the middle of a run (the kernel's out-of-memory killer, a ``kill -9``, a
crash of the engine's process) does not stop or hang the experiment: ``concurrent.futures``
reports the pool broken, and every run it still held is run again on a new pool. A run that was
in a pool broken twice is then run alone, in a process of its own, so that the run that kills its
process is told apart from the runs that were merely beside it: it is recorded as failed
(``failed/<run_id>.json``, with the signal or exit status that ended its process) and the other
runs go on. Ctrl-C (or SIGTERM) terminates the workers; their unfinished runs leave nothing in
``runs/``.

Workers are spawned (a fresh interpreter each) but do not import the calling program's
``__main__`` (:data:`ccarena.workers.WORKER_CONTEXT`): a script that calls :func:`ccarena.run` at
its top level, without ``if __name__ == "__main__":``, one read from standard input and a
notebook all run their runs in parallel.
"""

from __future__ import annotations

import concurrent.futures as cf
import signal
from typing import TYPE_CHECKING, Any, Callable

from ccarena.errors import option
from ccarena.executor.local import note_result, progress_bar
from ccarena.executor.run import execute_run, now_utc, record_failure, run_record
from ccarena.experiment import RunPlan
from ccarena.store import ExperimentStore
from ccarena.workers import WORKER_CONTEXT

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from rich.console import Console

    from ccarena.executor import ExperimentOutcome

Task = tuple[str, dict[str, Any]]
"""What a worker is given for one run: (experiment directory, :func:`run_record` of the run)."""

BREAKS_BEFORE_ALONE = 2
"""A run that was in this many broken pools is run alone (:func:`run_alone`)."""


class ProcessDied(RuntimeError):
    """The process running a run ended without returning it (killed by a signal, or exited);
    recorded as the run's failure, raised to the user as :class:`ccarena.errors.WorkerDied`."""

    @classmethod
    def from_exitcode(cls, exitcode: int | None) -> ProcessDied:
        """The failure for a process that ended with ``exitcode`` (as ``multiprocessing`` gives
        it: −N for signal N)."""
        if exitcode is not None and exitcode < 0:
            try:
                name = signal.Signals(-exitcode).name
            except ValueError:
                name = f"signal {-exitcode}"
            hint = (f" (what the kernel's out-of-memory killer sends: lower {option('jobs')} or "
                    "the run's size, or see dmesg)") if -exitcode == signal.SIGKILL else ""
            return cls(f"the worker process running it was killed by {name}{hint}")
        return cls(f"the worker process running it exited with status {exitcode} before the "
                   "run ended")


def worker_init() -> None:
    """Pool workers ignore SIGINT (the parent decides how a Ctrl-C ends the pool) and are tuned
    as the command line is (:func:`ccarena.process_setup.tune_process`)."""
    from ccarena.process_setup import tune_process

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tune_process()


def pool_task(task: Task) -> dict[str, Any]:
    """One run in a worker: :func:`ccarena.executor.run.execute_run`'s outcome."""
    # What the summary reads of the run comes back with its outcome (a few KB per run, pickled):
    # the parent does not read 400 runs back from disk for summary.parquet.
    return execute_run(*task, keep_summary_inputs=True)


def run_pool(pending: list[RunPlan], store: ExperimentStore, name: str, outcome: ExperimentOutcome,
             console: Console, show: bool, jobs: int, total: int) -> None:
    """Run ``pending`` on ``jobs`` worker processes (:data:`WORKER_CONTEXT`) with a bar over the
    experiment's runs, surviving workers that die (see the module's text); Ctrl-C terminates
    the workers.

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM; finished runs are kept, unfinished ones leave
            nothing in ``runs/``.
    """
    ctx = WORKER_CONTEXT
    with progress_bar(console, show) as bar:
        runs = bar.add_task(f"{name}: runs on {jobs} processes", total=total,
                            completed=len(outcome.skipped))

        def finished(result: dict[str, Any]) -> None:
            note_result(outcome, result)
            bar.advance(runs)

        tasks = [(str(store.root), run_record(plan, name)) for plan in pending]
        breaks: dict[str, int] = {}
        alone: list[Task] = []
        while tasks:
            broken = run_on_pool(tasks, jobs, ctx, finished)
            for task in broken:
                run_id = task[1]["run_id"]
                breaks[run_id] = breaks.get(run_id, 0) + 1
            alone += [t for t in broken if breaks[t[1]["run_id"]] >= BREAKS_BEFORE_ALONE]
            tasks = [t for t in broken if breaks[t[1]["run_id"]] < BREAKS_BEFORE_ALONE]
        for task in alone:
            finished(run_alone(task, ctx))


def run_on_pool(tasks: list[Task], jobs: int, ctx: Any,
                finished: Callable[[dict[str, Any]], None]) -> list[Task]:
    """Run ``tasks`` on a new pool of ``jobs`` workers, calling ``finished(outcome)`` for each run
    as it ends; returns the tasks the pool still held when a worker died (none when it did not).

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM (the workers are terminated first).
    """
    pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=worker_init)
    broken: list[Task] = []
    try:
        waiting = {pool.submit(pool_task, task): task for task in tasks}
        while waiting:
            # A timed wait: Ctrl-C (a KeyboardInterrupt in this thread) is seen meanwhile.
            done, _ = cf.wait(waiting, timeout=0.2, return_when=cf.FIRST_COMPLETED)
            for future in done:
                task = waiting.pop(future)
                try:
                    result = future.result()
                except cf.process.BrokenProcessPool:
                    broken.append(task)
                    continue
                finished(result)
    except BaseException:
        terminate(pool)
        raise
    pool.shutdown(wait=True)
    return broken


def terminate(pool: cf.ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: queued runs are dropped and running ones end with their workers
    (SIGTERM), leaving only their temporary directories (the store cleans those up)."""
    # ProcessPoolExecutor only gained terminate_workers() in Python 3.14; before, its processes
    # are reachable only through this attribute, which shutdown() clears: read it first.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join()


def run_alone(task: Task, ctx: Any) -> dict[str, Any]:
    """Run one task in a process of its own (from ``ctx``): its outcome, or, when the process
    dies without returning one, the run recorded as failed (:class:`ProcessDied`, with
    ``cause = "worker_died"`` and the process's ``exitcode``).

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM (the process is terminated first).
    """
    receive, send = ctx.Pipe(duplex=False)
    started = now_utc()
    process = ctx.Process(target=_alone_main, args=(pool_task, task, send), daemon=True)
    process.start()
    send.close()  # only the child writes: EOF once it has exited
    try:
        result = None
        while result is None and (process.is_alive() or receive.poll()):
            if receive.poll(0.2):
                try:
                    result = receive.recv()
                except EOFError:
                    break
        process.join()
    except BaseException:
        process.terminate()
        process.join()
        raise
    finally:
        receive.close()
    if result is not None:
        return result
    root, record = task
    try:
        raise ProcessDied.from_exitcode(process.exitcode)
    except ProcessDied as err:  # raised so that the failure record's traceback says where
        return record_failure(ExperimentStore(root), record, started, err,
                              cause="worker_died", exitcode=process.exitcode)


def _alone_main(work: Callable[[Task], dict[str, Any]], task: Task, send: Connection) -> None:
    """The process :func:`run_alone` starts: ``work(task)`` (:func:`pool_task`, named by the
    parent, as the pool's workers are given it) through ``send``."""
    worker_init()
    send.send(work(task))
    send.close()
