"""The ``sim`` backend: ccarena's simulator, ``ccarena._engine.Simulation`` (docs/engine-spec.md).

:func:`run_spec` gives the engine a run spec, advances it in chunks of simulated time (calling a
progress callback between chunks, where Ctrl-C and a cancel check are also honoured) and turns the
result columns (little-endian float64 bytes or lists of names) into pandas DataFrames.
:class:`SimBackend` is the backend protocol's face of it (:mod:`ccarena.backends`).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import pandas as pd

from ccarena.backends import (
    CPU_FLOW_COLUMNS,
    INTEGER_COLUMNS,
    TABLES,
    CancelCheck,
    ProgressCallback,
    RunResult,
)
from ccarena.errors import RunTooLarge, UserError
from ccarena.runspec import RunSpec


def engine_module() -> Any:
    """The compiled engine module.

    Raises:
        ccarena.errors.UserError: the extension is not built.
    """
    try:
        from ccarena import _engine
    except ImportError as err:
        raise UserError("the simulator engine (ccarena._engine) is not built: run `pip install .` "
                        f"in the ccarena source tree ({err})") from None
    return _engine


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


MEMORY_BUDGET_ENV = "CCARENA_MAX_MEMORY_BYTES"
"""Environment variable carrying the per-run memory budget to the engine (set by the executor from
``--max-memory``; inherited by pool workers)."""


def memory_budget_bytes() -> int:
    """The memory the engine may hold before it stops a run (``BudgetExceeded``): the executor's
    budget, else half of this machine's memory."""
    try:
        return int(os.environ[MEMORY_BUDGET_ENV])
    except (KeyError, ValueError):
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
        except (ValueError, OSError):
            return 4 * 10**9


CHUNK_WALL_S = 0.1
"""Wall time one chunk of simulation aims at: Ctrl-C and ``cancel`` are seen between chunks, so a
run stops within about this long however fast or slow the simulation is (issue 18)."""


def run_spec(spec: RunSpec, *, progress: ProgressCallback | None = None,
             cancel: CancelCheck | None = None, chunk_wall_s: float = CHUNK_WALL_S) -> dict[str, pd.DataFrame]:
    """Run one spec to its end and return its tables.

    The run advances in chunks of simulated time sized so that each takes about ``chunk_wall_s``
    of wall time (the size adapts to the measured speed: the first chunk is a thousandth of the
    run, or 1 ms simulated, whichever is smaller). Results do not depend on the chunking.

    Args:
        spec: the run spec (:func:`ccarena.experiment.resolve.resolve_run`).
        progress: called as ``progress(now_ns, duration_ns)`` after each chunk.
        cancel: called after each chunk; True stops the run (KeyboardInterrupt).
        chunk_wall_s: wall seconds per chunk to aim at (> 0).

    Returns:
        ``{"flows", "samples", "queues", "links"}`` → DataFrame (columns as in docs/engine-spec.md).

    Raises:
        ValueError: the engine rejected the spec (a front-end bug: the spec is explicit).
        ccarena._engine.EngineError: the engine failed while running.
        RunTooLarge: the run went over the memory budget (:func:`memory_budget_bytes`); the engine
            stopped it inside one chunk.
        KeyboardInterrupt: Ctrl-C or ``cancel()`` between chunks.
    """
    engine = engine_module()
    sim = engine.Simulation(spec.to_json())
    sim.set_budget(max_memory_bytes=memory_budget_bytes())
    duration_ns = int(sim.duration_ns)
    step_ns = max(1, min(duration_ns // 1000, 1_000_000))
    target = 0
    while not sim.finished:
        target = min(target + step_ns, duration_ns)
        started = time.perf_counter()
        try:
            sim.run_until(target)
        except engine.BudgetExceeded as err:
            raise RunTooLarge(f"run {spec_name(spec)}: {err}; a run this large cannot finish on "
                              "this machine: shorten it, sample less often, or raise --max-memory") from None
        elapsed = time.perf_counter() - started
        # Grow (at most 4× a chunk) or shrink the step toward chunk_wall_s of wall time.
        scale = 4.0 if elapsed <= 0 else min(4.0, chunk_wall_s / elapsed)
        step_ns = max(1, int(step_ns * scale))
        if progress is not None:
            progress(int(sim.now_ns), duration_ns)
        if cancel is not None and cancel():
            raise KeyboardInterrupt("cancelled")
        if target >= duration_ns and not sim.finished:
            sim.run_until(duration_ns)
            break
    raw = sim.results()
    out = {name: columns_to_frame(raw[name]) for name in TABLES}
    for column in CPU_FLOW_COLUMNS:  # a simulation has no CPU cost: NaN, never invented
        out["flows"][column] = np.full(len(out["flows"]), np.nan)
    return out


def spec_name(spec: RunSpec) -> str:
    """A short description of a spec for messages: its flows and duration."""
    return f"of {len(spec.flows)} flows over {spec.duration_ns / 1e9:g} s"


class SimBackend:
    """The simulator behind the backend protocol: deterministic, many runs in parallel."""

    name = "sim"
    realtime = False

    def check(self, spec: RunSpec) -> None:  # noqa: ARG002 - every spec the front end makes runs
        """Raise UserError if the engine extension is not built."""
        engine_module()

    def run(self, spec: RunSpec, progress: ProgressCallback | None = None,
            cancel: CancelCheck | None = None) -> RunResult:
        """Simulate ``spec`` (:func:`run_spec`)."""
        return RunResult(tables=run_spec(spec, progress=progress, cancel=cancel))
