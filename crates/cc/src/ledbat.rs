//! LEDBAT, Low Extra Delay Background Transport (RFC 6817): the `ledbat` controller.
//!
//! # What it does
//!
//! LEDBAT is a scavenger: it uses spare capacity while adding at most TARGET of queueing delay,
//! and yields to standard TCP, which fills queues beyond that (RFC 6817 §2).
//!
//! - **Delay measurement** (§2.4.1, §3.2): each ACK carries a one-way delay (receiver stamp minus
//!   sender stamp, [`AckSample::one_way_delay`]); any constant clock offset cancels because only
//!   differences from the minimum are used. The *base delay* is the minimum over BASE_HISTORY
//!   one-minute intervals (a new interval starts at each minute boundary; the oldest is dropped);
//!   the *current delay* is FILTER = MIN over the last CURRENT_FILTER samples.
//! - **Controller** (§2.4.2, on every acknowledgement):
//!   `queuing_delay = current − base`, `off_target = (TARGET − queuing_delay)/TARGET`,
//!   `cwnd += GAIN · off_target · bytes_newly_acked · MSS / cwnd`, then
//!   `cwnd ≤ flightsize + ALLOWED_INCREASE·MSS` and `cwnd ≥ MIN_CWND·MSS`. Below TARGET the window
//!   grows by at most GAIN MSS per RTT (never faster than Reno); above it, it shrinks in
//!   proportion to the excess delay.
//! - **Loss** (§2.4.2, at most once per RTT): `cwnd = min(cwnd, max(cwnd/2, MIN_CWND·MSS))`.
//!
//! Constants (§2.4.2, §5): TARGET = 100 ms (MUST NOT exceed 100 ms), GAIN = 1 (MUST NOT exceed 1),
//! BASE_HISTORY = 10, CURRENT_FILTER = 4, ALLOWED_INCREASE = 1, MIN_CWND = 2.
//!
//! # Choices
//!
//! - **Start-up.** RFC 6817 prescribes no slow start beyond "never ramp up faster than standard
//!   TCP" (§2.3). At one MSS per RTT a LEDBAT flow would need minutes to fill a large
//!   bandwidth-delay product, so by default (`slow_start = 1`) LEDBAT begins with RFC 5681 slow
//!   start — exactly TCP's ramp — and leaves it at the first loss or once the queueing delay
//!   reaches half of TARGET (`SLOW_START_EXIT_FRACTION`), whichever comes first; the linear
//!   controller takes over from there. Leaving on delay halves cwnd, as a loss would: the delay
//!   that ends slow start was caused by a window up to half the current one (the last doubling
//!   round has not been seen yet), and the linear controller, which removes at most GAIN MSS per
//!   RTT per TARGET of excess delay, would otherwise take hundreds of RTTs to drain the overshoot.
//!   `slow_start = 0` starts in the linear controller.
//! - The initial window is the transport's (the scenario's IW); RFC 6817's INIT_CWND is not
//!   enforced.
//! - flightsize is the bytes in flight before the ACK ([`AckSample::prior_in_flight_bytes`]), as
//!   in the RFC's pseudo-code, where flightsize is decremented after the cap.
//! - When no one-way delay is available (a transport without timestamps), the RTT sample is used
//!   in its place; the base/current logic is unchanged (the RTT also contains the queueing delay).
//! - The RFC's congestion timeout (cwnd = 1 MSS after a timeout) is the transport's RTO, which
//!   sets the loss window; ssthresh is then Reno's FlightSize/2.
//! - The RFC's random `RANDOMNESS` term for fairness between LEDBAT flows is 0 (its SHOULD).

use std::collections::VecDeque;

use crate::reno::{halve_flight, slow_start};
use crate::{
    AckSample, CcError, CongestionControl, CwndState, Duration, LossEvent, LossKind, ParamInfo,
    Params, SimTime,
};

/// Default TARGET, milliseconds (§2.4.2: MUST be ≤ 100 ms; 100 ms is the RFC's value).
pub const DEFAULT_TARGET_MS: f64 = 100.0;

