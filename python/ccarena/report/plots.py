"""Figures, in one consistent style (matplotlib, Agg backend).

Per run: goodput, cwnd and ssthresh, RTT, queue backlog and cumulative delivered bytes against
time. Per sweep: a metric against each swept parameter, mean over repeats with 95% confidence
intervals as error bars, with the theory curve (Mathis for Reno-family flows, RFC 9438's response
function for CUBIC) when the parameter is a loss probability.

Every function returns a :class:`matplotlib.figure.Figure`; :func:`save` writes it as PNG.
Each flow keeps its colour in every figure of a run (by flow index).
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ccarena import units  # noqa: E402
from ccarena.analysis import theory  # noqa: E402

STYLE: dict[str, Any] = {
    "figure.figsize": (8.0, 4.0),
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "savefig.bbox": "tight",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "lines.linewidth": 1.4,
    "font.family": "DejaVu Sans",
}
"""Matplotlib settings every ccarena figure uses."""

COLORS = plt.get_cmap("tab10").colors
RENO_FAMILY = ("tahoe", "reno", "newreno")


def color(flow: int) -> tuple[float, float, float]:
    """The colour of flow index ``flow`` (the same in every figure)."""
    return COLORS[int(flow) % len(COLORS)]


def _figure(title: str, xlabel: str, ylabel: str) -> tuple[plt.Figure, plt.Axes]:
    with matplotlib.rc_context(STYLE):
        fig, ax = plt.subplots()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return fig, ax


def _finish(fig: plt.Figure, ax: plt.Axes) -> plt.Figure:
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="best")
    return fig


def _per_flow(ax: plt.Axes, samples: pd.DataFrame, flows: pd.DataFrame, column: str,
              scale: float | dict[int, float], **style: Any) -> None:
    for row in flows.itertuples(index=False):
        mine = samples[samples["flow"] == row.flow].sort_values("time_s")
        y = mine[column].to_numpy(dtype=float)
        if not np.any(np.isfinite(y)):
            continue
        factor = scale[int(row.flow)] if isinstance(scale, dict) else scale
        ax.plot(mine["time_s"], y / factor, color=color(row.flow), label=str(row.name), **style)


def goodput_vs_time(samples: pd.DataFrame, flows: pd.DataFrame, title: str) -> plt.Figure:
    """Goodput of each flow per sample interval (Mbps) against time (s)."""
    fig, ax = _figure(title, "time (s)", "goodput (Mbps)")
    _per_flow(ax, samples, flows, "goodput_bps", 1e6)
    ax.set_ylim(bottom=0)
    return _finish(fig, ax)


def cwnd_vs_time(samples: pd.DataFrame, flows: pd.DataFrame, mss_bytes: dict[int, float],
                 title: str) -> plt.Figure:
    """cwnd (solid) and ssthresh (dashed) of each TCP or UDT flow, in MSS-sized packets, against
    time (UDT has no ssthresh)."""
    fig, ax = _figure(title, "time (s)", "window (packets of MSS)")
    tcp = flows[flows["kind"].isin(["tcp", "udt"])]
    _per_flow(ax, samples, tcp, "cwnd_bytes", mss_bytes)
    for row in tcp.itertuples(index=False):
        mine = samples[samples["flow"] == row.flow].sort_values("time_s")
        y = mine["ssthresh_bytes"].to_numpy(dtype=float) / mss_bytes[int(row.flow)]
        y[y > 1e6] = np.nan  # "infinite" ssthresh before the first loss
        if np.any(np.isfinite(y)):
            ax.plot(mine["time_s"], y, color=color(row.flow), linestyle="--",
                    label=f"{row.name} ssthresh")
    ax.set_ylim(bottom=0)
    return _finish(fig, ax)


def rtt_vs_time(samples: pd.DataFrame, flows: pd.DataFrame, title: str) -> plt.Figure:
    """Smoothed RTT (srtt, ms) of each TCP or UDT flow against time."""
    fig, ax = _figure(title, "time (s)", "smoothed RTT (ms)")
    _per_flow(ax, samples, flows[flows["kind"].isin(["tcp", "udt"])], "srtt_s", 1e-3)
    ax.set_ylim(bottom=0)
    return _finish(fig, ax)


def backlog_vs_time(queues: pd.DataFrame, links: pd.DataFrame, title: str) -> plt.Figure:
    """Backlog (packets) of the given links' queues against time."""
    fig, ax = _figure(title, "time (s)", "queue backlog (packets)")
    for i, row in enumerate(links.itertuples(index=False)):
        mine = queues[queues["link"] == row.link].sort_values("time_s")
        ax.plot(mine["time_s"], mine["backlog_packets"], color=COLORS[(i + 7) % len(COLORS)],
                label=str(row.name))
    ax.set_ylim(bottom=0)
    return _finish(fig, ax)


