"""Executing an experiment's runs: skip the finished ones, run the rest on a local process pool
(or in this process for ``jobs = 1`` or a single run), show progress with rich, stop cleanly on
Ctrl-C.

Each run is executed by :func:`execute_run`: engine → metrics → an atomic write of the run
directory (:class:`ccarena.store.ExperimentStore`). A run is therefore either complete on disk or
absent; Ctrl-C keeps every finished run, and the next ``ccarena run`` of the same scenario does
only the missing ones.
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import signal
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from ccarena import metrics
from ccarena.errors import EngineFault, UserError
from ccarena.experiment import RunPlan, expand
from ccarena.resolve import TCP_DEFAULTS, UDP_DEFAULTS
from ccarena.scenario import LoadedScenario
from ccarena.store import STORE_FORMAT, ExperimentStore


def software_versions() -> dict[str, str]:
    """Versions of ccarena, Python, the engine and the libraries that shape the numbers."""
    import duckdb
    import numpy
    import pandas
    import pyarrow

    from ccarena import __version__

    versions = {"ccarena": __version__, "python": platform.python_version(),
                "numpy": numpy.__version__, "pandas": pandas.__version__,
                "pyarrow": pyarrow.__version__, "duckdb": duckdb.__version__,
                "platform": platform.platform()}
    try:
        from ccarena import _engine

        versions["engine"] = str(getattr(_engine, "__version__", "unknown"))
    except ImportError:
        versions["engine"] = "not built"
    return versions


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_record(plan: RunPlan, experiment: str) -> dict[str, Any]:
    """The run.json content known before the run (timings and status are added after)."""
    return {
        "format": STORE_FORMAT, "run_id": plan.run_id, "experiment": experiment,
        "point": plan.point, "repeat": plan.repeat, "seed": plan.seed, "params": plan.params,
        "part": plan.part, "matrix": list(plan.matrix) if plan.matrix else None,
        "backend": plan.backend, "spec_sha256": plan.resolved.spec_sha256(),
        "spec": plan.resolved.spec, "derived": plan.resolved.derived, "scenario": plan.raw,
        "kernel": plan.scenario.kernel.model_dump(),
    }


def execute_run(root: str, record: dict[str, Any],
                progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Run one run and store it: engine → metrics → atomic run directory.

    Args:
        root: the experiment directory.
        record: :func:`run_record` of the run.
        progress: ``progress(now_ns, duration_ns)`` between chunks of simulated time.

    Returns:
        ``{"run_id", "status": "complete"}`` or ``{"run_id", "status": "failed", "error",
        "replay_path"}`` (the failure is also written to ``failed/<run_id>.json``).

    Raises:
        KeyboardInterrupt: Ctrl-C; nothing of the run is left in ``runs/``.
    """
    from ccarena.engine import run_spec

    store = ExperimentStore(root)
    spec = record["spec"]
    started, t0 = _now(), time.perf_counter()
    emulation: dict[str, Any] = {}
    try:
        if record.get("backend", "sim") == "kernel":
            # The real TCP stack: one run at a time, in this process (see run_experiment).
            from ccarena.kernel.backend import run_kernel

            mode = (record.get("kernel") or {}).get("emulation", "auto")
            tables = run_kernel(spec, progress=progress, mode=mode, emulation=emulation)
        else:
            tables = run_spec(spec, progress=progress)
        wall_s = time.perf_counter() - t0
        duration_s = spec["duration_ns"] / 1e9
        interval_s = spec["sample_interval_ns"] / 1e9
        derived = record["derived"]
        flows = metrics.flow_table(tables["flows"], tables["samples"], derived, duration_s, interval_s)
        links = metrics.link_table(tables["links"], tables["queues"], derived, duration_s)
        regions = metrics.region_table(tables["flows"], tables["samples"], duration_s, interval_s)
        names = dict(zip(tables["flows"]["flow"], tables["flows"]["name"]))
        samples = tables["samples"].copy()
        samples.insert(2, "name", samples["flow"].map(names).astype("string"))
        queues = tables["queues"].copy()
        queues.insert(2, "link_name", queues["link"].map(dict(zip(links["link"], links["name"]))).astype("string"))
        out = {"flows": flows, "samples": samples, "queues": queues, "links": links, "regions": regions}
        for df in out.values():
            df.insert(0, "run_id", record["run_id"])
        full = dict(record, status="complete",
                    summary=metrics.run_summary(flows, links, regions),
                    timing={"started": started, "finished": _now(), "wall_s": wall_s,
                            "simulated_s": duration_s,
                            "simulated_per_wall": duration_s / wall_s if wall_s > 0 else None},
                    software=software_versions())
        if emulation:
            full["emulation"] = emulation  # how the kernel emulated the links, and its error
        store.write_run(record["run_id"], full, out)
        return {"run_id": record["run_id"], "status": "complete", "wall_s": wall_s}
    except (KeyboardInterrupt, SystemExit):
        raise
    except UserError as err:
        if record.get("backend", "sim") == "kernel":
            raise  # this machine cannot run it: one line for the user, not an engine fault
        return _failed(store, record, started, err)
    except BaseException as err:  # an engine fault, a Rust panic, or a metrics bug: keep the spec
        return _failed(store, record, started, err)


