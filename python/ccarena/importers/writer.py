"""Imported runs written into an experiment directory (:mod:`ccarena.store` layout) with the
experiment.json and summary.parquet that ``ccarena report``, ``query``, ``plot`` and ``compare``
read.

Each file is one run, ``runs/<stem>-<first 8 hex digits of its SHA-256>``: importing the same file
again replaces its run, another file is added beside the runs already there (as the next repeat
of the one point). A file that cannot be imported is named with its problem and skipped; the
others are written, and the runs already in the directory stay.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ccarena.errors import UserError
from ccarena.importers.checks import empty_metrics
from ccarena.importers.model import ImportedRun, ImportProblem
from ccarena.importers.imported_tables import run_tables
from ccarena.store import ExperimentStore, build_summary
from ccarena.store.guard import StoreError, check_tree, experiment_lock
from ccarena.store.run_record import experiment_record, now_utc, run_record, with_outcome

SUMMARY_EXTRA_COLUMNS = ("direction", "jitter_s")
"""Per-flow columns of an import's flows.parquet added to its summary.parquet."""

_SUFFIXES = (".flent.gz", ".json.gz", ".json", ".gz", ".pcapng", ".pcap", ".cap")


@dataclass
class ImportOutcome:
    """What an import did: the runs written (``run_id`` → file), the runs now in the directory,
    one line per file that could not be imported, and one line per metric a written run left
    empty (``<file>: goodput left empty for flow X: <why>``, :mod:`ccarena.importers.checks`)."""

    root: Path
    written: dict[str, Path] = field(default_factory=dict)
    total_runs: int = 0
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def file_stem(path: Path) -> str:
    """The file's name without its measurement suffix (``.json``, ``.flent.gz``, …): the dots
    inside it stay (``tcp-i0.1.json`` → ``tcp-i0.1``)."""
    name = path.name
    for suffix in _SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def run_id_for(run: ImportedRun) -> str:
    """``<file stem>-<8 hex digits of its SHA-256>``: stable for one file's content."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", file_stem(run.path)).strip("._-") or run.tool
    return f"{stem[:60]}-{run.sha256[:8]}"


def _spec(run: ImportedRun) -> dict[str, Any]:
    """What a run spec says that a measurement knows: its length and reporting interval (no
    links, no events; the report reads these keys)."""
    return {"duration_ns": round(run.duration_s * 1e9), "sample_interval_ns": round(run.interval_s * 1e9),
            "links": [], "flows": [], "events": []}


def _run_record(run: ImportedRun, run_id: str, experiment: str, repeat: int,
                summary: dict[str, float], warnings: list[str]) -> dict[str, Any]:
    """The imported run's run.json (:mod:`ccarena.store.run_record`): one point, ``repeat``,
    the tool as its backend, the file as its source."""
    record = run_record(
        run_id=run_id, experiment=experiment, repeat=repeat, backend=run.tool, spec=_spec(run),
        derived={"flows": [], "links": []}, scenario={},
        source=dict(run.info, file=str(run.path.resolve()), sha256=run.sha256, warnings=warnings))
    return with_outcome(record, "complete", summary=summary,
                        timing={"imported": now_utc(), "measured_s": run.duration_s,
                                "sample_interval_s": run.interval_s})


def _summary(store: ExperimentStore, run_ids: Sequence[str]) -> pd.DataFrame:
    """summary.parquet (:func:`ccarena.store.build_summary`) with the import's extra per-flow
    columns (:data:`SUMMARY_EXTRA_COLUMNS`)."""
    summary = build_summary(store, run_ids)
    extra = []
    for run_id in run_ids:
        flows = store.read_table(run_id, "flows")
        cols = [c for c in ("flow", *SUMMARY_EXTRA_COLUMNS) if c in flows.columns]
        extra.append(flows[cols].assign(run_id=run_id))
    if extra:
        merged = pd.concat(extra, ignore_index=True)
        merged["run_id"] = merged["run_id"].astype("string")
        merged["flow"] = merged["flow"].astype("int64")
        summary = summary.merge(merged, on=["run_id", "flow"], how="left")
    return summary


def _experiment(name: str, tool: str, runs: list[dict[str, Any]], files: list[dict[str, Any]],
                description: str) -> dict[str, Any]:
    lines = [(f"# {tool} measurements imported with `ccarena import {tool}`: one run per file, "
              "the files being repeats of one point.")]
    lines += [f"# {f['run_id']}: {f['file']} (sha256 {f['sha256']}){f['about']}" for f in files]
    return experiment_record(
        name=name, scenario_file=None, scenario_text="\n".join(lines) + "\n",
        scenario={"name": name, "description": description},
        sweep={"parameters": {}, "repeats": len(runs)},
        parts=[{"name": "", "description": description, "parameters": [], "repeats": len(runs),
                "matrix": None, "report": {}}],
        defaults={}, imported={"tool": tool, "files": files}, runs=runs)


def import_files(tool: str, parse: Callable[[Path], ImportedRun], paths: Sequence[Path],
                 root: Path, name: str, about: Callable[[ImportedRun], str] = lambda r: "") -> ImportOutcome:
    """Parse every file with ``parse`` and write the runs that parse into ``root``.

    Args:
        tool: ``iperf3`` or ``flent`` (the runs' backend).
        parse: file → :class:`ImportedRun`, raising :class:`ImportProblem` for a bad file.
        paths: the files, in order (their runs are the next repeats).
        root: the experiment directory (created; an earlier import of the same tool is extended).
        name: the experiment's name.
        about: a short description of a run for experiment.json's ``scenario_text``.

    Returns:
        The outcome; ``problems`` names each file that was not imported, ``warnings`` each metric
        a written run left empty (the caller reports both).

    Raises:
        UserError: ``root`` holds a simulated experiment or another tool's import.
        StoreError: the directory cannot be written (the runs written before stay).
    """
    check_tree(root)
    store = ExperimentStore(root)
    existing: dict[str, Any] | None = None
    if (root / "experiment.json").is_file():
        existing = store.read_experiment()
        was = (existing.get("imported") or {}).get("tool")
        if was != tool:
            what = f"{was} measurements" if was else "a simulated experiment"
            raise UserError(f"{root}: holds {what}; import {tool} files into another directory (-o)")
    outcome = ImportOutcome(root)

    def parsed_runs() -> Iterator[ImportedRun]:
        # One file parsed at a time, each written before the next is read: an import of many
        # files holds one file's run, within the memory budget (importers.files.limit_bytes).
        for path in paths:
            try:
                yield parse(Path(path))
            except ImportProblem as err:
                outcome.problems.append(f"{path}: {err}")

    pending = parsed_runs()
    head = list(itertools.islice(pending, 1))
    if not head:
        return outcome  # nothing to write: the directory is not created

    def each_run() -> Iterator[ImportedRun]:
        while head:
            yield head.pop()  # not kept here once written
        yield from pending

    runs = list(existing["runs"]) if existing else []
    files = list(existing["imported"]["files"]) if existing else []
    position = {r["run_id"]: i for i, r in enumerate(runs)}
    try:
        root.mkdir(parents=True, exist_ok=True)
        with experiment_lock(root):
            for run in each_run():
                run_id = run_id_for(run)
                repeat = position.get(run_id, len(runs))
                tables, summary = run_tables(run, run_id)
                warnings = empty_metrics(run, tables["flows"], tables["samples"])
                outcome.warnings += [f"{run.path}: {line}" for line in warnings]
                store.write_run(run_id, _run_record(run, run_id, name, repeat, summary, warnings), tables)
                entry = {"run_id": run_id, "point": 0, "repeat": repeat, "seed": 0, "params": {},
                         "part": "", "backend": tool, "spec": _spec(run), "source_file": str(run.path)}
                file_entry = {"run_id": run_id, "file": str(run.path), "sha256": run.sha256,
                              "about": about(run)}
                if run_id in position:
                    runs[repeat], files[repeat] = entry, file_entry
                else:
                    position[run_id] = repeat
                    runs.append(entry)
                    files.append(file_entry)
                outcome.written[run_id] = run.path
                del run, tables, summary  # before the next file is parsed
            description = f"{tool} measurements imported from {len(runs)} file(s)"
            store.write_experiment(_experiment(name, tool, runs, files, description))
            store.write_summary(_summary(store, [r["run_id"] for r in runs]))
            store.cleanup_tmp()
    except OSError as err:
        raise StoreError.from_os_error(root, err) from None
    outcome.total_runs = len(runs)
    return outcome
