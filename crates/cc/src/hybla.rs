//! TCP Hybla (Caini and Firrincieli, "TCP Hybla: a TCP enhancement for heterogeneous networks",
//! International Journal of Satellite Communications and Networking 22(5), 2004): the `hybla`
//! controller.
//!
//! # What it does
//!
//! Reno's window grows per RTT, so a flow with a long RTT (a satellite hop, 600 ms) grows its
//! *rate* far more slowly than a terrestrial one and, under the same loss rate, gets a fraction of
//! its throughput. Hybla removes the RTT from the growth of the rate by scaling the window
//! increments with the normalised RTT `ρ = RTT/RTT_0`, RTT_0 = 25 ms a reference terrestrial RTT
//! (Caini & Firrincieli 2004):
//!
//! - **Slow start**: `cwnd ← cwnd + 2^ρ − 1` per ACK (instead of + 1): in one RTT of the long
//!   flow the window grows as much as a Reno window does in ρ RTT_0s;
//! - **Congestion avoidance**: `cwnd ← cwnd + ρ²/cwnd` per ACK (instead of + 1/cwnd): ρ² packets
//!   per RTT, the same growth of rate per unit of time as Reno at RTT_0;
//! - **Decrease**: Reno's (ssthresh = FlightSize/2).
//!
//! Under a loss rate p the Hybla window is ρ times Reno's, `ρ·sqrt(3/(2p))`, so its rate
//! `ρ·sqrt(3/(2p))/RTT = sqrt(3/(2p))/RTT_0` is that of a Reno flow with RTT_0, whatever the
//! flow's own RTT.
//!
//! The paper pairs the window rules with **an estimate of the path's bandwidth-delay product for
//! the first ssthresh** (after Hoe, "Improving the start-up behavior of a congestion control
//! scheme for TCP", SIGCOMM 1996): with `2^ρ` growth per ACK a long-RTT flow would otherwise
//! multiply its window by 2^24 in its first RTT and lose most of it. Hoe's estimate: the first
//! window leaves back to back, so its ACKs come back spaced by the bottleneck; the bytes
//! acknowledged by the first [`HOE_ACKS`] ACKs after the first, over the time they took, estimate
//! the bottleneck rate, and the initial ssthresh is that rate times the minimum RTT.
//!
//! # Choices
//!
//! - ρ uses the connection's minimum RTT (the path's propagation delay; queueing delay is shared
//!   by all flows and is not what Hybla compensates), and is at least 1: flows with RTTs below
//!   RTT_0 behave as Reno (the paper's aim is to remove the penalty of long RTTs, not to slow
//!   short ones).
//! - Until Hoe's estimate is made (the first [`HOE_ACKS`] + 1 ACKs) slow start is standard
//!   (RFC 5681), so nothing explodes before ssthresh is finite. With the estimate off
//!   (`initial_ssthresh_estimate = 0`) Hybla's slow start runs from the first ACK, as the window
//!   rule alone says.
//! - Slow-start increments follow RFC 3465 byte counting: an ACK of n bytes adds
//!   `(2^ρ − 1)·min(n, 2 MSS)`, and slow start stops at ssthresh.
//! - The paper also recommends SACK, timestamps and packet spacing (pacing); the transport
//!   provides SACK and timestamps; this controller sets no pacing rate.

use crate::growth::PerRttIncrease;
use crate::reno::{halve_flight, slow_start, ABC_LIMIT_SEGMENTS};
use crate::{
    AckSample, CcError, CongestionControl, CwndState, Duration, LossEvent, ParamInfo, Params,
    SimTime,
};

/// Default RTT_0, milliseconds (Caini & Firrincieli 2004: 25 ms, a typical wired RTT).
pub const DEFAULT_RTT0_MS: f64 = 25.0;

/// ACKs after the first whose spacing gives Hoe's bottleneck-rate estimate (Hoe 1996 uses three
/// closely spaced ACKs).
pub const HOE_ACKS: u32 = 3;

/// The `hybla` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "rtt0",
        default: DEFAULT_RTT0_MS,
        doc: "RTT_0, milliseconds: the reference RTT whose growth rate every flow gets, \
              ρ = RTT/RTT_0 (Caini & Firrincieli 2004); > 0",
    },
    ParamInfo {
        name: "initial_ssthresh_estimate",
        default: 1.0,
        doc: "set the first ssthresh to Hoe's bottleneck-rate estimate × min RTT (Caini & \
              Firrincieli 2004; Hoe 1996): 1 = on, 0 = off",
    },
];

/// The parameter names [`Hybla::new`] accepts.
const PARAM_NAMES: &[&str] = &["rtt0", "initial_ssthresh_estimate"];

/// Hoe's estimate in progress.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hoe {
    /// Waiting for the first ACK.
    Waiting,
    /// `acks` ACKs after the first one (at `first`) have acknowledged `bytes`.
    Measuring { first: SimTime, acks: u32, bytes: u64 },
    /// Estimated (or off, or a congestion event came first).
    Done,
}

