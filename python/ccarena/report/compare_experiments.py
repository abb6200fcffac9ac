"""``ccarena compare DIR_A DIR_B``: two stored experiments side by side (a changed model against
the old one, two machines, the simulator against imported measurements).

Each part is compared with the part of the same name (``--part`` picks one; an experiment without
``[[parts]]`` is one part), through its :class:`ccarena.report.views.View`: matrix runs are keyed
by their pair (``cubic vs reno``), not by another part's empty columns. Rows are matched on the
swept values both sides share and the flavor (:func:`ccarena.report.answer.answer_table`: mean
and 95% CI over each flavor's flows and repeats). For each metric the table gives A, B and
B − A with the half-width sqrt(h_A² + h_B²) (the two intervals combined as independent
estimates; a difference whose interval excludes 0 is marked).

The figure of each metric draws a numeric swept value along x as lines (A solid with circles, B
dashed with squares, 95% CI bars) and anything else (flavors, pairs, disciplines) as categories:
side-by-side bars per flavor, A filled and B hatched, with 95% CI whiskers. One colour per flavor
(:func:`ccarena.report.plots.flavor_color`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccarena.analysis import catalogue
from ccarena.errors import UserError, terminal_text
from ccarena.report import views
from ccarena.report.answer import answer_table, point_keys
from ccarena.report.html_tables import COLUMNS

COMPARED = ("goodput_mean_bps", "loss_rate", "rtt_mean_s", "jain_index", "fct_s")
"""Metrics compared (those both experiments have)."""

HATCH_B = "///"
"""Hatch of experiment B's bars (A's are filled)."""


def paired_views(a: Any, b: Any, part: str | None) -> list[tuple[str, views.View, views.View]]:
    """``(part label, view of A, view of B)`` for each part to compare of the
    :class:`ccarena.results.Result` objects ``a`` and ``b``: the part named ``part`` (taken from
    each experiment that has ``[[parts]]``; one without is compared whole), else every part both
    have, else the two experiments whole when each is one part. The label is the part's name,
    or "" when the experiments have no parts.

    Raises:
        UserError: ``part`` is not a part of an experiment that has parts, or neither has parts;
            without ``part``, the experiments share no part, or one has several parts and the
            other one (the message says to choose with ``--part``).
    """
    named_a, named_b = views.part_names(a), views.part_names(b)
    if part is not None:
        if not named_a and not named_b:
            raise UserError("--part: neither experiment has parts (no [[parts]] in their "
                            "scenarios); leave --part out")
        va = views.select(a, part if named_a else None)
        vb = views.select(b, part if named_b else None)
        if len(va) != 1 or len(vb) != 1:  # a side without parts but several (impossible) views
            raise UserError(f"--part: cannot compare part '{part}' of these experiments")
        return [(part, va[0], vb[0])]
    va, vb = views.select(a, None), views.select(b, None)
    if len(va) == 1 and len(vb) == 1:
        label = va[0].part if va[0].part == vb[0].part else ""
        return [(label, va[0], vb[0])]
    if named_a and named_b:
        by_b = {v.part: v for v in vb}
        shared = [(v.part, v, by_b[v.part]) for v in va if v.part in by_b]
        if not shared:
            raise UserError(f"the experiments share no part (A: {', '.join(named_a)}; B: "
                            f"{', '.join(named_b)}); compare experiments of the same scenario")
        return shared
    many, names = (a, named_a) if len(va) > 1 else (b, named_b)
    raise UserError(f"--part: {many.root} has parts {', '.join(names)} and the other experiment "
                    "has none; choose the part to compare with --part NAME")


def compare_table(a: Any, b: Any) -> tuple[pd.DataFrame, list[str]]:
    """The matched rows of ``a`` and ``b`` (each with ``summary`` and ``parameters``: a
    :class:`ccarena.report.views.View`) with ``<metric>_a``, ``_b``, ``_diff`` and
    ``_diff_ci95`` columns, and the key columns shown for them: the swept values both share, then
    the swept values only one side has (that side's points, against the other's only point),
    then ``flavor``.

    Raises:
        UserError: the experiments share no flavor at any common sweep point.
    """
    ta = answer_table(a.summary, a.parameters)
    tb = answer_table(b.summary, b.parameters)
    keys_a, keys_b = point_keys(a.summary, a.parameters), point_keys(b.summary, b.parameters)
    keys = [k for k in keys_a if k in set(keys_b)]
    keys.append("flavor")
    for t, own in ((ta, keys_a), (tb, keys_b)):
        for k in {*keys, *own}:
            t[k] = t[k].astype(str)
    merged = ta.merge(tb, on=keys, suffixes=("_a", "_b"))
    if merged.empty:
        raise UserError("the two experiments share no flavor at a common sweep point; compare "
                        "experiments of the same scenario (or of scenarios with common values)")
    extra = [k for k in [*keys_a, *keys_b] if k not in keys and k in merged.columns]
    for m in COMPARED:
        if f"{m}_a" not in merged or f"{m}_b" not in merged:
            continue
        merged[f"{m}_diff"] = merged[f"{m}_b"] - merged[f"{m}_a"]
        ha = merged.get(f"{m}_ci95_a", pd.Series(math.nan, index=merged.index)).fillna(0.0)
        hb = merged.get(f"{m}_ci95_b", pd.Series(math.nan, index=merged.index)).fillna(0.0)
        merged[f"{m}_diff_ci95"] = (ha ** 2 + hb ** 2) ** 0.5
    return merged, [*keys[:-1], *dict.fromkeys(extra), "flavor"]


def compared_metrics(merged: pd.DataFrame) -> list[str]:
    """The metrics of :data:`COMPARED` with a value on at least one side of ``merged``."""
    return [m for m in COMPARED if f"{m}_diff" in merged
            and (merged[f"{m}_a"].notna().any() or merged[f"{m}_b"].notna().any())]


def terminal_table(merged: pd.DataFrame, keys: list[str], name_a: str, name_b: str,
                   width: int | None = None, wide: bool = False, part: str = "") -> Any:
    """The comparison as a rich table for a terminal ``width`` columns wide (None: no limit),
    never breaking a value across lines:

    1. one row per sweep point and flavor with a cell ``A → B (Δ ± h)`` per metric, when it fits
       (always with ``wide``);
    2. else one row per point, flavor and metric, with the keys, A, B and Δ ± h in columns;
    3. else (long keys: pairs, several swept values) the same with the point's keys stacked one
       per line in a single ``point`` column.

    A Δ whose interval excludes 0 is in bold. ``part`` names the compared part in the title."""
    from rich import box
    from rich.table import Table

    from ccarena.report.terminal import short_names, table_width

    names = short_names([k for k in keys if k not in ("flavor", views.PAIR)])
    metrics = compared_metrics(merged)
    records = merged.to_dict("records")
    # Keys (flavors, pairs, swept values) and names come from stored files: shown, never obeyed.
    title = terminal_text(f"compare{f' part {part!r}' if part else ''}: A = {name_a}, B = {name_b} "
                          "(B − A ± 95% CI)")

    def new_table() -> Table:
        return Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False,
                     show_edge=False)

    def key_columns(table: Table) -> None:
        for k in keys:
            table.add_column(terminal_text(names.get(k, k)), no_wrap=True)

    def metric_columns(table: Table) -> None:
        table.add_column("metric", no_wrap=True)
        table.add_column("A", justify="right", no_wrap=True)
        table.add_column("B", justify="right", no_wrap=True)
        table.add_column("B − A", justify="right", no_wrap=True)

    def metric_cells(rec: dict[str, Any], m: str) -> list[str]:
        fmt = COLUMNS[m][1]
        return [COLUMNS[m][0], fmt(rec[f"{m}_a"]), fmt(rec[f"{m}_b"]),
                _bold_if(_delta(rec, m, "{}"), rec, m)]

    table = new_table()
    key_columns(table)
    for m in metrics:
        table.add_column(COLUMNS[m][0], justify="right", no_wrap=True)
    for rec in records:
        table.add_row(*[terminal_text(rec[k]) for k in keys],
                      *[_bold_if(_a_to_b(rec, m) + _delta(rec, m, " ({})"), rec, m) for m in metrics])
    if wide or width is None or table_width(table) <= width:
        return table
    table = new_table()
    key_columns(table)
    metric_columns(table)
    for rec in records:
        for i, m in enumerate(metrics):
            keys_shown = [terminal_text(rec[k]) if i == 0 else "" for k in keys]
            table.add_row(*keys_shown, *metric_cells(rec, m), end_section=i == len(metrics) - 1)
    if table_width(table) <= width:
        return table
    table = new_table()
    table.add_column("point", no_wrap=True)
    metric_columns(table)
    for rec in records:
        lines = [terminal_text(_key_text(k, rec[k], names)) for k in keys]
        n = max(len(lines), len(metrics))
        for i in range(n):
            cells = metric_cells(rec, metrics[i]) if i < len(metrics) else ["", "", "", ""]
            table.add_row(lines[i] if i < len(lines) else "", *cells, end_section=i == n - 1)
    return table


def _key_text(key: str, value: Any, names: dict[str, str]) -> str:
    """A key of a matched row on a line of its own: the flavor or pair as is, a swept value as
    ``name=value``."""
    if key in ("flavor", views.PAIR):
        return str(value)
    return f"{names.get(key, key)}={value}"


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


def _mean_and_error(merged: pd.DataFrame, metric: str, side: str,
                    divisor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and the error bar below and above it (the 95% CI, kept in the metric's range) of
    ``metric`` on one ``side`` ("a" or "b") of the rows of ``merged``, divided by ``divisor``."""
    low, high = catalogue.value_range(metric)
    mean = merged[f"{metric}_{side}"].to_numpy(dtype=float) / divisor
    ci = f"{metric}_ci95_{side}"
    half = merged[ci].to_numpy(dtype=float) / divisor if ci in merged else np.zeros(len(merged))
    half = np.where(np.isfinite(half), half, 0.0)
    below = np.clip(np.minimum(half, mean - low / divisor), 0.0, None)
    above = np.clip(np.minimum(half, high / divisor - mean), 0.0, None)
    return mean, np.nan_to_num(below), np.nan_to_num(above)


