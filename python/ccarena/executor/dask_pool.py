"""Running an experiment's pending runs on a Dask cluster (docs/distributed.md): one task per run;
the worker writes the run into the shared experiment directory itself, with the same atomic run
directories as the process pool, so an experiment may be resumed by any executor.

* A worker that dies mid-run leaves at most a stray directory in ``.tmp/``; the scheduler gives
  its tasks to another worker (up to ``distributed.scheduler.allowed-failures`` times, then the run
  is recorded as failed).
* A run may complete twice (a worker presumed lost that finished after all, or one killed after
  the rename and before it reported): the second completion finds the run stored and keeps it;
  two writers racing keep the first rename (:meth:`ccarena.store.ExperimentStore.write_run`).
* Progress is fed from the futures as they complete; Ctrl-C (or SIGTERM) cancels the tasks not
  yet finished and keeps the finished runs; the next ``ccarena run`` does the rest.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import TYPE_CHECKING, Any

from ccarena.backends import MEMORY_BUDGET_ENV
from ccarena.errors import UserError
from ccarena.executor.clusters import dask_client, default_worker_count
from ccarena.executor.local import note_result, progress_bar
from ccarena.executor.run import execute_run, now_utc, record_failure, run_record
from ccarena.experiment import RunPlan
from ccarena.scenario import ExecutorOptions
from ccarena.store import ExperimentStore
from ccarena.store.guard import StoreError

if TYPE_CHECKING:
    from rich.console import Console
    from ccarena.executor import ExperimentOutcome


def dask_task(root: str, record: dict[str, Any], replace: bool,
              max_memory_bytes: int | None) -> dict[str, Any]:
    """What a Dask worker does for one run: :func:`ccarena.executor.run.execute_run` into the
    shared directory ``root``, unless the run is already stored there (a retried task) and
    ``replace`` is off.

    Raises:
        StoreError: this worker does not see the experiment directory (it is not on a file system
            shared with the machine that started the experiment, at the same path).
    """
    store = ExperimentStore(root)
    if not (store.root / "experiment.json").is_file():
        raise StoreError(f"{root}: the worker on {socket.gethostname()} does not see the experiment "
                         "directory; results must be on a file system every worker mounts at the "
                         "same path (docs/distributed.md)")
    if not replace and store.stored_spec_sha256(record["run_id"]) == record["spec_sha256"]:
        return {"run_id": record["run_id"], "status": "complete", "wall_s": 0.0, "reused": True}
    if max_memory_bytes is not None:
        os.environ[MEMORY_BUDGET_ENV] = str(max_memory_bytes)
    return execute_run(root, record, replace=replace)


def run_dask(pending: list[RunPlan], store: ExperimentStore, name: str, outcome: ExperimentOutcome,
             console: Console, show: bool, total: int, options: ExecutorOptions, *,
             replace: bool, max_memory_bytes: int | None) -> None:
    """Run ``pending`` on the cluster ``options`` names (:func:`ccarena.executor.clusters.dask_client`),
    one task per run, counting each outcome as its future completes.

    Raises:
        KeyboardInterrupt: Ctrl-C; the unfinished tasks are cancelled, finished runs kept.
        UserError: the cluster cannot be reached or started, or a worker cannot write the results.
    """
    try:
        _run_tasks(pending, store, name, outcome, console, show, total, options, replace=replace,
                   max_memory_bytes=max_memory_bytes)
    except BaseException:
        # Tasks already running when cancelled may have finished before their workers stopped:
        # count what is stored now, so the outcome names every finished run.
        noted = {*outcome.completed, *(f["run_id"] for f in outcome.failed)}
        outcome.completed.extend(p.run_id for p in pending
                                 if p.run_id not in noted and store.is_complete(p.run_id))
        raise


def _run_tasks(pending: list[RunPlan], store: ExperimentStore, name: str, outcome: ExperimentOutcome,
               console: Console, show: bool, total: int, options: ExecutorOptions, *,
               replace: bool, max_memory_bytes: int | None) -> None:
    """:func:`run_dask` until it ends or is interrupted (the cluster closed either way)."""
    # dask_client says in one line when the [dask] extra is missing: nothing of it before.
    with dask_client(options, min(default_worker_count(), len(pending))) as (client, where):
        from distributed import as_completed
        from distributed.client import FutureCancelledError
        from distributed.scheduler import KilledWorker

        if options.kind == "dask" and not client.scheduler_info().get("workers"):
            # Not an error (workers may be on their way), but a bar at 0 says nothing of why.
            console.print(f"{where} has no workers yet: the runs start when one joins (`dask "
                          f"worker {options.scheduler}`)", markup=False, highlight=False,
                          soft_wrap=True)
        records = {plan.run_id: run_record(plan, name) for plan in pending}
        # Keys unique to this invocation: another experiment on the same scheduler never shares them.
        token = uuid.uuid4().hex[:12]
        futures = []
        try:
            with progress_bar(console, show) as bar:
                runs = bar.add_task(f"{name}: runs on {where}", total=total,
                                    completed=len(outcome.skipped))
                futures = [client.submit(dask_task, str(store.root), record, replace, max_memory_bytes,
                                         key=f"ccarena-{token}-{run_id}", pure=False)
                           for run_id, record in records.items()]
                by_key = {f.key: run_id for f, run_id in zip(futures, records)}
                # This client's loop: as_completed would take the default client's, which is
                # another one when the caller holds a client of its own (a notebook's).
                for future in as_completed(futures, loop=client.loop):
                    try:
                        result = future.result()
                    except KilledWorker as err:  # the run killed every worker it was given
                        record = records[by_key[future.key]]
                        result = record_failure(store, record, now_utc(), err,
                                                cause="worker_died", exitcode=None)
                    except FutureCancelledError:
                        raise UserError(f"{where}: the cluster cancelled this experiment's tasks "
                                        "(another client cancelled them, or the scheduler "
                                        "restarted); finished runs are kept — run the same "
                                        "command again") from None
                    except UserError:
                        raise
                    except Exception as err:  # not the run (execute_run keeps those): the worker
                        raise UserError(f"{where}: a worker could not run {by_key[future.key]} "
                                        f"({type(err).__name__}: {err}); every worker needs the "
                                        "same ccarena installed — finished runs are kept") from None
                    note_result(outcome, result)
                    bar.advance(runs)
        except BaseException:
            if futures:
                client.cancel(futures)
            raise