/// The TCP Hybla congestion controller.
#[derive(Clone, Debug)]
pub struct Hybla {
    rtt0: Duration,
    /// ρ = max(RTT_min/RTT_0, 1).
    rho: f64,
    hoe: Hoe,
    growth: PerRttIncrease,
}

impl Hybla {
    /// A Hybla controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`], or [`CcError::BadParam`] for a value outside its range.
    pub fn new(params: &Params) -> Result<Hybla, CcError> {
        params.expect_only("hybla", PARAM_NAMES)?;
        let rtt0_ms = params.get_or("rtt0", DEFAULT_RTT0_MS);
        if !(rtt0_ms.is_finite() && rtt0_ms > 0.0) {
            return Err(bad("rtt0", rtt0_ms, "must be a finite number > 0 (milliseconds)"));
        }
        let v = params.get_or("initial_ssthresh_estimate", 1.0);
        let hoe = if v == 1.0 {
            Hoe::Waiting
        } else if v == 0.0 {
            Hoe::Done
        } else {
            return Err(bad("initial_ssthresh_estimate", v, "must be 0 (off) or 1 (on)"));
        };
        Ok(Hybla {
            rtt0: Duration::from_secs_f64(rtt0_ms / 1e3),
            rho: 1.0,
            hoe,
            growth: PerRttIncrease::new(),
        })
    }

    /// ρ = max(RTT/RTT_0, 1) for an RTT of `rtt`.
    pub fn rho_for(&self, rtt: Duration) -> f64 {
        (rtt.as_secs_f64() / self.rtt0.as_secs_f64()).max(1.0)
    }

    /// The current ρ.
    pub fn rho(&self) -> f64 {
        self.rho
    }

    /// Hoe's estimate: on the [`HOE_ACKS`]-th ACK after the first, set ssthresh to
    /// rate × min RTT if it is still at its initial value.
    fn hoe_on_ack(&mut self, st: &mut CwndState, ack: &AckSample) {
        match self.hoe {
            Hoe::Done => {}
            Hoe::Waiting => {
                if ack.bytes_acked > 0 {
                    self.hoe = Hoe::Measuring { first: ack.now, acks: 0, bytes: 0 };
                }
            }
            Hoe::Measuring { first, acks, bytes } => {
                let (acks, bytes) = (acks + 1, bytes + ack.bytes_acked);
                self.hoe = Hoe::Measuring { first, acks, bytes };
                if acks < HOE_ACKS {
                    return;
                }
                self.hoe = Hoe::Done;
                let secs = ack.now.saturating_since(first).as_secs_f64();
                let Some(min_rtt) = ack.min_rtt.or(ack.rtt) else { return };
                if secs > 0.0 && st.ssthresh_bytes == u64::MAX {
                    let est = bytes as f64 / secs * min_rtt.as_secs_f64();
                    st.ssthresh_bytes = (est as u64).max(2 * st.mss_bytes);
                }
            }
        }
    }
}

