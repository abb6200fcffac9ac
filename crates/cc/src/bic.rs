//! BIC-TCP, Binary Increase Congestion control (Xu, Harfoush, Rhee, "Binary Increase Congestion
//! Control (BIC) for Fast Long-Distance Networks", IEEE INFOCOM 2004): the `bic` controller.
//!
//! # What it does
//!
//! BIC treats congestion avoidance as a search for the largest window the path carries
//! (Xu et al. 2004):
//!
//! - **Binary search increase**: W_max is the window at the last loss, W_min the window
//!   after the reduction. Each RTT the window moves to the midpoint of [W_min, W_max]; an RTT
//!   without loss makes the current window the new W_min. With the window at W_min that is an
//!   increase of `(W_max − cwnd)/2` per RTT: large far below W_max, shrinking geometrically as
//!   cwnd nears it, so the window dwells near the level that last caused a loss.
//! - **Additive increase**: the per-RTT increase is at most S_max, so after a large
//!   reduction the window first climbs linearly (RTT fairness of additive increase).
//! - **Max probing** ("slow start" in the paper): past W_max the new maximum is unknown; the window
//!   grows as the mirror image of the binary search, by `cwnd − W_max` per RTT — slowly at first
//!   (the old maximum may still be right), then exponentially faster, until the step reaches
//!   S_max and growth turns additive again.
//! - Steps below S_min are raised to S_min, so the search ends and probing starts.
//! - **Multiplicative decrease**: on a loss, `cwnd ← β·cwnd` (β = 0.8 keeps 80%).
//! - **Fast convergence**: if the loss comes below the previous W_max, the flow is
//!   probably losing share to a new flow; W_max is set to `cwnd·(1 + β)/2`, below the window at
//!   the loss, so the next search aims lower and releases bandwidth.
//! - **Low window**: at or below low_window = 14 packets BIC is standard TCP (one packet
//!   per RTT, halve on loss), for fairness to Reno where Reno works.
//!
//! # Choices
//!
//! - The paper states its increase per RTT; here each ACK adds `inc·bytes_acked/cwnd`
//!   (RFC 3465 byte counting), so one window of ACKs adds `inc` packets, with `inc` recomputed
//!   from the current cwnd on every ACK. The search is therefore continuous rather than a jump to
//!   the midpoint once per RTT: the distance to W_max shrinks by a factor e^(−1/2) ≈ 0.61 per RTT
//!   instead of 1/2, and past W_max the distance grows by a factor e per RTT instead of 2.
//! - Before the first loss there is no W_max: congestion avoidance grows by S_max per RTT.
//! - β is given as the fraction of the window *kept* (0.8: a 20% decrease), as the paper's
//!   multiplicative decrease and the authors' Linux implementation (819/1024) give it; S_max = 16
//!   is that implementation's value too.
//! - Slow start is standard slow start ([`crate::reno::slow_start`]).

use crate::growth::PerRttIncrease;
use crate::reno::slow_start;
use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, ParamInfo, Params};

/// Default β, the fraction of cwnd kept at a loss (Xu et al. 2004; Linux BIC: 819/1024).
pub const DEFAULT_BETA: f64 = 0.8;

/// Default S_max, packets per RTT: the largest per-RTT increase (Xu et al. 2004).
pub const DEFAULT_S_MAX: f64 = 16.0;

/// Default S_min, packets per RTT: the smallest per-RTT increase (Xu et al. 2004).
pub const DEFAULT_S_MIN: f64 = 0.01;

/// Default low_window, packets: standard TCP at or below it (Xu et al. 2004).
pub const DEFAULT_LOW_WINDOW: f64 = 14.0;

/// Standard TCP's decrease, used at or below low_window (RFC 5681).
const STANDARD_KEEP: f64 = 0.5;

