"""The report's tables as cells (shown text plus the exact value), and the terminal summary.

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
from rich.table import Table

from ccarena import units
from ccarena.analysis import metrics


def pct_text(x: float) -> str:
    """A fraction as a percentage with 3 significant digits (``–`` when not finite)."""
    return "–" if not math.isfinite(x) else f"{100 * x:.3g}%"


def mean_ci_text(fmt: Callable[[float], str], mean: float, half: float) -> str:
    """mean ± half-width in one unit (percentages as ``1.09 ± 0.04%``)."""
    if fmt is pct_text and math.isfinite(mean) and math.isfinite(half):
        return f"{100 * mean:.3g} ± {100 * half:.2g}%"
    return units.format_mean_ci(fmt, mean, half)


def index_text(x: float) -> str:
    """An index in [0, 1] (Jain, stability) to 3 decimals (``–`` when not finite)."""
    return "–" if not math.isfinite(x) else f"{x:.3f}"


def ratio_text(x: float) -> str:
    """A ratio ≥ 0 (FCT slowdown) to 3 significant digits (``–`` when not finite)."""
    return "–" if not math.isfinite(x) else f"{x:.3g}"


COLUMNS: dict[str, tuple[str, Callable[[float], str]]] = {
    "goodput_mean_bps": ("goodput", units.format_rate),
    "throughput_mean_bps": ("throughput", units.format_rate),
    "loss_rate": ("loss", pct_text),
    "retransmission_rate": ("retransmitted", pct_text),
    "delivery_ratio": ("delivered", pct_text),
    "rtt_min_s": ("RTT min", units.format_time),
    "rtt_mean_s": ("RTT mean", units.format_time),
    "rtt_p95_s": ("RTT p95", units.format_time),
    "rtt_p99_s": ("RTT p99", units.format_time),
    "stability": ("stability", index_text),
    "fct_s": ("completion", units.format_time),
    "fct_slowdown": ("FCT slowdown", ratio_text),
    "jain_index": ("Jain (run)", index_text),
    "bottleneck_utilization": ("bottleneck util.", pct_text),
    "bottleneck_queueing_delay_s": ("queueing delay", units.format_time),
    "mathis_bps": ("Mathis", units.format_rate),
}
"""Summary column → (heading, formatter): the numbers the report and the terminal show."""

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
    """Headings and cells of the per-run, per-flow summary table."""
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
    """Headings and cells of the mean ± 95% CI table (one row per grid point and flow)."""
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


TERMINAL_COLUMNS = ("goodput_mean_bps", "loss_rate", "retransmission_rate", "delivery_ratio",
                    "rtt_mean_s", "rtt_p95_s", "stability", "fct_s", "fct_slowdown", "jain_index")
"""The summary columns the terminal table shows (the report shows all of :data:`COLUMNS`)."""


MAX_FLOW_ROWS_PER_RUN = 8
"""Above this many flows in a run, the terminal shows one row per run (totals, Jain, FCT
percentiles) instead of one per flow: a permutation or incast of hundreds of flows would otherwise
print hundreds of rows."""


def per_run_table(summary: pd.DataFrame, params: list[str], title: str) -> Any:
    """One row per run: flows, the flavors, total goodput, Jain's index over the run's flows,
    retransmitted share, and the FCT p99 of finite flows and their slowdown p99 (a report of
    the same runs has every per-flow number). With ``[[parts]]``, one such table per part, titled
    by it (a rich ``Group``), so the rows fit 80 columns."""
    from rich.console import Group

    has_parts = "part" in summary and summary["part"].astype(str).str.len().gt(0).any()
    if not has_parts:
        return _per_run_rows(summary, params, title)
    tables = [_per_run_rows(rows, params, f"{title} — {part}")
              for part, rows in summary.groupby("part", sort=False)]
    return Group(*tables)


def _per_run_rows(summary: pd.DataFrame, params: list[str], title: str) -> Table:
    from rich import box

    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
                  padding=(0, 1), title_justify="left")
    flavors = summary["flavor"].astype(str)
    # A swept flavor is shown once, in the flavor column.
    keys = [p for p in params if not (summary[p].astype(str) == flavors).all()
            and summary[p].astype(str).nunique() > 1]
    if int(summary["repeat"].max()) > 0:
        keys.append("repeat")
    for k in keys:
        table.add_column(k, overflow="fold")
    finite = bool(summary["fct_s"].notna().any()) if "fct_s" in summary else False
    heads = ["flows", "flavor", "goodput Σ", "Jain", "retx"] + (
        ["FCT p99", "slowdown p99"] if finite else [])
    for i, h in enumerate(heads):
        table.add_column(h, justify="left" if i == 1 else "right")
    for _, run in summary.groupby("run_id", sort=False):
        first = run.iloc[0]
        goodput = run["goodput_mean_bps"]
        cells = [cell(k, first.get(k), None).text for k in keys]
        cells += [str(len(run)), ",".join(dict.fromkeys(run["flavor"].astype(str))),
                  units.format_rate(float(goodput.sum())),
                  index_text(float(first.get("jain_index", float("nan")))),
                  pct_text(float(run["retransmission_rate"].mean()))]
        if finite:
            fct = run["fct_s"].dropna()
            slow = run["fct_slowdown"].dropna() if "fct_slowdown" in run else pd.Series(dtype=float)
            cells += [units.format_time(float(fct.quantile(0.99))) if len(fct) else "–",
                      ratio_text(float(slow.quantile(0.99))) if len(slow) else "–"]
        table.add_row(*cells)
    return table


def terminal_table(summary: pd.DataFrame, params: list[str], title: str) -> Any:
    """The summary as a rich table: one row per run and flow, or, when there are repeats, one row
    per grid point and flow with mean ± 95% CI; runs of more than :data:`MAX_FLOW_ROWS_PER_RUN`
    flows get one row per run (:func:`per_run_table`)."""
    if int(summary.groupby("run_id").size().max()) > MAX_FLOW_ROWS_PER_RUN:
        return per_run_table(summary, params, title)
    columns = {c: COLUMNS[c] for c in TERMINAL_COLUMNS}
    cols = shown_columns(summary, columns)
    table = Table(title=title)
    if int(summary["repeat"].max()) > 0:
        aggregated = metrics.aggregate_repeats(summary, ["point", *params, "flow", "name", "flavor"])
        keys = [*params, "name", "flavor", "n"]
        for k in keys:
            table.add_column("flow" if k == "name" else k)
        for c in cols:
            table.add_column(COLUMNS[c][0] + " (±95% CI)", justify="right")
        for rec in aggregated.to_dict("records"):
            cells = [cell(k, rec.get(k), None).text for k in keys]
            for c in cols:
                fmt = COLUMNS[c][1]
                mean, half = float(rec[c]), float(rec[f"{c}_ci95"])
                cells.append(mean_ci_text(fmt, mean, half))
            table.add_row(*cells)
        return table
    keys = (["run_id"] if summary["run_id"].nunique() > 1 else []) + [*params, "name", "flavor"]
    for k in keys:
        table.add_column({"run_id": "run", "name": "flow"}.get(k, k))
    for c in cols:
        table.add_column(COLUMNS[c][0], justify="right")
    for rec in summary.to_dict("records"):
        table.add_row(*[cell(k, rec.get(k), None).text for k in keys],
                      *[cell(c, rec.get(c), COLUMNS[c][1]).text for c in cols])
    return table
