//! FAST TCP (Jin, Wei and Low, "FAST TCP: Motivation, Architecture, Algorithms, Performance",
//! IEEE INFOCOM 2004): the `fast` controller.
//!
//! # What it does
//!
//! FAST steers its window toward the point where exactly α of its packets wait in queues, using
//! queueing delay as the congestion measure. Once per RTT:
//!
//! ```text
//! w ← min{ 2w, (1 − γ)·w + γ·(baseRTT/RTT · w + α) }
//! ```
//!
//! At the fixed point `w · (1 − baseRTT/RTT) = α`: the flow's own backlog (rate × queueing delay)
//! is α packets, whatever the link rate, and n flows sharing a bottleneck each keep α packets
//! there, which gives them equal rates (proportional fairness). Far from equilibrium the
//! window changes by up to γ·α packets per RTT, never more than doubling.
//!
//! - `RTT` is an average of the RTT samples, `avgRTT ← (1 − η)·avgRTT + η·RTT` per sample with
//!   `η = min(3/w, 1/4)` (the estimation component): the average spans about a third of a
//!   window of samples.
//! - `baseRTT` is the smallest RTT sample.
//! - γ = 0.5.
//! - **Loss** is handled as by Reno (the window control reacts to loss by halving); the
//!   transport's loss recovery runs meanwhile. FAST has no separate slow start: the update rule's
//!   doubling bound is its start-up.
//!
//! # Choices
//!
//! - α defaults to 200 packets, the value of the paper's experiments on 800 Mb/s – 2.4 Gb/s
//!   paths. On slower paths with smaller buffers set α lower (`flavor = { name = "fast",
//!   alpha = 20 }`): a bottleneck buffer must hold n·α packets for n FAST flows, or FAST falls
//!   back to halving on loss.
//! - The period of the update is one round of [`RoundRtt`] (Vegas's once-per-RTT measurement). An
//!   increase is spread over the following round, on each ACK in proportion to the bytes it
//!   acknowledges, so that the window grows with the ACK clock instead of in one burst; a decrease
//!   is applied at once.

use crate::vegas::{RoundRtt, MIN_ROUND_SAMPLES};
use crate::{
    AckSample, CaState, CcError, CongestionControl, CwndState, LossEvent, LossKind, ParamInfo,
    Params, SimTime,
};

/// Default α, packets: the flow's target backlog (the paper's experiments).
pub const DEFAULT_ALPHA: f64 = 200.0;

/// Default γ, the update's smoothing gain in (0, 1].
pub const DEFAULT_GAMMA: f64 = 0.5;

/// η = min(ETA_WINDOW_SAMPLES / w, ETA_MAX): the RTT average's weight.
const ETA_WINDOW_SAMPLES: f64 = 3.0;

/// Upper bound of η.
const ETA_MAX: f64 = 0.25;

/// The update never more than doubles the window per RTT (the update's first term).
const MAX_GROWTH_FACTOR: f64 = 2.0;

/// Windows never go below this many segments.
const MIN_WINDOW_SEGMENTS: u64 = 2;

/// The `fast` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "alpha",
        default: DEFAULT_ALPHA,
        doc: "α, packets: each flow keeps α packets queued at equilibrium, w(1 - baseRTT/RTT) = α \
              (Jin, Wei, Low 2004, the window update; 200 in the paper's experiments); > 0",
    },
    ParamInfo {
        name: "gamma",
        default: DEFAULT_GAMMA,
        doc: "γ: w <- min(2w, (1-γ)w + γ(baseRTT/RTT·w + α)) once per RTT; 0 < gamma <= 1",
    },
];

const PARAM_NAMES: &[&str] = &["alpha", "gamma"];

/// The FAST TCP controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Fast {
    alpha: f64,
    gamma: f64,
    rtt: RoundRtt,
    /// avgRTT, nanoseconds.
    avg_rtt_ns: Option<f64>,
    /// The window the last update chose, bytes, and the window it started from.
    target: Option<(u64, u64)>,
    /// Fraction of a byte of increase carried between ACKs.
    frac_bytes: f64,
    enabled: bool,
}

impl Fast {
    /// A FAST controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// out of range.
    pub fn new(params: &Params) -> Result<Fast, CcError> {
        params.expect_only("fast", PARAM_NAMES)?;
        let bad = |param, value, reason| CcError::BadParam { flavor: "fast", param, value, reason };
        let alpha = params.get_or("alpha", DEFAULT_ALPHA);
        if !(alpha.is_finite() && alpha > 0.0) {
            return Err(bad("alpha", alpha, "must be a finite number of packets > 0"));
        }
        let gamma = params.get_or("gamma", DEFAULT_GAMMA);
        if !(gamma > 0.0 && gamma <= 1.0) {
            return Err(bad("gamma", gamma, "must be in (0, 1]"));
        }
        Ok(Fast { alpha, gamma, rtt: RoundRtt::new(), avg_rtt_ns: None, target: None, frac_bytes: 0.0, enabled: true })
    }

    /// Equation 7: the next window, packets, from the current one `w`, baseRTT and avgRTT.
    pub fn next_window(&self, w: f64, base_rtt_ns: f64, avg_rtt_ns: f64) -> f64 {
        let ratio = (base_rtt_ns / avg_rtt_ns).min(1.0);
        (MAX_GROWTH_FACTOR * w).min((1.0 - self.gamma) * w + self.gamma * (ratio * w + self.alpha))
    }

