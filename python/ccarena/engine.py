"""A thin wrapper over the simulator, ``ccarena._engine.Simulation`` (docs/engine-spec.md).

:func:`run_spec` gives the engine a resolved spec, advances it in chunks of simulated time (calling
a progress callback between chunks, where Ctrl-C is also honoured) and turns the result columns
(little-endian float64 bytes or lists of names) into pandas DataFrames.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ccarena.resolve import canonical_json

TABLES = ("flows", "samples", "queues", "links")
"""The tables the engine returns."""

INTEGER_COLUMNS = {
    "flow", "link", "bytes_offered", "bytes_sent", "bytes_retransmitted", "bytes_delivered",
    "packets_sent", "packets_retransmitted", "packets_received", "packets_lost", "rto_count",
    "fast_recoveries", "spurious_rtos", "duplicate_bytes_received", "rtt_samples",
    "delivered_bytes", "sent_bytes", "retransmits", "ca_state", "backlog_bytes", "backlog_packets",
    "drops", "marks", "arrivals", "departures", "rate_bps", "delay_ns", "packets_in", "bytes_in",
    "packets_delivered", "packets_dropped_queue", "packets_marked", "packets_lost_wire", "packets_queued_end",
    "packets_in_flight_end", "bytes_transmitted",
}
"""Columns that hold counts or ids: stored as int64 when every value is finite."""

ProgressCallback = Callable[[int, int], None]
"""``progress(now_ns, duration_ns)``, called after each chunk."""


def engine_module() -> Any:
    """The compiled engine module.

    Raises:
        ccarena.errors.UserError: the extension is not built.
    """
    from ccarena.flavors import _engine

    return _engine()


def columns_to_frame(columns: dict[str, Any]) -> pd.DataFrame:
    """One engine table (column name → ``bytes`` of ``<f8`` or ``list[str]``) as a DataFrame.

    Numeric columns listed in :data:`INTEGER_COLUMNS` become int64 when all values are finite.

    Raises:
        ValueError: columns of different lengths or of an unknown type.
    """
    data: dict[str, Any] = {}
    for name, column in columns.items():
        if isinstance(column, (bytes, bytearray, memoryview)):
            values = np.frombuffer(bytes(column), dtype="<f8").astype(np.float64)
            if name in INTEGER_COLUMNS and np.all(np.isfinite(values)):
                values = values.astype(np.int64)
            data[name] = values
        elif isinstance(column, list):
            data[name] = pd.array([str(v) for v in column], dtype="string")
        else:
            raise ValueError(f"engine column {name!r} has type {type(column).__name__}")
    lengths = {len(v) for v in data.values()}
    if len(lengths) > 1:
        raise ValueError(f"engine table has columns of different lengths: {sorted(lengths)}")
    return pd.DataFrame(data)


def run_spec(spec: dict[str, Any], *, progress: ProgressCallback | None = None,
             chunks: int = 200) -> dict[str, pd.DataFrame]:
    """Run one resolved spec to its end and return its tables.

    Args:
        spec: the resolved engine spec (:func:`ccarena.resolve.resolve_run`).
        progress: called as ``progress(now_ns, duration_ns)`` after each chunk.
        chunks: how many chunks of simulated time to run in (at most; each at least one sample
            interval long).

    Returns:
        ``{"flows", "samples", "queues", "links"}`` → DataFrame (columns as in docs/engine-spec.md).

    Raises:
        ValueError: the engine rejected the spec (a front-end bug: the spec is explicit).
        ccarena._engine.EngineError: the engine failed while running.
        KeyboardInterrupt: Ctrl-C between chunks.
    """
    engine = engine_module()
    sim = engine.Simulation(canonical_json(spec))
    duration_ns = int(sim.duration_ns)
    step_ns = max(duration_ns // max(chunks, 1), int(spec["sample_interval_ns"]), 1)
    target = 0
    while not sim.finished:
        target = min(target + step_ns, duration_ns)
        sim.run_until(target)
        if progress is not None:
            progress(int(sim.now_ns), duration_ns)
        if target >= duration_ns and not sim.finished:
            sim.run_until(duration_ns)
            break
    raw = sim.results()
    return {name: columns_to_frame(raw[name]) for name in TABLES}
