"""One imported run as parsed from a measurement file, before it becomes the store's tables."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ImportProblem(Exception):
    """A file that cannot be imported; the message is one line saying what is wrong with it
    (the caller prefixes the file's name)."""


@dataclass
class ImportedFlow:
    """One flow (an iperf3 stream, a Flent data series) of an imported run.

    Attributes:
        name: the flow's name (unique in the run).
        kind: ``tcp``, ``udp`` or ``ping`` (a latency probe, no payload of its own).
        flavor: the congestion controller the file names, ``unknown`` when it names none,
            ``udp`` for UDP streams, ``ping`` for probes.
        direction: ``upload`` (client → server), ``download`` (server → client), or None.
        start_s, end_s: the flow's active interval, seconds from the start of the test.
        totals: the flow's totals as the file gives them, in the store's columns and units
            (``bytes_sent``, ``bytes_delivered``, ``packets_sent``, ``packets_received``,
            ``packets_lost``, ``packets_retransmitted``, ``goodput_mean_bps``,
            ``throughput_mean_bps``, ``rtt_min_s`` … ``rtt_p99_s``, ``jitter_s``); absent = unknown.
        samples: one dict per sample instant with ``time_s`` (end of the interval, seconds from
            the start of the test) and the store's sample columns the file has (``goodput_bps``,
            ``throughput_bps``, ``delivered_bytes``, ``sent_bytes`` (cumulative), ``cwnd_bytes``,
            ``srtt_s``, ``rttvar_s``, ``retransmits`` (cumulative), ``jitter_s``).
        expected: metrics (a sample column or a flow column) this kind of file should give for
            this flow beyond goodput, which every data flow should have; an import warns when one
            is left empty (:mod:`ccarena.importers.checks`).
        missing: metric → why the file cannot give it (one clause, with the fix when there is
            one), for the warning when it is left empty.
    """

    name: str
    kind: str
    flavor: str
    direction: str | None
    start_s: float
    end_s: float
    totals: dict[str, float] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=list)
    expected: tuple[str, ...] = ()
    missing: dict[str, str] = field(default_factory=dict)

    def total(self, key: str) -> float:
        """A total, NaN when the file does not give it."""
        value = self.totals.get(key)
        return math.nan if value is None else float(value)


@dataclass
class ImportedRun:
    """One measurement file, parsed.

    Attributes:
        tool: ``iperf3`` or ``flent`` (stored as the run's ``backend``).
        path: the file it came from; sha256: its content's hash.
        flows: its flows, in the file's order.
        duration_s: the test's length (seconds); interval_s: its reporting interval (seconds).
        info: what the file says about the test (tool version, time, host, parameters), kept in
            run.json under ``source``.
        summary: run-level numbers the file gives (added to the run's summary row).
    """

    tool: str
    path: Path
    sha256: str
    flows: list[ImportedFlow]
    duration_s: float
    interval_s: float
    info: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, float] = field(default_factory=dict)
