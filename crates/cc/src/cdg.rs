//! CAIA Delay-Gradient (Hayes and Armitage, "Revisiting TCP Congestion Control using Delay
//! Gradients", IFIP Networking 2011): the `cdg` controller.
//!
//! # What it does
//!
//! CDG reads congestion from how the RTT *changes*, not from its level, so it needs no estimate
//! of the path's base RTT.
//!
//! - **Gradients**: in every round trip n CDG records the smallest and largest RTT,
//!   τ_min,n and τ_max,n, and forms g_min,n = τ_min,n − τ_min,n−1 and g_max,n likewise. Each is
//!   smoothed by a moving average over the last `window` (a = 8) rounds, ḡ.
//! - **Probabilistic backoff**: when the smoothed gradient ḡ is positive (a queue is
//!   growing) CDG backs off with probability `P = 1 − e^(−ḡ/G)` (G = 3 ms): cwnd ← β·cwnd with
//!   β = 0.7, at most once per round. The probability makes flows that share a queue back off at
//!   different times instead of all together, and grows with the rate at which the queue grows.
//!   Otherwise cwnd grows as Reno's (slow start, then one MSS per RTT); a backoff in slow start
//!   ends it.
//! - **Ineffectual backoff**: when a loss-based flow keeps the queue full, backing off
//!   achieves nothing. If `ineffective` (5) backoffs happen with no falling gradient in between,
//!   CDG stops backing off on delay until a gradient falls again.
//! - **Shadow window**: a shadow window `s` remembers the window before delay backoffs and
//!   grows with cwnd. On a loss ssthresh is half of the larger of cwnd and the shadow (never more
//!   than cwnd), so a CDG flow that yielded to delay does not also lose half of what is left.
//!
//! Which gradient drives the backoff: ḡ_min if it is positive (the minimum RTT rises only when the
//! queue stays above its previous floor — the clearest signal), else ḡ_max (the queue's peak is
//! rising). G is given per [`ParamInfo`] in milliseconds.
//!
//! # Randomness
//!
//! The backoff decision draws a uniform number from a small deterministic generator (SplitMix64,
//! Steele, Lea and Flood 2014) seeded by the `seed` parameter, so runs are reproducible. Two CDG
//! flows with the same seed draw the same sequence; give each flow its own `seed` to decorrelate
//! them.
//!
//! # Choices and simplifications
//!
//! - Rounds are [`RoundRtt`]'s (Vegas's once-per-RTT measurement); a round needs
//!   [`crate::vegas::MIN_ROUND_SAMPLES`] RTT samples to produce a gradient.
//! - The moving average of a round with fewer than `window` earlier gradients averages what it has.
//! - The backoff sets cwnd and ssthresh at once (the transport has no CWR state for a controller
//!   to enter); the sender then pauses until the flight drains below the new window.
//! - The paper's loss-tolerance heuristic (ignoring losses while the queue is not full) is off by
//!   default in the paper's Linux port and is not implemented; nor is HyStart, which the Linux
//!   port adds.

use ccarena_rng::SplitMix64;
use crate::reno::grow;
use crate::vegas::{RoundRtt, MIN_ROUND_SAMPLES};
use crate::{
    AckSample, CaState, CcError, CongestionControl, CwndEvent, CwndState, LossEvent, ParamInfo,
    Params, SimTime,
};

/// Default β: cwnd ← β·cwnd on a delay backoff.
pub const DEFAULT_BETA: f64 = 0.7;

/// Default G, milliseconds: backoff probability 1 − e^(−ḡ/G).
pub const DEFAULT_G_MS: f64 = 3.0;

/// Default moving-average window a, rounds.
pub const DEFAULT_WINDOW: f64 = 8.0;

/// Default number of backoffs without a falling gradient after which backoffs are ineffectual
///.
pub const DEFAULT_INEFFECTIVE: f64 = 5.0;

/// Default seed of the backoff decision's random generator.
pub const DEFAULT_SEED: f64 = 1.0;

/// Largest moving-average window accepted, rounds.
const MAX_WINDOW: usize = 256;

/// Windows never go below this many segments.
const MIN_WINDOW_SEGMENTS: u64 = 2;

