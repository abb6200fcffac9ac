"""Metrics: the one place every number in tables, figures and reports is defined.

Definitions (README.md, "Results reference"):

- goodput: in-order payload bytes delivered to the receiving application per second;
- throughput: bytes put on the wire by the sender per second, retransmissions included;
- Jain's fairness index J = (Σx)² / (n·Σx²) (Jain, Chiu, Hawe, DEC-TR-301, 1984);
- stability of a flow: SD / mean of its goodput samples (Gupta, Ansari, Cottrell, Hughes-Jones,
  "Transport Fairness Characterization and Evaluation", SLAC 2004 — seed 001);
- regions: maximal intervals with a constant set of active flows, with fairness and stability per
  region and their min–max over regions (seed 001, Table 2);
- aggregate goodput: per sample instant, the sum of the active flows' goodput; its mean, SD and
  SD/mean per region and over the whole run (seed 001, Table 1; :func:`aggregate_goodput_series`);
- loss, retransmission and packet delivery ratios (seed 003); RTT statistics over per-ACK samples;
  queueing delay per queue; link utilization; flow completion time;
- over repeats: mean, SD and a 95% confidence interval from Student's t.

Inputs are the engine's tables (docs/engine-spec.md) as pandas DataFrames; times in seconds,
rates in bits per second, sizes in bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from ccarena import flavors
from ccarena.analysis import datacenter_metrics as datacenter, theory

# ----------------------------------------------------------------------------- basic statistics

def jain_index(values: Iterable[float]) -> float:
    """Jain's fairness index of ``values`` (e.g. each flow's mean goodput, bits/s).

    J = (Σ x_i)² / (n · Σ x_i²), in [1/n, 1]; 1 when all x_i are equal.
    Source: R. Jain, D. Chiu, W. Hawe, "A Quantitative Measure of Fairness and Discrimination for
    Resource Allocation in Shared Computer Systems", DEC-TR-301, 1984.

    Returns NaN for an empty input or when every value is 0 (the index is undefined).
    """
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return math.nan
    denom = x.size * float(np.sum(x * x))
    if denom == 0.0:
        return math.nan
    return float(np.sum(x)) ** 2 / denom


def stability(samples: Iterable[float]) -> float:
    """Stability of a flow: SD / mean of its goodput samples (the coefficient of variation).

    SD is the population standard deviation (ddof = 0) of the samples in the interval. Lower is
    steadier; 0 for a constant rate. Source: seed 001 (Gupta et al., SLAC 2004), "Stability = SD/μ".

    Returns NaN for fewer than two samples or a zero mean.
    """
    if isinstance(samples, np.ndarray):
        x = samples.astype(float, copy=False)
    else:
        x = np.asarray(list(samples), dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return math.nan
    mean, sd = _mean_sd(x)
    if mean == 0.0:
        return math.nan
    return sd / mean


def _mean_sd(x: np.ndarray) -> tuple[float, float]:
    """``(np.mean(x), np.std(x, ddof=0))`` of a non-empty float array, computed as numpy computes
    them (the same sums in the same order: equal bit for bit) without their per-call overhead,
    which dominated the metrics of runs with thousands of flows."""
    n = x.size
    mean = float(np.add.reduce(x)) / n
    d = x - mean
    np.multiply(d, d, out=d)
    return mean, math.sqrt(float(np.add.reduce(d)) / n)


@dataclass(frozen=True)
class MeanCI:
    """Mean of repeated measurements with its spread.

    Attributes:
        mean: the sample mean.
        sd: the sample standard deviation (ddof = 1); NaN for n < 2.
        half_width: half-width of the confidence interval, t_{(1+c)/2, n−1} · sd / √n; NaN for n < 2.
        n: number of finite values.
    """

    mean: float
    sd: float
    half_width: float
    n: int

    @property
    def low(self) -> float:
        """Lower end of the interval."""
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        """Upper end of the interval."""
        return self.mean + self.half_width


def mean_ci(values: Iterable[float], confidence: float = 0.95) -> MeanCI:
    """Mean, SD and the Student-t confidence interval of ``values`` (NaNs ignored).

    half_width = t_{(1+confidence)/2, n−1} · s / √n, with s the sample SD (ddof = 1)
    (Student, "The probable error of a mean", Biometrika 1908). For n = 1 the SD and the interval
    are NaN; for n = 0 everything is NaN.
    """
    x = np.asarray(list(values), dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return MeanCI(math.nan, math.nan, math.nan, 0)
    mean = float(np.mean(x))
    if n < 2:
        return MeanCI(mean, math.nan, math.nan, 1)
    sd = float(np.std(x, ddof=1))
    # Student's t quantile from scipy.special (scipy.stats takes ~1 s to import), imported only
    # when there is an interval to compute: a single run's summary needs none.
    from scipy.special import stdtrit

    t = float(stdtrit(n - 1, (1.0 + confidence) / 2.0))
    return MeanCI(mean, sd, t * sd / math.sqrt(n), n)


def rate_bps(size_bytes: float, interval_s: float) -> float:
    """Average rate in bits per second: 8 · size_bytes / interval_s; NaN for an empty interval."""
    if not interval_s > 0:
        return math.nan
    return 8.0 * float(size_bytes) / float(interval_s)


def ratio(part: float, whole: float) -> float:
    """part / whole, NaN when whole is 0 (used for loss, retransmission and delivery ratios)."""
    return float(part) / float(whole) if whole else math.nan


PACKET_RATIOS = ("loss_rate", "retransmission_rate", "delivery_ratio")
"""The per-flow packet ratios :func:`packet_ratios` computes, in its order."""


def packet_ratios(packets_lost: float, packets_retransmitted: float, packets_received: float,
                  packets_sent: float) -> tuple[float, float, float]:
    """A flow's ``(loss_rate, retransmission_rate, delivery_ratio)``: packets lost, retransmitted
    and received, each over packets sent (:func:`ratio`; seed 003's packet delivery ratio is the
    last). The one definition for simulated, emulated and imported runs; a term that is unknown
    (NaN) makes its ratio NaN, and no packet sent makes all three NaN."""
    return (ratio(packets_lost, packets_sent), ratio(packets_retransmitted, packets_sent),
            ratio(packets_received, packets_sent))


def queueing_delay_mean_s(sojourn_mean_s: Sequence[float], departures_cumulative: Sequence[float]) -> float:
    """Mean time packets waited in a queue over the run, weighting each sample interval's mean
    sojourn by the packets that left the queue in it: Σ s_k·d_k / Σ d_k, with d_k the increase of
    the cumulative departure count over interval k. NaN when no packet left the queue."""
    s = np.asarray(sojourn_mean_s, dtype=float)
    d = np.diff(np.asarray(departures_cumulative, dtype=float), prepend=0.0)
    ok = np.isfinite(s) & (d > 0)
    total = float(np.sum(d[ok]))
    return float(np.sum(s[ok] * d[ok]) / total) if total > 0 else math.nan


def link_utilization(bytes_transmitted: float, rate_bps_: float, duration_s: float) -> float:
    """Fraction of a link's capacity used: 8 · bytes_transmitted / (rate_bps · duration_s)."""
    if not (rate_bps_ > 0 and duration_s > 0):
        return math.nan
    return 8.0 * float(bytes_transmitted) / (float(rate_bps_) * float(duration_s))


