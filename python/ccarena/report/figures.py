"""The report's figures: each a :class:`Figure` (title, file, PNG, how many points it draws), and
the standard set per experiment (:func:`draw_figures`): time series per run, metric against each
swept parameter."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccarena.analysis import metrics
from ccarena.report import plots


@dataclass
class Figure:
    """A figure in the report: title, file name under figures/, PNG bytes, and how many data
    points it draws (:func:`ccarena.report.plots.data_points`; the page carries it as ``data-points``)."""

    title: str
    file: str
    png: bytes
    points: int = 0

    @classmethod
    def draw(cls, fig: Any, title: str, file: str, figures_dir: Path) -> "Figure":
        """Count ``fig``'s data points, save it as ``figures_dir/file`` and close it."""
        points = plots.data_points(fig)
        return cls(title, file, plots.save(fig, figures_dir / file), points)

    @property
    def data_uri(self) -> str:
        """The PNG as a data URI for embedding."""
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


MAX_QUEUES_DRAWN = 6
"""Most queues one backlog figure draws (the busiest): a fabric has hundreds."""


def _watched_queues(links: pd.DataFrame, queues: pd.DataFrame) -> pd.DataFrame:
    """The links whose backlog a run's queue figure draws: its bottlenecks and the links that
    dropped packets, else (a fabric with no bottleneck role) the sampled links that held a queue;
    at most :data:`MAX_QUEUES_DRAWN`, the deepest first. Empty when no queue ever held a packet."""
    sampled = set(queues["link"].unique()) if "link" in queues else set()
    links = links[links["link"].isin(sampled)]
    watched = links[links["role"].isin(metrics.BOTTLENECK_ROLES) | (links["packets_dropped_queue"] > 0)]
    if watched.empty and "backlog_max_packets" in links:
        watched = links[links["backlog_max_packets"] > 0]
    if len(watched) > MAX_QUEUES_DRAWN:
        depth = "backlog_max_packets" if "backlog_max_packets" in watched else "packets_dropped_queue"
        watched = watched.sort_values(depth, ascending=False, kind="stable").head(MAX_QUEUES_DRAWN)
    return watched


def draw_figures(result: Any, figures_dir: Path, max_runs: int = 4, prefix: str = "") -> list[Figure]:
    """Draw every figure of the report into ``figures_dir``.

    Time series for the first repeat of up to ``max_runs`` grid points; metric-vs-parameter
    figures for each numeric swept parameter when there is a sweep. ``prefix`` starts the file
    names of figures that are not per run (a part's name).
    """
    out: list[Figure] = []
    summary = result.summary
    shown = summary[summary["repeat"] == 0].drop_duplicates("point")["run_id"].tolist()[:max_runs]
    for run_id in shown:
        flows = result.store.read_table(run_id, "flows")
        samples = result.store.read_table(run_id, "samples")
        queues = result.store.read_table(run_id, "queues")
        links = result.store.read_table(run_id, "links")
        record = result.store.read_run_record(run_id)
        mss = {int(f["flow"] if "flow" in f else i): float(f.get("mss_bytes") or 1448)
               for i, f in enumerate(flows.to_dict("records"))}
        label = run_id if len(shown) > 1 or record.get("params") else result.name
        watched = _watched_queues(links, queues)
        # cwnd and RTT exist only for window-based flows: a UDP-only run has none to draw.
        windowed = bool(samples["cwnd_bytes"].notna().any()) if "cwnd_bytes" in samples else False
        timed = bool(samples["srtt_s"].notna().any()) if "srtt_s" in samples else False
        figs = [
            ("goodput", f"Goodput per flow — {label}", plots.goodput_vs_time(samples, flows, f"Goodput — {label}")),
            *([("cwnd", f"cwnd and ssthresh — {label}", plots.cwnd_vs_time(samples, flows, mss, f"cwnd and ssthresh — {label}"))]
              if windowed else []),
            *([("rtt", f"RTT — {label}", plots.rtt_vs_time(samples, flows, f"Smoothed RTT — {label}"))]
              if timed else []),
            *([("queue", f"Queue backlog — {label}", plots.backlog_vs_time(queues, watched, f"Queue backlog — {label}"))]
              if len(watched) else []),
            ("delivered", f"Cumulative delivered bytes — {label}", plots.delivered_vs_time(samples, flows, f"Delivered — {label}")),
        ]
        for key, title, fig in figs:
            name = f"{run_id}-{key}.png"
            out.append(Figure.draw(fig, title, name, figures_dir))
    params = result.parameters
    if params:
        aggregated = result.aggregate()
        per_metric = ["goodput_mean_bps"]
        if summary.groupby("run_id").size().max() > 1:
            per_metric.append("jain_index")
        if np.any(np.isfinite(summary["fct_s"].to_numpy(dtype=float))):
            per_metric.append("fct_s")
        per_metric.append("rtt_mean_s")
        for param in params:
            others = [p for p in params if p != param]
            for metric in per_metric:
                group_by = ["flow", "name", *others] if metric != "jain_index" else others or ["point_group"]
                data = aggregated if metric != "jain_index" else \
                    aggregated.drop_duplicates(["point"]).assign(point_group="all flows", flow=0)
                fig = plots.metric_vs_param(
                    data, param, metric, group_by,
                    f"{plots.METRIC_LABELS[metric][0]} vs {param}",
                    theory_rows=summary if metric == "goodput_mean_bps" else None)
                if fig is None:
                    continue
                slug = "".join(ch if ch.isalnum() else "_" for ch in param)
                name = f"{prefix}sweep-{metric}-vs-{slug}.png"
                out.append(Figure.draw(fig, f"{plots.METRIC_LABELS[metric][0]} vs {param} (mean ± 95% CI)",
                                       name, figures_dir))
    return out