/// Default GAIN (§2.4.2: MUST be ≤ 1).
pub const DEFAULT_GAIN: f64 = 1.0;

/// Default BASE_HISTORY, one-minute intervals (§2.4.2: SHOULD be 10).
pub const DEFAULT_BASE_HISTORY: f64 = 10.0;

/// Default CURRENT_FILTER, samples (§2.4.2: SHOULD be 4 with MIN as FILTER).
pub const DEFAULT_CURRENT_FILTER: f64 = 4.0;

/// Default ALLOWED_INCREASE, MSS (§2.4.2: SHOULD be 1).
pub const DEFAULT_ALLOWED_INCREASE: f64 = 1.0;

/// Default MIN_CWND, MSS (§2.4.2: SHOULD be 2).
pub const DEFAULT_MIN_CWND: f64 = 2.0;

/// Length of one base-delay interval (§2.4.2 "round_to_minute").
const BASE_INTERVAL: Duration = Duration::from_secs(60);

/// Slow start (when on) ends once the queueing delay reaches this fraction of TARGET.
pub const SLOW_START_EXIT_FRACTION: f64 = 0.5;

/// The `ledbat` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "target",
        default: DEFAULT_TARGET_MS,
        doc: "TARGET, milliseconds: the queueing delay LEDBAT aims to add (RFC 6817 §2.4.2; MUST \
              be <= 100); 0 < target <= 100",
    },
    ParamInfo {
        name: "gain",
        default: DEFAULT_GAIN,
        doc: "GAIN: cwnd += GAIN·off_target·bytes_acked·MSS/cwnd (§2.4.2; MUST be <= 1); \
              0 < gain <= 1",
    },
    ParamInfo {
        name: "base_history",
        default: DEFAULT_BASE_HISTORY,
        doc: "BASE_HISTORY, one-minute intervals over which the base delay is the minimum \
              (§2.4.2); whole number >= 2",
    },
    ParamInfo {
        name: "current_filter",
        default: DEFAULT_CURRENT_FILTER,
        doc: "CURRENT_FILTER, samples: the current delay is the minimum of the last this many \
              one-way delays (§2.4.2); whole number >= 1",
    },
    ParamInfo {
        name: "allowed_increase",
        default: DEFAULT_ALLOWED_INCREASE,
        doc: "ALLOWED_INCREASE, MSS: cwnd <= flightsize + ALLOWED_INCREASE·MSS (§2.4.2); >= 1",
    },
    ParamInfo {
        name: "min_cwnd",
        default: DEFAULT_MIN_CWND,
        doc: "MIN_CWND, MSS: the smallest window (§2.4.2); >= 1",
    },
    ParamInfo {
        name: "slow_start",
        default: 1.0,
        doc: "1: start with RFC 5681 slow start until a loss or a queueing delay of TARGET/2 \
              (ccarena's start-up; RFC 6817 leaves start-up open); 0: linear controller from the \
              first ACK",
    },
];

const PARAM_NAMES: &[&str] =
    &["target", "gain", "base_history", "current_filter", "allowed_increase", "min_cwnd", "slow_start"];

/// The LEDBAT controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Ledbat {
    target: Duration,
    gain: f64,
    base_history: usize,
    current_filter: usize,
    allowed_increase: f64,
    min_cwnd: f64,
    slow_start: bool,
    /// Minimum delay of each of the last BASE_HISTORY intervals, oldest first.
    base_delays: VecDeque<Duration>,
    /// Interval index (minutes since the clock's start) of the newest base-delay entry.
    last_interval: Option<u64>,
    /// The last CURRENT_FILTER delays, oldest first.
    current_delays: VecDeque<Duration>,
    /// Fraction of a byte of window change carried between ACKs.
    frac_bytes: f64,
    in_slow_start_mode: bool,
}