# ----------------------------------------------------------------------------- regions

@dataclass(frozen=True)
class Region:
    """A maximal interval [start_s, end_s) during which the set of active flows is constant."""

    start_s: float
    end_s: float
    flows: tuple[int, ...]


def find_regions(intervals: Sequence[tuple[int, float, float]]) -> list[Region]:
    """Regions of a start/stop schedule (seed 001, Fig. 1 and Table 2).

    Args:
        intervals: ``(flow, start_s, end_s)`` per flow; a flow is active on [start_s, end_s).

    Returns:
        The maximal intervals with a constant, non-empty set of active flows, in time order.
        Adjacent intervals with the same set are merged; intervals with no active flow are left
        out.
    """
    points = sorted({t for _, s, e in intervals for t in (s, e) if e > s})
    regions: list[Region] = []
    for a, b in zip(points, points[1:]):
        active = tuple(sorted(f for f, s, e in intervals if s <= a and e >= b and e > s))
        if not active:
            continue
        if regions and regions[-1].flows == active and regions[-1].end_s == a:
            regions[-1] = Region(regions[-1].start_s, b, active)
        else:
            regions.append(Region(a, b, active))
    return regions


def active_intervals(flows: pd.DataFrame, duration_s: float) -> list[tuple[int, float, float]]:
    """Each flow's active interval ``(flow, start_s, end_s)`` from the engine's flows table
    (``end_s`` NaN is read as the end of the run)."""
    out = []
    for row in _rows(flows, ("flow", "start_s", "end_s")):
        end = float(row.end_s) if np.isfinite(row.end_s) else duration_s
        out.append((int(row.flow), float(row.start_s), min(end, duration_s)))
    return out


def samples_within(samples: pd.DataFrame, start_s: float, end_s: float,
                   sample_interval_s: float) -> pd.DataFrame:
    """The samples whose interval (time_s − Δ, time_s] lies inside [start_s, end_s]."""
    eps = 1e-9
    t = samples["time_s"].to_numpy(dtype=float)
    keep = (t - sample_interval_s >= start_s - eps) & (t <= end_s + eps)
    return samples[keep]


def _rows(table: pd.DataFrame, columns: Sequence[str]) -> Iterable[Any]:
    """The rows of ``table``'s ``columns`` as named tuples of Python values, what
    ``itertuples`` gives for them (columns are read whole: iterating a table of thousands of
    rows cell by cell, its string columns included, cost more than the metrics)."""
    from collections import namedtuple

    row = namedtuple("row", columns)  # type: ignore[misc]
    return map(row._make, zip(*(table[c].tolist() for c in columns)))


class _Groups:
    """Rows of a table grouped by one integer key column, as contiguous slices of sorted numpy
    columns: ``slice(key)`` gives the positions of the key's rows in the original order (a stable
    sort), what ``groupby(key, sort=False)`` gives, at a fraction of its cost per group (a run of
    thousands of flows or links asked pandas for thousands of groups)."""

    def __init__(self, table: pd.DataFrame, key: str, columns: Sequence[str],
                 then_by: str | None = None) -> None:
        keys = table[key].to_numpy()
        if then_by is None:
            order = np.argsort(keys, kind="stable")
        else:  # by key, then by ``then_by``, ties in the original order
            order = np.lexsort((table[then_by].to_numpy(), keys))
        keys = keys[order]
        self.columns = {c: table[c].to_numpy()[order] for c in columns}
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else keys[:0]
        ends = np.r_[starts[1:], keys.size]
        self._bounds = {k: slice(a, b) for k, a, b in
                        zip(keys[starts].tolist(), starts.tolist(), ends.tolist())
                        if k == k}  # NaN keys belong to no group, as in groupby
        self._none = slice(0, 0)

    def slice(self, key: int) -> slice:
        """The positions of ``key``'s rows in the sorted columns (empty when it has none)."""
        return self._bounds.get(key, self._none)


