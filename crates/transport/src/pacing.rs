//! Pacing: spacing transmissions at the rate the congestion controller asks for.
//!
//! When [`CwndState::pacing_rate_bps`](ccarena_cc::CwndState::pacing_rate_bps) is `Some(rate)`,
//! a segment of `len` payload bytes sent at time `t` holds the next transmission until
//! `t + len·8/rate` (rounded up to a whole nanosecond). Only payload bytes are counted: the
//! transport does not know the header sizes the wire adds, and controllers (BBR) compute their
//! rates from delivered payload, so pacing payload at the controller's rate keeps the two
//! consistent. Every transmission is paced, retransmissions included. The pacer has no
//! burst allowance: a caller that polls late loses the time, it is not made up later.

use ccarena_cc::{Duration, SimTime};

/// The earliest time the next segment may leave.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pacer {
    next_send: SimTime,
}

impl Pacer {
    /// A pacer that allows a transmission at once.
    pub fn new() -> Pacer {
        Pacer {
            next_send: SimTime::ZERO,
        }
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
                self.next_send = now.max(self.next_send) + Duration::transmission(len_bytes, rate);
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
    fn no_rate_means_no_wait() {
        let mut p = Pacer::new();
        p.on_send(SimTime(5), 1500, None);
        assert!(p.ready(SimTime(5)));
        p.on_send(SimTime(5), 1500, Some(0));
        assert!(p.ready(SimTime(5)));
    }
}
