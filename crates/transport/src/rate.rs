//! Delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation).
//!
//! Every transmission is stamped with the connection's delivery state ([`TxStamp`]): how many
//! bytes had been delivered (`delivered`), when the last delivery happened (`delivered_time`),
//! when the current flight started (`first_sent_time`) and whether the application was limiting
//! the sender. When an ACK newly delivers (acknowledges or SACKs) segments, the newest of them
//! gives the sample: `delivered_bytes = C.delivered − P.delivered` over
//! `interval = max(P.send_time − P.first_sent_time, now − P.delivered_time)`, the max of the send
//! and ACK rates' intervals, which guards against ACK compression. Samples whose interval is
//! shorter than the minimum RTT are unreliable and reported with a zero interval (and rate).
//!
//! Each sample also reports the loss context BBRv3 needs (draft-ietf-ccwg-bbr §2.4): the pipe when
//! the measured segment was sent, that segment included (`tx_in_flight_bytes`), and the bytes
//! declared lost since then (`lost_bytes`, from the connection's running loss total).
//!
//! App-limited marking: when the sender has nothing to send (no new data, no retransmission
//! pending) and the window is not full, the connection is marked app-limited until the bytes now
//! in flight have been delivered; every segment sent in that period carries the mark, and samples
//! measured over such a segment say so, so that model-based controllers (BBR) do not take them as
//! the path's bandwidth.

use ccarena_cc::time::NANOS_PER_SEC;
use ccarena_cc::{Duration, RateSample, SimTime};

/// Delivery state stamped on a segment at each (re)transmission.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStamp {
    /// Connection-total bytes delivered when the segment was sent.
    pub delivered: u64,
    /// Time of the last delivery before the segment was sent.
    pub delivered_time: SimTime,
    /// Send time of the first segment of the flight the segment belongs to.
    pub first_sent_time: SimTime,
    /// Sent while the connection was app-limited.
    pub is_app_limited: bool,
    /// Bytes in flight (RFC 6675 pipe) just before the segment was sent.
    pub in_flight: u64,
    /// Connection-total bytes declared lost when the segment was sent.
    pub lost: u64,
}

/// Connection-level delivery-rate state and the per-ACK sample under construction.
#[derive(Clone, Debug, Default)]
pub struct RateEstimator {
    delivered: u64,
    delivered_time: SimTime,
    first_sent_time: SimTime,
    /// Non-zero while app-limited: the `delivered` value past which the mark is cleared.
    app_limited_until: u64,
    // The sample being built from the current ACK.
    has_data: bool,
    prior_delivered: u64,
    prior_time: SimTime,
    send_elapsed: Duration,
    ack_elapsed: Duration,
    sample_app_limited: bool,
    last_end: u64,
    /// Connection-total bytes declared lost (C.lost).
    lost: u64,
    sample_tx_in_flight: u64,
    sample_lost: u64,
}

impl RateEstimator {
    /// A connection that has delivered nothing.
    pub fn new() -> RateEstimator {
        RateEstimator::default()
    }

