//! HighSpeed TCP (RFC 3649): the `highspeed` controller.
//!
//! # What it does
//!
//! HighSpeed TCP changes only the congestion-avoidance response of standard TCP, and only above
//! `Low_Window` packets (RFC 3649 §5):
//!
//! - **Response function** (§5): at a steady packet drop rate `p` the average window is
//!   `W = Low_Window · (p/Low_P)^S`, `S = (log High_Window − log Low_Window) /
//!   (log High_P − log Low_P)`, a straight line on a log–log plot through
//!   (Low_P, Low_Window) = (10⁻³, 38) and (High_P, High_Window) = (10⁻⁷, 83 000); numerically
//!   `W ≈ 0.12/p^0.835` ([`HighSpeed::response_window`]).
//! - **Decrease** (§5): on a congestion event `cwnd ← (1 − b(w))·w` with
//!   `b(w) = 0.5 + (High_Decrease − 0.5)·(log w − log Low_Window)/(log High_Window −
//!   log Low_Window)` ([`HighSpeed::b`]): 0.5 at Low_Window falling to High_Decrease = 0.1 at High_Window.
//! - **Increase** (§5): `cwnd ← cwnd + a(w)/w` per packet acknowledged, with
//!   `a(w) = w²·p(w)·2·b(w)/(2 − b(w))` ([`HighSpeed::a`]), where `p(w)` is the drop rate at which
//!   the response function gives `w`. This is the increase that makes an AIMD(a, b) sawtooth
//!   average `W(p)`: an AIMD(a, b) flow averages `sqrt(a(2 − b)/(2bp))` packets.
//! - At or below Low_Window, `a = 1` and `b = 0.5`: standard TCP (RFC 5681), so HighSpeed TCP is
//!   exactly Reno where Reno works well.
//!
//! # Choices
//!
//! - `a(w)` and `b(w)` are evaluated from the formulas of §5 for the current window, not looked up
//!   in the step table of Appendix B (which the RFC derives from the same formulas for
//!   implementations that avoid floating point); the unit tests check the formulas against that
//!   table.
//! - `Low_P` is 10⁻³, the drop rate the RFC pairs with Low_Window = 38 (§5; standard TCP's
//!   `1.5/38²` rounds to it). With it the formulas reproduce Appendix B's a(w) to within 0.4.
//! - The decrease uses cwnd (RFC 3649 speaks of the congestion window `w`), not FlightSize; the two
//!   agree because cwnd only grows while the sender is cwnd-limited.
//! - Slow start is standard slow start ([`crate::reno::slow_start`]). RFC 3649 points to
//!   Limited Slow-Start (RFC 3742) as a separate, optional mechanism; it is not part of this
//!   flavor.

use crate::growth::PerRttIncrease;
use crate::reno::cwnd_limited_slow_start_first;
use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, ParamInfo, Params};

/// Default Low_Window, packets (RFC 3649 §5): at or below it HighSpeed TCP is standard TCP.
pub const DEFAULT_LOW_WINDOW: f64 = 38.0;

/// Default High_Window, packets (RFC 3649 §5): the window reached at drop rate High_P.
pub const DEFAULT_HIGH_WINDOW: f64 = 83_000.0;

/// Default High_P, packet drop rate (RFC 3649 §5): the drop rate that sustains High_Window.
pub const DEFAULT_HIGH_P: f64 = 1e-7;

/// Default High_Decrease, dimensionless (RFC 3649 §5): b(High_Window), the decrease at
/// High_Window.
pub const DEFAULT_HIGH_DECREASE: f64 = 0.1;

/// Low_P, packet drop rate (RFC 3649 §5): the drop rate at which standard TCP's response function
/// gives Low_Window = 38 packets (1.5/38² ≈ 10⁻³); the lower anchor of the HighSpeed response
/// function.
pub const LOW_P: f64 = 1e-3;

/// Standard TCP's decrease factor b, used at or below Low_Window (RFC 5681; RFC 3649 §5:
/// b(Low_Window) = 0.5).
const STANDARD_DECREASE: f64 = 0.5;

