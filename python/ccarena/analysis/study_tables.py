"""Study tables: the numbers the published studies of examples/seeds/README.md report, computed from ccarena's
stored tables, and side-by-side comparison with a study's own published table.

Every function is pure: DataFrames in, a DataFrame out, nothing drawn or written.

- :func:`matrix_table` — seed 004 (Liu and Dai, "Performance Comparison of Various TCP
  Versions"), Table 1: every ordered pair of flavors on a shared bottleneck, the first (row)
  flavor's flow starting first and the second (column) flavor's after a stagger;
- :func:`regions_by_group`, :func:`region_detail` — seed 001 (Gupta, Ansari, Cottrell,
  Hughes-Jones, SLAC 2004), Tables 1 and 2: aggregate goodput, stability and fairness over the
  regions of a staggered start/stop schedule;
- :func:`drop_rate_by_group` — seed 003 (Aftab et al.), Table I: expected value and variance of
  the packet drop rate per flavor;
- :func:`goodput_by_interval`, :func:`interval_goodput_over_repeats` — seed 003, Figs. 4 and 7:
  mean goodput while each buffer size (or any scheduled setting) is in force;
- :func:`reference_comparison` — a computed table beside a study's published one.

Inputs (see :mod:`ccarena.results` and :mod:`ccarena.analysis.metrics`): ``summary`` (summary.parquet, one
row per run and flow), ``regions`` (:func:`ccarena.analysis.metrics.region_table` with ``run_id``),
``samples`` (per flow per sample instant, with ``run_id``). Rates are bits per second, times
seconds; "ci95" columns are half-widths of the 95% Student-t interval over repeats
(:func:`ccarena.analysis.metrics.mean_ci`), NaN with fewer than two repeats.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ccarena.analysis import metrics

MATRIX_COLUMNS = ("matrix_row", "matrix_col", "matrix_role")
"""Per-row summary columns a matrix experiment carries: the pair's first (row) flavor, its second
(column) flavor, and the flow's role, ``"row"`` (starts first) or ``"col"`` (after the stagger)."""


def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {', '.join(missing)}; has {', '.join(map(str, df.columns))}")


def _ci(values: Any) -> metrics.MeanCI:
    return metrics.mean_ci(np.asarray(values, dtype=float), 0.95)


def _key_dict(by: Sequence[str], key: Any) -> dict[str, Any]:
    key = key if isinstance(key, tuple) else (key,)
    return dict(zip(by, key))


# ----------------------------------------------------------------------------- seed 004: matrix

