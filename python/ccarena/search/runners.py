"""Where a search's trials run: the executors' per-run functions behind one call per batch, with
the workers kept across batches (a search runs many small batches; a new pool or Dask cluster per
batch would cost more than the runs).

- :class:`HereRunner`: in this process, one run after another
  (:func:`ccarena.executor.run.execute_run`, as ``ccarena run -j 1`` does);
- :class:`PoolRunner`: a local process pool of spawned workers, each run through
  :func:`ccarena.executor.process_pool.pool_task` (the pool ``ccarena run`` uses; a worker that
  dies fails the runs the pool held, and a new pool takes the next batch);
- :class:`DaskRunner`: a Dask cluster (:func:`ccarena.executor.clusters.dask_client`: ``dask``,
  ``dask-local``, ``slurm``), each run a :func:`ccarena.executor.dask_pool.dask_task` writing into
  the shared directory.

Every runner takes a batch of :class:`ccarena.experiment.RunPlan` and returns, by run id, the
outcome dict :func:`ccarena.executor.run.execute_run` returns.
"""

from __future__ import annotations

import concurrent.futures as cf
import uuid
from contextlib import ExitStack
from typing import Any

from ccarena.errors import UserError
from ccarena.executor.run import execute_run, run_record
from ccarena.experiment import RunPlan
from ccarena.scenario import ExecutorOptions

Outcomes = dict[str, dict[str, Any]]
"""Run id → :func:`ccarena.executor.run.execute_run`'s outcome."""


class HereRunner:
    """Runs each batch in this process, one run after another."""

    def __init__(self, root: str, name: str) -> None:
        self.root, self.name, self.where = root, name, "this process"

    def __enter__(self) -> HereRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def run(self, plans: list[RunPlan]) -> Outcomes:
        """Execute ``plans`` and store them; their outcomes by run id."""
        return {p.run_id: execute_run(self.root, run_record(p, self.name), spec=p.resolved.spec,
                                      keep_summary_inputs=True) for p in plans}


class PoolRunner:
    """Runs each batch on one process pool of ``jobs`` workers, kept for the whole search."""

    def __init__(self, root: str, name: str, jobs: int) -> None:
        self.root, self.name, self.jobs = root, name, jobs
        self.where = f"{jobs} processes"
        self._pool: cf.ProcessPoolExecutor | None = None

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        from ccarena.executor.process_pool import worker_init
        from ccarena.workers import WORKER_CONTEXT

        return cf.ProcessPoolExecutor(max_workers=self.jobs, mp_context=WORKER_CONTEXT,
                                      initializer=worker_init)

    def __enter__(self) -> PoolRunner:
        self._pool = self._new_pool()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        from ccarena.executor.process_pool import terminate

        if self._pool is not None:
            if exc_type is None:
                self._pool.shutdown(wait=True)
            else:  # Ctrl-C or an error: stop the workers now
                terminate(self._pool)
            self._pool = None

    def run(self, plans: list[RunPlan]) -> Outcomes:
        """Execute ``plans`` on the pool; a run whose worker died is a failed outcome."""
        from ccarena.executor.process_pool import pool_task

        assert self._pool is not None
        futures = {self._pool.submit(pool_task, (self.root, run_record(p, self.name))): p
                   for p in plans}
        out: Outcomes = {}
        broken = False
        for future in cf.as_completed(futures):
            plan = futures[future]
            try:
                out[plan.run_id] = future.result()
            except cf.process.BrokenProcessPool:
                broken = True
                out[plan.run_id] = {"run_id": plan.run_id, "status": "failed",
                                    "error": "the worker process running it died (a signal, "
                                             "or memory)"}
        if broken:  # the next batch gets fresh workers
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._new_pool()
        return out


class DaskRunner:
    """Runs each batch on a Dask cluster opened once for the whole search."""

    def __init__(self, root: str, name: str, options: ExecutorOptions, jobs: int,
                 max_memory_bytes: int | None) -> None:
        self.root, self.name, self.options, self.jobs = root, name, options, jobs
        self.max_memory_bytes = max_memory_bytes
        self.where = options.kind
        self._scope = ExitStack()
        self._client: Any = None
        self._token = uuid.uuid4().hex[:12]

    def __enter__(self) -> DaskRunner:
        from ccarena.executor.clusters import dask_client

        with ExitStack() as scope:
            self._client, self.where = scope.enter_context(dask_client(self.options, self.jobs))
            self._scope = scope.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._scope.close()

    def run(self, plans: list[RunPlan]) -> Outcomes:
        """Execute ``plans`` as one task each; a task the cluster could not run (a worker killed
        every time) is a failed outcome.

        Raises:
            UserError: a worker cannot run ccarena's tasks at all (not the same install).
        """
        from distributed.scheduler import KilledWorker

        from ccarena.executor.dask_pool import dask_task

        futures = [self._client.submit(dask_task, self.root, run_record(p, self.name), True,
                                       self.max_memory_bytes, key=f"ccarena-search-{self._token}-{p.run_id}",
                                       pure=False) for p in plans]
        out: Outcomes = {}
        for plan, future in zip(plans, futures):
            try:
                out[plan.run_id] = future.result()
            except KilledWorker as err:
                out[plan.run_id] = {"run_id": plan.run_id, "status": "failed",
                                    "error": f"every worker given it died ({err})"}
            except UserError:
                raise
            except Exception as err:  # not the run (execute_run keeps those): the worker
                raise UserError(f"{self.where}: a worker could not run {plan.run_id} "
                                f"({type(err).__name__}: {err}); every worker needs the same "
                                "ccarena installed") from None
        return out


def open_runner(root: str, name: str, options: ExecutorOptions, jobs: int,
                max_memory_bytes: int | None) -> HereRunner | PoolRunner | DaskRunner:
    """The runner for ``options`` (``process``: this process for one job, else a pool of
    ``jobs``), to be entered with ``with``."""
    if options.kind != "process":
        return DaskRunner(root, name, options, jobs, max_memory_bytes)
    return HereRunner(root, name) if jobs == 1 else PoolRunner(root, name, jobs)