def _within(time_s: np.ndarray, start_s: float, end_s: float, sample_interval_s: float) -> np.ndarray:
    """The mask of :func:`samples_within` over an array of sample times."""
    eps = 1e-9
    t = time_s.astype(float, copy=False)
    return (t - sample_interval_s >= start_s - eps) & (t <= end_s + eps)


def region_table(flows: pd.DataFrame, samples: pd.DataFrame, duration_s: float,
                 sample_interval_s: float) -> pd.DataFrame:
    """Fairness and stability per region.

    Columns: ``region, start_s, end_s, flows`` (names, comma-separated), ``n_flows``,
    ``goodput_total_bps`` (sum of the active flows' mean goodputs), ``jain_index`` (over the active
    flows' mean goodputs in the region), ``stability`` (mean over active flows of each flow's
    SD/mean of goodput samples in the region), ``stability_max`` (the least stable flow's).
    Only samples whose whole interval lies in the region count; a region shorter than two sample
    intervals gets NaN stability.

    Aggregate columns (seed 001, Table 1's Average / SD / Stability, per region; see
    :func:`aggregate_goodput_series` for the reading of the paper):
    ``aggregate_goodput_mean_bps`` and ``aggregate_goodput_sd_bps`` (population SD, ddof = 0, as
    :func:`stability`) of the per-sample sum of the active flows' goodput, ``aggregate_stability``
    = SD / mean of that sum, and ``aggregate_samples``, the number of sample instants it is taken
    over (so per-region values can be pooled exactly over a run: :func:`pool_aggregate`).
    """
    names = dict(zip(flows["flow"].astype(int), flows["name"].astype(str)))
    rows: list[dict[str, Any]] = []
    by_flow = _Groups(samples, "flow", ("time_s", "goodput_bps"))
    for i, region in enumerate(find_regions(active_intervals(flows, duration_s))):
        inside = samples_within(samples, region.start_s, region.end_s, sample_interval_s)
        means, stabilities = [], []
        for flow in region.flows:
            rows_of_flow = by_flow.slice(int(flow))
            keep = _within(by_flow.columns["time_s"][rows_of_flow], region.start_s, region.end_s,
                           sample_interval_s)
            g = by_flow.columns["goodput_bps"][rows_of_flow][keep].astype(float)
            means.append(float(np.add.reduce(g)) / g.size if g.size else math.nan)  # np.mean
            stabilities.append(stability(g))
        finite_means = [m for m in means if np.isfinite(m)]
        finite_stab = [s for s in stabilities if np.isfinite(s)]
        total = _aggregate_in_region(inside, region.flows).to_numpy(dtype=float)
        agg_mean = float(np.mean(total)) if total.size else math.nan
        agg_sd = float(np.std(total, ddof=0)) if total.size else math.nan
        rows.append({
            "region": i, "start_s": region.start_s, "end_s": region.end_s,
            "flows": ", ".join(names.get(f, str(f)) for f in region.flows),
            "n_flows": len(region.flows),
            "goodput_total_bps": float(np.sum(finite_means)) if finite_means else math.nan,
            "jain_index": jain_index(means) if len(finite_means) == len(means) else math.nan,
            "stability": float(np.mean(finite_stab)) if finite_stab else math.nan,
            "stability_max": float(np.max(finite_stab)) if finite_stab else math.nan,
            "aggregate_goodput_mean_bps": agg_mean,
            "aggregate_goodput_sd_bps": agg_sd,
            "aggregate_stability": stability(total),
            "aggregate_samples": int(total.size),
        })
    columns = ["region", "start_s", "end_s", "flows", "n_flows", "goodput_total_bps",
               "jain_index", "stability", "stability_max", *AGGREGATE_REGION_COLUMNS]
    return pd.DataFrame(rows, columns=columns)


AGGREGATE_REGION_COLUMNS = ("aggregate_goodput_mean_bps", "aggregate_goodput_sd_bps",
                            "aggregate_stability", "aggregate_samples")
"""Columns :func:`region_table` adds for the aggregate (summed) goodput of each region."""


def _aggregate_in_region(inside: pd.DataFrame, active: Sequence[int]) -> pd.Series:
    """Per sample instant, the sum of the active flows' goodput (bits/s), indexed by ``time_s``.

    ``inside`` holds the samples that lie in the region (:func:`samples_within`). Only instants at
    which every active flow has a finite sample count: a missing flow would read as a drop of the
    aggregate that did not happen.
    """
    flow = inside["flow"].to_numpy()
    mine = np.isin(flow, list(active))
    if not mine.any():
        return pd.Series([], dtype=float).rename_axis("time_s")
    t = inside["time_s"].to_numpy(dtype=float)[mine]
    g = inside["goodput_bps"].to_numpy(dtype=float)[mine]
    flow = flow[mine]
    keyed = ~np.isnan(t)  # a sample without a time belongs to no instant
    t, g, flow = t[keyed], g[keyed], flow[keyed]
    order = np.argsort(np.asarray(active, dtype=float), kind="stable")
    columns = np.asarray(active, dtype=float)[order]
    col = order[np.searchsorted(columns, flow.astype(float))]
    times, row = np.unique(t, return_inverse=True)
    cell = row.astype(np.int64) * len(active) + col
    if cell.size and np.bincount(cell).max() > 1:  # several samples of a flow at one instant: their mean
        wide = inside[inside["flow"].isin(list(active))].pivot_table(
            index="time_s", columns="flow", values="goodput_bps", aggfunc="mean")
        wide = wide.reindex(columns=list(active)).sort_index()
        return wide[wide.notna().all(axis=1)].sum(axis=1).astype(float)
    # One sample per flow and instant: a table instants × active flows (NaN where a flow has no
    # sample), summed across the flows of each complete instant.
    wide = np.full((times.size, len(active)), np.nan)
    wide[row, col] = g
    complete = ~np.isnan(wide).any(axis=1)
    total = np.ascontiguousarray(wide[complete]).sum(axis=1)
    return pd.Series(total, index=pd.Index(times[complete], name="time_s"), dtype=float)