impl Ledbat {
    /// A LEDBAT controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// out of range.
    pub fn new(params: &Params) -> Result<Ledbat, CcError> {
        params.expect_only("ledbat", PARAM_NAMES)?;
        let bad = |param, value, reason| CcError::BadParam { flavor: "ledbat", param, value, reason };
        let target = params.get_or("target", DEFAULT_TARGET_MS);
        if !(target > 0.0 && target <= 100.0) {
            return Err(bad("target", target, "must be in (0, 100] milliseconds (RFC 6817 §2.4.2)"));
        }
        let gain = params.get_or("gain", DEFAULT_GAIN);
        if !(gain > 0.0 && gain <= 1.0) {
            return Err(bad("gain", gain, "must be in (0, 1] (RFC 6817 §2.4.2)"));
        }
        let whole = |name: &'static str, default: f64, min: f64| {
            let v = params.get_or(name, default);
            if v.is_finite() && v >= min && v.fract() == 0.0 && v <= 1e6 {
                Ok(v as usize)
            } else {
                Err(bad(name, v, "must be a whole number in range"))
            }
        };
        let base_history = whole("base_history", DEFAULT_BASE_HISTORY, 2.0)?;
        let current_filter = whole("current_filter", DEFAULT_CURRENT_FILTER, 1.0)?;
        let allowed_increase = params.get_or("allowed_increase", DEFAULT_ALLOWED_INCREASE);
        if !(allowed_increase.is_finite() && allowed_increase >= 1.0) {
            return Err(bad("allowed_increase", allowed_increase, "must be a finite number >= 1"));
        }
        let min_cwnd = params.get_or("min_cwnd", DEFAULT_MIN_CWND);
        if !(min_cwnd.is_finite() && min_cwnd >= 1.0) {
            return Err(bad("min_cwnd", min_cwnd, "must be a finite number >= 1"));
        }
        let ss = params.get_or("slow_start", 1.0);
        if ss != 0.0 && ss != 1.0 {
            return Err(bad("slow_start", ss, "must be 0 (off) or 1 (on)"));
        }
        Ok(Ledbat {
            target: Duration::from_secs_f64(target / 1e3),
            gain,
            base_history,
            current_filter,
            allowed_increase,
            min_cwnd,
            slow_start: ss == 1.0,
            base_delays: VecDeque::with_capacity(base_history + 1),
            last_interval: None,
            current_delays: VecDeque::with_capacity(current_filter + 1),
            frac_bytes: 0.0,
            in_slow_start_mode: ss == 1.0,
        })
    }

    /// §2.4.2 update_base_delay: the minimum of the current one-minute interval, keeping
    /// BASE_HISTORY intervals.
    fn update_base_delay(&mut self, now: SimTime, delay: Duration) {
        let interval = now.as_nanos() / BASE_INTERVAL.as_nanos();
        match (self.last_interval, self.base_delays.back_mut()) {
            (Some(last), Some(tail)) if last == interval => *tail = (*tail).min(delay),
            _ => {
                if self.base_delays.len() == self.base_history {
                    self.base_delays.pop_front();
                }
                self.base_delays.push_back(delay);
                self.last_interval = Some(interval);
            }
        }
    }

    /// §2.4.2 update_current_delay: the last CURRENT_FILTER samples.
    fn update_current_delay(&mut self, delay: Duration) {
        if self.current_delays.len() == self.current_filter {
            self.current_delays.pop_front();
        }
        self.current_delays.push_back(delay);
    }

    /// FILTER(current_delays) − MIN(base_delays), or `None` before the first sample.
    pub fn queuing_delay(&self) -> Option<Duration> {
        let current = self.current_delays.iter().min()?;
        let base = self.base_delays.iter().min()?;
        Some(*current - *base)
    }

    /// off_target = (TARGET − queuing_delay) / TARGET (may be negative).
    pub fn off_target(&self) -> Option<f64> {
        let q = self.queuing_delay()?;
        let t = self.target.as_nanos() as f64;
        Some((t - q.as_nanos() as f64) / t)
    }
}