/// The `highspeed` flavor's tunable parameters, with defaults (listed in the registry's catalogue).
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "low_window",
        default: DEFAULT_LOW_WINDOW,
        doc: "Low_Window, packets: standard TCP at or below it (RFC 3649 §5); >= 1",
    },
    ParamInfo {
        name: "high_window",
        default: DEFAULT_HIGH_WINDOW,
        doc: "High_Window, packets: the window the response function gives at High_P \
              (RFC 3649 §5); > low_window",
    },
    ParamInfo {
        name: "high_p",
        default: DEFAULT_HIGH_P,
        doc: "High_P, packet drop rate at High_Window (RFC 3649 §5); 0 < high_p < 0.001 (Low_P)",
    },
    ParamInfo {
        name: "high_decrease",
        default: DEFAULT_HIGH_DECREASE,
        doc:
            "High_Decrease, dimensionless: the decrease b(w) at High_Window, cwnd <- (1 - b)·cwnd \
              (RFC 3649 §5); 0 < high_decrease <= 0.5",
    },
];

/// The parameter names [`HighSpeed::new`] accepts (the names in [`PARAMS`]).
const PARAM_NAMES: &[&str] = &["low_window", "high_window", "high_p", "high_decrease"];

/// The HighSpeed TCP congestion controller (RFC 3649).
#[derive(Clone, Debug)]
pub struct HighSpeed {
    /// Low_Window, packets.
    low_window: f64,
    /// High_Window, packets.
    high_window: f64,
    /// High_Decrease.
    high_decrease: f64,
    /// S, the slope of the response function on a log–log plot (RFC 3649 §5, ≈ −0.835).
    s: f64,
    growth: PerRttIncrease,
}

impl HighSpeed {
    /// A HighSpeed controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// outside the ranges given there.
    pub fn new(params: &Params) -> Result<HighSpeed, CcError> {
        params.expect_only("highspeed", PARAM_NAMES)?;
        let low_window = params.get_or("low_window", DEFAULT_LOW_WINDOW);
        if !(low_window.is_finite() && low_window >= 1.0) {
            return Err(bad("low_window", low_window, "must be a finite number >= 1"));
        }
        let high_window = params.get_or("high_window", DEFAULT_HIGH_WINDOW);
        if !(high_window.is_finite() && high_window > low_window) {
            return Err(bad("high_window", high_window, "must be finite and > low_window"));
        }
        let high_p = params.get_or("high_p", DEFAULT_HIGH_P);
        if !(high_p > 0.0 && high_p < LOW_P) {
            return Err(bad("high_p", high_p, "must be > 0 and < Low_P = 0.001"));
        }
        let high_decrease = params.get_or("high_decrease", DEFAULT_HIGH_DECREASE);
        if !(high_decrease > 0.0 && high_decrease <= STANDARD_DECREASE) {
            return Err(bad("high_decrease", high_decrease, "must be > 0 and <= 0.5"));
        }
        let s = (high_window.ln() - low_window.ln()) / (high_p.ln() - LOW_P.ln());
        Ok(HighSpeed { low_window, high_window, high_decrease, s, growth: PerRttIncrease::new() })
    }

    /// The HighSpeed response function (RFC 3649 §5): the average window, packets, at a steady
    /// packet drop rate `p`: `Low_Window·(p/Low_P)^S`. Only meaningful for p ≤ Low_P (above it
    /// the flow is in the standard-TCP regime).
    pub fn response_window(&self, p: f64) -> f64 {
        self.low_window * (p / LOW_P).powf(self.s)
    }

    /// The inverse of [`HighSpeed::response_window`]: the drop rate p(w) at which the response
    /// function gives `w` packets (RFC 3649 §5).
    pub fn drop_rate(&self, w: f64) -> f64 {
        LOW_P * (w / self.low_window).powf(1.0 / self.s)
    }

    /// b(w), the decrease at window `w` packets (RFC 3649 §5): 0.5 at or below Low_Window,
    /// falling linearly in log w to High_Decrease at High_Window (and below it further out).
    pub fn b(&self, w: f64) -> f64 {
        if w <= self.low_window {
            return STANDARD_DECREASE;
        }
        (self.high_decrease - STANDARD_DECREASE) * (w.ln() - self.low_window.ln())
            / (self.high_window.ln() - self.low_window.ln())
            + STANDARD_DECREASE
    }

