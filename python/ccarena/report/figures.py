"""The report's figures: each a :class:`Figure` (title, caption, file, PNG, how many points it
draws), and the set chosen for the experiment (:func:`draw_figures`): first the figures that
answer the question — per-flavor distributions of the per-flow metrics when there are many flows,
each metric per flavor or against each swept parameter, throughput against delay and the
capacity over time on a trace-driven link — then the details: time series of a few runs with few
flows."""

from __future__ import annotations

import base64
import functools
import itertools
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccarena.analysis import metrics
from ccarena.report import capacity, class_plots, distributions, plots, subflow_plots, sweep_plots


@dataclass
class Figure:
    """A figure in the report: title, file name under figures/, PNG bytes, and how many data
    points it draws (:func:`ccarena.report.plots.data_points`; the page carries it as ``data-points``).
    ``caption`` explains what the title does not (bands, reference lines, a cut axis);
    ``overview``: the figure answers the question and goes before the details."""

    title: str
    file: str
    png: bytes
    points: int = 0
    series: tuple[str, ...] = ()
    flavor_colors: dict[str, str] | None = None
    caption: str = ""
    overview: bool = False

    @classmethod
    def draw(cls, fig: Any, title: str, file: str, figures_dir: Path, caption: str = "",
             overview: bool = False) -> "Figure":
        """Count ``fig``'s data points and note its flow series (``"<run_id>|<flow>|<flavor>"``) and
        flavor colours, save it as ``figures_dir/file`` and close it. The caption is ``caption``
        followed by the notes the drawing left (:func:`ccarena.report.plots.note`)."""
        points = plots.data_points(fig)
        series = tuple(plots.series_of(fig))
        colours = plots.flavor_colors_of(fig)
        text = " ".join([caption, *plots.notes_of(fig)] if caption else plots.notes_of(fig))
        return cls(title, file, plots.save(fig, figures_dir / file), points, series, colours,
                   text, overview)

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


def words(params: list[str], record: dict[str, Any], labels: dict[str, dict[str, str]] | None = None) -> str:
    """A run's swept values in words for a title: a flavor as itself, any other parameter as its
    short name and value (``"cubic, bottleneck loss 0.5%"``), values as ``[report] labels`` show
    them; ``""`` for a run with no swept value."""
    from ccarena.report.terminal import short_names

    names = short_names(params)
    out = []
    for p in params:
        if p not in record:
            continue
        value = (labels or {}).get(p, {}).get(str(record[p]), str(record[p]))
        if p.split(".")[-1].endswith("flavor") and not (labels or {}).get(p):
            out.append(value)
        else:
            out.append(f"{names[p].replace('.', ' ')} {value}")
    return ", ".join(out)


