"""The columns of the stored result tables, one list per table (docs/engine-spec.md, "Output
tables"; README.md, "Results reference"): what the importers write for a measurement's run
tables and what summary.parquet takes of every run's flows.

A simulated or emulated run's tables are the engine's (or the backend's copy of them) with the
metrics of :func:`ccarena.analysis.metrics.flow_table` and :func:`~ccarena.analysis.metrics.link_table`
added; an imported run writes the same columns in the same order, without the CPU-cost columns
and with ``direction`` and ``jitter_s`` (:mod:`ccarena.importers.imported_tables`).
"""

from __future__ import annotations

from ccarena.analysis import metrics
# The per-class and AQM-probability columns are every backend's (the kernel's tables carry them
# as NaN), so they are declared with the other shared table facts; re-exported here.
from ccarena.backends import (  # noqa: F401
    AQM_PROBABILITY_COLUMNS,
    DUALPI2_CLASS_FIELDS,
    DUALPI2_CLASSES,
    DUALPI2_LINK_COLUMNS,
)

IMPORTED_FLOW_COLUMNS = (
    "flow", "name", "kind", "flavor", "recovery", "direction", "start_s", "end_s", "bytes_offered",
    "bytes_sent", "bytes_retransmitted", "bytes_delivered", "packets_sent", "packets_retransmitted",
    "packets_received", "packets_lost", "rto_count", "fast_recoveries", "spurious_rtos",
    "duplicate_bytes_received", "completion_time_s", "rtt_min_s", "rtt_mean_s", "rtt_p50_s",
    "rtt_p95_s", "rtt_p99_s", "rtt_samples",
    *(c for c in metrics.FLOW_TABLE_COLUMNS if c not in metrics.CPU_METRIC_COLUMNS),
    "jitter_s",
)
"""Columns of an imported run's flows.parquet: a simulated run's (the engine's, then the metrics
of :data:`ccarena.analysis.metrics.FLOW_TABLE_COLUMNS`) without the CPU cost, plus ``direction``
and ``jitter_s``."""

IMPORTED_SAMPLE_COLUMNS = (
    "time_s", "flow", "name", "goodput_bps", "throughput_bps", "delivered_bytes", "sent_bytes",
    "cwnd_bytes", "ssthresh_bytes", "srtt_s", "rttvar_s", "rto_s", "inflight_bytes",
    "pacing_rate_bps", "retransmits", "ca_state", "jitter_s",
)
"""Columns of an imported run's samples.parquet: a simulated run's, plus ``jitter_s``."""

SOJOURN_QUANTILES = (
    ("sojourn_min_s", 0.0), ("sojourn_p5_s", 0.05), ("sojourn_p10_s", 0.10),
    ("sojourn_p25_s", 0.25), ("sojourn_p50_s", 0.50), ("sojourn_p75_s", 0.75),
    ("sojourn_p90_s", 0.90), ("sojourn_p95_s", 0.95), ("sojourn_p99_s", 0.99),
    ("sojourn_max_s", 1.0),
)
"""The per-class sojourn columns that sample the sojourn CDF: (field, cumulative fraction)."""

IMPORTED_LINK_COLUMNS = (
    "link", "name", "rate_bps", "delay_ns", "packets_in", "bytes_in", "packets_delivered",
    "packets_dropped_queue", "packets_marked", "packets_lost_wire", "down_drops_packets",
    "no_route_drops_packets", "packets_queued_end", "packets_in_flight_end", "bytes_transmitted",
    "utilization", "role", "utilization_bytes", "queueing_delay_mean_s", "backlog_mean_bytes",
    "backlog_max_bytes", "backlog_max_packets", "drop_rate", *DUALPI2_LINK_COLUMNS,
)
"""Columns of an imported run's links.parquet (a measurement sees no link: always empty)."""

IMPORTED_QUEUE_COLUMNS = (
    "time_s", "link", "link_name", "backlog_bytes", "backlog_packets", "drops", "marks", "arrivals",
    "departures", "sojourn_mean_s", "red_avg", "early_drops", *AQM_PROBABILITY_COLUMNS,
)
"""Columns of an imported run's queues.parquet (a measurement sees no queue: always empty)."""

SUMMARY_FLOW_COLUMNS = (
    "flow", "name", "kind", "flavor", "recovery", "start_s", "end_s", "active_s", "bytes_sent",
    "bytes_retransmitted", "bytes_delivered", "packets_sent", "packets_retransmitted",
    "packets_received", "packets_lost", "rto_count", "fast_recoveries",
) + metrics.FLOW_METRICS + ("base_rtt_s", "path_loss", "bottleneck_rate_bps", "mss_bytes", "mathis_bps",
                            "padhye_bps", "cubic_bps")
"""Per-flow columns of summary.parquet (taken from each run's flows.parquet when present)."""
