//! TCP-NV, "New Vegas" (Brakmo, "TCP-NV: An Update to TCP-Vegas", 2010; documented with Linux's
//! tcp_nv module, 2016): the `nv` controller.
//!
//! # What it does
//!
//! NV detects congestion from the rate the path actually delivers rather than from Vegas's RTT
//! ratio. Once per round trip it measures the delivery rate `R` (bytes acknowledged over the
//! round's duration) and compares the window with the window that rate needs at the path's
//! minimum RTT:
//!
//! - `W_rate = R · minRTT` is what the path can carry without queueing; `max_win = W_rate + pad`
//!   allows `pad` packets of queue.
//! - **Congestion** when `cwnd > max_win`: cwnd decreases by a fraction (`cong_dec`, 30%) of the
//!   excess `cwnd − max_win` (at least 2 packets), never below `min_cwnd`. In slow start this also
//!   ends slow start.
//! - **Growth** only while `cwnd < max_win − pad_buffer`: Reno's slow start and additive
//!   increase (one MSS per RTT). Between the two thresholds cwnd is held.
//! - **Loss**: cwnd is reduced to `loss_dec` (80%) of its value.
//! - **minRTT** is the minimum over two consecutive windows of `reset_period` (5 s), so that it
//!   can rise after a route change.
//!
//! # Choices and simplifications
//!
//! - The rate is measured over [`RoundRtt`] rounds (Vegas's once-per-RTT measurement): bytes
//!   delivered by the ACKs after the one that began the round, over the time between the two.
//!   Linux's module samples the rate on every ACK and keeps the round's maximum; it also waits for
//!   a number of ACKs (`nv_dec_eval_min_calls` and friends) before deciding. Here a round needs
//!   [`crate::vegas::MIN_ROUND_SAMPLES`] RTT samples and lasts at least half the minimum RTT.
//! - Linux's variable growth rate (`nv_cwnd_growth_rate_*`) is not modelled: NV grows like Reno, as
//!   its default positive growth rate does.

use crate::reno::grow;
use crate::vegas::{Round, RoundRtt, MIN_ROUND_SAMPLES};
use crate::{
    AckSample, CaState, CcError, CongestionControl, CwndEvent, CwndState, Duration, LossEvent,
    ParamInfo, Params, SimTime,
};

/// Default pad, packets: queued packets NV tolerates before it calls it congestion.
pub const DEFAULT_PAD: f64 = 10.0;

/// Default pad buffer, packets: no growth within this many packets of max_win.
pub const DEFAULT_PAD_BUFFER: f64 = 2.0;

/// Default fraction of the excess window removed on congestion: 30%.
pub const DEFAULT_CONG_DEC: f64 = 0.30;

/// Default fraction of cwnd kept after a loss: 80%.
pub const DEFAULT_LOSS_DEC: f64 = 0.80;

/// Default smallest window NV's delay rule reduces to, packets.
pub const DEFAULT_MIN_CWND: f64 = 2.0;

/// Default period of the minimum-RTT filter, seconds.
pub const DEFAULT_RESET_PERIOD_S: f64 = 5.0;

/// Smallest decrease on congestion, packets.
const MIN_CONG_DECREASE_SEGMENTS: f64 = 2.0;

/// The `nv` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "pad",
        default: DEFAULT_PAD,
        doc: "packets of queue allowed: congestion when cwnd > rate·minRTT + pad (Brakmo, TCP-NV; \
              Linux nv_pad); >= 0",
    },
    ParamInfo {
        name: "pad_buffer",
        default: DEFAULT_PAD_BUFFER,
        doc: "packets: cwnd grows only while cwnd < rate·minRTT + pad - pad_buffer (nv_pad_buffer); \
              0 <= pad_buffer <= pad",
    },
    ParamInfo {
        name: "cong_dec",
        default: DEFAULT_CONG_DEC,
        doc: "fraction of the excess (cwnd - max_win) removed on congestion (nv_cong_dec_mult, \
              30%); 0 < cong_dec <= 1",
    },
    ParamInfo {
        name: "loss_dec",
        default: DEFAULT_LOSS_DEC,
        doc: "fraction of cwnd kept after a loss (nv_loss_dec_factor, 80%); 0 < loss_dec < 1",
    },
    ParamInfo {
        name: "min_cwnd",
        default: DEFAULT_MIN_CWND,
        doc: "packets: the delay rule never reduces cwnd below this (nv_min_cwnd); >= 1",
    },
    ParamInfo {
        name: "reset_period",
        default: DEFAULT_RESET_PERIOD_S,
        doc: "seconds: minRTT is the minimum over the current and the previous period of this \
              length (nv_reset_period); > 0",
    },
];

const PARAM_NAMES: &[&str] = &["pad", "pad_buffer", "cong_dec", "loss_dec", "min_cwnd", "reset_period"];

/// What the window may do until the next round ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    Grow,
    Hold,
    Decreased,
}

/// Minimum RTT over two consecutive periods (the current one and the one before).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MinRttFilter {
    period: Duration,
    started: Option<SimTime>,
    current: Duration,
    previous: Duration,
}

