"""``ccarena compare DIR_A DIR_B``: two stored experiments side by side (a changed model against
the old one, two machines, the simulator against imported measurements).

Rows are matched on the swept values they share and the flavor (:func:`ccarena.report.answer.
answer_table`: mean and 95% CI over each flavor's flows and repeats). For each metric the table
gives A, B and B − A with the half-width sqrt(h_A² + h_B²) (the two intervals combined as
independent estimates; a difference whose interval excludes 0 is marked). The figure overlays
the metric against the first shared swept value, A solid and B dashed, one colour per flavor.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ccarena.errors import UserError
from ccarena.report.answer import answer_table, point_keys
from ccarena.report.tables import COLUMNS

COMPARED = ("goodput_mean_bps", "loss_rate", "rtt_mean_s", "jain_index", "fct_s")
"""Metrics compared (those both experiments have)."""


def compare_table(a: Any, b: Any) -> tuple[pd.DataFrame, list[str]]:
    """The matched rows of results ``a`` and ``b`` with ``<metric>_a``, ``_b``, ``_diff`` and
    ``_diff_ci95`` columns, and the key columns they were matched on.

    Raises:
        UserError: the experiments share no flavor at any common sweep point.
    """
    ta = answer_table(a.summary, a.parameters)
    tb = answer_table(b.summary, b.parameters)
    keys = [k for k in point_keys(a.summary, a.parameters) if k in set(point_keys(b.summary, b.parameters))]
    keys.append("flavor")
    for t in (ta, tb):
        for k in keys:
            t[k] = t[k].astype(str)
    merged = ta.merge(tb, on=keys, suffixes=("_a", "_b"))
    if merged.empty:
        raise UserError("the two experiments share no flavor at a common sweep point; compare "
                        "experiments of the same scenario (or of scenarios with common values)")
    for m in COMPARED:
        if f"{m}_a" not in merged or f"{m}_b" not in merged:
            continue
        merged[f"{m}_diff"] = merged[f"{m}_b"] - merged[f"{m}_a"]
        ha = merged.get(f"{m}_ci95_a", pd.Series(math.nan, index=merged.index)).fillna(0.0)
        hb = merged.get(f"{m}_ci95_b", pd.Series(math.nan, index=merged.index)).fillna(0.0)
        merged[f"{m}_diff_ci95"] = (ha ** 2 + hb ** 2) ** 0.5
    return merged, keys


def terminal_table(merged: pd.DataFrame, keys: list[str], name_a: str, name_b: str,
                   width: int | None = None, wide: bool = False) -> Any:
    """The comparison as a rich table for a terminal ``width`` columns wide (None: no limit): one
    row per sweep point and flavor with a cell ``A → B (Δ ± h)`` per metric; where that is wider
    than ``width`` (and not ``wide``), one row per point, flavor and metric with A, B and Δ ± h in
    columns of their own, so every metric still shows at 80 columns. A Δ whose interval excludes
    0 is in bold."""
    from rich import box
    from rich.table import Table

    from ccarena.report.terminal import short_names, table_width

    names = short_names([k for k in keys if k != "flavor"])
    metrics = [m for m in COMPARED if f"{m}_diff" in merged and merged[f"{m}_a"].notna().any()]
    records = merged.to_dict("records")
    title = f"compare: A = {name_a}, B = {name_b} (B − A ± 95% CI)"

    def new_table() -> Table:
        table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False,
                      show_edge=False)
        for k in keys:
            table.add_column(names.get(k, k), no_wrap=True)
        return table

    table = new_table()
    for m in metrics:
        table.add_column(COLUMNS[m][0], justify="right", no_wrap=True)
    for rec in records:
        table.add_row(*[str(rec[k]) for k in keys],
                      *[_bold_if(_a_to_b(rec, m) + _delta(rec, m, " ({})"), rec, m) for m in metrics])
    if wide or width is None or table_width(table) <= width:
        return table
    table = new_table()
    table.add_column("metric", no_wrap=True)
    table.add_column("A", justify="right", no_wrap=True)
    table.add_column("B", justify="right", no_wrap=True)
    table.add_column("B − A", justify="right")  # wraps before its ± where the terminal is narrow
    for rec in records:
        for i, m in enumerate(metrics):
            fmt = COLUMNS[m][1]
            keys_shown = [str(rec[k]) if i == 0 else "" for k in keys]
            table.add_row(*keys_shown, COLUMNS[m][0], fmt(rec[f"{m}_a"]), fmt(rec[f"{m}_b"]),
                          _bold_if(_delta(rec, m, "{}"), rec, m),
                          end_section=i == len(metrics) - 1)
    return table


def _a_to_b(rec: dict[str, Any], metric: str) -> str:
    """``A → B`` of one matched row, in the metric's units."""
    fmt = COLUMNS[metric][1]
    return f"{fmt(rec[f'{metric}_a'])} → {fmt(rec[f'{metric}_b'])}"