def _failed(store: ExperimentStore, record: dict[str, Any], started: str,
            err: BaseException) -> dict[str, Any]:
    """Record a failed run in ``failed/<run_id>.json`` and return its outcome."""
    failure = dict(record, status="failed", error=f"{type(err).__name__}: {err}",
                   traceback=traceback.format_exc(), timing={"started": started, "failed": _now()},
                   software=software_versions())
    path = store.write_failure(record["run_id"], failure)
    return {"run_id": record["run_id"], "status": "failed",
            "error": f"{type(err).__name__}: {err}", "replay_path": str(path)}


def _worker_init() -> None:
    """Pool workers ignore SIGINT: the parent decides how a Ctrl-C ends the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _pool_task(args: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return execute_run(*args)


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
    """

    root: Path
    plans: list[RunPlan]
    completed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False

    def raise_for_failures(self) -> None:
        """Raise :class:`EngineFault` for the first failed run, if any."""
        if self.failed:
            first = self.failed[0]
            plan = next(p for p in self.plans if p.run_id == first["run_id"])
            extra = f" ({len(self.failed) - 1} more failed runs in {self.root / 'failed'})" \
                if len(self.failed) > 1 else ""
            raise EngineFault(first["error"] + extra, run_id=plan.run_id, seed=plan.seed,
                              spec=plan.resolved.spec, replay_path=first.get("replay_path"))


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
    return {
        "format": STORE_FORMAT,
        "name": loaded.scenario.name,
        "updated": _now(),
        "scenario_file": loaded.source,
        "scenario_text": loaded.text,
        "scenario": loaded.raw,
        "sweep": {"parameters": sweep.parameters if sweep else {},
                  "repeats": sweep.repeats if sweep else 1},
        "parts": parts,
        "defaults": {"tcp": TCP_DEFAULTS, "udp": UDP_DEFAULTS},
        "runs": [{"run_id": p.run_id, "point": p.point, "repeat": p.repeat, "seed": p.seed,
                  "params": p.params, "part": p.part, "backend": p.backend,
                  "spec_sha256": p.resolved.spec_sha256(),
                  "spec": p.resolved.spec} for p in plans],
        "software": software_versions(),
    }


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
                            "rerun with --force to redo it, or write to another directory with --out")


