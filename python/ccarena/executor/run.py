"""One run, executed and stored: backend → metrics → an atomic run directory.

:func:`execute_run` is what a worker process (or this process) does for each run. A run is
either complete on disk or absent (:class:`ccarena.store.ExperimentStore`); a run the backend
fails on is written to ``failed/<run_id>.json`` with its spec and seed for replay.
"""

from __future__ import annotations

import shutil
import time
import traceback
from typing import Any, Callable

from ccarena.backends import (
    SUBFLOW_TABLE,
    PendingRun,
    RunResult,
    get_backend,
    options_models,
    options_table,
    reference_backend,
)
from ccarena.errors import RunTooLarge, UserError
from ccarena.experiment import RunPlan
from ccarena.runspec import RunSpec
from ccarena.store import ExperimentStore
from ccarena.store.guard import StoreError
from ccarena.store.run_record import now_utc, with_outcome
from ccarena.store.run_record import run_record as store_run_record


def run_record(plan: RunPlan, experiment: str) -> dict[str, Any]:
    """The run.json content known before the run (timings and status are added after):
    :func:`ccarena.store.run_record.run_record` of the plan."""
    return store_run_record(
        run_id=plan.run_id, experiment=experiment, point=plan.point, repeat=plan.repeat,
        seed=plan.seed, params=plan.params, part=plan.part,
        matrix=list(plan.matrix) if plan.matrix else None,
        spec_sha256=plan.resolved.spec_sha256(), spec=plan.resolved.spec.to_dict(),
        derived=plan.resolved.derived, scenario=plan.raw, backend=plan.backend,
        backend_options=_options_tables(plan))


def backend_fields(plan: RunPlan) -> dict[str, Any]:
    """The fields of :func:`run_record` that say how the run executes (``backend`` and the
    scenario's backend options tables, :func:`backend_options`): all :func:`start_run` reads,
    cheap to build where the whole record (the spec as a dict: ~20 ms at 1,000 flows) would delay
    the run's start."""
    return {"backend": plan.backend, **_options_tables(plan)}


def _options_tables(plan: RunPlan) -> dict[str, dict[str, Any]]:
    """Every backend options table of the plan's scenario (``{"kernel": {...}}``), as stored in
    its record whatever its backend."""
    return {table: getattr(plan.scenario, table).model_dump() for table in options_models()}


def backend_options(record: dict[str, Any]) -> dict[str, Any]:
    """A backend's options: the scenario table its backend declares (``[kernel]`` for ``kernel``
    and for ``udp``, which runs on the kernel backend's testbed; ``[engine]`` for the simulator,
    none in a record written before it had one)."""
    return dict(record.get(options_table(_backend_of(record))) or {})


def _backend_of(record: dict[str, Any]) -> str:
    """The record's backend (the simulator for a record written before records named it)."""
    return str(record.get("backend", reference_backend()))


def start_run(record: dict[str, Any], spec: RunSpec,
              progress: Callable[[int, int], None] | None = None) -> PendingRun | None:
    """Start ``record``'s run in the background when its backend can (the simulator: on a thread
    of its own, the GIL released), to be finished by :func:`execute_run` (``pending``); None when
    the backend runs only in the foreground, or could not start it (:func:`execute_run` then runs
    it, and reports what went wrong the way it reports any run's failure).

    Args:
        record: :func:`run_record` of the run, or its :func:`backend_fields`.
        spec: the run's spec (``record["spec"]`` as a :class:`ccarena.runspec.RunSpec`).
        progress: ``progress(now_ns, duration_ns)`` as the run advances (the simulator: from the
            thread waiting in ``result()``).
    """
    try:
        backend = get_backend(_backend_of(record), backend_options(record))
        start = getattr(backend, "start", None)
        return start(spec, progress) if start is not None else None
    except Exception:  # noqa: BLE001 - execute_run meets it again and records it
        return None


