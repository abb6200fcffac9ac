//! TCP-Illinois (Liu, Başar, Srikant, "TCP-Illinois: A Loss and Delay-Based Congestion Control
//! Algorithm for High-Speed Networks", VALUETOOLS 2006; Performance Evaluation 65(6–7), 2008):
//! the `illinois` controller.
//!
//! # What it does
//!
//! AIMD whose increase α and decrease β are functions of the average queueing delay d_a: loss
//! remains the congestion signal, delay only sets how aggressively to grow and how deeply to
//! back off (Liu et al. 2006):
//!
//! - **Delay measurement**: T_min and T_max are the smallest and largest RTTs seen; the maximum
//!   queueing delay is `d_m = T_max − T_min`; the average queueing delay of the last RTT is
//!   `d_a = T_a − T_min`, T_a the mean RTT sample over that RTT.
//! - **Increase** `α = f1(d_a)` per RTT (cwnd += α/cwnd per ACK): α = α_max = 10 while
//!   `d_a ≤ d_1 = η_1·d_m`, then falling as `κ_1/(κ_2 + d_a)` to α_min = 0.3 at d_a = d_m. κ_1
//!   and κ_2 make f1 continuous: f1(d_1) = α_max and f1(d_m) = α_min, i.e.
//!   `κ_1 = (d_m − d_1)·α_min·α_max/(α_max − α_min)`,
//!   `κ_2 = (d_m − d_1)·α_min/(α_max − α_min) − d_1`.
//!   Far from congestion the window grows ten times faster than Reno's; near it, three times
//!   more slowly (a concave window curve, like CUBIC's).
//! - **Decrease** `β = f2(d_a)` on a loss (cwnd ← (1 − β)·cwnd): β_min = 1/8 while
//!   `d_a ≤ d_2 = η_2·d_m`, β_max = 1/2 once `d_a ≥ d_3 = η_3·d_m`, linear in between
//!   (`κ_3 + κ_4·d_a`, continuous at d_2 and d_3). A loss with an empty queue (a random loss)
//!   costs 1/8 of the window; a loss with a full queue, Reno's half.
//! - α and β are updated once per RTT. α returns to α_max only after d_a has stayed at or below
//!   d_1 for θ = 5 consecutive RTTs (a single low sample does not make the flow aggressive).
//! - Below W_thresh = 10 packets the flow is standard TCP (α = 1, β = 1/2): the delay signal of
//!   a small window is too noisy to act on.
//!
//! # Choices
//!
//! - A round (one RTT) ends when snd_una passes the snd_nxt recorded at its start (as Linux
//!   Vegas/Illinois count rounds); T_a is the mean of the round's RTT samples. A round without
//!   samples changes nothing.
//! - Before the first completed round α = 1 and β = 1/2 (standard TCP): there is no delay
//!   information yet.
//! - Illinois changes only congestion avoidance; slow start is standard
//!   ([`crate::reno::slow_start`]).
//! - The decrease uses cwnd (the paper's W), not FlightSize.

use crate::growth::PerRttIncrease;
use crate::reno::cwnd_limited_slow_start_first;
use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, ParamInfo, Params};

/// Default α_max, packets per RTT (Liu et al. 2006: 10).
pub const DEFAULT_ALPHA_MAX: f64 = 10.0;
/// Default α_min, packets per RTT (Liu et al. 2006: 0.3).
pub const DEFAULT_ALPHA_MIN: f64 = 0.3;
/// Default β_min, fraction of cwnd removed at a loss with little queueing (1/8).
pub const DEFAULT_BETA_MIN: f64 = 0.125;
/// Default β_max, fraction of cwnd removed at a loss with a large queue (1/2).
pub const DEFAULT_BETA_MAX: f64 = 0.5;
/// Default η_1: d_1 = η_1·d_m, the delay below which α = α_max (0.01).
pub const DEFAULT_ETA1: f64 = 0.01;
/// Default η_2: d_2 = η_2·d_m, the delay below which β = β_min (0.1).
pub const DEFAULT_ETA2: f64 = 0.1;
/// Default η_3: d_3 = η_3·d_m, the delay above which β = β_max (0.8).
pub const DEFAULT_ETA3: f64 = 0.8;
/// Default θ, RTTs with d_a ≤ d_1 before α returns to α_max (5).
pub const DEFAULT_THETA: f64 = 5.0;
/// Default W_thresh, packets: standard TCP below it (10).
pub const DEFAULT_WIN_THRESH: f64 = 10.0;

