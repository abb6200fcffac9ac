//! Window growth given in packets per RTT, applied per byte acknowledged.
//!
//! Most loss-based sources state their congestion-avoidance rule as "cwnd grows by `a` packets
//! per RTT", implemented per ACK as `cwnd += a/cwnd` for every packet acknowledged (RFC 5681
//! §3.1 eq. 3 with a = 1; RFC 3649 §5 with a = a(w); H-TCP, Hybla, Illinois, LTCP, BIC). In
//! bytes, with Appropriate Byte Counting (RFC 3465 §2.1), one ACK of `bytes_acked` bytes adds
//! `a · MSS · bytes_acked / cwnd` bytes, so one window's worth of ACKs adds `a` MSS.
//!
//! [`PerRttIncrease`] does that arithmetic and keeps the fraction of a byte each ACK leaves
//! over, so that an increase of 0.01 packet per RTT (or a window of 80 000 packets) is not lost
//! to rounding. It also accepts a negative `a` (a per-RTT decrease), which no caller in this crate
//! uses today.

use crate::CwndState;

/// Additive window growth of `a` packets per RTT, counted per byte acknowledged, with the
/// fractional byte carried between ACKs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerRttIncrease {
    /// Growth not yet added to cwnd, bytes, in [0, 1).
    frac_bytes: f64,
}

impl PerRttIncrease {
    /// A fresh accumulator (no fraction carried).
    pub fn new() -> PerRttIncrease {
        PerRttIncrease { frac_bytes: 0.0 }
    }

    /// Grow cwnd by `a_packets · MSS · bytes_acked / cwnd` bytes: `a_packets` MSS per window of
    /// data acknowledged. cwnd never drops below one MSS.
    pub fn apply(&mut self, st: &mut CwndState, a_packets: f64, bytes_acked: u64) {
        if bytes_acked == 0 || !a_packets.is_finite() {
            return;
        }
        let cwnd = st.cwnd_bytes.max(1) as f64;
        self.frac_bytes += a_packets * st.mss_bytes as f64 * bytes_acked as f64 / cwnd;
        let whole = self.frac_bytes.floor();
        self.frac_bytes -= whole;
        if whole >= 0.0 {
            st.cwnd_bytes = st.cwnd_bytes.saturating_add(whole as u64);
        } else {
            st.cwnd_bytes = st.cwnd_bytes.saturating_sub((-whole) as u64).max(st.mss_bytes);
        }
    }

    /// Forget the carried fraction (at a congestion event).
    pub fn reset(&mut self) {
        self.frac_bytes = 0.0;
    }
}

/// Test helpers shared by the controllers' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use crate::{AckSample, CaState, CongestionControl, CwndState, Duration, LossEvent, LossKind, SimTime};

    /// MSS used by the unit tests, bytes.
    pub const MSS: u64 = 1448;

    /// An ACK of `bytes` at `now` with every RTT field equal to `rtt` (min RTT too).
    pub fn ack(now: SimTime, bytes: u64, rtt: Duration) -> AckSample {
        AckSample {
            now,
            bytes_acked: bytes,
            rtt: Some(rtt),
            min_rtt: Some(rtt),
            srtt: Some(rtt),
            one_way_delay: None,
            prior_in_flight_bytes: 0,
            in_flight_bytes: 0,
            snd_una: 0,
            snd_nxt: 0,
            ece: false,
            ce_bytes: 0,
            cwnd_limited: true,
            state: CaState::Open,
        }
    }

    /// A congestion event of `kind` at `now` with FlightSize = cwnd.
    pub fn loss(now: SimTime, kind: LossKind, st: &CwndState) -> LossEvent {
        LossEvent { now, kind, flight_size_bytes: st.cwnd_bytes, in_flight_bytes: st.cwnd_bytes }
    }

    /// A window of `packets` MSS in congestion avoidance (ssthresh = cwnd).
    pub fn ca_state(packets: u64) -> CwndState {
        let mut st = CwndState::new(packets * MSS, MSS);
        st.ssthresh_bytes = st.cwnd_bytes;
        st
    }

    /// One RTT of `cong_avoid` ACKs of one MSS each (RTT samples `rtt`), as many as the window
    /// held packets at its start.
    pub fn one_rtt(cc: &mut dyn CongestionControl, st: &mut CwndState, rtt: Duration) {
        for _ in 0..st.cwnd_bytes / MSS {
            cc.cong_avoid(st, &ack(SimTime::ZERO, MSS, rtt));
        }
    }

    /// How many RTTs ([`one_rtt`]) the window takes to climb back to `target_bytes` after a
    /// fast-retransmit reduction (cwnd = ssthresh = the controller's `ssthresh`).
    pub fn rtts_to_regain(cc: &mut dyn CongestionControl, st: &mut CwndState, target_bytes: u64, rtt: Duration) -> u32 {
        let ss = cc.ssthresh(st, &loss(SimTime::ZERO, LossKind::FastRetransmit, st));
        st.cwnd_bytes = ss;
        st.ssthresh_bytes = ss;
        let mut rtts = 0;
        while st.cwnd_bytes < target_bytes {
            one_rtt(cc, st, rtt);
            rtts += 1;
        }
        rtts
    }
}

#[cfg(test)]
mod tests {
    use super::testing::MSS;
    use super::*;

    #[test]
    fn one_window_of_acks_adds_a_packets() {
        let mut st = CwndState::new(100 * MSS, MSS);
        let mut g = PerRttIncrease::new();
        // 100 ACKs of one MSS each at a = 3 (cwnd grows meanwhile, so slightly less than 3 MSS).
        for _ in 0..100 {
            g.apply(&mut st, 3.0, MSS);
        }
        let grown = (st.cwnd_bytes - 100 * MSS) as f64 / MSS as f64;
        assert!((grown - 3.0).abs() < 0.1, "grew {grown} packets");
    }

    #[test]
    fn tiny_increases_accumulate() {
        // 0.01 packet per RTT on a 10 000-packet window: 0.0014 byte per ACK.
        let mut st = CwndState::new(10_000 * MSS, MSS);
        let mut g = PerRttIncrease::new();
        for _ in 0..100_000 {
            g.apply(&mut st, 0.01, MSS);
        }
        // Ten windows acknowledged: 0.1 packet = 144.8 bytes.
        let grown = st.cwnd_bytes - 10_000 * MSS;
        assert!((143..=145).contains(&grown), "grew {grown} bytes");
    }
}
