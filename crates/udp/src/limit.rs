//! A user's bandwidth limit (`ccarena send --limit-rate`): a token bucket the file sender's loop
//! consults before it asks the transport for the next segment, sans-IO (the caller passes the
//! clock).
//!
//! Credit accrues with elapsed time at the rate, up to the bucket's depth (the burst), and every
//! payload byte sent spends a byte of credit — the token bucket of RFC 2697 §3 (one rate, one
//! burst size; Tanenbaum & Wetherall, *Computer Networks*, 5th ed., §5.4.2). Because credit is
//! reckoned from elapsed time, a driver that wakes late finds the late time's credit waiting and
//! sends it back-to-back: the rate is kept however late the wake-ups, up to the depth. That lets
//! the driver sleep until a batch of packets is due and send them with one system call
//! ([`RateLimit::batch_due`]) instead of waking once per packet, which cost 5–9 MHz of CPU per
//! Mbit/s and lost every late wake-up's time for good (issue 29).
//!
//! Over any interval `[a, b]` the bytes taken never exceed `rate·(b − a)/8 + depth`, and from the
//! start no more than `initial + rate·t/8`.

use ccarena_cc::{Duration, SimTime};

/// Credit units per byte: bit-nanoseconds per second (8 bits × 10⁹ ns/s), so that a rate in bit/s
/// accrues exactly `rate` units per nanosecond with integers only.
const UNITS_PER_BYTE: i128 = 8 * 1_000_000_000;

/// How long a batch is worth at the limited rate: the driver sleeps until this much credit is
/// waiting. A wake-up costs about 50 µs of CPU on a 2-core VM (the context switches, a timer, a
/// `sendmmsg` and a `recvmmsg`), so 4 ms keeps that to about 1 % of a core at any rate, while a
/// burst stays a few milliseconds long (Linux's TSO autosizing sends about 1 ms of data per
/// burst at its pacing rate, 64 KB at most).
pub const BATCH_TIME: std::time::Duration = std::time::Duration::from_millis(4);

/// Late wake-up time the bucket makes up on top of a batch: its depth is a batch plus this much
/// at the rate (a busy machine, or a hypervisor stealing the CPU, delays a sleeper by
/// milliseconds; beyond this the time is lost, as an idle sender must not bank unbounded credit).
pub const CATCH_UP_TIME: std::time::Duration = std::time::Duration::from_millis(50);

/// Most datagrams in one batch: one `sendmmsg` call ([`crate::batch::MAX_MESSAGES`]).
const MAX_BATCH_SEGMENTS: u64 = crate::batch::MAX_MESSAGES as u64;

/// A token bucket over payload bytes.
#[derive(Clone, Copy, Debug)]
pub struct TokenBucket {
    rate_bps: u64,
    depth_bytes: u64,
    /// Credit at `at`, bit-nanoseconds per second ([`UNITS_PER_BYTE`] per byte); negative after a
    /// take beyond the credit (a debt later credit pays first).
    credit: i128,
    at: SimTime,
}

impl TokenBucket {
    /// A bucket filling at `rate_bps` (bit/s, > 0) up to `depth_bytes`, holding `initial_bytes`
    /// (at most the depth) at `now`.
    ///
    /// # Panics
    /// If `rate_bps` is 0 (no limit is no bucket: the caller keeps `None`).
    pub fn new(rate_bps: u64, depth_bytes: u64, initial_bytes: u64, now: SimTime) -> TokenBucket {
        assert!(rate_bps > 0, "a token bucket needs a positive rate");
        TokenBucket {
            rate_bps,
            depth_bytes,
            credit: i128::from(initial_bytes.min(depth_bytes)) * UNITS_PER_BYTE,
            at: now,
        }
    }

    /// The rate, bit/s.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// The depth (largest burst), bytes.
    pub fn depth_bytes(&self) -> u64 {
        self.depth_bytes
    }

    /// Add the credit accrued since the last call (a clock that went back adds nothing).
    fn refill(&mut self, now: SimTime) {
        if now <= self.at {
            return;
        }
        let elapsed_ns = i128::from(now.as_nanos() - self.at.as_nanos());
        let cap = i128::from(self.depth_bytes) * UNITS_PER_BYTE;
        self.credit = (self.credit + elapsed_ns * i128::from(self.rate_bps)).min(cap);
        self.at = now;
    }

    /// Whole bytes of credit at `now` (0 while in debt).
    pub fn credit_bytes(&mut self, now: SimTime) -> u64 {
        self.refill(now);
        (self.credit / UNITS_PER_BYTE).max(0) as u64
    }

