//! What BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00) and BBRv3
//! (draft-ietf-ccwg-bbr) share: the windowed max filter over rounds, the minimum pipe window, full-pipe thresholds, the send quantum's bounds, and the pacing and cwnd
//! steps both drafts write the same way. `bbr.rs` and `bbr3.rs` call these instead of each keeping
//! a copy; where the drafts differ (gains, quantum rules, model bounds) each keeps its own code.

use crate::{CwndState, Duration, RateSample, SimTime};

/// Smallest cwnd, packets (draft-00 §4.2.3.3 `BBRMinPipeCwnd`, draft-ietf-ccwg-bbr §2.8
/// `BBR.MinPipeCwnd`: 4 SMSS, which keeps a delayed-ACK receiver pipelining); also the PROBE_RTT
/// window of v1.
pub(crate) const MIN_PIPE_CWND_PACKETS: u64 = 4;

/// STARTUP's pipe is full when the bandwidth grows by less than this factor in a round ...
/// (draft-00 §4.3.2.2, draft-ietf-ccwg-bbr §5.3.1.2: 25%) ...
pub(crate) const FULL_BW_THRESH: f64 = 1.25;

/// ... for this many consecutive non-app-limited rounds (both drafts: 3).
pub(crate) const FULL_BW_COUNT: u32 = 3;

/// Send quantum at high rates: this much time of data at the pacing rate (both drafts: 1 ms) ...
pub(crate) const SEND_QUANTUM_INTERVAL_S: f64 = 0.001;

/// ... capped at 64 KB (both drafts).
pub(crate) const SEND_QUANTUM_MAX_BYTES: f64 = 65536.0;

/// Pacing margin, percent: both BBRs pace at `(100 − margin)%` of `gain · bw`, so that the
/// long-run sending rate sits slightly under the bandwidth estimate and the bottleneck queue
/// drains (draft-ietf-ccwg-bbr §2.5 `BBR.PacingMarginPercent` = 1, used in §5.6.2
/// `BBRSetPacingRateWithGain`; Linux's BBR v1, `tcp_bbr.c`, applies the same 1% to every rate it
/// sets from the bandwidth estimate). Draft-00 §4.2.1 paces at exactly `gain · BtlBw`; the margin
/// matters for v1 against loss-based flows: a flow paced at its windowed-max bandwidth with no
/// margin keeps the queue that much fuller and leaves CUBIC or Reno a smaller share.
pub(crate) const PACING_MARGIN_PERCENT: f64 = 1.0;

/// `BBRSetPacingRateWithGain`'s rate: `gain · bw_bps` less the [`PACING_MARGIN_PERCENT`], bits/s.
pub(crate) fn pacing_rate_with_margin_bps(gain: f64, bw_bps: u64) -> u64 {
    (gain * bw_bps as f64 * (100.0 - PACING_MARGIN_PERCENT) / 100.0) as u64
}

/// RTT assumed for the initial pacing rate before any sample, s (draft-00 §4.2.1,
/// draft-ietf-ccwg-bbr §5.6.2: `InitialCwnd / (SRTT ? SRTT : 1ms)`).
pub(crate) const INITIAL_RTT_GUESS_S: f64 = 0.001;

/// The minimum pipe window in bytes.
pub(crate) fn min_pipe(st: &CwndState) -> u64 {
    MIN_PIPE_CWND_PACKETS * st.mss_bytes
}

/// `InitPacingRate`: `gain · cwnd / rtt`, bits/s, from a window in bytes and an RTT in seconds.
pub(crate) fn initial_pacing_rate_bps(cwnd_bytes: u64, gain: f64, rtt_s: f64) -> u64 {
    let nominal_bps = cwnd_bytes as f64 * 8.0 / rtt_s;
    (gain * nominal_bps) as u64
}

/// `InitPacingRate` once more with the first RTT sample (the 1 ms guess is only for the first
/// flight): sets the pacing rate from `initial_cwnd_bytes` and `srtt` the first time a positive
/// SRTT arrives, and records that in `has_seen_rtt`.
pub(crate) fn reinit_pacing_on_first_rtt(
    st: &mut CwndState,
    has_seen_rtt: &mut bool,
    srtt: Option<Duration>,
    initial_cwnd_bytes: u64,
    gain: f64,
) {
    if *has_seen_rtt {
        return;
    }
    if let Some(srtt) = srtt.filter(|d| *d > Duration::ZERO) {
        *has_seen_rtt = true;
        st.pacing_rate_bps = Some(initial_pacing_rate_bps(initial_cwnd_bytes, gain, srtt.as_secs_f64()));
    }
}

/// `SetPacingRateWithGain(rate)`: apply `rate_bps` once the pipe is full, and before that only
/// when it raises the current rate (draft-00 §4.2.1, draft-ietf-ccwg-bbr §5.6.2).
pub(crate) fn apply_pacing_rate(st: &mut CwndState, rate_bps: u64, filled_pipe: bool) {
    if filled_pipe || st.pacing_rate_bps.is_none_or(|r| rate_bps > r) {
        st.pacing_rate_bps = Some(rate_bps.max(1));
    }
}

