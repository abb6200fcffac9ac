//! Scalable TCP (Kelly, "Scalable TCP: Improving Performance in Highspeed Wide Area Networks",
//! ACM SIGCOMM CCR 33(2), 2003): the `scalable` controller.
//!
//! # What it does
//!
//! Multiplicative increase, multiplicative decrease (Kelly 2003):
//!
//! - for each packet acknowledged in an RTT without congestion, `cwnd ← cwnd + a`, a = 0.01:
//!   cwnd grows by 1% per RTT;
//! - on a congestion event, `cwnd ← cwnd − b·cwnd`, b = 0.125.
//!
//! Because both the increase and the decrease are proportional to the window, the time to
//! recover the window after a congestion event, `log(1/(1 − b))/log(1 + a)` ≈ 13.4 RTTs, is the
//! same at every rate — the property the paper is named for ("scaling properties"): at
//! 10 Gbps Reno needs hours to recover, Scalable TCP the same 13 RTTs as at 10 Mbps.
//!
//! Below the legacy window `lwnd` = 16 packets the flow uses standard TCP (one packet per RTT,
//! halve on loss) ("legacy window"), so Scalable TCP is as fair to Reno as Reno where Reno
//! works.
//!
//! # Choices
//!
//! - "Per packet acknowledged" is counted in bytes (RFC 3465 ABC): an ACK of n bytes adds
//!   a·n bytes. Kelly's derivation assumes one ACK per packet; with delayed ACKs counting ACKs
//!   would halve the increase and double the recovery time.
//! - The decrease uses cwnd, not FlightSize (Kelly writes it on cwnd).
//! - Slow start is standard slow start ([`crate::reno::slow_start`]).

use crate::growth::PerRttIncrease;
use crate::reno::cwnd_limited_slow_start_first;
use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, ParamInfo, Params};

/// Default increase a, packets per packet acknowledged (Kelly 2003: a = 0.01).
pub const DEFAULT_A: f64 = 0.01;

/// Default decrease b, fraction of cwnd removed at a congestion event (Kelly 2003: b = 0.125).
pub const DEFAULT_B: f64 = 0.125;

/// Default legacy window lwnd, packets (Kelly 2003: 16): standard TCP at or below it.
pub const DEFAULT_LEGACY_WINDOW: f64 = 16.0;

/// Standard TCP's decrease, used at or below the legacy window (RFC 5681).
const STANDARD_DECREASE: f64 = 0.5;

/// The `scalable` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "a",
        default: DEFAULT_A,
        doc: "increase a, packets added per packet acknowledged (Kelly 2003); 0 < a <= 1",
    },
    ParamInfo {
        name: "b",
        default: DEFAULT_B,
        doc: "decrease b, fraction of cwnd removed on congestion, cwnd <- (1 - b)·cwnd \
              (Kelly 2003); 0 < b < 1",
    },
    ParamInfo {
        name: "legacy_window",
        default: DEFAULT_LEGACY_WINDOW,
        doc: "legacy window lwnd, packets: standard TCP at or below it (Kelly 2003); >= 0",
    },
];

/// The parameter names [`Scalable::new`] accepts.
const PARAM_NAMES: &[&str] = &["a", "b", "legacy_window"];

/// The Scalable TCP congestion controller (Kelly 2003).
#[derive(Clone, Debug)]
pub struct Scalable {
    a: f64,
    b: f64,
    legacy_window: f64,
    growth: PerRttIncrease,
}

impl Scalable {
    /// A Scalable TCP controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`], or [`CcError::BadParam`] for a value outside its range.
    pub fn new(params: &Params) -> Result<Scalable, CcError> {
        params.expect_only("scalable", PARAM_NAMES)?;
        let a = params.get_or("a", DEFAULT_A);
        if !(a > 0.0 && a <= 1.0) {
            return Err(bad("a", a, "must be > 0 and <= 1"));
        }
        let b = params.get_or("b", DEFAULT_B);
        if !(b > 0.0 && b < 1.0) {
            return Err(bad("b", b, "must be strictly between 0 and 1"));
        }
        let legacy_window = params.get_or("legacy_window", DEFAULT_LEGACY_WINDOW);
        if !(legacy_window.is_finite() && legacy_window >= 0.0) {
            return Err(bad("legacy_window", legacy_window, "must be a finite number >= 0"));
        }
        Ok(Scalable { a, b, legacy_window, growth: PerRttIncrease::new() })
    }

    /// True when a window of `w` packets is in the standard-TCP (legacy) regime.
    fn legacy(&self, w: f64) -> bool {
        w <= self.legacy_window
    }

