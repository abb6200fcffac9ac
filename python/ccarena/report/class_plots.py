"""Figures of DualPI2's two queues (RFC 9332 §2.1: L4S for ECT(1) and CE packets, Classic for
the rest), in the style of :mod:`ccarena.report.plots`, each class in its colour
(:data:`ccarena.report.palette.CLASS_COLORS`), whatever flavors fill it:

- :func:`class_sojourn_cdfs` — each class's queueing-delay CDF, from the links table's
  per-class sojourn percentiles (:data:`ccarena.store.columns.SOJOURN_QUANTILES`);
- :func:`aqm_probability_vs_time` — the Classic probability p_C = p'² and the coupled L4S
  marking probability p_CL = min(k·p', 1) against time, from the queues samples.

:func:`dualpi2_links` picks the links these apply to. Every function returns a
:class:`matplotlib.figure.Figure`; write it with :func:`ccarena.report.plots.save`.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ccarena import units  # noqa: E402
from ccarena.report import plots  # noqa: E402
from ccarena.report.palette import CLASS_COLORS, CLASS_LABELS  # noqa: E402
from ccarena.store.columns import AQM_PROBABILITY_COLUMNS, DUALPI2_CLASSES, SOJOURN_QUANTILES  # noqa: E402

MAX_LINKS_DRAWN = 4
"""Most DualPI2 links one figure draws (the busiest); each link is a line style."""


def dualpi2_links(links: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``links`` whose queue is DualPI2 and held packets (their per-class columns
    finite, some packet of either class waited: not the ACK direction of an uncongested path),
    at most :data:`MAX_LINKS_DRAWN`, the busiest first; empty for a links table without the
    columns (a run stored before they existed, a backend that has none)."""
    departed_cols = [f"{c}_packets_departed" for c in DUALPI2_CLASSES]
    waited_cols = [f"{c}_sojourn_max_s" for c in DUALPI2_CLASSES]
    if len(links) == 0 or not all(c in links for c in departed_cols + waited_cols):
        return links.iloc[0:0]

    def total(cols: list[str]) -> pd.Series:
        return links[cols].apply(pd.to_numeric, errors="coerce").fillna(0.0).sum(axis=1)

    departed = total(departed_cols)
    held = (departed > 0) & (total(waited_cols) > 0)
    busy = links[held].assign(_departed=departed[held])
    busy = busy.sort_values("_departed", ascending=False, kind="stable").head(MAX_LINKS_DRAWN)
    return busy.drop(columns="_departed")


def _axes(title: str, xlabel: str, ylabel: str) -> tuple[plt.Figure, plt.Axes]:
    with matplotlib.rc_context(plots.STYLE):
        fig, ax = plt.subplots()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return fig, ax


def _legend(ax: plt.Axes) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def class_cdf_points(row: pd.Series | dict, cls: str) -> tuple[np.ndarray, np.ndarray]:
    """One class's sojourn CDF as points (sojourn in s, cumulative fraction) from its
    percentile columns in a links-table ``row``; the points whose value is not finite left out
    (all of them when no packet left the class's queue)."""
    x = np.array([float(row.get(f"{cls}_{field}", math.nan)) for field, _ in SOJOURN_QUANTILES])
    y = np.array([q for _, q in SOJOURN_QUANTILES])
    keep = np.isfinite(x)
    return x[keep], y[keep]


def class_sojourn_cdfs(links: pd.DataFrame, title: str) -> plt.Figure:
    """Each class's queueing-delay CDF on each of ``links`` (rows of :func:`dualpi2_links`):
    the percentiles joined by straight lines, sojourn on a log axis (L4S sits around a
    millisecond, Classic around the PI2 target); a legend entry per class and link gives its mean
    and p99 beside each other. Sojourns of 0 (a packet that found the link idle) have no place
    on the log axis: the curve starts at the first positive percentile, at the fraction of
    packets at or below it."""
    fig, ax = _axes(title, "queueing delay (ms, log scale)", "fraction of packets")
    styles = plots.LINESTYLES
    smallest = math.inf
    for i, row in enumerate(links.to_dict("records")):
        for cls in DUALPI2_CLASSES:
            x, y = class_cdf_points(row, cls)
            positive = x > 0
            if not positive.any():
                continue
            x_ms = x[positive] * 1e3
            smallest = min(smallest, float(x_ms.min()))
            mean, p99 = float(row[f"{cls}_sojourn_mean_s"]), float(row[f"{cls}_sojourn_p99_s"])
            where = f" on {row.get('name')}" if len(links) > 1 else ""
            label = (f"{CLASS_LABELS[cls]}{where}: mean {units.format_time(mean)}, "
                     f"p99 {units.format_time(p99)}")
            ax.plot(x_ms, y[positive], color=CLASS_COLORS[cls], linestyle=styles[i % len(styles)],
                    marker="o", markersize=3, label=label)
    if math.isfinite(smallest):
        ax.set_xscale("log")
    ax.set_ylim(0.0, 1.02)
    _legend(ax)
    return fig


def aqm_probability_vs_time(queues: pd.DataFrame, links: pd.DataFrame, title: str) -> plt.Figure:
    """DualPI2's Classic probability p_C = p'² and coupled L4S marking probability
    p_CL = min(k·p', 1) (percent) against time on each of ``links`` (rows of
    :func:`dualpi2_links`), from the ``queues`` samples' :data:`AQM_PROBABILITY_COLUMNS`; each
    class in its colour, each link a line style."""
    fig, ax = _axes(title, "time (s)", "probability (%, log scale)")
    styles = plots.LINESTYLES
    names = dict(zip(("classic", "l4s"), AQM_PROBABILITY_COLUMNS))
    labels = {"classic": "Classic p_C = p'²", "l4s": "L4S coupled p_CL = min(k·p', 1)"}
    for i, row in enumerate(links.to_dict("records")):
        mine = queues[queues["link"] == row["link"]].sort_values("time_s")
        where = f" on {row.get('name')}" if len(links) > 1 else ""
        for cls in ("l4s", "classic"):
            column = names[cls]
            if column not in mine:
                continue
            values = mine[column].to_numpy(dtype=float)
            if not np.isfinite(values).any():
                continue
            ax.plot(mine["time_s"].to_numpy(dtype=float), 100 * values, color=CLASS_COLORS[cls],
                    linestyle=styles[i % len(styles)], label=labels[cls] + where)
    # p_C = p'² sits two orders of magnitude below p_CL = k·p': a log scale (linear below
    # 0.001%, where the probabilities start from 0) shows both.
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_ylim(bottom=0)
    _legend(ax)
    return fig
