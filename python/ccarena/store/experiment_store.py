"""The experiment directory (layout: :mod:`ccarena.store`): runs written whole and renamed into
place, failures kept for replay, experiment.json and summary.parquet written atomically, every
record read through the format upgrade (:mod:`ccarena.store.format`). One process at a time should
write an experiment directory."""

from __future__ import annotations

import errno
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ccarena.errors import UserError
from ccarena.store.files import atomic_write_bytes, fsync_dir, json_dumps, write_parquet
from ccarena.store.format import upgrade_record

RUN_TABLES = ("flows", "samples", "queues", "links", "regions")
"""The Parquet tables of a run directory."""


class ExperimentStore:
    """Reads and writes one experiment directory (see the module doc for the layout)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.runs_dir = self.root / "runs"
        self.tmp_dir = self.root / ".tmp"
        self.failed_dir = self.root / "failed"

    # ------------------------------------------------------------------ runs
    def run_dir(self, run_id: str) -> Path:
        """Where a complete run lives."""
        return self.runs_dir / run_id

    def is_complete(self, run_id: str) -> bool:
        """True when the run's directory (with its run.json) exists."""
        return (self.run_dir(run_id) / "run.json").is_file()

    def stored_spec_sha256(self, run_id: str) -> str | None:
        """The spec hash recorded by a complete run, or None if the run is not stored."""
        if not self.is_complete(run_id):
            return None
        return self.read_run_record(run_id).get("spec_sha256")

    def write_run(self, run_id: str, record: dict[str, Any], tables: dict[str, pd.DataFrame],
                  replace: bool = True) -> Path:
        """Write a run atomically: build it in ``.tmp/``, then rename it into ``runs/``.

        An existing run of the same id (a ``--force`` rerun) is replaced when ``replace``: moved
        aside, the new one renamed in, the old one deleted. Interrupted at any point, ``runs/``
        holds either the old complete run, the new complete run, or (briefly, during a forced
        replace) neither. Without ``replace`` the first complete copy stays and later ones are
        dropped; so are copies that lose a race with another writer of the same run (the rename
        onto a non-empty directory fails): a run is never duplicated nor mixed from two writes.
        """
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.tmp_dir / f"{run_id}.{uuid.uuid4().hex}"
        old: Path | None = None
        try:
            tmp.mkdir()
            for name, df in tables.items():
                write_parquet(df, tmp / f"{name}.parquet")
            with open(tmp / "run.json", "w") as f:
                f.write(json_dumps(record))
            for child in tmp.iterdir():
                with open(child, "rb") as f:
                    os.fsync(f.fileno())
            fsync_dir(tmp)
            target = self.run_dir(run_id)
            if target.exists() and replace:
                old = self.tmp_dir / f"{run_id}.old.{uuid.uuid4().hex}"
                os.rename(target, old)
            try:
                os.rename(tmp, target)
            except OSError as err:
                # Another writer completed the same run first (a cluster's retry of a task whose
                # worker was presumed lost): keep its copy whole, drop ours.
                if err.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not self.is_complete(run_id):
                    raise
                shutil.rmtree(tmp, ignore_errors=True)
                return target
            fsync_dir(self.runs_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        self.clear_failure(run_id)
        return self.run_dir(run_id)

    def read_run_record(self, run_id: str) -> dict[str, Any]:
        """The run's run.json, upgraded to the current layout (:func:`upgrade_record`).

        Raises:
            UserError: the run was written by a newer ccarena.
        """
        path = self.run_dir(run_id) / "run.json"
        return upgrade_record(json.loads(path.read_text()), str(path))

    def read_table(self, run_id: str, name: str) -> pd.DataFrame:
        """One of the run's Parquet tables (:data:`RUN_TABLES`) as a DataFrame."""
        return pq.read_table(self.run_dir(run_id) / f"{name}.parquet").to_pandas()

    def read_tables(self, run_ids: list[str], name: str) -> pd.DataFrame:
        """One table of many runs, concatenated in ``run_ids`` order (an empty frame for none).

        The files are read by a few threads (Parquet decoding releases the GIL) and joined as
        Arrow tables, converted to pandas once: 400 runs' regions in 0.24 s instead of 1.2 s one
        by one. Runs whose schemas cannot be unified (a column typed differently) are joined by
        pandas instead."""
        if not run_ids:
            return pd.DataFrame()
        from concurrent.futures import ThreadPoolExecutor

        paths = [self.run_dir(r) / f"{name}.parquet" for r in run_ids]
        with ThreadPoolExecutor(max_workers=min(4, len(paths))) as pool:
            tables = list(pool.map(pq.read_table, paths))
        try:
            return pa.concat_tables(tables, promote_options="default").to_pandas()
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return pd.concat([t.to_pandas() for t in tables], ignore_index=True)

    def complete_runs(self) -> list[str]:
        """Ids of every complete run in the directory, sorted."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(p.name for p in self.runs_dir.iterdir() if (p / "run.json").is_file())

    def remove_run(self, run_id: str) -> None:
        """Delete a complete run (used by ``--force`` for runs no longer in the experiment)."""
        target = self.run_dir(run_id)
        if target.exists():
            self.tmp_dir.mkdir(parents=True, exist_ok=True)
            aside = self.tmp_dir / f"{run_id}.old.{uuid.uuid4().hex}"
            os.rename(target, aside)
            shutil.rmtree(aside, ignore_errors=True)

    def cleanup_tmp(self) -> None:
        """Delete what interrupted writes left in ``.tmp/``."""
        if self.tmp_dir.is_dir():
            shutil.rmtree(self.tmp_dir, ignore_errors=True)

    # ------------------------------------------------------------------ failures
    def write_failure(self, run_id: str, record: dict[str, Any]) -> Path:
        """Record a failed run (its spec and seed, to replay it) in ``failed/<run_id>.json``."""
        path = self.failed_dir / f"{run_id}.json"
        atomic_write_bytes(path, json_dumps(record).encode())
        return path

    def clear_failure(self, run_id: str) -> None:
        """Forget an earlier failure of the run."""
        (self.failed_dir / f"{run_id}.json").unlink(missing_ok=True)

    # ------------------------------------------------------------------ experiment-level files
    def write_experiment(self, meta: dict[str, Any]) -> None:
        """Write experiment.json atomically."""
        atomic_write_bytes(self.root / "experiment.json", json_dumps(meta).encode())

    def read_experiment(self) -> dict[str, Any]:
        """Read experiment.json, upgraded to the current layout (:func:`upgrade_record`).

        Raises:
            UserError: the directory holds no experiment, or a newer ccarena wrote it.
        """
        path = self.root / "experiment.json"
        if not path.is_file():
            raise UserError(f"{self.root}: not a ccarena results directory (no experiment.json)")
        return upgrade_record(json.loads(path.read_text()), str(path))

    def write_summary(self, summary: pd.DataFrame) -> None:
        """Write summary.parquet atomically."""
        sink = pa.BufferOutputStream()
        pq.write_table(pa.Table.from_pandas(summary, preserve_index=False), sink)
        atomic_write_bytes(self.root / "summary.parquet", sink.getvalue().to_pybytes())

    def read_summary(self) -> pd.DataFrame:
        """Read summary.parquet.

        Raises:
            UserError: there is none yet.
        """
        path = self.root / "summary.parquet"
        if not path.is_file():
            raise UserError(f"{self.root}: no summary.parquet (no run has finished yet)")
        return pq.read_table(path).to_pandas()

    def write_experiment_table(self, name: str, table: pd.DataFrame) -> None:
        """Write an experiment-level table computed from the runs (``<name>.parquet`` beside
        summary.parquet, e.g. ``calibration``) atomically."""
        sink = pa.BufferOutputStream()
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False), sink)
        atomic_write_bytes(self.root / f"{name}.parquet", sink.getvalue().to_pybytes())

    def read_experiment_table(self, name: str) -> pd.DataFrame | None:
        """An experiment-level table written by :meth:`write_experiment_table`, or None."""
        path = self.root / f"{name}.parquet"
        return pq.read_table(path).to_pandas() if path.is_file() else None