/// The `bic` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "beta",
        default: DEFAULT_BETA,
        doc: "β, fraction of cwnd kept at a loss: cwnd <- β·cwnd (Xu et al. 2004); 0 < beta < 1",
    },
    ParamInfo {
        name: "s_max",
        default: DEFAULT_S_MAX,
        doc: "S_max, packets per RTT: the largest increase per RTT; >= s_min",
    },
    ParamInfo {
        name: "s_min",
        default: DEFAULT_S_MIN,
        doc: "S_min, packets per RTT: the smallest increase per RTT; > 0",
    },
    ParamInfo {
        name: "low_window",
        default: DEFAULT_LOW_WINDOW,
        doc: "low_window, packets: standard TCP at or below it; >= 0",
    },
    ParamInfo {
        name: "fast_convergence",
        default: 1.0,
        doc: "fast convergence, W_max = cwnd·(1 + β)/2 on a loss below the last W_max: \
              1 = on, 0 = off",
    },
];

/// The parameter names [`Bic::new`] accepts.
const PARAM_NAMES: &[&str] = &["beta", "s_max", "s_min", "low_window", "fast_convergence"];

/// Which growth rule the last ACK used, reported by [`CongestionControl::mode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    SlowStart,
    /// Standard TCP at or below low_window.
    Reno,
    /// Below W_max, step limited by S_max.
    Additive,
    /// Below W_max: half the distance to W_max per RTT.
    BinarySearch,
    /// Above W_max, step below S_max.
    MaxProbing,
}

/// The BIC congestion controller (Xu, Harfoush, Rhee 2004).
#[derive(Clone, Debug)]
pub struct Bic {
    beta: f64,
    s_max: f64,
    s_min: f64,
    low_window: f64,
    fast_convergence: bool,
    /// W_max, packets: the window at the last loss (lowered by fast convergence); `None` before
    /// the first loss.
    w_max: Option<f64>,
    growth: PerRttIncrease,
    mode: Mode,
}

impl Bic {
    /// A BIC controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`], or [`CcError::BadParam`] for a value outside its range.
    pub fn new(params: &Params) -> Result<Bic, CcError> {
        params.expect_only("bic", PARAM_NAMES)?;
        let beta = params.get_or("beta", DEFAULT_BETA);
        if !(beta > 0.0 && beta < 1.0) {
            return Err(bad("beta", beta, "must be strictly between 0 and 1"));
        }
        let s_min = params.get_or("s_min", DEFAULT_S_MIN);
        if !(s_min.is_finite() && s_min > 0.0) {
            return Err(bad("s_min", s_min, "must be a finite number > 0"));
        }
        let s_max = params.get_or("s_max", DEFAULT_S_MAX);
        if !(s_max.is_finite() && s_max >= s_min) {
            return Err(bad("s_max", s_max, "must be finite and >= s_min"));
        }
        let low_window = params.get_or("low_window", DEFAULT_LOW_WINDOW);
        if !(low_window.is_finite() && low_window >= 0.0) {
            return Err(bad("low_window", low_window, "must be a finite number >= 0"));
        }
        let v = params.get_or("fast_convergence", 1.0);
        let fast_convergence = if v == 1.0 {
            true
        } else if v == 0.0 {
            false
        } else {
            return Err(bad("fast_convergence", v, "must be 0 (off) or 1 (on)"));
        };
        Ok(Bic {
            beta,
            s_max,
            s_min,
            low_window,
            fast_convergence,
            w_max: None,
            growth: PerRttIncrease::new(),
            mode: Mode::SlowStart,
        })
    }

    /// The increase per RTT, packets, at window `w` packets, and the rule that gave it:
    /// `(W_max − w)/2` below W_max (binary search), `w − W_max` above it (max probing), clamped
    /// to [S_min, S_max]; 1 at or below low_window.
    fn increment(&self, w: f64) -> (f64, Mode) {
        if w <= self.low_window {
            return (1.0, Mode::Reno);
        }
        let (raw, below) = match self.w_max {
            Some(m) if w < m => ((m - w) / 2.0, true),
            Some(m) => (w - m, false),
            None => (f64::INFINITY, false),
        };
        let inc = raw.clamp(self.s_min, self.s_max);
        let mode = match (below, raw >= self.s_max) {
            (true, true) => Mode::Additive,
            (true, false) => Mode::BinarySearch,
            (false, true) => Mode::Additive,
            (false, false) => Mode::MaxProbing,
        };
        (inc, mode)
    }