    /// RTTs to regain the window after one congestion event above the legacy window:
    /// `log(1/(1 − b))/log(1 + a)` (Kelly 2003), ≈ 13.4 with the defaults.
    pub fn recovery_rtts(&self) -> f64 {
        (1.0 / (1.0 - self.b)).ln() / (1.0 + self.a).ln()
    }
}

impl CongestionControl for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    /// Slow start below ssthresh; above it `a` packets per packet acknowledged (a·w per RTT),
    /// or one packet per RTT at or below the legacy window.
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        let Some(acked) = cwnd_limited_slow_start_first(st, ack) else {
            return;
        };
        let w = st.cwnd_packets();
        let per_rtt = if self.legacy(w) { 1.0 } else { self.a * w };
        self.growth.apply(st, per_rtt, acked);
    }

    /// ssthresh = (1 − b)·cwnd, or cwnd/2 at or below the legacy window; at least 2 MSS.
    fn ssthresh(&mut self, st: &CwndState, _ev: &LossEvent) -> u64 {
        self.growth.reset();
        let keep =
            if self.legacy(st.cwnd_packets()) { 1.0 - STANDARD_DECREASE } else { 1.0 - self.b };
        ((st.cwnd_bytes as f64 * keep) as u64).max(2 * st.mss_bytes)
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "scalable", param, value, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growth::testing::{self, ca_state, loss, rtts_to_regain, MSS};
    use crate::{Duration, LossKind, SimTime};

    fn scalable() -> Scalable {
        Scalable::new(&Params::default()).unwrap()
    }

    const RTT: Duration = Duration::from_millis(50);

    /// One RTT of 50 ms ([`testing::one_rtt`]).
    fn one_rtt(cc: &mut Scalable, st: &mut CwndState) {
        testing::one_rtt(cc, st, RTT);
    }

    #[test]
    fn window_grows_one_percent_per_rtt() {
        let mut cc = scalable();
        for w0 in [100u64, 1000, 10_000] {
            let mut st = ca_state(w0);
            one_rtt(&mut cc, &mut st);
            let ratio = st.cwnd_bytes as f64 / (w0 * MSS) as f64;
            assert!((ratio - 1.01).abs() < 1e-4, "w = {w0}: ×{ratio}");
        }
    }

    #[test]
    fn decrease_is_one_eighth() {
        let mut cc = scalable();
        let st = ca_state(1000);
        let ss = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st));
        assert_eq!(ss, 875 * MSS);
    }

    #[test]
    fn recovery_takes_the_same_number_of_rtts_at_every_window() {
        // log(1/0.875)/log(1.01) = 13.42 RTTs.
        let mut cc = scalable();
        assert!((cc.recovery_rtts() - 13.42).abs() < 0.01);
        let mut counts = Vec::new();
        for w0 in [200u64, 2_000, 20_000] {
            let mut st = ca_state(w0);
            counts.push(rtts_to_regain(&mut cc, &mut st, w0 * MSS, RTT));
        }
        assert!(counts.iter().all(|&n| n == 14), "RTTs to recover: {counts:?}");
    }

    #[test]
    fn standard_tcp_at_or_below_the_legacy_window() {
        let mut cc = scalable();
        let mut st = ca_state(10);
        one_rtt(&mut cc, &mut st);
        assert!((st.cwnd_packets() - 11.0).abs() < 0.05, "cwnd {}", st.cwnd_packets());
        let st = ca_state(16);
        assert_eq!(cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::Timeout, &st)), 8 * MSS);
        let st = ca_state(17);
        let ss = cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::Timeout, &st));
        assert_eq!(ss, (17.0 * MSS as f64 * 0.875) as u64);
        let st = ca_state(3);
        assert_eq!(cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::Timeout, &st)), 2 * MSS);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Scalable::new(&Params::from_pairs(
                pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))
        };
        for (name, v) in [("a", 0.0), ("a", 2.0), ("b", 0.0), ("b", 1.0), ("legacy_window", -1.0)] {
            match p(&[(name, v)]) {
                Err(CcError::BadParam { flavor: "scalable", param, .. }) => assert_eq!(param, name),
                other => panic!("expected BadParam for {name} = {v}, got {other:?}"),
            }
        }
        assert!(matches!(p(&[("beta", 1.0)]), Err(CcError::UnknownParam { .. })));
        let cc = p(&[("a", 0.02), ("b", 0.25)]).unwrap();
        assert!((cc.recovery_rtts() - (1.0f64 / 0.75).ln() / 1.02f64.ln()).abs() < 1e-12);
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(scalable().name(), "scalable");
    }
}
