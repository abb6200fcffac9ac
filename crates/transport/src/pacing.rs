//! Pacing: spacing transmissions at the rate the congestion controller asks for.
//!
//! When [`CwndState::pacing_rate_bps`](ccarena_cc::CwndState::pacing_rate_bps) is `Some(rate)`,
//! a segment of `len` payload bytes sent at time `t` holds the next transmission until
//! `t + len·8/rate` (rounded up to a whole nanosecond). Only payload bytes are counted: the
//! transport does not know the header sizes the wire adds, and controllers (BBR) compute their
//! rates from delivered payload, so pacing payload at the controller's rate keeps the two
//! consistent. Every transmission is paced, retransmissions included.
//!
//! A caller that polls late (a real clock: timers fire tens of microseconds late, a loaded CPU
//! later still) would lose the time for good. [`Pacer::with_burst`] lets it make up to `burst` of
//! lost time back-to-back — the credit Linux gets from sending a TSO burst of about 1 ms of data
//! per wake-up (`tcp_tso_autosize`, pacing shift 10). The simulator, whose clock is exact, keeps
//! the default of no burst.

use ccarena_cc::{Duration, SimTime};

/// The earliest time the next segment may leave.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pacer {
    next_send: SimTime,
    burst: Duration,
}

impl Pacer {
    /// A pacer that allows a transmission at once.
    pub fn new() -> Pacer {
        Pacer {
            next_send: SimTime::ZERO,
            burst: Duration::ZERO,
        }
    }

    /// A pacer that lets a late caller send up to `burst` of transmission time back-to-back
    /// to catch up (never more: an idle sender does not bank credit beyond it).
    pub fn with_burst(burst: Duration) -> Pacer {
        Pacer {
            next_send: SimTime::ZERO,
            burst,
        }
    }

    /// Change the burst allowance (see [`Pacer::with_burst`]); the next release time stays.
    pub fn set_burst(&mut self, burst: Duration) {
        self.burst = burst;
    }

    /// True when a segment may be sent at `now`.
    pub fn ready(&self, now: SimTime) -> bool {
        now >= self.next_send
    }

    /// The earliest time the next segment may leave.
    pub fn release_time(&self) -> SimTime {
        self.next_send
    }

    /// Record a transmission of `len_bytes` payload bytes at `now` with pacing rate `rate_bps`
    /// (bits per second; `None` or 0 means no pacing).
    pub fn on_send(&mut self, now: SimTime, len_bytes: u64, rate_bps: Option<u64>) {
        match rate_bps {
            Some(rate) if rate > 0 => {
                let earliest = SimTime(now.as_nanos().saturating_sub(self.burst.as_nanos()));
                self.next_send = earliest.max(self.next_send) + Duration::transmission(len_bytes, rate);
            }
            _ => self.next_send = now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_by_serialization_time_of_the_payload() {
        let mut p = Pacer::new();
        assert!(p.ready(SimTime::ZERO));
        // 1500 B at 12 Mbps = 1 ms.
        p.on_send(SimTime::ZERO, 1500, Some(12_000_000));
        assert_eq!(p.release_time(), SimTime(1_000_000));
        assert!(!p.ready(SimTime(999_999)));
        assert!(p.ready(SimTime(1_000_000)));
        p.on_send(SimTime(1_000_000), 1500, Some(12_000_000));
        assert_eq!(p.release_time(), SimTime(2_000_000));
    }

    #[test]
    fn a_late_caller_catches_up_by_at_most_the_burst() {
        // 1500 B at 12 Mbps = 1 ms per segment; 2 ms of burst credit.
        let mut p = Pacer::with_burst(Duration::from_millis(2));
        p.on_send(SimTime::ZERO, 1500, Some(12_000_000));
        // Polled 5 ms late: sends back-to-back until only the late time beyond the burst is lost.
        let now = SimTime(6_000_000);
        let mut sent_now = 1;
        p.on_send(now, 1500, Some(12_000_000));
        while p.ready(now) {
            p.on_send(now, 1500, Some(12_000_000));
            sent_now += 1;
        }
        assert_eq!(sent_now, 3, "the segment due now and 2 ms of credit = two more");
        assert_eq!(p.release_time(), SimTime(7_000_000));
        // Without the burst the same late poll sends one.
        let mut q = Pacer::new();
        q.on_send(SimTime::ZERO, 1500, Some(12_000_000));
        q.on_send(now, 1500, Some(12_000_000));
        assert!(!q.ready(now));
    }

    #[test]
    fn no_rate_means_no_wait() {
        let mut p = Pacer::new();
        p.on_send(SimTime(5), 1500, None);
        assert!(p.ready(SimTime(5)));
        p.on_send(SimTime(5), 1500, Some(0));
        assert!(p.ready(SimTime(5)));
    }
}
