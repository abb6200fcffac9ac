"""Reading a link's capacity trace: a Mahimahi file or a CSV of rate steps, checked, into the run
spec's :class:`~ccarena.runspec.TraceSpec`; and the link rate that carries it.

Formats (the engine's semantics: docs/engine-spec.md, ``links[i].trace``; ``crates/link/src/trace.rs``):

- **Mahimahi** (any name not ending in ``.csv``): one integer per line, a millisecond timestamp at
  which one 1500-byte delivery opportunity occurs; equal lines are several opportunities; the
  timestamps never decrease. Looped (the default, as ``mm-link``), the trace repeats with a period
  equal to its last timestamp; not looped, the link carries nothing after the last opportunity.
- **Rate steps** (``.csv``): rows ``time,rate``, the rate holding from that time to the next row's;
  the first row at time 0; the last row marks the end (the period when looped; not looped, its
  rate holds for ever). A header names the units of bare numbers (``time_s`` / ``time_ms`` /
  ``time_us`` / ``time_ns`` and ``rate_bps`` / ``rate_kbps`` / ``rate_mbps`` / ``rate_gbps``);
  without one, each value carries its unit (``0s,12Mbps``). ``#`` starts a comment line.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Iterable, Iterator

from ccarena import inputs, units
from ccarena.errors import FieldError
from ccarena.runspec import TraceSpec

MTU_BYTES = 1500
"""Bytes one Mahimahi delivery opportunity carries."""

BYTES_PER_LINE = 250
"""Peak memory per line of a trace across a run's life: the parsed tuple, the run spec's JSON
for the engine and for run.json, the engine's array (measured: a 1,000,000-line Mahimahi trace
adds 76 MB to ``ccarena validate`` and 244 MB to ``ccarena run -j 1``). A trace may have at
most the memory budget divided by this many lines (:func:`max_lines`)."""

MAX_LINE_BYTES = 256
"""The longest line a trace file may have (a timestamp is at most 20 digits; a step row with
units and spaces a few dozen characters)."""

AVERAGE_LINE_BYTES = 64
"""The size limit checked before reading: :func:`max_lines` lines of this many bytes (a file
over it is refused by its size without being read)."""

TIME_COLUMNS = {"time_s": 1e9, "time_ms": 1e6, "time_us": 1e3, "time_ns": 1.0}
RATE_COLUMNS = {"rate_bps": 1.0, "rate_kbps": 1e3, "rate_mbps": 1e6, "rate_gbps": 1e9}


class TraceFormatError(ValueError):
    """A trace file that cannot be used; the message names the file and the line by its number,
    never its text (the file may be anyone's, e.g. a system file given by mistake or malice)."""


def max_lines() -> int:
    """The most lines a trace file may have within the memory budget
    (:func:`ccarena.inputs.memory_budget_bytes` / :data:`BYTES_PER_LINE`)."""
    return max(1, inputs.memory_budget_bytes() // BYTES_PER_LINE)


def read_lines(path: str | Path, label: str) -> Iterator[tuple[int, str]]:
    """The lines of the trace file ``path`` with their numbers, read one at a time within
    :func:`max_lines` lines of :data:`MAX_LINE_BYTES` (:func:`ccarena.inputs.read_lines`).

    Raises:
        TraceFormatError: ``label: <why>``: not a regular file (a FIFO or device is refused
            without blocking), larger than the limits, a line too long or not UTF-8.
    """
    limit = max_lines()
    fix = (f"a trace may have at most {limit:,} lines within {inputs.describe_budget()}; "
           "shorten the trace or raise --max-memory")
    try:
        yield from inputs.read_lines(path, limit, MAX_LINE_BYTES, fix,
                                     max_bytes=limit * AVERAGE_LINE_BYTES)
    except inputs.InputRefused as err:
        raise TraceFormatError(f"{label}: {err}") from None


def _numbered(lines: str | Iterable[tuple[int, str]]) -> Iterable[tuple[int, str]]:
    """Text as numbered lines (from 1), or numbered lines as they are."""
    return enumerate(lines.splitlines(), start=1) if isinstance(lines, str) else lines


class TraceRate(int):
    """A link rate that follows a trace: the int is the trace's mean rate (bits per second, what
    the reports and every rate computation see); ``trace_spec`` is the trace for the engine and
    ``source`` the file it came from."""

    trace_spec: TraceSpec
    source: str

    def __new__(cls, mean_bps: int, trace_spec: TraceSpec, source: str) -> "TraceRate":
        out = super().__new__(cls, mean_bps)
        out.trace_spec = trace_spec
        out.source = source
        return out

    def __reduce__(self) -> Any:
        return (TraceRate, (int(self), self.trace_spec, self.source))

    def __repr__(self) -> str:
        return f"TraceRate({int(self)}, {self.source!r})"


def parse_mahimahi(lines: str | Iterable[tuple[int, str]], label: str) -> list[int]:
    """The millisecond timestamps of a Mahimahi trace (blank lines skipped), from its text or
    its numbered lines (:func:`read_lines`).

    Raises:
        TraceFormatError: a line that is not a whole number ≥ 0 (of at most 20 digits), a
            timestamp smaller than the one before it, or no timestamps; the line named by its
            number.
    """
    out: list[int] = []
    previous = 0
    for lineno, line in _numbered(lines):
        word = line.strip()
        if not word:
            continue
        if not (word.isascii() and word.isdigit()) or len(word) > 20:
            raise TraceFormatError(f"{label} line {lineno}: not a millisecond timestamp (Mahimahi "
                                   "format: one whole number of milliseconds per line)")
        ms = int(word)
        if out and ms < out[-1]:
            raise TraceFormatError(f"{label} line {lineno}: its timestamp is smaller than line "
                                   f"{previous}'s; timestamps must not decrease")
        out.append(ms)
        previous = lineno
    if not out:
        raise TraceFormatError(f"{label}: no timestamps (Mahimahi format: one millisecond "
                               "timestamp per line)")
    return out


def _cell(value: str, scale: float | None, parse: Any, what: str, where: str) -> int:
    """One CSV value: a bare number times ``scale`` (a header gave the unit), else a value with
    its unit (``parse``); 0 needs no unit."""
    text = value.strip()
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        if not math.isfinite(number) or number < 0:
            raise TraceFormatError(f"{where}: the {what} must be a number ≥ 0")
        if scale is None and number != 0:
            raise TraceFormatError(f"{where}: the {what} has no unit; give a header such as "
                                   "time_s,rate_mbps or write units (0s,12Mbps)")
        return round(number * (scale or 1.0))
    try:
        return int(parse(text))
    except units.UnitError:
        # The unit parser's message quotes the value: the line is named by its number only.
        example = "1.5s or 200ms" if what == "time" else "12Mbps or 500kbps"
        raise TraceFormatError(f"{where}: the {what} is not a {what} with a unit (e.g. "
                               f"{example}), or is out of range") from None


def parse_steps_csv(lines: str | Iterable[tuple[int, str]], label: str) -> list[tuple[int, int]]:
    """``(time_ns, rate_bps)`` rows of a rate-steps CSV (see the module docs), from its text or
    its numbered lines (:func:`read_lines`); each line is one row (a quoted value may not span
    lines).

    Raises:
        TraceFormatError: a row that is not two values, an unknown header, a value without a
            unit and no header, a negative value, a first row not at 0, times that do not
            increase, or no rows.
    """
    time_scale: float | None = None
    rate_scale: float | None = None
    out: list[tuple[int, int]] = []
    for lineno, line in _numbered(lines):
        row = next(csv.reader([line]), [])
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        where = f"{label} line {lineno}"
        if len(row) != 2:
            raise TraceFormatError(f"{where}: expected two values time,rate, got {len(row)}")
        a, b = row[0].strip().lower(), row[1].strip().lower()
        if not out and time_scale is None and (a in TIME_COLUMNS or b in RATE_COLUMNS):
            if a not in TIME_COLUMNS or b not in RATE_COLUMNS:
                raise TraceFormatError(f"{where}: a header must name the columns one of "
                                       f"{'/'.join(TIME_COLUMNS)} and one of {'/'.join(RATE_COLUMNS)}")
            time_scale, rate_scale = TIME_COLUMNS[a], RATE_COLUMNS[b]
            continue
        t = _cell(row[0], time_scale, units.parse_time_ns, "time", where)
        r = _cell(row[1], rate_scale, units.parse_rate_bps, "rate", where)
        if not out and t != 0:
            raise TraceFormatError(f"{where}: the first step must be at time 0")
        if out and t <= out[-1][0]:
            raise TraceFormatError(f"{where}: step times must increase")
        out.append((t, r))
    if not out:
        raise TraceFormatError(f"{label}: no rate steps (rows time,rate)")
    return out


def mean_rate_bps(spec: TraceSpec) -> int:
    """The trace's mean rate over its length (one period), bits per second; the rate itself for a
    single step. As ``RateTrace::mean_rate_bps`` in ``crates/link``."""
    if spec.opportunities_ms is not None:
        length_ns = spec.opportunities_ms[-1] * 1_000_000
        bits = len(spec.opportunities_ms) * MTU_BYTES * 8
        return bits * 1_000_000_000 // length_ns if length_ns else 0
    steps = spec.steps or ()
    if len(steps) == 1:
        return steps[0][1]
    bit_ns = sum(r * (steps[i + 1][0] - t) for i, (t, r) in enumerate(steps[:-1]))
    return bit_ns // steps[-1][0]


def window_rate_range_bps(spec: TraceSpec, window_ns: int = 100_000_000) -> tuple[float, float]:
    """The 10th and 90th percentiles of the capacity over whole windows of ``window_ns`` (default
    100 ms) across one period of the trace, bits per second: a Mahimahi trace's opportunities
    counted per window (a trace shorter than one window gives its mean both ways); rate steps
    sampled at each window's start."""
    import numpy as np

    period_ns = (spec.steps[-1][0] if spec.steps else (spec.opportunities_ms or (0,))[-1] * 1_000_000)
    windows = int(period_ns // window_ns)
    if windows < 1:
        mean = float(mean_rate_bps(spec))
        return mean, mean
    if spec.steps:
        times = np.array([t for t, _ in spec.steps])
        rates = np.array([r for _, r in spec.steps], dtype=float)
        starts = np.arange(windows) * window_ns
        per_window = rates[np.searchsorted(times, starts, side="right") - 1]
    else:
        ms = np.asarray(spec.opportunities_ms, dtype=np.int64)
        counts = np.bincount(ms * 1_000_000 // window_ns, minlength=windows)[:windows]
        per_window = counts * MTU_BYTES * 8 * 1e9 / window_ns
    low, high = np.percentile(per_window, [10, 90])
    return float(low), float(high)


def describe_rate(rate_bps: int) -> str:
    """A link rate in words: ``"20 Mbps"``; a trace-driven one (:class:`TraceRate`) as ``"trace
    cellular.mahi, mean 5.03 Mbps (1.2–9.8 Mbps per 100 ms)"`` (10th–90th percentile,
    :func:`window_rate_range_bps`), so nobody takes the mean for a constant rate."""
    if not isinstance(rate_bps, TraceRate):
        return units.format_rate(rate_bps)
    low, high = (units.format_rate(v) for v in window_rate_range_bps(rate_bps.trace_spec))
    name = Path(rate_bps.source).name
    if low == high:
        return f"trace {name}, mean {units.format_rate(int(rate_bps))}"
    low_value, low_unit = low.rsplit(" ", 1)
    spread = f"{low_value}–{high}" if high.endswith(" " + low_unit) else f"{low}–{high}"
    return f"trace {name}, mean {units.format_rate(int(rate_bps))} ({spread} per 100 ms)"


def check(spec: TraceSpec, label: str) -> None:
    """What the engine refuses of a parsed trace, with the file's name.

    Raises:
        TraceFormatError: a looped Mahimahi trace whose last timestamp is 0, a looped steps
            trace with no capacity before its last row, or a trace with no capacity at all.
    """
    if spec.loop and spec.opportunities_ms is not None and spec.opportunities_ms[-1] == 0:
        raise TraceFormatError(f"{label}: a looped trace needs a last timestamp after 0 ms (it is "
                               "the period); give loop = false to play it once")
    if spec.loop and spec.steps is not None and len(spec.steps) > 1 and mean_rate_bps(spec) == 0:
        raise TraceFormatError(f"{label}: a looped trace needs a positive rate before its last row")
    if mean_rate_bps(spec) <= 0:
        raise TraceFormatError(f"{label}: the trace has no capacity (its mean rate is 0)")


_CACHE: dict[tuple[str, bool, int, int], TraceRate] = {}


def read_trace(path: str | Path, loop: bool = True) -> TraceRate:
    """The link rate that follows the trace in ``path`` (``.csv``: rate steps; else Mahimahi),
    read line by line within the memory budget (:func:`read_lines`).

    Raises:
        TraceFormatError: no such file; a directory, FIFO or device; too large for the memory
            budget; not text; or not a valid trace (the message names the file and the line's
            number).
    """
    p = Path(path)
    try:
        stat = p.stat()
        key = (str(p.resolve()), bool(loop), stat.st_mtime_ns, stat.st_size, max_lines())
    except OSError:
        raise TraceFormatError(f"{path}: no such trace file") from None
    if key in _CACHE:
        return _CACHE[key]
    lines = read_lines(p, str(path))
    if p.suffix.lower() == ".csv":
        spec = TraceSpec(opportunities_ms=None, steps=tuple(parse_steps_csv(lines, p.name)), loop=bool(loop))
    else:
        spec = TraceSpec(opportunities_ms=tuple(parse_mahimahi(lines, p.name)), steps=None, loop=bool(loop))
    check(spec, p.name)
    rate = TraceRate(mean_rate_bps(spec), spec, str(path))
    _CACHE[key] = rate
    return rate


def parse_link_rate(value: Any) -> int:
    """A link's ``rate``: a rate (``"100Mbps"``) or a trace table ``{ trace = "file", loop =
    true }`` (a :class:`TraceRate`).

    Raises:
        ValueError: not a rate, a table with other keys, or a trace that cannot be read.
    """
    if isinstance(value, TraceRate):
        return value
    if not isinstance(value, dict):
        return units.parse_rate_bps(value)
    unknown = sorted(set(value) - {"trace", "loop"})
    if unknown or not isinstance(value.get("trace"), str):
        raise ValueError("give a rate (\"100Mbps\") or a trace table { trace = \"file\", loop = true }"
                         + (f"; unknown key {unknown[0]!r}" if unknown else ""))
    loop = value.get("loop", True)
    if not isinstance(loop, bool):
        raise FieldError("loop", "must be true or false")
    try:
        return read_trace(value["trace"], loop)
    except TraceFormatError as err:
        raise FieldError("trace", str(err)) from None
