"""A parsed measurement (:class:`ImportedRun`) as the store's run tables, in the columns and units
of a simulated run (docs/engine-spec.md, "Output tables"; :func:`ccarena.analysis.metrics.flow_table`):
times in seconds, rates in bits per second, sizes in bytes, counts in packets.

A value the file does not give is null (NaN in pandas, null in Parquet): the count columns an
import may lack (``packets_sent`` of a TCP stream, for one) are therefore float64, where a
simulated run's are int64. Two columns are added: ``direction`` (flows) and ``jitter_s`` (flows and
samples, UDP only). Ratios are taken only where both of their terms are known; stability and the
region table come from the goodput samples, exactly as for a simulated run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ccarena.analysis import metrics
from ccarena.importers.model import ImportedRun

FLOW_COLUMNS = (
    "flow", "name", "kind", "flavor", "recovery", "direction", "start_s", "end_s", "bytes_offered",
    "bytes_sent", "bytes_retransmitted", "bytes_delivered", "packets_sent", "packets_retransmitted",
    "packets_received", "packets_lost", "rto_count", "fast_recoveries", "spurious_rtos",
    "duplicate_bytes_received", "completion_time_s", "rtt_min_s", "rtt_mean_s", "rtt_p50_s",
    "rtt_p95_s", "rtt_p99_s", "rtt_samples", "active_s", "goodput_mean_bps", "throughput_mean_bps",
    "loss_rate", "retransmission_rate", "delivery_ratio", "stability", "fct_s", "base_rtt_s",
    "mss_bytes", "path_loss", "bottleneck_rate_bps", "mathis_bps", "padhye_bps", "cubic_bps",
    "ideal_fct_s", "fct_slowdown", "jitter_s",
)
"""Columns of an imported run's flows.parquet: a simulated run's, plus ``direction`` and ``jitter_s``."""

SAMPLE_COLUMNS = (
    "time_s", "flow", "name", "goodput_bps", "throughput_bps", "delivered_bytes", "sent_bytes",
    "cwnd_bytes", "ssthresh_bytes", "srtt_s", "rttvar_s", "rto_s", "inflight_bytes",
    "pacing_rate_bps", "retransmits", "ca_state", "jitter_s",
)
"""Columns of an imported run's samples.parquet: a simulated run's, plus ``jitter_s``."""

LINK_COLUMNS = (
    "link", "name", "rate_bps", "delay_ns", "packets_in", "bytes_in", "packets_delivered",
    "packets_dropped_queue", "packets_marked", "packets_lost_wire", "down_drops_packets",
    "no_route_drops_packets", "packets_queued_end", "packets_in_flight_end", "bytes_transmitted",
    "utilization", "role", "utilization_bytes", "queueing_delay_mean_s", "backlog_mean_bytes",
    "backlog_max_bytes", "backlog_max_packets", "drop_rate",
)
QUEUE_COLUMNS = (
    "time_s", "link", "link_name", "backlog_bytes", "backlog_packets", "drops", "marks", "arrivals",
    "departures", "sojourn_mean_s", "red_avg", "early_drops",
)
"""A measurement sees no link or queue: its links and queues tables are empty, with these columns."""

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
    """Every flow's samples, in time order per flow (:data:`SAMPLE_COLUMNS`)."""
    rows = []
    for i, flow in enumerate(run.flows):
        for s in sorted(flow.samples, key=lambda s: s["time_s"]):
            rows.append(dict(s, flow=i, name=flow.name))
    return _typed(rows, SAMPLE_COLUMNS)


def flows_table(run: ImportedRun, samples: pd.DataFrame) -> pd.DataFrame:
    """One row per flow (:data:`FLOW_COLUMNS`).

    ``goodput_mean_bps`` and ``throughput_mean_bps`` are the file's own averages when the parser
    gives them, else 8 · bytes / active time (:func:`ccarena.analysis.metrics.rate_bps`);
    ``loss_rate`` = packets_lost / packets_sent, ``retransmission_rate`` = packets_retransmitted /
    packets_sent and ``delivery_ratio`` = packets_received / packets_sent where both terms are
    known (:func:`ccarena.analysis.metrics.ratio`, as for a simulated run); ``stability`` = SD / mean of the
    flow's goodput samples (:func:`ccarena.analysis.metrics.stability`).
    """
    rows = []
    by_flow = {int(k): g for k, g in samples.groupby("flow", sort=False)} if len(samples) else {}
    for i, flow in enumerate(run.flows):
        t = flow.total
        active = flow.end_s - flow.start_s
        row: dict[str, Any] = {c: flow.totals.get(c) for c in FLOW_COLUMNS if c in flow.totals}
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
            "loss_rate": metrics.ratio(t("packets_lost"), t("packets_sent")),
            "retransmission_rate": metrics.ratio(t("packets_retransmitted"), t("packets_sent")),
            "delivery_ratio": metrics.ratio(t("packets_received"), t("packets_sent")),
            "stability": metrics.stability(mine["goodput_bps"]) if mine is not None else math.nan,
        })
        rows.append(row)
    return _typed(rows, FLOW_COLUMNS)


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
    out = {"flows": flows, "samples": samples, "queues": _empty(QUEUE_COLUMNS),
           "links": _empty(LINK_COLUMNS), "regions": regions}
    for df in out.values():
        df.insert(0, "run_id", pd.Series([run_id] * len(df), dtype="string"))
    return out, summary