    /// Bytes delivered (acknowledged or SACKed) so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// True while the connection is marked app-limited.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited_until != 0
    }

    /// Stamp a transmission at `now`; `in_flight_before` is the RFC 6675 pipe before it. When
    /// nothing is in flight a new flight starts, so the send and delivery clocks restart at
    /// `now` (an idle period is not counted in the next sample).
    pub fn on_send(&mut self, now: SimTime, in_flight_before: u64) -> TxStamp {
        if in_flight_before == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        TxStamp {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            is_app_limited: self.app_limited_until != 0,
            in_flight: in_flight_before,
            lost: self.lost,
        }
    }

    /// Mark the connection app-limited: the sender has nothing to send and the window is not
    /// full. `in_flight` is the current pipe; the mark lasts until that much more is delivered.
    pub fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }

    /// Start building the sample of a new ACK.
    pub fn begin_ack(&mut self) {
        self.has_data = false;
    }

    /// A segment `[end − len, end)` sent at `sent_time` with `stamp` was newly delivered at `now`
    /// (cumulatively acknowledged or SACKed, counted once).
    pub fn on_delivered(
        &mut self,
        now: SimTime,
        end: u64,
        len: u64,
        sent_time: SimTime,
        stamp: &TxStamp,
    ) {
        self.delivered += len;
        self.delivered_time = now;
        let newest = !self.has_data
            || sent_time > self.first_sent_time
            || (sent_time == self.first_sent_time && end > self.last_end);
        if newest {
            self.has_data = true;
            self.prior_delivered = stamp.delivered;
            self.prior_time = stamp.delivered_time;
            self.sample_app_limited = stamp.is_app_limited;
            self.send_elapsed = sent_time.saturating_since(stamp.first_sent_time);
            self.ack_elapsed = now.saturating_since(stamp.delivered_time);
            self.last_end = end;
            self.first_sent_time = sent_time;
            self.sample_tx_in_flight = stamp.in_flight + len;
            self.sample_lost = stamp.lost;
        }
    }

    /// Finish the current ACK's sample. `interval` is zero (and the rate 0) when the ACK
    /// delivered nothing or the interval is shorter than `min_rtt` (an unreliable sample).
    pub fn generate(
        &mut self,
        min_rtt: Option<Duration>,
        newly_acked_bytes: u64,
        newly_lost_bytes: u64,
        rtt: Option<Duration>,
    ) -> RateSample {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        self.lost += newly_lost_bytes;
        let mut rs = RateSample {
            delivered_bytes: 0,
            interval: Duration::ZERO,
            delivery_rate_bps: 0,
            prior_delivered_bytes: self.delivered,
            total_delivered_bytes: self.delivered,
            is_app_limited: self.app_limited_until != 0,
            rtt,
            newly_lost_bytes,
            newly_acked_bytes,
            tx_in_flight_bytes: 0,
            lost_bytes: 0,
        };
        if !self.has_data {
            return rs;
        }
        rs.delivered_bytes = self.delivered - self.prior_delivered;
        rs.prior_delivered_bytes = self.prior_delivered;
        rs.is_app_limited = self.sample_app_limited;
        rs.tx_in_flight_bytes = self.sample_tx_in_flight;
        rs.lost_bytes = self.lost - self.sample_lost;
        let interval = self.send_elapsed.max(self.ack_elapsed);
        if min_rtt.is_some_and(|m| interval < m) || interval == Duration::ZERO {
            return rs;
        }
        rs.interval = interval;
        let bps = rs.delivered_bytes as u128 * 8 * NANOS_PER_SEC as u128 / interval.0 as u128;
        rs.delivery_rate_bps = bps.min(u64::MAX as u128) as u64;
        rs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_flight_gives_the_send_rate() {
        // Ten 1000-byte segments, one every 1 ms (8 Mbps); RTT 10 ms. Segment i is sent at
        // i ms and acknowledged at (10 + i) ms.
        let mut r = RateEstimator::new();
        let mut stamps = Vec::new();
        for i in 0..10u64 {
            stamps.push(r.on_send(SimTime(i * 1_000_000), i * 1000));
        }
        let mut last = None;
        for i in 0..10u64 {
            r.begin_ack();
            let now = SimTime((10 + i) * 1_000_000);
            r.on_delivered(
                now,
                (i + 1) * 1000,
                1000,
                SimTime(i * 1_000_000),
                &stamps[i as usize],
            );
            last = Some(r.generate(Some(Duration::from_millis(10)), 1000, 0, None));
        }
        // Last segment: sent at 9 ms in a flight that started at 0 (send_elapsed 9 ms), its
        // stamp's delivered_time is 0 (ack_elapsed 19 ms): 10000 B over 19 ms.
        let rs = last.unwrap();
        assert_eq!(rs.delivered_bytes, 10_000);
        assert_eq!(rs.interval, Duration::from_millis(19));
        assert_eq!(rs.delivery_rate_bps, 10_000 * 8 * 1000 / 19);
    }

    #[test]
    fn short_interval_is_invalid() {
        let mut r = RateEstimator::new();
        let s = r.on_send(SimTime(0), 0);
        r.begin_ack();
        r.on_delivered(SimTime(1_000_000), 1000, 1000, SimTime(0), &s);
        let rs = r.generate(Some(Duration::from_millis(5)), 1000, 0, None);
        assert_eq!(rs.interval, Duration::ZERO);
        assert_eq!(rs.delivery_rate_bps, 0);
        assert_eq!(rs.delivered_bytes, 1000);
    }

    #[test]
    fn sample_reports_inflight_at_send_and_losses_since() {
        let mut r = RateEstimator::new();
        let s0 = r.on_send(SimTime(0), 0);
        let _lost_seg = r.on_send(SimTime(1), 1000);
        let s2 = r.on_send(SimTime(2), 2000);
        // The second segment is declared lost on the ACK that delivers the first.
        r.begin_ack();
        r.on_delivered(SimTime(10), 1000, 1000, SimTime(0), &s0);
        let rs = r.generate(None, 1000, 1000, None);
        assert_eq!((rs.tx_in_flight_bytes, rs.lost_bytes), (1000, 1000));
        // The third was sent before the loss was declared: the loss counts for it.
        r.begin_ack();
        r.on_delivered(SimTime(12), 3000, 1000, SimTime(2), &s2);
        let rs = r.generate(None, 1000, 0, None);
        assert_eq!((rs.tx_in_flight_bytes, rs.lost_bytes), (3000, 1000));
        // Sent after the loss: no loss since its transmission.
        let s3 = r.on_send(SimTime(13), 0);
        r.begin_ack();
        r.on_delivered(SimTime(20), 4000, 1000, SimTime(13), &s3);
        let rs = r.generate(None, 1000, 0, None);
        assert_eq!((rs.tx_in_flight_bytes, rs.lost_bytes), (1000, 0));
    }

    #[test]
    fn app_limited_mark_spans_the_flight_in_progress() {
        let mut r = RateEstimator::new();
        let s0 = r.on_send(SimTime(0), 0);
        r.mark_app_limited(1000);
        assert!(r.is_app_limited());
        let s1 = r.on_send(SimTime(1), 1000);
        assert!(!s0.is_app_limited && s1.is_app_limited);
        r.begin_ack();
        r.on_delivered(SimTime(10), 1000, 1000, SimTime(0), &s0);
        let _ = r.generate(None, 1000, 0, None);
        assert!(r.is_app_limited(), "delivered == mark: still limited");
        r.begin_ack();
        r.on_delivered(SimTime(11), 2000, 1000, SimTime(1), &s1);
        let rs = r.generate(None, 1000, 0, None);
        assert!(rs.is_app_limited, "measured over an app-limited segment");
        assert!(
            !r.is_app_limited(),
            "mark cleared once the flight is delivered"
        );
    }
}