    /// avgRTT, nanoseconds.
    pub fn avg_rtt_ns(&self) -> Option<f64> {
        self.avg_rtt_ns
    }
}

impl CongestionControl for Fast {
    fn name(&self) -> &'static str {
        "fast"
    }

    fn pkts_acked(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.rtt.on_ack(ack);
        if let Some(rtt) = ack.rtt {
            let r = rtt.as_nanos() as f64;
            let eta = (ETA_WINDOW_SAMPLES / st.cwnd_packets().max(1.0)).min(ETA_MAX);
            self.avg_rtt_ns = Some(self.avg_rtt_ns.map_or(r, |a| (1.0 - eta) * a + eta * r));
        }
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        // Spread the last update's increase over this round's ACKs.
        if let Some((target, from)) = self.target {
            if ack.cwnd_limited && st.cwnd_bytes < target {
                self.frac_bytes += (target - from) as f64 * ack.bytes_acked as f64 / from.max(1) as f64;
                let whole = self.frac_bytes.floor();
                self.frac_bytes -= whole;
                st.cwnd_bytes = (st.cwnd_bytes + whole as u64).min(target);
            }
        }
        if !self.enabled {
            return;
        }
        let Some(round) = self.rtt.end_round(ack) else { return };
        let (Some(base), Some(avg)) = (self.rtt.base_rtt(), self.avg_rtt_ns) else { return };
        if round.samples < MIN_ROUND_SAMPLES.min(1 + (st.cwnd_packets() / 2.0) as u32) {
            return;
        }
        let mss = st.mss_bytes as f64;
        let w = st.cwnd_packets();
        let next = self.next_window(w, base.as_nanos() as f64, avg);
        let next_bytes = ((next * mss) as u64).max(MIN_WINDOW_SEGMENTS * st.mss_bytes);
        if next_bytes < st.cwnd_bytes {
            st.cwnd_bytes = next_bytes;
            self.target = None;
        } else {
            self.target = Some((next_bytes, st.cwnd_bytes));
        }
        self.frac_bytes = 0.0;
    }

    /// Reno's halving for a fast retransmit or ECN echo; `FlightSize/2` for a timeout.
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.target = None;
        let base = match ev.kind {
            LossKind::Timeout => ev.flight_size_bytes,
            LossKind::FastRetransmit | LossKind::Ecn => st.cwnd_bytes,
        };
        (base / 2).max(MIN_WINDOW_SEGMENTS * st.mss_bytes)
    }

    /// The update runs only in `Open`; its measurement restarts on returning to it.
    fn set_state(&mut self, _st: &mut CwndState, new: CaState, _now: SimTime) {
        let enabled = new == CaState::Open;
        if enabled && !self.enabled {
            self.rtt.restart();
            self.target = None;
        }
        self.enabled = enabled;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vegas::test_support::{PathSim, MSS};
    use crate::Duration;

    fn fast(pairs: &[(&str, f64)]) -> Fast {
        Fast::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())).unwrap()
    }

    #[test]
    fn equation_seven() {
        let cc = fast(&[("alpha", 20.0)]);
        // No queue: w + γα, capped at 2w.
        assert_eq!(cc.next_window(100.0, 50e6, 50e6), 110.0);
        assert_eq!(cc.next_window(5.0, 50e6, 50e6), 10.0);
        // The fixed point: w(1 − base/avg) = α, e.g. w = 120 at avg = 1.2·base.
        assert!((cc.next_window(120.0, 50e6, 60e6) - 120.0).abs() < 1e-9);
        // Too much queue: move halfway toward base/avg·w + α.
        let w = cc.next_window(200.0, 50e6, 100e6);
        assert!((w - (100.0 + 0.5 * (100.0 + 20.0))).abs() < 1e-9);
    }

    #[test]
    fn converges_to_alpha_packets_queued() {
        for alpha in [10.0, 40.0] {
            let mut cc = fast(&[("alpha", alpha)]);
            let mut st = CwndState::new(10 * MSS, MSS);
            let mut path = PathSim::new(Duration::from_millis(50), 200);
            path.run_until(&mut cc, &mut st, 20_000_000_000);
            let mut queues = Vec::new();
            while path.now_ns < 22_000_000_000 {
                path.step(&mut cc, &mut st);
                queues.push(path.queue_packets());
            }
            let mean = queues.iter().sum::<u64>() as f64 / queues.len() as f64;
            assert!((mean - alpha).abs() <= 0.2 * alpha + 1.0, "α {alpha}: queue {mean}");
        }
    }

    #[test]
    fn loss_halves() {
        let mut cc = fast(&[]);
        let st = CwndState::new(100 * MSS, MSS);
        let ev = LossEvent { now: SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size_bytes: 60 * MSS, in_flight_bytes: 0 };
        assert_eq!(cc.ssthresh(&st, &ev), 50 * MSS);
        let t = LossEvent { kind: LossKind::Timeout, ..ev };
        assert_eq!(cc.ssthresh(&st, &t), 30 * MSS);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Fast::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("alpha", 0.0)]), Err(CcError::BadParam { param: "alpha", .. })));
        assert!(matches!(p(&[("gamma", 0.0)]), Err(CcError::BadParam { param: "gamma", .. })));
        assert!(matches!(p(&[("gamma", 1.5)]), Err(CcError::BadParam { param: "gamma", .. })));
        assert!(matches!(p(&[("beta", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
