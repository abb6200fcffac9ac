"""The study tables and figures of one part of the report (the seed studies' own tables).

Which appear depends on what the part ran, never on the study's name:

Study tables appear only where the scenario asks for them (:func:`asked_tables`: ``[report] tables``,
a ``[matrix]``, or a ``[[report.references]]`` naming the table); figures whenever the data is there.

- a ``[matrix]``: the pair table (each flow's goodput, the first flow's share, Jain's index,
  mean ± 95% CI), heatmaps of the share and of the first flow's goodput, goodput vs time for every
  pair (seed 004, Table 1 and Fig. 3);
- flows that come and go (a run with more than two regions): the aggregate table per group and the
  per-region stability/fairness table (seed 001, Tables 1 and 2);
- repeats: drop rate per flavor, mean and variance over repeats (seed 003, Table I);
- ``[[events]]``: each flow's goodput while each setting is in force (seed 003, Figs. 4 and 7);
- RED queues: the average queue against its thresholds;
- ``[[report.references]]``: the study's published numbers beside ccarena's, cell by cell.

The numbers come from :mod:`ccarena.analysis.study_tables`, the figures from :mod:`ccarena.report.study_plots`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ccarena import units
from ccarena.analysis import study_tables as studies
from ccarena.report import study_plots
from ccarena.report.figures import Figure
from ccarena.report.html_tables import Cell, index_text, mean_ci_text, pct_text

StudyTable = tuple[str, str, str, tuple[list[str], list[list[Any]]]]
"""``(id, title, caption, (headings, rows of report.Cell))``."""

REGION_REFERENCE_COLUMNS = {
    "average": ("aggregate_goodput_mean_bps", 1e6), "sd": ("aggregate_goodput_sd_bps", 1e6),
    "stability": ("aggregate_stability", 1.0), "fairness_min": ("fairness_min", 1.0),
    "fairness_max": ("fairness_max", 1.0),
    # The study's "CPU % Utilization" values (0.02 for Reno, 0.73 for UDTv2) read as fractions.
    "cpu_fraction": ("sender_cpu_percent", 100.0), "mhz_per_mbps": ("mhz_per_mbps", 1.0),
}
"""Seed 001 Table 1's columns → (the :func:`ccarena.analysis.study_tables.regions_by_group` column, divisor
into the study's unit: Mbps for rates, a fraction for CPU)."""

DROP_REFERENCE_COLUMNS = {"mean": "drop_rate_mean_pct", "variance": "drop_rate_var_pct2"}
"""Seed 003 Table I's columns → the :func:`ccarena.analysis.study_tables.drop_rate_by_group` column."""


def _fmt_num(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:.4g}"


def _cpu_text(x: float) -> str:
    """A CPU number (percent, MHz/Mbps) to 3 significant digits; — where none was measured."""
    return "—" if not math.isfinite(x) else f"{x:.3g}"


def _mean_ci_cell(col: str, mean: float, half: float, fmt: Callable[[float], str]) -> Any:
    """A numeric cell showing ``mean ± half`` (the report's own formatting) with the mean as its
    exact value."""
    return Cell(mean_ci_text(fmt, mean, half), col, repr(float(mean)) if math.isfinite(mean) else "nan")


def _table(df: pd.DataFrame, keys: list[tuple[str, str]],
           values: list[tuple[str, str, Callable[[float], str], str | None]]) -> tuple[list[str], list[list[Any]]]:
    """Headings and cells: ``keys`` (column, heading) shown as text, ``values`` (mean column,
    heading, formatter, CI column or None) as numbers with ``data-value``."""
    headings = [h for _, h in keys] + [h for _, h, _, _ in values]
    rows = []
    for rec in df.to_dict("records"):
        row = [Cell("–" if rec.get(k) is None or (isinstance(rec.get(k), float) and math.isnan(rec[k]))
                    else str(rec.get(k)), k, None) for k, _ in keys]
        for col, _, fmt, ci in values:
            mean = float(rec.get(col, math.nan))
            half = float(rec.get(ci, math.nan)) if ci else math.nan
            row.append(_mean_ci_cell(col, mean, half, fmt))
        rows.append(row)
    return headings, rows