def aggregate_goodput_series(samples: pd.DataFrame, flows: pd.DataFrame, duration_s: float,
                             interval_s: float) -> pd.Series:
    """The aggregate goodput of a run: per sample instant, the sum of the goodput (bits/s) of the
    flows active then, over the whole time any flow is active; indexed by ``time_s``.

    Reading of seed 001 (Gupta et al., SLAC 2004), Table 1 "Aggregate Values for all the 7
    Regions": iperf reported each flow's throughput every second; the aggregate throughput is the
    sum over the flows present, and Average (μ), SD and Stability = SD/μ (the definition of Bullo,
    Cottrell, Hughes-Jones, PFLDnet 2004) are taken over that one series for the whole test, so SD
    includes the steps between regions as flows enter and leave. The published rows are
    consistent with this: Reno 163.25 / 248.40 = 0.66, HTCP 113.10 / 402.08 = 0.28. The other
    reading — averaging each flow's or each region's SD/μ — would not give Table 1's SD in Mbps.

    The series is the concatenation of the regions' series (:func:`region_table`, same sample
    selection): a sample instant whose interval straddles a region boundary or falls where no
    flow is active is left out, as is an instant at which an active flow has no sample.
    """
    parts = []
    for region in find_regions(active_intervals(flows, duration_s)):
        inside = samples_within(samples, region.start_s, region.end_s, interval_s)
        parts.append(_aggregate_in_region(inside, region.flows))
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.Series([], dtype=float, name="aggregate_goodput_bps").rename_axis("time_s")
    series = pd.concat(parts)
    return series[~series.index.duplicated(keep="first")].rename("aggregate_goodput_bps")


def aggregate_over_run(samples: pd.DataFrame, flows: pd.DataFrame, duration_s: float,
                       interval_s: float) -> dict[str, float]:
    """Seed 001 Table 1 for one run: μ, SD and SD/μ of the aggregate goodput over the whole time
    any flow is active (:func:`aggregate_goodput_series` explains the reading of the paper).

    Args:
        samples: the run's samples table (``time_s, flow, goodput_bps``).
        flows: the run's flows table (``flow, start_s, end_s``; ``end_s`` NaN = end of run).
        duration_s: the run's duration; interval_s: the sample interval.

    Returns:
        ``aggregate_goodput_mean_bps`` (μ, bits/s), ``aggregate_goodput_sd_bps`` (population SD,
        ddof = 0, bits/s), ``aggregate_stability`` (SD/μ; NaN for fewer than two samples or
        μ = 0) and ``aggregate_samples`` (number of sample instants). Equal to
        :func:`pool_aggregate` of the run's region table.
    """
    x = aggregate_goodput_series(samples, flows, duration_s, interval_s).to_numpy(dtype=float)
    return {
        "aggregate_goodput_mean_bps": float(np.mean(x)) if x.size else math.nan,
        "aggregate_goodput_sd_bps": float(np.std(x, ddof=0)) if x.size else math.nan,
        "aggregate_stability": stability(x),
        "aggregate_samples": int(x.size),
    }


def pool_aggregate(regions: pd.DataFrame) -> dict[str, float]:
    """μ, SD and SD/μ of the aggregate goodput over a whole run, pooled exactly from one run's
    :func:`region_table` rows (their ``aggregate_goodput_mean_bps``, ``aggregate_goodput_sd_bps``
    and ``aggregate_samples``): with n_i samples of mean μ_i and population SD σ_i per region,
    μ = Σ n_i μ_i / N and SD² = Σ n_i (σ_i² + μ_i²) / N − μ², N = Σ n_i.

    Returns the same keys as :func:`aggregate_over_run` (NaN without samples).
    """
    n = regions["aggregate_samples"].to_numpy(dtype=float) if len(regions) else np.array([])
    mu = regions["aggregate_goodput_mean_bps"].to_numpy(dtype=float) if len(regions) else n
    sd = regions["aggregate_goodput_sd_bps"].to_numpy(dtype=float) if len(regions) else n
    ok = np.isfinite(n) & (n > 0) & np.isfinite(mu) & np.isfinite(sd)
    n, mu, sd = n[ok], mu[ok], sd[ok]
    total = float(np.sum(n))
    if total == 0:
        return {"aggregate_goodput_mean_bps": math.nan, "aggregate_goodput_sd_bps": math.nan,
                "aggregate_stability": math.nan, "aggregate_samples": 0}
    mean = float(np.sum(n * mu) / total)
    var = max(float(np.sum(n * (sd * sd + mu * mu)) / total) - mean * mean, 0.0)
    sd_all = math.sqrt(var)
    # As stability(): undefined for fewer than two samples or a zero mean.
    stab = sd_all / mean if total >= 2 and mean != 0 else math.nan
    return {"aggregate_goodput_mean_bps": mean, "aggregate_goodput_sd_bps": sd_all,
            "aggregate_stability": stab, "aggregate_samples": int(total)}