def _page_specs(result: Any, first_repeats: pd.DataFrame,
                prefix: str) -> list[tuple[str, list[tuple[str, str]], str]]:
    """The small-multiples pages: ``(figure title, [(panel title, run_id)], file name)`` each,
    :data:`ccarena.report.plots.SMALL_MULTIPLES_PER_FIGURE` panels a page, every grid point's first
    repeat titled by its swept values in words (:func:`words`)."""
    params = [p for p in result.parameters if p in first_repeats.columns]
    labels = value_labels(result)
    rows = first_repeats.to_dict("records")
    per = plots.SMALL_MULTIPLES_PER_FIGURE
    pages = math.ceil(len(rows) / per)
    specs = []
    for page, start in enumerate(range(0, len(rows), per)):
        panels = [(words(params, rec, labels) or f"point {rec['point']}", str(rec["run_id"]))
                  for rec in rows[start:start + per]]
        suffix = f" ({page + 1} of {pages})" if pages > 1 else ""
        specs.append((f"Goodput over time at every sweep point{suffix}", panels,
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
    return Figure.draw(plots.goodput_small_multiples(data, title), title, file, Path(figures_dir),
                       "The first repeat of each sweep point, one panel each; colour: flavor.")


def _capacity_series(record: dict[str, Any], links: pd.DataFrame,
                     samples: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """A trace-driven link's capacity per sample interval (:func:`ccarena.report.capacity.capacity_over_time`)."""
    if not len(samples) or "time_s" not in samples:
        return None
    return capacity.capacity_over_time(record.get("spec") or {}, links, samples["time_s"].to_numpy(dtype=float))


CLASS_DELAY_CAPTION = (
    "DualPI2's two queues (RFC 9332): L4S (ECT(1) and CE packets) and Classic (Not-ECT and ECT(0)). "
    "Each curve joins the queue's sojourn percentiles (min, 5th … 99th, max) over the whole run; "
    "the legend gives each class's mean and 99th percentile.")
MARKING_CAPTION = (
    "DualPI2's probabilities at each sample instant: the Classic drop/mark probability p_C = p'² "
    "and the coupled L4S marking probability p_CL = min(k·p', 1), the floor under every L4S "
    "packet's marking probability (its native step at the L4S threshold adds to it per packet).")


def _class_figures(queues: pd.DataFrame, links: pd.DataFrame, at: str) -> list[tuple[str, str, str, Any]]:
    """A run's DualPI2 figures as ``(file key, title, caption, draw)``: the queueing-delay CDF
    per class on its DualPI2 links (:func:`ccarena.report.class_plots.dualpi2_links`), and their
    marking probability over time when they were sampled; none without a DualPI2 link."""
    dual = class_plots.dualpi2_links(links)
    if not len(dual):
        return []
    out = [("class-delay", f"Queueing delay per DualPI2 class{at}", CLASS_DELAY_CAPTION,
            lambda: class_plots.class_sojourn_cdfs(dual, f"Queueing delay per class{at}"))]
    probability = "aqm_prob_l4s"
    if probability in queues and "link" in queues:
        sampled = queues[np.isfinite(queues[probability].to_numpy(dtype=float))]["link"].unique()
        shown = dual[dual["link"].isin(sampled)]
        if len(shown):
            out.append(("marking-probability", f"DualPI2 marking probability over time{at}",
                        MARKING_CAPTION,
                        lambda: class_plots.aqm_probability_vs_time(queues, shown,
                                                                    f"Marking probability{at}")))
    return out


SUBFLOW_CAPTION = (
    "Each Multipath TCP connection's subflows, their goodput stacked: how the connection spreads "
    "its data over its paths (subflow 0 at the bottom, shades of the connection's flavor colour).")


def _read_subflows(store: Any, run_id: str) -> pd.DataFrame | None:
    """The run's ``subflows`` table, or None when it has none (no MPTCP flow, or a backend
    that does not report subflows)."""
    if not (store.run_dir(run_id) / "subflows.parquet").is_file():
        return None
    return store.read_table(run_id, "subflows")


def _subflow_figures(subflows: pd.DataFrame | None, flows: pd.DataFrame,
                     at: str) -> list[tuple[str, str, str, Any]]:
    """A run's MPTCP figure as ``(file key, title, caption, draw)``: its connections' subflow
    goodput, stacked (:func:`ccarena.report.subflow_plots.subflow_goodput_stacked`); none
    without a connection of several subflows."""
    shown = subflow_plots.mptcp_flows(flows, subflows)
    if not shown:
        return []
    return [("subflows", f"Goodput per MPTCP subflow over time{at}", SUBFLOW_CAPTION,
             lambda: subflow_plots.subflow_goodput_stacked(subflows, flows, shown,
                                                           f"Goodput per subflow{at}"))]


def draw_run_figures(root: str, run_id: str, label: str, cwnd_rounds: bool, figures_dir: str,
                     slots: dict[str, int] | None = None, share: tuple[int, int] = (0, 1)) -> list[Figure]:
    """The time series of one run of the experiment at ``root`` (goodput — over a trace-driven
    link's capacity per sample interval —, cwnd — also per transmission round with
    ``cwnd_rounds`` —, RTT, queue backlog, DualPI2's classes (:func:`_class_figures`), delivered
    bytes), titled with ``label`` (the run's
    swept values in words, :func:`words`; ``""`` for none), into ``figures_dir``; ``slots`` as
    for :func:`draw_small_multiples_page`. ``share`` ``(i, n)``: only the ``i``-th of ``n``
    consecutive slices of that list (``n`` processes drawing one run side by side; the slices
    in order make the whole list)."""
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
    capacity_bps, base_rtt = _references(links, flows)
    trace_capacity = _capacity_series(record, links, samples)
    # cwnd and RTT exist only for window-based flows: a UDP-only run has none to draw.
    windowed = bool(samples["cwnd_bytes"].notna().any()) if "cwnd_bytes" in samples else False
    timed = bool(samples["srtt_s"].notna().any()) if "srtt_s" in samples else False
    at = f" — {label}" if label else ""
    goodput_caption = ("The grey step is the trace-driven link's capacity in each sample interval."
                       if trace_capacity is not None else
                       "The dashed grey line is the bottleneck's capacity." if capacity_bps else "")
    figs = [
        ("goodput", f"Goodput per flow over time{at}", goodput_caption,
         lambda: plots.goodput_vs_time(samples, flows, f"Goodput per flow{at}", run_id, capacity_bps,
                                       regions, trace_capacity)),
        *([("cwnd", f"cwnd and ssthresh over time{at}",
            "Solid: cwnd; thin dotted, same colour: ssthresh.",
            lambda: plots.cwnd_vs_time(samples, flows, mss, f"cwnd and ssthresh{at}", run_id, regions))]
          if windowed else []),
        *([("cwnd-rounds", f"cwnd and ssthresh per transmission round{at}",
            "Solid: cwnd; thin dotted, same colour: ssthresh.",
            lambda: plots.cwnd_vs_time(samples, flows, mss, f"cwnd per RTT round{at}", run_id,
                                       rounds=True))]
          if windowed and timed and cwnd_rounds else []),
        *([("rtt", f"Smoothed RTT over time{at}",
            "The dashed grey line is the base (propagation) RTT." if base_rtt else "",
            lambda: plots.rtt_vs_time(samples, flows, f"Smoothed RTT{at}", run_id, base_rtt, regions))]
          if timed else []),
        *([("queue", f"Queue backlog over time{at}", "Dashed, same colour: the queue's limit.",
            lambda: plots.backlog_vs_time(queues, watched, f"Queue backlog{at}"))]
          if len(watched) else []),
        *_class_figures(queues, links, at),
        *_subflow_figures(_read_subflows(store, run_id), flows, at),
        ("delivered", f"Cumulative delivered bytes{at}", "",
         lambda: plots.delivered_vs_time(samples, flows, f"Delivered{at}", run_id)),
    ]
    index, count = share
    size = math.ceil(len(figs) / count)
    # Drawn and saved one at a time: an open figure holds its canvas.
    return [Figure.draw(make(), title, f"{run_id}-{key}.png", Path(figures_dir), caption)
            for key, title, caption, make in figs[index * size:(index + 1) * size]]


def draw_queue_figure(root: str, run_id: str, label: str, figures_dir: str, file: str) -> list[Figure]:
    """The queue backlog over time of one run (its bottlenecks, else the queues that dropped or
    held the most; :func:`_watched_queues`), titled with ``label`` (:func:`words`): for runs of
    many flows, whose per-flow series are drawn as distributions, the queue is still one figure
    (a bufferbloat question is answered there), saved as ``file``. Empty when no queue ever held
    a packet."""
    store = _store(root, None)
    queues = store.read_table(run_id, "queues")
    watched = _with_limits(_watched_queues(store.read_table(run_id, "links"), queues),
                           store.read_run_record(run_id))
    if not len(watched):
        return []
    at = f" — {label}" if label else ""
    return [Figure.draw(plots.backlog_vs_time(queues, watched, f"Queue backlog{at}"),
                        f"Queue backlog over time{at}", file, Path(figures_dir),
                        "Dashed, same colour: the queue's limit. The first run of the experiment; its "
                        "flows are drawn above as distributions.")]


def draw_class_figures(root: str, run_id: str, label: str, figures_dir: str, prefix: str) -> list[Figure]:
    """The DualPI2 figures of one run (:func:`_class_figures`), titled with ``label``
    (:func:`words`), saved as ``<prefix><key>.png``: for runs of many flows, which get no per-run
    time series, the classes' delays and marking are still drawn. Empty without a DualPI2 link."""
    store = _store(root, None)
    at = f" — {label}" if label else ""
    figs = _class_figures(store.read_table(run_id, "queues"), store.read_table(run_id, "links"), at)
    note = " The first run of the experiment."
    return [Figure.draw(make(), title, f"{prefix}{key}.png", Path(figures_dir), caption + note)
            for key, title, caption, make in figs]


def draw_subflow_figures(root: str, run_id: str, label: str, figures_dir: str, prefix: str) -> list[Figure]:
    """The MPTCP figure of one run (:func:`_subflow_figures`), titled with ``label``
    (:func:`words`), saved as ``<prefix>subflows.png``: for runs of many flows, which get no
    per-run time series, the subflows of the first connections are still drawn. Empty without
    MPTCP."""
    store = _store(root, None)
    at = f" — {label}" if label else ""
    figs = _subflow_figures(_read_subflows(store, run_id), store.read_table(run_id, "flows"), at)
    note = " The first run of the experiment."
    return [Figure.draw(make(), title, f"{prefix}{key}.png", Path(figures_dir), caption + note)
            for key, title, caption, make in figs]


class _Later:
    """A task run when its result is asked for (the serial stand-in for a future)."""

    def __init__(self, fn: Any, args: tuple[Any, ...]) -> None:
        self.fn, self.args = fn, args

    def steal(self) -> None:
        """Nothing to take back: the task runs here anyway."""

    def result(self) -> Any:
        """Run the task now and return what it returns (its exception propagates)."""
        return self.fn(*self.args)


def claim(path: Path) -> bool:
    """Take the task whose claim file is ``path`` by creating that file: True for the one
    process (the report's or a worker) that creates it first, False for any other (or when its
    directory is gone: the report's process has finished with its tasks)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return False
    return True


def _drawn_in_worker(fn: Any, args: tuple[Any, ...], slots: dict[str, int], formats: list[str],
                     claimed: str | None = None) -> Any:
    """``fn(*args, slots)`` in a worker process, with the report's extra figure formats
    (:data:`ccarena.report.plots.EXTRA_FORMATS`, ``--formats``) set as in the report's process;
    nothing when the report's process has claimed the task first (``claimed``: its claim file,
    :class:`_Stealable`)."""
    if claimed is not None and not claim(Path(claimed)):
        return None
    plots.EXTRA_FORMATS[:] = formats
    try:
        return fn(*args, slots)
    finally:
        plots.EXTRA_FORMATS.clear()


class _Stealable:
    """A task submitted to a worker pool that this process takes back and runs itself when it
    asks before a worker has started it: the workers may be busy (another part of the report)
    or still starting (a spawned interpreter costs ~1.5 s), and this process is free then.

    The pool hands a task to its workers' queue before a worker is free to start it (one task
    ahead), and a task in that queue cannot be cancelled: there, whichever of this process and
    the worker creates the task's claim file first (``claimed``, :func:`claim`) draws it, and the
    other passes (seed-004: this process waited 0.9 s for a run's figures that it could have
    drawn, the worker still busy with the run before)."""

    def __init__(self, future: Any, fn: Any, args: tuple[Any, ...], claimed: Path | None = None) -> None:
        self.future, self.fn, self.args, self.claimed = future, fn, args, claimed
        self.value: Any = None
        self.taken = False

    def steal(self) -> None:
        """Run the task here now if no worker has started it (else leave it to the worker)."""
        if self.taken:
            return
        if self.future.cancel() or (self.claimed is not None and claim(self.claimed)):
            self.taken = True
            self.value = self.fn(*self.args, None)

    def result(self) -> Any:
        """The task's result: the worker's (waiting for it) or the one drawn here."""
        return self.value if self.taken else self.future.result()


def gather(tasks: list[Any]) -> list[Any]:
    """The results of ``tasks`` (:meth:`FigureWork.submit`'s) in order: first the tasks no worker
    has started are drawn here, the last first (workers take them from the front), then the
    workers' results are waited for."""
    for task in reversed(tasks):
        task.steal()
    return [task.result() for task in tasks]


class FigureWork:
    """Figures drawn from the stored tables: by worker processes when there are at least
    :data:`PARALLEL_TASKS_MIN` tasks and more than one core (they draw while this process draws
    the sweep figures), or by the report's shared ``pool`` (:func:`ccarena.report.html._sections`:
    its workers build the other parts first), else here, in order, when their results are asked
    for. Whatever no worker has started when the results are asked for is drawn here
    (:func:`gather`)."""

    def __init__(self, tasks: int, pool: Any = None) -> None:
        cores = os.cpu_count() or 1
        self.pool: Any = pool
        self.own_pool = False
        self.formats = list(plots.EXTRA_FORMATS)
        """The figures' formats besides PNG (:data:`ccarena.report.plots.EXTRA_FORMATS`)."""
        self.forked: list[Any] = []
        """The children forked for tasks (:meth:`submit` without workers)."""
        self.slots = plots.flavor_slots()
        self.claims: Path | None = None
        """The directory of the tasks' claim files (:class:`_Stealable`), made at the first."""
        self._ids = itertools.count()
        if pool is None and tasks >= PARALLEL_TASKS_MIN and cores > 1:
            from concurrent.futures import ProcessPoolExecutor

            from ccarena.workers import WORKER_CONTEXT

            # spawn, not fork: the CLI's status spinner runs a thread, and a forked child would
            # inherit whatever lock it held; workers that do not import __main__: a script
            # without the __main__ guard would run again in each (ccarena.workers).
            self.pool = ProcessPoolExecutor(max_workers=min(cores, tasks),
                                            mp_context=WORKER_CONTEXT)
            self.own_pool = True

    @property
    def forks(self) -> bool:
        """True when :meth:`submit` forks a child per task (no workers, and this process can:
        :func:`ccarena.report.forked.can_fork`)."""
        from ccarena.report.forked import can_fork

        return self.pool is None and can_fork()

    def submit(self, fn: Any, *args: Any) -> Any:
        """``fn(*args, slots)`` in a worker, or here if no worker has started it when its result
        is asked for (:class:`_Stealable`); without workers, in a child forked now when this
        process can (:class:`ccarena.report.forked.ForkedCall`), else here then (:class:`_Later`)."""
        if self.pool is not None:
            if self.claims is None:
                self.claims = Path(tempfile.mkdtemp(prefix="ccarena-figures-"))
            claimed = self.claims / str(next(self._ids))
            future = self.pool.submit(_drawn_in_worker, fn, args, self.slots, self.formats,
                                      str(claimed))
            return _Stealable(future, fn, args, claimed)
        if self.forks:
            from ccarena.report.forked import ForkedCall

            call = ForkedCall(lambda: _in_formats(self.formats, lambda: fn(*args, None)))
            self.forked.append(call)
            return _Later(call.result, ())
        return _Later(fn, (*args, None))

    def close(self) -> None:
        """Stop the workers this started (tasks not started are cancelled); a shared pool is
        left to its owner. The claim files go (a worker that meets a task after this passes)."""
        if self.own_pool:
            self.pool.shutdown(wait=True, cancel_futures=True)
        for call in self.forked:
            call.stop()
        if self.claims is not None:
            shutil.rmtree(self.claims, ignore_errors=True)


def report_options(result: Any) -> dict[str, Any]:
    """The scenario's ``[report]`` table as stored with the experiment (empty when none)."""
    return (getattr(result, "meta", None) or {}).get("report") or {}


def value_labels(result: Any) -> dict[str, dict[str, str]]:
    """``[report] labels``: swept parameter path → {value as written → label} (``{"3": "fast
    recovery", "1000": "timeouts only"}``); a labelled parameter is drawn as categories."""
    report = report_options(result)
    return {str(p): {str(k): str(v) for k, v in m.items()} for p, m in (report.get("labels") or {}).items()}


MANY_FLOWS = 6
"""Above this many flows in a run, its flows are drawn as per-flavor distributions (CDFs, median
and percentile bands), not one line each, and the run gets no per-flow time series."""
CDF_MIN_FLOWS = 5
"""Fewest flows (over runs) a group needs on average for its CDF to say something."""
MAX_GROUPS = 8
"""Most flavor (and sweep point) groups one distribution or band figure tells apart; with more,
the metric-vs-parameter figures answer instead."""
MAX_TRACE_RUNS = 64
"""Most runs whose samples the throughput-vs-delay figure pools (the first repeats first)."""


def draw_figures(result: Any, figures_dir: Path, max_runs: int = 4, prefix: str = "",
                 pool: Any = None) -> list[Figure]:
    """Draw the figures chosen for the experiment into ``figures_dir``, those that answer the
    question first (``overview``), then the details:

    - per-flavor CDFs of the per-flow metrics (goodput, RTT, loss, FCT slowdown) when there are
      many flows (:data:`MANY_FLOWS` in a run, or :data:`CDF_MIN_FLOWS` per group over the runs);
    - each metric per flavor or against each swept parameter (mean ± 95% CI over repeats);
    - on a trace-driven link, throughput against delay per flavor;
    - per flavor, goodput and RTT over time as a median over the flows with a 10th–90th
      percentile band (runs of many flows, or several runs on a trace-driven link), over the
      link's capacity per sample interval when it follows a trace;
    - time series of the first repeat of up to ``max_runs`` sweep points whose runs have at most
      :data:`MANY_FLOWS` flows, and small multiples of every point's goodput when there are more;
    - on a DualPI2 link, each class's queueing-delay CDF and the marking probability over time
      (with the time series, or for the first run when there are many flows).

    ``prefix`` starts the file names of figures that are not per run (a part's name). The time
    series and pages are drawn by worker processes when there are many, or by ``pool``'s (a
    :class:`concurrent.futures.ProcessPoolExecutor` the report shares between its parts) when
    given (:class:`FigureWork`). The same as :func:`start_figures` then
    :meth:`StartedFigures.finish`.
    """
    started = start_figures(result, figures_dir, max_runs, prefix, pool)
    try:
        return started.finish()
    finally:
        started.close()


def _choice(result: Any, max_runs: int = 4) -> tuple[pd.DataFrame, list[str], bool, list[str]]:
    """``(first repeats, every point's first run, many flows?, runs given time series)``: which
    runs :func:`draw_figures` draws one by one (none when a run has many flows)."""
    summary = result.summary
    first_repeats = summary[summary["repeat"] == 0].drop_duplicates("point")
    every_point = first_repeats["run_id"].tolist()
    many = bool(len(summary)) and int(summary.groupby("run_id").size().max()) > MANY_FLOWS
    shown = [] if many else every_point[:max_runs]
    return first_repeats, every_point, many, shown


def figure_tasks(result: Any, max_runs: int = 4) -> int:
    """How many figure tasks (runs' time series, small-multiples pages) :func:`draw_figures`
    hands to workers for ``result`` (a part): from :data:`PARALLEL_TASKS_MIN` on, it draws
    them in worker processes."""
    _, every_point, many, shown = _choice(result, max_runs)
    pages = 0 if many or len(every_point) <= len(shown) else \
        math.ceil(len(every_point) / plots.SMALL_MULTIPLES_PER_FIGURE)
    return len(shown) + pages


def start_figures(result: Any, figures_dir: Path, max_runs: int = 4, prefix: str = "",
                  pool: Any = None, formats: list[str] | None = None) -> "StartedFigures":
    """Choose :func:`draw_figures`'s figures and hand the per-run time series and the
    small-multiples pages to the workers at once (:class:`FigureWork`), so that they draw while
    this process builds the rest of the section (network, study tables and figures); the
    overview figures are drawn by :meth:`StartedFigures.finish`. Without workers, each task is
    drawn by a child forked now where this process can fork (a lone run's time series by two,
    each half of them: :meth:`FigureWork.submit`). ``formats``: the figures' formats besides PNG
    (default :data:`ccarena.report.plots.EXTRA_FORMATS`). Call :meth:`StartedFigures.close` in
    every case (it stops the workers and children this started)."""
    first_repeats, every_point, many, shown = _choice(result, max_runs)
    pages = _page_specs(result, first_repeats, prefix) if not many and len(every_point) > len(shown) else []
    cwnd_rounds = report_options(result).get("cwnd_axis") == "rounds"
    root, where = str(result.root), str(figures_dir)
    params = [p for p in result.parameters if p in result.summary.columns]
    labels = value_labels(result)
    work = FigureWork(len(shown) + len(pages), pool)
    if formats is not None:
        work.formats = formats
    started = StartedFigures(result, Path(figures_dir), prefix, work, first_repeats, every_point, many)
    # A lone run drawn by forked children: by two, half of its time series each (both cores).
    shares = 2 if len(shown) == 1 and not pages and work.forks else 1
    try:
        for run_id in shown:
            record = first_repeats[first_repeats["run_id"] == run_id].iloc[0].to_dict()
            for share in range(shares):
                started.runs.append(work.submit(functools.partial(draw_run_figures, share=(share, shares)),
                                                root, run_id, words(params, record, labels),
                                                cwnd_rounds, where))
        started.pages = [work.submit(draw_small_multiples_page, root, title, panels, file, where)
                         for title, panels, file in pages]
    except BaseException:
        work.close()
        raise
    return started


class StartedFigures:
    """:func:`draw_figures` under way (:func:`start_figures`): the workers' tasks submitted,
    the overview figures and the gathering left to :meth:`finish`."""

    def __init__(self, result: Any, figures_dir: Path, prefix: str, work: "FigureWork",
                 first_repeats: pd.DataFrame, every_point: list[str], many: bool) -> None:
        self.result, self.figures_dir, self.prefix, self.work = result, figures_dir, prefix, work
        self.first_repeats, self.every_point, self.many = first_repeats, every_point, many
        self.runs: list[Any] = []
        self.pages: list[Any] = []
        self.apart: dict[str, Any] = {}
        """:meth:`apart_tasks`' tasks drawn by forked children (:meth:`fork_apart`): task → its
        figures when asked (``result()``)."""
        self._calls: list[Any] = []
        """Those children (:class:`ccarena.report.forked.ForkedCall`)."""

    def finish(self) -> list[Figure]:
        """Draw the overview figures here, then gather the workers' (drawing here those none
        has started) and the forked children's (:meth:`fork_apart`): overview first, then the
        details (:func:`draw_figures`' order)."""
        # The sweep figures are tasks too, after the runs' (workers take tasks from the front,
        # this process takes back those none has started from the back: gather).
        sweeps = _sweep_figures(self.result, self.figures_dir, self.prefix, self.work)
        keys = ("distributions", "late", "first run")
        # What is drawn here first, while the workers and the forked children draw theirs.
        drawn = {key: self._drawn(key) for key in keys if key not in self.apart}
        done = gather(self.runs + self.pages + sweeps)
        drawn.update({key: self._drawn(key) for key in keys if key not in drawn})
        overview, late, first_run = (drawn[key] for key in keys)
        runs, pages = len(self.runs), len(self.pages)
        overview += [f for f in done[runs + pages:] if f is not None] + late
        details = [f for figs in done[:runs] for f in figs] + done[runs:runs + pages]
        return overview + details + first_run

    def _drawn(self, key: str) -> list[Figure]:
        """The figures of :meth:`apart_tasks`' task ``key``: its forked child's, else drawn here."""
        task = self.apart.pop(key, None)
        return task.result() if task is not None else self.apart_tasks()[key]()

    def apart_tasks(self) -> dict[str, Any]:
        """The figures that need nothing of each other, as tasks (no arguments; each returns
        its list of :class:`Figure`): ``distributions``, the per-flavor CDFs; ``late``,
        throughput against delay and the per-flavor bands over time; ``first run``, for runs of
        many flows, the first run's queue, DualPI2 and MPTCP figures."""
        result, figures_dir, prefix = self.result, self.figures_dir, self.prefix
        return {"distributions": lambda: _distribution_figures(result, figures_dir, prefix, self.many),
                "late": self._late_figures, "first run": self._first_run_figures}

    def _late_figures(self) -> list[Figure]:
        """:meth:`apart_tasks`' ``late`` figures."""
        result, figures_dir, prefix = self.result, self.figures_dir, self.prefix
        first_repeats, every_point, many = self.first_repeats, self.every_point, self.many
        traced = _first_trace_run(result, every_point)
        late = []
        if traced is not None:
            late += _throughput_delay_figure(result, figures_dir, prefix)
        if (many or traced is not None) and 1 <= len(every_point) <= MAX_GROUPS \
                and (many or len(every_point) > 1):
            late += _band_figure(result, first_repeats, figures_dir, prefix, traced)
        return late

    def _first_run_figures(self) -> list[Figure]:
        """:meth:`apart_tasks`' ``first run`` figures (none unless the runs have many flows)."""
        result, first_repeats, every_point = self.result, self.first_repeats, self.every_point
        if not (self.many and every_point):
            return []
        root, where = str(result.root), str(self.figures_dir)
        params = [p for p in result.parameters if p in result.summary.columns]
        labels = value_labels(result)
        record = first_repeats[first_repeats["run_id"] == every_point[0]].iloc[0].to_dict()
        label = words(params, record, labels)
        return (draw_queue_figure(root, every_point[0], label, where, f"{self.prefix}queue-backlog.png")
                + draw_class_figures(root, every_point[0], label, where, self.prefix)
                + draw_subflow_figures(root, every_point[0], label, where, self.prefix))

    def fork_apart(self, formats: list[str]) -> None:
        """Draw :meth:`apart_tasks`' figures in children forked now
        (:class:`ccarena.report.forked.ForkedCall`), in ``formats`` besides PNG, while this process
        draws the rest (the network, the tables): for runs of many flows, the CDFs in one and
        the rest in another (two cores' worth beside this process; each fork costs CPU), on a
        trace-driven link ``late`` alone. Nothing when this part has workers (they have the other
        cores) or this process cannot fork (:func:`ccarena.report.forked.can_fork`): then
        :meth:`finish` draws them here."""
        if self.work.pool is not None or not self.every_point:
            return
        groups = [("distributions",), ("late", "first run")] if self.many else \
            [("late",)] if _first_trace_run(self.result, self.every_point) is not None else []
        from ccarena.report.forked import ForkedCall, can_fork

        tasks = self.apart_tasks()
        for group in groups:
            if can_fork():
                call = ForkedCall(lambda group=group: _in_formats(formats, lambda: {
                    key: tasks[key]() for key in group}))
                # Each key's figures: the group's result (one child, asked once per key).
                self.apart.update({key: _Later(lambda call=call, key=key: call.result()[key], ())
                                   for key in group})
                self._calls.append(call)

    def close(self) -> None:
        """Stop the workers :func:`start_figures` started (a shared pool is left to its owner)
        and the forked children still drawing."""
        self.work.close()
        for call in self._calls:
            call.stop()
        self._calls.clear()
        self.apart.clear()


def _in_formats(formats: list[str], draw: Any) -> Any:
    """``draw()`` with ``formats`` as :data:`ccarena.report.plots.EXTRA_FORMATS`."""
    plots.EXTRA_FORMATS[:] = formats
    return draw()


def _first_trace_run(result: Any, run_ids: list[str]) -> str | None:
    """The first of ``run_ids`` when its network has a trace-driven link, else None."""
    if not run_ids:
        return None
    # Every run of a part shares its network: the first tells.
    links = (result.store.read_run_record(run_ids[0]).get("spec") or {}).get("links") or []
    return run_ids[0] if any(link.get("trace") for link in links) else None


def _groups(result: Any) -> tuple[pd.DataFrame, str]:
    """The summary with a ``_group`` column: the flavor, followed by the run's other swept values
    in words when there are any (distributions are pooled per flavor and sweep point)."""
    summary = result.summary
    flavor = summary["flavor"].astype(str)
    flavor_params = [p for p in result.parameters if p in summary.columns
                     and (summary[p].astype(str) == flavor).all()]
    others = [p for p in result.parameters if p in summary.columns and p not in flavor_params]
    if not others:
        return summary.assign(_group=flavor), ""
    labels = value_labels(result)
    text = summary[others].apply(lambda row: words(others, row.to_dict(), labels), axis=1)
    return summary.assign(_group=flavor + ", " + text.astype(str)), ", ".join(others)


def _distribution_figures(result: Any, figures_dir: Path, prefix: str, many: bool) -> list[Figure]:
    """The per-flavor CDFs of the per-flow metrics (:func:`ccarena.report.distributions.flavor_cdfs`),
    when there are many flows; none with more than :data:`MAX_GROUPS` groups or too few flows."""
    rows, _ = _groups(result)
    if not len(rows):
        return []
    sizes = rows.groupby("_group", sort=False).size()
    if len(sizes) > MAX_GROUPS or (not many and float(sizes.mean()) < CDF_MIN_FLOWS):
        return []
    chosen = distributions.cdf_metrics(rows)
    if not chosen:
        return []
    runs = rows["run_id"].nunique()
    per_run = int(rows.groupby("run_id").size().max())
    what = {"goodput_mean_bps": "goodput", "rtt_mean_s": "RTT", "loss_rate": "loss",
            "fct_slowdown": "FCT slowdown"}
    names = [what[c] for c, _, _ in chosen]
    listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    title = f"Per-flow {listed} per flavor"
    fig = distributions.flavor_cdfs(rows, "_group", chosen, title)
    pooled = f"the run's {per_run} flows" if runs == 1 else f"the flows of {runs} runs (up to {per_run} each)"
    caption = (f"Empirical CDFs: each step is one flow; {pooled} pooled per flavor"
               + (" and sweep point" if rows["_group"].nunique() > rows["flavor"].nunique() else "")
               + ". Further right is more goodput, or more delay, loss or slowdown.")
    return [Figure.draw(fig, title, f"{prefix}flavor-distributions-goodput.png", figures_dir,
                        caption, overview=True)]


def _band_figure(result: Any, first_repeats: pd.DataFrame, figures_dir: Path, prefix: str,
                 traced: str | None) -> list[Figure]:
    """Goodput (and RTT) over time per flavor: median over the flows and 10th–90th percentile
    band, the first repeat of every sweep point, over the trace's capacity when there is one."""
    store = result.store
    params = [p for p in result.parameters if p in first_repeats.columns
              and not (first_repeats[p].astype(str) == first_repeats["flavor"].astype(str)).all()]
    labels = value_labels(result)
    runs = []
    for rec in first_repeats.to_dict("records"):
        runs.append((words(params, rec, labels), store.read_table(rec["run_id"], "samples"),
                     store.read_table(rec["run_id"], "flows")))
    series = None
    if traced is not None:
        series = _capacity_series(store.read_run_record(traced), store.read_table(traced, "links"),
                                  runs[0][1])
    title = "Goodput and RTT over time per flavor" if any(
        "srtt_s" in s and s["srtt_s"].notna().any() for _, s, _ in runs) else "Goodput over time per flavor"
    fig = distributions.flavor_bands_vs_time(runs, title, series)
    caption = ("Each line is the median over the flavor's flows in each sample interval, the band "
               "in its colour the 10th to 90th percentile"
               + ("; the first repeat of each sweep point." if len(runs) > 1 else ".")
               + (" The grey step is the trace-driven link's capacity per sample interval." if series else ""))
    return [Figure.draw(fig, title, f"{prefix}flavor-over-time.png", figures_dir, caption, overview=True)]


def _throughput_delay_figure(result: Any, figures_dir: Path, prefix: str) -> list[Figure]:
    """Throughput against delay per flavor (and sweep point), pooled over the sample intervals of
    up to :data:`MAX_TRACE_RUNS` runs (first repeats first)."""
    rows, _ = _groups(result)
    runs = rows.drop_duplicates("run_id").sort_values(["repeat", "point"], kind="stable")
    if runs["_group"].nunique() > MAX_GROUPS:
        return []
    picked = runs.head(MAX_TRACE_RUNS)
    frames = []
    for rec in picked.to_dict("records"):
        samples = result.store.read_table(rec["run_id"], "samples")
        flows = result.store.read_table(rec["run_id"], "flows")
        points = distributions.delay_points(samples, flows)
        if len(points):
            frames.append(points.assign(group=rec["_group"]))
    if not frames:
        return []
    title = "Throughput against delay per flavor"
    fig = distributions.throughput_vs_delay(pd.concat(frames, ignore_index=True), title)
    n = len(picked)
    caption = (f"Per flavor: the mean goodput (y) and smoothed RTT (x) of its flows' sample intervals "
               f"over {n} run{'s' if n != 1 else ''}{' (of ' + str(len(runs)) + ')' if len(runs) > n else ''}, "
               "whiskers from the 10th to the 90th percentile of each; the RTT axis is reversed "
               "(lower delay to the right, as Pantheon draws it), so better is up and right.")
    return [Figure.draw(fig, title, f"{prefix}throughput-vs-delay.png", figures_dir, caption, overview=True)]


METRIC_WORDS = {"goodput_mean_bps": "Goodput per flow", "jain_index": "Jain's fairness index",
                "fct_s": "Flow completion time", "rtt_mean_s": "Mean RTT per flow",
                "loss_rate": "Loss rate per flow"}
"""A sweep figure's metric in words, for its title."""


def _sweep_figures(result: Any, figures_dir: Path, prefix: str, work: "FigureWork | None" = None) -> list[Any]:
    """The metric-vs-parameter figures of a sweep (none without one): goodput, RTT, loss (when
    any flow lost a packet), FCT (finite flows) and Jain's index (several flows), in that order.
    With ``work``, each figure is a task of its workers (:meth:`FigureWork.submit`; its result
    a :class:`Figure` or None) and the tasks are returned; without, the figures drawn here."""
    tasks = []
    summary = result.summary
    params = result.parameters
    if params:
        from ccarena.report.terminal import short_names

        aggregated = result.aggregate()
        per_metric = ["goodput_mean_bps", "rtt_mean_s"]
        loss = summary["loss_rate"].to_numpy(dtype=float) if "loss_rate" in summary else np.array([])
        if "loss_rate" in aggregated and np.any(np.isfinite(loss) & (loss > 0)):
            per_metric.append("loss_rate")
        if np.any(np.isfinite(summary["fct_s"].to_numpy(dtype=float))):
            per_metric.append("fct_s")
        if summary.groupby("run_id").size().max() > 1:
            per_metric.append("jain_index")
        labels = value_labels(result)
        names = short_names(list(params))
        repeated = bool(len(summary)) and int(summary["repeat"].max()) > 0
        for param in params:
            for metric in per_metric:
                # The summary: what a numeric axis's goodput theory curves are drawn from.
                args = (aggregated, summary if metric == "goodput_mean_bps" else None, list(params),
                        param, metric, labels, names[param], repeated, prefix, str(figures_dir))
                tasks.append(work.submit(draw_sweep_figure, *args) if work is not None
                             else _Later(draw_sweep_figure, (*args, None)))
    if work is not None:
        return tasks
    return [f for f in gather(tasks) if f is not None]


def draw_sweep_figure(aggregated: pd.DataFrame, theory_rows: pd.DataFrame | None, params: list[str],
                      param: str, metric: str, labels: dict[str, dict[str, str]], short_name: str,
                      repeated: bool, prefix: str, figures_dir: str,
                      slots: dict[str, int] | None = None) -> Figure | None:
    """One figure of :func:`_sweep_figures`: ``metric`` (a summary column, aggregated over
    repeats in ``aggregated``: :meth:`ccarena.results.Result.aggregate`) against the swept
    ``param`` (one of ``params``), as categories (labelled values, flavors) or along a numeric
    axis (with the theory curves of ``theory_rows``, the summary, for goodput), saved as
    ``<prefix>sweep-<metric>-vs-<param>.png`` in ``figures_dir``; None when there is nothing to
    draw. ``slots`` as for :func:`draw_small_multiples_page`."""
    if slots is not None:
        plots.restore_flavor_slots(slots)
    others = [p for p in params if p != param]
    categorical = param in labels or sweep_plots.param_axis(aggregated[param].tolist()) is None
    is_flavor = param.split(".")[-1].endswith("flavor")
    axis_name = "flavor" if is_flavor else short_name.replace(".", " ")
    data = aggregated if metric != "jain_index" else \
        aggregated.drop_duplicates(["point"]).assign(point_group="all flows", flow=0)
    title = f"{METRIC_WORDS[metric]} {'per flavor' if is_flavor else 'vs ' + axis_name}"
    if categorical:
        # A flavor sweep renames the flow with its flavor: group by flow index instead.
        group_by = ["flow", *others] if metric != "jain_index" else others or ["point_group"]
        fig = sweep_plots.metric_vs_category(data, param, metric, group_by, title,
                                             labels.get(param), labels)
    else:
        group_by = ["flow", "name", *others] if metric != "jain_index" else others or ["point_group"]
        fig = sweep_plots.metric_vs_param(data, param, metric, group_by, title,
                                          theory_rows=theory_rows, labels=labels)
    if fig is None:
        return None
    unit = fig.axes[0].get_xlabel()[len(param):] if not categorical else ""
    fig.axes[0].set_xlabel(axis_name + unit)
    slug = "".join(ch if ch.isalnum() else "_" for ch in param)
    name = f"{prefix}sweep-{metric}-vs-{slug}.png"
    groups = data.groupby(list(group_by), dropna=False).ngroups
    if categorical and groups > sweep_plots.MAX_BAR_GROUPS:
        # sweep_plots.metric_vs_category collapsed the flows into one bar per flavor.
        shown = f"{title} (mean over {groups} flows, min–max)"
        caption = (f"Each bar is the mean over the {groups} flows of their mean over the "
                   "repeats; the whisker spans the lowest to the highest flow.")
    elif repeated:
        shown = f"{title} (mean ± 95% CI)"
        caption = ("Mean over the repeats with its 95% confidence interval (Student's t)"
                   + ("; Jain's index is one value per run." if metric == "jain_index" else "."))
    else:
        shown, caption = title, "One run per point: no interval to draw."
    return Figure.draw(fig, shown, name, Path(figures_dir), caption, overview=True)