def delivered_vs_time(samples: pd.DataFrame, flows: pd.DataFrame, title: str) -> plt.Figure:
    """Cumulative payload delivered (MB) of each flow against time."""
    fig, ax = _figure(title, "time (s)", "delivered (MB)")
    _per_flow(ax, samples, flows, "delivered_bytes", 1e6)
    ax.set_ylim(bottom=0)
    return _finish(fig, ax)


METRIC_LABELS = {
    "goodput_mean_bps": ("goodput (Mbps)", 1e6),
    "throughput_mean_bps": ("throughput (Mbps)", 1e6),
    "jain_index": ("Jain's fairness index", 1.0),
    "fct_s": ("flow completion time (s)", 1.0),
    "rtt_mean_s": ("mean RTT (ms)", 1e-3),
    "loss_rate": ("loss rate (%)", 1e-2),
}
"""Metric column → (axis label, divisor)."""


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
                    theory_rows: pd.DataFrame | None = None) -> plt.Figure | None:
    """A metric (mean over repeats, 95% CI error bars) against a swept parameter, one line per
    group (flow, and the other swept parameters), with the theory curves where they apply.

    Args:
        aggregated: :func:`ccarena.analysis.metrics.aggregate_repeats` output (has ``metric``,
            ``metric_ci95``, ``param`` and the ``group_by`` columns).
        theory_rows: summary rows (``flavor, kind, path_loss, base_rtt_s`` and the per-flow MSS
            given as ``mss_bytes``) to draw Mathis / CUBIC curves from; None for no theory.

    Returns None when the parameter is not numeric or the metric has no finite value (RTT of
    UDP flows).
    """
    axis = param_axis(aggregated[param].tolist())
    if axis is None or not np.any(np.isfinite(aggregated[metric].to_numpy(dtype=float))):
        return None
    xs, unit = axis
    label, divisor = METRIC_LABELS.get(metric, (metric, 1.0))
    fig, ax = _figure(title, f"{param}" + (f" ({unit})" if unit else ""), label)
    data = aggregated.assign(_x=xs)
    for i, (key, group) in enumerate(data.groupby(list(group_by), sort=False, dropna=False)):
        key = key if isinstance(key, tuple) else (key,)
        group = group.sort_values("_x")
        name = ", ".join(str(k) for k, col in zip(key, group_by) if col != "flow")
        flow = int(group["flow"].iloc[0]) if "flow" in group.columns else i
        y = group[metric].to_numpy(dtype=float) / divisor
        err = group[f"{metric}_ci95"].to_numpy(dtype=float) / divisor
        err = np.where(np.isfinite(err), err, 0.0)
        ax.errorbar(group["_x"], y, yerr=err, color=color(flow), marker="o", capsize=3, label=name)
        if theory_rows is not None and metric == "goodput_mean_bps":
            _theory_overlay(ax, group, theory_rows, param, flow)
    _y_scale(ax, data[metric].to_numpy(dtype=float) / divisor)
    return _finish(fig, ax)


