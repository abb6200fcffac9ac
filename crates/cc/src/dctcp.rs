//! DCTCP, Data Center TCP (RFC 8257; Alizadeh et al., SIGCOMM 2010): the `dctcp` controller.
//!
//! # What it does
//!
//! - **Congestion estimate** (RFC 8257 §3.3): the sender counts the bytes acknowledged and, of
//!   those, the bytes acknowledged by ACKs carrying ECN-Echo, over an observation window of about
//!   one RTT (from the ACK that passes `WindowEnd` to the next, `WindowEnd = SND.NXT` when a window
//!   closes). At the end of each window, with `M` the marked fraction,
//!   `α ← (1 − g)·α + g·M` (RFC 8257 §3.3 step 6), g = 1/16.
//! - **ECN reaction** (RFC 8257 §3.3): on an ECN congestion event ([`LossKind::Ecn`], which the
//!   transport raises at most once per window of data, as RFC 3168 §6.1.2 requires),
//!   `cwnd ← cwnd·(1 − α/2)`: returned as ssthresh, and the transport cuts cwnd to it at once.
//! - **Loss** (RFC 8257 §3.5: "MUST react to loss episodes in the same way as conventional TCP"):
//!   Reno's halving, `ssthresh = max(FlightSize/2, 2·MSS)` (RFC 5681 §3.1 eq. 4).
//! - **Growth** (RFC 8257 §3.4): Reno's slow start and congestion avoidance, reused by composition
//!   ([`crate::reno::slow_start`], [`crate::reno::cong_avoid_ai`]).
//!
//! - **The `ect1` option** (Linux's DCTCP with Accurate ECN): the flow sends ECT(1), the L4S
//!   identifier (RFC 9331 §4.1), so that an L4S queue (DualPI2, RFC 9332) treats it as scalable,
//!   and its receiver feeds CE back with Accurate ECN (RFC 9768); the marked bytes of a window are
//!   then the CE byte counts the ACKs report ([`AckSample::ce_bytes`]) instead of the bytes of
//!   the ACKs carrying ECE. Off by default; the EWMA and the reduction are the same either way
//!   (and shared with Prague: [`crate::marked_fraction`]).
//!
//! DCTCP needs two things outside the sender: a queue that marks CE on ECT packets once its
//! instantaneous length reaches a threshold K (RFC 8257 §3.1; the simulator's
//! `ecn_threshold_packets`), and a receiver that echoes each segment's CE exactly, with an
//! immediate ACK whenever the CE state changes (RFC 8257 §3.2; the transport's DCTCP echo mode,
//! chosen because the catalogue says `dctcp` needs ECN). Without marking it is Reno with PRR.
//!
//! # Choices
//!
//! - The first observation window starts at the first ACK and ends when data sent up to then is
//!   acknowledged (RFC 8257 §3.3 leaves the initial `WindowEnd` to the implementation).
//! - The reduced window is floored at 2·MSS, as Linux's `dctcp_ssthresh` does.

use crate::marked_fraction::MarkedFraction;
use crate::reno::{halve_flight, reno_cong_avoid};
use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, LossKind, ParamInfo, Params};

/// Default estimation gain g, dimensionless (RFC 8257 §3.3: "g = 1/16 ... a good choice"; §4
/// discusses the range; Linux `dctcp_shift_g = 4`).
pub const DEFAULT_G: f64 = 1.0 / 16.0;

/// Default initial α, dimensionless (RFC 8257 §3.3: "DCTCP.Alpha ... initialized to 1"; Linux
/// `dctcp_alpha_on_init = 1024`, i.e. 1.0): the first mark before any estimate halves cwnd, as
/// conventional ECN would.
pub const DEFAULT_ALPHA_INIT: f64 = 1.0;

/// Smallest window an ECN reduction leaves, in MSS (Linux `dctcp_ssthresh`: at least 2 packets).
const MIN_CWND_SEGMENTS: u64 = 2;

