//! HSTCP-LP, high-speed low-priority TCP (Kuzmanovic, Knightly and Cottrell, "HSTCP-LP: A
//! Protocol for Low-Priority Bulk Data Transfer in High-Speed High-RTT Networks", PFLDnet 2004):
//! the `hstcp-lp` controller.
//!
//! # What it does
//!
//! HSTCP-LP is TCP-LP's low-priority machinery on top of HighSpeed TCP's window arithmetic, so
//! that a scavenger can also fill a path whose bandwidth-delay product Reno's one segment per RTT
//! could never fill:
//!
//! - **Early congestion indication and inference** exactly as TCP-LP
//!   ([`crate::lp::EarlyCongestion`]): a smoothed one-way delay above
//!   `d_min + δ(d_max − d_min)` halves cwnd and starts an inference phase without growth; an
//!   indication within it cuts cwnd to one segment.
//! - **Growth** outside the inference phase is HighSpeed TCP's (RFC 3649 §5): slow start, then
//!   `a(w)` segments per RTT, standard TCP at or below Low_Window = 38.
//! - **Loss**: HighSpeed TCP's decrease, `cwnd ← (1 − b(w))·w`.
//!
//! a(w) and b(w) come from the `highspeed` controller ([`crate::highspeed::HighSpeed`]) by
//! composition, with its parameters (`low_window`, `high_window`, `high_p`, `high_decrease`)
//! passed through.

use crate::growth::PerRttIncrease;
use crate::highspeed::HighSpeed;
use crate::lp::{EarlyCongestion, Reaction, INFERENCE_PARAMS};
use crate::reno::slow_start_first;
use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, ParamInfo, Params, SimTime};

/// HighSpeed's parameters accepted by `hstcp-lp` and handed to [`HighSpeed::new`].
const HIGHSPEED_PARAM_NAMES: [&str; 4] = ["low_window", "high_window", "high_p", "high_decrease"];

/// The `hstcp-lp` flavor's tunable parameters, with defaults: TCP-LP's inference parameters and
/// HighSpeed TCP's response-function parameters.
pub const PARAMS: &[ParamInfo] = &[
    INFERENCE_PARAMS[0],
    INFERENCE_PARAMS[1],
    ParamInfo {
        name: "low_window",
        default: crate::highspeed::DEFAULT_LOW_WINDOW,
        doc: "Low_Window, packets: standard TCP at or below it (RFC 3649 §5); >= 1",
    },
    ParamInfo {
        name: "high_window",
        default: crate::highspeed::DEFAULT_HIGH_WINDOW,
        doc: "High_Window, packets (RFC 3649 §5); > low_window",
    },
    ParamInfo {
        name: "high_p",
        default: crate::highspeed::DEFAULT_HIGH_P,
        doc: "High_P, packet drop rate at High_Window (RFC 3649 §5); 0 < high_p < 0.001",
    },
    ParamInfo {
        name: "high_decrease",
        default: crate::highspeed::DEFAULT_HIGH_DECREASE,
        doc: "High_Decrease: the decrease b(w) at High_Window (RFC 3649 §5); 0 < value <= 0.5",
    },
];

const PARAM_NAMES: &[&str] =
    &["delta", "inference_rtts", "low_window", "high_window", "high_p", "high_decrease"];

/// Windows never go below this many segments after a loss.
const MIN_WINDOW_SEGMENTS: u64 = 2;

/// The HSTCP-LP controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct HstcpLp {
    eci: EarlyCongestion,
    hs: HighSpeed,
    growth: PerRttIncrease,
    last_ack: SimTime,
}

impl HstcpLp {
    /// An HSTCP-LP controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// out of range.
    pub fn new(params: &Params) -> Result<HstcpLp, CcError> {
        params.expect_only("hstcp-lp", PARAM_NAMES)?;
        let eci = EarlyCongestion::new("hstcp-lp", params)?;
        let hs_params = Params::from_pairs(
            HIGHSPEED_PARAM_NAMES
                .iter()
                .filter_map(|n| params.get(n).map(|v| (n.to_string(), v)))
                .collect(),
        );
        let hs = HighSpeed::new(&hs_params).map_err(|e| match e {
            CcError::BadParam { param, value, reason, .. } => {
                CcError::BadParam { flavor: "hstcp-lp", param, value, reason }
            }
            other => other,
        })?;
        Ok(HstcpLp { eci, hs, growth: PerRttIncrease::new(), last_ack: SimTime::ZERO })
    }

