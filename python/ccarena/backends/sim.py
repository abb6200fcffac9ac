"""The ``sim`` backend: ccarena's simulator, ``ccarena._engine.Simulation`` (docs/engine-spec.md).

:func:`run_spec` gives the engine a run spec, advances it in chunks of simulated time (calling a
progress callback between chunks, where Ctrl-C and a cancel check are also honoured) and turns the
result columns (little-endian float64 bytes or lists of names) into pandas DataFrames.
:class:`SimBackend` is the backend protocol's face of it (:mod:`ccarena.backends`); its ``start``
runs the engine on a thread of its own (the engine releases the GIL while it simulates), so the
caller can do other work meanwhile. numpy and pandas are loaded only to build the tables, so a
caller that starts a run first loads them while the engine works.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccarena.backends import (
    CPU_FLOW_COLUMNS,
    INTEGER_COLUMNS,
    MEMORY_BUDGET_ENV,
    SUBFLOW_TABLE,
    TABLES,
    CancelCheck,
    ProgressCallback,
    EngineTime,
    RunResult,
)
from ccarena.backends.declaration import BackendDeclaration
from ccarena.backends.engine_options import EngineOptions
from ccarena.errors import RunTooLarge, UserError
from ccarena.runspec import RunSpec

ENGINE_THREAD = "ccarena-engine"
"""The name of the thread a run's engine works on (:meth:`SimRun.start`)."""


def engine_working() -> bool:
    """True while a run's engine works on its thread in this process (started by
    :func:`ccarena.executor.local.start_here`, not yet finished)."""
    return any(t.name == ENGINE_THREAD and t.is_alive() for t in threading.enumerate())

if TYPE_CHECKING:
    import pandas as pd

DECLARATION = BackendDeclaration(name="sim", implementation="ccarena.backends.sim:SimBackend",
                                 options_table="engine", options_model=EngineOptions,
                                 reference=True)
"""The simulator, as the layers outside :mod:`ccarena.backends` know it: the reference backend,
with its options in ``[engine]`` (:class:`EngineOptions`), needing nothing of the machine."""


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
    import numpy as np
    import pandas as pd

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


def over_memory_budget(budget_bytes: int) -> str | None:
    """Why the process's resident memory now exceeds ``budget_bytes`` (the engine's check and
    wording: ``the process holds X MB, over the memory budget of Y MB``), or None when it does
    not, or where it cannot be read (not Linux)."""
    try:
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * 4096  # pages of 4 KiB, as the engine counts them
    except (OSError, ValueError, IndexError):
        return None
    if rss <= budget_bytes:
        return None
    return f"the process holds {rss >> 20} MB, over the memory budget of {budget_bytes >> 20} MB"


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
    return frames(simulate(spec, progress=progress, cancel=cancel, chunk_wall_s=chunk_wall_s))


