"""Features that separate congestion controllers, computed identically on a measured series and
on the simulator's replays (:func:`features`).

Each feature is a number with a scale (:data:`FEATURES`): the distance between two series counts
a difference of one scale as one unit. The choice follows the behaviours the census tools key on
(Gordon: Mishra et al., "The Great Internet TCP Congestion Control Census", SIGMETRICS 2019, §3:
the decrease factor and the window growth between losses; CCAnalyzer: Ware et al., "CCAnalyzer:
An Efficient and Nearly-Passive Congestion Control Classifier", SIGCOMM 2024; Nebby: Mishra et
al., SIGCOMM 2024: BBR's probing and the delay response):

- ``decrease_factor``: the mean of cwnd two RTTs after a loss event over cwnd just before it,
  over the events where it fell below :data:`NO_BACKOFF` (Reno 0.5, CUBIC 0.7, Scalable 0.875);
- ``no_backoff_share``: the share of loss events with no lasting backoff (BBR mostly: it does
  not respond to loss beyond one round of packet conservation);
- ``loss_floor``: the least cwnd in the 2 RTTs after a loss event over cwnd before it (Tahoe
  and timeouts fall to one packet, fast recovery stays near the decrease factor);
- ``loss_events_per_100rtt``: loss events (retransmissions within 2 RTTs are one event) per
  100 base RTTs after the start-up, log scale (delay-based flavors lose little or nothing);
- ``growth_mss_per_rtt``: cwnd growth between loss events (at least two stretches of 4 RTTs
  or more), MSS per RTT, log scale (Reno 1,
  Scalable/HighSpeed/CUBIC far above at a large window);
- ``cubic_fit``: how much better W(t) = a(t − K)³ + W₀ fits the growth between loss events than
  a straight line (1 − SSE_cubic / SSE_linear; RFC 9438 §4.2), with the fitted K kept as evidence;
- ``queue_delay``: median RTT inflation over the base RTT after the start-up, log scale (a
  delay-based plateau: Vegas, FAST and LEDBAT keep a few packets queued; loss-based flavors fill
  the buffer);
- ``cwnd_variation``: coefficient of variation of cwnd after the start-up, log scale (flat for
  BBR and a constant-rate sender, a sawtooth for AIMD);
- ``probe_dips_per_10s``: cwnd dips below 20 % of its median with no retransmission near them
  (BBR's ProbeRTT every 10 s);
- ``ramp_rtts``: base RTTs until the goodput first reaches 80 % of the bottleneck rate, log scale
  (slow start doubles per RTT; a constant-rate sender is at its rate at once);
- ``mark_decrease_factor`` (on a path that marks ECN only): cwnd's trough over its crest after
  the start-up (5th over 95th percentile). With marks instead of drops this is the response to
  CE: RFC 3168 §6.1.2's classic response halves once per window (Reno ≈ 0.5, CUBIC ≈ 0.7),
  DCTCP cuts by α/2 with α the marked share (RFC 8257 §3.3: ≈ 0.95), TCP Prague likewise;
- ``ce_per_100_packets`` (when the trace counts CE marks): log10(0.1 + CE-marked packets per
  100 sent): DCTCP and Prague keep the queue at the threshold and are marked often, a classic
  ECN flow backs off after the first marks of a window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ccarena.identify.path import PathEstimate, smoothed_rate_bps
from ccarena.identify.series import FlowSeries


@dataclass(frozen=True)
class Feature:
    """One feature: its name, the scale of a difference that counts as one unit, its weight in
    the distance, and how it is printed."""

    name: str
    scale: float
    weight: float
    label: str


FEATURES: tuple[Feature, ...] = (
    Feature("decrease_factor", 0.08, 2.0, "decrease factor"),
    Feature("no_backoff_share", 0.2, 1.0, "share of loss events with no backoff"),
    Feature("loss_floor", 0.1, 1.0, "least cwnd after a loss over cwnd before"),
    Feature("loss_events_per_100rtt", 0.35, 1.0, "log10(1 + loss events per 100 RTT)"),
    Feature("growth_mss_per_rtt", 0.25, 1.5, "log10 growth, MSS per RTT"),
    Feature("cubic_fit", 0.25, 1.0, "cubic-over-linear fit gain"),
    Feature("queue_delay", 0.3, 1.0, "log10(0.02 + RTT inflation / base RTT)"),
    Feature("cwnd_variation", 0.3, 1.0, "log10 cwnd coefficient of variation"),
    Feature("probe_dips_per_10s", 0.4, 1.0, "ProbeRTT-like dips per 10 s"),
    Feature("ramp_rtts", 0.5, 0.5, "log10(1 + RTTs to 80 % of the rate)"),
    Feature("mark_decrease_factor", 0.08, 2.0, "cwnd trough over crest under ECN marks"),
    Feature("ce_per_100_packets", 0.25, 1.0, "log10(0.1 + CE marks per 100 packets)"),
)
"""Every feature, in the order of the feature vector."""

NO_BACKOFF = 0.9
"""A loss event after which cwnd is back to ≥ this fraction within 2 RTTs had no backoff."""

MIN_LOSS_EVENTS = 3
"""Loss events needed before the loss-response features are measured (else NaN)."""

DIP_FRACTION = 0.2
"""A ProbeRTT-like dip takes cwnd below this fraction of its median (BBR v1 goes to 4 packets;
BBRv3's ProbeRTT at half the BDP is not one)."""

MISSING_PENALTY = 2.5
"""Distance units for a feature one series has and the other does not (e.g. loss events)."""


def _loss_events(series: FlowSeries) -> np.ndarray:
    """Sample indices of loss events: a rise of the retransmission counter (or, without one, a
    cwnd fall of over 20 % in one sample), rises within 2 smoothed RTTs merged into one."""
    retx = series.retransmits
    if np.isfinite(retx).sum() > len(retx) // 2:
        counter = np.fmax.accumulate(np.nan_to_num(retx, nan=0.0))
        rises = np.flatnonzero(np.diff(counter) > 0) + 1
    else:
        cwnd = series.cwnd_bytes
        rises = np.flatnonzero(cwnd[1:] < 0.8 * cwnd[:-1]) + 1
    events: list[int] = []
    rtt = np.nan_to_num(series.srtt_s, nan=np.nanmedian(series.srtt_s))
    for i in rises:
        if not events or series.time_s[i] - series.time_s[events[-1]] > 2 * rtt[events[-1]]:
            events.append(int(i))
    return np.array(events, dtype=int)


def _decrease_factors(series: FlowSeries, events: np.ndarray) -> np.ndarray:
    """cwnd 2 RTTs after each loss event over the most cwnd in the 2 RTTs before it; events
    followed by another within those 2 RTTs are skipped."""
    t, cwnd = series.time_s, series.cwnd_bytes
    rtt = np.nan_to_num(series.srtt_s, nan=np.nanmedian(series.srtt_s))
    out = []
    for k, i in enumerate(events):
        span = max(2 * rtt[i], 1.5 * series.interval_s)
        before = cwnd[(t >= t[i] - span) & (t < t[i])]
        end = t[events[k + 1]] if k + 1 < len(events) else math.inf
        after_at = t[i] + span
        if len(before) == 0 or after_at >= end or after_at > t[-1]:
            continue
        j = int(np.searchsorted(t, after_at))
        out.append(cwnd[min(j, len(t) - 1)] / max(before.max(), 1.0))
    return np.array(out)


def _loss_floors(series: FlowSeries, events: np.ndarray) -> np.ndarray:
    """The least cwnd in the 2 RTTs after each loss event over the most cwnd in the 2 RTTs
    before it (Tahoe and a timeout fall to one packet; fast recovery stays near the decrease)."""
    t, cwnd = series.time_s, series.cwnd_bytes
    rtt = np.nan_to_num(series.srtt_s, nan=np.nanmedian(series.srtt_s))
    out = []
    for i in events:
        span = max(2 * rtt[i], 1.5 * series.interval_s)
        before = cwnd[(t >= t[i] - span) & (t < t[i])]
        after = cwnd[(t >= t[i]) & (t <= t[i] + span)]
        if len(before) and len(after) and t[i] + span <= t[-1]:
            out.append(after.min() / max(before.max(), 1.0))
    return np.array(out)


def _epochs(series: FlowSeries, events: np.ndarray, start_s: float) -> list[tuple[int, int]]:
    """(first, last) sample index of each stretch between loss events after ``start_s`` that is
    at least 4 RTTs and 6 samples long, from 2 RTTs after the event that opens it."""
    t = series.time_s
    rtt = float(np.nanmedian(series.srtt_s))
    bounds = [int(np.searchsorted(t, start_s))] + [int(i) for i in events if t[i] > start_s] + [len(t)]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        a = int(np.searchsorted(t, t[a] + 2 * rtt)) if a > 0 else a
        if b - a >= 6 and t[b - 1] - t[a] >= 4 * rtt:
            out.append((a, b - 1))
    return out


def _cubic_fit(t: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """(1 − SSE of the best a(t − K)³ + W₀ over SSE of the best line, K in seconds from the
    stretch's start), K searched on a grid from −1 to +2 stretch lengths."""
    t = t - t[0]
    span = max(t[-1], 1e-9)
    line = np.polyfit(t, w, 1)
    sse_line = float(np.sum((np.polyval(line, t) - w) ** 2))
    if sse_line <= 1e-12:
        return 0.0, math.nan
    # For each K the best (a, W0) is a simple regression of w on x = (t − K)³: its residual is
    # Σ(w − w̄)² − (Σ(x − x̄)(w − w̄))² / Σ(x − x̄)², for the whole grid at once.
    grid = np.linspace(-span, 2 * span, 61)
    x = (t[None, :] - grid[:, None]) ** 3
    xc = x - x.mean(axis=1, keepdims=True)
    wc = w - w.mean()
    sxx = np.maximum(np.sum(xc * xc, axis=1), 1e-300)
    sse = np.sum(wc * wc) - np.sum(xc * wc, axis=1) ** 2 / sxx
    i = int(np.argmin(sse))
    best, best_k = float(max(sse[i], 0.0)), float(grid[i])
    return max(0.0, 1.0 - best / sse_line), best_k


def features(series: FlowSeries, path: PathEstimate) -> dict[str, float]:
    """The feature vector of ``series`` on ``path`` (names as in :data:`FEATURES`, plus
    ``decrease_spread`` (IQR), ``cubic_k_s``, ``loss_events`` and ``epochs`` as evidence); NaN
    where the series shows nothing to measure (no loss event, no growth stretch)."""
    t, cwnd = series.time_s, series.cwnd_bytes
    base = path.base_rtt_s
    mss = series.mss_bytes
    start = min(max(1.0, 20 * base), series.duration_s / 3)
    steady = t >= start
    steady_s = max(t[-1] - start, series.interval_s)
    events = _loss_events(series)
    out: dict[str, float] = {}

    factors = _decrease_factors(series, events)
    if len(factors) < MIN_LOSS_EVENTS:  # a start-up's one or two losses say little of the rest
        factors = factors[:0]
    backoffs = factors[factors < NO_BACKOFF]
    # Means, not medians: a flavor whose events mix two responses (Reno without SACK halves once
    # or twice) has a bimodal factor whose median flips with the smallest change of path.
    out["decrease_factor"] = float(np.mean(backoffs)) if len(backoffs) else math.nan
    out["decrease_spread"] = (float(np.subtract(*np.percentile(backoffs, [75, 25])))
                              if len(backoffs) else math.nan)
    out["no_backoff_share"] = float(np.mean(factors >= NO_BACKOFF)) if len(factors) else math.nan
    floors = _loss_floors(series, events)
    floors = floors if len(floors) >= MIN_LOSS_EVENTS else floors[:0]
    out["loss_floor"] = float(np.mean(floors)) if len(floors) else math.nan
    steady_events = int(np.sum(t[events] >= start)) if len(events) else 0
    out["loss_events"] = float(len(events))
    out["loss_events_per_100rtt"] = math.log10(1 + 100 * steady_events * base / steady_s)

    slopes, gains, ks = [], [], []
    for a, b in _epochs(series, events, start):
        seg_t, seg_w = t[a:b + 1], cwnd[a:b + 1] / mss
        rtt = float(np.nanmean(series.srtt_s[a:b + 1]))
        slope = float(np.polyfit(seg_t, seg_w, 1)[0]) * rtt
        slopes.append(slope)
        gain, k = _cubic_fit(seg_t, seg_w)
        gains.append(gain)
        ks.append(k)
    out["epochs"] = float(len(slopes))
    if len(slopes) < 2:  # one stretch is too little to tell a shape (and often a start-up tail)
        slopes, gains, ks = [], [], []
    out["growth_mss_per_rtt"] = (math.log10(max(float(np.median(slopes)), 0.05)) if slopes
                                 else math.nan)
    out["cubic_fit"] = float(np.mean(gains)) if gains else math.nan
    out["cubic_k_s"] = float(np.nanmedian(ks)) if ks and np.isfinite(ks).any() else math.nan

    inflation = (series.srtt_s[steady] - base) / base
    inflation = inflation[np.isfinite(inflation)]
    out["queue_delay"] = (math.log10(0.02 + max(float(np.median(inflation)), 0.0))
                          if len(inflation) else math.nan)
    steady_cwnd = cwnd[steady]
    cv = float(np.std(steady_cwnd) / max(np.mean(steady_cwnd), 1.0)) if len(steady_cwnd) else math.nan
    out["cwnd_variation"] = math.log10(max(cv, 1e-3)) if math.isfinite(cv) else math.nan

    median_cwnd = float(np.median(steady_cwnd)) if len(steady_cwnd) else math.nan
    dips = 0
    low = np.flatnonzero(steady & (cwnd < DIP_FRACTION * median_cwnd))
    last = -math.inf
    counter = np.fmax.accumulate(np.nan_to_num(series.retransmits, nan=0.0))
    loss_times = t[np.flatnonzero(np.diff(counter) > 0) + 1]
    for i in low:
        # A timeout also empties the window: a dip within 1 s after a retransmission is a loss
        # response, not a probe.
        gap = t[i] - loss_times
        near_loss = bool(len(loss_times)) and bool(np.any((gap > -0.3) & (gap < 1.0)))
        if t[i] - last > 1.0 and not near_loss:
            dips += 1
        last = t[i] if not near_loss else last
    out["probe_dips_per_10s"] = 10 * dips / steady_s

    rate = smoothed_rate_bps(series, max(2 * base, 2 * series.interval_s))
    reached = np.flatnonzero(np.nan_to_num(rate, nan=0.0) >= 0.8 * path.rate_bps)
    ramp = (t[reached[0]] / base) if len(reached) else series.duration_s / base
    out["ramp_rtts"] = math.log10(1 + ramp)

    # ECN response: measured only where the trace's path marks (both sides then have it).
    if path.marks and len(steady_cwnd):
        trough, crest = np.percentile(steady_cwnd, [5, 95])
        out["mark_decrease_factor"] = float(trough / max(crest, 1.0))
    else:
        out["mark_decrease_factor"] = math.nan
    share = series.ce_packets / series.packets_sent if series.packets_sent > 0 else math.nan
    out["ce_per_100_packets"] = (math.log10(0.1 + 100 * share)
                                 if math.isfinite(path.ce_fraction) and math.isfinite(share) else math.nan)
    return out


def distance(measured: dict[str, float], simulated: dict[str, float]) -> float:
    """Weighted RMS of the per-feature differences in units of each feature's scale (each
    clipped at 4; :data:`MISSING_PENALTY` where one side has the feature and the other not;
    features neither has are left out). 0 for equal vectors."""
    total = weights = 0.0
    for feature in FEATURES:
        a, b = measured.get(feature.name, math.nan), simulated.get(feature.name, math.nan)
        if math.isnan(a) and math.isnan(b):
            continue
        z = MISSING_PENALTY if math.isnan(a) or math.isnan(b) else min(abs(a - b) / feature.scale, 4.0)
        total += feature.weight * z * z
        weights += feature.weight
    return math.sqrt(total / weights) if weights else math.inf
