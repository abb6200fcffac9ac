"""The report's tables as cells (shown text plus the exact value); the terminal's are in
:mod:`ccarena.report.terminal`.

Every number shown comes from summary.parquet or the runs' regions.parquet; each cell carries the
exact value (``data-value`` on the page) and its column, so tests and tools can check the page
against the Parquet files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from ccarena import units
from ccarena.analysis import catalogue
from ccarena.analysis.catalogue import index_text, pct_text
from ccarena.analysis.catalogue import ratio_text  # noqa: F401 (the report modules find it here)


def mean_ci_text(fmt: Callable[[float], str], mean: float, half: float) -> str:
    """mean ± half-width in one unit (percentages as ``1.09 ± 0.04%``)."""
    if fmt is pct_text and math.isfinite(mean) and math.isfinite(half):
        return f"{units.mean_ci_numbers(100 * mean, 100 * half)}%"
    return units.format_mean_ci(fmt, mean, half)


COLUMNS: dict[str, tuple[str, Callable[[float], str]]] = {
    m.name: (m.heading, m.formatter) for m in catalogue.CATALOGUE}
"""Summary column → (heading, formatter): the numbers the report and the terminal show, in
:data:`ccarena.analysis.catalogue.CATALOGUE` order."""

REGION_COLUMNS: dict[str, tuple[str, Callable[[float], str]]] = {
    "start_s": ("from", units.format_time),
    "end_s": ("to", units.format_time),
    "goodput_total_bps": ("total goodput", units.format_rate),
    "jain_index": ("Jain", index_text),
    "stability": ("stability (mean)", index_text),
    "stability_max": ("stability (max)", index_text),
}


def is_number(v: Any) -> bool:
    """True for ints and floats (numpy's too), False for bools and everything else."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


@dataclass
class Cell:
    """A table cell: the text shown and, for numbers, the exact value and its column."""

    text: str
    col: str | None = None
    value: str | None = None


def cell(col: str, value: Any, fmt: Callable[[float], str] | None) -> Cell:
    """A table cell for ``value`` in column ``col``: formatted by ``fmt`` when it is a number
    (the exact value kept), ``–`` when missing, else its text."""
    if is_number(value) and fmt is not None:
        v = float(value)
        return Cell(fmt(v), col, repr(v) if math.isfinite(v) else "nan")
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return Cell("–", col, None)
    return Cell(str(value), col, None)


def shown_columns(df: pd.DataFrame, candidates: dict[str, Any]) -> list[str]:
    """Columns present with at least one finite value (Jain's index only with several flows:
    for one flow it is 1 by definition)."""
    out = []
    single_flow = "flow" in df.columns and df["flow"].nunique() <= 1
    for c in candidates:
        if c == "jain_index" and single_flow:
            continue
        if c in df.columns:
            x = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
            if np.any(np.isfinite(x)):
                out.append(c)
    return out


def summary_rows(summary: pd.DataFrame, params: list[str]) -> tuple[list[str], list[list[Cell]]]:
    """Headings and cells of the per-run, per-flow summary table (a matrix's runs labelled by
    their ``pair``, :func:`ccarena.report.views.labelled`)."""
    from ccarena.report.views import labelled

    summary, params = labelled(summary, params)
    keys = ["run_id", *params, "name", "flavor"]
    cols = shown_columns(summary, COLUMNS)
    headings = ["run", *params, "flow", "flavor"] + [COLUMNS[c][0] for c in cols]
    rows = []
    for rec in summary.to_dict("records"):
        row = [cell(k, rec.get(k), None) for k in keys]
        row += [cell(c, rec.get(c), COLUMNS[c][1]) for c in cols]
        rows.append(row)
    return headings, rows


def aggregate_rows(aggregated: pd.DataFrame, params: list[str]) -> tuple[list[str], list[list[Cell]]]:
    """Headings and cells of the mean ± 95% CI table (one row per grid point and flow; a
    matrix's points labelled by their ``pair``)."""
    from ccarena.report.views import labelled

    aggregated, params = labelled(aggregated, params)
    cols = shown_columns(aggregated, COLUMNS)
    headings = [*params, "flow", "flavor", "n"] + [COLUMNS[c][0] for c in cols]
    rows = []
    for rec in aggregated.to_dict("records"):
        row = [cell(k, rec.get(k), None) for k in (*params, "name", "flavor", "n")]
        for c in cols:
            fmt = COLUMNS[c][1]
            mean, half = float(rec.get(c, math.nan)), float(rec.get(f"{c}_ci95", math.nan))
            text = mean_ci_text(fmt, mean, half)
            row.append(Cell(text, c, repr(mean) if math.isfinite(mean) else "nan"))
        rows.append(row)
    return headings, rows


def region_rows(regions: pd.DataFrame) -> tuple[list[str], list[list[Cell]]]:
    """Headings and cells of the region table (all runs)."""
    headings = ["run", "region", "active flows"] + [h for h, _ in REGION_COLUMNS.values()]
    rows = []
    for rec in regions.to_dict("records"):
        row = [cell("run_id", rec.get("run_id"), None), cell("region", rec.get("region"), None),
               cell("flows", rec.get("flows"), None)]
        row += [cell(c, rec.get(c), fmt) for c, (_, fmt) in REGION_COLUMNS.items()]
        rows.append(row)
    return headings, rows