    /// W_max, packets (`None` before the first loss).
    pub fn w_max(&self) -> Option<f64> {
        self.w_max
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    /// Slow start below ssthresh; above it the BIC increase of [`Bic`]'s module docs, per RTT.
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        if !ack.cwnd_limited {
            return;
        }
        let mut acked = ack.bytes_acked;
        if st.in_slow_start() {
            self.mode = Mode::SlowStart;
            acked = slow_start(st, acked);
            if acked == 0 {
                return;
            }
        }
        let (inc, mode) = self.increment(st.cwnd_packets());
        self.mode = mode;
        self.growth.apply(st, inc, acked);
    }

    /// W_max ← cwnd (or cwnd·(1 + β)/2 with fast convergence when below the last W_max);
    /// returns β·cwnd, or cwnd/2 at or below low_window; at least 2 MSS.
    fn ssthresh(&mut self, st: &CwndState, _ev: &LossEvent) -> u64 {
        self.growth.reset();
        let w = st.cwnd_packets();
        self.w_max = Some(match self.w_max {
            Some(m) if self.fast_convergence && w < m => w * (1.0 + self.beta) / 2.0,
            _ => w,
        });
        let keep = if w <= self.low_window { STANDARD_KEEP } else { self.beta };
        ((st.cwnd_bytes as f64 * keep) as u64).max(2 * st.mss_bytes)
    }

    /// `"slow_start"`, `"reno"` (at or below low_window), `"additive"` (S_max steps),
    /// `"binary_search"` (below W_max) or `"max_probing"` (above W_max).
    fn mode(&self) -> &'static str {
        match self.mode {
            Mode::SlowStart => "slow_start",
            Mode::Reno => "reno",
            Mode::Additive => "additive",
            Mode::BinarySearch => "binary_search",
            Mode::MaxProbing => "max_probing",
        }
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "bic", param, value, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growth::testing::{ack, ca_state, loss, MSS};
    use crate::{Duration, LossKind, SimTime};

