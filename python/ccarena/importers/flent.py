"""Flent's data files (``.flent.gz``: gzip'd JSON, file format version ≤ 3) as an
:class:`ImportedRun`.

The format (Flent's documentation, "The Data File Format"): ``x_values`` (seconds from the start
of the test), ``results`` (series name → one value per x value, null where there is none),
``metadata`` (``NAME``, ``TITLE``, ``TIME``, ``LENGTH``, ``STEP_SIZE``, ``HOSTS``, … and
``SERIES_META``: per series its ``UNITS`` and what the runner reported, e.g. ``CONG_CONTROL``,
``MEAN_VALUE``, ``TCP_MSS``), and ``raw_values`` (series name → the tool's own measurements,
``{"t": UNIX time, "val": value}``).

Mapping: a series in bits/s (``UNITS`` ``bits/s``, ``Kbits/s``, ``Mbits/s`` or ``Gbits/s``; a
series without units named ``TCP …``/``UDP …`` is in Mbits/s, Flent's unit for throughput) is a
flow whose values are its ``goodput_bps`` samples; ``goodput_mean_bps`` is the runner's
``MEAN_VALUE`` where given, else the mean of the samples. A series in ms (or named ``Ping (ms)
…``) is a latency probe: a ``ping`` flow whose values are ``srtt_s`` samples, with RTT min, mean
and percentiles over its raw values (else its samples). Series that combine others (``… sum``,
``… avg``, ``… totals``) and series in other units are not flows (listed in run.json). The flavor
is the series' ``CONG_CONTROL``, else ``unknown``; the direction is ``upload`` or ``download``
where the series name says so.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ccarena.importers.bounded_read import read_json
from ccarena.importers.model import ImportedFlow, ImportedRun, ImportProblem
from ccarena.importers.shape import NUMBER, Arr, Map, check, key_path, nullable

FORMAT_VERSION = 3
"""The newest Flent data file format version this reader knows."""

RATE_UNITS = {"bits/s": 1.0, "kbits/s": 1e3, "mbits/s": 1e6, "gbits/s": 1e9}
"""Flent's throughput units → bits per second."""

AGGREGATE_SUFFIXES = (" sum", " avg", " totals", " total")

_VALUES = Arr(nullable(NUMBER))
"""``x_values`` and each series of ``results``: numbers, null where there is none (the metadata
and raw values are read leniently: a value of another kind there is left out)."""


def load(path: Path) -> tuple[dict[str, Any], str]:
    """The Flent document of ``path`` (gzip'd JSON, or plain JSON) and the file's SHA-256.

    Raises:
        ImportProblem: unreadable or too large, truncated or corrupt gzip or a gzip bomb
            (:mod:`ccarena.importers.bounded_read`), bad JSON, iperf3 output, a newer format, a
            document without ``x_values``/``results``, or values that are not numbers (naming
            the key path).
    """
    doc, sha = read_json(path)
    if not isinstance(doc, dict):
        raise ImportProblem("is not a Flent data file (the top level is not a JSON object)")
    if "intervals" in doc and "start" in doc and "end" in doc:
        raise ImportProblem("is iperf3 output, not a Flent data file; use `ccarena import iperf3`")
    if "error" in doc and "results" not in doc:
        raise ImportProblem("is iperf3's error output, not a Flent data file")
    missing = [k for k in ("x_values", "results", "metadata") if k not in doc]
    if missing:
        raise ImportProblem("is not a Flent data file (no " + ", ".join(repr(k) for k in missing) + ")")
    version = doc.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ImportProblem(f"version: expected a whole number (Flent's data format version, 1 to "
                            f"{FORMAT_VERSION}), got {'a string' if isinstance(version, str) else 'another value'}")
    if version > FORMAT_VERSION:
        raise ImportProblem(f"has Flent data format version {version}; this reader knows "
                            f"versions 1 to {FORMAT_VERSION}")
    x, results = doc["x_values"], doc["results"]
    if not isinstance(x, list) or not isinstance(results, dict) or not isinstance(doc["metadata"], dict):
        raise ImportProblem("is not a Flent data file (x_values must be a list, results and "
                            "metadata objects)")
    check(x, _VALUES, "x_values")
    check(results, Map(_VALUES), "results")
    if not x:
        raise ImportProblem("has no data points (x_values is empty)")
    for series, values in results.items():
        if len(values) != len(x):
            raise ImportProblem(f"{key_path('results', series)} has {len(values)} values for "
                                f"{len(x)} x values")
    return doc, sha


def _units(name: str, meta: dict[str, Any]) -> str | None:
    units = meta.get("UNITS")
    if isinstance(units, str) and units:
        return units
    if name.startswith("Ping (ms)"):
        return "ms"
    if name.split(" ")[0] in ("TCP", "UDP"):
        return "Mbits/s"
    return None


def _direction(name: str) -> str | None:
    lower = name.lower()
    if "upload" in lower:
        return "upload"
    if "download" in lower:
        return "download"
    return None