def _delta(rec: dict[str, Any], metric: str, template: str) -> str:
    """``±Δ ± h`` of one matched row put in ``template``; empty where a side lacks the metric
    (UDP has no RTT, an import may have no loss)."""
    fmt = COLUMNS[metric][1]
    diff, half = float(rec[f"{metric}_diff"]), float(rec[f"{metric}_diff_ci95"])
    if not math.isfinite(diff):
        return ""
    sign = "+" if diff >= 0 else "−"
    return template.format(f"{sign}{fmt(abs(diff))}" + (f" ± {fmt(half)}" if half > 0 else ""))


def _bold_if(text: str, rec: dict[str, Any], metric: str) -> str:
    """``text`` in bold when the interval of the row's Δ for ``metric`` excludes 0."""
    diff, half = float(rec[f"{metric}_diff"]), float(rec[f"{metric}_diff_ci95"])
    return f"[bold]{text}[/bold]" if half > 0 and abs(diff) > half else text


def overlay_figure(merged: pd.DataFrame, keys: list[str], metric: str, name_a: str, name_b: str) -> Any:
    """``metric`` against the first numeric shared sweep value (or per flavor when there is none),
    A solid and B dashed, one colour per flavor; None when nothing to draw."""
    from ccarena.report import plots

    label, divisor = plots.METRIC_LABELS.get(metric, (metric, 1.0))
    x_key = next((k for k in keys if k != "flavor"
                  and plots.param_axis(merged[k].tolist()) is not None), None)
    fig, ax = plots._figure(f"{label}: {name_a} (solid) vs {name_b} (dashed)",
                            x_key or "flavor", label)
    for flavor, group in merged.groupby("flavor", sort=False):
        colour = plots.flavor_color(str(flavor))
        if x_key is not None:
            xs = plots.param_axis(group[x_key].tolist())[0]
            order = xs.argsort()
        else:
            xs, order = [0.0] * len(group), list(range(len(group)))
        for side, style in (("a", "-"), ("b", "--")):
            y = group[f"{metric}_{side}"].to_numpy(dtype=float) / divisor
            ax.plot([xs[i] for i in order], [y[i] for i in order], style, marker="o", color=colour,
                    label=f"{flavor} ({name_a if side == 'a' else name_b})")
    ax.set_ylim(bottom=0)
    return plots._finish(fig, ax)


def write_figures(merged: pd.DataFrame, keys: list[str], name_a: str, name_b: str,
                  out_dir: Path) -> list[Path]:
    """The overlay figure of each compared metric as PNG files in ``out_dir``."""
    from ccarena.report import plots

    out = []
    for m in COMPARED:
        if f"{m}_a" in merged and merged[f"{m}_a"].notna().any() and merged[f"{m}_b"].notna().any():
            fig = overlay_figure(merged, keys, m, name_a, name_b)
            path = out_dir / f"compare-{m}.png"
            plots.save(fig, path)
            out.append(path)
    return out
