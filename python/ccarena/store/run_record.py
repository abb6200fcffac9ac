"""The run record (``runs/<run_id>/run.json``): its shape and its provenance, built here for every
writer — the executor (:mod:`ccarena.executor.run`, a run of a scenario) and the importers
(:mod:`ccarena.importers.writer`, a measurement file).

A record is built in two steps: :func:`run_record` before the run (what it is: identity, spec,
backend), :func:`with_outcome` after it (``status``, what came of it, ``timing`` and the
``software`` that produced it). Keys keep the order stored records have always had (run.json is
written in insertion order, :func:`ccarena.store.file_formats.json_dumps`).
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ccarena.store.format import FORMAT_VERSION


def _installed(name: str, version: Any, missing: type[Exception]) -> str:
    # The distribution's metadata, not the module: importing duckdb alone costs ~70 ms.
    try:
        return str(version(name))
    except missing:
        return "not installed"


def software_versions() -> dict[str, str]:
    """Versions of ccarena, Python, the engine and the libraries that shape the numbers."""
    from importlib.metadata import PackageNotFoundError, version

    from ccarena import __version__

    # From the distributions' metadata (the modules' own __version__ strings, checked alike):
    # importing numpy, pandas and pyarrow here held the first run's engine back by 0.5-0.8 s.
    versions = {"ccarena": __version__, "python": platform.python_version(),
                **{name: _installed(name, version, PackageNotFoundError)
                   for name in ("numpy", "pandas", "pyarrow", "duckdb")},
                "platform": platform.platform()}
    try:
        from ccarena import _engine

        versions["engine"] = str(getattr(_engine, "__version__", None) or _engine.version())
        versions["engine_git_revision"] = str(getattr(_engine, "__git_revision__", "unknown"))
    except ImportError:
        versions["engine"] = "not built"
    return versions


def now_utc() -> str:
    """The current UTC time, ISO 8601 to the second (for records)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_record(*, run_id: str, experiment: str, backend: str, spec: dict[str, Any],
               derived: dict[str, Any], scenario: dict[str, Any], spec_sha256: str | None = None,
               point: int = 0, repeat: int = 0, seed: int = 0, params: dict[str, Any] | None = None,
               part: str = "", matrix: list[str] | None = None,
               backend_options: Mapping[str, dict[str, Any]] | None = None,
               source: dict[str, Any] | None = None) -> dict[str, Any]:
    """A run's record before it runs (:func:`with_outcome` completes it).

    Args:
        run_id, experiment: the run's id and its experiment's name.
        backend: the backend that runs it, or the tool an imported measurement came from.
        spec: the run spec as a dict (an imported run's: what the measurement knows of it).
        derived: the resolved run's derived facts (per flow and link).
        scenario: the run's scenario as written (``{}`` for an import).
        spec_sha256: the spec's hash (None for an import: it has no spec of ccarena's).
        point, repeat, seed, params, part, matrix: where the run sits in its experiment
            (:class:`ccarena.experiment.RunPlan`).
        backend_options: scenario table → its options (``{"kernel": {...}}``), stored after
            ``backend``: every backend options table of the scenario, as resolved.
        source: an imported run's origin (its file, hash, tool's details, warnings). An imported
            run names its tool right after the run's identity, as import records always have.

    Returns:
        The record (``format_version`` first).
    """
    record: dict[str, Any] = {
        "format_version": FORMAT_VERSION, "run_id": run_id, "experiment": experiment,
        "point": point, "repeat": repeat, "seed": seed, "params": params or {}, "part": part,
        "matrix": matrix,
    }
    if source is not None:
        record["backend"] = backend
    record.update({"spec_sha256": spec_sha256, "spec": spec, "derived": derived, "scenario": scenario})
    if source is None:
        record["backend"] = backend
        record.update(backend_options or {})
    else:
        record["source"] = source
    return record


def with_outcome(record: dict[str, Any], status: str, timing: dict[str, Any],
                 **details: Any) -> dict[str, Any]:
    """``record`` (:func:`run_record`) with what came of the run: ``status`` (``"complete"`` or
    ``"failed"``), ``details`` in the order given (``summary``; or ``error``, its ``cause`` and
    ``traceback``), ``timing`` and the ``software`` that produced it (:func:`software_versions`).
    A new dict; ``record`` is left as it was."""
    return dict(record, status=status, **details, timing=timing, software=software_versions())


def experiment_record(*, name: str, scenario_file: str | None, scenario_text: str,
                      scenario: Mapping[str, Any], sweep: Mapping[str, Any],
                      parts: list[dict[str, Any]], defaults: Mapping[str, Any],
                      runs: list[dict[str, Any]],
                      imported: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The experiment record (``experiment.json``) for every writer — the executor (a scenario's
    runs) and the importers (measurement files): the scenario as given (``scenario_file``, its
    ``scenario_text`` and parsed ``scenario``), its ``sweep`` and ``parts``, the ``defaults`` it
    resolved against, the ``runs`` (one dict each) and, for an import, the tool and files it came
    from (``imported``, stored just before ``runs`` as import records always have); stamped with
    the store's format version, the time (:func:`now_utc`) and the software
    (:func:`software_versions`). Keys in the order stored records have always had.

    Returns:
        The record (``format_version`` first, ``software`` last).
    """
    record: dict[str, Any] = {
        "format_version": FORMAT_VERSION, "name": name, "updated": now_utc(),
        "scenario_file": scenario_file, "scenario_text": scenario_text, "scenario": scenario,
        "sweep": sweep, "parts": parts, "defaults": defaults,
    }
    if imported is not None:
        record["imported"] = imported
    record["runs"] = runs
    record["software"] = software_versions()
    return record
