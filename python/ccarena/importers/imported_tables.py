"""A parsed measurement (:class:`ImportedRun`) as the store's run tables, in the columns and units
of a simulated run (docs/engine-spec.md, "Output tables"; :func:`ccarena.analysis.metrics.flow_table`):
times in seconds, rates in bits per second, sizes in bytes, counts in packets.

A value the file does not give is null (NaN in pandas, null in Parquet): the count columns an
import may lack (``packets_sent`` of a TCP stream, for one) are therefore float64, where a
simulated run's are int64. The columns are the store's (:mod:`ccarena.store.columns`), where
two are added: ``direction`` (flows) and ``jitter_s`` (flows and samples, UDP only). Ratios are taken only where both of their terms are known; stability and the
region table come from the goodput samples, exactly as for a simulated run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ccarena.analysis import metrics
from ccarena.importers.model import ImportedRun
from ccarena.store.columns import (
    IMPORTED_FLOW_COLUMNS,
    IMPORTED_LINK_COLUMNS,
    IMPORTED_QUEUE_COLUMNS,
    IMPORTED_SAMPLE_COLUMNS,
)

_STRINGS = {"name", "kind", "flavor", "recovery", "direction", "role", "link_name"}
_INTEGERS = {"flow", "link"}


def _empty(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype="string" if c in _STRINGS else
                                      "int64" if c in _INTEGERS else "float64") for c in columns})


def _typed(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    """``rows`` as a frame with exactly ``columns``: strings as strings, ``flow`` int64, the rest
    float64 (a missing value is NaN, written as null)."""
    if not rows:
        return _empty(columns)
    out = pd.DataFrame({c: [r.get(c) for r in rows] for c in columns})
    for c in columns:
        if c in _STRINGS:
            out[c] = out[c].astype("string")
        elif c in _INTEGERS:
            out[c] = out[c].astype("int64")
        else:
            out[c] = pd.to_numeric(out[c], errors="coerce").astype("float64")
    return out


def _rate(size_bytes: float, span_s: float) -> float:
    return metrics.rate_bps(size_bytes, span_s) if math.isfinite(size_bytes) else math.nan


def samples_table(run: ImportedRun) -> pd.DataFrame:
    """Every flow's samples, in time order per flow
    (:data:`ccarena.store.columns.IMPORTED_SAMPLE_COLUMNS`)."""
    rows = []
    for i, flow in enumerate(run.flows):
        for s in sorted(flow.samples, key=lambda s: s["time_s"]):
            rows.append(dict(s, flow=i, name=flow.name))
    return _typed(rows, IMPORTED_SAMPLE_COLUMNS)


def flows_table(run: ImportedRun, samples: pd.DataFrame) -> pd.DataFrame:
    """One row per flow (:data:`ccarena.store.columns.IMPORTED_FLOW_COLUMNS`).

    ``goodput_mean_bps`` and ``throughput_mean_bps`` are the file's own averages when the parser
    gives them, else 8 · bytes / active time (:func:`ccarena.analysis.metrics.rate_bps`);
    ``loss_rate``, ``retransmission_rate`` and ``delivery_ratio`` as for a simulated run
    (:func:`ccarena.analysis.metrics.packet_ratios`: NaN where a term is unknown); ``stability`` =
    SD / mean of the flow's goodput samples (:func:`ccarena.analysis.metrics.stability`).
    """
    rows = []
    by_flow = {int(k): g for k, g in samples.groupby("flow", sort=False)} if len(samples) else {}
    for i, flow in enumerate(run.flows):
        t = flow.total
        active = flow.end_s - flow.start_s
        row: dict[str, Any] = {c: flow.totals.get(c) for c in IMPORTED_FLOW_COLUMNS if c in flow.totals}
        mine = by_flow.get(i)
        goodput = t("goodput_mean_bps")
        throughput = t("throughput_mean_bps")
        row.update({
            "flow": i, "name": flow.name, "kind": flow.kind, "flavor": flow.flavor, "recovery": None,
            "direction": flow.direction, "start_s": flow.start_s, "end_s": flow.end_s,
            "active_s": active,
            "goodput_mean_bps": goodput if math.isfinite(goodput) else _rate(t("bytes_delivered"), active),
            "throughput_mean_bps": (throughput if math.isfinite(throughput)
                                    else _rate(t("bytes_sent"), active)),
            **dict(zip(metrics.PACKET_RATIOS, metrics.packet_ratios(
                t("packets_lost"), t("packets_retransmitted"), t("packets_received"),
                t("packets_sent")))),
            "stability": metrics.stability(mine["goodput_bps"]) if mine is not None else math.nan,
        })
        rows.append(row)
    return _typed(rows, IMPORTED_FLOW_COLUMNS)


def regions_table(run: ImportedRun, flows: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """Fairness and stability per region (:func:`ccarena.analysis.metrics.region_table`) over the
    flows that carry data (latency probes left out)."""
    data = flows[flows["kind"] != "ping"]
    return metrics.region_table(data, samples[samples["flow"].isin(data["flow"])],
                                run.duration_s, run.interval_s)


def run_summary(run: ImportedRun, flows: pd.DataFrame, regions: pd.DataFrame) -> dict[str, float]:
    """The run-level numbers of a simulated run's summary (:func:`ccarena.analysis.metrics.
    run_summary`) that a measurement has: Jain's index over the data flows' mean goodput and the
    region ranges; the bottleneck's numbers are unknown (NaN). Plus the file's own (``run.summary``)."""
    data = flows[flows["kind"] != "ping"]["goodput_mean_bps"].to_numpy(dtype=float)
    out: dict[str, float] = {"jain_index": metrics.jain_index(data) if np.all(np.isfinite(data))
                             else math.nan}
    out.update(metrics.region_ranges(regions))
    for key in ("bottleneck_utilization", "bottleneck_queueing_delay_s", "bottleneck_drops",
                "bottleneck_drop_rate"):
        out[key] = math.nan
    out.update(run.summary)
    return out


def run_tables(run: ImportedRun, run_id: str) -> tuple[dict[str, pd.DataFrame], dict[str, float]]:
    """The run's five tables (``flows, samples, queues, links, regions``, each with ``run_id``
    first) and its run-level summary."""
    samples = samples_table(run)
    flows = flows_table(run, samples)
    regions = regions_table(run, flows, samples)
    summary = run_summary(run, flows, regions)
    out = {"flows": flows, "samples": samples, "queues": _empty(IMPORTED_QUEUE_COLUMNS),
           "links": _empty(IMPORTED_LINK_COLUMNS), "regions": regions}
    for df in out.values():
        df.insert(0, "run_id", pd.Series([run_id] * len(df), dtype="string"))
    return out, summary