/// The `dctcp` flavor's tunable parameters, with defaults (listed in the registry's catalogue).
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "g",
        default: DEFAULT_G,
        doc: "estimation gain g of α ← (1 − g)·α + g·F, per observation window (RFC 8257 §3.3); \
              0 < g ≤ 1",
    },
    ParamInfo {
        name: "alpha_init",
        default: DEFAULT_ALPHA_INIT,
        doc: "initial α, the estimated fraction of marked bytes (RFC 8257 §3.3: 1); 0 ≤ alpha_init ≤ 1",
    },
    ParamInfo {
        name: "ect1",
        default: 0.0,
        doc: "1: send ECT(1), the L4S identifier (RFC 9331 §4.1), and take Accurate ECN feedback \
              (RFC 9768), as Linux's DCTCP does with AccECN; 0: ECT(0) and DCTCP's per-segment \
              ECE echo (RFC 8257 §3.2)",
    },
];

/// The parameter names [`Dctcp::new`] accepts.
const PARAM_NAMES: &[&str] = &["g", "alpha_init", "ect1"];

/// Whether DCTCP `params` ask for the `ect1` option (see [`PARAMS`]); the registry reads it to
/// tell the transport which codepoint and feedback a `dctcp` flow uses.
///
/// # Errors
/// [`CcError::BadParam`] when `ect1` is given as anything but 0 or 1.
pub fn ect1_requested(params: &Params) -> Result<bool, CcError> {
    let v = params.get_or("ect1", 0.0);
    if v == 0.0 || v == 1.0 {
        Ok(v == 1.0)
    } else {
        Err(bad("ect1", v, "must be 0 or 1"))
    }
}

/// The DCTCP controller. See the module documentation.
#[derive(Debug, Clone)]
pub struct Dctcp {
    /// DCTCP.Alpha with DCTCP.WindowEnd, DCTCP.BytesAcked and DCTCP.BytesMarked.
    estimate: MarkedFraction,
    /// The `ect1` option: send ECT(1) and take Accurate ECN feedback.
    ect1: bool,
    /// Reno's congestion-avoidance byte counter.
    ca_acc_bytes: u64,
}

impl Dctcp {
    /// A DCTCP controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] when `g` is
    /// not in (0, 1] or `alpha_init` not in [0, 1].
    pub fn new(params: &Params) -> Result<Dctcp, CcError> {
        params.expect_only("dctcp", PARAM_NAMES)?;
        let g = params.get_or("g", DEFAULT_G);
        if !(g > 0.0 && g <= 1.0) {
            return Err(bad("g", g, "must be in (0, 1]"));
        }
        let alpha = params.get_or("alpha_init", DEFAULT_ALPHA_INIT);
        if !(0.0..=1.0).contains(&alpha) {
            return Err(bad("alpha_init", alpha, "must be in [0, 1]"));
        }
        let ect1 = ect1_requested(params)?;
        Ok(Dctcp { estimate: MarkedFraction::new(g, alpha), ect1, ca_acc_bytes: 0 })
    }

    /// The current estimate α of the fraction of marked bytes.
    pub fn alpha(&self) -> f64 {
        self.estimate.alpha()
    }