def _number(v: Any) -> float | None:
    """``v`` as a finite float, else None (also for an int beyond a float's range)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        value = float(v)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def parse(path: Path) -> ImportedRun:
    """One Flent data file as an :class:`ImportedRun` (see the module doc for the mapping).

    Raises:
        ImportProblem: the file is not a readable Flent data file (:func:`load`), or it has no
            throughput or ping series.
    """
    doc, sha = load(path)
    meta = doc["metadata"]
    series_meta = meta.get("SERIES_META") if isinstance(meta.get("SERIES_META"), dict) else {}
    raw = doc.get("raw_values") if isinstance(doc.get("raw_values"), dict) else {}
    x = [_number(v) for v in doc["x_values"]]
    flows: list[ImportedFlow] = []
    skipped: list[str] = []
    for name, values in doc["results"].items():
        smeta = series_meta.get(name) if isinstance(series_meta.get(name), dict) else {}
        units = _units(name, smeta)
        points = [(t, _number(v)) for t, v in zip(x, values) if t is not None and _number(v) is not None]
        if any(name.lower().endswith(s) for s in AGGREGATE_SUFFIXES) or not points:
            skipped.append(name)
            continue
        scale = RATE_UNITS.get((units or "").lower())
        if scale is not None:
            flows.append(_data_flow(name, smeta, points, scale))
        elif (units or "").lower() == "ms":
            flows.append(_ping_flow(name, points, raw.get(name)))
        else:
            skipped.append(name)
    if not flows:
        names = [json.dumps(name[:40]) for name in list(doc["results"])[:5]]  # the file's text, escaped
        more = f" and {len(doc['results']) - 5} more" if len(doc["results"]) > 5 else ""
        raise ImportProblem("has no throughput or ping series to import (series: "
                            + (", ".join(names) or "none") + more + ")")
    steps = np.diff([t for t in x if t is not None])
    interval = _number(meta.get("STEP_SIZE")) or (float(np.median(steps)) if len(steps) else 1.0)
    info = {"tool": "flent", "version": meta.get("FLENT_VERSION"), "format_version": doc.get("version", 1),
            "test": meta.get("NAME"), "title": meta.get("TITLE"), "time": meta.get("TIME"),
            "hosts": meta.get("HOSTS"), "local_host": meta.get("LOCAL_HOST"),
            "length_s": meta.get("LENGTH"), "step_size_s": meta.get("STEP_SIZE"),
            "note": meta.get("NOTE"), "series_not_imported": skipped}
    return ImportedRun(tool="flent", path=path, sha256=sha, flows=flows,
                       duration_s=max(f.end_s for f in flows), interval_s=float(interval), info=info)


def _data_flow(name: str, smeta: dict[str, Any], points: list[tuple[float, float]],
               scale: float) -> ImportedFlow:
    """A throughput series as a flow with goodput samples (bits/s)."""
    rates = [v * scale for _, v in points]
    mean = _number(smeta.get("MEAN_VALUE"))
    totals: dict[str, float] = {"goodput_mean_bps": mean * scale if mean is not None else float(np.mean(rates))}
    for key, column in (("BYTES_RECVD", "bytes_delivered"), ("BYTES_SENT", "bytes_sent"),
                        ("TCP_RETRANSMIT", "packets_retransmitted"), ("TCP_MSS", "mss_bytes")):
        value = _number(_maybe_int(smeta.get(key)))
        if value is not None and value >= 0:
            totals[column] = value
    flavor = smeta.get("CONG_CONTROL")
    kind = "udp" if name.startswith("UDP") else "tcp"
    samples = [{"time_s": t, "goodput_bps": r} for (t, _), r in zip(points, rates)]
    return ImportedFlow(name=name, kind=kind, flavor=str(flavor) if flavor else ("udp" if kind == "udp" else "unknown"),
                        direction=_direction(name), start_s=_start(points), end_s=points[-1][0],
                        totals=totals, samples=samples)


def _ping_flow(name: str, points: list[tuple[float, float]], raw: Any) -> ImportedFlow:
    """A latency series (ms) as a probe flow with RTT samples (s) and RTT statistics."""
    values = [_number(r.get("val")) for r in raw if isinstance(r, dict)] if isinstance(raw, list) else []
    values = [v for v in values if v is not None] or [v for _, v in points]
    rtt = np.asarray(values, dtype=float) / 1e3
    totals = {"rtt_min_s": float(rtt.min()), "rtt_mean_s": float(rtt.mean()),
              "rtt_p50_s": float(np.percentile(rtt, 50)), "rtt_p95_s": float(np.percentile(rtt, 95)),
              "rtt_p99_s": float(np.percentile(rtt, 99)), "rtt_samples": float(rtt.size)}
    samples = [{"time_s": t, "srtt_s": v / 1e3} for t, v in points]
    return ImportedFlow(name=name, kind="ping", flavor="ping", direction=None,
                        start_s=_start(points), end_s=points[-1][0], totals=totals, samples=samples)


def _start(points: list[tuple[float, float]]) -> float:
    """The start of a series: one step before its first point (a sample closes its interval)."""
    if len(points) > 1:
        return max(points[0][0] - (points[1][0] - points[0][0]), 0.0)
    return 0.0


def _maybe_int(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return v


def about(run: ImportedRun) -> str:
    """A short description of an imported Flent run (for experiment.json's text)."""
    bits = [str(run.info.get(k)) for k in ("test", "title", "time") if run.info.get(k)]
    hosts = run.info.get("hosts")
    if hosts:
        bits.append("to " + ", ".join(map(str, hosts if isinstance(hosts, list) else [hosts])))
    return ": flent " + ", ".join(bits)