def region_ranges(regions: pd.DataFrame) -> dict[str, float]:
    """Min–max over regions of fairness and stability (seed 001, Table 1's "Fairness Min-Max"):
    ``fairness_min, fairness_max, stability_min, stability_max`` (NaN without finite values)."""
    def lo_hi(column: str) -> tuple[float, float]:
        x = regions[column].to_numpy(dtype=float) if len(regions) else np.array([])
        x = x[np.isfinite(x)]
        return (float(x.min()), float(x.max())) if x.size else (math.nan, math.nan)

    fmin, fmax = lo_hi("jain_index")
    smin, smax = lo_hi("stability")
    return {"fairness_min": fmin, "fairness_max": fmax, "stability_min": smin, "stability_max": smax}


# ----------------------------------------------------------------------------- per-run tables

FLOW_METRICS = (
    "goodput_mean_bps", "throughput_mean_bps", "loss_rate", "retransmission_rate",
    "delivery_ratio", "stability", "fct_s", "fct_slowdown", "rtt_min_s", "rtt_mean_s", "rtt_p50_s", "rtt_p95_s",
    "rtt_p99_s", "sender_cpu_s", "sender_wall_s", "cpu_mhz", "cpu_percent", "mhz_per_mbps",
)
"""Per-flow metric columns :func:`flow_table` adds (RTT and raw CPU columns come from the backend)."""

CPU_COLUMNS = ("sender_cpu_s", "sender_wall_s", "cpu_mhz")
"""The backend's raw CPU-cost columns (:data:`ccarena.backends.CPU_FLOW_COLUMNS`)."""

CPU_METRIC_COLUMNS = ("cpu_percent", "mhz_per_mbps")
"""The CPU-cost metrics :func:`flow_table` adds (:func:`cpu_percent`, :func:`mhz_per_mbps`)."""

FLOW_TABLE_COLUMNS = (
    "active_s", "goodput_mean_bps", "throughput_mean_bps", *PACKET_RATIOS, "stability", "fct_s",
    "base_rtt_s", "mss_bytes", "path_loss", "bottleneck_rate_bps", "mathis_bps", "padhye_bps",
    "cubic_bps", "ideal_fct_s", *CPU_METRIC_COLUMNS, "fct_slowdown",
)
"""The columns :func:`flow_table` adds to a backend's flows table (which has :data:`CPU_COLUMNS`),
in the order it adds them given the links table: the stored flows table is the backend's columns
followed by these (:mod:`ccarena.store.columns`)."""


def cpu_percent(cpu_s: float, wall_s: float) -> float:
    """CPU utilization in percent of one core: ``cpu_s / wall_s · 100`` (NaN when either is
    missing or ``wall_s`` is not positive)."""
    cpu_s, wall_s = float(cpu_s), float(wall_s)
    if not (math.isfinite(cpu_s) and math.isfinite(wall_s) and wall_s > 0):
        return math.nan
    return cpu_s / wall_s * 100.0


def mhz_per_mbps(cpu_s: float, wall_s: float, mhz: float, goodput_bps: float) -> float:
    """Seed 001's MHz per Mbps (Gupta, Ansari, Cottrell, Hughes-Jones, SLAC 2004, Table 1):
    the sender's CPU fraction (``cpu_s / wall_s``, of one core) times the CPU clock in MHz, over
    the goodput in Mbit/s. MHz/Mbps is (10⁶ cycles/s)/(10⁶ bit/s): CPU cycles per bit
    delivered. NaN when an input is missing or the goodput is not positive."""
    fraction = cpu_percent(cpu_s, wall_s) / 100.0
    mhz, goodput_bps = float(mhz), float(goodput_bps)
    if not (math.isfinite(fraction) and math.isfinite(mhz) and math.isfinite(goodput_bps)
            and goodput_bps > 0):
        return math.nan
    return fraction * mhz / (goodput_bps / 1e6)