/// The `cdg` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "beta",
        default: DEFAULT_BETA,
        doc: "β: cwnd <- β·cwnd on a delay-gradient backoff (Hayes & Armitage 2011); \
              0 < beta < 1",
    },
    ParamInfo {
        name: "g",
        default: DEFAULT_G_MS,
        doc: "G, milliseconds: backoff probability 1 - exp(-ḡ/G) for a smoothed RTT gradient ḡ > 0 \
              (ms per round); > 0",
    },
    ParamInfo {
        name: "window",
        default: DEFAULT_WINDOW,
        doc: "a, rounds: gradients are smoothed by a moving average over the last a rounds \
             ; whole number in [1, 256]",
    },
    ParamInfo {
        name: "ineffective",
        default: DEFAULT_INEFFECTIVE,
        doc: "backoffs without a falling gradient after which delay backoffs stop until one \
              falls (ineffectual backoff detection); whole number, 0 = off",
    },
    ParamInfo {
        name: "shadow",
        default: 1.0,
        doc: "shadow window: on loss ssthresh = min(cwnd, max(cwnd, shadow)/2); \
              1 = on, 0 = off (plain cwnd/2)",
    },
    ParamInfo {
        name: "seed",
        default: DEFAULT_SEED,
        doc: "seed of the deterministic generator (SplitMix64) for the probabilistic backoff; \
              whole number >= 0",
    },
];

const PARAM_NAMES: &[&str] = &["beta", "g", "window", "ineffective", "shadow", "seed"];

/// Moving average of the last `len` values (fewer while filling).
#[derive(Clone, Debug, PartialEq)]
struct MovingAverage {
    values: Vec<f64>,
    len: usize,
    next: usize,
    count: usize,
    sum: f64,
}

impl MovingAverage {
    fn new(len: usize) -> MovingAverage {
        MovingAverage { values: vec![0.0; len], len, next: 0, count: 0, sum: 0.0 }
    }

    fn push(&mut self, v: f64) -> f64 {
        if self.count == self.len {
            self.sum -= self.values[self.next];
        } else {
            self.count += 1;
        }
        self.values[self.next] = v;
        self.sum += v;
        self.next = (self.next + 1) % self.len;
        self.sum / self.count as f64
    }

    fn clear(&mut self) {
        self.values.iter_mut().for_each(|v| *v = 0.0);
        self.next = 0;
        self.count = 0;
        self.sum = 0.0;
    }
}

/// The CDG controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Cdg {
    beta: f64,
    g_ms: f64,
    ineffective: u32,
    use_shadow: bool,
    rng: SplitMix64,
    rtt: RoundRtt,
    /// (τ_min, τ_max) of the previous round, ms.
    prev: Option<(f64, f64)>,
    g_min: MovingAverage,
    g_max: MovingAverage,
    /// Backoffs since a gradient last fell.
    backoffs_unanswered: u32,
    /// Shadow window, bytes.
    shadow_bytes: u64,
    ca_acc_bytes: u64,
    enabled: bool,
    backoffs: u64,
    last_backoff: bool,
}

impl Cdg {
    /// A CDG controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// out of range.
    pub fn new(params: &Params) -> Result<Cdg, CcError> {
        params.expect_only("cdg", PARAM_NAMES)?;
        let bad = |param, value, reason| CcError::BadParam { flavor: "cdg", param, value, reason };
        let beta = params.get_or("beta", DEFAULT_BETA);
        if !(beta > 0.0 && beta < 1.0) {
            return Err(bad("beta", beta, "must be strictly between 0 and 1"));
        }
        let g_ms = params.get_or("g", DEFAULT_G_MS);
        if !(g_ms.is_finite() && g_ms > 0.0) {
            return Err(bad("g", g_ms, "must be a finite number of milliseconds > 0"));
        }
        let window = params.get_or("window", DEFAULT_WINDOW);
        if !(window >= 1.0 && window <= MAX_WINDOW as f64 && window.fract() == 0.0) {
            return Err(bad("window", window, "must be a whole number of rounds in [1, 256]"));
        }
        let ineffective = params.get_or("ineffective", DEFAULT_INEFFECTIVE);
        if !(ineffective >= 0.0 && ineffective <= u32::MAX as f64 && ineffective.fract() == 0.0) {
            return Err(bad("ineffective", ineffective, "must be a whole number >= 0"));
        }
        let shadow = params.get_or("shadow", 1.0);
        if shadow != 0.0 && shadow != 1.0 {
            return Err(bad("shadow", shadow, "must be 0 (off) or 1 (on)"));
        }
        let seed = params.get_or("seed", DEFAULT_SEED);
        if !(seed >= 0.0 && seed < 2f64.powi(53) && seed.fract() == 0.0) {
            return Err(bad("seed", seed, "must be a whole number in [0, 2^53)"));
        }
        Ok(Cdg {
            beta,
            g_ms,
            ineffective: ineffective as u32,
            use_shadow: shadow == 1.0,
            rng: SplitMix64::new(seed as u64),
            rtt: RoundRtt::new(),
            prev: None,
            g_min: MovingAverage::new(window as usize),
            g_max: MovingAverage::new(window as usize),
            backoffs_unanswered: 0,
            shadow_bytes: 0,
            ca_acc_bytes: 0,
            enabled: true,
            backoffs: 0,
            last_backoff: false,
        })
    }