def _comparison_table(cmp: pd.DataFrame) -> tuple[list[str], list[list[Any]]]:
    headings = ["row", "column", "study", "ccarena", "ccarena / study"]
    rows = []
    for rec in cmp.to_dict("records"):
        rows.append([Cell(str(rec["row"]), "row", None), Cell(str(rec["column"]), "column", None),
                     Cell(_fmt_num(rec["reference"]), "reference",
                          repr(float(rec["reference"])) if math.isfinite(rec["reference"]) else "nan"),
                     Cell(_fmt_num(rec["computed"]), "computed",
                          repr(float(rec["computed"])) if math.isfinite(rec["computed"]) else "nan"),
                     Cell(_fmt_num(rec["ratio"]), "ratio",
                          repr(float(rec["ratio"])) if math.isfinite(rec["ratio"]) else "nan")])
    return headings, rows


def _reference_caption(ref: dict[str, Any]) -> str:
    parts = [f"Source: {ref.get('source')}." if ref.get("source") else "",
             f"Unit: {ref.get('unit')}." if ref.get("unit") else "", ref.get("note", "")]
    return " ".join(p for p in parts if p)


def _figure(fig: Any, title: str, name: str, figures_dir: Path) -> Any:
    return Figure.draw(fig, title, name, figures_dir)


def _group_by(part: Any) -> list[str]:
    """The columns study tables group by: ``[report] group_by``, else the swept parameters,
    else the flow's flavor."""
    given = (part.meta.get("report") or {}).get("group_by")
    if given:
        return list(given)
    params = [p for p in part.parameters if p in part.summary.columns]
    return params or ["flavor"]


def _references(part: Any, table: str) -> list[dict[str, Any]]:
    return [r for r in (part.meta.get("report") or {}).get("references", []) if r.get("table") == table]


def asked_tables(part: Any) -> set[str]:
    """The study tables ``part``'s scenario asks for: ``[report] tables``, ``matrix`` for a
    ``[matrix]`` scenario, and each table a ``[[report.references]]`` sits beside."""
    report = part.meta.get("report") or {}
    asked = set(report.get("tables") or [])
    if part.meta.get("matrix"):
        asked.add("matrix")
    for ref in report.get("references") or []:
        asked.add("regions" if ref.get("table") == "region_detail" else str(ref.get("table")))
    return asked


def study_content(part: Any, figures_dir: Path, prefix: str) -> tuple[list[StudyTable], list[Any]]:
    """The study tables and figures of ``part`` (a :class:`ccarena.results.PartResult`).

    Returns:
        ``(tables, figures)``: tables as :data:`StudyTable`, figures as ``report.Figure``
        (written to ``figures_dir``, names starting with ``prefix``).
    """
    tables: list[StudyTable] = []
    figures: list[Any] = []
    summary = part.summary
    if not len(summary):
        return tables, figures
    asked = asked_tables(part)
    if part.meta.get("matrix"):
        _matrix(part, figures_dir, prefix, tables, figures)
    if "regions" in asked and _flows_come_and_go(part):
        _regions(part, tables)
    if "drop_rate" in asked and int(summary["repeat"].max()) > 0:
        _drop_rates(part, tables)
    _intervals(part, figures_dir, prefix, figures)
    _red(part, figures_dir, prefix, figures)
    return tables, figures


