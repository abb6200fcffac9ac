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
];

/// The parameter names [`Dctcp::new`] accepts.
const PARAM_NAMES: &[&str] = &["g", "alpha_init"];

/// The DCTCP controller. See the module documentation.
#[derive(Debug, Clone)]
pub struct Dctcp {
    g: f64,
    /// DCTCP.Alpha: the estimated fraction of marked bytes.
    alpha: f64,
    /// DCTCP.WindowEnd: the observation window ends when snd.una passes it; `None` before the
    /// first ACK.
    window_end: Option<u64>,
    /// DCTCP.BytesAcked in the current observation window.
    bytes_acked: u64,
    /// DCTCP.BytesMarked: bytes acknowledged with ECE in the current observation window.
    bytes_marked: u64,
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
        Ok(Dctcp { g, alpha, window_end: None, bytes_acked: 0, bytes_marked: 0, ca_acc_bytes: 0 })
    }

    /// The current estimate α of the fraction of marked bytes.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    /// RFC 8257 §3.3 steps 1–8.
    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        let window_end = *self.window_end.get_or_insert(ack.snd_nxt);
        self.bytes_acked += ack.bytes_acked;
        if ack.ece {
            self.bytes_marked += ack.bytes_acked;
        }
        if ack.snd_una <= window_end {
            return;
        }
        if self.bytes_acked > 0 {
            let m = self.bytes_marked as f64 / self.bytes_acked as f64;
            self.alpha = (1.0 - self.g) * self.alpha + self.g * m;
        }
        self.window_end = Some(ack.snd_nxt);
        self.bytes_acked = 0;
        self.bytes_marked = 0;
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        reno_cong_avoid(st, &mut self.ca_acc_bytes, ack);
    }

    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.ca_acc_bytes = 0;
        match ev.kind {
            // RFC 8257 §3.3: cwnd = cwnd · (1 − α/2).
            LossKind::Ecn => {
                let cut = (st.cwnd_bytes as f64 * self.alpha / 2.0) as u64;
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
    fn parameters_are_validated() {
        for (name, v) in [("g", 0.0), ("g", 1.5), ("alpha_init", -0.1), ("alpha_init", 2.0)] {
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