impl CongestionControl for Ledbat {
    fn name(&self) -> &'static str {
        "ledbat"
    }

    fn init(&mut self, st: &mut CwndState, _now: SimTime) {
        if !self.slow_start {
            st.ssthresh_bytes = st.cwnd_bytes;
        }
    }

    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        if let Some(delay) = ack.one_way_delay.or(ack.rtt) {
            self.update_base_delay(ack.now, delay);
            self.update_current_delay(delay);
        }
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        let Some(off_target) = self.off_target() else { return };
        let mss = st.mss_bytes as f64;
        if st.in_slow_start() {
            if off_target > 1.0 - SLOW_START_EXIT_FRACTION {
                self.in_slow_start_mode = true;
                if ack.cwnd_limited {
                    slow_start(st, ack.bytes_acked);
                }
                return;
            }
            // Queueing delay reached TARGET/2: undo the doubling whose delay has not been seen
            // yet, and let the linear controller take over.
            st.cwnd_bytes = (st.cwnd_bytes / 2).max((self.min_cwnd * mss) as u64);
            st.ssthresh_bytes = st.cwnd_bytes;
            self.in_slow_start_mode = false;
            return;
        }
        self.in_slow_start_mode = false;
        // cwnd += GAIN · off_target · bytes_newly_acked · MSS / cwnd
        let cwnd = st.cwnd_bytes as f64;
        let mut new = cwnd + self.frac_bytes + self.gain * off_target * ack.bytes_acked as f64 * mss / cwnd;
        // max_allowed_cwnd = flightsize + ALLOWED_INCREASE · MSS
        new = new.min(ack.prior_in_flight_bytes as f64 + self.allowed_increase * mss);
        new = new.max(self.min_cwnd * mss);
        let whole = new.floor();
        self.frac_bytes = new - whole;
        st.cwnd_bytes = whole as u64;
    }

    /// §2.4.2: on loss `cwnd = max(cwnd/2, MIN_CWND·MSS)` (the transport applies it as ssthresh
    /// when recovery ends); a timeout is Reno's FlightSize/2.
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.frac_bytes = 0.0;
        let min = (self.min_cwnd * st.mss_bytes as f64) as u64;
        match ev.kind {
            LossKind::Timeout => halve_flight(st, ev).max(min),
            LossKind::FastRetransmit | LossKind::Ecn => (st.cwnd_bytes / 2).max(min),
        }
    }

    /// `"slow_start"` or `"ledbat"` (the linear controller).
    fn mode(&self) -> &'static str {
        if self.in_slow_start_mode {
            "slow_start"
        } else {
            "ledbat"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vegas::test_support::{ack, PathSim, MSS};

    fn ledbat(pairs: &[(&str, f64)]) -> Ledbat {
        Ledbat::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn owd_ack(now_ns: u64, bytes: u64, owd: Duration, in_flight: u64) -> AckSample {
        let mut a = ack(now_ns, bytes, Some(owd + owd), 0, in_flight);
        a.one_way_delay = Some(owd);
        a.prior_in_flight_bytes = in_flight;
        a
    }

    #[test]
    fn base_delay_is_the_minimum_over_one_minute_intervals() {
        let mut cc = ledbat(&[("base_history", 2.0)]);
        cc.update_base_delay(SimTime(0), ms(50));
        cc.update_base_delay(SimTime(30_000_000_000), ms(40));
        assert_eq!(cc.base_delays, [ms(40)]);
        cc.update_base_delay(SimTime(61_000_000_000), ms(45));
        assert_eq!(cc.base_delays, [ms(40), ms(45)]);
        // A third minute pushes the first out: the base rises to 45 ms.
        cc.update_base_delay(SimTime(125_000_000_000), ms(60));
        assert_eq!(cc.base_delays, [ms(45), ms(60)]);
        for d in [70, 55, 80, 90, 65] {
            cc.update_current_delay(ms(d));
        }
        // Current = min of the last 4 = 55; queuing delay = 55 − 45.
        assert_eq!(cc.queuing_delay(), Some(ms(10)));
    }

    #[test]
    fn window_change_is_gain_times_off_target_per_rtt() {
        let mut cc = ledbat(&[("target", 100.0), ("slow_start", 0.0)]);
        let mut st = CwndState::new(100 * MSS, MSS);
        cc.init(&mut st, SimTime::ZERO);
        // Base 20 ms, then 45 ms of queueing delay: off_target = 0.55; a window's worth of ACKs
        // adds 0.55 MSS.
        cc.pkts_acked(&mut st, &owd_ack(0, 0, ms(20), 200 * MSS));
        for i in 0..100 {
            let a = owd_ack(1 + i, MSS, ms(65), 200 * MSS);
            cc.pkts_acked(&mut st, &a);
            cc.cong_avoid(&mut st, &a);
        }
        let grown = st.cwnd_bytes as f64 - 100.0 * MSS as f64;
        assert!((grown - 0.55 * MSS as f64).abs() < 0.02 * MSS as f64, "grew {grown}");
        // 150 ms of queueing delay: off_target = −0.5, half an MSS less per window — except for
        // the first three ACKs, whose current delay (the minimum of the last four) is still 65 ms.
        let before = st.cwnd_bytes as f64;
        for i in 0..100 {
            let a = owd_ack(1000 + i, MSS, ms(170), 200 * MSS);
            cc.pkts_acked(&mut st, &a);
            cc.cong_avoid(&mut st, &a);
        }
        let shrunk = before - st.cwnd_bytes as f64;
        let expect = (97.0 * 0.5 - 3.0 * 0.55) / 100.0 * MSS as f64;
        assert!((shrunk - expect).abs() < 0.02 * MSS as f64, "shrank {shrunk}, expected {expect}");
    }

    #[test]
    fn window_is_capped_by_flightsize_and_min_cwnd() {
        let mut cc = ledbat(&[("slow_start", 0.0)]);
        let mut st = CwndState::new(100 * MSS, MSS);
        cc.init(&mut st, SimTime::ZERO);
        let a = owd_ack(0, MSS, ms(20), 10 * MSS);
        cc.pkts_acked(&mut st, &a);
        cc.cong_avoid(&mut st, &a);
        assert_eq!(st.cwnd_bytes, 11 * MSS, "flightsize + ALLOWED_INCREASE");
        // A huge queueing delay drives cwnd to MIN_CWND, not below.
        for i in 0..1000 {
            let a = owd_ack(1 + i, 5 * MSS, ms(2000), 10 * MSS);
            cc.pkts_acked(&mut st, &a);
            cc.cong_avoid(&mut st, &a);
        }
        assert_eq!(st.cwnd_bytes, 2 * MSS);
    }

    #[test]
    fn holds_the_queueing_delay_at_target() {
        for target in [25u64, 60] {
            let mut cc = ledbat(&[("target", target as f64)]);
            let mut st = CwndState::new(10 * MSS, MSS);
            // 100 packets of BDP over 40 ms: one packet of queue = 0.4 ms.
            let mut path = PathSim::new(ms(40), 100);
            path.run_until(&mut cc, &mut st, 60_000_000_000);
            let mut q = Vec::new();
            while path.now_ns < 62_000_000_000 {
                path.step(&mut cc, &mut st);
                q.push(path.queue_packets() as f64 * 0.4);
            }
            let mean = q.iter().sum::<f64>() / q.len() as f64;
            assert!((mean - target as f64).abs() < 0.15 * target as f64, "target {target}: {mean} ms");
            assert_eq!(cc.mode(), "ledbat");
        }
    }

    #[test]
    fn loss_halves_but_not_below_min_cwnd() {
        let mut cc = ledbat(&[]);
        let ev = |cwnd| LossEvent { now: SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size_bytes: cwnd, in_flight_bytes: cwnd };
        assert_eq!(cc.ssthresh(&CwndState::new(50 * MSS, MSS), &ev(50 * MSS)), 25 * MSS);
        assert_eq!(cc.ssthresh(&CwndState::new(3 * MSS, MSS), &ev(3 * MSS)), 2 * MSS);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Ledbat::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("target", 150.0)]), Err(CcError::BadParam { param: "target", .. })));
        assert!(matches!(p(&[("target", 0.0)]), Err(CcError::BadParam { param: "target", .. })));
        assert!(matches!(p(&[("gain", 2.0)]), Err(CcError::BadParam { param: "gain", .. })));
        assert!(matches!(p(&[("base_history", 1.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("current_filter", 0.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("allowed_increase", 0.5)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("min_cwnd", 0.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("slow_start", 2.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("alpha", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
