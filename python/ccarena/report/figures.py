"""The report's figures: each a :class:`Figure` (title, file, PNG, how many points it draws), and
the standard set per experiment (:func:`draw_figures`): time series per run, metric against each
swept parameter."""

from __future__ import annotations

import base64
import math
import os
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


PARALLEL_TASKS_MIN = 6
"""Figure tasks (runs' time series and small-multiples pages) from which they are drawn by worker
processes while this process draws the sweep figures: matplotlib draws on one core, a run's time
series cost ~1 s and a page of 24 panels ~0.7 s of CPU, and a spawned worker ~1.5 s to start."""


def _page_specs(result: Any, first_repeats: pd.DataFrame,
                prefix: str) -> list[tuple[str, list[tuple[str, str]], str]]:
    """The small-multiples pages: ``(figure title, [(panel title, run_id)], file name)`` each,
    :data:`ccarena.report.plots.SMALL_MULTIPLES_PER_FIGURE` panels a page, every grid point's first
    repeat titled by its swept values."""
    from ccarena.report.terminal import short_names

    params = [p for p in result.parameters if p in first_repeats.columns]
    names = short_names(params)
    rows = first_repeats.to_dict("records")
    per = plots.SMALL_MULTIPLES_PER_FIGURE
    pages = math.ceil(len(rows) / per)
    specs = []
    for page, start in enumerate(range(0, len(rows), per)):
        panels = [(", ".join(f"{names[p]}={rec[p]}" for p in params) or str(rec["run_id"]),
                   str(rec["run_id"])) for rec in rows[start:start + per]]
        suffix = f" ({page + 1} of {pages})" if pages > 1 else ""
        specs.append((f"Goodput over time at every grid point{suffix}", panels,
                      f"{prefix}every-point-goodput-{page + 1}.png"))
    return specs


def _store(root: str, slots: dict[str, int] | None) -> Any:
    from ccarena.store import ExperimentStore

    if slots is not None:
        plots.restore_flavor_slots(slots)
    return ExperimentStore(root)


def draw_small_multiples_page(root: str, title: str, panels: list[tuple[str, str]], file: str,
                              figures_dir: str, slots: dict[str, int] | None = None) -> Figure:
    """Draw one small-multiples page from the experiment at ``root`` (``panels``: panel title and
    run id) into ``figures_dir/file``; ``slots`` carries the report's flavor colours
    (:func:`ccarena.report.plots.flavor_slots`) into a worker process."""
    store = _store(root, slots)
    data = [(t, run_id, store.read_table(run_id, "samples"), store.read_table(run_id, "flows"))
            for t, run_id in panels]
    return Figure.draw(plots.goodput_small_multiples(data, title), title, file, Path(figures_dir))


def draw_run_figures(root: str, run_id: str, label: str, cwnd_rounds: bool, figures_dir: str,
                     slots: dict[str, int] | None = None) -> list[Figure]:
    """The time series of one run of the experiment at ``root`` (goodput, cwnd — also per
    transmission round with ``cwnd_rounds`` —, RTT, queue backlog, delivered bytes), titled with
    ``label``, into ``figures_dir``; ``slots`` as for :func:`draw_small_multiples_page`."""
    store = _store(root, slots)
    flows = store.read_table(run_id, "flows")
    samples = store.read_table(run_id, "samples")
    queues = store.read_table(run_id, "queues")
    links = store.read_table(run_id, "links")
    regions = store.read_table(run_id, "regions")
    record = store.read_run_record(run_id)
    mss = {int(f["flow"] if "flow" in f else i): float(f.get("mss_bytes") or 1448)
           for i, f in enumerate(flows.to_dict("records"))}
    watched = _with_limits(_watched_queues(links, queues), record)
    capacity, base_rtt = _references(links, flows)
    # cwnd and RTT exist only for window-based flows: a UDP-only run has none to draw.
    windowed = bool(samples["cwnd_bytes"].notna().any()) if "cwnd_bytes" in samples else False
    timed = bool(samples["srtt_s"].notna().any()) if "srtt_s" in samples else False
    figs = [
        ("goodput", f"Goodput per flow — {label}",
         lambda: plots.goodput_vs_time(samples, flows, f"Goodput — {label}", run_id, capacity, regions)),
        *([("cwnd", f"cwnd and ssthresh — {label}",
            lambda: plots.cwnd_vs_time(samples, flows, mss, f"cwnd and ssthresh — {label}", run_id,
                                       regions))]
          if windowed else []),
        *([("cwnd-rounds", f"cwnd and ssthresh per transmission round — {label}",
            lambda: plots.cwnd_vs_time(samples, flows, mss, f"cwnd per RTT round — {label}", run_id,
                                       rounds=True))]
          if windowed and timed and cwnd_rounds else []),
        *([("rtt", f"RTT — {label}",
            lambda: plots.rtt_vs_time(samples, flows, f"Smoothed RTT — {label}", run_id, base_rtt,
                                      regions))]
          if timed else []),
        *([("queue", f"Queue backlog — {label}",
            lambda: plots.backlog_vs_time(queues, watched, f"Queue backlog — {label}"))]
          if len(watched) else []),
        ("delivered", f"Cumulative delivered bytes — {label}",
         lambda: plots.delivered_vs_time(samples, flows, f"Delivered — {label}", run_id)),
    ]
    # Drawn and saved one at a time: an open figure holds its canvas.
    return [Figure.draw(make(), title, f"{run_id}-{key}.png", Path(figures_dir))
            for key, title, make in figs]