def _matrix(part: Any, figures_dir: Path, prefix: str, tables: list[StudyTable], figures: list[Any]) -> None:
    table = studies.matrix_table(part.summary)
    tables.append(("matrix", "Flavor matrix: row flavor first, column flavor after the stagger",
                   f"Stagger {part.meta['matrix']['stagger_s']:g} s; mean ± 95% CI over repeats. "
                   "Share: the first flow's fraction of the pair's goodput, per run.",
                   _table(table, [("row_flavor", "first (row)"), ("col_flavor", "second (column)"), ("n", "n")],
                          [("row_goodput_mean_bps", "first goodput", units.format_rate, "row_goodput_ci95_bps"),
                           ("col_goodput_mean_bps", "second goodput", units.format_rate, "col_goodput_ci95_bps"),
                           ("row_share_mean", "first's share", pct_text, "row_share_ci95"),
                           ("jain_index_mean", "Jain", index_text, "jain_index_ci95")])))
    refs = _references(part, "matrix")
    figures.append(_figure(study_plots.matrix_heatmap(table, "row_share_mean",
                                                      "Share of the first (row) flavor against the second"),
                           "Flavor matrix: the row flavor's share of the pair's goodput (mean ± 95% CI)",
                           f"{prefix}matrix-share.png", figures_dir))
    figures.append(_figure(study_plots.matrix_heatmap(table, "row_goodput_mean_bps",
                                                      "Goodput of the first (row) flavor",
                                                      reference=refs[0] if refs else None),
                           "Flavor matrix: the row flavor's goodput" + (" beside the study's table" if refs else ""),
                           f"{prefix}matrix-goodput.png", figures_dir))
    for i, ref in enumerate(refs):
        wide = studies.matrix_wide(table, "row_goodput_mean_bps")
        cmp = studies.reference_comparison(wide, ref, divisor=_rate_divisor(ref.get("unit", "")))
        tables.append((f"matrix-reference-{i}", ref["title"], _reference_caption(ref), _comparison_table(cmp)))
    first = part.summary[part.summary["repeat"] == part.summary["repeat"].min()]["run_id"].unique().tolist()
    samples = pd.concat([part.store.read_table(r, "samples") for r in first], ignore_index=True)
    figures.append(_figure(study_plots.pairs_goodput_grid(samples, part.summary, "Goodput vs time for every pair"),
                           "Goodput vs time for every ordered pair (first repeat)",
                           f"{prefix}matrix-pairs.png", figures_dir))


def _rate_divisor(unit: str) -> float:
    return {"bps": 1.0, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9}.get(unit.strip().lower().split(" ")[0], 1.0)


def _flows_come_and_go(part: Any) -> bool:
    """Whether some run has at least three regions each lasting 5% of the run or more (a schedule
    like seed 001's, not just flows started a moment apart)."""
    regions = part.regions
    if not len(regions):
        return False
    length = regions["end_s"] - regions["start_s"]
    run_length = regions.groupby("run_id")["end_s"].transform("max") - regions.groupby("run_id")["start_s"].transform("min")
    long_enough = regions[length >= 0.05 * run_length]
    return bool(len(long_enough)) and int(long_enough.groupby("run_id").size().max()) >= 3


def _run_level(part: Any, columns: list[str]) -> list[str]:
    """The columns among ``columns`` that have one value per run (usable to group runs)."""
    summary = part.summary
    out = []
    for c in columns:
        if c in summary.columns and summary.groupby("run_id")[c].nunique(dropna=False).max() <= 1:
            out.append(c)
    return out