    /// Delay-gradient backoffs so far.
    pub fn backoffs(&self) -> u64 {
        self.backoffs
    }

    /// The shadow window, bytes.
    pub fn shadow_bytes(&self) -> u64 {
        self.shadow_bytes
    }

    /// The backoff probability `1 − e^(−ḡ/G)` for a smoothed gradient ḡ (ms per round); 0 for ḡ ≤ 0.
    pub fn backoff_probability(&self, g_ms: f64) -> f64 {
        if g_ms <= 0.0 {
            0.0
        } else {
            1.0 - (-g_ms / self.g_ms).exp()
        }
    }

    /// One round's gradients; returns whether CDG backed off.
    fn on_round_end(&mut self, st: &mut CwndState, min_ms: f64, max_ms: f64) -> bool {
        let Some((prev_min, prev_max)) = self.prev.replace((min_ms, max_ms)) else { return false };
        let g_min = self.g_min.push(min_ms - prev_min);
        let g_max = self.g_max.push(max_ms - prev_max);
        if g_min < 0.0 || g_max < 0.0 {
            // A falling gradient: the last backoff (if any) took effect.
            self.backoffs_unanswered = 0;
        }
        let g = if g_min > 0.0 { g_min } else { g_max };
        if g <= 0.0 || self.rng.next_f64() >= self.backoff_probability(g) {
            return false;
        }
        if self.ineffective > 0 {
            self.backoffs_unanswered = self.backoffs_unanswered.saturating_add(1);
            if self.backoffs_unanswered > self.ineffective {
                return false;
            }
        }
        self.shadow_bytes = self.shadow_bytes.max(st.cwnd_bytes);
        let min = MIN_WINDOW_SEGMENTS * st.mss_bytes;
        st.cwnd_bytes = ((st.cwnd_bytes as f64 * self.beta) as u64).max(min);
        st.ssthresh_bytes = st.cwnd_bytes;
        self.backoffs += 1;
        true
    }
}

