//! TCP Veno (Fu and Liew, "TCP Veno: TCP Enhancement for Transmission Over Wireless Access
//! Networks", IEEE JSAC 21(2), 2003): the `veno` controller.
//!
//! # What it does
//!
//! Veno is Reno whose two reactions are steered by Vegas's estimate of its own backlog at the
//! bottleneck, `N = cwnd · (1 − BaseRTT/RTT)` packets:
//!
//! - **Loss** (the paper's "multiplicative decrease"): when a fast retransmit finds `N < β` the network
//!   was not congested, so the loss is taken as random (a wireless error) and
//!   `ssthresh = cwnd · 4/5`; otherwise the loss is congestive and `ssthresh = cwnd/2` as in Reno.
//!   A retransmission timeout is handled as by Reno.
//! - **Growth** (the paper's "additive increase"): while `N < β` (the available bandwidth is not yet
//!   used) cwnd grows by one MSS per RTT as in Reno; once `N ≥ β` only by one MSS every other
//!   RTT, staying longer near the point where the link is full.
//! - **Slow start** is Reno's.
//!
//! β = 3 packets.
//!
//! # Choices
//!
//! - N is measured once per round trip with [`RoundRtt`] (Vegas's measurement, reused by
//!   composition): RTT is the round's minimum Karn-valid sample, BaseRTT the connection's minimum.
//!   The paper computes N from Vegas's Actual and Expected rates the same way; the minimum keeps a
//!   delayed ACK from reading as backlog. Rounds run in every state, so a loss finds the last
//!   completed round's N.
//! - "One MSS every other RTT" is Reno's byte-counting additive increase over twice the window
//!   ([`crate::reno::cong_avoid_ai`] with `w = 2·cwnd`).
//! - An ECN echo is treated as congestive (`cwnd/2`): a mark is never random loss.

use crate::reno::{cong_avoid_ai, cwnd_limited_slow_start_first, halve_flight};
use crate::vegas::{queued_packets, RoundRtt};
use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, LossKind, ParamInfo, Params};

/// Default β, packets: the backlog below which a loss is taken as random.
pub const DEFAULT_BETA: f64 = 3.0;

/// Default fraction of cwnd kept after a random loss: 4/5.
pub const DEFAULT_RANDOM_LOSS_KEEP: f64 = 0.8;

/// Fraction kept after a congestive loss: Reno's one half.
const CONGESTIVE_LOSS_KEEP: f64 = 0.5;

/// ssthresh is never below this many segments (RFC 5681 eq. 4).
const MIN_SSTHRESH_SEGMENTS: u64 = 2;

/// The `veno` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "beta",
        default: DEFAULT_BETA,
        doc: "β, packets: with backlog N = cwnd(1 - BaseRTT/RTT) < β a loss is random and growth \
              is Reno's; N >= β means congestion (Fu & Liew 2003); > 0",
    },
    ParamInfo {
        name: "random_loss_keep",
        default: DEFAULT_RANDOM_LOSS_KEEP,
        doc: "fraction of cwnd kept after a loss judged random (N < β): ssthresh = 0.8·cwnd \
             ; 0.5 <= value < 1",
    },
];

const PARAM_NAMES: &[&str] = &["beta", "random_loss_keep"];

/// The TCP Veno controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Veno {
    beta: f64,
    random_loss_keep: f64,
    rtt: RoundRtt,
    /// N of the last round with an RTT sample, packets; `None` before the first.
    backlog: Option<f64>,
    ca_acc_bytes: u64,
}

impl Veno {
    /// A Veno controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// out of range.
    pub fn new(params: &Params) -> Result<Veno, CcError> {
        params.expect_only("veno", PARAM_NAMES)?;
        let bad = |param, value, reason| CcError::BadParam { flavor: "veno", param, value, reason };
        let beta = params.get_or("beta", DEFAULT_BETA);
        if !(beta.is_finite() && beta > 0.0) {
            return Err(bad("beta", beta, "must be a finite number > 0"));
        }
        let keep = params.get_or("random_loss_keep", DEFAULT_RANDOM_LOSS_KEEP);
        if !(0.5..1.0).contains(&keep) {
            return Err(bad("random_loss_keep", keep, "must be in [0.5, 1)"));
        }
        Ok(Veno { beta, random_loss_keep: keep, rtt: RoundRtt::new(), backlog: None, ca_acc_bytes: 0 })
    }

    /// The backlog estimate N of the last completed round, packets.
    pub fn backlog(&self) -> Option<f64> {
        self.backlog
    }

    /// N ≥ β: the bottleneck queue holds β or more of our packets.
    fn congested(&self) -> bool {
        self.backlog.is_some_and(|n| n >= self.beta)
    }
}

