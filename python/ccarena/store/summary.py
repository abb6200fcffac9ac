"""summary.parquet: one row per run and flow, built from the stored runs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pandas as pd

from ccarena.analysis import metrics
from ccarena.backends import reference_backend
from ccarena.store import columns
from ccarena.store.columns import SUMMARY_FLOW_COLUMNS
from ccarena.store.experiment_store import ExperimentStore
from ccarena.store.file_formats import json_dumps

if TYPE_CHECKING:
    import pyarrow as pa

def _param_column(values: list[Any]) -> pd.Series:
    """Swept values as one column: numbers stay numbers, anything else becomes strings."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return pd.Series(values, dtype="float64")
    return pd.Series([str(v) for v in values], dtype="string")


SUMMARY_RECORD_KEYS = ("backend", "part", "point", "repeat", "seed", "matrix", "params", "summary")
"""The keys of run.json :func:`build_summary` reads."""

SummaryInputs = tuple[dict[str, Any], "pa.Table"]
"""What :func:`build_summary` reads of one run: its run.json (the :data:`SUMMARY_RECORD_KEYS`)
and its flows table, as read from the run's directory."""


def summary_inputs(record: dict[str, Any], flows: pa.Table) -> SummaryInputs:
    """What :func:`build_summary` would read back of a run just written from ``record`` (the
    run.json content) and ``flows`` (the Arrow table written as flows.parquet): the record's
    :data:`SUMMARY_RECORD_KEYS` as they read back from JSON, and the table."""
    kept = {k: record[k] for k in SUMMARY_RECORD_KEYS if k in record}
    return json.loads(json_dumps(kept)), flows


def summary_fingerprint(store: ExperimentStore, run_ids: Sequence[str]) -> str:
    """SHA-256 (hex) of what :func:`build_summary` of ``run_ids`` reads: each run's id, and its
    run.json and flows.parquet by size and modification time (a run done again is a new file),
    with the code that builds the summary (this module, :mod:`ccarena.store.columns` and
    :mod:`ccarena.analysis.metrics`, by content) and ccarena's version. A summary.parquet stored with the same fingerprint
    (:meth:`ExperimentStore.summary_inputs`) is the one a new build would write.

    Raises:
        OSError: a run's files cannot be read.
    """
    import hashlib
    import os

    from ccarena import __version__

    digest = hashlib.sha256(f"ccarena={__version__}\0".encode())
    for module in (__file__, columns.__file__, metrics.__file__):
        with open(module, "rb") as f:
            digest.update(f.read() + b"\0")
    for run_id in run_ids:
        digest.update(f"{run_id}\0".encode())
        for name in ("run.json", "flows.parquet"):
            st = os.stat(store.run_dir(run_id) / name)
            digest.update(f"{name}:{st.st_size}:{st.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def build_summary(store: ExperimentStore, run_ids_or_plans: Sequence[Any],
                  known: Mapping[str, SummaryInputs] | None = None) -> pd.DataFrame:
    """summary.parquet: one row per run and flow.

    Columns: ``run_id, part, point, repeat, seed``, one column per swept field path (named by the path,
    ``matrix_row``/``matrix_col`` for a matrix, with ``matrix_role`` "row"/"col" per flow;
    values as written), the per-flow columns :data:`SUMMARY_FLOW_COLUMNS`, and the run-level
    numbers of :func:`ccarena.analysis.metrics.run_summary` (repeated on each of the run's rows).

    ``known`` holds, by run id, what runs written by this process read back as
    (:func:`summary_inputs`): those are not read again.
    """
    rows: list[dict[str, Any]] = []
    param_names: list[str] = []
    known = known or {}
    for item in run_ids_or_plans:
        run_id = item if isinstance(item, str) else item.run_id
        if run_id in known:
            record, table = known[run_id]
            flows = table.to_pandas()
        else:
            record = store.read_run_record(run_id)
            flows = store.read_table(run_id, "flows")
        for p in record.get("params", {}):
            if p not in param_names:
                param_names.append(p)
        for flow in flows.to_dict("records"):
            row: dict[str, Any] = {"run_id": run_id, "backend": record.get("backend", reference_backend()),
                                   "part": record.get("part", ""),
                                   "point": record["point"],
                                   "repeat": record["repeat"], "seed": record["seed"]}
            if record.get("matrix"):
                # flows[0] is the row flavor's (first) flow, flows[1] the column flavor's.
                row["matrix_role"] = "row" if int(flow["flow"]) == 0 else "col"
            row.update({f"param:{k}": v for k, v in record.get("params", {}).items()})
            row.update({c: flow.get(c) for c in SUMMARY_FLOW_COLUMNS if c in flow})
            row.update(record.get("summary", {}))
            rows.append(row)
    df = pd.DataFrame(rows)
    for p in param_names:
        df[f"param:{p}"] = _param_column(df[f"param:{p}"].tolist())
    df = df.rename(columns={f"param:{p}": p for p in param_names})
    for c in ("point", "repeat", "seed", "flow"):
        if c in df.columns:
            df[c] = df[c].astype("int64")
    for c in ("name", "kind", "flavor", "recovery", "run_id", "part", "matrix_role", "backend"):
        if c in df.columns:
            df[c] = df[c].astype("string")
    return df