impl CongestionControl for Hybla {
    fn name(&self) -> &'static str {
        "hybla"
    }

    /// ρ from the minimum RTT; Hoe's estimate from the first ACKs.
    fn pkts_acked(&mut self, st: &mut CwndState, ack: &AckSample) {
        if let Some(m) = ack.min_rtt.or(ack.rtt) {
            self.rho = self.rho_for(m);
        }
        self.hoe_on_ack(st, ack);
    }

    /// Slow start: + (2^ρ − 1) MSS per MSS acknowledged (ABC, L = 2) up to ssthresh; congestion
    /// avoidance: ρ² MSS per RTT.
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        if !ack.cwnd_limited {
            return;
        }
        if st.in_slow_start() {
            if matches!(self.hoe, Hoe::Done) {
                let counted = ack.bytes_acked.min(ABC_LIMIT_SEGMENTS * st.mss_bytes) as f64;
                let inc = (self.rho.exp2() - 1.0) * counted;
                let target = (st.cwnd_bytes as f64 + inc).min(st.ssthresh_bytes as f64);
                st.cwnd_bytes = st.cwnd_bytes.max(target as u64);
            } else {
                slow_start(st, ack.bytes_acked);
            }
            return;
        }
        self.growth.apply(st, self.rho * self.rho, ack.bytes_acked);
    }

    /// Reno's decrease: FlightSize/2, at least 2 MSS. A congestion event before Hoe's estimate
    /// is made ends the estimate (ssthresh is now known).
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.hoe = Hoe::Done;
        self.growth.reset();
        halve_flight(st, ev)
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "hybla", param, value, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growth::testing::{ack, ca_state, loss, MSS};
    use crate::LossKind;

    fn hybla(pairs: &[(&str, f64)]) -> Hybla {
        Hybla::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// One ACK through both hooks, as the transport calls them.
    fn on_ack(cc: &mut Hybla, st: &mut CwndState, now: SimTime, bytes: u64, rtt: Duration) {
        let a = ack(now, bytes, rtt);
        cc.pkts_acked(st, &a);
        cc.cong_avoid(st, &a);
    }

    #[test]
    fn rho_is_the_rtt_over_rtt0_at_least_one() {
        let cc = hybla(&[]);
        assert!((cc.rho_for(ms(600)) - 24.0).abs() < 1e-9);
        assert!((cc.rho_for(ms(50)) - 2.0).abs() < 1e-9);
        assert_eq!(cc.rho_for(ms(10)), 1.0);
        assert!((hybla(&[("rtt0", 50.0)]).rho_for(ms(600)) - 12.0).abs() < 1e-9);
    }

    #[test]
    fn congestion_avoidance_adds_rho_squared_per_rtt() {
        // cwnd += ρ²/cwnd per packet: over n packets W² grows by 2ρ²n, i.e. ρ² per window when
        // ρ² is small next to the window.
        for (rtt, rho) in [(ms(25), 1.0), (ms(100), 4.0), (ms(600), 24.0)] {
            let mut cc = hybla(&[]);
            let w0 = 1000.0;
            let mut st = ca_state(w0 as u64);
            for _ in 0..1000 {
                on_ack(&mut cc, &mut st, SimTime::ZERO, MSS, rtt);
            }
            let grown = st.cwnd_packets() - w0;
            let expect = (w0 * w0 + 2.0 * rho * rho * w0).sqrt() - w0;
            assert!(
                (grown - expect).abs() < 0.01 * expect + 0.02,
                "ρ = {rho}: grew {grown}, expected {expect}"
            );
            assert!(grown > 0.75 * rho * rho);
        }
    }

    #[test]
    fn slow_start_adds_two_to_the_rho_minus_one_per_packet() {
        let mut cc = hybla(&[("initial_ssthresh_estimate", 0.0)]);
        let mut st = CwndState::new(10 * MSS, MSS);
        st.ssthresh_bytes = 10_000 * MSS;
        // ρ = 4: each MSS acknowledged adds 15 MSS.
        on_ack(&mut cc, &mut st, SimTime::ZERO, MSS, ms(100));
        assert_eq!(st.cwnd_bytes, 25 * MSS);
        // ABC: an ACK of 5 MSS counts as 2.
        on_ack(&mut cc, &mut st, SimTime::ZERO, 5 * MSS, ms(100));
        assert_eq!(st.cwnd_bytes, 55 * MSS);
        // Never past ssthresh.
        st.ssthresh_bytes = 60 * MSS;
        on_ack(&mut cc, &mut st, SimTime::ZERO, MSS, ms(100));
        assert_eq!(st.cwnd_bytes, 60 * MSS);
        // ρ = 1 (a short RTT): Reno's slow start.
        let mut cc = hybla(&[("initial_ssthresh_estimate", 0.0)]);
        let mut st = CwndState::new(10 * MSS, MSS);
        on_ack(&mut cc, &mut st, SimTime::ZERO, 2 * MSS, ms(10));
        assert_eq!(st.cwnd_bytes, 12 * MSS);
    }

    #[test]
    fn hoe_estimate_sets_the_first_ssthresh() {
        let mut cc = hybla(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        let rtt = ms(600);
        // ACKs of 2 MSS every 240 µs: a 96.5 Mbps bottleneck; × 600 ms = 4 999 packets.
        let gap = Duration::from_micros(240);
        let mut now = SimTime(rtt.as_nanos());
        for i in 0..HOE_ACKS {
            on_ack(&mut cc, &mut st, now, 2 * MSS, rtt);
            now += gap;
            // Standard slow start until the estimate exists.
            assert_eq!(st.cwnd_bytes, (12 + 2 * i as u64) * MSS);
            assert_eq!(st.ssthresh_bytes, u64::MAX);
        }
        on_ack(&mut cc, &mut st, now, 2 * MSS, rtt);
        let est = st.ssthresh_bytes as f64 / MSS as f64;
        assert!((est - 5000.0).abs() < 2.0, "estimate {est} packets");
        // The same ACK runs Hybla's slow start, which takes the window straight to ssthresh
        // (2·(2^24 − 1) MSS would be far more) ...
        assert_eq!(st.cwnd_bytes, st.ssthresh_bytes);
        // ... and congestion avoidance (ρ² = 576 packets per RTT) continues from there.
        on_ack(&mut cc, &mut st, now, 2 * MSS, rtt);
        let grown = st.cwnd_packets() - est;
        assert!((grown - 576.0 * 2.0 / est).abs() < 0.01, "grew {grown}");
    }

    #[test]
    fn decrease_is_renos() {
        let mut cc = hybla(&[]);
        let st = ca_state(100);
        assert_eq!(cc.ssthresh(&st, &loss(SimTime::ZERO, LossKind::FastRetransmit, &st)), 50 * MSS);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Hybla::new(&Params::from_pairs(
                pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))
        };
        for (name, v) in
            [("rtt0", 0.0), ("rtt0", f64::INFINITY), ("initial_ssthresh_estimate", 0.5)]
        {
            match p(&[(name, v)]) {
                Err(CcError::BadParam { flavor: "hybla", param, .. }) => assert_eq!(param, name),
                other => panic!("expected BadParam for {name} = {v}, got {other:?}"),
            }
        }
        assert!(matches!(p(&[("rho", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(hybla(&[]).name(), "hybla");
    }
}
