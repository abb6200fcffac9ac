//! The listening side's defences that keep no per-peer state: stateless cookies, a handshake
//! rate limit and an anti-replay window.

use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;
use std::time::Instant;

use crate::wire::COOKIE_BYTES;

/// Seconds per cookie time bucket; a cookie is accepted in its bucket and the next, so it lives
/// 30 to 60 s.
pub const COOKIE_BUCKET_SECS: u64 = 30;

/// Stateless handshake cookies (the idea of SYN cookies and of QUIC's Retry token, RFC 9000
/// §8.1.2): `cookie = H_k(peer address, connection id, time bucket)`, two 64-bit keyed SipHash
/// values under keys drawn at random when the jar is made. The server keeps nothing per HELLO; an
/// OFFER is accepted only with a cookie for its source address, so a spoofed source (which never
/// sees the RETRY) cannot make the server allocate a connection. SipHash is a keyed PRF
/// (Aumasson and Bernstein, 2012); std's `RandomState` is SipHash-1-3 with random keys, enough
/// against an off-path guesser (2^-128 per try), not a MAC against cryptanalysis.
#[derive(Debug)]
pub struct CookieJar {
    keys: [RandomState; 2],
    epoch: Instant,
}

impl Default for CookieJar {
    fn default() -> CookieJar {
        CookieJar::new()
    }
}

impl CookieJar {
    /// A jar with fresh random keys.
    pub fn new() -> CookieJar {
        CookieJar { keys: [RandomState::new(), RandomState::new()], epoch: Instant::now() }
    }

    fn bucket(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.epoch).as_secs() / COOKIE_BUCKET_SECS
    }

    fn make(&self, peer: SocketAddr, conn_id: u64, bucket: u64) -> [u8; COOKIE_BYTES] {
        let mut out = [0u8; COOKIE_BYTES];
        for (i, k) in self.keys.iter().enumerate() {
            let h = k.hash_one((peer, conn_id, bucket));
            out[i * 8..i * 8 + 8].copy_from_slice(&h.to_be_bytes());
        }
        out
    }

    /// The cookie for `peer` and `conn_id` at `now`.
    pub fn issue(&self, peer: SocketAddr, conn_id: u64, now: Instant) -> [u8; COOKIE_BYTES] {
        self.make(peer, conn_id, self.bucket(now))
    }

    /// True when `cookie` was issued to `peer` for `conn_id` in this time bucket or the last one.
    /// The comparison takes the same time whatever the bytes (no timing oracle).
    pub fn verify(&self, peer: SocketAddr, conn_id: u64, cookie: &[u8; COOKIE_BYTES], now: Instant) -> bool {
        let b = self.bucket(now);
        let eq = |a: &[u8; COOKIE_BYTES]| a.iter().zip(cookie).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0;
        let current = eq(&self.make(peer, conn_id, b));
        let previous = b > 0 && eq(&self.make(peer, conn_id, b - 1));
        current | previous
    }
}

/// A token bucket: `rate_per_s` tokens a second, at most `burst` saved.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate_per_s: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(rate_per_s: f64, burst: f64, now: Instant) -> TokenBucket {
        TokenBucket { rate_per_s, burst, tokens: burst, last: now }
    }

    /// Take a token if one is there.
    pub fn allow(&mut self, now: Instant) -> bool {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + dt * self.rate_per_s).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Anti-replay window over packet numbers (RFC 4303 §3.4.3's sliding window, 64 packets): a
/// packet number seen before, or more than 63 below the highest seen, is a replay.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplayWindow {
    /// One past the highest packet number accepted (0: none yet).
    top: u64,
    /// Bit i set: packet number `top - 1 - i` was accepted.
    seen: u64,
}

impl ReplayWindow {
    /// Accept `pn` (true) or call it a replay (false), recording it when accepted.
    pub fn accept(&mut self, pn: u64) -> bool {
        if pn >= self.top {
            let shift = pn - self.top + 1;
            self.seen = if shift >= 64 { 0 } else { self.seen << shift };
            self.seen |= 1;
            self.top = pn.saturating_add(1);
            return true;
        }
        let back = self.top - 1 - pn;
        if back >= 64 || self.seen & (1 << back) != 0 {
            return false;
        }
        self.seen |= 1 << back;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_bind_address_and_connection() {
        let jar = CookieJar::new();
        let now = Instant::now();
        let a: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let b: SocketAddr = "127.0.0.2:5000".parse().unwrap();
        let c = jar.issue(a, 7, now);
        assert!(jar.verify(a, 7, &c, now));
        assert!(!jar.verify(b, 7, &c, now));
        assert!(!jar.verify(a, 8, &c, now));
        assert!(!CookieJar::new().verify(a, 7, &c, now));
    }

    #[test]
    fn replay_window_rejects_repeats_and_stale_numbers() {
        let mut w = ReplayWindow::default();
        assert!(w.accept(0));
        assert!(!w.accept(0));
        assert!(w.accept(5));
        assert!(w.accept(3));
        assert!(!w.accept(3));
        assert!(w.accept(100));
        assert!(!w.accept(36));
        assert!(w.accept(37));
        assert!(!w.accept(100));
    }

    #[test]
    fn bucket_limits_the_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10.0, 5.0, t0);
        let granted = (0..100).filter(|_| b.allow(t0)).count();
        assert_eq!(granted, 5);
        assert!(b.allow(t0 + std::time::Duration::from_millis(150)));
    }
}