def _y_scale(ax: plt.Axes, y: np.ndarray) -> None:
    """A log y axis when the measured values span more than 20x (e.g. goodput from 100 Mbps at
    0% loss to 1 Mbps at 5%), else a linear one from 0."""
    positive = y[np.isfinite(y) & (y > 0)]
    if positive.size >= 2 and positive.max() / positive.min() > 20:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)


def _theory_overlay(ax: plt.Axes, group: pd.DataFrame, rows: pd.DataFrame, param: str,
                    flow: int) -> None:
    """Draw Mathis and Padhye (Reno family) or CUBIC's response function along the group's x range, mapping
    x to the path loss probability by interpolating the runs' path_loss."""
    mine = rows[(rows["flow"] == flow) & rows["point"].isin(group["point"])]
    if mine.empty or (mine["kind"] != "tcp").any():
        return
    flavors = set(mine["flavor"].astype(str))
    if len(flavors) != 1:
        return
    flavor = flavors.pop()
    per_point = mine.groupby("point").agg(path_loss=("path_loss", "mean"),
                                          base_rtt_s=("base_rtt_s", "mean"),
                                          mss_bytes=("mss_bytes", "mean"))
    pts = group.set_index("point")["_x"].to_frame().join(per_point).sort_values("_x")
    if pts["path_loss"].nunique() < 2 or not (pts["path_loss"] > 0).any():
        return
    x_dense = np.linspace(pts["_x"].min(), pts["_x"].max(), 200)
    p_dense = np.interp(x_dense, pts["_x"], pts["path_loss"])
    rtt = float(pts["base_rtt_s"].mean())
    mss = float(pts["mss_bytes"].mean())
    ok = p_dense > 0
    if flavor in RENO_FAMILY:
        curves = [(theory.mathis_bps(mss, rtt, p_dense[ok]), "Mathis et al. 1997", ":"),
                  # T0 as in metrics.flow_table: the 200 ms minimum RTO, or the RTT if longer.
                  (theory.padhye_bps(mss, rtt, p_dense[ok], rto_s=max(0.2, rtt)),
                   "Padhye et al. 1998", "-.")]
    elif flavor == "cubic":
        curves = [(theory.cubic_bps(mss, rtt, p_dense[ok]), "CUBIC (RFC 9438 §5.1)", ":")]
    else:
        return
    capacity = float(mine["bottleneck_rate_bps"].max())
    for y, name, style in curves:
        y = np.minimum(y, capacity) if math.isfinite(capacity) else y
        ax.plot(x_dense[ok], y / 1e6, color=color(flow), linestyle=style, linewidth=1.6,
                label=f"{name}, base RTT {rtt * 1e3:.0f} ms (capped at link rate)")


def data_points(fig: plt.Figure) -> int:
    """How many data points ``fig`` draws: finite points of its lines, markers and error bars,
    cells of its images (heatmaps) and bars — 0 for a figure with axes but no data."""
    total = 0
    for ax in fig.axes:
        for line in ax.get_lines():
            x = np.asarray(line.get_xdata(), dtype=float)
            y = np.asarray(line.get_ydata(), dtype=float)
            if x.size > 1 or line.get_marker() not in (None, "", "None", " "):
                total += int(np.count_nonzero(np.isfinite(x) & np.isfinite(y)))
        for image in ax.get_images():
            total += int(np.ma.count(image.get_array()))
        for collection in ax.collections:
            total += len(collection.get_offsets()) if hasattr(collection, "get_offsets") else 0
        total += sum(1 for p in ax.patches if p.get_height() != 0) if ax.patches else 0
    return total


def save(fig: plt.Figure, path: Path) -> bytes:
    """Write ``fig`` as PNG to ``path`` and return the PNG bytes (for embedding); closes ``fig``."""
    buffer = io.BytesIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buffer, format="png")
    plt.close(fig)
    data = buffer.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data
