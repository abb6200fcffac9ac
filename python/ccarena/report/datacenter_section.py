"""The report's data-center section (:mod:`ccarena.analysis.datacenter_metrics`): FCT slowdown p50/p99
per size bucket per flavor — the standard figure of data-center transport papers (DCTCP, pFabric,
HPCC) — with its table, utilization per link role and queue occupancy per link role (tier).

Shown only for a part with finite flows (or multipath link roles); each flavor keeps one colour
in every figure (:func:`flavor_colors`, the palette of :func:`ccarena.report.plots.flavor_color`).
Runs are pooled per flavor (and per value of any other swept parameter).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ccarena import units
from ccarena.analysis import datacenter_metrics as datacenter
from ccarena.report import plots
from ccarena.report.figures import Figure
from ccarena.report.html_tables import Cell, cell


def flavor_colors(flavors: list[str]) -> dict[str, str]:
    """Each flavor's colour: :func:`ccarena.report.plots.flavor_color`, the report's one colour
    per flavor."""
    return {f: plots.flavor_color(f) for f in dict.fromkeys(flavors)}


def _groups(part: Any) -> tuple[list[str], pd.DataFrame]:
    """The swept parameters other than a flavor (pooled over otherwise) and run_id → their values."""
    params = [p for p in part.parameters if not p.endswith("flavor") and p in part.summary.columns]
    runs = part.summary.drop_duplicates("run_id")[["run_id", *params]]
    return params, runs


def _label(flavor: str, params: list[str], key: tuple[Any, ...]) -> str:
    extra = ", ".join(f"{p.split('.')[-1]}={v}" for p, v in zip(params, key))
    return f"{flavor} ({extra})" if extra else flavor


def slowdown_rows(part: Any) -> pd.DataFrame:
    """The part's finite flows with their slowdown (:func:`ccarena.analysis.datacenter_metrics.slowdown_table`),
    with the run's non-flavor swept parameters."""
    summary = part.summary
    if "fct_slowdown" in summary and not summary["fct_slowdown"].notna().any():
        return pd.DataFrame()  # no finite flow: nothing to read run by run
    flows = part.read("flows")
    if flows.empty or "fct_slowdown" not in flows.columns:
        return pd.DataFrame()
    table = datacenter.slowdown_table(flows)
    if table.empty:
        return table
    params, runs = _groups(part)
    return table.merge(runs, on="run_id", how="left") if params else table