class _Later:
    """A task run when its result is asked for (the serial stand-in for a future)."""

    def __init__(self, fn: Any, args: tuple[Any, ...]) -> None:
        self.fn, self.args = fn, args

    def result(self) -> Any:
        return self.fn(*self.args)


class FigureWork:
    """Figures drawn from the stored tables: by spawned worker processes when there are at least
    :data:`PARALLEL_TASKS_MIN` tasks and more than one core (they draw while this process draws
    the sweep figures), else here, in order, when their results are asked for."""

    def __init__(self, tasks: int) -> None:
        cores = os.cpu_count() or 1
        self.pool: Any = None
        self.slots = plots.flavor_slots()
        if tasks >= PARALLEL_TASKS_MIN and cores > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # spawn, not fork: the CLI's status spinner runs a thread, and a forked child would
            # inherit whatever lock it held.
            self.pool = ProcessPoolExecutor(max_workers=min(cores, tasks),
                                            mp_context=multiprocessing.get_context("spawn"))

    def submit(self, fn: Any, *args: Any) -> Any:
        """``fn(*args, slots)`` in a worker (a future), or later here (:class:`_Later`)."""
        if self.pool is not None:
            return self.pool.submit(fn, *args, self.slots)
        return _Later(fn, (*args, None))

    def close(self) -> None:
        """Stop the workers (tasks not started are cancelled)."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


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

    Time series for the first repeat of up to ``max_runs`` grid points; small multiples of every
    grid point's goodput when there are more; metric-vs-parameter figures for each swept parameter
    when there is a sweep. ``prefix`` starts the file names of figures that are not per run (a
    part's name). The time series and pages are drawn by worker processes when there are many
    (:class:`FigureWork`).
    """
    summary = result.summary
    first_repeats = summary[summary["repeat"] == 0].drop_duplicates("point")
    every_point = first_repeats["run_id"].tolist()
    shown = every_point[:max_runs]
    pages = _page_specs(result, first_repeats, prefix) if len(every_point) > len(shown) else []
    cwnd_rounds = report_options(result).get("cwnd_axis") == "rounds"
    root, where = str(result.root), str(figures_dir)
    work = FigureWork(len(shown) + len(pages))
    try:
        runs = []
        for run_id in shown:
            label = run_id if len(shown) > 1 or result.store.read_run_record(run_id).get("params") \
                else result.name
            runs.append(work.submit(draw_run_figures, root, run_id, label, cwnd_rounds, where))
        drawn_pages = [work.submit(draw_small_multiples_page, root, title, panels, file, where)
                       for title, panels, file in pages]
        sweep = _sweep_figures(result, figures_dir, prefix)
        return [f for r in runs for f in r.result()] + [p.result() for p in drawn_pages] + sweep
    finally:
        work.close()


def _sweep_figures(result: Any, figures_dir: Path, prefix: str) -> list[Figure]:
    """The metric-vs-parameter figures of a sweep (none without one)."""
    out: list[Figure] = []
    summary = result.summary
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

