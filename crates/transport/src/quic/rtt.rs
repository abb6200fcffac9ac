//! QUIC's RTT estimator (RFC 9002 §5, pseudocode in Appendix A.7 `UpdateRtt`).
//!
//! It differs from TCP's (RFC 6298, [`crate::rtt`]) in three ways: `min_rtt` is tracked and never
//! adjusted for ACK delay (§5.2); the peer's reported ACK delay is subtracted from a sample, but
//! never below `min_rtt` (§5.3); and there is no RTO: the probe timeout ([`QuicRtt::pto_duration`],
//! §6.2.1) is derived from the same state.
//!
//! The connection is modelled as established with the handshake confirmed, so the ACK delay is
//! always capped at the peer's `max_ack_delay` (§5.3).

use ccarena_cc::Duration;

use super::GRANULARITY;

/// RTT state of RFC 9002 §5: latest, minimum and smoothed RTT, and RTT variation.
///
/// Before the first sample the smoothed RTT is the initial RTT and rttvar half of it
/// (§6.2.2, §A.4), so [`QuicRtt::pto_duration`] is defined from the start; [`QuicRtt::latest`] and
/// [`QuicRtt::min_rtt`] are `None` until then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuicRtt {
    latest: Option<Duration>,
    min: Option<Duration>,
    smoothed: Duration,
    rttvar: Duration,
}

impl QuicRtt {
    /// An estimator with no sample: smoothed RTT = `initial_rtt`, rttvar = `initial_rtt / 2`
    /// (RFC 9002 §6.2.2; kInitialRtt is 333 ms, [`super::INITIAL_RTT`]).
    pub fn new(initial_rtt: Duration) -> QuicRtt {
        QuicRtt { latest: None, min: None, smoothed: initial_rtt, rttvar: Duration(initial_rtt.0 / 2) }
    }

    /// Take an RTT sample (RFC 9002 §5.1–§5.3, §A.7 `UpdateRtt`): `latest_rtt` is the time from
    /// sending the largest newly acknowledged packet to receiving its ACK, `ack_delay` the ACK
    /// frame's delay field, `max_ack_delay` the peer's transport parameter (caps `ack_delay`).
    ///
    /// min_rtt is the minimum of the raw samples (§5.2). The first sample sets smoothed = latest
    /// and rttvar = latest/2 (§5.3). Later ones subtract the (capped) ACK delay only when that
    /// leaves the sample at least min_rtt, then
    /// `rttvar = 3/4·rttvar + 1/4·|smoothed − adjusted|` and `smoothed = 7/8·smoothed + 1/8·adjusted`.
    pub fn on_sample(&mut self, latest_rtt: Duration, ack_delay: Duration, max_ack_delay: Duration) {
        self.latest = Some(latest_rtt);
        let Some(min) = self.min else {
            self.min = Some(latest_rtt);
            self.smoothed = latest_rtt;
            self.rttvar = Duration(latest_rtt.0 / 2);
            return;
        };
        let min = min.min(latest_rtt);
        self.min = Some(min);
        let ack_delay = ack_delay.min(max_ack_delay);
        // §5.3: never take the adjusted sample below min_rtt (a bogus or oversized delay would
        // otherwise shrink the estimate below what the path has shown).
        let adjusted = if latest_rtt.0 >= min.0.saturating_add(ack_delay.0) {
            Duration(latest_rtt.0 - ack_delay.0)
        } else {
            latest_rtt
        };
        let dev = self.smoothed.0.abs_diff(adjusted.0);
        // Computed in u128 so 3·rttvar and 7·smoothed cannot overflow for any u64 input.
        self.rttvar = Duration(((3 * self.rttvar.0 as u128 + dev as u128) / 4) as u64);
        self.smoothed = Duration(((7 * self.smoothed.0 as u128 + adjusted.0 as u128) / 8) as u64);
    }

    /// True once a sample has been taken.
    pub fn has_sample(&self) -> bool {
        self.min.is_some()
    }

    /// The latest raw sample (`latest_rtt`, §5.1); `None` before the first.
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }

    /// smoothed_rtt (§5.3); the initial RTT before the first sample (§6.2.2).
    pub fn smoothed(&self) -> Duration {
        self.smoothed
    }

    /// rttvar (§5.3); half the initial RTT before the first sample (§6.2.2).
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// min_rtt (§5.2): the smallest raw sample, not adjusted for ACK delay; `None` before the
    /// first sample.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min
    }

    /// The probe timeout before backoff (RFC 9002 §6.2.1, §A.8 `GetPtoTimeAndSpace`):
    /// `smoothed_rtt + max(4·rttvar, kGranularity) + max_ack_delay`. `max_ack_delay` is always
    /// included: only the application data space is modelled.
    pub fn pto_duration(&self, max_ack_delay: Duration) -> Duration {
        self.smoothed + self.rttvar.saturating_mul(4).max(GRANULARITY) + max_ack_delay
    }
}
