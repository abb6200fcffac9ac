//! Reno's window arithmetic (RFC 5681, with RFC 3465 Appropriate Byte Counting), as reusable
//! pieces and as the `reno`, `newreno` and `tahoe` controllers.
//!
//! The three flavors share one controller: what differs between them is loss *recovery* (Tahoe has
//! no fast recovery, Reno leaves recovery on the first new ACK, NewReno stays until `recover` is
//! acknowledged), and recovery lives in the transport. The scenario's flavor name selects both.

use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, Params};

/// RFC 3465 §2.2: the limit L on the slow-start increase per ACK, in MSS. L = 2 allows for the
/// delayed-ACK receiver that acknowledges two segments at a time.
pub const ABC_LIMIT_SEGMENTS: u64 = 2;

/// Slow start (RFC 5681 §3.1 with RFC 3465 ABC): cwnd grows by the bytes newly acked, at most
/// L·MSS per ACK, and never past ssthresh. Returns the acked bytes left over once cwnd reached
/// ssthresh, which the caller feeds to congestion avoidance (as Linux's `tcp_slow_start` does).
pub fn slow_start(st: &mut CwndState, bytes_acked: u64) -> u64 {
    let increase = bytes_acked.min(ABC_LIMIT_SEGMENTS * st.mss_bytes);
    let new_cwnd = st.cwnd_bytes.saturating_add(increase).min(st.ssthresh_bytes.max(st.cwnd_bytes));
    let used = new_cwnd - st.cwnd_bytes;
    st.cwnd_bytes = new_cwnd;
    bytes_acked - used.min(bytes_acked)
}

/// Additive increase by byte counting: cwnd grows by one MSS for every `w_bytes` bytes acked,
/// i.e. by MSS·MSS/w per MSS acked (RFC 5681 §3.1, eq. 3, counted in bytes per RFC 3465 §2.1).
/// `acc_bytes` carries the bytes counted toward the next increase between calls.
pub fn cong_avoid_ai(st: &mut CwndState, w_bytes: u64, acc_bytes: &mut u64, bytes_acked: u64) {
    let w = w_bytes.max(st.mss_bytes);
    *acc_bytes += bytes_acked;
    if *acc_bytes >= w {
        let steps = *acc_bytes / w;
        *acc_bytes -= steps * w;
        st.cwnd_bytes += steps * st.mss_bytes;
    }
}

/// Slow start for one ACK if cwnd is below ssthresh (RFC 5681 §3.1): the acked bytes left for
/// congestion avoidance, all of them outside slow start, or `None` when slow start used them all
/// (the first half of Linux's `tcp_reno_cong_avoid`, which other flavors call the same way).
pub fn slow_start_first(st: &mut CwndState, bytes_acked: u64) -> Option<u64> {
    if !st.in_slow_start() {
        return Some(bytes_acked);
    }
    let left = slow_start(st, bytes_acked);
    (left > 0).then_some(left)
}

/// [`slow_start_first`] behind Linux's cwnd-limited check, the whole first half of
/// `tcp_reno_cong_avoid` (`if (!tcp_is_cwnd_limited(sk)) return;` then slow start): the acked
/// bytes left for congestion avoidance, or `None` when the ACK earns no growth (the window was
/// not limiting the sender) or slow start used them all. For the flavors whose congestion
/// avoidance starts exactly as Linux's does.
pub fn cwnd_limited_slow_start_first(st: &mut CwndState, ack: &AckSample) -> Option<u64> {
    if !ack.cwnd_limited {
        return None;
    }
    slow_start_first(st, ack.bytes_acked)
}

/// Reno's growth for `bytes_acked` newly acknowledged bytes: slow start, then one MSS per window
/// acked (RFC 5681 §3.1; Linux's `tcp_reno_cong_avoid` without its cwnd-limited check), with
/// `acc_bytes` as in [`cong_avoid_ai`]. Flavors that grow like Reno call this (as Linux's Vegas,
/// DCTCP and Westwood+ call `tcp_reno_cong_avoid`).
pub fn grow(st: &mut CwndState, acc_bytes: &mut u64, bytes_acked: u64) {
    if let Some(acked) = slow_start_first(st, bytes_acked) {
        let w = st.cwnd_bytes;
        cong_avoid_ai(st, w, acc_bytes, acked);
    }
}