def flow_table(flows: pd.DataFrame, samples: pd.DataFrame, derived: dict[str, Any],
               duration_s: float, sample_interval_s: float,
               links: pd.DataFrame | None = None) -> pd.DataFrame:
    """The engine's flows table with per-flow metrics and theory added.

    Added columns:
        ``active_s`` = end − start (end = the flow's ``end_s``, or the end of the run);
        ``goodput_mean_bps`` = 8 · bytes_delivered / active_s;
        ``throughput_mean_bps`` = 8 · bytes_sent / active_s (bytes_sent includes retransmissions);
        ``loss_rate``, ``retransmission_rate``, ``delivery_ratio``: :func:`packet_ratios`;
        ``stability`` = SD/mean of the flow's goodput samples in its active interval;
        ``fct_s`` = the engine's ``completion_time_s`` for finite transfers: the time from the
        flow's start until its last byte is acknowledged (NaN otherwise);
        ``ideal_fct_s`` and ``fct_slowdown`` = fct_s / ideal_fct_s for finite TCP/QUIC/UDT flows
        (:mod:`ccarena.analysis.datacenter_metrics`, over the path's link rates from ``links``, the
        engine's links table, when given; NaN for other flows);
        ``base_rtt_s``, ``path_loss``, ``bottleneck_rate_bps``, ``mss_bytes`` (payload per
        packet) from the resolved spec and topology;
        ``mathis_bps``, ``padhye_bps``, ``cubic_bps``: :mod:`ccarena.analysis.theory` at the path's loss
        probability and base RTT (NaN for UDP flows and loss-free paths);
        ``cpu_percent`` = :func:`cpu_percent` (sender_cpu_s, sender_wall_s) and ``mhz_per_mbps`` =
        :func:`mhz_per_mbps` over ``goodput_mean_bps`` (NaN where the backend measured no CPU: the
        simulator; the raw :data:`CPU_COLUMNS` are added as NaN where a table lacks them).
    RTT statistics (``rtt_min_s`` … ``rtt_p99_s``) are the engine's, over per-ACK samples.
    ``flavor`` names a Multipath TCP connection ``mptcp-…`` (:func:`ccarena.flavors.mptcp_label`)
    and a QUIC connection (``kind`` ``"quic"``) ``quic-<flavor>``
    (:func:`ccarena.flavors.quic_label`), apart from single-path TCP flows of the flavor.
    """
    out = flows.copy()
    mptcp = _mptcp_rows(out)
    if mptcp.any():  # compared as their own kind of flow (:func:`ccarena.flavors.mptcp_label`)
        out["flavor"] = pd.array([flavors.mptcp_label(str(f), str(c) if m else "")
                                  for f, c, m in zip(out["flavor"], out["coupling"], mptcp)],
                                 dtype="string")
    if "kind" in out.columns and (out["kind"].astype(str) == "quic").any():
        # A QUIC connection is compared apart from TCP flows of its flavor
        # (:func:`ccarena.flavors.quic_label`).
        out["flavor"] = pd.array([flavors.quic_label(str(f), str(k))
                                  for f, k in zip(out["flavor"], out["kind"])], dtype="string")
    facts = {f["name"]: f for f in derived.get("flows", [])}
    active, goodput, throughput, loss, retx, pdr, stab, fct = ([] for _ in range(8))
    base_rtt, path_loss, bottleneck, mathis, padhye, cubic, mss_col = ([] for _ in range(7))
    by_flow = _Groups(samples, "flow", ("time_s", "goodput_bps"))
    for multipath, row in zip(mptcp, _rows(out, (
            "flow", "name", "kind", "start_s", "end_s", "bytes_delivered", "bytes_sent",
            "packets_lost", "packets_sent", "packets_retransmitted", "packets_received",
            "completion_time_s"))):
        end = float(row.end_s) if np.isfinite(row.end_s) else duration_s
        span = min(end, duration_s) - float(row.start_s)
        active.append(span)
        goodput.append(rate_bps(row.bytes_delivered, span))
        throughput.append(rate_bps(row.bytes_sent, span))
        lost, retransmitted, delivered = packet_ratios(row.packets_lost, row.packets_retransmitted,
                                                       row.packets_received, row.packets_sent)
        loss.append(lost)
        retx.append(retransmitted)
        pdr.append(delivered)
        mine = by_flow.slice(int(row.flow))
        keep = _within(by_flow.columns["time_s"][mine], float(row.start_s), min(end, duration_s),
                       sample_interval_s)
        stab.append(stability(by_flow.columns["goodput_bps"][mine][keep]))
        done = float(row.completion_time_s)
        fct.append(done if np.isfinite(done) else math.nan)  # already measured from start_s
        fact = facts.get(str(row.name), {})
        rtt = float(fact.get("base_rtt_s", math.nan))
        p = float(fact.get("path_loss", math.nan))
        mss = float(fact.get("mss_bytes", math.nan))
        base_rtt.append(rtt)
        mss_col.append(mss)
        path_loss.append(p)
        bottleneck.append(float(fact.get("bottleneck_rate_bps", math.nan)))
        # The loss-response models are a single-path connection's (its controller's response
        # to loss, over TCP or QUIC).
        tcp = str(row.kind) in ("tcp", "quic") and p > 0 and not multipath
        mathis.append(theory.mathis_bps(mss, rtt, p) if tcp else math.nan)
        padhye.append(theory.padhye_bps(mss, rtt, p, rto_s=max(theory.MIN_RTO_S, rtt)) if tcp else math.nan)
        cubic.append(theory.cubic_bps(mss, rtt, p) if tcp else math.nan)
    added: dict[str, Any] = {
        "active_s": active, "goodput_mean_bps": goodput, "throughput_mean_bps": throughput,
        "loss_rate": loss, "retransmission_rate": retx, "delivery_ratio": pdr, "stability": stab,
        "fct_s": fct, "base_rtt_s": base_rtt, "mss_bytes": mss_col, "path_loss": path_loss,
        "bottleneck_rate_bps": bottleneck, "mathis_bps": mathis, "padhye_bps": padhye,
        "cubic_bps": cubic,
    }
    if links is not None:
        rates = dict(zip(links["link"].astype(int), links["rate_bps"].astype(float)))
        added["ideal_fct_s"] = [
            datacenter.ideal_fct_s(size, rtt, [rates[i] for i in facts.get(str(name), {}).get("path_links", [])],
                                   mss, datacenter.HEADER_BYTES.get(str(kind), math.nan))
            for name, kind, size, rtt, mss in zip(out["name"], out["kind"], out["bytes_offered"],
                                                  base_rtt, mss_col)]
    cpu = {c: out[c].tolist() if c in out.columns else [math.nan] * len(out) for c in CPU_COLUMNS}
    for c in CPU_COLUMNS:
        if c not in out.columns:
            added[c] = cpu[c]
    added["cpu_percent"] = [cpu_percent(c, w) for c, w in zip(cpu["sender_cpu_s"], cpu["sender_wall_s"])]
    added["mhz_per_mbps"] = [mhz_per_mbps(c, w, m, g) for c, w, m, g in
                             zip(cpu["sender_cpu_s"], cpu["sender_wall_s"], cpu["cpu_mhz"], goodput)]
    out = _with_columns(out, added)
    finite = datacenter.slowdown_table(out)
    out["ideal_fct_s"] = finite["ideal_fct_s"].reindex(out.index).to_numpy(dtype=float)
    out["fct_slowdown"] = finite["fct_slowdown"].reindex(out.index).to_numpy(dtype=float)
    return out