    fn bic(pairs: &[(&str, f64)]) -> Bic {
        Bic::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    /// One RTT: a window's worth of one-MSS ACKs. Returns (growth in packets, mode).
    fn one_rtt(cc: &mut Bic, st: &mut CwndState) -> (f64, &'static str) {
        let before = st.cwnd_packets();
        for _ in 0..st.cwnd_bytes / MSS {
            cc.cong_avoid(st, &ack(SimTime::ZERO, MSS, Duration::from_millis(50)));
        }
        (st.cwnd_packets() - before, cc.mode())
    }

    /// A loss at `w` packets and the end of recovery (cwnd = ssthresh).
    fn loss_at(cc: &mut Bic, w: u64) -> CwndState {
        let mut st = ca_state(w);
        let ss = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st));
        st.cwnd_bytes = ss;
        st.ssthresh_bytes = ss;
        st
    }

    #[test]
    fn binary_search_then_max_probing() {
        let mut cc = bic(&[]);
        let mut st = loss_at(&mut cc, 1000);
        assert_eq!(cc.w_max(), Some(1000.0));
        assert_eq!(st.cwnd_bytes, 800 * MSS);

        let mut trace = Vec::new();
        for _ in 0..60 {
            let (grown, mode) = one_rtt(&mut cc, &mut st);
            trace.push((st.cwnd_packets(), grown, mode));
        }
        // Far below W_max: additive steps of S_max = 16.
        assert_eq!(trace[0].2, "additive");
        assert!((trace[0].1 - 16.0).abs() < 0.3, "{:?}", trace[0]);
        // Then binary search: each step about half the remaining distance, shrinking.
        let bs: Vec<_> = trace.iter().filter(|t| t.2 == "binary_search").collect();
        assert!(bs.len() >= 8, "{trace:?}");
        // (Steps of S_min = 0.01 packet repeat once the distance is below 2·S_min; allow for the
        // whole bytes.)
        for pair in bs.windows(2) {
            assert!(pair[1].1 <= pair[0].1 + 0.002, "binary-search steps must shrink: {pair:?}");
        }
        assert!(bs[0].1 > 100.0 * bs.last().unwrap().1);
        for t in &bs[..6] {
            let before = t.0 - t.1;
            let half = (1000.0 - before) / 2.0;
            assert!(t.1 <= 16.0 && (t.1 - half).abs() < 0.35 * half, "{t:?}, half distance {half}");
        }
        // Never past W_max during the search; then past it by max probing, steps growing
        // (each about the distance already past W_max), until additive again.
        let first_above = trace.iter().position(|t| t.0 > 1000.0).expect("crossed W_max");
        assert!(trace[..first_above].iter().all(|t| t.2 != "max_probing"));
        let probe: Vec<_> = trace[first_above..].iter().filter(|t| t.2 == "max_probing").collect();
        assert!(probe.len() >= 5, "{trace:?}");
        for pair in probe.windows(2) {
            assert!(pair[1].1 + 0.002 >= pair[0].1, "max-probing steps must grow: {pair:?}");
        }
        assert!(probe.last().unwrap().1 > 100.0 * probe[0].1, "{probe:?}");
        let last = trace.last().unwrap();
        assert_eq!(last.2, "additive");
        assert!((last.1 - 16.0).abs() < 0.3);
        // The smallest step is taken next to W_max.
        let smallest = trace.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        assert!((smallest.0 - 1000.0).abs() < 1.0, "{smallest:?}");
    }

    #[test]
    fn multiplicative_decrease_and_fast_convergence() {
        let mut cc = bic(&[]);
        let st = loss_at(&mut cc, 1000);
        assert_eq!(st.cwnd_bytes, 800 * MSS);
        // A loss at 900 < W_max = 1000: W_max = 900·1.8/2 = 810.
        let st = loss_at(&mut cc, 900);
        assert_eq!(st.cwnd_bytes, 720 * MSS);
        assert!((cc.w_max().unwrap() - 810.0).abs() < 1e-9);
        // Above the (lowered) W_max: W_max is the window at the loss.
        loss_at(&mut cc, 850);
        assert_eq!(cc.w_max(), Some(850.0));
        let mut cc = bic(&[("fast_convergence", 0.0)]);
        loss_at(&mut cc, 1000);
        loss_at(&mut cc, 900);
        assert_eq!(cc.w_max(), Some(900.0));
    }

    #[test]
    fn standard_tcp_at_or_below_low_window() {
        let mut cc = bic(&[]);
        let st = loss_at(&mut cc, 14);
        assert_eq!(st.cwnd_bytes, 7 * MSS);
        let mut st = ca_state(12);
        let (grown, mode) = one_rtt(&mut cc, &mut st);
        assert_eq!(mode, "reno");
        assert!((grown - 1.0).abs() < 0.1);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Bic::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        for (name, v) in [
            ("beta", 0.0),
            ("beta", 1.0),
            ("s_min", 0.0),
            ("s_max", 0.001),
            ("low_window", -1.0),
            ("fast_convergence", 2.0),
        ] {
            match p(&[(name, v)]) {
                Err(CcError::BadParam { flavor: "bic", param, .. }) => assert_eq!(param, name),
                other => panic!("expected BadParam for {name} = {v}, got {other:?}"),
            }
        }
        assert!(matches!(p(&[("c", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(bic(&[]).name(), "bic");
    }
}