/// Standard TCP's increase and decrease, used below W_thresh and before any delay information.
const STANDARD_ALPHA: f64 = 1.0;
const STANDARD_BETA: f64 = 0.5;

/// The `illinois` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "alpha_max",
        default: DEFAULT_ALPHA_MAX,
        doc: "α_max, packets per RTT: the increase with no queueing (Liu et al. 2006); > alpha_min",
    },
    ParamInfo {
        name: "alpha_min",
        default: DEFAULT_ALPHA_MIN,
        doc: "α_min, packets per RTT: the increase at the largest queueing delay; > 0",
    },
    ParamInfo {
        name: "beta_min",
        default: DEFAULT_BETA_MIN,
        doc: "β_min, fraction of cwnd removed at a loss with little queueing; \
              0 < beta_min <= beta_max",
    },
    ParamInfo {
        name: "beta_max",
        default: DEFAULT_BETA_MAX,
        doc: "β_max, fraction of cwnd removed at a loss with a large queue; \
              beta_min <= beta_max < 1",
    },
    ParamInfo {
        name: "eta1",
        default: DEFAULT_ETA1,
        doc: "η_1: α = α_max while d_a <= η_1·d_m; 0 <= eta1 < 1",
    },
    ParamInfo {
        name: "eta2",
        default: DEFAULT_ETA2,
        doc: "η_2: β = β_min while d_a <= η_2·d_m; 0 <= eta2 < eta3",
    },
    ParamInfo {
        name: "eta3",
        default: DEFAULT_ETA3,
        doc: "η_3: β = β_max once d_a >= η_3·d_m; eta2 < eta3 <= 1",
    },
    ParamInfo {
        name: "theta",
        default: DEFAULT_THETA,
        doc: "θ, RTTs: d_a must stay <= d_1 this many RTTs before α returns to α_max; integer >= 0",
    },
    ParamInfo {
        name: "win_thresh",
        default: DEFAULT_WIN_THRESH,
        doc: "W_thresh, packets: standard TCP below it; >= 0",
    },
];

/// The parameter names [`Illinois::new`] accepts.
const PARAM_NAMES: &[&str] = &[
    "alpha_max",
    "alpha_min",
    "beta_min",
    "beta_max",
    "eta1",
    "eta2",
    "eta3",
    "theta",
    "win_thresh",
];

/// The RTT samples of the current round.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Round {
    end_seq: u64,
    sum_secs: f64,
    samples: u32,
}

/// The TCP-Illinois congestion controller.
#[derive(Clone, Debug)]
pub struct Illinois {
    alpha_max: f64,
    alpha_min: f64,
    beta_min: f64,
    beta_max: f64,
    eta1: f64,
    eta2: f64,
    eta3: f64,
    theta: u32,
    win_thresh: f64,
    /// T_min, seconds.
    t_min: Option<f64>,
    /// T_max, seconds.
    t_max: Option<f64>,
    round: Option<Round>,
    /// Consecutive rounds with d_a ≤ d_1.
    low_rounds: u32,
    /// Current α, packets per RTT.
    alpha: f64,
    /// Current β.
    beta: f64,
    growth: PerRttIncrease,
}

