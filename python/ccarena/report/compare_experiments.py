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


def terminal_table(merged: pd.DataFrame, keys: list[str], name_a: str, name_b: str) -> Any:
    """The comparison as a rich table: per row and metric ``A → B (Δ ± h)``; a Δ whose interval
    excludes 0 in bold."""
    from rich import box
    from rich.table import Table

    from ccarena.report.terminal import short_names

    names = short_names([k for k in keys if k != "flavor"])
    table = Table(title=f"compare: A = {name_a}, B = {name_b} (B − A ± 95% CI)", box=box.SIMPLE_HEAD,
                  title_justify="left", pad_edge=False, show_edge=False)
    for k in keys:
        table.add_column(names.get(k, k), no_wrap=True)
    metrics = [m for m in COMPARED if f"{m}_diff" in merged and merged[f"{m}_a"].notna().any()]
    for m in metrics:
        table.add_column(COLUMNS[m][0], justify="right")
    for rec in merged.to_dict("records"):
        cells = [str(rec[k]) for k in keys]
        for m in metrics:
            fmt = COLUMNS[m][1]
            diff, half = float(rec[f"{m}_diff"]), float(rec[f"{m}_diff_ci95"])
            text = f"{fmt(rec[f'{m}_a'])} → {fmt(rec[f'{m}_b'])}"
            if math.isfinite(diff):  # a side without the metric (UDP RTT, an import) has no Δ
                sign = "+" if diff >= 0 else "−"
                text += f" ({sign}{fmt(abs(diff))}" + (f" ± {fmt(half)})" if half > 0 else ")")
            significant = half > 0 and abs(diff) > half
            cells.append(f"[bold]{text}[/bold]" if significant else text)
        table.add_row(*cells)
    return table


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