def overlay_figure(merged: pd.DataFrame, keys: list[str], metric: str, name_a: str, name_b: str,
                   part: str = "") -> Any:
    """The figure (matplotlib) of ``metric`` in A and B: against the first numeric swept key as
    lines when there is one (:func:`_lines`), else per category as side-by-side bars
    (:func:`_bars`); None when neither side has a finite value."""
    from ccarena.report import sweep_plots

    values = merged[[f"{metric}_a", f"{metric}_b"]].to_numpy(dtype=float)
    if not np.isfinite(values).any():
        return None
    label, divisor = catalogue.axis(metric)
    x_key = next((k for k in keys if k not in ("flavor", views.PAIR)
                  and sweep_plots.param_axis(merged[k].tolist()) is not None), None)
    title = f"{label.split(' (')[0]}: {name_a} vs {name_b}" + (f", part {part}" if part else "")
    if x_key is not None:
        return _lines(merged, keys, x_key, metric, name_a, name_b, title, label, divisor)
    return _bars(merged, keys, metric, name_a, name_b, title, label, divisor)


def _lines(merged: pd.DataFrame, keys: list[str], x_key: str, metric: str, name_a: str,
           name_b: str, title: str, label: str, divisor: float) -> Any:
    """``metric`` against the numeric key ``x_key``: per flavor (and value of the other keys) A
    as a solid line with circles and B as a dashed line with squares, each with its 95% CI, B
    shifted right by 1% of the x range so the bars of equal points do not hide each other."""
    from matplotlib.lines import Line2D

    from ccarena.report import plots, sweep_plots

    xs, unit = sweep_plots.param_axis(merged[x_key].tolist())
    fig, ax = plots._figure(title, x_key + (f" ({unit})" if unit else ""), label)
    data = merged.assign(_x=xs)
    span = float(np.ptp(xs)) or 1.0
    others = [k for k in keys if k not in (x_key, "flavor")]
    flavors: dict[str, str] = {}
    for key, group in data.groupby([*others, "flavor"], sort=False):
        key = key if isinstance(key, tuple) else (key,)
        flavor = str(key[-1])
        colour = plots.flavor_color(flavor)
        flavors.setdefault(flavor, colour)
        group = group.sort_values("_x")
        name = ", ".join(str(k) for k in key)
        for side, style, marker, shift in (("a", "-", "o", 0.0), ("b", "--", "s", 0.01 * span)):
            mean, below, above = _mean_and_error(group, metric, side, divisor)
            bars = ax.errorbar(group["_x"] + shift, mean, yerr=[below, above], color=colour,
                               linestyle=style, marker=marker, capsize=3,
                               markerfacecolor=colour if side == "a" else "white",
                               label=f"{name} ({name_a if side == 'a' else name_b})")
            bars._ccarena_flavor = flavor  # type: ignore[attr-defined]  # read by flavor_colors_of
    sweep_plots.y_scale(ax, merged[[f"{metric}_a", f"{metric}_b"]].to_numpy(dtype=float).ravel() / divisor)
    if metric == "jain_index":
        ax.set_ylim(0, 1.02)
    handles = [Line2D([], [], color=c, linewidth=3, label=f) for f, c in flavors.items()]
    handles += [Line2D([], [], color="0.35", linestyle="-", marker="o", label=f"A: {name_a}"),
                Line2D([], [], color="0.35", linestyle="--", marker="s", markerfacecolor="white",
                       label=f"B: {name_b}")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig


def _bars(merged: pd.DataFrame, keys: list[str], metric: str, name_a: str, name_b: str,
          title: str, label: str, divisor: float) -> Any:
    """``metric`` per category (the non-flavor keys' values, e.g. a pair ``cubic vs reno``; the
    flavor when there are none): within each category one bar per flavor and experiment side by
    side, A filled and B hatched, with 95% CI whiskers. One bar container per flavor and side."""
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Patch

    from ccarena.report import plots

    cat_keys = [k for k in keys if k != "flavor"]
    if cat_keys:
        cats = merged[cat_keys].astype(str).agg(", ".join, axis=1)
        xlabel = ", ".join(cat_keys)
    else:
        cats = merged["flavor"].astype(str)
        xlabel = "flavor"
    data = merged.assign(_cat=cats.to_numpy())
    categories = list(dict.fromkeys(data["_cat"]))
    per_cat = data.groupby("_cat", sort=False).size()
    slots = 2 * int(per_cat.max())
    width = 0.8 / slots
    # Position of each row's A bar; its B bar is next to it. A category with fewer flavors than
    # the widest one has its bars centred, not a gap.
    rank = data.groupby("_cat", sort=False).cumcount().to_numpy()
    n_here = data["_cat"].map(per_cat).to_numpy()
    centre = np.array([categories.index(c) for c in data["_cat"]], dtype=float)
    x_a = centre + (2 * rank - (2 * n_here - 1) / 2) * width
    fig, ax = plots._figure(title, xlabel, label)
    fig.set_size_inches(max(8.0, 3.0 + 0.28 * len(data) * 2), 4.0)
    flavors: dict[str, str] = {}
    for flavor in dict.fromkeys(data["flavor"].astype(str)):
        sel = (data["flavor"].astype(str) == flavor).to_numpy()
        colour = plots.flavor_color(flavor)
        flavors.setdefault(flavor, colour)
        for side, shift in (("a", 0.0), ("b", width)):
            mean, below, above = _mean_and_error(data[sel], metric, side, divisor)
            face = colour if side == "a" else to_rgba(colour, 0.3)
            bar = ax.bar(x_a[sel] + shift, np.nan_to_num(mean), width=width * 0.92, color=face,
                         edgecolor=colour, hatch=HATCH_B if side == "b" else None, linewidth=0.8,
                         yerr=[below, above], capsize=2, ecolor="0.25",
                         label=f"{flavor} ({name_a if side == 'a' else name_b})")
            bar._ccarena_flavor = flavor  # type: ignore[attr-defined]  # read by flavor_colors_of
            bar._ccarena_side = side  # type: ignore[attr-defined]
    long = sum(len(c) for c in categories) > 50
    ax.set_xticks(range(len(categories)), categories, rotation=30 if long else 0,
                  ha="right" if long else "center")
    ax.set_xlim(-0.6, len(categories) - 0.4)
    ax.grid(axis="x", visible=False)
    ax.set_ylim(0, 1.02 if metric == "jain_index" else None)
    handles = [Patch(facecolor=c, edgecolor=c, label=f) for f, c in flavors.items()]
    handles += [Patch(facecolor="0.45", edgecolor="0.45", label=f"A: {name_a}"),
                Patch(facecolor=to_rgba("0.45", 0.3), edgecolor="0.45", hatch=HATCH_B,
                      label=f"B: {name_b}")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
              title="whiskers: 95% CI", title_fontsize=8)
    return fig


def write_figures(merged: pd.DataFrame, keys: list[str], name_a: str, name_b: str,
                  out_dir: Path, part: str = "") -> list[Path]:
    """The figure of each metric both sides have (:func:`overlay_figure`) as PNG files
    ``compare-[PART-]METRIC.png`` in ``out_dir``."""
    from ccarena.report import plots

    out = []
    prefix = f"{_slug(part)}-" if part else ""
    for m in compared_metrics(merged):
        if not (merged[f"{m}_a"].notna().any() and merged[f"{m}_b"].notna().any()):
            continue  # nothing to compare: one side lacks the metric (an import without RTT)
        fig = overlay_figure(merged, keys, m, name_a, name_b, part)
        if fig is None:
            continue
        path = out_dir / f"compare-{prefix}{m}.png"
        plots.save(fig, path)
        out.append(path)
    return out


def _slug(text: str) -> str:
    """``text`` as a file-name part: letters, digits, ``-`` and ``_``."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)
