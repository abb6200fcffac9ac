//! Compound TCP (Tan, Song, Zhang and Sridharan, "A Compound TCP Approach for High-speed and Long
//! Distance Networks", IEEE INFOCOM 2006): the `compound` controller.
//!
//! # What it does
//!
//! CTCP sends `win = cwnd + dwnd`: a loss-based window `cwnd` that behaves as Reno's, plus a
//! delay-based window `dwnd` that fills the pipe quickly while the path shows no queue and drains
//! away as a queue builds:
//!
//! - **cwnd**: `cwnd += 1/win` per acknowledged segment — Reno's one segment per
//!   RTT, scaled by the share cwnd has of the whole window.
//! - **dwnd**, once per RTT, from Vegas's backlog estimate
//!   `diff = win · (1 − baseRTT/RTT)` (packets):
//!   - `dwnd += (α·win^k − 1)⁺` while `diff < γ` (binomial increase, so that win grows like
//!     HighSpeed TCP's response function),
//!   - `dwnd −= ζ·diff` (not below 0) once `diff ≥ γ`,
//!   - on a loss, `dwnd ← (win·(1 − β) − cwnd/2)⁺` while cwnd halves: the whole window shrinks to
//!     `win·(1 − β)`.
//! - **Slow start** is Reno's, with `dwnd = 0`; the delay component works only in
//!   congestion avoidance and only once win reaches `low_window` (41 packets), below which
//!   CTCP is Reno.
//!
//! Constants: α = 1/8, k = 3/4, β = 1/2, γ = 30 packets, ζ = 1, low_window = 41.
//!
//! # Units and state
//!
//! [`CwndState::cwnd_bytes`] holds the whole window `win`; the controller keeps `dwnd` in bytes
//! and treats `win − dwnd` as the loss-based cwnd. The transport's window is authoritative: after
//! recovery or a timeout sets it, dwnd is clamped so that it never exceeds `win − 1 MSS`.
//!
//! # Choices
//!
//! - RTT per round is the minimum Karn-valid sample of the round ([`RoundRtt`], Vegas's
//!   measurement reused by composition); baseRTT the minimum of the connection. A round needs
//!   [`crate::vegas::MIN_ROUND_SAMPLES`] samples.
//! - A dwnd increase is added to the window at the end of the round in one step, as the paper's dwnd update writes
//!   it; a timeout ends the delay component (dwnd = 0) and Reno's slow start follows.

use crate::reno::{cong_avoid_ai, halve_flight, slow_start};
use crate::vegas::{queued_packets, RoundRtt, MIN_ROUND_SAMPLES};
use crate::{
    AckSample, CaState, CcError, CongestionControl, CwndState, LossEvent, LossKind, ParamInfo,
    Params, SimTime,
};

/// Default α of the binomial increase α·win^k.
pub const DEFAULT_ALPHA: f64 = 0.125;

/// Default exponent k of the binomial increase (0.75 approximates HighSpeed TCP's response).
pub const DEFAULT_K: f64 = 0.75;

/// Default multiplicative decrease β of the whole window on loss.
pub const DEFAULT_BETA: f64 = 0.5;

/// Default γ, packets: the backlog at which dwnd stops growing and starts shrinking.
pub const DEFAULT_GAMMA: f64 = 30.0;

/// Default ζ: dwnd shrinks by ζ·diff per RTT once diff ≥ γ.
pub const DEFAULT_ZETA: f64 = 1.0;

/// Default low window, packets: below it CTCP is Reno (dwnd = 0).
pub const DEFAULT_LOW_WINDOW: f64 = 41.0;

/// Windows never go below this many segments.
const MIN_WINDOW_SEGMENTS: u64 = 2;

/// The `compound` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "alpha",
        default: DEFAULT_ALPHA,
        doc: "α: dwnd grows by (α·win^k - 1) packets per RTT while diff < γ (Tan et al. 2006 \
              the dwnd update); > 0",
    },
    ParamInfo {
        name: "k",
        default: DEFAULT_K,
        doc: "k: exponent of the binomial increase α·win^k; 0 < k < 1",
    },
    ParamInfo {
        name: "beta",
        default: DEFAULT_BETA,
        doc: "β: on loss the whole window becomes win·(1-β); 0 < beta < 1",
    },
    ParamInfo {
        name: "gamma",
        default: DEFAULT_GAMMA,
        doc: "γ, packets: dwnd grows while the backlog diff = win(1 - baseRTT/RTT) < γ and \
              shrinks by ζ·diff once diff >= γ; > 0",
    },
    ParamInfo {
        name: "zeta",
        default: DEFAULT_ZETA,
        doc: "ζ: dwnd shrinks by ζ·diff packets per RTT once diff >= γ; > 0",
    },
    ParamInfo {
        name: "low_window",
        default: DEFAULT_LOW_WINDOW,
        doc: "packets: below this window CTCP is Reno and dwnd = 0; >= 2",
    },
];