    /// a(w), the increase in packets per RTT at window `w` packets (RFC 3649 §5):
    /// `w²·p(w)·2·b(w)/(2 − b(w))`; 1 at or below Low_Window.
    pub fn a(&self, w: f64) -> f64 {
        if w <= self.low_window {
            return 1.0;
        }
        let b = self.b(w);
        w * w * self.drop_rate(w) * 2.0 * b / (2.0 - b)
    }
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    /// Slow start below ssthresh; above it, cwnd grows by a(w)/w per packet acknowledged
    /// (RFC 3649 §5), i.e. a(w) packets per RTT.
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        let Some(acked) = cwnd_limited_slow_start_first(st, ack) else {
            return;
        };
        let a = self.a(st.cwnd_packets());
        self.growth.apply(st, a, acked);
    }

    /// ssthresh = (1 − b(w))·cwnd (RFC 3649 §5), at least 2 MSS.
    fn ssthresh(&mut self, st: &CwndState, _ev: &LossEvent) -> u64 {
        self.growth.reset();
        let b = self.b(st.cwnd_packets());
        ((st.cwnd_bytes as f64 * (1.0 - b)) as u64).max(2 * st.mss_bytes)
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "highspeed", param, value, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growth::testing::{ack, ca_state, loss, MSS};
    use crate::{Duration, LossKind, SimTime};

    fn hs() -> HighSpeed {
        HighSpeed::new(&Params::default()).unwrap()
    }

    /// RFC 3649 Appendix B: (w, a(w), b(w)), the first twenty rows and the last.
    const APPENDIX_B: &[(f64, f64, f64)] = &[
        (38.0, 1.0, 0.50),
        (118.0, 2.0, 0.44),
        (221.0, 3.0, 0.41),
        (347.0, 4.0, 0.38),
        (495.0, 5.0, 0.37),
        (663.0, 6.0, 0.35),
        (851.0, 7.0, 0.34),
        (1058.0, 8.0, 0.33),
        (1284.0, 9.0, 0.32),
        (1529.0, 10.0, 0.31),
        (1793.0, 11.0, 0.30),
        (2076.0, 12.0, 0.29),
        (2378.0, 13.0, 0.28),
        (2699.0, 14.0, 0.28),
        (3039.0, 15.0, 0.27),
        (3399.0, 16.0, 0.27),
        (3778.0, 17.0, 0.26),
        (4177.0, 18.0, 0.26),
        (4596.0, 19.0, 0.25),
        (5036.0, 20.0, 0.25),
        (84035.0, 73.0, 0.10),
    ];

    /// RFC 3649 §5, the HighSpeed response function table: (p, W).
    const RESPONSE_TABLE: &[(f64, f64)] =
        &[(1e-3, 38.0), (1e-4, 263.0), (1e-5, 1795.0), (1e-6, 12279.0), (1e-7, 83981.0)];

    #[test]
    fn a_and_b_match_appendix_b() {
        let h = hs();
        for &(w, a, b) in APPENDIX_B {
            assert!((h.a(w) - a).abs() <= 0.4, "a({w}) = {:.3}, table {a}", h.a(w));
            assert!((h.b(w) - b).abs() <= 0.006, "b({w}) = {:.4}, table {b}", h.b(w));
        }
        // Standard TCP at and below Low_Window.
        assert_eq!((h.a(10.0), h.b(10.0)), (1.0, 0.5));
        assert_eq!((h.a(38.0), h.b(38.0)), (1.0, 0.5));
        // The anchors: b(High_Window) = High_Decrease, p(High_Window) = High_P.
        assert!((h.b(83_000.0) - 0.1).abs() < 1e-12);
        assert!((h.drop_rate(83_000.0) / 1e-7 - 1.0).abs() < 1e-9);
        assert!((h.s + 0.835).abs() < 0.001, "S = {}", h.s);
    }

    #[test]
    fn response_function_matches_the_rfc_table() {
        let h = hs();
        for &(p, w) in RESPONSE_TABLE {
            let got = h.response_window(p);
            // The table was computed from W = 0.12/p^0.835, the rounded form of the same line.
            assert!((got / w - 1.0).abs() < 0.02, "W({p}) = {got:.1}, table {w}");
            assert!((h.drop_rate(got) / p - 1.0).abs() < 1e-9);
        }
    }

    /// Drive the controller itself through the deterministic AIMD model: one loss every 1/p
    /// packets acknowledged, after which the transport's recovery leaves cwnd = ssthresh. Returns
    /// the time-average window (packets acknowledged per RTT) over the cycles after a warm-up.
    fn steady_state_window(p: f64) -> f64 {
        let mut h = hs();
        let w0 = h.response_window(p);
        let mut st = ca_state(w0 as u64);
        let per_loss = (1.0 / p).round() as u64;
        let (mut packets, mut rtts) = (0u64, 0.0f64);
        for cycle in 0..10 {
            let mut acked = 0u64;
            while acked < per_loss {
                // ACKs of up to 1/64 of a window at a time keep the drive fast at 80 000 packets;
                // the increase per byte is the same.
                let w = st.cwnd_packets();
                let k = ((w / 64.0) as u64).clamp(1, per_loss - acked);
                h.cong_avoid(&mut st, &ack(SimTime::ZERO, k * MSS, Duration::from_millis(100)));
                acked += k;
                if cycle >= 4 {
                    packets += k;
                    rtts += k as f64 / w;
                }
            }
            let ss = h.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st));
            st.cwnd_bytes = ss;
            st.ssthresh_bytes = ss;
        }
        packets as f64 / rtts
    }

    #[test]
    fn deterministic_steady_state_follows_the_response_function_within_10_percent() {
        for &(p, w) in RESPONSE_TABLE {
            let got = steady_state_window(p);
            eprintln!("p = {p}: deterministic steady state {got:.1} packets, RFC 3649 {w}");
            assert!((got / w - 1.0).abs() < 0.10, "p = {p}: average window {got:.1}, RFC {w}");
        }
    }

    #[test]
    fn increase_is_a_of_w_per_rtt_and_decrease_is_b_of_w() {
        let mut h = hs();
        let mut st = ca_state(1058);
        // One window of one-MSS ACKs adds a(1058) ≈ 8.1 packets.
        for _ in 0..1058 {
            h.cong_avoid(&mut st, &ack(SimTime::ZERO, MSS, Duration::from_millis(50)));
        }
        let grown = st.cwnd_packets() - 1058.0;
        assert!((grown - h.a(1058.0)).abs() < 0.1, "grew {grown:.2}, a = {:.2}", h.a(1058.0));
        assert!(grown > 7.5);

        let st = ca_state(1058);
        let ss = h.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st));
        let expect = (1058 * MSS) as f64 * (1.0 - h.b(1058.0));
        assert_eq!(ss, expect as u64);
        assert!((ss as f64 / (1058 * MSS) as f64 - 0.673).abs() < 0.002);

        // Standard TCP below Low_Window: +1 packet per RTT, halve.
        let mut st = ca_state(20);
        for _ in 0..20 {
            h.cong_avoid(&mut st, &ack(SimTime::ZERO, MSS, Duration::from_millis(50)));
        }
        assert!((st.cwnd_packets() - 21.0).abs() < 0.05);
        let st = ca_state(20);
        assert_eq!(h.ssthresh(&st, &loss(SimTime::ZERO, LossKind::Timeout, &st)), 10 * MSS);
        let st = ca_state(3);
        assert_eq!(h.ssthresh(&st, &loss(SimTime::ZERO, LossKind::Timeout, &st)), 2 * MSS);
    }

    #[test]
    fn slow_start_is_standard() {
        let mut h = hs();
        let mut st = CwndState::new(10 * MSS, MSS);
        h.cong_avoid(&mut st, &ack(SimTime::ZERO, 2 * MSS, Duration::from_millis(50)));
        assert_eq!(st.cwnd_bytes, 12 * MSS);
        let mut a = ack(SimTime::ZERO, 2 * MSS, Duration::from_millis(50));
        a.cwnd_limited = false;
        h.cong_avoid(&mut st, &a);
        assert_eq!(st.cwnd_bytes, 12 * MSS, "no growth when not cwnd-limited");
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            HighSpeed::new(&Params::from_pairs(
                pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))
        };
        let bad_param = |r: Result<HighSpeed, CcError>, name: &str| match r {
            Err(CcError::BadParam { flavor: "highspeed", param, .. }) => assert_eq!(param, name),
            other => panic!("expected BadParam for {name}, got {other:?}"),
        };
        bad_param(p(&[("low_window", 0.5)]), "low_window");
        bad_param(p(&[("low_window", f64::NAN)]), "low_window");
        bad_param(p(&[("high_window", 38.0)]), "high_window");
        bad_param(p(&[("high_p", 0.0)]), "high_p");
        bad_param(p(&[("high_p", 0.01)]), "high_p");
        bad_param(p(&[("high_decrease", 0.0)]), "high_decrease");
        bad_param(p(&[("high_decrease", 0.6)]), "high_decrease");
        assert!(matches!(p(&[("alpha", 1.0)]), Err(CcError::UnknownParam { .. })));
        let h = p(&[("high_decrease", 0.2), ("low_window", 30.0)]).unwrap();
        assert!((h.b(h.high_window) - 0.2).abs() < 1e-12);
        assert_eq!(h.b(30.0), 0.5);
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(hs().name(), "highspeed");
    }
}