def matrix_runs(summary: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per matrix run: the pair's goodputs, the first flow's share and Jain's index.

    Args:
        summary: summary rows with :data:`MATRIX_COLUMNS`, ``run_id`` and ``goodput_mean_bps``.
        by: further run-level columns to carry (e.g. a swept loss rate).

    Returns:
        Columns ``run_id, *by, row_flavor, col_flavor, row_goodput_bps, col_goodput_bps``
        (each role's goodput, bits/s: the sum over that role's flows, one flow per role in the
        usual matrix), ``row_share`` (row / (row + col), a fraction 0–1; NaN when both are 0) and
        ``jain_index`` (over the pair's flows' mean goodputs only, so flows outside the pair, if
        any, do not count; equal to summary's run-level ``jain_index`` when the run is the pair).

    Raises:
        ValueError: the matrix columns are absent, or a run lacks a ``row`` or ``col`` flow or has
            more than one row/column flavor.
    """
    _require(summary, [*MATRIX_COLUMNS, "run_id", "goodput_mean_bps", *by],
             "summary (not a [matrix] experiment?)")
    rows = []
    pair_rows = summary[summary["matrix_role"].isin(["row", "col"])]
    # Each run's rows by position, runs in order of appearance (as groupby(sort=False) gives
    # them), read from the columns as arrays: per-run pandas selections cost ~1.5 ms a run.
    codes, run_ids = pd.factorize(pair_rows["run_id"], sort=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(run_ids) + 1))
    row_flavor = pair_rows["matrix_row"].astype(str).to_numpy()
    col_flavor = pair_rows["matrix_col"].astype(str).to_numpy()
    is_row = (pair_rows["matrix_role"] == "row").to_numpy(dtype=bool)
    goodput = pair_rows["goodput_mean_bps"].to_numpy(dtype=float)
    for k, run_id in enumerate(run_ids):
        at = order[bounds[k]:bounds[k + 1]]
        flavors_r = pd.unique(row_flavor[at])
        flavors_c = pd.unique(col_flavor[at])
        if len(flavors_r) != 1 or len(flavors_c) != 1:
            raise ValueError(f"run {run_id}: expected one matrix_row and one matrix_col value, got "
                             f"{list(flavors_r)} and {list(flavors_c)}")
        g_row = goodput[at[is_row[at]]]
        g_col = goodput[at[~is_row[at]]]
        if g_row.size == 0 or g_col.size == 0:
            raise ValueError(f"run {run_id}: needs a flow with matrix_role 'row' and one with 'col'")
        r, c = float(np.sum(g_row)), float(np.sum(g_col))
        rec = {"run_id": run_id}
        rec.update({b: pair_rows[b].iloc[at[0]] for b in by})
        rec.update({
            "row_flavor": flavors_r[0], "col_flavor": flavors_c[0],
            "row_goodput_bps": r, "col_goodput_bps": c,
            "row_share": r / (r + c) if (r + c) > 0 else math.nan,
            "jain_index": metrics.jain_index(np.concatenate([g_row, g_col])),
        })
        rows.append(rec)
    columns = ["run_id", *by, "row_flavor", "col_flavor", "row_goodput_bps", "col_goodput_bps",
               "row_share", "jain_index"]
    return pd.DataFrame(rows, columns=columns)


def matrix_table(summary: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Seed 004 Table 1 in long form: one row per ordered pair (row flavor first, column flavor
    after the stagger), mean ± 95% CI over repeats.

    Args:
        summary: summary rows with :data:`MATRIX_COLUMNS` (see :func:`matrix_runs`).
        by: further grouping columns (e.g. a swept parameter), one table block per value.

    Returns:
        Columns ``*by, row_flavor, col_flavor, n`` (runs of the pair), and, each as ``_mean`` and
        ``_ci95`` (half-width):
        ``row_goodput_{mean,ci95}_bps`` (the first flow's goodput, bits/s),
        ``col_goodput_{mean,ci95}_bps`` (the second flow's),
        ``row_share_{mean,ci95}`` (the first flow's fraction of the pair's goodput, computed per
        run and then averaged; 0–1),
        ``jain_index_{mean,ci95}`` (Jain's index over the pair, per run).
        Pairs appear in the order of first appearance of their flavors in ``summary``.
        Seed 004's cell (r, c) — "Cubic attains 92.4 Mbps" with Vegas — is
        ``row_goodput_mean_bps`` of pair (r, c) in Mbps (see :func:`matrix_wide`).

    Raises:
        ValueError: the matrix columns are absent (see :func:`matrix_runs`).
    """
    runs = matrix_runs(summary, by)
    order = matrix_flavors(summary)
    out = []
    for key, group in runs.groupby([*by, "row_flavor", "col_flavor"], sort=False, dropna=False):
        rec = _key_dict([*by, "row_flavor", "col_flavor"], key)
        rec["n"] = len(group)
        for src, mean_col, ci_col in (
                ("row_goodput_bps", "row_goodput_mean_bps", "row_goodput_ci95_bps"),
                ("col_goodput_bps", "col_goodput_mean_bps", "col_goodput_ci95_bps"),
                ("row_share", "row_share_mean", "row_share_ci95"),
                ("jain_index", "jain_index_mean", "jain_index_ci95")):
            ci = _ci(group[src])
            rec[mean_col], rec[ci_col] = ci.mean, ci.half_width
        out.append(rec)
    columns = [*by, "row_flavor", "col_flavor", "n", "row_goodput_mean_bps", "row_goodput_ci95_bps",
               "col_goodput_mean_bps", "col_goodput_ci95_bps", "row_share_mean", "row_share_ci95",
               "jain_index_mean", "jain_index_ci95"]
    table = pd.DataFrame(out, columns=columns)
    if table.empty:
        return table
    rank = {f: i for i, f in enumerate(order)}
    table = table.assign(_r=table["row_flavor"].map(rank), _c=table["col_flavor"].map(rank))
    return table.sort_values([*by, "_r", "_c"], kind="stable").drop(columns=["_r", "_c"]).reset_index(drop=True)


def matrix_flavors(summary: pd.DataFrame) -> list[str]:
    """Flavors in order of first appearance as a row or column flavor (the scenario's order)."""
    seen: list[str] = []
    for r, c in zip(summary["matrix_row"].astype(str), summary["matrix_col"].astype(str)):
        for f in (r, c):
            if f not in seen:
                seen.append(f)
    return seen


def matrix_wide(table: pd.DataFrame, value: str) -> pd.DataFrame:
    """One column of :func:`matrix_table` as a square matrix: index = row (first) flavor, columns
    = column (second) flavor, in the table's order; absent pairs are NaN.

    Raises:
        ValueError: ``value`` is not a column of ``table``, or ``table`` has several blocks of a
            ``by`` column (select one first).
    """
    _require(table, ["row_flavor", "col_flavor", value], "matrix table")
    if table.duplicated(["row_flavor", "col_flavor"]).any():
        raise ValueError("matrix table has several rows per pair (a `by` column): select one block first")
    flavors: list[str] = []
    for f in [*table["row_flavor"], *table["col_flavor"]]:
        if f not in flavors:
            flavors.append(f)
    wide = table.pivot(index="row_flavor", columns="col_flavor", values=value)
    wide = wide.reindex(index=flavors, columns=flavors)
    wide.index.name, wide.columns.name = "row_flavor", "col_flavor"
    return wide


# ----------------------------------------------------------------------------- seed 001: regions

def _run_groups(summary: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The ``by`` values of each run (one row per run_id).

    Raises:
        ValueError: a ``by`` column varies between a run's flows (e.g. ``flavor`` when the flows
            of a run have different flavors: group by the swept parameter instead).
    """
    _require(summary, ["run_id", *by], "summary")
    per_run = summary[["run_id", *by]].drop_duplicates()
    clash = per_run["run_id"][per_run["run_id"].duplicated()]
    if len(clash):
        raise ValueError(f"run {clash.iloc[0]}: the flows of one run differ in {list(by)}; group "
                         "regions by a run-level column (e.g. the swept field path)")
    return per_run


def _with_groups(regions: pd.DataFrame, summary: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    _require(regions, ["run_id", "region", "jain_index", *metrics.AGGREGATE_REGION_COLUMNS],
             "regions (written before aggregate columns were added? rerun or `ccarena report`)")
    overlap = [b for b in by if b in regions.columns]
    base = regions.drop(columns=overlap)
    return base.merge(_run_groups(summary, by), on="run_id", how="inner")


def run_cpu_cost(run: pd.DataFrame) -> dict[str, float]:
    """Seed 001 Table 1's "CPU % utilization" and "MHz/Mbps" of one run (its summary rows, one
    per flow), as for the study's one sending host running every flow.

    ``sender_cpu_percent`` = 100 · Σ sender_cpu_s / (last flow's end − first flow's start): the
    senders' CPU over the experiment, in percent of one core. ``mhz_per_mbps`` = Σ (sender_cpu_s ·
    cpu_mhz) / Σ delivered Mbit: the CPU fraction times the clock over the aggregate goodput
    (:func:`ccarena.analysis.metrics.mhz_per_mbps` with the run's totals), i.e. CPU cycles per bit
    delivered. Both NaN unless every flow of the run has a CPU measurement (the simulator has
    none).
    """
    need = ("sender_cpu_s", "cpu_mhz", "bytes_delivered", "start_s", "end_s")
    if any(c not in run.columns for c in need) or not len(run):
        return {"sender_cpu_percent": math.nan, "mhz_per_mbps": math.nan}
    cpu = run["sender_cpu_s"].to_numpy(dtype=float)
    mhz = run["cpu_mhz"].to_numpy(dtype=float)
    if not (np.all(np.isfinite(cpu)) and np.all(np.isfinite(mhz))):
        return {"sender_cpu_percent": math.nan, "mhz_per_mbps": math.nan}
    span_s = float(run["end_s"].astype(float).max() - run["start_s"].astype(float).min())
    mbit = float(run["bytes_delivered"].astype(float).sum()) * 8 / 1e6
    return {"sender_cpu_percent": metrics.cpu_percent(cpu.sum(), span_s),
            "mhz_per_mbps": float((cpu * mhz).sum() / mbit) if mbit > 0 else math.nan}


def regions_by_group(regions: pd.DataFrame, summary: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Seed 001 Table 1 per group: the aggregate goodput's average, SD and stability over the
    whole run, and Jain's index min–max over the run's regions; each the mean over repeats.

    Per run, μ, SD (population, ddof = 0) and SD/μ of the per-sample sum of the active flows'
    goodput are pooled exactly from the run's regions (:func:`ccarena.analysis.metrics.pool_aggregate`,
    equal to :func:`ccarena.analysis.metrics.aggregate_over_run`); fairness min and max are the run's
    lowest and highest region Jain index (single-flow regions count, with J = 1, as in the
    study's "0.59-1.0").

    Args:
        regions: region rows of every run (``run_id``, ``region``, ``jain_index`` and
            :data:`ccarena.analysis.metrics.AGGREGATE_REGION_COLUMNS`).
        summary: summary rows, to map each run_id to its group.
        by: run-level grouping columns, e.g. ``["flavor"]`` when a sweep sets every flow's flavor,
            or the swept field path.

    Returns:
        One row per group: ``*by, n`` (runs), ``aggregate_goodput_mean_bps``,
        ``aggregate_goodput_sd_bps`` (bits/s), ``aggregate_stability`` (SD/μ), ``fairness_min``,
        ``fairness_max`` (mean over repeats of each run's min / max), ``sender_cpu_percent`` and
        ``mhz_per_mbps`` (:func:`run_cpu_cost`; NaN for runs without CPU measurements), each with
        a ``_ci95`` half-width column (``aggregate_goodput_mean_ci95_bps``,
        ``aggregate_goodput_sd_ci95_bps``, ``aggregate_stability_ci95``, ``fairness_min_ci95``,
        ``fairness_max_ci95``, ``sender_cpu_percent_ci95``, ``mhz_per_mbps_ci95``).

    Raises:
        ValueError: a required column is absent, or ``by`` varies within a run.
    """
    data = _with_groups(regions, summary, by)
    flows_of = {k: g for k, g in summary.groupby("run_id", sort=False)}
    per_run = []
    for run_id, run in data.groupby("run_id", sort=False):
        rec = {"run_id": run_id, **{b: run[b].iloc[0] for b in by}}
        rec.update(metrics.pool_aggregate(run))
        j = run["jain_index"].to_numpy(dtype=float)
        j = j[np.isfinite(j)]
        rec["fairness_min"] = float(j.min()) if j.size else math.nan
        rec["fairness_max"] = float(j.max()) if j.size else math.nan
        rec.update(run_cpu_cost(flows_of.get(run_id, summary.iloc[0:0])))
        per_run.append(rec)
    runs = pd.DataFrame(per_run)
    cols = (("aggregate_goodput_mean_bps", "aggregate_goodput_mean_ci95_bps"),
            ("aggregate_goodput_sd_bps", "aggregate_goodput_sd_ci95_bps"),
            ("aggregate_stability", "aggregate_stability_ci95"),
            ("fairness_min", "fairness_min_ci95"),
            ("fairness_max", "fairness_max_ci95"),
            ("sender_cpu_percent", "sender_cpu_percent_ci95"),
            ("mhz_per_mbps", "mhz_per_mbps_ci95"))
    out = []
    if len(runs):
        for key, group in runs.groupby(list(by), sort=False, dropna=False):
            rec = _key_dict(by, key)
            rec["n"] = len(group)
            for src, ci_col in cols:
                ci = _ci(group[src])
                rec[src], rec[ci_col] = ci.mean, ci.half_width
            out.append(rec)
    return pd.DataFrame(out, columns=[*by, "n", *[c for pair in cols for c in pair]])


def region_detail(regions: pd.DataFrame, summary: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Seed 001 Table 2 per group × region: stability and fairness per region, mean over repeats.

    The study's "Stability / Fairness" per region does not say whether stability is that of the
    aggregate or of each flow; both are given. ``aggregate_stability`` (SD/μ of the summed
    goodput in the region) is the reading consistent with Table 1, which calls its numbers
    aggregate values of the same regions; ``stability`` is the region table's mean over the active
    flows of each flow's SD/μ. In single-flow regions the two are equal.

    Args: as :func:`regions_by_group`.

    Returns:
        One row per group and region (regions matched across repeats by index, start, end and
        active flows): ``*by, region, start_s, end_s, flows, n_flows, n`` (runs), and mean over
        repeats with ``_ci95`` half-width of ``aggregate_stability``, ``stability``,
        ``jain_index`` and ``aggregate_goodput_mean_bps`` (``aggregate_goodput_mean_ci95_bps``).

    Raises:
        ValueError: a required column is absent, or ``by`` varies within a run.
    """
    data = _with_groups(regions, summary, by)
    keys = [*by, "region", "start_s", "end_s", "flows", "n_flows"]
    keys = [k for k in keys if k in data.columns]
    cols = (("aggregate_stability", "aggregate_stability_ci95"),
            ("stability", "stability_ci95"),
            ("jain_index", "jain_index_ci95"),
            ("aggregate_goodput_mean_bps", "aggregate_goodput_mean_ci95_bps"))
    out = []
    for key, group in data.groupby(keys, sort=False, dropna=False):
        rec = _key_dict(keys, key)
        rec["n"] = group["run_id"].nunique()
        for src, ci_col in cols:
            ci = _ci(group[src]) if src in group.columns else metrics.MeanCI(math.nan, math.nan, math.nan, 0)
            rec[src], rec[ci_col] = ci.mean, ci.half_width
        out.append(rec)
    table = pd.DataFrame(out, columns=[*keys, "n", *[c for pair in cols for c in pair]])
    return table.sort_values([*by, "region"], kind="stable").reset_index(drop=True) if len(table) else table


# ----------------------------------------------------------------------------- seed 003: drops

def drop_rate_by_group(summary: pd.DataFrame, by: Sequence[str],
                       column: str = "loss_rate") -> pd.DataFrame:
    """Seed 003 Table I: expected value and variance of the packet drop rate per group, in percent.

    The drop rate of one flow in one run is summary's ``loss_rate`` = packets_lost / packets_sent
    (the engine's ``packets_lost`` = packets sent − packets received: queue drops, RED early
    drops and wire losses, plus the few still in flight when the run ends), times 100 — the
    study's unit is percent (Tahoe 9.3, variance 17.32). Each (run, flow) row of a group is one
    observation: with one flow of the flavor per run, the statistics are over repeats.

    Args:
        summary: summary rows (one per run and flow).
        by: grouping columns, e.g. ``["flavor"]``.
        column: the per-flow fraction to use (default ``loss_rate``).

    Returns:
        ``*by, n`` (observations), ``drop_rate_mean_pct`` (expected value, %),
        ``drop_rate_var_pct2`` (sample variance, ddof = 1 as MATLAB's ``var``, %²),
        ``drop_rate_sd_pct`` (%), ``drop_rate_ci95_pct`` (half-width, %).

    Raises:
        ValueError: a column is absent.
    """
    _require(summary, [*by, column], "summary")
    out = []
    for key, group in summary.groupby(list(by), sort=False, dropna=False):
        rec = _key_dict(by, key)
        pct = 100.0 * group[column].to_numpy(dtype=float)
        ci = _ci(pct)
        rec.update({"n": ci.n, "drop_rate_mean_pct": ci.mean,
                    "drop_rate_var_pct2": ci.sd ** 2 if math.isfinite(ci.sd) else math.nan,
                    "drop_rate_sd_pct": ci.sd, "drop_rate_ci95_pct": ci.half_width})
        out.append(rec)
    return pd.DataFrame(out, columns=[*by, "n", "drop_rate_mean_pct", "drop_rate_var_pct2",
                                      "drop_rate_sd_pct", "drop_rate_ci95_pct"])


# ----------------------------------------------------------------------------- seed 003: intervals

def infer_sample_interval_s(samples: pd.DataFrame) -> float:
    """The sample interval: the smallest positive step between a flow's consecutive ``time_s``
    (the engine samples at k·Δ, k ≥ 1). NaN with fewer than two instants."""
    keys = [k for k in ("run_id", "flow") if k in samples.columns]
    steps = []
    for _, g in (samples.groupby(keys) if keys else [(None, samples)]):
        d = np.diff(np.sort(g["time_s"].to_numpy(dtype=float)))
        d = d[d > 1e-12]
        if d.size:
            steps.append(float(d.min()))
    return min(steps) if steps else math.nan


def goodput_by_interval(samples: pd.DataFrame, boundaries_s: Sequence[float], labels: Sequence[Any],
                        sample_interval_s: float | None = None) -> pd.DataFrame:
    """Mean goodput of each run's flows in each interval of a schedule (seed 003: the buffer size
    in force, 10, 20, 30 … packets for 30 s each).

    Args:
        samples: samples of one or more runs (``run_id`` optional, ``time_s, flow, goodput_bps``,
            ``name`` optional).
        boundaries_s: k + 1 increasing times [t0, t1, …, tk] (s) bounding k intervals.
        labels: k labels, one per interval (e.g. ``"10pkt"``, or the number 10).
        sample_interval_s: Δ; inferred from ``samples`` when None.

    A sample counts when its interval (time_s − Δ, time_s] lies inside [t_i, t_{i+1}] (as the
    region table), so the sample spanning a change is left out.

    Returns:
        One row per run × flow × interval: ``run_id`` (when given), ``flow``, ``name`` (when
        given), ``interval`` (0-based), ``label``, ``start_s``, ``end_s``, ``n_samples``,
        ``goodput_mean_bps`` (mean of the samples' goodput, bits/s; NaN without samples).

    Raises:
        ValueError: boundaries not increasing or ``len(labels) != len(boundaries_s) - 1``.
    """
    bounds = [float(b) for b in boundaries_s]
    if len(bounds) < 2 or any(b >= a for a, b in zip(bounds[1:], bounds)):
        raise ValueError(f"boundaries_s must be at least two increasing times, got {bounds}")
    if len(labels) != len(bounds) - 1:
        raise ValueError(f"{len(bounds) - 1} intervals need {len(bounds) - 1} labels, got {len(labels)}")
    _require(samples, ["time_s", "flow", "goodput_bps"], "samples")
    dt = float(sample_interval_s) if sample_interval_s is not None else infer_sample_interval_s(samples)
    if not (dt > 0):
        raise ValueError("cannot infer the sample interval: pass sample_interval_s")
    ids = [k for k in ("run_id", "flow", "name") if k in samples.columns]
    group_keys = [k for k in ("run_id", "flow") if k in samples.columns]
    rows = []
    for key, g in samples.groupby(group_keys, sort=False):
        ident = _key_dict(group_keys, key)
        if "name" in ids:
            ident["name"] = g["name"].iloc[0]
        for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
            x = metrics.samples_within(g, a, b, dt)["goodput_bps"].to_numpy(dtype=float)
            x = x[np.isfinite(x)]
            rows.append({**ident, "interval": i, "label": labels[i], "start_s": a, "end_s": b,
                         "n_samples": int(x.size),
                         "goodput_mean_bps": float(np.mean(x)) if x.size else math.nan})
    return pd.DataFrame(rows, columns=[*ids, "interval", "label", "start_s", "end_s", "n_samples",
                                       "goodput_mean_bps"])


def interval_goodput_over_repeats(per_interval: pd.DataFrame, summary: pd.DataFrame | None = None,
                                  by: Sequence[str] = ()) -> pd.DataFrame:
    """:func:`goodput_by_interval` aggregated over repeats: mean ± 95% CI per flow and interval.

    Args:
        per_interval: :func:`goodput_by_interval` output (with ``run_id``).
        summary: summary rows, joined on ``run_id`` and ``flow`` to bring in ``by`` columns (e.g.
            ``flavor``, a swept parameter); None when ``by`` columns are already present.
        by: extra grouping columns.

    Returns:
        One row per ``*by, flow, name`` (when present), ``interval, label``: ``start_s, end_s, n``
        (runs with samples in the interval), ``goodput_mean_bps``, ``goodput_sd_bps``,
        ``goodput_ci95_bps`` (bits/s; the mean over runs of each run's interval mean).

    Raises:
        ValueError: a column is absent.
    """
    data = per_interval
    if summary is not None and by:
        need = [b for b in by if b not in data.columns]
        _require(summary, ["run_id", "flow", *need], "summary")
        extra = summary[["run_id", "flow", *need]].drop_duplicates(["run_id", "flow"])
        data = data.merge(extra, on=["run_id", "flow"], how="left")
    _require(data, [*by, "flow", "interval", "label", "goodput_mean_bps"], "per-interval table")
    keys = [*by, "flow", *(["name"] if "name" in data.columns else []), "interval", "label"]
    out = []
    for key, g in data.groupby(keys, sort=False, dropna=False):
        rec = _key_dict(keys, key)
        ci = _ci(g["goodput_mean_bps"])
        rec.update({"start_s": float(g["start_s"].iloc[0]), "end_s": float(g["end_s"].iloc[0]),
                    "n": ci.n, "goodput_mean_bps": ci.mean, "goodput_sd_bps": ci.sd,
                    "goodput_ci95_bps": ci.half_width})
        out.append(rec)
    table = pd.DataFrame(out, columns=[*keys, "start_s", "end_s", "n", "goodput_mean_bps",
                                       "goodput_sd_bps", "goodput_ci95_bps"])
    return table.sort_values([*by, "flow", "interval"], kind="stable").reset_index(drop=True) if len(table) else table


# ----------------------------------------------------------------------------- references

REFERENCE_KEYS = ("title", "source", "unit", "rows", "columns", "values")
"""Keys of a published reference table (a study's own numbers, transcribed)."""


def _norm(label: Any) -> str:
    """A label for matching: lower case, letters and digits only ("New Reno" → "newreno")."""
    return re.sub(r"[^0-9a-z]", "", str(label).lower())


def reference_frame(reference: Mapping[str, Any]) -> pd.DataFrame:
    """A reference table as a DataFrame (index = its rows, columns = its columns, floats; a
    missing cell — None or NaN in ``values`` — is NaN).

    Raises:
        ValueError: a key of :data:`REFERENCE_KEYS` is missing, the shape of ``values`` does not
            match ``rows`` × ``columns``, or a cell is not a number (e.g. "0.59-1.0": split a
            min–max into two columns when transcribing).
    """
    missing = [k for k in REFERENCE_KEYS if k not in reference]
    if missing:
        raise ValueError(f"reference lacks {', '.join(missing)} (needs {', '.join(REFERENCE_KEYS)})")
    rows, cols, values = list(reference["rows"]), list(reference["columns"]), list(reference["values"])
    if len(values) != len(rows) or any(len(v) != len(cols) for v in values):
        raise ValueError(f"reference {reference['title']!r}: values must be {len(rows)} rows × "
                         f"{len(cols)} columns")
    data = np.full((len(rows), len(cols)), math.nan)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise ValueError(f"reference {reference['title']!r}: cell ({rows[i]}, {cols[j]}) = "
                                 f"{v!r} is not a number")
            data[i, j] = float(v)
    return pd.DataFrame(data, index=rows, columns=cols)


def _match(labels: Sequence[Any], wanted: Any, aliases: Mapping[str, str]) -> Any | None:
    """The label among ``labels`` that a reference label names: its alias, else the same label,
    else the same label ignoring case, spaces and punctuation; None when nothing matches."""
    target = aliases.get(str(wanted), wanted)
    for lab in labels:
        if str(lab) == str(target):
            return lab
    hits = [lab for lab in labels if _norm(lab) == _norm(target)]
    return hits[0] if len(hits) == 1 else None


def reference_comparison(computed: pd.DataFrame, reference: Mapping[str, Any],
                         divisor: float = 1.0, aliases: Mapping[str, str] | None = None) -> pd.DataFrame:
    """A study's published table beside ccarena's numbers, cell by cell.

    Args:
        computed: a wide DataFrame indexed like the reference: index = the reference's row
            labels (e.g. flavors), columns = its column labels (e.g. :func:`matrix_wide`, or a
            :func:`regions_by_group` table with ``set_index("flavor")`` and columns renamed).
        reference: ``{"title", "source", "unit", "rows", "columns", "values"}``, the study's own
            numbers (:func:`reference_frame`).
        divisor: computed values are divided by it to be in the reference's unit (1e6 for bits/s
            against a table in Mbps).
        aliases: reference label → computed label, for names that differ beyond case and
            punctuation (``{"HSTCP": "highspeed", "Fast-TCP": "fast"}``).

    Returns:
        One row per reference cell, in the reference's order: ``row, column`` (the reference's
        labels), ``computed_row, computed_column`` (the matched labels, missing (NA) if absent),
        ``reference`` and ``computed`` (both in ``unit``), ``ratio`` = computed / reference,
        ``unit``. Cells absent on either side are NaN, never filled in; the ratio is NaN when
        either side is NaN or the reference is 0.

    Raises:
        ValueError: the reference is malformed (:func:`reference_frame`) or divisor is not > 0.
    """
    if not divisor > 0:
        raise ValueError(f"divisor must be > 0, got {divisor}")
    ref = reference_frame(reference)
    aliases = dict(aliases or {})
    out = []
    for r in ref.index:
        cr = _match(list(computed.index), r, aliases)
        for c in ref.columns:
            cc = _match(list(computed.columns), c, aliases)
            ref_v = float(ref.loc[r, c])
            comp_v = math.nan
            if cr is not None and cc is not None:
                v = pd.to_numeric(pd.Series([computed.loc[cr, cc]]), errors="coerce").iloc[0]
                comp_v = float(v) / divisor if pd.notna(v) else math.nan
            ok = math.isfinite(ref_v) and math.isfinite(comp_v) and ref_v != 0
            out.append({"row": r, "column": c, "computed_row": cr, "computed_column": cc,
                        "reference": ref_v, "computed": comp_v,
                        "ratio": comp_v / ref_v if ok else math.nan, "unit": reference["unit"]})
    return pd.DataFrame(out, columns=["row", "column", "computed_row", "computed_column",
                                      "reference", "computed", "ratio", "unit"])
