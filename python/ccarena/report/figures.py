"""The report's figures: each a :class:`Figure` (title, file, PNG, how many points it draws), and
the standard set per experiment (:func:`draw_figures`): time series per run, metric against each
swept parameter."""

from __future__ import annotations

import base64
import math
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
    series: tuple[str, ...] = ()
    flavor_colors: dict[str, str] | None = None

    @classmethod
    def draw(cls, fig: Any, title: str, file: str, figures_dir: Path) -> "Figure":
        """Count ``fig``'s data points and note its flow series (``"<run_id>|<flow>|<flavor>"``) and
        flavor colours, save it as ``figures_dir/file`` and close it."""
        points = plots.data_points(fig)
        series = tuple(plots.series_of(fig))
        colours = plots.flavor_colors_of(fig)
        return cls(title, file, plots.save(fig, figures_dir / file), points, series, colours)

    @property
    def series_attr(self) -> str:
        """The series as one attribute value (space-separated) for the page."""
        return " ".join(s.replace(" ", "_") for s in self.series)

    @property
    def colors_attr(self) -> str:
        """``flavor=#rrggbb`` pairs (space-separated) for the page."""
        return " ".join(f"{k}={v}" for k, v in sorted((self.flavor_colors or {}).items()))

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


def _with_limits(watched: pd.DataFrame, record: dict[str, Any]) -> pd.DataFrame:
    """``watched`` with each link's queue limit in packets (NaN for a byte limit) from the spec."""
    links = (record.get("spec") or {}).get("links") or []

    def limit(i: int) -> float:
        queue = links[i].get("queue", {}) if 0 <= i < len(links) else {}
        value = queue.get("limit_packets")
        return float(value) if value is not None else float("nan")

    return watched.assign(limit_packets=[limit(int(i)) for i in watched["link"]])


def _references(links: pd.DataFrame, flows: pd.DataFrame) -> tuple[float | None, float | None]:
    """The bottleneck's capacity (bits/s, the slowest bottleneck-role link) and the flows' base
    RTT (s) when they share one, for reference lines; None where there is no single value."""
    bottlenecks = links[links["role"].isin(metrics.BOTTLENECK_ROLES)] if "role" in links else links.iloc[0:0]
    capacity = float(bottlenecks["rate_bps"].min()) if len(bottlenecks) else None
    rtts = flows["base_rtt_s"].dropna().round(6).unique() if "base_rtt_s" in flows else []
    return capacity, (float(rtts[0]) if len(rtts) == 1 else None)


def _small_multiples(result: Any, first_repeats: pd.DataFrame, figures_dir: Path,
                     prefix: str) -> list[Figure]:
    """Goodput against time at every grid point (first repeat), in small panels titled by the
    point's swept values, :data:`ccarena.report.plots.SMALL_MULTIPLES_PER_FIGURE` per figure."""
    from ccarena.report.terminal import short_names

    params = [p for p in result.parameters if p in first_repeats.columns]
    names = short_names(params)
    rows = first_repeats.to_dict("records")
    per = plots.SMALL_MULTIPLES_PER_FIGURE
    out = []
    for page, start in enumerate(range(0, len(rows), per)):
        panels = []
        for rec in rows[start:start + per]:
            run_id = str(rec["run_id"])
            title = ", ".join(f"{names[p]}={rec[p]}" for p in params) or run_id
            panels.append((title, run_id, result.store.read_table(run_id, "samples"),
                           result.store.read_table(run_id, "flows")))
        pages = math.ceil(len(rows) / per)
        suffix = f" ({page + 1} of {pages})" if pages > 1 else ""
        title = f"Goodput over time at every grid point{suffix}"
        fig = plots.goodput_small_multiples(panels, title)
        out.append(Figure.draw(fig, title, f"{prefix}every-point-goodput-{page + 1}.png", figures_dir))
    return out


def report_options(result: Any) -> dict[str, Any]:
    """The scenario's ``[report]`` table as stored with the experiment (empty when none)."""
    return (getattr(result, "meta", None) or {}).get("report") or {}


def value_labels(result: Any) -> dict[str, dict[str, str]]:
    """``[report] labels``: swept parameter path → {value as written → label} (``{"3": "fast
    recovery", "1000": "timeouts only"}``); a labelled parameter is drawn as categories."""
    report = report_options(result)
    return {str(p): {str(k): str(v) for k, v in m.items()} for p, m in (report.get("labels") or {}).items()}