def run_experiment(loaded: LoadedScenario, root: str | Path, *, jobs: int | None = None,
                   force: bool = False, console: Console | None = None,
                   show_progress: bool = True,
                   backends: list[str] | None = None) -> ExperimentOutcome:
    """Expand, check, and execute an experiment into ``root``; write experiment.json and
    summary.parquet.

    Args:
        loaded: the validated scenario.
        root: the experiment directory (created if needed; nothing is written before the
            scenario and the directory have been checked).
        jobs: worker processes (default: all cores); 1 runs in this process.
        force: redo runs already complete (and drop stored runs no longer in the experiment).
        console: where progress goes (default: stderr).
        show_progress: draw progress bars.
        backends: run every run on each of these (``["sim", "kernel"]``); default: the
            scenario's ``backend``. Kernel runs execute one at a time in this process, after the
            simulator's.

    Raises:
        UserError: the scenario expands into an invalid run, ``root`` holds another scenario's
            runs, or the kernel cannot run a kernel run (checked before anything is written).
    """
    from ccarena.results import build_summary

    from ccarena.backends import apply_backends

    plans = apply_backends(expand(loaded), backends)
    kernel_plans = [p for p in plans if p.backend == "kernel"]
    if kernel_plans:
        from ccarena.kernel.backend import check as kernel_check

        caps = None
        for plan in kernel_plans:
            caps = kernel_check(plan.resolved.spec, caps, plan.scenario.kernel.emulation)
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise UserError(f"{root}: exists and is not a directory")
    store = ExperimentStore(root)
    check_store(store, plans, force)
    root.mkdir(parents=True, exist_ok=True)
    store.cleanup_tmp()
    store.write_experiment(experiment_meta(loaded, plans))
    if force:
        wanted = {p.run_id for p in plans}
        for run_id in store.complete_runs():
            if run_id not in wanted:
                store.remove_run(run_id)
    outcome = ExperimentOutcome(root=root, plans=plans)
    pending = []
    for plan in plans:
        if not force and store.is_complete(plan.run_id):
            outcome.skipped.append(plan.run_id)
        else:
            pending.append(plan)
    on_kernel = [p for p in pending if p.backend == "kernel"]
    pending = [p for p in pending if p.backend != "kernel"]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(pending) or 1))
    console = console or Console(stderr=True)
    name = loaded.scenario.name
    try:
        if pending:
            if jobs == 1:
                _run_here(pending, store, name, outcome, console, show_progress, len(plans))
            else:
                _run_pool(pending, store, name, outcome, console, show_progress, jobs, len(plans))
        if on_kernel:  # real time: never in the pool, never beside another run
            _run_here(on_kernel, store, name, outcome, console, show_progress, len(plans))
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        store.cleanup_tmp()
        done = [p for p in plans if store.is_complete(p.run_id)]
        if done:
            store.write_summary(build_summary(store, done))
    return outcome


def _progress(console: Console, enabled: bool) -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, disable=not enabled, transient=False)


def _note(outcome: ExperimentOutcome, result: dict[str, Any]) -> None:
    if result["status"] == "complete":
        outcome.completed.append(result["run_id"])
    else:
        outcome.failed.append(result)


def _run_here(pending: list[RunPlan], store: ExperimentStore, name: str, outcome: ExperimentOutcome,
              console: Console, show: bool, total: int) -> None:
    """Run in this process, one after another, with a bar over simulated time."""
    with _progress(console, show) as bar:
        runs = bar.add_task(f"{name}: runs", total=total, completed=len(outcome.skipped))
        for plan in pending:
            duration_s = plan.resolved.spec["duration_ns"] / 1e9
            sim = bar.add_task(f"{plan.run_id}: simulated s", total=duration_s)

            def tick(now_ns: int, duration_ns: int, task=sim) -> None:
                bar.update(task, completed=now_ns / 1e9)

            result = execute_run(str(store.root), run_record(plan, name), tick)
            bar.remove_task(sim)
            _note(outcome, result)
            bar.advance(runs)


def _run_pool(pending: list[RunPlan], store: ExperimentStore, name: str, outcome: ExperimentOutcome,
              console: Console, show: bool, jobs: int, total: int) -> None:
    """Run on ``jobs`` spawned worker processes; Ctrl-C terminates them (their unfinished runs
    leave nothing in ``runs/``)."""
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(processes=jobs, initializer=_worker_init)
    try:
        with _progress(console, show) as bar:
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
                _note(outcome, result)
                bar.advance(runs)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
