"""Executing an experiment's runs: skip the finished ones, run the rest on a local process pool
(or in this process for ``jobs = 1`` or a single run) or on a Dask cluster
(:mod:`ccarena.executor.dask_pool`, ``[executor]`` / ``--executor``), show progress with rich, stop
cleanly on Ctrl-C.

Each run is executed by :func:`ccarena.executor.run.execute_run`: backend → metrics → an atomic write of the run
directory (:class:`ccarena.store.ExperimentStore`). A run is therefore either complete on disk or
absent; Ctrl-C keeps every finished run, and the next ``ccarena run`` of the same scenario does
only the missing ones.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Union

from ccarena.backends import MEMORY_BUDGET_ENV, get_backend, options_table
from ccarena.errors import EngineFault, RunFailed, UserError, WorkerDied, option
from ccarena.executor.clusters import check_executor
from ccarena.executor.dask_pool import run_dask
from ccarena.executor.local import run_here, start_here, stop_started
from ccarena.executor.process_pool import run_pool
from ccarena.executor.run import execute_run, run_record
from ccarena.executor.sizing import MachineLimit, machine_limit, size_workers
from ccarena.experiment import RunPlan, apply_backends, expand
from ccarena.experiment.budget import check_budget
from ccarena.runspec import TCP_DEFAULTS, UDP_DEFAULTS
from ccarena.scenario import ExecutorOptions, LoadedScenario
from ccarena.store import ExperimentStore
from ccarena.store.guard import StoreError, check_tree, experiment_lock
from ccarena.store.run_record import experiment_record, software_versions

if TYPE_CHECKING:
    from rich.console import Console

ConsoleOrFactory = Union["Console", Callable[[], "Console"]]
"""Where progress goes: a rich Console, or a function returning one, called once output is due
(so rich loads while the first run works)."""

__all__ = ["ExperimentOutcome", "execute_run", "experiment_meta", "run_experiment", "run_record",
           "software_versions"]


@dataclass
class ExperimentOutcome:
    """What :func:`run_experiment` did.

    Attributes:
        root: the experiment directory.
        plans: every run of the experiment, in order.
        completed: ids of runs executed now.
        skipped: ids of runs already complete before (not redone).
        failed: outcome dicts of runs the engine failed on.
        interrupted: True when Ctrl-C stopped the experiment.
        summary_inputs: what summary.parquet reads of each run completed in this process, by
            run id (:func:`ccarena.store.summary.summary_inputs`), so it is not read back from
            disk; emptied once the summary is written.
    """

    root: Path
    plans: list[RunPlan]
    completed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    summary_inputs: dict[str, Any] = field(default_factory=dict, repr=False)

    def raise_for_failures(self) -> None:
        """Raise for the first failed run, if any: :class:`WorkerDied` when its process ended
        without returning it (a signal, an exit), :class:`EngineFault` when an error was raised
        while it executed. Both are :class:`RunFailed`."""
        if self.failed:
            raise self.failure(self.failed[0])

    def failure(self, failed: dict[str, Any]) -> RunFailed:
        """The exception for one entry of :attr:`failed` (mentioning how many more failed)."""
        plan = next(p for p in self.plans if p.run_id == failed["run_id"])
        extra = f" ({len(self.failed) - 1} more failed runs in {self.root / 'failed'})" \
            if len(self.failed) > 1 else ""
        about = {"run_id": plan.run_id, "seed": plan.seed, "spec": plan.resolved.spec.to_dict(),
                 "replay_path": failed.get("replay_path")}
        if failed.get("cause") == "worker_died":
            return WorkerDied(failed.get("message", failed["error"]) + extra,
                              exitcode=failed.get("exitcode"), **about)
        return EngineFault(failed["error"] + extra, **about)


def experiment_meta(loaded: LoadedScenario, plans: list[RunPlan]) -> dict[str, Any]:
    """experiment.json: the scenario as given and as resolved (per run), its parts (name,
    description, swept parameters, matrix, report references), defaults, versions."""
    sweep = loaded.scenario.sweep
    parts = []
    for part in loaded.parts:
        s, m = part.scenario.sweep, part.scenario.matrix
        parts.append({
            "name": part.name, "description": part.description,
            "parameters": list(s.parameters) if s else (["matrix_row", "matrix_col"] if m else []),
            "repeats": s.repeats if s else (m.repeats if m else 1),
            "matrix": {"flavors": m.flavors, "stagger_s": m.stagger_ns / 1e9} if m else None,
            "report": part.raw.get("report", {}),
        })
    return experiment_record(
        name=loaded.scenario.name, scenario_file=loaded.source, scenario_text=loaded.text,
        scenario=loaded.raw,
        sweep={"parameters": sweep.parameters if sweep else {}, "repeats": sweep.repeats if sweep else 1},
        parts=parts, defaults={"tcp": TCP_DEFAULTS, "udp": UDP_DEFAULTS},
        runs=[{"run_id": p.run_id, "point": p.point, "repeat": p.repeat, "seed": p.seed,
               "params": p.params, "part": p.part, "backend": p.backend,
               "spec_sha256": p.resolved.spec_sha256(),
               "spec": p.resolved.spec.to_dict()} for p in plans])


def check_store(store: ExperimentStore, plans: list[RunPlan], force: bool) -> None:
    """Refuse to mix runs of different scenarios in one directory (unless ``force``).

    Raises:
        UserError: a stored run has the same id but was made from a different spec.
    """
    if force:
        return
    for plan in plans:
        stored = store.stored_spec_sha256(plan.run_id)
        if stored is not None and stored != plan.resolved.spec_sha256():
            raise UserError(f"{store.run_dir(plan.run_id)} was made from a different scenario; "
                            f"rerun with {option('force')} to redo it, or write to another "
                            f"directory with {option('out')}")


def run_experiment(loaded: LoadedScenario, root: str | Path, *, jobs: int | None = None,
                   force: bool = False, console: ConsoleOrFactory | None = None,
                   show_progress: bool = True,
                   backends: list[str] | None = None,
                   max_memory_bytes: int | None = None,
                   executor: ExecutorOptions | None = None,
                   while_running: Callable[[], None] | None = None) -> ExperimentOutcome:
    """Expand, check, and execute an experiment into ``root``; write experiment.json and
    summary.parquet.

    Args:
        loaded: the validated scenario.
        root: the experiment directory (created if needed; nothing is written before the
            scenario and the directory have been checked).
        jobs: worker processes (default: all cores); 1 runs in this process. At most one per
            core, per run, and as many as the available memory holds
            (:mod:`ccarena.executor.sizing`); a larger count is lowered with one line.
        force: redo runs already complete (and drop stored runs no longer in the experiment).
        console: where progress goes (default: stderr), or a function returning it.
        show_progress: draw progress bars.
        backends: run every run on each of these (e.g. the simulator and the kernel); default:
            the scenario's ``backend``. Real-time runs (kernel, udp) execute one at a time in
            this process, after the simulator's.
        max_memory_bytes: per-run memory budget (:func:`ccarena.experiment.budget.check_budget`;
            None = half this machine's memory).
        executor: where the runs execute (default: the scenario's ``[executor]``, a process pool
            unless it says otherwise); ``jobs`` is then the default of a ``dask-local`` cluster's
            workers. Real-time (kernel) runs always execute here, one at a time.
        while_running: called once in this process while the first run works, when runs
            execute here (``jobs = 1`` or a single run on the simulator: the engine runs on a
            thread of its own, the GIL released): e.g. to load what the caller needs afterwards.

    Raises:
        UserError: the scenario expands into an invalid run, a run is over the memory budget,
            ``root`` holds another scenario's runs, the kernel cannot run a kernel run, or the
            executor is misconfigured (checked before anything is written); the Dask cluster
            cannot be reached or started.
    """
    plans = apply_backends(expand(loaded), backends)
    check_budget(plans, max_memory_bytes)
    if max_memory_bytes is not None:  # the engine's own stop, in this process and pool workers
        os.environ[MEMORY_BUDGET_ENV] = str(max_memory_bytes)
    realtime = _check_backends(plans)
    executor = executor or loaded.scenario.executor
    check_executor(executor)
    limit = machine_limit(p for p in plans if p.backend not in realtime)
    root = Path(root)
    check_tree(root)
    if root.exists() and not root.is_dir():
        raise UserError(f"{root}: exists and is not a directory")
    store = ExperimentStore(root)
    check_store(store, plans, force)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError.from_os_error(root, err) from None
    # Runs executed here: the first starts now and works (the GIL released) while this thread
    # takes the directory's lock, writes experiment.json and loads what storing a run needs. It
    # only computes until then: if the lock is refused, or another writer completed the run
    # meanwhile, it is stopped and nothing of it is written.
    started = _start_first(plans, store, realtime, executor, limit, jobs=jobs, force=force,
                           name=loaded.scenario.name)
    try:
        with experiment_lock(root):
            return _run_locked(loaded, plans, realtime, store, jobs=jobs, force=force,
                               console=console, show_progress=show_progress,
                               executor=executor, max_memory_bytes=max_memory_bytes,
                               while_running=while_running, started=started, limit=limit)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM while the lock was being taken
        return ExperimentOutcome(root=root, plans=plans, interrupted=True)
    finally:
        stop_started(started)  # any not reached (an error before it)


def _split(plans: list[RunPlan], store: ExperimentStore, realtime: set[str],
           force: bool) -> tuple[list[str], list[RunPlan], list[RunPlan]]:
    """The experiment's runs as (already complete: their ids, to run on a pool or here, to run
    here in real time)."""
    skipped, pending = [], []
    for plan in plans:
        if not force and store.is_complete(plan.run_id):
            skipped.append(plan.run_id)
        else:
            pending.append(plan)
    in_real_time = [p for p in pending if p.backend in realtime]
    pending = [p for p in pending if p.backend not in realtime]
    return skipped, pending, in_real_time


def _start_first(plans: list[RunPlan], store: ExperimentStore, realtime: set[str],
                 executor: ExecutorOptions, limit: MachineLimit, *, jobs: int | None, force: bool,
                 name: str) -> dict[str, Any]:
    """When the runs execute in this process, start the first in the background
    (:func:`ccarena.executor.local.start_here`): ``{run_id: started}``, else empty."""
    _, pending, _ = _split(plans, store, realtime, force)
    if not pending or executor.kind != "process" or limit.workers(jobs, len(pending)) != 1:
        return {}
    early = start_here(pending[0], name)
    return {pending[0].run_id: early} if early is not None else {}


def _run_locked(loaded: LoadedScenario, plans: list[RunPlan], realtime: set[str],
                store: ExperimentStore, *, jobs: int | None, force: bool,
                console: ConsoleOrFactory | None, show_progress: bool,
                executor: ExecutorOptions, max_memory_bytes: int | None,
                while_running: Callable[[], None] | None = None,
                started: dict[str, Any] | None = None,
                limit: MachineLimit | None = None) -> ExperimentOutcome:
    """:func:`run_experiment` once the directory is checked and locked; ``started``: runs
    :func:`_start_first` started (stopped here if they are no longer to be run); ``limit``:
    what this machine allows the workers (default: measured now)."""
    root = store.root
    outcome = ExperimentOutcome(root=root, plans=plans)
    outcome.skipped, pending, in_real_time = _split(plans, store, realtime, force)
    limit = limit if limit is not None else machine_limit(pending)
    jobs, executor, notes = size_workers(executor, loaded.scenario.executor, jobs, len(pending),
                                         limit)
    name = loaded.scenario.name
    started = started if started is not None else {}
    for run_id in [r for r in started if not pending or r != pending[0].run_id]:
        started.pop(run_id)[0].cancel()  # completed by another writer before the lock was ours
    try:
        try:
            store.cleanup_tmp()
            store.write_experiment(experiment_meta(loaded, plans))
            if force:
                wanted = {p.run_id for p in plans}
                for run_id in store.complete_runs():
                    if run_id not in wanted:
                        store.remove_run(run_id)
        except OSError as err:
            raise StoreError.from_os_error(root, err) from None
        if started and while_running is not None:
            while_running()
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM before any run was stored (the first run may have been working
        # meanwhile): stopped like an interrupted experiment, every finished run kept. (Any
        # other error: run_experiment stops the started run.)
        outcome.interrupted = True
    console = _console(console) if not outcome.interrupted else None
    if console is not None and pending:
        for line in notes:
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    summary_error: StoreError | None = None
    try:
        if outcome.interrupted:
            pass
        elif pending:
            if executor.kind != "process":
                run_dask(pending, store, name, outcome, console, show_progress, len(plans), executor,
                         replace=force, max_memory_bytes=max_memory_bytes)
            elif jobs == 1:
                run_here(pending, store, name, outcome, console, show_progress, len(plans),
                         started=started)
            else:
                run_pool(pending, store, name, outcome, console, show_progress, jobs, len(plans))
        if in_real_time and not outcome.interrupted:  # never in the pool, never beside another run
            run_here(in_real_time, store, name, outcome, console, show_progress, len(plans))
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        stop_started(started)  # any run_here did not reach, before the summary is written
        try:
            store.cleanup_tmp()
            done = [p for p in plans if store.is_complete(p.run_id)]
            if done:
                from ccarena.store import build_summary
                from ccarena.store.summary import summary_fingerprint

                # Re-running a finished experiment reads no run back: the stored summary is
                # kept when it was built from these very run files by this code.
                inputs = summary_fingerprint(store, [p.run_id for p in done])
                if outcome.completed or force or store.summary_inputs() != inputs:
                    store.write_summary(build_summary(store, done, known=outcome.summary_inputs),
                                        inputs=inputs)
                outcome.summary_inputs.clear()  # the tables are not kept past the summary
        except OSError as err:
            summary_error = StoreError.from_os_error(root, err)
    if summary_error is not None:
        raise summary_error
    return outcome


def _console(console: ConsoleOrFactory | None) -> Console:
    """The Console ``console`` names (a Console, or a function returning one); stderr's by
    default."""
    from rich.console import Console

    if console is None:
        return Console(stderr=True)
    return console if isinstance(console, Console) else console()


def _check_backends(plans: list[RunPlan]) -> set[str]:
    """Check every run against its backend (one backend object per name and options, so what a
    backend detects is detected once) and return the names of the real-time backends.

    Raises:
        UserError: a backend cannot run a run on this machine.
    """
    backends: dict[tuple[str, str], Any] = {}
    realtime: set[str] = set()
    for plan in plans:
        options = _options_of(plan)
        key = (plan.backend, repr(sorted(options.items())))
        if key not in backends:
            backends[key] = get_backend(plan.backend, options)
        backend = backends[key]
        backend.check(plan.resolved.spec)
        if backend.realtime:
            realtime.add(plan.backend)
    return realtime


def _options_of(plan: RunPlan) -> dict[str, Any]:
    """The scenario's table of options for the plan's backend (``[kernel]``), if it has one; the
    udp backend runs on the kernel backend's testbed and takes ``[kernel]`` too."""
    table = getattr(plan.scenario, options_table(plan.backend), None)
    return table.model_dump() if table is not None else {}