    /// True when `bytes` may be sent at `now`.
    pub fn allows(&mut self, now: SimTime, bytes: u64) -> bool {
        self.refill(now);
        self.credit >= i128::from(bytes) * UNITS_PER_BYTE
    }

    /// Spend `bytes` sent at `now` (beyond the credit: a debt, paid before anything else is
    /// allowed).
    pub fn take(&mut self, now: SimTime, bytes: u64) {
        self.refill(now);
        self.credit -= i128::from(bytes) * UNITS_PER_BYTE;
    }

    /// The earliest time the bucket holds `bytes` of credit (at most the depth: a larger ask is
    /// due when the bucket is full); the last time seen if it already does.
    pub fn due(&self, bytes: u64) -> SimTime {
        let need = i128::from(bytes.min(self.depth_bytes)) * UNITS_PER_BYTE - self.credit;
        if need <= 0 {
            return self.at;
        }
        let rate = i128::from(self.rate_bps);
        let ns = (need + rate - 1) / rate;
        self.at + Duration(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// The file sender's limit: the bucket and the batch it sleeps for.
#[derive(Clone, Copy, Debug)]
pub struct RateLimit {
    /// The bucket (payload bytes).
    pub bucket: TokenBucket,
    /// Bytes the driver waits to have credit for before it wakes to send ([`BATCH_TIME`] at the
    /// rate, at least one segment and at most one `sendmmsg` call's worth).
    pub batch_bytes: u64,
    /// Largest segment, bytes: the credit a poll of the transport needs.
    pub mss_bytes: u64,
}

impl RateLimit {
    /// The limit of `rate_bps` payload bits per second for segments of at most `mss_bytes`,
    /// starting at `now` with one batch of credit (so the first packets leave at once and the
    /// rate is not overshot by a full bucket at the start).
    ///
    /// # Panics
    /// If `rate_bps` or `mss_bytes` is 0.
    pub fn new(rate_bps: u64, mss_bytes: u64, now: SimTime) -> RateLimit {
        assert!(mss_bytes > 0, "a rate limit needs a positive MSS");
        let at_rate = |d: std::time::Duration| (u128::from(rate_bps) * d.as_nanos() / 8_000_000_000) as u64;
        let batch_bytes = at_rate(BATCH_TIME).clamp(mss_bytes, MAX_BATCH_SEGMENTS * mss_bytes);
        let depth_bytes = batch_bytes + at_rate(CATCH_UP_TIME).max(mss_bytes);
        RateLimit { bucket: TokenBucket::new(rate_bps, depth_bytes, batch_bytes, now), batch_bytes, mss_bytes }
    }

    /// True when the transport may be asked for a segment at `now` (credit for a whole one).
    pub fn allows_segment(&mut self, now: SimTime) -> bool {
        self.bucket.allows(now, self.mss_bytes)
    }

    /// When the next batch is due: the time the bucket holds [`RateLimit::batch_bytes`].
    pub fn batch_due(&self) -> SimTime {
        self.bucket.due(self.batch_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Send as the file sender does at each wake-up: segments of `mss` while a whole one has
    /// credit; returns the bytes sent.
    fn drain(l: &mut RateLimit, now: SimTime) -> u64 {
        let mut sent = 0;
        while l.allows_segment(now) {
            l.bucket.take(now, l.mss_bytes);
            sent += l.mss_bytes;
        }
        sent
    }

    #[test]
    fn credit_accrues_with_elapsed_time_and_stops_at_the_depth() {
        // 8 Mbit/s = 1 byte per µs.
        let mut b = TokenBucket::new(8_000_000, 10_000, 0, SimTime::ZERO);
        assert_eq!(b.credit_bytes(SimTime(1_000_000)), 1_000);
        assert_eq!(b.credit_bytes(SimTime(3_500_000)), 3_500);
        assert_eq!(b.credit_bytes(SimTime(100 * MS)), 10_000, "capped at the depth");
        b.take(SimTime(100 * MS), 12_000);
        assert_eq!(b.credit_bytes(SimTime(100 * MS)), 0, "in debt");
        assert!(!b.allows(SimTime(101 * MS), 1), "1 ms pays 1,000 of the 2,000 owed");
        assert_eq!(b.due(1_000), SimTime(103 * MS), "the 1,000 still owed, then 1,000 more");
        assert!(!b.allows(SimTime(103 * MS - 1), 1_000));
        assert!(b.allows(SimTime(103 * MS), 1_000));
        // A clock read that goes back adds nothing and takes nothing away.
        assert_eq!(b.credit_bytes(SimTime(50 * MS)), 1_000);
        assert_eq!(b.due(500), SimTime(103 * MS), "already held: due at the last time seen");
    }

    #[test]
    fn releases_the_rate_in_batches_on_time() {
        // 100 Mbit/s, 1400-byte segments: a 4 ms batch is 50,000 bytes → 35 segments of credit.
        let mut l = RateLimit::new(100_000_000, 1400, SimTime::ZERO);
        assert_eq!(l.batch_bytes, 50_000);
        let mut now = SimTime::ZERO;
        let mut sent = drain(&mut l, now);
        for _ in 0..500 {
            now = l.batch_due();
            sent += drain(&mut l, now);
        }
        // About a second at the rate: within one segment of rate·t + the first batch.
        let allowed = 100_000_000 * now.as_nanos() / 8_000_000_000 + l.batch_bytes;
        assert!(sent <= allowed && sent + 1400 > allowed, "sent {sent}, allowed {allowed} by {now:?}");
        // Each wake-up sends the whole segments of a batch's credit (the remainder waits for the
        // next): 12.5 MB/s over 48,600–50,000 bytes a wake-up.
        let wake_ups_per_s = 500.0 / (now.as_nanos() as f64 / 1e9);
        assert!((250.0..=12.5e6 / 48_600.0).contains(&wake_ups_per_s), "{wake_ups_per_s} wake-ups/s");
    }

    #[test]
    fn a_late_wake_up_is_made_up_within_the_depth() {
        // 100 Mbit/s: wake-ups late by 5 ms (well within the 50 ms catch-up) lose nothing...
        let mut l = RateLimit::new(100_000_000, 1400, SimTime::ZERO);
        let mut now = SimTime::ZERO;
        let mut sent = drain(&mut l, now);
        for i in 0..200 {
            now = l.batch_due() + Duration(if i % 3 == 0 { 5 * MS } else { 0 });
            sent += drain(&mut l, now);
        }
        let at_rate = 100_000_000 * now.as_nanos() / 8_000_000_000;
        assert!(sent + l.batch_bytes + 1400 >= at_rate, "sent {sent}, at the rate {at_rate}");
        assert!(sent <= at_rate + l.batch_bytes);
        // ...and one 500 ms stall loses all but the depth's worth: no unbounded bank.
        let stall = now + Duration(500 * MS);
        let burst = drain(&mut l, stall);
        assert!(burst <= l.bucket.depth_bytes(), "{burst} after a stall, depth {}", l.bucket.depth_bytes());
        assert!(burst + 1400 > l.bucket.depth_bytes());
    }

    #[test]
    fn never_sends_more_than_the_rate_times_any_interval_plus_the_depth() {
        // Irregular wake-ups (a deterministic scramble of 0..7 ms) at 50 Mbit/s: every window
        // between two wake-ups carries at most rate·window + depth.
        let mut l = RateLimit::new(50_000_000, 1400, SimTime::ZERO);
        let depth = l.bucket.depth_bytes();
        let mut log: Vec<(u64, u64)> = Vec::new(); // (time ns, cumulative bytes)
        let mut now = 0u64;
        let mut total = 0;
        let mut x = 12_345u64;
        for _ in 0..2_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            now += (x >> 33) % (7 * MS);
            total += drain(&mut l, SimTime(now));
            log.push((now, total));
        }
        for (i, &(ta, _)) in log.iter().enumerate() {
            for &(tb, bb) in &log[i..] {
                // Bytes sent in (ta, tb]: those of the wake-ups after a, up to and including b;
                // plus a's own wake-up, to count its burst too.
                let before_a = if i == 0 { 0 } else { log[i - 1].1 };
                let window_bytes = bb - before_a;
                let allowed = 50_000_000 * (tb - ta) / 8_000_000_000 + depth;
                assert!(window_bytes <= allowed, "{window_bytes} B in {} ns > {allowed}", tb - ta);
            }
        }
        assert!(total > 50_000_000 * now / 8_000_000_000 * 9 / 10, "and it does send at about the rate");
    }

    #[test]
    fn the_batch_is_at_least_a_segment_and_at_most_one_system_calls_worth() {
        assert_eq!(RateLimit::new(1_000_000, 1400, SimTime::ZERO).batch_bytes, 1400, "4 ms at 1 Mbit/s is 500 B");
        assert_eq!(RateLimit::new(10_000_000_000, 1400, SimTime::ZERO).batch_bytes, 64 * 1400);
        let l = RateLimit::new(1_000_000, 1400, SimTime::ZERO);
        assert_eq!(l.bucket.depth_bytes(), 1400 + 6_250, "a batch plus 50 ms at the rate");
    }
}
