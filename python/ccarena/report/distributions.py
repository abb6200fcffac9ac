"""Figures that pool flows and runs per flavor, for scenarios with many flows or a variable link,
where one line per flow per run would be spaghetti:

- :func:`flavor_cdfs`: the empirical CDF of each per-flow metric (goodput, RTT, loss, FCT
  slowdown), one line per flavor (or flavor and sweep point), one panel per metric;
- :func:`flavor_bands_vs_time`: per flavor, the median over its flows of goodput (and RTT) per
  sample interval with the 10th–90th percentile band;
- :func:`throughput_vs_delay`: per flavor, the mean of (RTT, goodput) over its sample intervals
  with 10th–90th percentile whiskers on both axes, the delay axis reversed ("better" is up and to
  the right) as Pantheon (Yan et al., USENIX ATC 2018, Fig. 2) and Sprout (Winstein et al., NSDI
  2013) draw it.

Every line carries a gid ``"<kind>:<metric>|<group>|<flavor>"`` (the flavor last, as the time
series' ``"<run_id>|<flow>|<flavor>"``), so :func:`ccarena.report.plots.series_of` and
:func:`ccarena.report.plots.flavor_colors_of` read them like the others.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ccarena.report import plots

CDF_METRICS: tuple[tuple[str, str, float], ...] = (
    ("goodput_mean_bps", "goodput per flow (Mbps)", 1e6),
    ("rtt_mean_s", "mean RTT per flow (ms)", 1e-3),
    ("loss_rate", "loss rate per flow (%)", 1e-2),
    ("fct_slowdown", "FCT slowdown (FCT / ideal)", 1.0),
)
"""Per-flow summary column, axis label, divisor: the panels :func:`flavor_cdfs` can draw."""


def cdf_metrics(rows: pd.DataFrame) -> list[tuple[str, str, float]]:
    """The :data:`CDF_METRICS` worth a panel for ``rows``: those with a finite value, loss only
    when some flow lost a packet."""
    out = []
    for column, label, divisor in CDF_METRICS:
        if column not in rows:
            continue
        values = rows[column].to_numpy(dtype=float)
        finite = values[np.isfinite(values)]
        if not finite.size or (column == "loss_rate" and not np.any(finite > 0)):
            continue
        out.append((column, label, divisor))
    return out


def _legend_right(fig: plt.Figure, handles: dict[str, Any], title: str | None = None) -> None:
    if handles:
        fig.legend(list(handles.values()), list(handles.keys()), loc="upper left",
                   bbox_to_anchor=(1.0, 0.95), title=title, borderaxespad=0.0)


def flavor_cdfs(rows: pd.DataFrame, group_col: str, metrics: Sequence[tuple[str, str, float]],
                title: str) -> plt.Figure:
    """One panel per metric: the empirical CDF (fraction of flows ≤ x, a step per flow) of the
    per-flow ``metrics`` in ``rows``, one line per value of ``group_col`` coloured by its
    ``flavor`` (line style by the group's rank within its flavor); the legend, right of the
    panels, names each group with its number of flows. FCT slowdown is drawn on a log x axis.

    Args:
        rows: one row per flow and run, with ``flavor``, ``group_col`` and the metric columns.
        metrics: ``(column, axis label, divisor)`` each (:func:`cdf_metrics`).
    """
    n = len(metrics)
    cols = n if n <= 3 else 2
    nrows = math.ceil(n / cols)
    with matplotlib.rc_context(plots.STYLE):
        fig, axes = plt.subplots(nrows, cols, figsize=(3.6 * cols + 0.6, 3.0 * nrows + 0.6),
                                 squeeze=False)
    groups = list(rows.groupby(group_col, sort=False))
    rank: dict[str, int] = {}
    styles = {}
    for name, group in groups:
        flavor = str(group["flavor"].iloc[0])
        styles[str(name)] = (plots.flavor_color(flavor), plots.LINESTYLES[rank.get(flavor, 0) % len(plots.LINESTYLES)],
                             flavor)
        rank[flavor] = rank.get(flavor, 0) + 1
    handles: dict[str, Any] = {}
    for ax, (column, label, divisor) in zip(axes.flat, metrics):
        for name, group in groups:
            values = np.sort(group[column].to_numpy(dtype=float))
            values = values[np.isfinite(values)] / divisor
            if not values.size:
                continue
            colour, style, flavor = styles[str(name)]
            frac = np.arange(1, values.size + 1) / values.size
            x = np.concatenate([[values[0]], values])
            y = np.concatenate([[0.0], frac])
            (line,) = ax.step(x, y, where="post", color=colour, linestyle=style,
                              gid=f"cdf:{column}|{name}|{flavor}")
            handles.setdefault(f"{name} ({len(group)} flows)", line)
        ax.set_xlabel(label)
        ax.set_ylim(0, 1.02)
        if column == "fct_slowdown":
            ax.set_xscale("log")
    for ax in axes[:, 0]:
        ax.set_ylabel("fraction of flows ≤ x")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    _legend_right(fig, handles)
    return fig


def _band(samples: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per sample time: the median and the 10th/90th percentiles of ``column`` over the flows."""
    frame = samples[["time_s", column]].dropna()
    stats = frame.groupby("time_s")[column].quantile([0.1, 0.5, 0.9]).unstack()
    return stats.sort_index()


def flavor_bands_vs_time(runs: Sequence[tuple[str, pd.DataFrame, pd.DataFrame]], title: str,
                         capacity_series: tuple[np.ndarray, np.ndarray] | None = None) -> plt.Figure:
    """Goodput (and smoothed RTT where the flows have one) against time, pooled over each
    flavor's flows: per ``(label, samples, flows)`` run and flavor, the median over its flows per
    sample interval (a line) and the 10th–90th percentile band; colours by flavor; the y axes
    not set by a single spike (:func:`ccarena.report.plots.clip_spikes`). ``label`` names the run
    in words (its swept values) when it is not the flavor itself."""
    timed = any("srtt_s" in s and s["srtt_s"].notna().any() for _, s, _ in runs)
    panels = [("goodput_bps", "goodput (Mbps)", 1e6)] + ([("srtt_s", "smoothed RTT (ms)", 1e-3)] if timed else [])
    with matplotlib.rc_context(plots.STYLE):
        fig, axes = plt.subplots(len(panels), 1, figsize=(8.0, 3.0 * len(panels) + 0.4), sharex=True,
                                 squeeze=False)
    handles: dict[str, Any] = {}
    for ax, (column, label, divisor) in zip(axes[:, 0], panels):
        reference = None
        if column == "goodput_bps" and capacity_series is not None and len(capacity_series[0]):
            plots.draw_capacity(ax, *capacity_series)
            reference = float(np.max(capacity_series[1])) / 1e6
            handles.setdefault(ax.get_lines()[-1].get_label(), ax.get_lines()[-1])
        pooled = []
        for run_label, samples, flows in runs:
            if column not in samples or not len(samples):
                continue
            flavor_of = dict(zip(flows["flow"], flows["flavor"].astype(str)))
            mine = samples.assign(_flavor=samples["flow"].map(flavor_of))
            for flavor, part in mine.groupby("_flavor", sort=False):
                band = _band(part, column)
                if band.empty:
                    continue
                name = flavor if run_label in ("", flavor) else f"{flavor}, {run_label}"
                colour = plots.flavor_color(flavor)
                t = band.index.to_numpy(dtype=float)
                n = int(part["flow"].nunique())
                if n > 1:
                    # A light fill with its edges drawn thin: several flavors' bands overlap.
                    ax.fill_between(t, band[0.1] / divisor, band[0.9] / divisor, color=colour,
                                    alpha=0.1, linewidth=0)
                    for edge in (0.1, 0.9):
                        ax.plot(t, band[edge] / divisor, color=colour, linewidth=0.6, alpha=0.7,
                                linestyle=(0, (2, 2)))
                (line,) = ax.plot(t, band[0.5] / divisor, color=colour, gid=f"band:{column}|{name}|{flavor}")
                handles.setdefault(f"{name}: median of {n} flows" if n > 1 else name, line)
                # What is drawn (median and band), not every flow's sample, decides the axis.
                pooled.append(band[[0.1, 0.5, 0.9]].to_numpy(dtype=float).ravel() / divisor)
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        if pooled:
            plots.clip_spikes(ax, np.concatenate(pooled), reference, "Mbps" if column == "goodput_bps" else "ms",
                              "drawn values")
    axes[-1, 0].set_xlabel("time (s)")
    from matplotlib.patches import Patch

    if any(": median of " in label for label in handles):
        handles["band (dotted edges): 10th–90th percentile over the flows"] = Patch(facecolor="0.8")
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    _legend_right(fig, handles)
    return fig


def delay_points(samples: pd.DataFrame, flows: pd.DataFrame) -> pd.DataFrame:
    """The sample intervals of the window-based flows that carry data: ``flavor``, ``goodput_bps``
    and ``srtt_s`` per (flow, sample)."""
    if not len(samples) or "srtt_s" not in samples or "goodput_bps" not in samples:
        return pd.DataFrame(columns=["flavor", "goodput_bps", "srtt_s"])
    windowed = flows[flows["kind"].isin(["tcp", "quic", "udt"])] if "kind" in flows else flows
    flavor_of = dict(zip(windowed["flow"], windowed["flavor"].astype(str)))
    mine = samples[samples["flow"].isin(flavor_of)]
    mine = mine.assign(flavor=mine["flow"].map(flavor_of))[["flavor", "goodput_bps", "srtt_s"]]
    return mine[np.isfinite(mine["srtt_s"].to_numpy(dtype=float)) & (mine["srtt_s"] > 0)]


def throughput_vs_delay(points: pd.DataFrame, title: str) -> plt.Figure:
    """Per flavor, one marker at the mean smoothed RTT (x, ms) and mean goodput (y, Mbps) of its
    sample intervals, with whiskers from the 10th to the 90th percentile of each; the x axis
    reversed (lower delay to the right) as Pantheon draws it, so the best flavors sit top right.

    Args:
        points: one row per flow and sample interval: ``flavor``, ``goodput_bps``, ``srtt_s``
            (:func:`delay_points`, pooled over a flavor's runs) and optionally ``group`` (a
            flavor and sweep point in words: one marker per group, coloured by its flavor).
    """
    fig, ax = plots._figure(title, "smoothed RTT (ms; reversed: lower is better →)", "goodput (Mbps)")
    from matplotlib.lines import Line2D

    handles: dict[str, Any] = {}
    key = "group" if "group" in points else "flavor"
    for name, group in points.groupby(key, sort=False):
        flavor = str(group["flavor"].iloc[0])
        x = group["srtt_s"].to_numpy(dtype=float) * 1e3
        y = group["goodput_bps"].to_numpy(dtype=float) / 1e6
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        if not x.size:
            continue
        colour = plots.flavor_color(flavor)
        mx, my = float(x.mean()), float(y.mean())
        x10, x90 = np.percentile(x, [10, 90])
        y10, y90 = np.percentile(y, [10, 90])
        bars = ax.errorbar([mx], [my], xerr=[[max(mx - x10, 0.0)], [max(x90 - mx, 0.0)]],
                           yerr=[[max(my - y10, 0.0)], [max(y90 - my, 0.0)]], color=colour, marker="o",
                           markersize=8, capsize=3, linestyle="none")
        bars._ccarena_flavor = flavor  # type: ignore[attr-defined]  # read by flavor_colors_of
        bars.lines[0].set_gid(f"tput-delay:mean|{name}|{flavor}")
        ax.annotate(str(name), (mx, my), textcoords="offset points", xytext=(6, 6), fontsize=9,
                    color=colour)
        handles[str(name)] = Line2D([], [], color=colour, marker="o", linestyle="none")
    handles["whiskers: 10th–90th percentile of the sample intervals"] = Line2D([], [], color="0.4",
                                                                           marker="|", linestyle="-")
    ax.invert_xaxis()
    ax.set_ylim(bottom=0)
    ax.legend(list(handles.values()), list(handles.keys()), loc="upper left", bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0.0)
    return fig