const PARAM_NAMES: &[&str] = &["alpha", "k", "beta", "gamma", "zeta", "low_window"];

/// What dwnd did at the end of the last round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    SlowStart,
    /// win below low_window (or too few samples): Reno only.
    Reno,
    Grow,
    Shrink,
}

/// The Compound TCP controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Compound {
    alpha: f64,
    k: f64,
    beta: f64,
    gamma: f64,
    zeta: f64,
    low_window: f64,
    rtt: RoundRtt,
    /// The delay-based window, bytes.
    dwnd_bytes: u64,
    ca_acc_bytes: u64,
    enabled: bool,
    mode: Mode,
    last_diff: Option<f64>,
}

impl Compound {
    /// A CTCP controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// out of range.
    pub fn new(params: &Params) -> Result<Compound, CcError> {
        params.expect_only("compound", PARAM_NAMES)?;
        let bad =
            |param, value, reason| CcError::BadParam { flavor: "compound", param, value, reason };
        let positive = |name: &'static str, default: f64| {
            let v = params.get_or(name, default);
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(bad(name, v, "must be a finite number > 0"))
            }
        };
        let alpha = positive("alpha", DEFAULT_ALPHA)?;
        let gamma = positive("gamma", DEFAULT_GAMMA)?;
        let zeta = positive("zeta", DEFAULT_ZETA)?;
        let k = params.get_or("k", DEFAULT_K);
        if !(k > 0.0 && k < 1.0) {
            return Err(bad("k", k, "must be strictly between 0 and 1"));
        }
        let beta = params.get_or("beta", DEFAULT_BETA);
        if !(beta > 0.0 && beta < 1.0) {
            return Err(bad("beta", beta, "must be strictly between 0 and 1"));
        }
        let low_window = params.get_or("low_window", DEFAULT_LOW_WINDOW);
        if !(low_window.is_finite() && low_window >= 2.0) {
            return Err(bad("low_window", low_window, "must be a finite number of packets >= 2"));
        }
        Ok(Compound {
            alpha,
            k,
            beta,
            gamma,
            zeta,
            low_window,
            rtt: RoundRtt::new(),
            dwnd_bytes: 0,
            ca_acc_bytes: 0,
            enabled: true,
            mode: Mode::SlowStart,
            last_diff: None,
        })
    }

    /// The delay-based window dwnd, bytes.
    pub fn dwnd_bytes(&self) -> u64 {
        self.dwnd_bytes
    }

    /// The backlog diff of the last measured round, packets.
    pub fn last_diff(&self) -> Option<f64> {
        self.last_diff
    }

    /// dwnd never exceeds the window less one MSS (the transport may have shrunk the window).
    fn clamp_dwnd(&mut self, st: &CwndState) {
        self.dwnd_bytes = self.dwnd_bytes.min(st.cwnd_bytes.saturating_sub(st.mss_bytes));
    }

    /// The dwnd update, once per RTT.
    fn on_round_end(&mut self, st: &mut CwndState, min_rtt: crate::Duration) {
        let Some(base) = self.rtt.base_rtt() else { return };
        let mss = st.mss_bytes as f64;
        let win = st.cwnd_packets();
        let diff = queued_packets(win, base, min_rtt);
        self.last_diff = Some(diff);
        if win < self.low_window {
            // Reno only: give back any delay window.
            st.cwnd_bytes -= self.dwnd_bytes;
            self.dwnd_bytes = 0;
            self.mode = Mode::Reno;
            return;
        }
        if diff < self.gamma {
            let inc = (self.alpha * win.powf(self.k) - 1.0).max(0.0);
            let inc_bytes = (inc * mss).round() as u64;
            self.dwnd_bytes += inc_bytes;
            st.cwnd_bytes += inc_bytes;
            self.mode = Mode::Grow;
        } else {
            let dec_bytes = ((self.zeta * diff * mss).round() as u64).min(self.dwnd_bytes);
            self.dwnd_bytes -= dec_bytes;
            st.cwnd_bytes -= dec_bytes;
            self.mode = Mode::Shrink;
        }
    }
}