/// Linux's `tcp_reno_cong_avoid`: [`grow`] for an ACK, but only while the sender is limited by
/// cwnd (RFC 7661 §4.2: a window the application does not fill is not validated by its ACKs).
pub fn reno_cong_avoid(st: &mut CwndState, acc_bytes: &mut u64, ack: &AckSample) {
    if ack.cwnd_limited {
        grow(st, acc_bytes, ack.bytes_acked);
    }
}

/// RFC 5681 §3.1 eq. 4: ssthresh = max(FlightSize / 2, 2·MSS).
pub fn halve_flight(st: &CwndState, ev: &LossEvent) -> u64 {
    (ev.flight_size_bytes / 2).max(2 * st.mss_bytes)
}

/// The Reno/NewReno/Tahoe controller: slow start, then one MSS per RTT; halve on loss.
#[derive(Debug, Clone)]
pub struct Reno {
    name: &'static str,
    ca_acc_bytes: u64,
}

impl Reno {
    /// A Reno-family controller reporting itself as `name` (`"reno"`, `"newreno"` or `"tahoe"`).
    /// It has no parameters: any given is an error.
    pub fn new(name: &'static str, params: &Params) -> Result<Reno, CcError> {
        params.expect_only(name, &[])?;
        Ok(Reno { name, ca_acc_bytes: 0 })
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        self.name
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        reno_cong_avoid(st, &mut self.ca_acc_bytes, ack);
    }

    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.ca_acc_bytes = 0;
        halve_flight(st, ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Duration, LossKind, SimTime};

    const MSS: u64 = 1448;

    fn ack(bytes: u64) -> AckSample {
        crate::growth::testing::ack(SimTime::ZERO, bytes, Duration::from_millis(10))
    }

    #[test]
    fn slow_start_abc_limits_increase_to_two_mss_per_ack() {
        let mut st = CwndState::new(10 * MSS, MSS);
        let mut r = Reno::new("reno", &Params::default()).unwrap();
        r.cong_avoid(&mut st, &ack(4 * MSS));
        assert_eq!(st.cwnd_bytes, 12 * MSS);
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_leftover_goes_to_avoidance() {
        let mut st = CwndState::new(10 * MSS, MSS);
        st.ssthresh_bytes = 11 * MSS;
        let left = slow_start(&mut st, 2 * MSS);
        assert_eq!(st.cwnd_bytes, 11 * MSS);
        assert_eq!(left, MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window_acked() {
        let mut st = CwndState::new(10 * MSS, MSS);
        st.ssthresh_bytes = 5 * MSS;
        let mut r = Reno::new("reno", &Params::default()).unwrap();
        for _ in 0..9 {
            r.cong_avoid(&mut st, &ack(MSS));
        }
        assert_eq!(st.cwnd_bytes, 10 * MSS, "9 MSS acked of a 10 MSS window: no increase yet");
        r.cong_avoid(&mut st, &ack(MSS));
        assert_eq!(st.cwnd_bytes, 11 * MSS);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut st = CwndState::new(10 * MSS, MSS);
        let mut r = Reno::new("reno", &Params::default()).unwrap();
        let mut a = ack(2 * MSS);
        a.cwnd_limited = false;
        r.cong_avoid(&mut st, &a);
        assert_eq!(st.cwnd_bytes, 10 * MSS);
    }

    #[test]
    fn ssthresh_is_half_the_flight_but_at_least_two_mss() {
        let st = CwndState::new(10 * MSS, MSS);
        let mut r = Reno::new("reno", &Params::default()).unwrap();
        let mut ev = LossEvent {
            now: SimTime::ZERO,
            kind: LossKind::FastRetransmit,
            flight_size_bytes: 20 * MSS,
            in_flight_bytes: 20 * MSS,
        };
        assert_eq!(r.ssthresh(&st, &ev), 10 * MSS);
        ev.flight_size_bytes = 3 * MSS;
        assert_eq!(r.ssthresh(&st, &ev), 2 * MSS);
    }

    #[test]
    fn reno_rejects_parameters() {
        let p = Params::from_pairs(vec![("alpha".to_string(), 1.0)]);
        assert!(matches!(Reno::new("reno", &p), Err(CcError::UnknownParam { .. })));
    }
}
