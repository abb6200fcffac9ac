"""The report's opening: the scenario's question answered per flavor.

One row per flavor, or per sweep point and flavor: the mean over the flavor's flows and the
repeats with its 95% confidence interval (Student's t over the flow-runs; :func:`ccarena.analysis.
metrics.mean_ci`), in readable units and significant digits, and the key figure (chosen by
:func:`key_figure_index`). The sentences above the table, which flavors differ beyond the noise,
are :mod:`ccarena.analysis.verdict`'s.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import pandas as pd

from ccarena.analysis import metrics, verdict
from ccarena.report.html_tables import COLUMNS, Cell, cell, mean_ci_text, shown_columns

ANSWER_COLUMNS = ("goodput_mean_bps", "loss_rate", "rtt_mean_s", "jain_index", "fct_s", "fct_slowdown")
"""The metrics the opening table shows (those with a finite value)."""


def point_keys(summary: pd.DataFrame, params: Sequence[str]) -> list[str]:
    """The swept parameters that are not the flavor itself (a flavor sweep is the flavor column):
    :func:`ccarena.analysis.verdict.point_keys`."""
    return verdict.point_keys(summary, params)


def answer_table(summary: pd.DataFrame, params: Sequence[str]) -> pd.DataFrame:
    """Mean, SD and 95% CI per (sweep point, flavor) over its flows and repeats, with ``flows``
    (flows per run) and ``runs``; Jain's index is taken once per run (it describes the run)."""
    keys = [*point_keys(summary, params), "flavor"]
    per_flow = metrics.aggregate_repeats(summary, keys, [m for m in ANSWER_COLUMNS if m != "jain_index"])
    runs = summary.drop_duplicates(["run_id", "flavor"])
    if "jain_index" in summary.columns and summary.groupby("run_id").size().max() > 1:
        jain = metrics.aggregate_repeats(runs, keys, ["jain_index"]).drop(columns=["n"])
        per_flow = per_flow.merge(jain, on=keys, how="left")
    counts = summary.groupby(keys, sort=False, dropna=False).agg(
        runs=("run_id", "nunique"), rows=("run_id", "size")).reset_index()
    out = per_flow.merge(counts, on=keys, how="left")
    out["flows"] = (out["rows"] / out["runs"]).round().astype(int)
    return out.drop(columns=["rows"])


def answer_rows(summary: pd.DataFrame, params: Sequence[str]) -> tuple[list[str], list[list[Cell]]]:
    """Headings and cells of the opening table (:func:`answer_table`)."""
    from ccarena.report.terminal import short_names

    table = answer_table(summary, params)
    keys = point_keys(summary, params)
    names = short_names(keys)
    cols = shown_columns(table, {c: COLUMNS[c] for c in ANSWER_COLUMNS})
    headings = [names[k] for k in keys] + ["flavor", "flows per run", "runs"] + [
        COLUMNS[c][0] + " (mean ± 95% CI)" for c in cols]
    rows = []
    for rec in table.to_dict("records"):
        row = [cell(k, rec.get(k), None) for k in (*keys, "flavor")]
        row += [Cell(str(int(rec["flows"])), "flows", str(int(rec["flows"]))),
                Cell(str(int(rec["runs"])), "runs", str(int(rec["runs"])))]
        for c in cols:
            mean, half = float(rec.get(c, math.nan)), float(rec.get(f"{c}_ci95", math.nan))
            row.append(Cell(mean_ci_text(COLUMNS[c][1], mean, half), c,
                            repr(mean) if math.isfinite(mean) else "nan"))
        rows.append(row)
    return headings, rows


def key_figure_index(files: Sequence[str]) -> int | None:
    """Which figure opens the report: the goodput-vs-parameter figure of a sweep, else the
    flavor matrix's share heatmap, else the first run's goodput over time; None if none."""
    for pattern in ("sweep-goodput_mean_bps", "matrix-share", "-goodput.png"):
        for i, name in enumerate(files):
            if pattern in name:
                return i
    return None


def question(meta: dict[str, Any], scenario_description: str) -> str:
    """The question a part asks (its description) when it differs from the scenario's, which the
    page already shows under its title; else ``""``."""
    text = str(meta.get("description") or "")
    return "" if text == scenario_description else text