    /// The early-congestion state.
    pub fn early_congestion(&self) -> &EarlyCongestion {
        &self.eci
    }
}

impl CongestionControl for HstcpLp {
    fn name(&self) -> &'static str {
        "hstcp-lp"
    }

    fn pkts_acked(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.last_ack = ack.now;
        if self.eci.on_ack(st, ack) != Reaction::None {
            self.growth.reset();
        }
    }

    /// Outside the inference phase: slow start, then a(w) segments per RTT (RFC 3649 §5).
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        if !ack.cwnd_limited || self.eci.in_inference(ack.now) {
            return;
        }
        let Some(acked) = slow_start_first(st, ack.bytes_acked) else {
            return;
        };
        let a = self.hs.a(st.cwnd_packets());
        self.growth.apply(st, a, acked);
    }

    /// HighSpeed's decrease: ssthresh = (1 − b(w))·cwnd, at least 2 MSS.
    fn ssthresh(&mut self, st: &CwndState, _ev: &LossEvent) -> u64 {
        self.growth.reset();
        let b = self.hs.b(st.cwnd_packets());
        ((st.cwnd_bytes as f64 * (1.0 - b)) as u64).max(MIN_WINDOW_SEGMENTS * st.mss_bytes)
    }

    /// `"inference"` during the inference phase, else `"highspeed"`.
    fn mode(&self) -> &'static str {
        if self.eci.in_inference(self.last_ack) {
            "inference"
        } else {
            "highspeed"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vegas::test_support::{ack, MSS};
    use crate::{Duration, LossKind};

    fn hl(pairs: &[(&str, f64)]) -> HstcpLp {
        HstcpLp::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    #[test]
    fn grows_by_highspeed_a_of_w_per_rtt() {
        let mut cc = hl(&[]);
        let mut st = CwndState::new(1000 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        let a_w = cc.hs.a(1000.0);
        assert!(a_w > 5.0, "a(1000) = {a_w}");
        for i in 0..500 {
            let a = ack(i, 2 * MSS, Some(Duration::from_millis(50)), 0, 0);
            cc.pkts_acked(&mut st, &a);
            cc.cong_avoid(&mut st, &a);
        }
        let grown = st.cwnd_packets() - 1000.0;
        assert!((grown - a_w).abs() < 0.05 * a_w + 0.5, "grew {grown}, a(w) = {a_w}");
    }

    #[test]
    fn loss_decreases_by_b_of_w_and_indication_halves() {
        let mut cc = hl(&[]);
        let st = CwndState::new(10_000 * MSS, MSS);
        let ev = LossEvent { now: SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size_bytes: 0, in_flight_bytes: 0 };
        let b = cc.hs.b(10_000.0);
        assert!(b < 0.3);
        let ss = cc.ssthresh(&st, &ev);
        assert!((ss as f64 - 10_000.0 * MSS as f64 * (1.0 - b)).abs() <= 1.0);
        // Below Low_Window it is Reno's half.
        assert_eq!(cc.ssthresh(&CwndState::new(30 * MSS, MSS), &ev), 15 * MSS);

        let mut st = CwndState::new(400 * MSS, MSS);
        st.ssthresh_bytes = 300 * MSS; // after a first congestion event
        for (t, d) in [20u64, 60, 45, 45, 45, 45].into_iter().enumerate() {
            let t = t as u64;
            let mut a = ack(t, 2 * MSS, Some(Duration::from_millis(40)), t * MSS, 500 * MSS);
            a.one_way_delay = Some(Duration::from_millis(d));
            cc.pkts_acked(&mut st, &a);
        }
        assert_eq!(st.cwnd_bytes, 200 * MSS);
        assert_eq!(cc.mode(), "inference");
    }

    #[test]
    fn parameters_are_validated_and_passed_to_highspeed() {
        let p = |pairs: &[(&str, f64)]| {
            HstcpLp::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("delta", 2.0)]), Err(CcError::BadParam { flavor: "hstcp-lp", param: "delta", .. })));
        assert!(matches!(p(&[("high_p", 0.5)]), Err(CcError::BadParam { flavor: "hstcp-lp", param: "high_p", .. })));
        assert!(matches!(p(&[("gamma", 1.0)]), Err(CcError::UnknownParam { .. })));
        let cc = p(&[("low_window", 100.0)]).unwrap();
        assert_eq!(cc.hs.a(90.0), 1.0);
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(cc.name(), "hstcp-lp");
    }
}