impl Illinois {
    /// A TCP-Illinois controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`], or [`CcError::BadParam`] for a value outside its range.
    pub fn new(params: &Params) -> Result<Illinois, CcError> {
        params.expect_only("illinois", PARAM_NAMES)?;
        let g = |n: &str, d: f64| params.get_or(n, d);
        let alpha_min = g("alpha_min", DEFAULT_ALPHA_MIN);
        if !(alpha_min.is_finite() && alpha_min > 0.0) {
            return Err(bad("alpha_min", alpha_min, "must be a finite number > 0"));
        }
        let alpha_max = g("alpha_max", DEFAULT_ALPHA_MAX);
        if !(alpha_max.is_finite() && alpha_max > alpha_min) {
            return Err(bad("alpha_max", alpha_max, "must be finite and > alpha_min"));
        }
        let beta_min = g("beta_min", DEFAULT_BETA_MIN);
        if !(beta_min > 0.0 && beta_min < 1.0) {
            return Err(bad("beta_min", beta_min, "must be strictly between 0 and 1"));
        }
        let beta_max = g("beta_max", DEFAULT_BETA_MAX);
        if !(beta_max >= beta_min && beta_max < 1.0) {
            return Err(bad("beta_max", beta_max, "must be >= beta_min and < 1"));
        }
        let eta1 = g("eta1", DEFAULT_ETA1);
        if !(0.0..1.0).contains(&eta1) {
            return Err(bad("eta1", eta1, "must be >= 0 and < 1"));
        }
        let eta3 = g("eta3", DEFAULT_ETA3);
        if !(eta3 > 0.0 && eta3 <= 1.0) {
            return Err(bad("eta3", eta3, "must be > 0 and <= 1"));
        }
        let eta2 = g("eta2", DEFAULT_ETA2);
        if !(eta2 >= 0.0 && eta2 < eta3) {
            return Err(bad("eta2", eta2, "must be >= 0 and < eta3"));
        }
        let theta = g("theta", DEFAULT_THETA);
        if !(theta >= 0.0 && theta.fract() == 0.0 && theta <= u32::MAX as f64) {
            return Err(bad("theta", theta, "must be a whole number of RTTs >= 0"));
        }
        let win_thresh = g("win_thresh", DEFAULT_WIN_THRESH);
        if !(win_thresh.is_finite() && win_thresh >= 0.0) {
            return Err(bad("win_thresh", win_thresh, "must be a finite number >= 0"));
        }
        Ok(Illinois {
            alpha_max,
            alpha_min,
            beta_min,
            beta_max,
            eta1,
            eta2,
            eta3,
            theta: theta as u32,
            win_thresh,
            t_min: None,
            t_max: None,
            round: None,
            low_rounds: 0,
            alpha: STANDARD_ALPHA,
            beta: STANDARD_BETA,
            growth: PerRttIncrease::new(),
        })
    }

    /// f1(d_a): the increase, packets per RTT, for average queueing delay `d_a` and maximum
    /// queueing delay `d_m`, both in seconds . Without the θ rule.
    pub fn f1(&self, d_a: f64, d_m: f64) -> f64 {
        let d1 = self.eta1 * d_m;
        if d_a <= d1 {
            return self.alpha_max;
        }
        let span = self.alpha_max - self.alpha_min;
        let k1 = (d_m - d1) * self.alpha_min * self.alpha_max / span;
        let k2 = (d_m - d1) * self.alpha_min / span - d1;
        (k1 / (k2 + d_a)).max(self.alpha_min)
    }

    /// f2(d_a): the decrease, fraction of cwnd, for average queueing delay `d_a` and maximum
    /// queueing delay `d_m`, both in seconds .
    pub fn f2(&self, d_a: f64, d_m: f64) -> f64 {
        let (d2, d3) = (self.eta2 * d_m, self.eta3 * d_m);
        if d_a <= d2 {
            self.beta_min
        } else if d_a >= d3 {
            self.beta_max
        } else {
            let k4 = (self.beta_max - self.beta_min) / (d3 - d2);
            let k3 = (self.beta_min * d3 - self.beta_max * d2) / (d3 - d2);
            k3 + k4 * d_a
        }
    }

    /// The current α (packets per RTT) and β.
    pub fn alpha_beta(&self) -> (f64, f64) {
        (self.alpha, self.beta)
    }

    /// End of a round with mean RTT `t_a` seconds: update α (with the θ rule) and β.
    fn update(&mut self, t_a: f64) {
        let (Some(t_min), Some(t_max)) = (self.t_min, self.t_max) else { return };
        let d_m = t_max - t_min;
        let d_a = (t_a - t_min).max(0.0);
        if d_a <= self.eta1 * d_m {
            self.low_rounds = self.low_rounds.saturating_add(1);
            if self.low_rounds >= self.theta {
                self.alpha = self.alpha_max;
            }
        } else {
            self.low_rounds = 0;
            self.alpha = self.f1(d_a, d_m);
        }
        self.beta = self.f2(d_a, d_m);
    }
}