impl MinRttFilter {
    fn update(&mut self, now: SimTime, rtt: Duration) {
        let start = *self.started.get_or_insert(now);
        if now.saturating_since(start) >= self.period {
            self.previous = self.current;
            self.current = Duration::MAX;
            self.started = Some(now);
        }
        self.current = self.current.min(rtt);
    }

    fn get(&self) -> Option<Duration> {
        let m = self.current.min(self.previous);
        (m != Duration::MAX).then_some(m)
    }
}

/// The TCP-NV controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Nv {
    pad: f64,
    pad_buffer: f64,
    cong_dec: f64,
    loss_dec: f64,
    min_cwnd: f64,
    rtt: RoundRtt,
    min_rtt: MinRttFilter,
    plan: Plan,
    enabled: bool,
    ca_acc_bytes: u64,
    congestion_events: u64,
}

impl Nv {
    /// An NV controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// out of range.
    pub fn new(params: &Params) -> Result<Nv, CcError> {
        params.expect_only("nv", PARAM_NAMES)?;
        let bad = |param, value, reason| CcError::BadParam { flavor: "nv", param, value, reason };
        let pad = params.get_or("pad", DEFAULT_PAD);
        if !(pad.is_finite() && pad >= 0.0) {
            return Err(bad("pad", pad, "must be a finite number >= 0"));
        }
        let pad_buffer = params.get_or("pad_buffer", DEFAULT_PAD_BUFFER);
        if !(pad_buffer >= 0.0 && pad_buffer <= pad) {
            return Err(bad("pad_buffer", pad_buffer, "must be in [0, pad]"));
        }
        let cong_dec = params.get_or("cong_dec", DEFAULT_CONG_DEC);
        if !(cong_dec > 0.0 && cong_dec <= 1.0) {
            return Err(bad("cong_dec", cong_dec, "must be in (0, 1]"));
        }
        let loss_dec = params.get_or("loss_dec", DEFAULT_LOSS_DEC);
        if !(loss_dec > 0.0 && loss_dec < 1.0) {
            return Err(bad("loss_dec", loss_dec, "must be strictly between 0 and 1"));
        }
        let min_cwnd = params.get_or("min_cwnd", DEFAULT_MIN_CWND);
        if !(min_cwnd.is_finite() && min_cwnd >= 1.0) {
            return Err(bad("min_cwnd", min_cwnd, "must be a finite number >= 1"));
        }
        let period = params.get_or("reset_period", DEFAULT_RESET_PERIOD_S);
        if !(period.is_finite() && period > 0.0) {
            return Err(bad("reset_period", period, "must be a finite number of seconds > 0"));
        }
        Ok(Nv {
            pad,
            pad_buffer,
            cong_dec,
            loss_dec,
            min_cwnd,
            rtt: RoundRtt::new(),
            min_rtt: MinRttFilter {
                period: Duration::from_secs_f64(period),
                started: None,
                current: Duration::MAX,
                previous: Duration::MAX,
            },
            plan: Plan::Grow,
            enabled: true,
            ca_acc_bytes: 0,
            congestion_events: 0,
        })
    }

    /// Times the rate rule found the window too large for the measured rate.
    pub fn congestion_events(&self) -> u64 {
        self.congestion_events
    }

    /// The rate rule, once per round.
    fn on_round_end(&mut self, st: &mut CwndState, round: &Round) {
        let Some(min_rtt) = self.min_rtt.get() else { return };
        if round.samples < MIN_ROUND_SAMPLES || round.duration.as_nanos() < min_rtt.as_nanos() / 2 {
            return;
        }
        let mss = st.mss_bytes as f64;
        // W_rate = R · minRTT, packets; R = delivered bytes / round duration.
        let rate_bytes_per_ns = round.acked_bytes as f64 / round.duration.as_nanos() as f64;
        let w_rate = rate_bytes_per_ns * min_rtt.as_nanos() as f64 / mss;
        let max_win = w_rate + self.pad;
        let cwnd = st.cwnd_packets();
        if cwnd > max_win {
            self.congestion_events += 1;
            let dec = (self.cong_dec * (cwnd - max_win)).max(MIN_CONG_DECREASE_SEGMENTS);
            let new_cwnd = (cwnd - dec).max(self.min_cwnd);
            st.cwnd_bytes = (new_cwnd * mss) as u64;
            if st.in_slow_start() {
                st.ssthresh_bytes = st.cwnd_bytes;
            }
            self.plan = Plan::Decreased;
        } else if cwnd < max_win - self.pad_buffer {
            self.plan = Plan::Grow;
        } else {
            self.plan = Plan::Hold;
        }
    }
}