def execute_run(root: str, record: dict[str, Any],
                progress: Callable[[int, int], None] | None = None,
                replace: bool = True, *, spec: RunSpec | None = None,
                pending: PendingRun | None = None,
                keep_summary_inputs: bool = False) -> dict[str, Any]:
    """Run one run and store it: engine → metrics → atomic run directory.

    Args:
        root: the experiment directory.
        record: :func:`run_record` of the run; ``record["backend"]`` names the backend
            (:func:`ccarena.backends.get_backend`).
        progress: ``progress(now_ns, duration_ns)`` as the run advances.
        replace: replace a complete copy of the run already stored; without it the first
            complete copy stays (:meth:`ccarena.store.ExperimentStore.write_run`).
        spec: ``record["spec"]`` as a :class:`ccarena.runspec.RunSpec` where the caller has it
            (read from the record otherwise).
        pending: the run, already started by :func:`start_run` (with ``progress``): this call
            loads what storing it needs while it works, then waits for it.
        keep_summary_inputs: return what :func:`ccarena.store.build_summary` reads of the run
            (``summary_inputs``), so that a caller in this process need not read it back.

    Returns:
        ``{"run_id", "status": "complete", "wall_s"}`` (with ``keep_summary_inputs``, also
        ``"summary_inputs"``: :data:`ccarena.store.summary.SummaryInputs`) or
        ``{"run_id", "status": "failed", "error", "replay_path"}`` (the failure is also written
        to ``failed/<run_id>.json``).

    Raises:
        KeyboardInterrupt: Ctrl-C; nothing of the run is left in ``runs/``.
    """
    store = ExperimentStore(root)
    started, t0 = now_utc(), getattr(pending, "started", None) or time.perf_counter()
    result: RunResult | None = None
    try:
        backend = get_backend(_backend_of(record), backend_options(record))
    except BaseException:
        if pending is not None:
            pending.cancel()
        raise
    try:
        # What turns the tables into a stored run, loaded before waiting: a run started in the
        # background works meanwhile.
        from ccarena.analysis import metrics

        if spec is None:
            spec = RunSpec.from_dict(record["spec"])
        if pending is not None:
            result = pending.result()
            pending = None
        else:
            result = backend.run(spec, progress)
        tables = result.tables
        wall_s = time.perf_counter() - t0
        duration_s = spec.duration_ns / 1e9
        interval_s = spec.sample_interval_ns / 1e9
        derived = record["derived"]
        try:
            writer = store.start_run(record["run_id"], replace=replace)
        except OSError as err:
            raise StoreError.from_os_error(store.root, err) from None
        try:
            for name, source in result.files.items():  # packet captures (pcap/<link>.pcap)
                try:
                    writer.add_file(name, source)
                except OSError as err:
                    raise StoreError.from_os_error(store.root, err) from None
            # The samples (the largest table) are written on a thread of their own while the
            # metrics are computed here.
            names = dict(zip(tables["flows"]["flow"], tables["flows"]["name"]))
            samples = tables["samples"].copy(deep=False)  # columns added, none changed: no copy
            samples.insert(2, "name", samples["flow"].map(names).astype("string"))
            samples.insert(0, "run_id", record["run_id"])
            _add_table(writer, "samples", samples, background=True)
            flows = metrics.flow_table(tables["flows"], tables["samples"], derived, duration_s,
                                       interval_s, links=tables["links"])
            links = metrics.link_table(tables["links"], tables["queues"], derived, duration_s)
            regions = metrics.region_table(tables["flows"], tables["samples"], duration_s, interval_s)
            queues = tables["queues"].copy()
            queues.insert(2, "link_name", queues["link"].map(dict(zip(links["link"], links["name"]))).astype("string"))
            out = {"flows": flows, "queues": queues, "links": links, "regions": regions}
            subflows = tables.get(SUBFLOW_TABLE)
            if subflows is not None and len(subflows):  # MPTCP runs only
                subflows = subflows.copy()
                subflows.insert(2, "name", subflows["flow"].map(names).astype("string"))
                out[SUBFLOW_TABLE] = subflows
            written = {}
            for name, df in out.items():
                df.insert(0, "run_id", record["run_id"])
                written[name] = _add_table(writer, name, df)
            full = with_outcome(
                record, "complete",
                summary=metrics.run_summary(flows, links, regions, queues=tables["queues"],
                                            duration_s=duration_s),
                timing={"started": started, "finished": now_utc(), "wall_s": wall_s,
                        "simulated_s": duration_s,
                        "simulated_per_wall": duration_s / wall_s if wall_s > 0 else None,
                        **(result.engine.timing(duration_s) if result.engine else {})})
            full.update(result.record)  # how the backend ran it (the kernel's link emulation)
        except BaseException:
            writer.abort()
            raise
        try:
            writer.commit(full)
        except OSError as err:
            raise StoreError.from_os_error(store.root, err) from None
        outcome = {"run_id": record["run_id"], "status": "complete", "wall_s": wall_s}
        if keep_summary_inputs:
            from ccarena.store.summary import summary_inputs

            outcome["summary_inputs"] = summary_inputs(full, written["flows"])
        return outcome
    except (KeyboardInterrupt, SystemExit, StoreError, RunTooLarge):
        raise
    except UserError as err:
        if backend.realtime:
            raise  # this machine cannot run it: one line for the user, not an engine fault
        return record_failure(store, record, started, err)
    except BaseException as err:  # an engine fault, a Rust panic, or a metrics bug: keep the spec
        return record_failure(store, record, started, err)
    finally:
        if pending is not None:  # left before waiting for it (a failed import): stop it
            pending.cancel()
        if result is not None and result.scratch is not None:
            shutil.rmtree(result.scratch, ignore_errors=True)


def _add_table(writer: Any, name: str, df: Any, background: bool = False) -> Any:
    """:meth:`ccarena.store.experiment_store.RunWriter.add_table`, an OSError as a StoreError."""
    try:
        return writer.add_table(name, df, background=background)
    except OSError as err:
        raise StoreError.from_os_error(writer.store.root, err) from None


def record_failure(store: ExperimentStore, record: dict[str, Any], started: str,
                   err: BaseException, **cause: Any) -> dict[str, Any]:
    """Record a failed run in ``failed/<run_id>.json`` and return its outcome (``run_id``,
    ``status``, ``error`` (``"Type: message"``), ``message``, ``replay_path`` and ``cause``).

    ``cause``: why, when it was not an error raised while the run executed (the default,
    ``cause="run"``): ``cause="worker_died", exitcode=-9`` for a process that ended without
    returning the run; stored in the record and the outcome."""
    cause = {"cause": "run", **cause}
    failure = with_outcome(record, "failed", error=f"{type(err).__name__}: {err}", **cause,
                           traceback=traceback.format_exc(),
                           timing={"started": started, "failed": now_utc()})
    path = store.write_failure(record["run_id"], failure)
    return {"run_id": record["run_id"], "status": "failed",
            "error": f"{type(err).__name__}: {err}", "message": str(err), "replay_path": str(path),
            **cause}