impl CongestionControl for Cdg {
    fn name(&self) -> &'static str {
        "cdg"
    }

    fn init(&mut self, st: &mut CwndState, _now: SimTime) {
        self.shadow_bytes = st.cwnd_bytes;
    }

    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        self.rtt.on_ack(ack);
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.last_backoff = false;
        if self.enabled {
            if let Some(round) = self.rtt.end_round(ack) {
                if round.samples >= MIN_ROUND_SAMPLES {
                    let ms = |d: crate::Duration| d.as_nanos() as f64 / 1e6;
                    if self.on_round_end(st, ms(round.min_rtt), ms(round.max_rtt)) {
                        self.last_backoff = true;
                        return;
                    }
                }
            }
        }
        if !ack.cwnd_limited {
            self.shadow_bytes = self.shadow_bytes.min(st.cwnd_bytes);
            return;
        }
        let before = st.cwnd_bytes;
        grow(st, &mut self.ca_acc_bytes, ack.bytes_acked);
        self.shadow_bytes += st.cwnd_bytes - before;
    }

    /// Shadow window: ssthresh = max(cwnd/2, min(shadow/2, cwnd)) with the shadow window, else cwnd/2;
    /// the shadow window is halved too.
    fn ssthresh(&mut self, st: &CwndState, _ev: &LossEvent) -> u64 {
        self.ca_acc_bytes = 0;
        let half = st.cwnd_bytes / 2;
        self.shadow_bytes = (self.shadow_bytes / 2).min(st.cwnd_bytes);
        let ss = if self.use_shadow { half.max(self.shadow_bytes) } else { half };
        ss.max(MIN_WINDOW_SEGMENTS * st.mss_bytes)
    }

    /// Gradients are measured only in `Open`; leaving it ends the current measurement.
    fn set_state(&mut self, _st: &mut CwndState, new: CaState, _now: SimTime) {
        let enabled = new == CaState::Open;
        if enabled != self.enabled {
            self.rtt.restart();
            self.prev = None;
        }
        self.enabled = enabled;
    }

    fn cwnd_event(&mut self, st: &mut CwndState, ev: CwndEvent, _now: SimTime) {
        if ev == CwndEvent::CwndRestart {
            self.rtt.restart();
            self.prev = None;
            self.g_min.clear();
            self.g_max.clear();
            self.backoffs_unanswered = 0;
            self.shadow_bytes = st.cwnd_bytes;
        }
    }

    /// `"backoff"` on the ACK that backed off, else `"grow"`.
    fn mode(&self) -> &'static str {
        if self.last_backoff {
            "backoff"
        } else {
            "grow"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vegas::test_support::{PathSim, MSS};
    use crate::{Duration, LossKind};

    fn cdg(pairs: &[(&str, f64)]) -> Cdg {
        Cdg::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())).unwrap()
    }

    #[test]
    fn backoff_probability_follows_one_minus_exp() {
        let cc = cdg(&[]);
        assert_eq!(cc.backoff_probability(0.0), 0.0);
        assert_eq!(cc.backoff_probability(-1.0), 0.0);
        assert!((cc.backoff_probability(3.0) - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        assert!((cc.backoff_probability(0.3) - (1.0 - (-0.1f64).exp())).abs() < 1e-12);
    }

    #[test]
    fn moving_average_over_the_window() {
        let mut m = MovingAverage::new(3);
        assert_eq!(m.push(3.0), 3.0);
        assert_eq!(m.push(6.0), 4.5);
        assert_eq!(m.push(9.0), 6.0);
        assert_eq!(m.push(0.0), 5.0); // 6, 9, 0
    }

    #[test]
    fn generator_is_deterministic_and_uniform_enough() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        let xs: Vec<f64> = (0..10_000).map(|_| a.next_f64()).collect();
        assert!(xs.iter().zip((0..10_000).map(|_| b.next_f64())).all(|(x, y)| *x == y));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.5).abs() < 0.01 && xs.iter().all(|x| (0.0..1.0).contains(x)));
    }

    #[test]
    fn a_rising_queue_triggers_backoffs_before_it_grows_large() {
        // 100-packet path with an unbounded queue: Reno growth alone would queue without limit;
        // CDG backs off on the positive gradient and keeps the queue short.
        let mut cc = cdg(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        let mut path = PathSim::new(Duration::from_millis(40), 100);
        let mut max_queue_late = 0;
        while path.now_ns < 60_000_000_000 {
            path.step(&mut cc, &mut st);
            if path.now_ns > 10_000_000_000 {
                max_queue_late = max_queue_late.max(path.queue_packets());
            }
        }
        assert!(cc.backoffs() >= 5, "backoffs {}", cc.backoffs());
        assert!(max_queue_late < 60, "max queue {max_queue_late}");
        assert!(!st.in_slow_start());
    }

    #[test]
    fn backoff_multiplies_by_beta_and_keeps_the_shadow() {
        let mut cc = cdg(&[("g", 1e-9)]); // any positive gradient backs off
        let mut st = CwndState::new(100 * MSS, MSS);
        cc.init(&mut st, SimTime::ZERO);
        assert!(!cc.on_round_end(&mut st, 40.0, 45.0), "first round: no gradient yet");
        assert!(cc.on_round_end(&mut st, 41.0, 46.0));
        assert_eq!(st.cwnd_bytes, 70 * MSS);
        assert_eq!(st.ssthresh_bytes, 70 * MSS);
        assert_eq!(cc.shadow_bytes(), 100 * MSS);
        // A loss now: half of the shadow (50) beats half of cwnd (35).
        let ev = LossEvent { now: SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size_bytes: 0, in_flight_bytes: 0 };
        assert_eq!(cc.ssthresh(&st, &ev), 50 * MSS);
        let mut plain = cdg(&[("shadow", 0.0)]);
        plain.shadow_bytes = 100 * MSS;
        assert_eq!(plain.ssthresh(&st, &ev), 35 * MSS);
    }

    #[test]
    fn backoffs_that_never_make_the_gradient_fall_are_ineffectual() {
        let mut cc = cdg(&[("g", 1e-9)]);
        let mut st = CwndState::new(1000 * MSS, MSS);
        let mut tau = 40.0;
        cc.on_round_end(&mut st, tau, tau);
        let mut backed = 0;
        for _ in 0..20 {
            tau += 1.0; // the queue keeps rising whatever CDG does (a loss-based competitor)
            if cc.on_round_end(&mut st, tau, tau) {
                backed += 1;
            }
        }
        assert_eq!(backed, DEFAULT_INEFFECTIVE as u32);
        // A falling gradient re-arms the backoff.
        cc.on_round_end(&mut st, tau - 50.0, tau - 50.0);
        for _ in 0..10 {
            tau += 20.0;
            if cc.on_round_end(&mut st, tau, tau) {
                backed += 1;
                break;
            }
        }
        assert_eq!(backed, DEFAULT_INEFFECTIVE as u32 + 1);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Cdg::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("beta", 1.0)]), Err(CcError::BadParam { param: "beta", .. })));
        assert!(matches!(p(&[("g", 0.0)]), Err(CcError::BadParam { param: "g", .. })));
        assert!(matches!(p(&[("window", 0.0)]), Err(CcError::BadParam { param: "window", .. })));
        assert!(matches!(p(&[("window", 2.5)]), Err(CcError::BadParam { param: "window", .. })));
        assert!(matches!(p(&[("ineffective", -1.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("shadow", 0.5)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("seed", 1.5)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("alpha", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