impl CongestionControl for Nv {
    fn name(&self) -> &'static str {
        "nv"
    }

    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        if let Some(rtt) = ack.rtt {
            self.min_rtt.update(ack.now, rtt);
        }
        self.rtt.on_ack(ack);
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        if ack.cwnd_limited && (self.plan == Plan::Grow || !self.enabled) {
            grow(st, &mut self.ca_acc_bytes, ack.bytes_acked);
        }
        if !self.enabled {
            return;
        }
        if let Some(round) = self.rtt.end_round(ack) {
            self.on_round_end(st, &round);
        }
    }

    /// A loss keeps `loss_dec` (80%) of cwnd.
    fn ssthresh(&mut self, st: &CwndState, _ev: &LossEvent) -> u64 {
        self.ca_acc_bytes = 0;
        self.plan = Plan::Grow;
        ((st.cwnd_bytes as f64 * self.loss_dec) as u64).max(2 * st.mss_bytes)
    }

    /// The rate rule runs only in `Open`; the measurement restarts on returning to it.
    fn set_state(&mut self, _st: &mut CwndState, new: CaState, _now: SimTime) {
        let enabled = new == CaState::Open;
        if enabled && !self.enabled {
            self.rtt.restart();
            self.plan = Plan::Grow;
        }
        self.enabled = enabled;
    }

    fn cwnd_event(&mut self, _st: &mut CwndState, ev: CwndEvent, _now: SimTime) {
        if ev == CwndEvent::CwndRestart {
            self.rtt.restart();
        }
    }

    /// `"grow"`, `"hold"` or `"decrease"`: the rate rule's last verdict.
    fn mode(&self) -> &'static str {
        match self.plan {
            Plan::Grow => "grow",
            Plan::Hold => "hold",
            Plan::Decreased => "decrease",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vegas::test_support::{ack, PathSim, MSS};
    use crate::LossKind;

    fn nv(pairs: &[(&str, f64)]) -> Nv {
        Nv::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())).unwrap()
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn decreases_by_a_share_of_the_excess_when_the_rate_falls_below_the_min_rtt_rate() {
        let mut cc = nv(&[]);
        let mut st = CwndState::new(100 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        // minRTT 10 ms from a first sample.
        let a = ack(0, MSS, Some(ms(10)), MSS, 100 * MSS);
        cc.pkts_acked(&mut st, &a);
        cc.cong_avoid(&mut st, &a);
        st.cwnd_bytes = 100 * MSS;
        // A round of 100 packets delivered over 20 ms: the rate carries only 50 packets at
        // minRTT; max_win = 60; excess 40 → decrease by 30% of it = 12 packets.
        let mut una = MSS;
        for i in 1..=50u64 {
            una += 2 * MSS;
            let a = ack(i * 400_000, 2 * MSS, Some(ms(20)), una.min(100 * MSS), 200 * MSS);
            cc.pkts_acked(&mut st, &a);
            let mut b = a;
            b.cwnd_limited = false;
            cc.cong_avoid(&mut st, &b);
        }
        assert_eq!(cc.congestion_events(), 1);
        assert_eq!(cc.mode(), "decrease");
        let w = st.cwnd_packets();
        assert!((87.5..=88.5).contains(&w), "cwnd {w}");
    }

    #[test]
    fn alone_it_keeps_about_pad_packets_queued_without_overshoot() {
        let mut cc = nv(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        let mut path = PathSim::new(ms(40), 200);
        let mut max_queue = 0;
        let mut queues = Vec::new();
        while path.now_ns < 20_000_000_000 {
            path.step(&mut cc, &mut st);
            max_queue = max_queue.max(path.queue_packets());
            if path.now_ns > 10_000_000_000 {
                queues.push(path.queue_packets());
            }
        }
        let mean = queues.iter().sum::<u64>() as f64 / queues.len() as f64;
        assert!((2.0..=14.0).contains(&mean), "mean queue {mean}");
        // Slow start ends on the rate rule, long before a 200-packet path overflows a window.
        assert!(max_queue < 150, "max queue {max_queue}");
        assert!(!st.in_slow_start());
    }

    #[test]
    fn loss_keeps_eighty_percent() {
        let mut cc = nv(&[]);
        let st = CwndState::new(100 * MSS, MSS);
        let ev = LossEvent { now: SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size_bytes: 0, in_flight_bytes: 0 };
        assert_eq!(cc.ssthresh(&st, &ev), 80 * MSS);
    }

    #[test]
    fn min_rtt_filter_forgets_after_two_periods() {
        let mut f = MinRttFilter { period: Duration::from_secs(5), started: None, current: Duration::MAX, previous: Duration::MAX };
        f.update(SimTime(0), ms(10));
        f.update(SimTime(6_000_000_000), ms(30));
        assert_eq!(f.get(), Some(ms(10)), "the previous period still counts");
        f.update(SimTime(12_000_000_000), ms(30));
        assert_eq!(f.get(), Some(ms(30)));
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Nv::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("pad", -1.0)]), Err(CcError::BadParam { param: "pad", .. })));
        assert!(matches!(p(&[("pad_buffer", 20.0)]), Err(CcError::BadParam { param: "pad_buffer", .. })));
        assert!(matches!(p(&[("cong_dec", 0.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("loss_dec", 1.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("min_cwnd", 0.5)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("reset_period", 0.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("alpha", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