impl CongestionControl for Veno {
    fn name(&self) -> &'static str {
        "veno"
    }

    fn pkts_acked(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.rtt.on_ack(ack);
        if let Some(round) = self.rtt.end_round(ack) {
            if let (Some(base), true) = (self.rtt.base_rtt(), round.samples > 0) {
                self.backlog = Some(queued_packets(st.cwnd_packets(), base, round.min_rtt));
            }
        }
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        let Some(acked) = cwnd_limited_slow_start_first(st, ack) else {
            return;
        };
        // One MSS per RTT while N < β, one MSS every other RTT once N ≥ β.
        let w = if self.congested() { 2 * st.cwnd_bytes } else { st.cwnd_bytes };
        cong_avoid_ai(st, w, &mut self.ca_acc_bytes, acked);
    }

    /// A fast retransmit with N < β keeps 4/5 of cwnd, otherwise 1/2; a timeout is Reno's.
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.ca_acc_bytes = 0;
        let keep = match ev.kind {
            LossKind::Timeout => return halve_flight(st, ev),
            LossKind::Ecn => CONGESTIVE_LOSS_KEEP,
            LossKind::FastRetransmit if self.congested() => CONGESTIVE_LOSS_KEEP,
            LossKind::FastRetransmit => self.random_loss_keep,
        };
        ((st.cwnd_bytes as f64 * keep) as u64).max(MIN_SSTHRESH_SEGMENTS * st.mss_bytes)
    }

    /// `"random"` while N < β (losses would be taken as random), `"congestive"` once N ≥ β.
    fn mode(&self) -> &'static str {
        if self.congested() {
            "congestive"
        } else {
            "random"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vegas::test_support::{PathSim, MSS};
    use crate::{Duration, SimTime};

    fn veno(pairs: &[(&str, f64)]) -> Veno {
        Veno::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    fn loss(kind: LossKind, st: &CwndState) -> LossEvent {
        LossEvent {
            now: SimTime::ZERO,
            kind,
            flight_size_bytes: st.cwnd_bytes,
            in_flight_bytes: st.cwnd_bytes,
        }
    }

    /// A Veno sender that has run in congestion avoidance with `cwnd` packets on a path of
    /// `bdp` packets (so N ≈ max(0, cwnd − bdp)).
    fn after_running(cwnd: u64, bdp: u64) -> (Veno, CwndState) {
        let mut cc = veno(&[]);
        let mut st = CwndState::new(cwnd * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        let mut path = PathSim::new(Duration::from_millis(40), bdp);
        // Hold the window fixed (not cwnd-limited growth is irrelevant: reset it each ACK).
        for _ in 0..400 {
            path.step(&mut cc, &mut st);
            st.cwnd_bytes = cwnd * MSS;
        }
        (cc, st)
    }

    #[test]
    fn random_loss_with_small_backlog_keeps_four_fifths() {
        let (mut cc, st) = after_running(50, 100);
        let n = cc.backlog().unwrap();
        assert!(n < 1.0, "no queue on an under-used path: N = {n}");
        assert_eq!(cc.mode(), "random");
        assert_eq!(cc.ssthresh(&st, &loss(LossKind::FastRetransmit, &st)), 50 * MSS * 4 / 5);
    }

    #[test]
    fn congestive_loss_with_backlog_of_beta_or_more_halves() {
        let (mut cc, st) = after_running(60, 50);
        let n = cc.backlog().unwrap();
        assert!((7.0..=11.0).contains(&n), "about 8-10 packets queued: N = {n}");
        assert_eq!(cc.mode(), "congestive");
        assert_eq!(cc.ssthresh(&st, &loss(LossKind::FastRetransmit, &st)), 30 * MSS);
        // ECN is always congestive; a timeout is Reno's FlightSize/2.
        let (mut cc, st) = after_running(50, 100);
        assert_eq!(cc.ssthresh(&st, &loss(LossKind::Ecn, &st)), 25 * MSS);
        assert_eq!(cc.ssthresh(&st, &loss(LossKind::Timeout, &st)), 25 * MSS);
    }

    #[test]
    fn growth_halves_once_backlog_reaches_beta() {
        // Empty path: Reno's one MSS per window acked.
        let (mut cc, mut st) = after_running(50, 100);
        for _ in 0..50 {
            let a = crate::vegas::test_support::ack(0, MSS, None, 0, 0);
            cc.cong_avoid(&mut st, &a);
        }
        assert_eq!(st.cwnd_bytes, 51 * MSS);
        // N ≥ β: one MSS per two windows acked.
        let (mut cc, mut st) = after_running(60, 50);
        for _ in 0..60 {
            let a = crate::vegas::test_support::ack(0, MSS, None, 0, 0);
            cc.cong_avoid(&mut st, &a);
        }
        assert_eq!(st.cwnd_bytes, 60 * MSS, "one window acked: no increase yet");
        for _ in 0..60 {
            let a = crate::vegas::test_support::ack(0, MSS, None, 0, 0);
            cc.cong_avoid(&mut st, &a);
        }
        assert_eq!(st.cwnd_bytes, 61 * MSS);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Veno::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("beta", 0.0)]), Err(CcError::BadParam { param: "beta", .. })));
        assert!(matches!(p(&[("random_loss_keep", 1.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("random_loss_keep", 0.4)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("alpha", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(p(&[]).unwrap().name(), "veno");
    }
}
