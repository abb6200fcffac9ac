"""One stream's two halves on one time line: the interval reports of the side that wrote an iperf3
file ("own") and of its peer (the server's output a client fetched with ``--get-server-output``).

The two sides report on their own grids: a server started without ``-i`` reports every second
whatever the client's ``-i``, and each side usually adds a short interval at the end (the data
still arriving after the other side stopped). So the peer's reports are aligned by time, not by
count:

- a byte count (``sent_bytes``, ``delivered_bytes``) is cumulative, taken as growing linearly inside
  each of the peer's intervals (the finest assumption the reports allow); the peer's rate over one of
  the own intervals [a, b] is then 8 · (D(b) − D(a)) / (b − a) and its cumulative value D(b). With
  the same grid on both sides this is the peer's own figure; with a coarser peer grid it is the
  peer's rate over the interval that holds [a, b], split in proportion to overlap;
- a reading taken at the end of an interval (``cwnd_bytes``, ``srtt_s``, ``rttvar_s``,
  ``jitter_s``, the cumulative ``retransmits``) is the reading of the peer interval that overlaps
  [a, b] the most (of a coarser peer: the interval that holds [a, b]), and among equals the one
  ending closest to b (of a finer peer: its last reading inside [a, b]);
- when the peer is the receiving half, its intervals that end after the own last one (by more
  than :data:`TAIL_S`) become extra samples holding the peer's columns only, so no byte it
  reported delivered is dropped.

Both sides count time from their own start of the test; the two starts differ by about one
message's transit (well under a millisecond on a LAN), which is left uncorrected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

TAIL_S = 1e-3
"""A peer interval ending at most this much after the own last one is counted in that last sample
instead of becoming a sample of its own (a sliver of time would give a meaningless rate)."""

BYTE_COLUMNS = {"goodput_bps": "delivered_bytes", "throughput_bps": "sent_bytes"}
"""Rate column → the cumulative byte column it is derived from."""

READING_COLUMNS = ("cwnd_bytes", "srtt_s", "rttvar_s", "jitter_s", "retransmits")
"""Columns taken as they are from one peer interval (readings and cumulative counts)."""


def _knots(spans: Sequence[tuple[float, float]], cumulative: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The piecewise-linear cumulative curve through the peer's intervals: x = times (the first
    start, then each end), y = the count by then. An empty (zero-length) interval adds its count
    to the previous knot."""
    xs, ys = [spans[0][0]], [0.0]
    for (_, end), total in zip(spans, cumulative):
        if end > xs[-1]:
            xs.append(end)
            ys.append(total)
        else:
            ys[-1] = total
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def _closest(peer_spans: np.ndarray, start: float, end: float) -> int | None:
    """Index of the peer interval, among the two around ``end``, that overlaps [start, end] the
    most (a coarser peer's interval holding it; the same interval of an equal grid a fraction
    of a millisecond off), the one ending closest to ``end`` among equals (a finer peer's last
    one inside it); None when none overlaps."""
    j = int(np.searchsorted(peer_spans[:, 1], end))
    best: tuple[float, float, int] | None = None
    for k in (j - 1, j):
        if 0 <= k < len(peer_spans):
            overlap = min(end, peer_spans[k, 1]) - max(start, peer_spans[k, 0])
            if overlap > 0:
                key = (-round(float(overlap), 9), abs(float(peer_spans[k, 1]) - end), k)
                best = key if best is None or key < best else best
    return best[2] if best is not None else None


def align(own_spans: Sequence[tuple[float, float]], peer_spans: Sequence[tuple[float, float]],
          peer_samples: Sequence[dict[str, Any]], tail: bool = True
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The peer's columns on the own intervals, plus the peer's trailing samples.

    Args:
        own_spans: the own side's intervals, (start, end) in seconds, in time order, contiguous.
        peer_spans: the peer's intervals, likewise.
        peer_samples: one dict per peer interval with the peer's sample columns (rates, their
            cumulative byte columns, readings; see :data:`BYTE_COLUMNS`, :data:`READING_COLUMNS`).
        tail: whether the peer's intervals after the own last one become samples (the receiving
            half's: the data still arriving; a sending peer's are left out, its bytes having
            been reported by the receiver).

    Returns:
        (``columns``, ``trailing``): ``columns[k]`` holds the peer's columns over own interval k
        (a rate over the part of the interval the peer reported on, and its cumulative bytes, as
        described in the module doc: None where the peer reported on less than half of it;
        readings None where no peer interval overlaps); ``trailing`` holds one sample (with
        ``time_s``) per peer interval ending more than :data:`TAIL_S` after the last own one
        (when ``tail``).
    """
    if not own_spans or not peer_spans:
        return [{} for _ in own_spans], []
    peer = np.asarray(peer_spans, dtype=float)
    curves = {}
    for rate, size in BYTE_COLUMNS.items():
        values = [s.get(size) for s in peer_samples]
        if any(v is not None for v in values):
            curves[rate] = (size, _knots(peer_spans, [float(v or 0.0) for v in values]))
    readings = [c for c in READING_COLUMNS if any(s.get(c) is not None for s in peer_samples)]

    last_own = own_spans[-1][1]
    peer_end = float(peer[-1, 1])
    spans = list(own_spans)
    if last_own < peer_end <= last_own + TAIL_S:
        spans[-1] = (spans[-1][0], peer_end)  # the sliver counts in the last own sample
    tail_ends = [float(e) for e in peer[:, 1] if e > last_own + TAIL_S] if tail else []
    tail_spans = list(zip([last_own] + tail_ends[:-1], tail_ends))

    def columns(start: float, end: float) -> dict[str, Any]:
        row: dict[str, Any] = {}
        # Over the part of [start, end] the peer reported on, when that is most of it; the rate
        # of time the peer did not report on is unknown.
        lo, hi = max(start, float(peer[0, 0])), min(end, peer_end)
        for rate, (size, (xs, ys)) in curves.items():
            if hi > lo and hi - lo >= 0.5 * (end - start):
                before, after = np.interp([lo, hi], xs, ys)
                row[size] = float(after)
                row[rate] = 8.0 * float(after - before) / (hi - lo)
            else:
                row[size] = row[rate] = None
        k = _closest(peer, start, end)
        for c in readings:
            row[c] = peer_samples[k].get(c) if k is not None else None
        return row

    aligned = [columns(a, b) for a, b in spans]
    trailing = [dict(columns(a, b), time_s=b) for a, b in tail_spans]
    return aligned, trailing