impl CongestionControl for Illinois {
    fn name(&self) -> &'static str {
        "illinois"
    }

    /// T_min, T_max and the round's RTT samples; at the end of a round, α and β.
    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        if let Some(rtt) = ack.rtt {
            let r = rtt.as_secs_f64();
            self.t_min = Some(self.t_min.map_or(r, |m| m.min(r)));
            self.t_max = Some(self.t_max.map_or(r, |m| m.max(r)));
        }
        let round =
            self.round.get_or_insert(Round { end_seq: ack.snd_nxt, sum_secs: 0.0, samples: 0 });
        if let Some(rtt) = ack.rtt {
            round.sum_secs += rtt.as_secs_f64();
            round.samples += 1;
        }
        if ack.snd_una >= round.end_seq {
            let r = *round;
            self.round = Some(Round { end_seq: ack.snd_nxt, sum_secs: 0.0, samples: 0 });
            if r.samples > 0 {
                self.update(r.sum_secs / r.samples as f64);
            }
        }
    }

    /// Slow start below ssthresh; above it α packets per RTT (1 below W_thresh).
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        let Some(acked) = cwnd_limited_slow_start_first(st, ack) else {
            return;
        };
        let a = if st.cwnd_packets() < self.win_thresh { STANDARD_ALPHA } else { self.alpha };
        self.growth.apply(st, a, acked);
    }

    /// ssthresh = (1 − β)·cwnd (β = 1/2 below W_thresh), at least 2 MSS.
    fn ssthresh(&mut self, st: &CwndState, _ev: &LossEvent) -> u64 {
        self.growth.reset();
        let b = if st.cwnd_packets() < self.win_thresh { STANDARD_BETA } else { self.beta };
        ((st.cwnd_bytes as f64 * (1.0 - b)) as u64).max(2 * st.mss_bytes)
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "illinois", param, value, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growth::testing::{ack, ca_state, loss, MSS};
    use crate::{Duration, LossKind, SimTime};

    fn illinois(pairs: &[(&str, f64)]) -> Illinois {
        Illinois::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    /// One round trip of a window-limited sender: `w` one-MSS ACKs, all with RTT `rtt_ms`.
    /// snd_nxt is one window past the round's start, and the round's last ACK (which starts the
    /// next round) sees the next window sent, so each call is exactly one round.
    struct Clock {
        now: SimTime,
        una: u64,
    }

    impl Clock {
        fn round(&mut self, cc: &mut Illinois, st: &mut CwndState, rtt_ms: f64, w: u64) {
            let rtt = Duration::from_secs_f64(rtt_ms / 1e3);
            let end = self.una + w * MSS;
            for i in 0..w {
                self.now += Duration(rtt.as_nanos() / w);
                self.una += MSS;
                let mut a = ack(self.now, MSS, rtt);
                a.snd_una = self.una;
                a.snd_nxt = if i + 1 == w { self.una + w * MSS } else { end };
                cc.pkts_acked(st, &a);
            }
        }
    }

    #[test]
    fn alpha_shrinks_and_beta_grows_with_queueing_delay() {
        let cc = illinois(&[]);
        let d_m = 0.100;
        // α: 10 up to d_1 = 1 ms, then κ_1/(κ_2 + d_a) down to 0.3 at d_m.
        assert_eq!(cc.f1(0.0, d_m), 10.0);
        assert_eq!(cc.f1(0.001, d_m), 10.0);
        assert!((cc.f1(d_m, d_m) - 0.3).abs() < 1e-12);
        let (k1, k2) = (0.099 * 0.3 * 10.0 / 9.7, 0.099 * 0.3 / 9.7 - 0.001);
        for d in [0.002, 0.01, 0.05, 0.08] {
            assert!((cc.f1(d, d_m) - k1 / (k2 + d)).abs() < 1e-12);
        }
        // β: 1/8 up to d_2 = 10 ms, linear to 1/2 at d_3 = 80 ms, then 1/2.
        assert_eq!(cc.f2(0.0, d_m), 0.125);
        assert_eq!(cc.f2(0.010, d_m), 0.125);
        assert!((cc.f2(0.045, d_m) - 0.3125).abs() < 1e-12, "midpoint");
        assert_eq!(cc.f2(0.080, d_m), 0.5);
        assert_eq!(cc.f2(0.100, d_m), 0.5);
        // Monotone: α never rises and β never falls as d_a grows.
        let (mut a_prev, mut b_prev) = (f64::INFINITY, 0.0);
        for i in 0..=1000 {
            let d = d_m * i as f64 / 1000.0;
            let (a, b) = (cc.f1(d, d_m), cc.f2(d, d_m));
            assert!(a <= a_prev + 1e-12 && b >= b_prev - 1e-12, "d_a = {d}");
            (a_prev, b_prev) = (a, b);
        }
        assert!(cc.f1(0.05, d_m) < 0.6, "half the maximum delay already gives a small α");
    }

    #[test]
    fn per_rtt_updates_follow_the_measured_delay_with_the_theta_rule() {
        let mut cc = illinois(&[]);
        let mut st = ca_state(100);
        let mut c = Clock { now: SimTime::ZERO, una: 0 };
        assert_eq!(cc.alpha_beta(), (1.0, 0.5), "standard TCP before any round");
        // Base RTT 100 ms, a 100 ms queue seen once: d_m = 100 ms.
        c.round(&mut cc, &mut st, 100.0, 100);
        c.round(&mut cc, &mut st, 200.0, 100);
        c.round(&mut cc, &mut st, 200.0, 100);
        let (a, b) = cc.alpha_beta();
        assert!((a - 0.3).abs() < 1e-9 && b == 0.5, "full queue: α = {a}, β = {b}");
        c.round(&mut cc, &mut st, 145.0, 100);
        let (a, b) = cc.alpha_beta();
        assert!((a - cc.f1(0.045, 0.1)).abs() < 1e-9 && (b - 0.3125).abs() < 1e-9);
        // The queue empties: β drops at once, α waits θ = 5 rounds below d_1.
        for i in 1..=5 {
            c.round(&mut cc, &mut st, 100.0, 100);
            let (a, b) = cc.alpha_beta();
            assert_eq!(b, 0.125);
            if i < 5 {
                assert!(a < 1.0, "round {i}: α must wait, got {a}");
            } else {
                assert_eq!(a, 10.0);
            }
        }
    }

    #[test]
    fn increase_is_alpha_per_rtt_and_decrease_is_beta() {
        let mut cc = illinois(&[]);
        let mut st = ca_state(100);
        let mut c = Clock { now: SimTime::ZERO, una: 0 };
        c.round(&mut cc, &mut st, 200.0, 100);
        for _ in 0..5 {
            c.round(&mut cc, &mut st, 100.0, 100);
        }
        assert_eq!(cc.alpha_beta(), (10.0, 0.125));
        let mut grow = ca_state(100);
        for _ in 0..100 {
            cc.cong_avoid(&mut grow, &ack(SimTime::ZERO, MSS, Duration::from_millis(100)));
        }
        assert!((grow.cwnd_packets() - 110.0).abs() < 0.5, "{}", grow.cwnd_packets());
        let ss = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st));
        assert_eq!(ss, (100.0 * MSS as f64 * 0.875) as u64);
        // Below W_thresh: standard TCP.
        let mut small = ca_state(8);
        for _ in 0..8 {
            cc.cong_avoid(&mut small, &ack(SimTime::ZERO, MSS, Duration::from_millis(100)));
        }
        assert!((small.cwnd_packets() - 9.0).abs() < 0.05);
        let small = ca_state(8);
        assert_eq!(cc.ssthresh(&small, &loss(SimTime::ZERO, LossKind::Timeout, &small)), 4 * MSS);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Illinois::new(&Params::from_pairs(
                pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))
        };
        for (name, v) in [
            ("alpha_min", 0.0),
            ("alpha_max", 0.2),
            ("beta_min", 0.0),
            ("beta_max", 0.1),
            ("beta_max", 1.0),
            ("eta1", 1.0),
            ("eta2", 0.9),
            ("eta3", 0.0),
            ("theta", 1.5),
            ("win_thresh", -1.0),
        ] {
            match p(&[(name, v)]) {
                Err(CcError::BadParam { flavor: "illinois", param, .. }) => assert_eq!(param, name),
                other => panic!("expected BadParam for {name} = {v}, got {other:?}"),
            }
        }
        assert!(matches!(p(&[("gamma", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(illinois(&[]).name(), "illinois");
    }
}