    /// The flow runs with the `ect1` option: ECT(1) on its data and Accurate ECN feedback.
    pub fn ect1(&self) -> bool {
        self.ect1
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    /// RFC 8257 §3.3 steps 1–8. The marked bytes of an ACK are its Accurate ECN CE byte count
    /// when it reports one (the `ect1` option), otherwise all its bytes when it carries ECE
    /// (RFC 8257 §3.3 step 3).
    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        let marked = if ack.ce_bytes > 0 {
            ack.ce_bytes
        } else if ack.ece {
            ack.bytes_acked
        } else {
            0
        };
        self.estimate.count(ack.bytes_acked, marked, ack.snd_nxt);
        if self.estimate.window_passed(ack.snd_una) {
            self.estimate.close_window(ack.snd_nxt, true);
        }
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        reno_cong_avoid(st, &mut self.ca_acc_bytes, ack);
    }

    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.ca_acc_bytes = 0;
        match ev.kind {
            // RFC 8257 §3.3: cwnd = cwnd · (1 − α/2).
            LossKind::Ecn => {
                let cut = (st.cwnd_bytes as f64 * self.estimate.alpha() / 2.0) as u64;
                (st.cwnd_bytes - cut.min(st.cwnd_bytes)).max(MIN_CWND_SEGMENTS * st.mss_bytes)
            }
            // RFC 8257 §3.5: loss as conventional TCP.
            LossKind::FastRetransmit | LossKind::Timeout => halve_flight(st, ev),
        }
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "dctcp", param, value, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CaState, Duration, SimTime};

    const MSS: u64 = 1448;

    fn ack(bytes: u64, snd_una: u64, snd_nxt: u64, ece: bool) -> AckSample {
        AckSample {
            now: SimTime::ZERO,
            bytes_acked: bytes,
            rtt: Some(Duration::from_millis(1)),
            min_rtt: Some(Duration::from_millis(1)),
            srtt: Some(Duration::from_millis(1)),
            one_way_delay: None,
            prior_in_flight_bytes: 0,
            in_flight_bytes: 0,
            snd_una,
            snd_nxt,
            ece,
            ce_bytes: 0,
            cwnd_limited: true,
            state: CaState::Open,
        }
    }

    fn ecn_event(cwnd: u64) -> (CwndState, LossEvent) {
        let st = CwndState { cwnd_bytes: cwnd, ssthresh_bytes: u64::MAX, mss_bytes: MSS, pacing_rate_bps: None };
        let ev = LossEvent { now: SimTime::ZERO, kind: LossKind::Ecn, flight_size_bytes: cwnd, in_flight_bytes: cwnd };
        (st, ev)
    }

    /// Drive `windows` observation windows of `n` segments each, the first `marked` of every
    /// window acknowledged with ECE, one ACK per segment.
    fn drive(d: &mut Dctcp, una: &mut u64, windows: usize, n: u64, marked: u64) {
        let mut st = CwndState::new(10 * MSS, MSS);
        for _ in 0..windows {
            // The window in flight is [una, una + n·MSS); snd.nxt is its end while it is acked.
            let nxt = *una + n * MSS;
            for i in 0..n {
                *una += MSS;
                d.pkts_acked(&mut st, &ack(MSS, *una, nxt, i < marked));
            }
        }
    }

    #[test]
    fn alpha_follows_the_ewma_closed_form_and_converges_to_the_marked_fraction() {
        // F = 1/4 of the bytes marked in every window; g = 1/16; α0 = 1.
        let mut d = Dctcp::new(&Params::default()).unwrap();
        let mut una = 0;
        let f = 0.25;
        // The first ACK opens the first window (WindowEnd = its snd.nxt), so window k of the
        // drive closes on the first ACK of window k + 1: drive one extra window.
        drive(&mut d, &mut una, 1, 20, 5);
        assert_eq!(d.alpha(), 1.0, "no window has closed yet");
        drive(&mut d, &mut una, 10, 20, 5);
        // After n closed windows of fraction F: α = F + (1 − F)(1 − g)^n. The first closes
        // after 21 ACKs (one extra ACK of the next window is in it), then every 20; counting
        // bytes, window 1 had 6 marked of 21, the rest 5 of 20.
        let g = DEFAULT_G;
        let mut expect = 1.0;
        expect = (1.0 - g) * expect + g * (6.0 / 21.0);
        for _ in 1..10 {
            expect = (1.0 - g) * expect + g * f;
        }
        assert!((d.alpha() - expect).abs() < 1e-12, "α = {}, closed form {expect}", d.alpha());
        drive(&mut d, &mut una, 300, 20, 5);
        assert!((d.alpha() - f).abs() < 1e-6, "α converges to F: {}", d.alpha());
        // And follows a change of F with the EWMA's time constant 1/g windows.
        let before = d.alpha();
        drive(&mut d, &mut una, 16, 20, 0);
        // 16 windows close: the first still holds the last marked window's tail (4 marked of
        // 20 ACKs), the other 15 hold none.
        let expect = ((1.0 - g) * before + g * 0.2) * (1.0 - g).powi(15);
        assert!((d.alpha() - expect).abs() < 1e-12, "α after 16 unmarked windows {} vs {expect}", d.alpha());
        assert!(d.alpha() < 0.1);
    }

    #[test]
    fn ecn_reduction_is_alpha_scaled() {
        let mut d = Dctcp::new(&Params::default()).unwrap();
        // α = 1 at start: a mark halves cwnd, as RFC 3168 ECN would.
        let (st, ev) = ecn_event(100 * MSS);
        assert_eq!(d.ssthresh(&st, &ev), 50 * MSS);
        // α = 0.25 (driven): cwnd·(1 − 0.125).
        let mut una = 0;
        drive(&mut d, &mut una, 400, 20, 5);
        let a = d.alpha();
        let got = d.ssthresh(&st, &ev);
        let want = 100 * MSS - (100.0 * MSS as f64 * a / 2.0) as u64;
        assert_eq!(got, want);
        assert!((got as f64 / (100 * MSS) as f64 - 0.875).abs() < 1e-4);
        // Floor at 2 MSS.
        let (st, ev) = ecn_event(2 * MSS);
        let mut d = Dctcp::new(&Params::default()).unwrap();
        assert_eq!(d.ssthresh(&st, &ev), 2 * MSS);
    }

    #[test]
    fn loss_halves_like_reno_whatever_alpha() {
        let mut d = Dctcp::new(&Params::from_pairs(vec![("alpha_init".into(), 0.0)])).unwrap();
        let (st, mut ev) = ecn_event(100 * MSS);
        assert_eq!(d.ssthresh(&st, &ev), 100 * MSS, "α = 0: an ECN event does not reduce");
        ev.kind = LossKind::FastRetransmit;
        assert_eq!(d.ssthresh(&st, &ev), 50 * MSS);
        ev.kind = LossKind::Timeout;
        assert_eq!(d.ssthresh(&st, &ev), 50 * MSS);
    }

    #[test]
    fn grows_like_reno() {
        let mut d = Dctcp::new(&Params::default()).unwrap();
        let mut st = CwndState::new(10 * MSS, MSS);
        d.cong_avoid(&mut st, &ack(2 * MSS, 0, 0, false));
        assert_eq!(st.cwnd_bytes, 12 * MSS, "slow start, ABC L = 2");
        st.ssthresh_bytes = 12 * MSS;
        for _ in 0..12 {
            d.cong_avoid(&mut st, &ack(MSS, 0, 0, false));
        }
        assert_eq!(st.cwnd_bytes, 13 * MSS, "one MSS per window in avoidance");
    }

    #[test]
    fn ect1_option_counts_accecn_ce_bytes_instead_of_ece_acks() {
        let on = Params::from_pairs(vec![("ect1".into(), 1.0)]);
        assert!(Dctcp::new(&on).unwrap().ect1());
        assert!(!Dctcp::new(&Params::default()).unwrap().ect1());
        let mut d = Dctcp::new(&on).unwrap();
        let mut st = CwndState::new(10 * MSS, MSS);
        // One window of 10 segments, 10 ACKs; AccECN reports 3 MSS of CE bytes on the 4th ACK
        // (whose ECE, derived from the counter, is set), none elsewhere.
        let nxt = 10 * MSS;
        for i in 1..=10 {
            let mut a = ack(MSS, i * MSS, nxt, i == 4);
            a.ce_bytes = if i == 4 { 3 * MSS } else { 0 };
            d.pkts_acked(&mut st, &a);
        }
        // The next ACK passes WindowEnd and closes the window: M = 3/11 (that ACK is in it).
        d.pkts_acked(&mut st, &ack(MSS, 11 * MSS, 20 * MSS, false));
        let want = (1.0 - DEFAULT_G) + DEFAULT_G * (3.0 / 11.0);
        assert!((d.alpha() - want).abs() < 1e-15, "α = {}, want {want}", d.alpha());
    }

    #[test]
    fn parameters_are_validated() {
        for (name, v) in [("g", 0.0), ("g", 1.5), ("alpha_init", -0.1), ("alpha_init", 2.0), ("ect1", 0.5)] {
            let p = Params::from_pairs(vec![(name.to_string(), v)]);
            match Dctcp::new(&p) {
                Err(CcError::BadParam { param, .. }) => assert_eq!(param, name),
                other => panic!("{name} = {v}: expected BadParam, got {other:?}"),
            }
        }
        assert!(matches!(
            Dctcp::new(&Params::from_pairs(vec![("k".into(), 1.0)])),
            Err(CcError::UnknownParam { .. })
        ));
        let names: Vec<_> = PARAMS.iter().map(|p| p.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
