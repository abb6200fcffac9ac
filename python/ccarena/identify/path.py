"""The path a trace's flow crossed, estimated from its own series (:class:`PathEstimate`).

As Gordon (Mishra et al., "The Great Internet TCP Congestion Control Census", SIGMETRICS 2019)
and Nebby (Mishra et al., "Keeping an Eye on Congestion Control in the Wild with Nebby",
SIGCOMM 2024) control the path to see a controller's
response, ccarena instead measures the path the trace saw and replays it on the simulator:

- base RTT = the least smoothed RTT;
- bottleneck rate = the 95th percentile of the goodput averaged over max(5 base RTTs, 200 ms,
  2 samples) (a flow that fills its path delivers at the bottleneck rate while the queue is
  non-empty);
- buffer = (99.5th percentile RTT − base RTT) × rate, at least 2 MSS (a drop-tail buffer is full
  when the RTT peaks);
- random loss = retransmissions that came while the queue was under a third of its peak
  (overflow cannot explain them) per packet delivered, at most 5 %;
- ECN marking: when the trace shows CE marks (or, from a capture at the sender, ECN-Echo ACKs),
  the bottleneck marks rather than drops: the peak queue measured as above is its marking
  threshold K (RFC 8257 §3.1's step marking; an ECN flow's queue turns at K, whether it cuts by
  half or by DCTCP's α/2), the drop limit it never reached is taken as
  :data:`MARKING_LIMIT_FACTOR` × (K + BDP), and the share of data packets marked CE is kept for the
  features.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ccarena.errors import UserError
from ccarena.identify.series import FlowSeries

MARKING_LIMIT_FACTOR = 2
"""On a marking path, the drop limit taken, in multiples of the marking threshold K plus the BDP
(an ECN flow that responds to marks never reaches it, so the trace does not show it; a slow
start overshoots K by up to a window in the RTT before its first cut)."""

WIRE_OVERHEAD_BYTES = 66
"""Ethernet, IP and TCP headers (with timestamps) on top of the MSS, bytes."""


@dataclass(frozen=True)
class PathEstimate:
    """A single-bottleneck path.

    Attributes:
        base_rtt_s: propagation RTT, seconds.
        rate_bps: bottleneck rate, bit/s.
        buffer_bytes: bottleneck buffer, bytes.
        loss: random loss probability per packet (0–0.05).
        duration_s: the trace's length, seconds; interval_s: its sample spacing, seconds.
        mss_bytes: the flow's MSS, bytes.
        ecn_threshold_bytes: the bottleneck's ECN marking threshold K, bytes (NaN: it drops
            and does not mark).
        ce_fraction: the share of the flow's data packets that arrived CE-marked (NaN when the
            trace does not count CE marks, e.g. a capture at the sender).
    """

    base_rtt_s: float
    rate_bps: float
    buffer_bytes: float
    loss: float
    duration_s: float
    interval_s: float
    mss_bytes: float
    ecn_threshold_bytes: float = math.nan
    ce_fraction: float = math.nan

    @property
    def marks(self) -> bool:
        """True when the bottleneck marks ECN-capable packets (a marking threshold is known)."""
        return math.isfinite(self.ecn_threshold_bytes)

    @property
    def threshold_packets(self) -> int:
        """The marking threshold K in full-size packets (at least 1; 0 when not marking)."""
        if not self.marks:
            return 0
        return max(1, round(self.ecn_threshold_bytes / (self.mss_bytes + WIRE_OVERHEAD_BYTES)))

    @property
    def bdp_bytes(self) -> float:
        """Bandwidth-delay product, bytes."""
        return self.rate_bps * self.base_rtt_s / 8

    @property
    def buffer_packets(self) -> int:
        """The buffer in full-size packets (at least 2)."""
        return max(2, round(self.buffer_bytes / (self.mss_bytes + WIRE_OVERHEAD_BYTES)))

    def as_dict(self) -> dict[str, float]:
        """The estimate as JSON-ready numbers, plus ``buffer_bdp``."""
        out = {k: float(v) for k, v in asdict(self).items()}
        out["buffer_bdp"] = self.buffer_bytes / max(self.bdp_bytes, 1.0)
        return out

    def describe(self) -> str:
        """One line: ``48.7 Mbit/s, base RTT 40.1 ms, buffer 0.98 BDP, loss 0.10 %, 18.0 s``
        (on a marking path ``ECN marks at 0.31 BDP`` in place of the buffer)."""
        bdp = max(self.bdp_bytes, 1.0)
        queue = (f"ECN marks at {self.ecn_threshold_bytes / bdp:.2f} BDP" if self.marks
                 else f"buffer {self.buffer_bytes / bdp:.2f} BDP")
        return (f"{self.rate_bps / 1e6:.1f} Mbit/s, base RTT {self.base_rtt_s * 1e3:.1f} ms, "
                f"{queue}, loss {self.loss * 100:.2f} %, {self.duration_s:.1f} s")


def smoothed_rate_bps(series: FlowSeries, window_s: float) -> np.ndarray:
    """Goodput averaged over a trailing window of ``window_s`` seconds (NaN samples skipped),
    bit/s, one value per sample."""
    spacing = series.interval_s
    n = max(1, int(round(window_s / spacing))) if spacing > 0 else 1
    goodput = np.nan_to_num(series.goodput_bps, nan=0.0)
    kernel = np.ones(n) / n
    out = np.convolve(goodput, kernel, mode="full")[: len(goodput)]
    out[: n - 1] = np.nan  # a partial window underestimates
    return out


def estimate_path(series: FlowSeries) -> PathEstimate:
    """The path ``series`` crossed (see the module's docstring for the method).

    Raises:
        UserError: the series has no RTT or no goodput samples.
    """
    rtt = series.srtt_s[np.isfinite(series.srtt_s) & (series.srtt_s > 0)]
    if len(rtt) < 10:
        raise UserError(f"TRACE: {series.source or 'the flow'} has no RTT samples; identify needs "
                        "the flow's smoothed RTT (srtt) over time")
    base = float(rtt.min())
    window = max(5 * base, 0.2, 2 * series.interval_s)
    rate_series = smoothed_rate_bps(series, window)
    finite = rate_series[np.isfinite(rate_series)]
    if len(finite) == 0 or finite.max() <= 0:
        raise UserError(f"TRACE: {series.source or 'the flow'} delivered nothing; identify needs a "
                        "flow that sends for several RTTs")
    rate = float(np.percentile(finite, 95))
    peak_queue_s = max(float(np.percentile(rtt, 99.5)) - base, 0.0)
    buffer = max(peak_queue_s * rate / 8, 2 * series.mss_bytes)
    loss = 0.0
    retx = series.retransmits
    if np.isfinite(retx).any():
        filled = np.where(np.isfinite(retx), retx, np.nan)
        filled = np.fmax.accumulate(np.nan_to_num(filled, nan=0.0))
        new = np.diff(filled, prepend=filled[0])
        queue = np.nan_to_num(series.srtt_s - base, nan=0.0)
        random_losses = float(new[queue < peak_queue_s / 3].sum())
        packets = float(np.nansum(series.goodput_bps * np.gradient(series.time_s))) / 8 / series.mss_bytes
        if packets > 0:
            loss = min(random_losses / packets, 0.05)
    threshold = ce_fraction = math.nan
    if series.ce_packets > 0 or series.ecn_echo_acks > 0:  # NaN compares False: no ECN info
        threshold, buffer = buffer, MARKING_LIMIT_FACTOR * (buffer + rate * base / 8)
        if series.ce_packets > 0 and series.packets_sent > 0:
            ce_fraction = min(float(series.ce_packets / series.packets_sent), 1.0)
    return PathEstimate(base_rtt_s=base, rate_bps=rate, buffer_bytes=buffer, loss=loss,
                        duration_s=series.duration_s, interval_s=series.interval_s,
                        mss_bytes=series.mss_bytes, ecn_threshold_bytes=threshold,
                        ce_fraction=ce_fraction)


def is_sensible(path: PathEstimate) -> bool:
    """True when the estimate can be simulated (positive, finite rate and RTT)."""
    return all(math.isfinite(v) and v > 0 for v in (path.base_rtt_s, path.rate_bps))
