"""Sweep figures: a metric (mean over repeats, 95% confidence intervals) against each swept
parameter, as lines for numeric values (:func:`metric_vs_param`, with the throughput models of
:func:`ccarena.analysis.theory.response_functions` overlaid when the path's loss or RTT varies) and
as grouped bars for categories (:func:`metric_vs_category`). Labels, units and ranges come from
the metric catalogue (:mod:`ccarena.analysis.catalogue`); style, colours and legends from
:mod:`ccarena.report.plots`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from ccarena import units
from ccarena.analysis import catalogue, theory
from ccarena.report.palette import FlavorPalette
from ccarena.report.plots import LINESTYLES, _figure, _finish, color, flavor_color

if TYPE_CHECKING:
    import matplotlib.pyplot as plt

THEORY_LINESTYLES = (":", "-.")
"""Line style of the first and second model curve of a flavor
(:func:`ccarena.analysis.theory.response_functions`: Mathis dotted, Padhye dash-dotted)."""


def param_axis(values: Sequence[Any]) -> tuple[np.ndarray, str] | None:
    """x positions and unit for swept values, in the unit the user wrote (``"0.5%"`` → 0.5, "%").

    Values in mixed units are converted to their base unit. Returns None when the values are not
    numbers (e.g. flavor names).
    """
    parsed = [units.number_and_unit(v) for v in values]
    if any(p is None for p in parsed):
        return None
    unit_set = {u for _, u in parsed}
    if len(unit_set) == 1:
        return np.array([x for x, _ in parsed], dtype=float), unit_set.pop()
    based = [units.to_base_unit(v) for v in values]
    if any(b is None for b in based) or len({k for _, k in based}) != 1:
        return None
    return np.array([x for x, _ in based], dtype=float), based[0][1]


def metric_vs_param(aggregated: pd.DataFrame, param: str, metric: str,
                    group_by: Sequence[str], title: str,
                    theory_rows: pd.DataFrame | None = None,
                    labels: dict[str, dict[str, str]] | None = None,
                    palette: FlavorPalette | None = None) -> plt.Figure | None:
    """A metric (mean over repeats, 95% CI error bars) against a swept parameter, one line per
    group (flow, and the other swept parameters), with the theory curves where they apply.

    Args:
        aggregated: :func:`ccarena.analysis.metrics.aggregate_repeats` output (has ``metric``,
            ``metric_ci95``, ``param`` and the ``group_by`` columns).
        theory_rows: summary rows (``flavor, kind, path_loss, base_rtt_s`` and the per-flow MSS
            given as ``mss_bytes``) to draw Mathis / CUBIC curves from; None for no theory.
        labels: ``[report] labels`` (parameter → value → label) naming the other swept values in
            the legend.

    Returns None when the parameter is not numeric or the metric has no finite value (RTT of
    UDP flows).
    """
    axis = param_axis(aggregated[param].tolist())
    if axis is None or not np.any(np.isfinite(aggregated[metric].to_numpy(dtype=float))):
        return None
    xs, unit = axis
    label, divisor = catalogue.axis(metric)
    fig, ax = _figure(title, f"{param}" + (f" ({unit})" if unit else ""), label)
    data = aggregated.assign(_x=xs)
    low, high = catalogue.value_range(metric)
    rank: dict[str, int] = {}
    for i, (key, group) in enumerate(data.groupby(list(group_by), sort=False, dropna=False)):
        key = key if isinstance(key, tuple) else (key,)
        group = group.sort_values("_x")
        name = ", ".join((labels or {}).get(col, {}).get(str(k), str(k))
                         for k, col in zip(key, group_by) if col != "flow")
        flow = int(group["flow"].iloc[0]) if "flow" in group.columns else i
        flavor = str(group["flavor"].iloc[0]) if "flavor" in group.columns else ""
        n = rank.get(flavor, 0)
        rank[flavor] = n + 1
        colour = flavor_color(flavor, palette) if flavor else color(i)
        y = group[metric].to_numpy(dtype=float) / divisor
        err = group[f"{metric}_ci95"].to_numpy(dtype=float) / divisor
        err = np.where(np.isfinite(err), err, 0.0)
        # Error bars stay inside the metric's range (a Jain index CI never above 1).
        below = np.clip(np.minimum(err, y - low / divisor), 0.0, None)
        above = np.clip(np.minimum(err, high / divisor - y), 0.0, None)
        bars = ax.errorbar(group["_x"], y, yerr=[below, above], color=colour,
                           marker=MARKERS[n % len(MARKERS)], linestyle=LINESTYLES[n % len(LINESTYLES)],
                           capsize=3, label=name)
        bars._ccarena_flavor = flavor  # type: ignore[attr-defined]  # read by flavor_colors_of
        if theory_rows is not None and metric == "goodput_mean_bps":
            _theory_overlay(ax, group, theory_rows, param, flow, colour)
    y_scale(ax, data[metric].to_numpy(dtype=float) / divisor)
    if metric == "jain_index":
        ax.set_ylim(0, 1.02)
    return _finish(fig, ax)


MARKERS = ("o", "s", "^", "D", "v", "P", "X")
"""Marker of the n-th group of one flavor in a sweep figure."""


def y_scale(ax: plt.Axes, y: np.ndarray) -> None:
    """A log y axis when the measured values span more than 20x (e.g. goodput from 100 Mbps at
    0% loss to 1 Mbps at 5%), else a linear one from 0."""
    positive = y[np.isfinite(y) & (y > 0)]
    if positive.size >= 2 and positive.max() / positive.min() > 20:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)


def _theory_overlay(ax: plt.Axes, group: pd.DataFrame, rows: pd.DataFrame, param: str,
                    flow: int, colour: Any) -> None:
    """Draw Mathis and Padhye (Reno family) or CUBIC's response function along the group's x range.

    x maps to the path's loss probability and base RTT by interpolating the runs' ``path_loss``
    and ``base_rtt_s``, so one overlay serves a loss sweep (the 1/√p law at a fixed RTT) and a
    delay sweep at a fixed loss (the 1/RTT law, seed 002's Fig. 4); nothing is drawn when neither
    varies or the path has no random loss."""
    mine = rows[(rows["flow"] == flow) & rows["point"].isin(group["point"])]
    if mine.empty or (~mine["kind"].isin(["tcp", "quic"])).any():
        return
    flavors = set(mine["flavor"].astype(str))
    if len(flavors) != 1:
        return
    flavor = flavors.pop()
    per_point = mine.groupby("point").agg(path_loss=("path_loss", "mean"),
                                          base_rtt_s=("base_rtt_s", "mean"),
                                          mss_bytes=("mss_bytes", "mean"))
    pts = group.set_index("point")["_x"].to_frame().join(per_point).sort_values("_x")
    loss_varies = pts["path_loss"].nunique() >= 2
    rtt_varies = pts["base_rtt_s"].nunique() >= 2 and bool((pts["base_rtt_s"] > 0).all())
    if not (loss_varies or rtt_varies) or not (pts["path_loss"] > 0).any():
        return
    x_dense = np.linspace(pts["_x"].min(), pts["_x"].max(), 200)
    p_dense = np.interp(x_dense, pts["_x"], pts["path_loss"])
    rtt_dense = np.interp(x_dense, pts["_x"], pts["base_rtt_s"])
    mss = float(pts["mss_bytes"].mean())
    ok = (p_dense > 0) & (rtt_dense > 0)
    p_ok, rtt_ok = p_dense[ok], rtt_dense[ok]
    if loss_varies:
        where = f"base RTT {float(pts['base_rtt_s'].mean()) * 1e3:.0f} ms"
    else:
        where = f"∝ 1/RTT at {float(pts['path_loss'].mean()) * 100:.3g}% loss"
    curves = theory.response_functions(flavor, mss, rtt_ok, p_ok)
    if not curves:
        return
    capacity = float(mine["bottleneck_rate_bps"].max())
    for (name, y), style in zip(curves, THEORY_LINESTYLES):
        y = np.minimum(y, capacity) if math.isfinite(capacity) else y
        ax.plot(x_dense[ok], y / 1e6, color=colour, linestyle=style, linewidth=1.6,
                label=f"{name}, {where} (capped at link rate)")


HATCHES = ("", "//", "..", "xx", "\\\\", "oo", "--")
"""Hatch of the n-th bar group (a flow, or another swept value) in a categorical sweep figure."""
MAX_BAR_GROUPS = 12
"""Above this many bar groups (flows, or other swept values) a categorical sweep figure draws one
bar per value and flavor: the mean over the groups, whiskers from their lowest to their highest."""


def _collapsed_bars(ax: plt.Axes, aggregated: pd.DataFrame, param: str, metric: str,
                    values: list[str], divisor: float, flavors_seen: dict[str, Any],
                    palette: FlavorPalette | None = None) -> None:
    """Per value of ``param`` and flavor, a bar of ``metric``'s mean over its rows with a whisker
    from the smallest to the largest row (in the flavor's colour), side by side when a value has
    several flavors."""
    data = aggregated.assign(_value=aggregated[param].astype(str),
                             _flavor=aggregated["flavor"].astype(str) if "flavor" in aggregated else "")
    stats = data.groupby(["_value", "_flavor"], sort=False)[metric].agg(["mean", "min", "max"])
    per_value = stats.groupby(level=0, sort=False).size()
    width = 0.8 / max(1, int(per_value.max()))
    position = {v: 0 for v in values}
    for flavor in dict.fromkeys(stats.index.get_level_values(1)):
        part = stats.xs(flavor, level=1)
        x = []
        for v in part.index:
            n = int(per_value[v])
            x.append(values.index(v) + (position[v] - (n - 1) / 2) * width)
            position[v] += 1
        mean, lo, hi = (part[c].to_numpy(dtype=float) / divisor for c in ("mean", "min", "max"))
        colour = flavor_color(flavor, palette) if flavor else color(0)
        bar = ax.bar(x, mean, width=width * 0.95, color=colour, edgecolor="white",
                     yerr=[np.clip(mean - lo, 0, None), np.clip(hi - mean, 0, None)], capsize=3,
                     ecolor="0.25")
        bar._ccarena_flavor = flavor  # type: ignore[attr-defined]
        flavors_seen.setdefault(flavor, colour)


def _group_names(groups: list[tuple[Any, pd.DataFrame]], group_by: Sequence[str],
                 group_labels: dict[str, dict[str, str]] | None) -> list[str]:
    """The legend name of each bar group: its swept values (as ``group_labels`` show them), with
    the flow's name first where those alone would name two groups alike (flows of one run)."""
    names = []
    for i, (key, group) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        parts = [(group_labels or {}).get(col, {}).get(str(k), str(k))
                 for k, col in zip(key, group_by) if col not in ("flow", "point_group")]
        names.append(", ".join(parts))
    if len(set(names)) < len(names) and all("name" in g for _, g in groups):
        names = [", ".join([str(g["name"].iloc[0])] + ([n] if n else [])) for (_, g), n in zip(groups, names)]
    return [n or f"group {i}" for i, n in enumerate(names)]


def metric_vs_category(aggregated: pd.DataFrame, param: str, metric: str, group_by: Sequence[str],
                       title: str, labels: dict[str, str] | None = None,
                       group_labels: dict[str, dict[str, str]] | None = None,
                       palette: FlavorPalette | None = None) -> plt.Figure | None:
    """A metric (mean over repeats, 95% CI whiskers kept in the metric's range) at each value of
    a categorical swept parameter (a flavor, a recovery, a discipline, or values given
    ``[report] labels``) as grouped bars: one bar group per value of ``param`` (shown by
    ``labels`` when given), one bar per group of ``group_by`` (hatched by group), each bar in
    the colour of its flavor. None when the metric has no finite value."""
    if not np.any(np.isfinite(aggregated[metric].to_numpy(dtype=float))):
        return None
    label, divisor = catalogue.axis(metric)
    low, high = catalogue.value_range(metric)
    values = list(dict.fromkeys(aggregated[param].astype(str)))
    shown = [(labels or {}).get(v, v) for v in values]
    fig, ax = _figure(title, param, label)
    fig.set_size_inches(max(6.0, 1.0 + 0.9 * len(values) * max(1, aggregated.groupby(list(group_by)).ngroups) ** 0.5), 4.0)
    groups = list(aggregated.groupby(list(group_by), sort=False, dropna=False))
    flavors_seen: dict[str, Any] = {}
    from matplotlib.patches import Patch

    group_handles = []
    if len(groups) > MAX_BAR_GROUPS:
        # Hundreds of flows (an incast, a permutation) as side-by-side bars are unreadable: one bar
        # per value and flavor, the mean over the flows, whiskers from the lowest to the highest.
        _collapsed_bars(ax, aggregated, param, metric, values, divisor, flavors_seen, palette)
        group_handles.append(Patch(facecolor="0.8", edgecolor="white",
                                   label=f"mean of {len(groups)} flows; whiskers min–max"))
    else:
        width = 0.8 / max(1, len(groups))
        legend_names = _group_names(groups, group_by, group_labels)
        for i, (key, group) in enumerate(groups):
            offset = (i - (len(groups) - 1) / 2) * width
            x = np.array([values.index(v) for v in group[param].astype(str)], dtype=float) + offset
            y = group[metric].to_numpy(dtype=float) / divisor
            ci = f"{metric}_ci95"
            half = group[ci].to_numpy(dtype=float) / divisor if ci in group else np.zeros(len(group))
            half = np.where(np.isfinite(half), half, 0.0)
            below = np.clip(np.minimum(half, y - low / divisor), 0.0, None)
            above = np.clip(np.minimum(half, high / divisor - y), 0.0, None)
            flavor_col = group["flavor"].astype(str).to_numpy() if "flavor" in group else np.full(len(group), "")
            # One call per flavor (not per bar): a report of many runs draws thousands of bars.
            for flavor in dict.fromkeys(flavor_col):
                sel = flavor_col == flavor
                colour = flavor_color(flavor, palette) if flavor else color(i)
                bar = ax.bar(x[sel], y[sel], width=width * 0.95, color=colour,
                             hatch=HATCHES[i % len(HATCHES)], edgecolor="white",
                             yerr=[below[sel], above[sel]], capsize=3, ecolor="0.25")
                bar._ccarena_flavor = flavor  # type: ignore[attr-defined]
                flavors_seen.setdefault(flavor, colour)
            if len(groups) > 1:
                group_handles.append(Patch(facecolor="0.8", hatch=HATCHES[i % len(HATCHES)],
                                           edgecolor="white", label=legend_names[i]))
    ax.set_xticks(range(len(values)), shown, rotation=30 if sum(len(s) for s in shown) > 60 else 0,
                  ha="right" if sum(len(s) for s in shown) > 60 else "center")
    ax.set_ylim(0, 1.02 if metric == "jain_index" else None)
    handles = [Patch(facecolor=c, label=f) for f, c in flavors_seen.items() if f] + group_handles
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig
