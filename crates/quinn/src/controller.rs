//! [`CcarenaController`]: any ccarena [`CongestionControl`] behind quinn's
//! [`quinn_proto::congestion::Controller`] interface, so every catalogue flavor runs inside
//! quinn's loss detection, packetization, pacing and TLS.
//!
//! # What quinn calls, and what the adapter makes of it
//!
//! quinn runs RFC 9002's loss detection itself (§6: packet and time thresholds, PTO) and tells the
//! controller what it concluded. Per ACK frame it calls `on_ack` once per newly acknowledged
//! ack-eliciting packet (its send time and size), then `on_end_acks` once (bytes in flight after
//! the frame, whether the sender was app-limited), then — after the ACK has updated quinn's RTT
//! estimator — runs loss detection, which may call `on_congestion_event` (the newest lost
//! packet's send time, persistent congestion, bytes lost; 0 bytes for an ECN-CE increase). A
//! loss timer or PTO expiry may also call `on_congestion_event` between ACKs.
//!
//! The adapter drives the ccarena controller with the same hooks, in the same order and with the
//! same RFC 9002 Appendix B state as ccarena's own QUIC sender
//! (`ccarena_transport::quic::sender`):
//!
//! - An ACK batch (`on_ack`… `on_end_acks`) is one [`AckSample`]: `bytes_acked` the batch's
//!   bytes, `rtt` the latest_rtt of RFC 9002 §5.1 (now minus the send time of the newest
//!   packet acknowledged, which, packet numbers following send order, is the largest
//!   acknowledged), `min_rtt` the smallest of those (§5.2), `srtt` quinn's smoothed_rtt as the
//!   estimator passed to `on_ack` holds it (before this ACK's sample: quinn updates it after
//!   `on_end_acks`), the in-flight bytes before (after + acknowledged) and after the ACK,
//!   `cwnd_limited` = not app-limited (quinn's flag: the sender had no data, rather than no
//!   window, when it last stopped). snd_nxt is a running count of the bytes quinn reported sent
//!   (`on_sent`), and snd_una the count at the oldest send still outstanding (see below), both
//!   monotone as in ccarena's sender.
//! - A delivery-rate sample per batch ([`RateEstimator`], draft-cheng-iccrg-delivery-rate-
//!   estimation) from [`TxStamp`]s taken at each `on_sent` and kept by send time, since `on_ack`
//!   names a packet by its send time only. Sends at the same instant share one stamp. Losses
//!   reach quinn's controller after the ACK's `on_end_acks`, so their bytes enter the next
//!   batch's sample (`newly_lost_bytes`).
//! - Then, as ccarena's sender: `pkts_acked`; the recovery period ends (RFC 9002 §7.3.2) when a
//!   packet sent after it began is acknowledged; `cong_control` (BBR: returns `true` and owns
//!   cwnd and pacing), else `cong_avoid` with the bytes of packets sent after the recovery start,
//!   not while in Recovery (nor in Cwr unless [`CongestionControl::grows_during_ecn_cwr`]).
//! - `on_congestion_event` is RFC 9002 §B.6 `OnCongestionEvent(sent_time)`: nothing when the
//!   packet was sent before the current recovery period began (a period is one reduction; quinn
//!   leaves that rule to the controller); else the recovery period starts now, ssthresh =
//!   [`CongestionControl::ssthresh`] with `flight_size_bytes` = cwnd (B.6 scales the window) and
//!   cwnd = max(ssthresh, kMinimumWindow), never raised by a reduction (left alone when the
//!   controller owns cwnd), state Recovery (Cwr for ECN). Persistent congestion (§7.6.2, decided
//!   by quinn): cwnd = kMinimumWindow, `cwnd_event(Loss)`, `set_state(Loss)`, the recovery start
//!   forgotten.
//!
//! A packet counts as sent after the recovery start when its send instant is at or after it
//! (RFC 9002 compares `sent_time > congestion_recovery_start_time`). quinn's drivers handle every
//! datagram and timer due at an instant before they poll for transmissions at that instant, so a
//! retransmission sent at the very instant of the event was sent after it; compared strictly,
//! its acknowledgement would not end the recovery period, as ccarena's sender explains for its
//! packet-number comparison.
//!
//! The windows are quinn's unit, UDP payload bytes of whole QUIC packets (headers included), and
//! the controller's MSS is the path's current MTU as quinn reports it (quinn's own controllers
//! use the same). ccarena's controllers' pacing rate (BBR) is reported in [`Controller::metrics`]
//! but quinn paces on its own (1.25 · cwnd per smoothed RTT); it has no hook to take a
//! controller's rate.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ccarena_cc::{
    new_controller, AckSample, CaState, CcError, CongestionControl, CwndEvent, CwndState, Duration, LossEvent,
    LossKind, Params, SimTime,
};
use ccarena_transport::rate::{RateEstimator, TxStamp};
use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;

/// RFC 9002 §7.2's initial window for a max datagram size of `mtu` bytes:
/// `min(10 · mtu, max(14720, 2 · mtu))`.
pub fn rfc9002_initial_window_bytes(mtu: u16) -> u64 {
    let mtu = mtu as u64;
    (10 * mtu).min(14_720u64.max(2 * mtu))
}

/// RFC 9002 §7.2 kMinimumWindow for a max datagram size of `mtu` bytes: 2 · mtu.
pub fn minimum_window_bytes(mtu: u16) -> u64 {
    2 * mtu as u64
}

/// Sends quinn reported at one instant: the delivery state they left with and their place in the
/// snd_nxt sequence.
#[derive(Clone, Copy, Debug)]
struct SendRecord {
    at: Instant,
    stamp: TxStamp,
    /// Running byte count after these sends (the `end` the rate estimator orders sends by).
    tx_end: u64,
    /// Running byte count before these sends: snd_una while they are the oldest outstanding.
    tx_start: u64,
    /// Bytes of these sends neither acknowledged nor accounted lost.
    outstanding: u64,
}

/// The ACK batch being collected between the first `on_ack` and `on_end_acks`.
#[derive(Clone, Copy, Debug, Default)]
struct Batch {
    bytes: u64,
    /// Bytes of packets sent at or after the recovery start (RFC 9002 §B.5: they may grow cwnd).
    growth_bytes: u64,
    newest_sent: Option<Instant>,
    /// A packet sent at or after the current episode's start was acknowledged (§7.3.2).
    ends_episode: bool,
    srtt: Option<Duration>,
}

/// A ccarena controller inside quinn. See the module documentation.
///
/// quinn wants `Send + Sync`; a ccarena controller is `Send` only, so it sits in a [`Mutex`]
/// that every hook reaches through `get_mut` (quinn hands out `&mut self`), never locking.
#[derive(Debug)]
pub struct CcarenaController {
    flavor: String,
    params: Vec<(String, f64)>,
    initial_window_bytes: Option<u64>,
    /// Instant 0 of the controller's [`SimTime`] clock.
    epoch: Instant,
    cc: Mutex<Box<dyn CongestionControl>>,
    st: CwndState,
    initial_cwnd_bytes: u64,
    rate: RateEstimator,
    sends: VecDeque<SendRecord>,
    /// Sum of `outstanding` over `sends`.
    outstanding_bytes: u64,
    /// Running count of bytes sent: snd_nxt.
    tx_bytes: u64,
    batch: Batch,
    min_rtt: Option<Duration>,
    /// Bytes lost since the last ACK batch, for the next rate sample.
    pending_lost_bytes: u64,
    state: CaState,
    /// RFC 9002 §B.2 congestion_recovery_start_time; `None` before any event and after
    /// persistent congestion.
    recovery_start: Option<Instant>,
    /// When the current Recovery, Cwr or Loss episode began.
    episode_start: Instant,
    cwr_grows: bool,
    cc_owns_cwnd: bool,
    app_limited: bool,
    stats: AdapterStats,
}