def _mptcp_rows(flows: pd.DataFrame) -> np.ndarray:
    """Per row of an engine flows table, whether the flow is a Multipath TCP connection (its
    ``coupling`` is set); all False for a table without the column (stored before it existed)."""
    if "coupling" not in flows.columns:
        return np.zeros(len(flows), dtype=bool)
    return flows["coupling"].fillna("").astype(str).str.len().to_numpy() > 0


def _with_columns(table: pd.DataFrame, columns: dict[str, Any]) -> pd.DataFrame:
    """``table`` with ``columns`` (name → values) set in order, as ``table[name] = values`` one
    by one sets them (a name ``table`` has is replaced where it stands, a new one is added at the
    end), the new ones added at once: a column at a time cost a run of one flow more than its
    metrics."""
    fresh = {k: v for k, v in columns.items() if k not in table.columns}
    for k, v in columns.items():
        if k not in fresh:
            table[k] = v
    if not fresh:
        return table
    return pd.concat([table, pd.DataFrame(fresh, index=table.index)], axis=1)


def link_table(links: pd.DataFrame, queues: pd.DataFrame, derived: dict[str, Any],
               duration_s: float) -> pd.DataFrame:
    """The engine's links table with per-link metrics added.

    Added columns: ``role`` (from the topology builder); ``utilization_bytes`` =
    :func:`link_utilization` of bytes_transmitted at the initial rate — the engine's own
    ``utilization`` (busy time / elapsed time) stays right when ``[[events]]`` change the rate, and
    the run summary prefers it; ``queueing_delay_mean_s`` =
    :func:`queueing_delay_mean_s`; ``backlog_mean_bytes``, ``backlog_max_bytes``,
    ``backlog_max_packets`` over the samples; ``drop_rate`` = packets_dropped_queue / packets_in.
    """
    out = links.copy()
    roles = [link["role"] for link in derived.get("links", [])]
    role = [roles[int(i)] if int(i) < len(roles) else "" for i in out["link"]]
    util, qdelay, bmean, bmax, bmaxp, drop = ([] for _ in range(6))
    # One sort of the samples, by link then time (links × samples masks took seconds at
    # thousands of links, and so did a pandas group per link).
    by_link = _Groups(queues, "link", ("sojourn_mean_s", "departures", "backlog_bytes",
                                       "backlog_packets"), then_by="time_s")
    q = by_link.columns
    for row in _rows(out, ("link", "bytes_transmitted", "rate_bps", "packets_dropped_queue",
                           "packets_in")):
        mine = by_link.slice(int(row.link))
        util.append(link_utilization(row.bytes_transmitted, row.rate_bps, duration_s))
        drop.append(ratio(row.packets_dropped_queue, row.packets_in))
        if mine.stop == mine.start:  # an unsampled link (most access links): nothing to average
            qdelay.append(math.nan)
            bmean.append(math.nan)
            bmax.append(math.nan)
            bmaxp.append(math.nan)
            continue
        qdelay.append(queueing_delay_mean_s(q["sojourn_mean_s"][mine], q["departures"][mine]))
        bmean.append(_skipna_mean(q["backlog_bytes"][mine]))
        bmax.append(_skipna_max(q["backlog_bytes"][mine]))
        bmaxp.append(_skipna_max(q["backlog_packets"][mine]))
    return _with_columns(out, {"role": role, "utilization_bytes": util,
                               "queueing_delay_mean_s": qdelay, "backlog_mean_bytes": bmean,
                               "backlog_max_bytes": bmax, "backlog_max_packets": bmaxp,
                               "drop_rate": drop})


def _skipna_mean(x: np.ndarray) -> float:
    """``Series.mean()`` of ``x`` as pandas computes it (NaN skipped; NaN when nothing is left):
    the float64 sum of the kept values over their count."""
    if x.dtype.kind in "iub":
        return float(x.sum(dtype=np.float64) / x.size) if x.size else math.nan
    x = x.astype(float, copy=False)
    keep = ~np.isnan(x)
    n = int(keep.sum())
    return float(np.where(keep, x, 0.0).sum() / n) if n else math.nan


def _skipna_max(x: np.ndarray) -> float:
    """``Series.max()`` of ``x`` (NaN skipped; NaN when nothing is left) as a float."""
    if x.dtype.kind in "iub":
        return float(x.max()) if x.size else math.nan
    x = x.astype(float, copy=False)
    x = x[~np.isnan(x)]
    return float(x.max()) if x.size else math.nan


BOTTLENECK_ROLES = ("bottleneck", "link")
"""Link roles that count as "the bottleneck" for a run's summary."""


