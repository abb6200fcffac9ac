"""The capacity a trace-driven link offers over time, for the report's figures: the run spec's
``links[i].trace`` (:class:`ccarena.runspec.TraceSpec` as stored in run.json) binned into the
sample intervals, so the goodput figure can draw what the link could carry in each interval
instead of one flat line at the trace's mean.

Semantics as the engine's (docs/engine-spec.md, ``links[i].trace``; ``crates/link/src/trace.rs``;
:mod:`ccarena.traces.trace_files`): a Mahimahi trace is delivery opportunities of 1500 bytes at
millisecond timestamps, repeated with a period equal to its last timestamp when looped and
nothing after it when not; a steps trace holds each rate until the next row, its last row marks
the period (looped) or holds for ever (not looped).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

MTU_BITS = 1500 * 8
"""Bits one Mahimahi delivery opportunity carries."""


def _mahimahi_bits(opportunities_ms: np.ndarray, loop: bool, t_s: np.ndarray) -> np.ndarray:
    """Bits the link can deliver in [0, t) for each t (s)."""
    t_ms = t_s * 1e3
    period = float(opportunities_ms[-1])
    if loop and period > 0:
        # Lap k's opportunities fall in (k·period, (k+1)·period]: the last timestamp is the period.
        laps = np.maximum(np.ceil(t_ms / period) - 1, 0)
        within = t_ms - laps * period
        count = laps * opportunities_ms.size + np.searchsorted(opportunities_ms, within, side="left")
    else:
        count = np.searchsorted(opportunities_ms, t_ms, side="left").astype(float)
    return count * MTU_BITS


def _steps_bits(steps: np.ndarray, loop: bool, t_s: np.ndarray) -> np.ndarray:
    """Bits the link can carry in [0, t) for each t (s), the rates held piecewise constant."""
    times = steps[:, 0] / 1e9
    rates = steps[:, 1].astype(float)
    if times.size == 1:
        return rates[0] * t_s
    # Cumulative bits at each row: rate i holds from row i to row i + 1.
    knots = np.concatenate([[0.0], np.cumsum(rates[:-1] * np.diff(times))])
    period = float(times[-1])
    if loop and period > 0:
        laps = np.floor(t_s / period)
        within = t_s - laps * period
        return laps * knots[-1] + np.interp(within, times, knots)
    inside = np.interp(np.minimum(t_s, period), times, knots)
    return inside + rates[-1] * np.clip(t_s - period, 0.0, None)


def capacity_bps(trace: Mapping[str, Any], edges_s: np.ndarray) -> np.ndarray:
    """Mean capacity (bits/s) the trace offers in each interval ``[edges_s[i], edges_s[i+1])``.

    Args:
        trace: a stored ``links[i].trace``: ``opportunities_ms`` (Mahimahi timestamps) or
            ``steps`` (``[time_ns, rate_bps]`` rows), and ``loop``.
        edges_s: increasing interval edges, seconds since the run's start; n + 1 edges.

    Returns:
        n rates in bits per second.

    Raises:
        ValueError: a trace with neither opportunities nor steps, or edges not increasing.
    """
    edges = np.asarray(edges_s, dtype=float)
    if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError("edges_s must be at least two increasing times")
    loop = bool(trace.get("loop", True))
    if trace.get("opportunities_ms"):
        bits = _mahimahi_bits(np.asarray(trace["opportunities_ms"], dtype=float), loop, edges)
    elif trace.get("steps"):
        bits = _steps_bits(np.asarray(trace["steps"], dtype=float), loop, edges)
    else:
        raise ValueError("a trace needs opportunities_ms or steps")
    return np.diff(bits) / np.diff(edges)


def trace_link(spec: Mapping[str, Any], links: pd.DataFrame,
               bottleneck_roles: tuple[str, ...] = ("bottleneck", "link")) -> tuple[int, Mapping[str, Any]] | None:
    """The trace-driven link a run's goodput figure draws the capacity of: among the links whose
    spec has a ``trace``, a bottleneck-role one first, then the one that carried the most bytes;
    ``(link index, its trace)``, or None when no link follows a trace."""
    spec_links = spec.get("links") or []
    traced = [i for i, link in enumerate(spec_links) if link.get("trace")]
    if not traced:
        return None
    roles = dict(zip(links["link"], links["role"].astype(str))) if "role" in links else {}
    carried = dict(zip(links["link"], links["bytes_transmitted"])) if "bytes_transmitted" in links else {}
    best = max(traced, key=lambda i: (roles.get(i) in bottleneck_roles, float(carried.get(i, 0) or 0)))
    return best, spec_links[best]["trace"]


def capacity_over_time(spec: Mapping[str, Any], links: pd.DataFrame,
                       sample_times_s: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The trace-driven link's capacity per sample interval: ``(interval ends in s, bits/s)``,
    each interval ending at a sample time and as long as the run's sample interval (the samples'
    goodput covers the same intervals); None without a trace-driven link or samples."""
    found = trace_link(spec, links)
    times = np.unique(np.asarray(sample_times_s, dtype=float))
    times = times[np.isfinite(times) & (times > 0)]
    if found is None or not times.size:
        return None
    step = float(spec.get("sample_interval_ns") or 0) / 1e9
    if step <= 0:
        step = float(np.min(np.diff(times))) if times.size > 1 else float(times[0])
    grid = np.arange(step, float(times.max()) + step / 2, step)
    edges = np.concatenate([[0.0], grid])
    return grid, capacity_bps(found[1], edges)