def slowdown_figure(table: pd.DataFrame, params: list[str], colors: dict[str, Any]) -> plt.Figure:
    """p50 (solid, circles) and p99 (dashed, triangles) of FCT slowdown per size bucket, one
    colour per flavor; log y axis."""
    fig, ax = plots._figure("FCT slowdown by flow size", "flow size", "FCT slowdown (FCT / ideal)")
    buckets = [label for label, _, _ in datacenter.SIZE_BUCKETS]
    stats = datacenter.slowdown_by_bucket(table, by=["flavor", *params])
    stats = stats[stats["size_bucket"] != "all"]
    for key, group in stats.groupby(["flavor", *params], sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        x = [buckets.index(b) for b in group["size_bucket"]]
        label = _label(str(key[0]), params, key[1:])
        color = colors.get(str(key[0]), "black")
        ax.plot(x, group["slowdown_p50"], color=color, marker="o", label=f"{label} p50")
        ax.plot(x, group["slowdown_p99"], color=color, marker="^", linestyle="--", label=f"{label} p99")
    # Flows per bucket: per group when every group has the same (the same traffic per flavor).
    per_group = table.groupby(["flavor", *params, "size_bucket"], dropna=False).size() \
        .unstack("size_bucket").fillna(0)
    same = len(per_group) > 1 and bool((per_group.nunique() == 1).all())
    counts = per_group.iloc[0] if same else per_group.sum()
    each = " each" if same else ""
    ax.set_xticks(range(len(buckets)),
                  [f"{b}\n({int(counts.get(b, 0))} flows{each})" for b in buckets])
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    return plots._finish(fig, ax)


def _per_run_roles(part: Any) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per run and role: utilization (mean over the role's links), pooled queue percentiles and
    ECMP balance (multipath roles only)."""
    util_rows, queue_rows, balance_rows = [], [], []
    for run_id in part.run_ids:
        links = part.store.read_table(run_id, "links")
        queues = part.store.read_table(run_id, "queues")
        record = part.store.read_run_record(run_id)
        duration_s = record["spec"]["duration_ns"] / 1e9
        util_rows.append(datacenter.utilization_by_role(links, duration_s).assign(run_id=run_id))
        balance = datacenter.ecmp_balance(links)
        if len(balance):
            balance_rows.append(balance.assign(run_id=run_id))
        if len(queues):
            queue_rows.append(datacenter.queue_by_role(queues, links).assign(run_id=run_id))
    util = pd.concat(util_rows, ignore_index=True) if util_rows else pd.DataFrame()
    balance = pd.concat(balance_rows, ignore_index=True) if balance_rows else pd.DataFrame()
    queue = pd.concat(queue_rows, ignore_index=True) if queue_rows else pd.DataFrame()
    return util, queue, balance


def _run_flavor(part: Any) -> dict[str, str]:
    """run_id → the flavors its flows use (joined with '+' when several)."""
    s = part.summary
    return {run: "+".join(dict.fromkeys(g["flavor"].astype(str)))
            for run, g in s.groupby("run_id", sort=False)}


def role_bars(data: pd.DataFrame, value: str, err_high: str | None, title: str, ylabel: str,
              colors: dict[str, Any], scale: float = 1.0) -> plt.Figure:
    """Grouped bars: one group per link role, one bar per flavor (mean over its runs), with a
    whisker up to ``err_high`` (the mean over runs of that column) when given."""
    fig, ax = plots._figure(title, "link role", ylabel)
    roles = list(dict.fromkeys(data["role"]))
    flavors = list(dict.fromkeys(data["flavor"]))
    width = 0.8 / max(1, len(flavors))
    for j, flavor in enumerate(flavors):
        mine = data[data["flavor"] == flavor].groupby("role").mean(numeric_only=True)
        x = np.arange(len(roles)) + (j - (len(flavors) - 1) / 2) * width
        y = np.array([mine[value].get(r, math.nan) for r in roles]) / scale
        ax.bar(x, np.nan_to_num(y), width=width * 0.95, color=colors.get(flavor, "black"),
                      label=flavor)
        if err_high is not None:
            hi = np.array([mine[err_high].get(r, math.nan) for r in roles]) / scale
            ax.vlines(x, np.nan_to_num(y), hi, color="black", linewidth=0.8)
            ax.plot(x, hi, linestyle="none", marker="_", markersize=10, color="black")
    ax.set_xticks(range(len(roles)), roles, rotation=20 if len(roles) > 4 else 0)
    ax.set_ylim(bottom=0)
    return plots._finish(fig, ax)


def slowdown_table_rows(table: pd.DataFrame, params: list[str]) -> tuple[list[str], list[list[Cell]]]:
    """Headings and cells of the slowdown table: per flavor (and other swept values) and size
    bucket, flows, unfinished, p50/p99 slowdown and p50/p99 FCT."""
    stats = datacenter.slowdown_by_bucket(table, by=["flavor", *params])
    headings = ["flavor", *params, "size", "flows", "unfinished", "slowdown p50", "slowdown p99",
                "FCT p50", "FCT p99"]
    rows = []
    for rec in stats.to_dict("records"):
        rows.append([cell("flavor", rec["flavor"], None), *[cell(p, rec.get(p), None) for p in params],
                     cell("size_bucket", rec["size_bucket"], None),
                     cell("flows", rec["flows"], lambda x: f"{x:.0f}"),
                     cell("unfinished", rec["unfinished"], lambda x: f"{x:.0f}"),
                     cell("slowdown_p50", rec["slowdown_p50"], _slowdown_text),
                     cell("slowdown_p99", rec["slowdown_p99"], _slowdown_text),
                     cell("fct_p50_s", rec["fct_p50_s"], units.format_time),
                     cell("fct_p99_s", rec["fct_p99_s"], units.format_time)])
    return headings, rows


def _slowdown_text(x: float) -> str:
    return "–" if not math.isfinite(x) else (f"{x:.3g}" if x < 100 else f"{x:.0f}")


def _has_multipath_roles(part: Any) -> bool:
    """Whether the part's (first run's) network has a role of parallel links (not in
    :data:`ccarena.analysis.datacenter_metrics.SINGLE_PATH_ROLES`, at least two links)."""
    links = part.store.read_table(part.run_ids[0], "links")
    counts = links["role"].astype(str).value_counts()
    return any(n >= 2 and role not in datacenter.SINGLE_PATH_ROLES for role, n in counts.items())


def datacenter_content(part: Any, figures_dir: Path, prefix: str = "") -> tuple[
        tuple[list[str], list[list[Cell]]] | None, list[Figure]]:
    """The slowdown table and the data-center figures of a part; ``(None, [])`` when the part
    has no finite flow and no multipath role."""
    if not part.run_ids:
        return None, []
    table = slowdown_rows(part)
    if table.empty and not _has_multipath_roles(part):
        return None, []
    util, queue, balance = _per_run_roles(part)
    params, _ = _groups(part)
    flavors = list(dict.fromkeys(part.summary["flavor"].astype(str)))
    run_flavor = _run_flavor(part)
    colors = flavor_colors([*flavors, *run_flavor.values()])
    figures: list[Figure] = []
    rows = None
    if not table.empty:
        rows = slowdown_table_rows(table, params)
        if table["fct_slowdown"].notna().any():
            fig = slowdown_figure(table, params, colors)
            figures.append(Figure.draw(fig, "FCT slowdown p50 (solid) and p99 (dashed) per flow "
                                            "size and flavor", f"{prefix}dc-fct-slowdown.png",
                                       figures_dir, "The dotted grey line is slowdown 1 (the flow "
                                       "alone on the empty network).", overview=True))
    if _has_multipath_roles(part):
        from ccarena.report.topology_figure import utilization_map

        figures += utilization_map(part, figures_dir, prefix)
    if len(util) and (util["utilization_max"] > 0).any():
        util = util.assign(flavor=util["run_id"].map(run_flavor))
        fig = role_bars(util, "utilization_mean", "utilization_max", "Link utilization per role",
                        "utilization (%; whisker: busiest link)", colors, scale=0.01)
        figures.append(Figure.draw(fig, "Utilization per link role (8·bytes sent / (rate·duration), "
                                        "mean over the role's links)",
                                   f"{prefix}dc-utilization.png", figures_dir))
    if len(queue) and (queue["backlog_p99_packets"] > 0).any():
        queue = queue.assign(flavor=queue["run_id"].map(run_flavor))
        fig = role_bars(queue, "backlog_p50_packets", "backlog_p99_packets",
                        "Queue occupancy per role (tier)", "backlog (packets; bar p50, whisker p99)",
                        colors)
        figures.append(Figure.draw(fig, "Queue occupancy per link role: p50 (bar) and p99 "
                                        "(whisker) of the sampled backlog",
                                   f"{prefix}dc-queues.png", figures_dir))
    if len(balance) and balance["max_over_mean"].notna().any():
        balance = balance.assign(flavor=balance["run_id"].map(run_flavor))
        fig = role_bars(balance, "max_over_mean", None, "ECMP load balance per role",
                        "max / mean bytes over the role's links", colors)
        figures.append(Figure.draw(fig, "ECMP load balance: the busiest link's bytes over the mean "
                                        "of its role's parallel links (1 = perfect)",
                                   f"{prefix}dc-ecmp-balance.png", figures_dir))
    return rows, figures