def run_summary(flow_metrics: pd.DataFrame, link_metrics: pd.DataFrame,
                regions: pd.DataFrame, queues: pd.DataFrame | None = None,
                duration_s: float | None = None) -> dict[str, float]:
    """Run-level numbers put on every row of the run in summary.parquet.

    ``jain_index`` over all flows' mean goodputs; the region min–max (:func:`region_ranges`);
    ``bottleneck_utilization``, ``bottleneck_queueing_delay_s``, ``bottleneck_drops``,
    ``bottleneck_drop_rate`` of the (first) link whose role is in :data:`BOTTLENECK_ROLES`, and
    its per-class queueing delays when its queue is DualPI2 (:func:`dualpi2_class_delays`);
    with ``duration_s``, the data-center numbers where they apply (finite flows, multipath
    roles: :func:`ccarena.analysis.datacenter_metrics.run_summary`).
    """
    out: dict[str, float] = {"jain_index": jain_index(flow_metrics["goodput_mean_bps"])}
    out.update(region_ranges(regions))
    bottleneck = link_metrics[link_metrics["role"].isin(BOTTLENECK_ROLES)]
    if len(bottleneck):
        b = bottleneck.iloc[0]
        busy = float(b["utilization"]) if "utilization" in b.index else math.nan
        out["bottleneck_utilization"] = busy if math.isfinite(busy) else float(b["utilization_bytes"])
        out["bottleneck_queueing_delay_s"] = float(b["queueing_delay_mean_s"])
        out["bottleneck_drops"] = float(b["packets_dropped_queue"])
        out["bottleneck_drop_rate"] = float(b["drop_rate"])
        out.update(dualpi2_class_delays(b))
    else:
        for key in ("bottleneck_utilization", "bottleneck_queueing_delay_s", "bottleneck_drops",
                    "bottleneck_drop_rate"):
            out[key] = math.nan
    if duration_s is not None:
        out.update(datacenter.run_summary(flow_metrics, link_metrics, queues, duration_s))
    return out


DUALPI2_SUMMARY = {f"bottleneck_{c}_sojourn_{s}_s": f"{c}_sojourn_{s}_s"
                   for c in ("l4s", "classic") for s in ("mean", "p99")}
"""Run-summary column → the bottleneck's links-table column it copies: each DualPI2 queue's
mean and 99th-percentile sojourn (RFC 9332 §2.1's L4S and Classic queues)."""


def dualpi2_class_delays(bottleneck: pd.Series) -> dict[str, float]:
    """The bottleneck's per-class queueing delay (:data:`DUALPI2_SUMMARY`) when its queue is
    DualPI2 (its per-class columns finite), else nothing: a run through another discipline keeps
    the summary columns it had."""
    if not np.isfinite(float(bottleneck.get("l4s_packets_departed", math.nan))):
        return {}
    return {name: float(bottleneck[column]) for name, column in DUALPI2_SUMMARY.items()}


# ----------------------------------------------------------------------------- over repeats

SUMMARY_METRICS = FLOW_METRICS + (
    "jain_index", "fairness_min", "fairness_max", "stability_min", "stability_max",
    "bottleneck_utilization", "bottleneck_queueing_delay_s", "bottleneck_drop_rate",
    "fct_slowdown_p50", "fct_slowdown_p99", *DUALPI2_SUMMARY,
)
"""Columns of summary.parquet aggregated over repeats by :func:`aggregate_repeats`."""


def _student_t_quantile(df: Any, q: float) -> Any:
    """Student's t quantile ``t_{q, df}`` (``scipy.special.stdtrit``, the function behind
    ``scipy.stats.t.ppf``; scipy.stats takes ~1 s to import and the terminal summary of every
    ``ccarena run`` comes through :func:`aggregate_repeats`, which imports this only when some
    group has two values or more: a single run's summary has no interval to compute)."""
    from scipy.special import stdtrit

    return stdtrit(df, q)


def aggregate_repeats(summary: pd.DataFrame, by: Sequence[str],
                      metrics: Sequence[str] = SUMMARY_METRICS) -> pd.DataFrame:
    """Mean, SD and confidence half-width over repeats.

    Args:
        summary: rows of summary.parquet (one per run and flow).
        by: columns that identify a group (e.g. the swept parameters and ``flow``).
        metrics: numeric columns to aggregate (those present are used).

    Returns:
        One row per group with ``n`` and, for each metric m, ``m`` (mean), ``m_sd`` and
        ``m_ci95`` (half-width of the 95% interval; see :func:`mean_ci`).
    """
    metrics = [m for m in metrics if m in summary.columns]
    by = list(by)
    if not len(summary):
        return pd.DataFrame(columns=[*by, "n", *[f"{m}{s}" for m in metrics for s in ("", "_sd", "_ci95")]])
    # Column-wise (one groupby for every metric), the same numbers as mean_ci per group: NaNs
    # ignored, SD with ddof = 1, t_{0.975, n−1}·s/√n; NaN SD and interval where n < 2.
    values = summary[metrics].apply(pd.to_numeric, errors="coerce").astype(float)
    values = values.where(np.isfinite(values))
    grouped = values.groupby([summary[c] for c in by], sort=False, dropna=False)
    means, sds, counts = grouped.mean(), grouped.std(ddof=1), grouped.count()
    out = pd.DataFrame(index=means.index)
    out["n"] = summary.groupby(by, sort=False, dropna=False).size().reindex(means.index).to_numpy()
    quantile = _student_t_quantile if bool((counts.to_numpy() >= 2).any()) else None
    for m in metrics:
        n = counts[m].to_numpy(dtype=float)
        sd = np.where(n >= 2, sds[m].to_numpy(dtype=float), np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = (np.where(n >= 2, quantile(np.maximum(n - 1, 1), 0.975), np.nan)
                 if quantile is not None else np.full(n.shape, np.nan))
            half = t * sd / np.sqrt(n)
        out[m] = np.where(n >= 1, means[m].to_numpy(dtype=float), np.nan)
        out[f"{m}_sd"] = sd
        out[f"{m}_ci95"] = half
    return out.reset_index()