def simulate(spec: RunSpec, *, progress: ProgressCallback | None = None,
             cancel: CancelCheck | None = None,
             chunk_wall_s: float = CHUNK_WALL_S,
             pcap_dir: Path | None = None, threads: int = 1) -> dict[str, Any]:
    """:func:`run_spec`'s simulation alone: the engine's result columns
    (``{"flows", "samples", "queues", "links"}`` → column → ``bytes`` of ``<f8`` or
    ``list[str]``), without numpy or pandas, and :data:`ENGINE_TIME` (an :class:`EngineTime`:
    the engine's calls alone, not the Python between chunks). Same arguments and errors as
    :func:`run_spec`; with ``pcap_dir``, the spec's ``pcap`` links are captured there and the
    result also holds :data:`CAPTURES` (the engine's ``finish_capture()``); ``threads``: as
    :class:`EngineOptions` says."""
    engine = engine_module()
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    sim = engine.Simulation(spec.to_json(), None if pcap_dir is None else str(pcap_dir), threads)
    build_s, cpu_s = time.perf_counter() - wall0, time.thread_time() - cpu0
    run_s = 0.0
    sim.set_budget(max_memory_bytes=memory_budget_bytes())
    duration_ns = int(sim.duration_ns)
    step_ns = max(1, min(duration_ns // 1000, 1_000_000))
    target = 0
    while not sim.finished:
        target = min(target + step_ns, duration_ns)
        started, cpu0 = time.perf_counter(), time.thread_time()
        try:
            sim.run_until(target)
        except engine.BudgetExceeded as err:
            raise RunTooLarge(too_large(spec, str(err))) from None
        elapsed = time.perf_counter() - started
        run_s += elapsed
        cpu_s += time.thread_time() - cpu0
        # Grow (at most 4× a chunk) or shrink the step toward chunk_wall_s of wall time.
        scale = 4.0 if elapsed <= 0 else min(4.0, chunk_wall_s / elapsed)
        step_ns = max(1, int(step_ns * scale))
        if progress is not None:
            progress(int(sim.now_ns), duration_ns)
        if cancel is not None and cancel():
            raise KeyboardInterrupt("cancelled")
        if target >= duration_ns and not sim.finished:
            started, cpu0 = time.perf_counter(), time.thread_time()
            sim.run_until(duration_ns)
            run_s += time.perf_counter() - started
            cpu_s += time.thread_time() - cpu0
            break
    timing = EngineTime(build_s=build_s, run_s=run_s, cpu_s=cpu_s + sim.worker_cpu_s, parts=sim.parts)
    return {**_results(sim, pcap_dir), ENGINE_TIME: timing}


CAPTURES = "pcap"
"""Key of the engine's capture summaries in :func:`simulate`'s result (a list, not a table)."""

ENGINE_TIME = "engine_time"
"""Key of the engine's own time (:class:`~ccarena.backends.EngineTime`) in :func:`simulate`'s
result."""

PCAP_DIR = "pcap"
"""Where a run's capture files go in its run directory."""


def _results(sim: Any, pcap_dir: Path | None) -> dict[str, Any]:
    """The engine's result tables, and its captures closed and summed up when it had some."""
    raw = dict(sim.results())
    if pcap_dir is not None:
        raw[CAPTURES] = list(sim.finish_capture())
    return raw


def capture_dir(spec: RunSpec) -> Path | None:
    """A new scratch directory for the run's packet captures, or None when it captures none."""
    if spec.pcap is None:
        return None
    return Path(tempfile.mkdtemp(prefix="ccarena-pcap-"))


def capture_result(spec: RunSpec, raw: dict[str, Any], pcap_dir: Path | None) -> RunResult:
    """:class:`RunResult` of a finished simulation: its tables, and its capture files with what
    each holds (``run.json``'s ``pcap``: link name, file, packets written and left out at the
    size limit, bytes; docs/engine-spec.md, "Packet capture")."""
    tables = frames(raw)
    engine = raw.get(ENGINE_TIME)
    captures = raw.get(CAPTURES)
    if pcap_dir is None or not captures:
        return RunResult(tables=tables, scratch=pcap_dir, engine=engine)
    files: dict[str, Path] = {}
    entries = []
    for c in captures:
        name = f"{PCAP_DIR}/{c['file']}"
        files[name] = pcap_dir / c["file"]
        entries.append({"link": spec.links[c["link"]].name, "file": name,
                        "packets_written": c["packets_written"],
                        "packets_over_limit": c["packets_over_limit"], "bytes": c["bytes"],
                        "max_bytes": spec.pcap.max_bytes if spec.pcap else None,
                        "error": c["error"]})
    return RunResult(tables=tables, record={"pcap": entries}, files=files, scratch=pcap_dir,
                     engine=engine)


def too_large(spec: RunSpec, why: str) -> str:
    """The one line of :class:`RunTooLarge` for ``spec`` stopped at its budget because ``why``
    (the engine's ``BudgetExceeded`` message)."""
    return (f"run {spec_name(spec)}: {why}; a run this large cannot finish on this machine: "
            "shorten it, sample less often, or raise --max-memory")


def frames(raw: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """The engine's result columns (:func:`simulate`) as :func:`run_spec`'s DataFrames, with the
    CPU-cost columns a simulation has no value for (NaN).

    Raises:
        ValueError: a malformed table (:func:`columns_to_frame`).
    """
    import numpy as np

    out: dict[str, pd.DataFrame] = {name: columns_to_frame(raw[name]) for name in TABLES}
    if SUBFLOW_TABLE in raw:
        out[SUBFLOW_TABLE] = columns_to_frame(raw[SUBFLOW_TABLE])
    for column in CPU_FLOW_COLUMNS:  # a simulation has no CPU cost: NaN, never invented
        out["flows"][column] = np.full(len(out["flows"]), np.nan)
    return out


class SimRun:
    """A simulation running on a thread of its own (:meth:`SimBackend.start`).

    The run's thread makes one call into the engine (``Simulation.run_until_stoppable``), the GIL
    released throughout: it never waits for the GIL while the thread that started it works (a
    run stepped from Python did, at each step, for as long as that thread held it: 70–90 ms of a
    2 s run while the command loaded pandas and pyarrow). Progress and the ``cancel`` check are
    served by the thread waiting in :meth:`result`, every 50 ms, from the engine's published
    clock; Ctrl-C is seen there too, and stops the run (within ~10 ms of simulation) before it is
    raised.
    """

    def __init__(self, spec: RunSpec, progress: ProgressCallback | None = None,
                 cancel: CancelCheck | None = None, threads: int = 1) -> None:
        self._spec = spec
        self._budget = memory_budget_bytes()
        self._progress = progress
        self._cancel = cancel
        self._stop = threading.Event()
        self._done = threading.Event()
        self._sim: Any = None
        self._raw: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._pcap_dir = capture_dir(spec)
        self.started = time.perf_counter()
        """``time.perf_counter()`` when the run started."""

        def work() -> None:
            try:
                engine = engine_module()
                pcap_dir = self._pcap_dir
                wall0, cpu0 = time.perf_counter(), time.thread_time()
                sim = engine.Simulation(spec.to_json(), None if pcap_dir is None else str(pcap_dir),
                                        threads)
                built = time.perf_counter()
                sim.set_budget(max_memory_bytes=self._budget)
                self._sim = sim
                if self._stop.is_set():  # cancelled before the engine existed (cancel() saw None)
                    sim.request_stop()
                try:
                    reached = sim.run_until_stoppable(int(sim.duration_ns))
                except engine.BudgetExceeded as err:
                    raise RunTooLarge(too_large(spec, str(err))) from None
                timing = EngineTime(build_s=built - wall0, run_s=time.perf_counter() - built,
                                    cpu_s=time.thread_time() - cpu0 + sim.worker_cpu_s,
                                    parts=sim.parts)
                if reached:
                    self._raw = {**_results(sim, pcap_dir), ENGINE_TIME: timing}
            except BaseException as err:  # handed to the waiting thread by result()
                self._error = err
            finally:
                self._done.set()

        self._thread = threading.Thread(target=work, name=ENGINE_THREAD, daemon=True)
        self._thread.start()

    def _report(self) -> None:
        """Progress from the engine's published clock; the ``cancel`` check."""
        sim = self._sim
        if sim is None:
            return
        if self._progress is not None:
            # progress_ns does not wait for the running engine (duration_ns would: its lock).
            self._progress(int(sim.progress_ns), self._spec.duration_ns)
        if self._cancel is not None and not self._stop.is_set() and self._cancel():
            self._stop.set()
            sim.request_stop()

    def _wait(self) -> None:
        # A timed wait, so that Ctrl-C (a KeyboardInterrupt in this thread) is seen at once.
        while not self._done.wait(0.05):
            self._report()
        self._thread.join()
        if self._error is None and self._raw is not None:
            self._report()  # the end, once

    def cancel(self) -> None:
        """Stop the run at the end of its current step and wait for it (idempotent)."""
        self._stop.set()
        sim = self._sim  # None before the engine exists: its thread then sees the flag
        if sim is not None:
            sim.request_stop()
        while True:
            try:
                self._wait()
                remove_scratch(self._pcap_dir)  # a cancelled run keeps none of its captures
                return
            except KeyboardInterrupt:  # a second Ctrl-C: the run stops all the same
                continue

    def result(self) -> RunResult:
        """Wait for the run and return its tables.

        Raises:
            what :func:`run_spec` raises; KeyboardInterrupt (Ctrl-C while waiting, or
            :meth:`cancel`) once the run has stopped.
        """
        try:
            try:
                self._wait()
            except BaseException:
                self.cancel()
                raise
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            if self._raw is None:
                raise KeyboardInterrupt("cancelled")
            raw, self._raw = self._raw, None  # the columns are freed once they are tables
            # The engine checked the process's memory while it ran; what the caller loaded
            # meanwhile counts too (run_spec's caller had loaded it before): checked once more now.
            over = over_memory_budget(self._budget)
            if over is not None:
                raise RunTooLarge(too_large(self._spec, f"at its end: {over}"))
            return capture_result(self._spec, raw, self._pcap_dir)
        except BaseException:
            remove_scratch(self._pcap_dir)
            raise


def remove_scratch(path: Path | None) -> None:
    """Delete a run's scratch directory (:func:`capture_dir`), if it has one."""
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)


def spec_name(spec: RunSpec) -> str:
    """A short description of a spec for messages: its flows and duration."""
    return f"of {len(spec.flows)} flows over {spec.duration_ns / 1e9:g} s"


class SimBackend:
    """The simulator behind the backend protocol: deterministic, many runs in parallel, and one
    run on several threads with ``[engine] threads`` (:class:`EngineOptions`)."""

    name = "sim"
    realtime = False

    def __init__(self, threads: int = 1) -> None:
        self._threads = threads

    def check(self, spec: RunSpec) -> None:  # noqa: ARG002 - every spec the front end makes runs
        """Raise UserError if the engine extension is not built."""
        engine_module()

    def run(self, spec: RunSpec, progress: ProgressCallback | None = None,
            cancel: CancelCheck | None = None) -> RunResult:
        """Simulate ``spec`` (:func:`run_spec`), capturing its ``pcap`` links if it has any."""
        pcap_dir = capture_dir(spec)
        try:
            raw = simulate(spec, progress=progress, cancel=cancel, pcap_dir=pcap_dir,
                           threads=self._threads)
            return capture_result(spec, raw, pcap_dir)
        except BaseException:
            remove_scratch(pcap_dir)
            raise

    def start(self, spec: RunSpec, progress: ProgressCallback | None = None,
              cancel: CancelCheck | None = None) -> SimRun:
        """Start simulating ``spec`` on a thread of its own and return at once
        (:class:`SimRun`; its ``result()`` is what :meth:`run` returns)."""
        return SimRun(spec, progress, cancel, self._threads)