def _regions(part: Any, tables: list[StudyTable]) -> None:
    by = _run_level(part, _group_by(part)) or _run_level(part, ["flavor"]) or ["part"]
    grouped = studies.regions_by_group(part.regions, part.summary, by)
    keys = [(b, b) for b in by] + [("n", "n")]
    tables.append(("regions-by-group", "Aggregate over the regions (seed 001, Table 1)",
                   "Average, SD and stability (SD/average) of the aggregate goodput (the sum over "
                   "active flows) over the whole run; Jain's index min–max over the regions; the "
                   "senders' CPU (user + system time of the sending processes, percent of one "
                   "core over the run) and MHz/Mbps (CPU cycles per bit delivered) where the "
                   "backend measures CPU (kernel), — otherwise; mean ± 95% CI over repeats.",
                   _table(grouped, keys,
                          [("aggregate_goodput_mean_bps", "average", units.format_rate, "aggregate_goodput_mean_ci95_bps"),
                           ("aggregate_goodput_sd_bps", "SD", units.format_rate, "aggregate_goodput_sd_ci95_bps"),
                           ("aggregate_stability", "stability", index_text, "aggregate_stability_ci95"),
                           ("fairness_min", "Jain min", index_text, "fairness_min_ci95"),
                           ("fairness_max", "Jain max", index_text, "fairness_max_ci95"),
                           ("sender_cpu_percent", "CPU %", _cpu_text, "sender_cpu_percent_ci95"),
                           ("mhz_per_mbps", "MHz/Mbps", _cpu_text, "mhz_per_mbps_ci95")])))
    detail = studies.region_detail(part.regions, part.summary, by)
    detail = detail.assign(region=detail["region"].astype(int) + 1)
    tables.append(("region-detail", "Stability and fairness per region (seed 001, Table 2)",
                   "Regions numbered from 1 in time order; stability: SD/mean of the aggregate goodput "
                   "in the region; Jain's index over the active flows' mean goodputs.",
                   _table(detail, [(b, b) for b in by] + [("region", "region"), ("flows", "active flows")],
                          [("aggregate_stability", "stability", index_text, "aggregate_stability_ci95"),
                           ("jain_index", "Jain", index_text, "jain_index_ci95")])))
    key = by[-1]
    for i, ref in enumerate(_references(part, "regions")):
        wide = grouped.set_index(key)
        computed = pd.DataFrame({col: wide[src] / div for col, (src, div) in REGION_REFERENCE_COLUMNS.items()
                                 if src in wide.columns}, index=wide.index.astype(str))
        cmp = studies.reference_comparison(computed, ref)
        tables.append((f"regions-reference-{i}", ref["title"], _reference_caption(ref), _comparison_table(cmp)))
    for i, ref in enumerate(_references(part, "region_detail")):
        metric = ref.get("metric") or "aggregate_stability"
        wide = detail.pivot_table(index=key, columns="region", values=metric, aggfunc="first")
        wide.columns = [str(c) for c in wide.columns]
        wide.index = wide.index.astype(str)
        cmp = studies.reference_comparison(wide, ref)
        tables.append((f"region-detail-reference-{i}", ref["title"], _reference_caption(ref), _comparison_table(cmp)))


def _drop_rates(part: Any, tables: list[StudyTable]) -> None:
    by = [b for b in _group_by(part) if b in part.summary.columns]
    if "flavor" not in by:
        by.append("flavor")
    drops = studies.drop_rate_by_group(part.summary, by)
    tables.append(("drop-rate", "Drop rate per flavor over repeats (seed 003, Table I)",
                   "A flow's packets lost (sent but never received) as a percentage of its packets "
                   "sent; mean, variance (n − 1) and 95% CI over repeats.",
                   _table(drops, [(b, b) for b in by] + [("n", "n")],
                          [("drop_rate_mean_pct", "mean (%)", _fmt_num, "drop_rate_ci95_pct"),
                           ("drop_rate_var_pct2", "variance (%²)", _fmt_num, None)])))
    others = [b for b in by if b != "flavor"]
    for i, ref in enumerate(_references(part, "drop_rate")):
        groups = drops.groupby(others, sort=False, dropna=False) if others else [((), drops)]
        for j, (key, group) in enumerate(groups):
            key = key if isinstance(key, tuple) else (key,)
            where = ", ".join(f"{k} = {v}" for k, v in zip(others, key))
            computed = pd.DataFrame({col: group[src].to_numpy() for col, src in DROP_REFERENCE_COLUMNS.items()},
                                    index=group["flavor"].astype(str).to_numpy())
            cmp = studies.reference_comparison(computed, ref)
            title = ref["title"] + (f" — ccarena with {where}" if where else "")
            tables.append((f"drop-rate-reference-{i}-{j}", title, _reference_caption(ref), _comparison_table(cmp)))


