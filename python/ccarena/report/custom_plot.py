"""``ccarena plot``: any stored metric against any column, from an experiment's summary.parquet.

One figure of ``y`` (a metric alias such as ``goodput`` or any numeric summary column) against ``x``
(a swept parameter path or a summary column), one colour per ``hue`` value (the flavor palette when
the hue is the flavor), one panel per ``facet`` value, as

- ``line``: mean ± 95% CI over the rows at each x (numeric x in the unit the user wrote);
- ``bar``: grouped bars with 95% CI whiskers (categorical x);
- ``box``: the distribution of y at each x and hue;
- ``cdf``: the empirical CDF of y per hue (x unused);
- ``heatmap``: mean y over x × hue.

Error bars stay within the metric's range (:func:`ccarena.analysis.catalogue.value_range`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ccarena.analysis import catalogue
from ccarena.analysis.metrics import mean_ci
from ccarena.errors import UserError
from ccarena.report.formats import parse_formats  # noqa: F401 (where `ccarena plot` finds it)

METRIC_ALIASES = catalogue.aliases()
"""Short names ``--y`` accepts for summary columns (:attr:`ccarena.analysis.catalogue.Metric.aliases`)."""

KINDS = ("line", "bar", "box", "cdf", "heatmap")


def resolve_column(summary: pd.DataFrame, name: str, what: str, where: str = "this experiment") -> str:
    """The summary column ``name`` stands for (an alias, a column, or the tail of a swept
    parameter's path such as ``loss`` for ``topology.link.loss`` when ``what`` is ``--x``);
    ``where`` names the table in the error (``part 'matrix'``).

    Raises:
        UserError: no such column (the line lists the choices).
    """
    if name in summary.columns:
        return name
    if what == "--y" and name in METRIC_ALIASES and METRIC_ALIASES[name] in summary.columns:
        return METRIC_ALIASES[name]
    tails = [c for c in summary.columns if "." in c and c.endswith("." + name)]
    if len(tails) == 1:
        return tails[0]
    numeric = [c for c in summary.columns if pd.api.types.is_numeric_dtype(summary[c])]
    choices = (sorted(METRIC_ALIASES) if what == "--y" else
               [c for c in summary.columns if "." in c or "[" in c]
               + [c for c in ("pair", "matrix_row", "matrix_col") if c in summary.columns]
               + ["flavor", "name", "backend"])
    from ccarena.flavors import suggest

    hint = suggest(name, [*choices, *numeric])
    raise UserError(f"{what}: no column '{name}' in {where}{hint}; choose from "
                    f"{', '.join(choices)}")


def heading(column: str) -> str:
    """The words for a summary column (``goodput`` for ``goodput_mean_bps``; other columns as
    they are named)."""
    entry = catalogue.BY_NAME.get(column)
    return entry.heading if entry is not None else column


def _numeric_axis(values: Sequence[Any]) -> np.ndarray | None:
    from ccarena.report.sweep_plots import param_axis

    axis = param_axis(list(values))
    return axis[0] if axis is not None else None


def default_kind(summary: pd.DataFrame, x: str | None) -> str:
    """``"line"`` when the column ``x`` holds numbers (with or without units), else ``"bar"``."""
    if x is None:
        return "line"
    levels = list(dict.fromkeys(summary[x].astype(str)))
    return "line" if _numeric_axis(levels) is not None else "bar"


def plot(summary: pd.DataFrame, y: str, x: str | None, hue: str | None, facet: str | None,
         kind: str, title: str) -> Any:
    """The figure (matplotlib) of ``y`` against ``x`` per ``hue`` and ``facet`` (resolved
    column names; ``x`` may be None for ``cdf``).

    Raises:
        UserError: ``kind`` unknown, or a line plot over a categorical x.
    """
    import matplotlib.pyplot as plt

    from ccarena.report import plots

    if kind not in KINDS:
        raise UserError(f"--kind: '{kind}' is not one of {', '.join(KINDS)}")
    facets = list(dict.fromkeys(summary[facet].astype(str))) if facet else [""]
    unit, divisor = catalogue.display_unit(y)
    cols = min(3, len(facets))
    rows = math.ceil(len(facets) / cols)
    with plt.rc_context(plots.STYLE):
        fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols + 1.8, 3.6 * rows), squeeze=False,
                                 sharey=kind != "heatmap")
    ylabel = heading(y) + (f" ({unit})" if unit else "")
    for ax, value in zip(axes.flat, facets):
        data = summary[summary[facet].astype(str) == value] if facet else summary
        if facet:
            ax.set_title(f"{facet} = {value}", fontsize=10)
        _draw(ax, data, y, x, hue, kind, divisor, ylabel)
    for ax in list(axes.flat)[len(facets):]:
        ax.set_visible(False)
    if kind not in ("cdf", "heatmap"):
        # Once every panel is drawn: a limit set per panel would fix the shared axis to the
        # first panel's data and cut the others' bars.
        for ax in list(axes.flat)[:len(facets)]:
            ax.set_ylim(bottom=0)
    fig.suptitle(title)
    handles: dict[str, Any] = {}
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    if handles:
        fig.legend(handles.values(), handles.keys(), loc="upper left", bbox_to_anchor=(1.0, 0.92),
                   title=hue or None)
    fig.tight_layout()
    return fig


def _hue_colour(hue: str | None, value: str, i: int) -> Any:
    from ccarena.report import plots

    return plots.flavor_color(value) if hue == "flavor" else plots.color(i)


def _groups(data: pd.DataFrame, hue: str | None) -> list[tuple[str, pd.DataFrame]]:
    if not hue:
        return [("", data)]
    return [(str(k), g) for k, g in data.groupby(data[hue].astype(str), sort=False)]


def _draw(ax: Any, data: pd.DataFrame, y: str, x: str | None, hue: str | None, kind: str,
          divisor: float, ylabel: str) -> None:
    low, high = catalogue.value_range(y)
    values = pd.to_numeric(data[y], errors="coerce")
    if kind == "cdf":
        for i, (name, g) in enumerate(_groups(data.assign(_y=values), hue)):
            v = np.sort(g["_y"].dropna().to_numpy(dtype=float)) / divisor
            if v.size:
                ax.step(v, np.arange(1, v.size + 1) / v.size, where="post",
                        color=_hue_colour(hue, name, i), label=name or None)
        ax.set_xlabel(ylabel)
        ax.set_ylabel("fraction of flows ≤ x")
        ax.set_ylim(0, 1.02)
        return
    assert x is not None
    levels = list(dict.fromkeys(data[x].astype(str)))
    ax.set_xlabel(x)
    if kind == "heatmap":
        hues = [n for n, _ in _groups(data, hue)]
        grid = np.full((len(hues), len(levels)), np.nan)
        frame = data.assign(_y=values, _x=data[x].astype(str),
                            _h=data[hue].astype(str) if hue else "")
        means = frame.groupby(["_h", "_x"])["_y"].mean()
        for (h, xv), m in means.items():
            grid[hues.index(h), levels.index(xv)] = m / divisor
        image = ax.imshow(grid, aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(levels)), levels, rotation=30, ha="right")
        ax.set_yticks(range(len(hues)), hues)
        ax.grid(False)
        ax.figure.colorbar(image, ax=ax, label=ylabel)
        return
    ax.set_ylabel(ylabel)
    numeric = _numeric_axis(levels) if kind == "line" else None
    if kind == "line" and numeric is None:
        raise UserError(f"--x: '{x}' is not numeric ({', '.join(levels[:4])}…); use --kind bar or box")
    groups = _groups(data.assign(_y=values), hue)
    stats = {name: [g.loc[g[x].astype(str) == level, "_y"].dropna().to_numpy(dtype=float)
                    for level in levels] for name, g in groups}
    # Bars and boxes side by side per x value, only for the hues that have data there (a matrix
    # pair has two flavors of many): each x value's group is centred, without gaps.
    present = [[name for name, _ in groups if stats[name][j].size] for j in range(len(levels))]
    for i, (name, g) in enumerate(groups):
        colour = _hue_colour(hue, name, i)
        shown = [j for j in range(len(levels)) if stats[name][j].size]
        widths = np.array([0.8 / len(present[j]) for j in shown])
        positions = np.array([j + (present[j].index(name) - (len(present[j]) - 1) / 2) * 0.8
                              / len(present[j]) for j in shown])
        if kind == "box":
            if shown:
                parts = ax.boxplot([stats[name][j] / divisor for j in shown], positions=positions,
                                   widths=widths * 0.9, patch_artist=True, manage_ticks=False)
                for box in parts["boxes"]:
                    box.set_facecolor(colour)
                    box.set_alpha(0.6)
                ax.plot([], [], color=colour, linewidth=6, alpha=0.6, label=name or None)
            continue
        cis = [mean_ci(v, 0.95) if v.size else None for v in stats[name]]
        mean = np.array([c.mean if c else np.nan for c in cis]) / divisor
        half = np.array([c.half_width if c and math.isfinite(c.half_width) else 0.0 for c in cis]) / divisor
        below = np.clip(np.minimum(half, mean - low / divisor), 0, None)
        above = np.clip(np.minimum(half, high / divisor - mean), 0, None)
        if kind == "bar":
            ax.bar(positions, mean[shown], width=widths * 0.95, color=colour, label=name or None,
                   yerr=[below[shown], above[shown]], capsize=3, ecolor="0.2")
        else:
            assert numeric is not None
            order = np.argsort(numeric)
            ax.errorbar(numeric[order], mean[order], yerr=[below[order], above[order]], color=colour,
                        marker="o", capsize=3, label=name or None)
    if kind in ("bar", "box"):
        ax.grid(axis="x", visible=False)  # no line through the bars
        tilted = len(levels) > 5 or sum(len(v) for v in levels) > 50
        ax.set_xticks(range(len(levels)), levels, rotation=30 if tilted else 0,
                      ha="right" if tilted else "center")


def save_all(fig: Any, path: Path, formats: Sequence[str]) -> list[Path]:
    """Write ``fig`` as ``path`` with each suffix of ``formats`` (png, svg, pdf); closes it."""
    import matplotlib.pyplot as plt

    from ccarena.report import plots

    out = []
    path.parent.mkdir(parents=True, exist_ok=True)
    with plt.rc_context(plots.STYLE):
        for fmt in formats:
            target = path.with_suffix("." + fmt)
            fig.savefig(target, format=fmt)
            out.append(target)
    plt.close(fig)
    return out