/// The growth step of `SetCwnd` (draft-00 §4.2.3.6, draft-ietf-ccwg-bbr §5.6.4.6): once the
/// pipe is full, grow by the bytes delivered up to `target`; before, grow while below `target` or
/// until the first window was delivered; never below the minimum pipe window.
pub(crate) fn grow_cwnd(
    st: &CwndState,
    cwnd_bytes: u64,
    newly_acked_bytes: u64,
    target_bytes: u64,
    filled_pipe: bool,
    total_delivered_bytes: u64,
    initial_cwnd_bytes: u64,
) -> u64 {
    let mut cwnd = cwnd_bytes;
    if filled_pipe {
        cwnd = cwnd.saturating_add(newly_acked_bytes).min(target_bytes);
    } else if cwnd < target_bytes || total_delivered_bytes < initial_cwnd_bytes {
        cwnd = cwnd.saturating_add(newly_acked_bytes);
    }
    cwnd.max(min_pipe(st))
}

/// `SaveCwnd`: the window to restore later: the current one, or the larger of it and the saved
/// one while in loss recovery or PROBE_RTT (whose windows are not the model's).
pub(crate) fn saved_cwnd(prior_cwnd_bytes: u64, cwnd_bytes: u64, reduced: bool) -> u64 {
    if reduced {
        prior_cwnd_bytes.max(cwnd_bytes)
    } else {
        cwnd_bytes
    }
}

/// PROBE_RTT's emulated app-limited mark: a sample is app-limited when the transport says so, or
/// when its packet was sent before `until` bytes were delivered (both drafts mark the flow
/// app-limited on entering PROBE_RTT). Clears `until` once delivery has passed it.
pub(crate) fn app_limited(rs: &RateSample, until: &mut Option<u64>) -> bool {
    let has_data = rs.newly_acked_bytes > 0;
    let limited = rs.is_app_limited || until.is_some_and(|u| has_data && rs.prior_delivered_bytes <= u);
    if until.is_some_and(|u| rs.total_delivered_bytes > u) {
        *until = None;
    }
    limited
}

/// The ACK-aggregation epoch both BBRs measure `extra_acked` with (draft-ietf-ccwg-bbr §5.5.9
/// `BBRUpdateACKAggregation`; Linux's v1 `bbr_update_ack_aggregation` is the same estimator):
/// the data ACKed since the epoch began beyond what `bw` would have delivered in that time. An
/// ACK that finds no excess starts a new epoch.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AckAggregationEpoch {
    /// When the current epoch began.
    start: SimTime,
    /// Bytes ACKed in the current epoch.
    acked_bytes: u64,
}

impl AckAggregationEpoch {
    /// Start a new epoch at `now`, forgetting what the old one ACKed (Linux's v1 on restart from
    /// idle).
    pub(crate) fn restart(&mut self, now: SimTime) {
        self.start = now;
        self.acked_bytes = 0;
    }

    /// Move the epoch's start to `now` and keep its ACKed bytes (draft-ietf-ccwg-bbr §5.4.1
    /// `BBRHandleRestartFromIdle` sets only `BBR.extra_acked_interval_start`).
    pub(crate) fn set_start(&mut self, now: SimTime) {
        self.start = now;
    }

    /// Account `newly_acked_bytes` at `now` with the bandwidth estimate `bw_bps`; returns this
    /// ACK's excess in bytes (before any cap).
    pub(crate) fn on_ack(&mut self, now: SimTime, bw_bps: u64, newly_acked_bytes: u64) -> u64 {
        let interval_s = now.saturating_since(self.start).as_secs_f64();
        let mut expected_bytes = (bw_bps as f64 / 8.0 * interval_s) as u64;
        if self.acked_bytes <= expected_bytes {
            self.restart(now);
            expected_bytes = 0;
        }
        self.acked_bytes += newly_acked_bytes;
        self.acked_bytes.saturating_sub(expected_bytes)
    }
}

/// Exact windowed maximum over packet-timed rounds: the largest value recorded in rounds
/// `(now − len, now]`.
#[derive(Clone, Debug)]
pub(crate) struct RoundMaxFilter {
    /// `(round, max value in that round)`, indexed by round modulo the window length.
    slots: Vec<(u64, u64)>,
}

impl RoundMaxFilter {
    pub(crate) fn new(len: usize) -> RoundMaxFilter {
        RoundMaxFilter { slots: vec![(u64::MAX, 0); len] }
    }

    /// Record `value` in `round` and return the windowed max as of `round`.
    pub(crate) fn update(&mut self, round: u64, value: u64) -> u64 {
        let n = self.slots.len() as u64;
        let slot = &mut self.slots[(round % n) as usize];
        if slot.0 != round {
            *slot = (round, value);
        } else {
            slot.1 = slot.1.max(value);
        }
        self.get(round)
    }

    /// The max over rounds `(round − len, round]`.
    pub(crate) fn get(&self, round: u64) -> u64 {
        self.get_within(round, self.slots.len() as u64)
    }

    /// The max over rounds `(round − n, round]`, for `n` up to the filter's length.
    pub(crate) fn get_within(&self, round: u64, n: u64) -> u64 {
        self.slots
            .iter()
            .filter(|(r, _)| *r != u64::MAX && *r <= round && round - *r < n)
            .map(|(_, v)| *v)
            .max()
            .unwrap_or(0)
    }
}