def _event_schedule(spec: dict[str, Any]) -> tuple[list[float], list[Any], str] | None:
    """Interval boundaries (s), labels and the label's meaning from a run's events: the queue
    limit in force when limits change, else the time of the change."""
    events = spec.get("events") or []
    if not events:
        return None
    times = sorted({e["time_ns"] / 1e9 for e in events})
    duration_s = spec["duration_ns"] / 1e9
    boundaries = [0.0, *times, duration_s]
    limit_events = [e for e in events if e["set"].get("limit_packets") is not None
                    or e["set"].get("limit_bytes") is not None]
    if limit_events and len({e["time_ns"] for e in limit_events}) == len(times):
        link = limit_events[0]["link"]
        queue = spec["links"][link]["queue"]
        unit = "pkt" if queue["limit_packets"] is not None else "B"
        current = queue["limit_packets"] if unit == "pkt" else queue["limit_bytes"]
        labels = [f"{current}{unit}"]
        for t in times:
            for e in limit_events:
                if e["time_ns"] / 1e9 == t and e["link"] == link:
                    current = e["set"]["limit_packets"] if unit == "pkt" else e["set"]["limit_bytes"]
            labels.append(f"{current}{unit}")
        return boundaries, labels, f"queue limit of {spec['links'][link]['name']}"
    labels = [f"from {units.format_time(t)}" for t in boundaries[:-1]]
    return boundaries, labels, "interval"


def _intervals(part: Any, figures_dir: Path, prefix: str, figures: list[Any]) -> None:
    records = {r: part.store.read_run_record(r) for r in part.run_ids}
    with_events = [r for r, rec in records.items() if rec["spec"].get("events")]
    if not with_events:
        return
    params = [p for p in part.parameters if p in part.summary.columns]
    groups: dict[tuple[Any, ...], list[str]] = {}
    for r in with_events:
        key = tuple(records[r]["params"].get(p) for p in params)
        groups.setdefault(key, []).append(r)
    for key, run_ids in groups.items():
        schedule = _event_schedule(records[run_ids[0]]["spec"])
        if schedule is None:
            continue
        boundaries, labels, meaning = schedule
        samples = pd.concat([part.store.read_table(r, "samples") for r in run_ids], ignore_index=True)
        per_interval = studies.goodput_by_interval(samples, boundaries, labels)
        table = studies.interval_goodput_over_repeats(per_interval)
        where = ", ".join(f"{p} = {v}" for p, v in zip(params, key))
        title = f"Goodput vs {meaning}" + (f" — {where}" if where else "")
        slug = "".join(ch if ch.isalnum() else "_" for ch in where) or "all"
        figures.append(_figure(study_plots.goodput_vs_interval(table, title, xlabel=meaning),
                               f"{title} (mean ± 95% CI over {len(run_ids)} runs)",
                               f"{prefix}interval-goodput-{slug}.png", figures_dir))


def _red(part: Any, figures_dir: Path, prefix: str, figures: list[Any]) -> None:
    shown = 0
    for run_id in part.run_ids:
        record = part.store.read_run_record(run_id)
        if record.get("repeat", 0) != 0:
            continue
        thresholds = {}
        for i, link in enumerate(record["spec"]["links"]):
            red = link["queue"].get("red")
            if red is None:
                continue
            unit = "packets" if red["min_th_packets"] is not None else "bytes"
            lo = red["min_th_packets"] if unit == "packets" else red["min_th_bytes"]
            hi = red["max_th_packets"] if unit == "packets" else red["max_th_bytes"]
            thresholds[i] = (float(lo), float(hi), unit)
        if not thresholds:
            continue
        queues = part.store.read_table(run_id, "queues")
        busy = [i for i in thresholds
                if np.nanmax(queues.loc[queues["link"] == i, "backlog_packets"].to_numpy(dtype=float), initial=0) > 0]
        if not busy:
            continue
        fig = study_plots.red_average_vs_time(queues, busy, {i: thresholds[i] for i in busy},
                                              f"RED average queue — {run_id}")
        figures.append(_figure(fig, f"RED: backlog and average queue against min_th/max_th — {run_id}",
                               f"{run_id}-red.png", figures_dir))
        shown += 1
        if shown >= 2:
            return