impl CongestionControl for Compound {
    fn name(&self) -> &'static str {
        "compound"
    }

    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        self.rtt.on_ack(ack);
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.clamp_dwnd(st);
        if ack.cwnd_limited {
            let mut acked = ack.bytes_acked;
            if st.in_slow_start() {
                // Slow start is Reno's, with no delay window.
                st.cwnd_bytes -= self.dwnd_bytes;
                self.dwnd_bytes = 0;
                self.mode = Mode::SlowStart;
                acked = slow_start(st, acked);
            }
            if acked > 0 {
                // cwnd += 1/win per segment: one MSS per `win` bytes acknowledged.
                let win = st.cwnd_bytes;
                cong_avoid_ai(st, win, &mut self.ca_acc_bytes, acked);
            }
        }
        if !self.enabled {
            return;
        }
        if let Some(round) = self.rtt.end_round(ack) {
            if round.samples >= MIN_ROUND_SAMPLES && !st.in_slow_start() {
                self.on_round_end(st, round.min_rtt);
            }
        }
    }

    /// cwnd halves, dwnd ← (win(1 − β) − cwnd/2)⁺; the window becomes their sum (at least
    /// 2 MSS). A timeout ends the delay component and halves FlightSize as Reno does.
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.ca_acc_bytes = 0;
        self.clamp_dwnd(st);
        let min = MIN_WINDOW_SEGMENTS * st.mss_bytes;
        if ev.kind == LossKind::Timeout {
            self.dwnd_bytes = 0;
            return halve_flight(st, ev);
        }
        let win = st.cwnd_bytes as f64;
        let half_cwnd = (st.cwnd_bytes - self.dwnd_bytes) as f64 / 2.0;
        let dwnd = (win * (1.0 - self.beta) - half_cwnd).max(0.0);
        self.dwnd_bytes = dwnd as u64;
        ((half_cwnd + dwnd) as u64).max(min)
    }

    /// The delay component runs only in `Open`; its measurement restarts on returning to it.
    fn set_state(&mut self, _st: &mut CwndState, new: CaState, _now: SimTime) {
        let enabled = new == CaState::Open;
        if enabled && !self.enabled {
            self.rtt.restart();
        }
        self.enabled = enabled;
    }

    /// `"slow_start"`, `"reno"` (below low_window), `"dwnd_grow"` or `"dwnd_shrink"`.
    fn mode(&self) -> &'static str {
        match self.mode {
            Mode::SlowStart => "slow_start",
            Mode::Reno => "reno",
            Mode::Grow => "dwnd_grow",
            Mode::Shrink => "dwnd_shrink",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vegas::test_support::{ack, PathSim, MSS};
    use crate::Duration;

    fn ctcp(pairs: &[(&str, f64)]) -> Compound {
        Compound::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn dwnd_grows_binomially_on_an_empty_path() {
        let mut cc = ctcp(&[]);
        let mut st = CwndState::new(100 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        let mut path = PathSim::new(ms(100), 5000);
        // Run until a few rounds have ended, then check one round's step against the dwnd update.
        path.run_until(&mut cc, &mut st, 300_000_000);
        let mut grew = None;
        while grew.is_none() {
            let (w0, d0) = (st.cwnd_bytes, cc.dwnd_bytes());
            path.step(&mut cc, &mut st);
            if cc.dwnd_bytes() != d0 {
                grew = Some((w0, d0, st.cwnd_bytes));
            }
        }
        let (w0, d0, w1) = grew.unwrap();
        let win = w0 as f64 / MSS as f64;
        let expect = ((0.125 * win.powf(0.75) - 1.0) * MSS as f64).round() as u64;
        assert_eq!(cc.dwnd_bytes() - d0, expect);
        // The ACK also carried Reno's share of a segment at most.
        assert!(w1 - w0 >= expect && w1 - w0 <= expect + MSS, "{w0} {w1} {expect}");
        assert_eq!(cc.mode(), "dwnd_grow");
        // Over 5 s (50 RTTs) the delay window dominates: Reno alone would add 50 segments.
        path.run_until(&mut cc, &mut st, 5_000_000_000);
        assert!(st.cwnd_packets() > 400.0, "win {}", st.cwnd_packets());
        assert!(cc.dwnd_bytes() > st.cwnd_bytes / 2);
    }

    #[test]
    fn dwnd_shrinks_as_the_queue_builds_and_holds_the_backlog_near_gamma() {
        let mut cc = ctcp(&[]);
        let mut st = CwndState::new(60 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        let mut path = PathSim::new(ms(50), 400);
        let mut peak_dwnd = 0;
        let mut shrank = false;
        while path.now_ns < 10_000_000_000 {
            path.step(&mut cc, &mut st);
            peak_dwnd = peak_dwnd.max(cc.dwnd_bytes());
            if cc.mode() == "dwnd_shrink" {
                shrank = true;
            }
        }
        assert!(shrank);
        // The loss-based part has been growing all along; dwnd gave way to it and to the queue.
        assert!(cc.dwnd_bytes() < peak_dwnd, "{} {}", cc.dwnd_bytes(), peak_dwnd);
        let diff = cc.last_diff().unwrap();
        assert!(diff < 2.0 * DEFAULT_GAMMA, "backlog {diff}");
        let q = path.queue_packets() as f64;
        assert!(q < 2.0 * DEFAULT_GAMMA, "queue {q}");
    }

    #[test]
    fn dwnd_shrinks_by_zeta_times_diff() {
        let mut cc = ctcp(&[]);
        let mut st = CwndState::new(400 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        cc.dwnd_bytes = 200 * MSS;
        // Base RTT 100 ms from one sample, then a round at 125 ms: diff = 400·0.2 = 80 ≥ γ.
        let a = ack(0, MSS, Some(ms(100)), MSS, 10 * MSS);
        cc.pkts_acked(&mut st, &a);
        cc.rtt.end_round(&a);
        cc.on_round_end(&mut st, ms(125));
        assert_eq!(cc.dwnd_bytes(), 120 * MSS);
        assert_eq!(st.cwnd_bytes, 320 * MSS);
        assert_eq!(cc.mode(), "dwnd_shrink");
    }

    #[test]
    fn loss_shrinks_the_whole_window_by_beta() {
        let mut cc = ctcp(&[]);
        let st = CwndState::new(300 * MSS, MSS);
        cc.dwnd_bytes = 200 * MSS; // cwnd part = 100
        let ev = LossEvent { now: crate::SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size_bytes: 300 * MSS, in_flight_bytes: 300 * MSS };
        // cwnd → 50, dwnd → 300·0.5 − 50 = 100: win → 150.
        assert_eq!(cc.ssthresh(&st, &ev), 150 * MSS);
        assert_eq!(cc.dwnd_bytes(), 100 * MSS);
        // With little dwnd the loss-based half dominates: dwnd → 0.
        let st = CwndState::new(100 * MSS, MSS);
        cc.dwnd_bytes = 0;
        assert_eq!(cc.ssthresh(&st, &ev), 50 * MSS);
        assert_eq!(cc.dwnd_bytes(), 0);
        let t = LossEvent { kind: LossKind::Timeout, ..ev };
        cc.dwnd_bytes = 10 * MSS;
        assert_eq!(cc.ssthresh(&st, &t), 150 * MSS);
        assert_eq!(cc.dwnd_bytes(), 0);
    }

    #[test]
    fn below_low_window_it_is_reno() {
        let mut cc = ctcp(&[]);
        let mut st = CwndState::new(20 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        let mut path = PathSim::new(ms(50), 1000);
        path.run_until(&mut cc, &mut st, 500_000_000);
        assert_eq!(cc.dwnd_bytes(), 0);
        assert_eq!(cc.mode(), "reno");
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Compound::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("alpha", 0.0)]), Err(CcError::BadParam { param: "alpha", .. })));
        assert!(matches!(p(&[("k", 1.0)]), Err(CcError::BadParam { param: "k", .. })));
        assert!(matches!(p(&[("beta", 0.0)]), Err(CcError::BadParam { param: "beta", .. })));
        assert!(matches!(p(&[("gamma", -3.0)]), Err(CcError::BadParam { param: "gamma", .. })));
        assert!(matches!(p(&[("low_window", 1.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("delta", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