/// What the adapter has counted, for tests and records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdapterStats {
    /// ACK batches (`on_end_acks` with at least one acknowledged ack-eliciting packet).
    pub ack_batches: u64,
    /// Congestion events that started a recovery period (RFC 9002 §7.3.2), loss or ECN.
    pub recovery_periods: u64,
    /// Congestion events inside a recovery period (no second reduction).
    pub events_in_recovery: u64,
    /// Persistent congestion declared by quinn (RFC 9002 §7.6).
    pub persistent_congestions: u64,
}

impl CcarenaController {
    /// A controller of `flavor` with `params` at `now`, for a path of `mtu` bytes, its initial
    /// window `initial_window_bytes` or RFC 9002 §7.2's.
    ///
    /// # Errors
    /// An unknown flavor or a bad parameter ([`CcError`]).
    pub fn new(
        flavor: &str,
        params: &[(String, f64)],
        initial_window_bytes: Option<u64>,
        now: Instant,
        mtu: u16,
    ) -> Result<CcarenaController, CcError> {
        Self::with_epoch(flavor, params, initial_window_bytes, now, now, mtu)
    }

    fn with_epoch(
        flavor: &str,
        params: &[(String, f64)],
        initial_window_bytes: Option<u64>,
        epoch: Instant,
        now: Instant,
        mtu: u16,
    ) -> Result<CcarenaController, CcError> {
        let mut cc = new_controller(flavor, &Params::from_pairs(params.to_vec()))?;
        let initial = initial_window_bytes.unwrap_or_else(|| rfc9002_initial_window_bytes(mtu));
        let mut st = CwndState::new(initial, mtu as u64);
        let t = SimTime(now.saturating_duration_since(epoch).as_nanos() as u64);
        cc.init(&mut st, t);
        Ok(CcarenaController {
            flavor: flavor.to_string(),
            params: params.to_vec(),
            initial_window_bytes,
            epoch,
            cc: Mutex::new(cc),
            initial_cwnd_bytes: st.cwnd_bytes,
            st,
            rate: RateEstimator::new(),
            sends: VecDeque::new(),
            outstanding_bytes: 0,
            tx_bytes: 0,
            batch: Batch::default(),
            min_rtt: None,
            pending_lost_bytes: 0,
            state: CaState::Open,
            recovery_start: None,
            episode_start: now,
            cwr_grows: false,
            cc_owns_cwnd: false,
            app_limited: false,
            stats: AdapterStats::default(),
        })
    }

    fn cc(&mut self) -> &mut Box<dyn CongestionControl> {
        // Never poisoned: no hook panics while holding it (there is no lock held, only get_mut).
        self.cc.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    fn sim(&self, t: Instant) -> SimTime {
        SimTime(t.saturating_duration_since(self.epoch).as_nanos() as u64)
    }

    /// The window state (cwnd, ssthresh, MSS = path MTU, pacing rate the controller asked for).
    pub fn cwnd_state(&self) -> &CwndState {
        &self.st
    }

    /// Congestion-avoidance state: Open, Recovery (loss), Cwr (ECN) or Loss (persistent
    /// congestion).
    pub fn ca_state(&self) -> CaState {
        self.state
    }

    /// The flavor's name.
    pub fn flavor(&self) -> &str {
        &self.flavor
    }

    /// Counters.
    pub fn stats(&self) -> AdapterStats {
        self.stats
    }

    /// The controller's internal mode (BBR's `"PROBE_BW"`), empty if it has none.
    pub fn mode(&self) -> &'static str {
        self.cc.lock().map(|c| c.mode()).unwrap_or("")
    }

    /// snd_una as the controller sees it: the byte count before the oldest send still
    /// outstanding, or snd_nxt when none is.
    pub fn snd_una(&self) -> u64 {
        self.sends.front().map_or(self.tx_bytes, |s| s.tx_start)
    }

    /// One newly acknowledged ack-eliciting packet of the ACK batch under way: sent at `sent`,
    /// `bytes` long, acknowledged at `now`; `app_limited` is quinn's flag, `srtt` quinn's
    /// smoothed_rtt as it stands. What [`Controller::on_ack`] does with quinn's RTT estimator
    /// (which only quinn can build), for drivers and tests.
    pub fn ack_packet(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, srtt: std::time::Duration) {
        if self.batch.newest_sent.is_none() {
            self.rate.begin_ack();
            self.batch.srtt = Some(Duration(srtt.as_nanos() as u64));
        }
        self.app_limited = app_limited;
        self.batch.bytes += bytes;
        self.batch.newest_sent = Some(self.batch.newest_sent.map_or(sent, |t| t.max(sent)));
        if self.recovery_start.is_none_or(|r| sent >= r) {
            self.batch.growth_bytes += bytes;
        }
        if sent >= self.episode_start {
            self.batch.ends_episode = true;
        }
        let t_now = self.sim(now);
        let t_sent = self.sim(sent);
        if let Some(i) = self.record_for(sent) {
            let rec = self.sends[i];
            self.rate.on_delivered(t_now, rec.tx_end, bytes, t_sent, &rec.stamp);
            let take = self.sends[i].outstanding.min(bytes);
            self.sends[i].outstanding -= take;
            self.outstanding_bytes -= take;
        }
    }

    fn set_state(&mut self, new: CaState, now: SimTime) {
        if new != self.state {
            self.state = new;
            let st = &mut self.st;
            self.cc.get_mut().unwrap_or_else(|e| e.into_inner()).set_state(st, new, now);
        }
    }

    /// Take `bytes` out of the oldest outstanding sends sent no later than `upto` (all of them
    /// when `upto` is `None`), then drop the fully accounted ones from the front.
    fn retire_oldest(&mut self, mut bytes: u64, upto: Option<Instant>) {
        for s in self.sends.iter_mut() {
            if bytes == 0 || upto.is_some_and(|u| s.at > u) {
                break;
            }
            let take = s.outstanding.min(bytes);
            s.outstanding -= take;
            self.outstanding_bytes -= take;
            bytes -= take;
        }
        while self.sends.front().is_some_and(|s| s.outstanding == 0) {
            self.sends.pop_front();
        }
    }

    /// The send record of packets sent at `sent`: the one at that instant, else the newest
    /// before it (its stamp is the closest), else the oldest kept.
    fn record_for(&self, sent: Instant) -> Option<usize> {
        let i = self.sends.partition_point(|s| s.at <= sent);
        match i {
            0 if self.sends.is_empty() => None,
            0 => Some(0),
            i => Some(i - 1),
        }
    }
}

impl Controller for CcarenaController {
    fn on_sent(&mut self, now: Instant, bytes: u64, _last_packet_number: u64) {
        if self.outstanding_bytes == 0 {
            let t = self.sim(now);
            let st = &mut self.st;
            self.cc.get_mut().unwrap_or_else(|e| e.into_inner()).cwnd_event(st, CwndEvent::TxStart, t);
        }
        let start = self.tx_bytes;
        self.tx_bytes += bytes;
        self.outstanding_bytes += bytes;
        match self.sends.back_mut() {
            // One stamp per instant; the episode boundaries compare instants too.
            Some(last) if last.at == now => {
                last.tx_end = self.tx_bytes;
                last.outstanding += bytes;
            }
            _ => {
                let in_flight = self.outstanding_bytes - bytes;
                let stamp = self.rate.on_send(self.sim(now), in_flight);
                self.sends.push_back(SendRecord {
                    at: now,
                    stamp,
                    tx_end: self.tx_bytes,
                    tx_start: start,
                    outstanding: bytes,
                });
            }
        }
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        self.ack_packet(now, sent, bytes, app_limited, rtt.get());
    }

    fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool, _largest_packet_num_acked: Option<u64>) {
        let batch = std::mem::take(&mut self.batch);
        // quinn's in-flight count is the truth; what the adapter holds beyond it are bytes quinn
        // does not count in flight (ACK-only packets), oldest first.
        if self.outstanding_bytes > in_flight {
            self.retire_oldest(self.outstanding_bytes - in_flight, None);
        }
        while self.sends.front().is_some_and(|s| s.outstanding == 0) {
            self.sends.pop_front();
        }
        let Some(newest_sent) = batch.newest_sent else { return };
        if batch.bytes == 0 {
            return;
        }
        self.stats.ack_batches += 1;
        let t = self.sim(now);
        let rtt = Duration(now.saturating_duration_since(newest_sent).as_nanos() as u64);
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        if app_limited {
            // draft-cheng §3.3: sends from here on are app-limited until this flight is delivered.
            self.rate.mark_app_limited(in_flight);
        }
        let lost = std::mem::take(&mut self.pending_lost_bytes);
        let rs = self.rate.generate(self.min_rtt, batch.bytes, lost, Some(rtt));
        let sample = AckSample {
            now: t,
            bytes_acked: batch.bytes,
            rtt: Some(rtt),
            min_rtt: self.min_rtt,
            srtt: batch.srtt,
            one_way_delay: None,
            prior_in_flight_bytes: in_flight + batch.bytes,
            in_flight_bytes: in_flight,
            snd_una: self.snd_una(),
            snd_nxt: self.tx_bytes,
            ece: false,
            ce_bytes: 0,
            cwnd_limited: !app_limited,
            state: self.state,
        };
        {
            let st = &mut self.st;
            self.cc.get_mut().unwrap_or_else(|e| e.into_inner()).pkts_acked(st, &sample);
        }
        // §7.3.2: the episode ends once a packet sent after it began is acknowledged.
        if batch.ends_episode && matches!(self.state, CaState::Recovery | CaState::Cwr | CaState::Loss) {
            if self.state == CaState::Cwr {
                let st = &mut self.st;
                self.cc.get_mut().unwrap_or_else(|e| e.into_inner()).cwnd_event(st, CwndEvent::CompleteCwr, t);
            }
            self.cwr_grows = false;
            self.set_state(CaState::Open, t);
        }
        let owns = {
            let st = &mut self.st;
            self.cc.get_mut().unwrap_or_else(|e| e.into_inner()).cong_control(st, &sample, &rs)
        };
        self.cc_owns_cwnd = owns;
        if !owns {
            let grow_bytes = match self.state {
                CaState::Open | CaState::Disorder | CaState::Loss => batch.growth_bytes,
                CaState::Cwr if self.cwr_grows => batch.bytes,
                CaState::Cwr | CaState::Recovery => 0,
            };
            if grow_bytes > 0 {
                let mut s = sample;
                s.bytes_acked = grow_bytes;
                let st = &mut self.st;
                self.cc.get_mut().unwrap_or_else(|e| e.into_inner()).cong_avoid(st, &s);
            }
        }
        self.st.cwnd_bytes = self.st.cwnd_bytes.max(self.st.mss_bytes);
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, is_persistent_congestion: bool, lost_bytes: u64) {
        let t = self.sim(now);
        let kind = if lost_bytes == 0 { LossKind::Ecn } else { LossKind::FastRetransmit };
        self.pending_lost_bytes += lost_bytes;
        self.retire_oldest(lost_bytes, Some(sent));
        let floor = self.st.mss_bytes * 2;
        // §B.6: a packet sent before the current recovery period started starts none.
        if self.recovery_start.is_some_and(|r| sent < r) {
            self.stats.events_in_recovery += 1;
        } else {
            let ev = LossEvent {
                now: t,
                kind,
                flight_size_bytes: self.st.cwnd_bytes,
                in_flight_bytes: self.outstanding_bytes,
            };
            let ssthresh = {
                let st = &self.st;
                self.cc.get_mut().unwrap_or_else(|e| e.into_inner()).ssthresh(st, &ev)
            };
            self.stats.recovery_periods += 1;
            self.recovery_start = Some(now);
            self.episode_start = now;
            self.st.ssthresh_bytes = ssthresh;
            if !self.cc_owns_cwnd {
                self.st.cwnd_bytes = ssthresh.max(floor).min(self.st.cwnd_bytes.max(floor));
            }
            if kind == LossKind::Ecn {
                self.cwr_grows = self.cc().grows_during_ecn_cwr();
                self.set_state(CaState::Cwr, t);
            } else {
                self.cwr_grows = false;
                self.set_state(CaState::Recovery, t);
            }
        }
        if is_persistent_congestion {
            // §7.6.2: collapse to the minimum window, even for a controller that owns cwnd (its
            // next cong_control rebuilds the window from its model), and slow-start from there.
            self.stats.persistent_congestions += 1;
            {
                let st = &mut self.st;
                self.cc.get_mut().unwrap_or_else(|e| e.into_inner()).cwnd_event(st, CwndEvent::Loss, t);
            }
            self.st.cwnd_bytes = floor;
            self.recovery_start = None;
            self.episode_start = now;
            self.cwr_grows = false;
            self.set_state(CaState::Loss, t);
        }
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.st.mss_bytes = new_mtu as u64;
        self.st.cwnd_bytes = self.st.cwnd_bytes.max(minimum_window_bytes(new_mtu));
    }

    fn window(&self) -> u64 {
        self.st.cwnd_bytes
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.st.cwnd_bytes;
        m.ssthresh = (self.st.ssthresh_bytes != u64::MAX).then_some(self.st.ssthresh_bytes);
        m.pacing_rate = self.st.pacing_rate_bps;
        m
    }

    /// A fresh controller of the same flavor and parameters: RFC 9000 §9.4 resets congestion
    /// state on a new path.
    fn clone_box(&self) -> Box<dyn Controller> {
        let now = Instant::now();
        let mtu = self.st.mss_bytes.min(u16::MAX as u64) as u16;
        match Self::with_epoch(&self.flavor, &self.params, self.initial_window_bytes, self.epoch, now, mtu) {
            Ok(c) => Box::new(c),
            // Unreachable: this flavor and these parameters built `self`.
            Err(e) => panic!("rebuilding controller {}: {e}", self.flavor),
        }
    }

    fn initial_window(&self) -> u64 {
        self.initial_cwnd_bytes
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Builds a [`CcarenaController`] per connection (and per new path) for quinn's
/// `TransportConfig::congestion_controller_factory`.
#[derive(Clone, Debug)]
pub struct CcarenaControllerFactory {
    flavor: String,
    params: Vec<(String, f64)>,
    initial_window_bytes: Option<u64>,
}

impl CcarenaControllerFactory {
    /// A factory of `flavor` controllers with `params`; `initial_window_bytes` `None` takes
    /// RFC 9002 §7.2's.
    ///
    /// # Errors
    /// An unknown flavor or a bad parameter, found here rather than on the first connection.
    pub fn new(
        flavor: &str,
        params: &[(String, f64)],
        initial_window_bytes: Option<u64>,
    ) -> Result<CcarenaControllerFactory, CcError> {
        new_controller(flavor, &Params::from_pairs(params.to_vec()))?;
        Ok(CcarenaControllerFactory { flavor: flavor.to_string(), params: params.to_vec(), initial_window_bytes })
    }
}

impl ControllerFactory for CcarenaControllerFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        match CcarenaController::new(&self.flavor, &self.params, self.initial_window_bytes, now, current_mtu) {
            Ok(c) => Box::new(c),
            // Unreachable: `new` built one of these already.
            Err(e) => panic!("building controller {}: {e}", self.flavor),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration as StdDuration;

    const MTU: u16 = 1200;
    const SRTT: StdDuration = StdDuration::from_millis(100);

    /// A controller on a synthetic clock: packets of one MTU sent at whole milliseconds.
    struct Harness {
        c: CcarenaController,
        t0: Instant,
    }

    impl Harness {
        fn new(flavor: &str) -> Harness {
            let t0 = Instant::now();
            Harness { c: CcarenaController::new(flavor, &[], None, t0, MTU).unwrap(), t0 }
        }
        fn at(&self, ms: u64) -> Instant {
            self.t0 + StdDuration::from_millis(ms)
        }
        /// `n` packets sent at `ms`.
        fn send(&mut self, ms: u64, n: u64) {
            for _ in 0..n {
                let t = self.at(ms);
                self.c.on_sent(t, MTU as u64, 0);
            }
        }
        /// One ACK batch at `now_ms` acknowledging `n` packets sent at `sent_ms`; `in_flight`
        /// after it.
        fn ack(&mut self, now_ms: u64, sent_ms: u64, n: u64, in_flight: u64) {
            let (now, sent) = (self.at(now_ms), self.at(sent_ms));
            for _ in 0..n {
                self.c.ack_packet(now, sent, MTU as u64, false, SRTT);
            }
            self.c.on_end_acks(now, in_flight, false, None);
        }
        fn lose(&mut self, now_ms: u64, sent_ms: u64, n: u64, persistent: bool) {
            let (now, sent) = (self.at(now_ms), self.at(sent_ms));
            self.c.on_congestion_event(now, sent, persistent, n * MTU as u64);
        }
        /// A round trip: a window's worth of packets sent at `ms`, acknowledged 100 ms later two
        /// per ACK frame (RFC 9000 §13.2.1's every-second-packet ACKs, as quinn sends them).
        fn round(&mut self, ms: u64) {
            let n = (self.c.window() / MTU as u64).max(1);
            self.send(ms, n);
            let mut left = n;
            while left > 0 {
                let k = left.min(2);
                left -= k;
                self.ack(ms + 100, ms, k, left * MTU as u64);
            }
        }
    }

    #[test]
    fn initial_window_follows_rfc9002() {
        assert_eq!(rfc9002_initial_window_bytes(1200), 12_000);
        assert_eq!(rfc9002_initial_window_bytes(1500), 14_720);
        let h = Harness::new("reno");
        assert_eq!(h.c.window(), 12_000);
        assert_eq!(h.c.initial_window(), 12_000);
        assert_eq!(h.c.metrics().ssthresh, None);
    }

    #[test]
    fn reno_halves_once_per_recovery_period() {
        let mut h = Harness::new("reno");
        h.round(0);
        h.round(100);
        let w = h.c.window();
        assert!(w > 12_000, "slow start grew the window: {w}");
        // Twenty packets at 200 ms; three lost (one event), then more of the same flight lost.
        h.send(200, 20);
        h.lose(300, 200, 1, false);
        assert_eq!(h.c.window(), w / 2, "one halving");
        assert_eq!(h.c.ca_state(), CaState::Recovery);
        h.lose(301, 200, 2, false);
        h.lose(302, 200, 1, false);
        assert_eq!(h.c.window(), w / 2, "losses of packets sent before the recovery start: no second halving");
        assert_eq!(h.c.stats().recovery_periods, 1);
        assert_eq!(h.c.stats().events_in_recovery, 2);
        // Acks of packets sent before the period grow nothing and do not end it.
        h.ack(305, 200, 10, 6 * MTU as u64);
        assert_eq!(h.c.window(), w / 2);
        assert_eq!(h.c.ca_state(), CaState::Recovery);
        // A packet sent after the start is acknowledged: the period ends.
        h.send(310, 2);
        h.ack(410, 310, 2, 0);
        assert_eq!(h.c.ca_state(), CaState::Open);
        // A loss of a packet sent after the period began starts a new one: halves again.
        let w2 = h.c.window();
        h.send(420, 10);
        h.lose(520, 420, 1, false);
        assert_eq!(h.c.window(), (w2 / 2).max(2 * MTU as u64));
        assert_eq!(h.c.stats().recovery_periods, 2);
    }

    #[test]
    fn cubic_grows_in_slow_start_and_after_a_reduction() {
        let mut h = Harness::new("cubic");
        let w0 = h.c.window();
        h.round(0);
        assert_eq!(h.c.window(), 2 * w0, "slow start: one MTU per MTU acknowledged");
        h.send(100, 4);
        h.lose(200, 100, 1, false);
        let reduced = h.c.window();
        assert!(reduced < 2 * w0, "CUBIC reduced: {reduced}");
        let mut ms = 300;
        for _ in 0..30 {
            h.round(ms);
            ms += 100;
        }
        assert!(h.c.window() > reduced + 4 * MTU as u64, "CUBIC grew back: {} vs {reduced}", h.c.window());
        assert!(h.c.metrics().ssthresh.is_some());
    }

    #[test]
    fn bbr_sets_a_pacing_rate_and_owns_cwnd() {
        let mut h = Harness::new("bbr");
        assert_eq!(h.c.metrics().pacing_rate.is_some(), h.c.cwnd_state().pacing_rate_bps.is_some());
        // Ten packets every 10 ms, each acknowledged 50 ms later: 1200·8·10 / 10 ms = 9.6 Mbit/s.
        for i in 0..40u64 {
            h.send(i * 10, 10);
            if i >= 5 {
                h.ack(i * 10, (i - 5) * 10, 10, 50 * MTU as u64);
            }
        }
        let rate = h.c.metrics().pacing_rate.expect("BBR paces");
        assert!(rate > 1_000_000 && rate < 100_000_000, "pacing rate near the delivery rate: {rate}");
        assert!(!h.c.mode().is_empty());
        // A loss does not take cwnd from a controller that owns it.
        let w = h.c.window();
        h.lose(400, 350, 1, false);
        assert_eq!(h.c.window(), w);
    }

    #[test]
    fn persistent_congestion_collapses_the_window() {
        for flavor in ["reno", "cubic", "bbr"] {
            let mut h = Harness::new(flavor);
            h.round(0);
            h.round(100);
            h.send(200, 10);
            h.lose(2_000, 200, 10, true);
            assert_eq!(h.c.window(), 2 * MTU as u64, "{flavor}: kMinimumWindow");
            assert_eq!(h.c.ca_state(), CaState::Loss, "{flavor}");
            assert_eq!(h.c.stats().persistent_congestions, 1);
            // Slow start again (BBR rebuilds from its model); a packet sent after ends Loss.
            h.send(2_001, 2);
            h.ack(2_100, 2_001, 2, 0);
            assert_eq!(h.c.ca_state(), CaState::Open, "{flavor}");
            if flavor != "bbr" {
                assert_eq!(h.c.window(), 4 * MTU as u64, "{flavor}: slow start from the minimum");
            }
        }
    }

    #[test]
    fn snd_una_and_snd_nxt_follow_sends_acks_and_losses() {
        let mut h = Harness::new("reno");
        h.send(0, 4);
        h.send(1, 4);
        assert_eq!(h.c.snd_una(), 0);
        h.ack(100, 0, 4, 4 * MTU as u64);
        assert_eq!(h.c.snd_una(), 4 * MTU as u64, "the 0 ms sends are all acknowledged");
        h.lose(101, 1, 4, false);
        assert_eq!(h.c.snd_una(), 8 * MTU as u64, "nothing outstanding: snd_una = snd_nxt");
    }

    #[test]
    fn clone_box_is_a_fresh_controller_of_the_same_flavor() {
        let mut h = Harness::new("cubic");
        h.round(0);
        h.round(100);
        let fresh = h.c.clone_box();
        assert_eq!(fresh.window(), 12_000);
        let c = fresh.into_any().downcast::<CcarenaController>().unwrap();
        assert_eq!(c.flavor(), "cubic");
    }

    #[test]
    fn unknown_flavors_are_refused() {
        assert!(CcarenaControllerFactory::new("cubicc", &[], None).is_err());
        assert!(CcarenaControllerFactory::new("cubic", &[("nope".into(), 1.0)], None).is_err());
        assert!(CcarenaControllerFactory::new("vegas", &[], None).is_ok());
    }
}