def draw_figures(result: Any, figures_dir: Path, max_runs: int = 4, prefix: str = "") -> list[Figure]:
    """Draw every figure of the report into ``figures_dir``.

    Time series for the first repeat of up to ``max_runs`` grid points; metric-vs-parameter
    figures for each numeric swept parameter when there is a sweep. ``prefix`` starts the file
    names of figures that are not per run (a part's name).
    """
    out: list[Figure] = []
    summary = result.summary
    cwnd_rounds = report_options(result).get("cwnd_axis") == "rounds"
    first_repeats = summary[summary["repeat"] == 0].drop_duplicates("point")
    every_point = first_repeats["run_id"].tolist()
    shown = every_point[:max_runs]
    for run_id in shown:
        flows = result.store.read_table(run_id, "flows")
        samples = result.store.read_table(run_id, "samples")
        queues = result.store.read_table(run_id, "queues")
        links = result.store.read_table(run_id, "links")
        regions = result.store.read_table(run_id, "regions")
        record = result.store.read_run_record(run_id)
        mss = {int(f["flow"] if "flow" in f else i): float(f.get("mss_bytes") or 1448)
               for i, f in enumerate(flows.to_dict("records"))}
        label = run_id if len(shown) > 1 or record.get("params") else result.name
        watched = _with_limits(_watched_queues(links, queues), record)
        capacity, base_rtt = _references(links, flows)
        # cwnd and RTT exist only for window-based flows: a UDP-only run has none to draw.
        windowed = bool(samples["cwnd_bytes"].notna().any()) if "cwnd_bytes" in samples else False
        timed = bool(samples["srtt_s"].notna().any()) if "srtt_s" in samples else False
        figs = [
            ("goodput", f"Goodput per flow — {label}",
             plots.goodput_vs_time(samples, flows, f"Goodput — {label}", run_id, capacity, regions)),
            *([("cwnd", f"cwnd and ssthresh — {label}",
                plots.cwnd_vs_time(samples, flows, mss, f"cwnd and ssthresh — {label}", run_id,
                                   regions))]
              if windowed else []),
            *([("cwnd-rounds", f"cwnd and ssthresh per transmission round — {label}",
                plots.cwnd_vs_time(samples, flows, mss, f"cwnd per RTT round — {label}", run_id,
                                   rounds=True))]
              if windowed and timed and cwnd_rounds else []),
            *([("rtt", f"RTT — {label}",
                plots.rtt_vs_time(samples, flows, f"Smoothed RTT — {label}", run_id, base_rtt,
                                  regions))]
              if timed else []),
            *([("queue", f"Queue backlog — {label}", plots.backlog_vs_time(queues, watched, f"Queue backlog — {label}"))]
              if len(watched) else []),
            ("delivered", f"Cumulative delivered bytes — {label}",
             plots.delivered_vs_time(samples, flows, f"Delivered — {label}", run_id)),
        ]
        for key, title, fig in figs:
            name = f"{run_id}-{key}.png"
            out.append(Figure.draw(fig, title, name, figures_dir))
    if len(every_point) > len(shown):
        out += _small_multiples(result, first_repeats, figures_dir, prefix)
    params = result.parameters
    if params:
        aggregated = result.aggregate()
        per_metric = ["goodput_mean_bps"]
        if summary.groupby("run_id").size().max() > 1:
            per_metric.append("jain_index")
        if np.any(np.isfinite(summary["fct_s"].to_numpy(dtype=float))):
            per_metric.append("fct_s")
        per_metric.append("rtt_mean_s")
        labels = value_labels(result)
        for param in params:
            others = [p for p in params if p != param]
            categorical = param in labels or plots.param_axis(aggregated[param].tolist()) is None
            for metric in per_metric:
                data = aggregated if metric != "jain_index" else \
                    aggregated.drop_duplicates(["point"]).assign(point_group="all flows", flow=0)
                title = f"{plots.METRIC_LABELS[metric][0]} vs {param}"
                if categorical:
                    # A flavor sweep renames the flow with its flavor: group by flow index instead.
                    group_by = ["flow", *others] if metric != "jain_index" else others or ["point_group"]
                    fig = plots.metric_vs_category(data, param, metric, group_by, title,
                                                   labels.get(param), labels)
                else:
                    group_by = ["flow", "name", *others] if metric != "jain_index" else others or ["point_group"]
                    fig = plots.metric_vs_param(
                        data, param, metric, group_by, title,
                        theory_rows=summary if metric == "goodput_mean_bps" else None,
                        labels=labels)
                if fig is None:
                    continue
                slug = "".join(ch if ch.isalnum() else "_" for ch in param)
                name = f"{prefix}sweep-{metric}-vs-{slug}.png"
                out.append(Figure.draw(fig, f"{plots.METRIC_LABELS[metric][0]} vs {param} (mean ± 95% CI)",
                                       name, figures_dir))
    return out
