//! The retransmission-timeout estimator of RFC 6298.
//!
//! [`RttEstimator`] keeps the smoothed RTT (`SRTT`), the RTT variation (`RTTVAR`) and the backoff
//! state, and computes the retransmission timeout (`RTO`):
//!
//! - before any sample, `RTO = initial_rto` (RFC 6298 §2.1);
//! - on the first sample R: `SRTT = R`, `RTTVAR = R/2` (§2.2);
//! - on later samples R': `RTTVAR = (1 − β)·RTTVAR + β·|SRTT − R'|`, then
//!   `SRTT = (1 − α)·SRTT + α·R'`, with α = 1/8, β = 1/4 (§2.3);
//! - `RTO = SRTT + max(G, K·RTTVAR)` with K = 4 and G the clock granularity (§2.2, §2.3);
//! - the RTO is never below `min_rto` (§2.4) and never above `max_rto` (§2.5);
//! - each expiry doubles it ("back off the timer", §5.5), and the backed-off value is kept until a
//!   new sample is taken (§5.7 and Karn's algorithm, §3).
//!
//! All arithmetic is integer nanoseconds; the divisions by 2, 4 and 8 round down.
//!
//! # Linux's rule ([`RtoRule::Linux`])
//!
//! Linux's `tcp_rtt_estimator` and `tcp_set_rto` (net/ipv4/tcp_input.c) compute the RTO
//! differently, and [`RtoRule::Linux`] models them (the smoothing in ns where Linux uses µs, and
//! no rounding to jiffies). Writing `mdev` for four times the mean deviation (RFC 6298's
//! `4·RTTVAR`, Linux's `mdev_us`):
//!
//! - first sample R: `SRTT = R`, `mdev = 2R`, `rttvar = max(mdev, min_rto)`, `mdev_max = rttvar`;
//!   the round ends when snd.una passes snd.nxt of this moment;
//! - later samples R': `SRTT += (R' − SRTT)/8` as RFC 6298; `mdev` moves by a quarter of
//!   `|R' − SRTT| − mdev/4`, except when the RTT *fell* and that difference is positive, when it
//!   moves by only 1/32 of it (Linux's "finer gain" for falling RTTs, an Eifel-like guard that
//!   keeps a drop in RTT from inflating the RTO);
//! - `mdev_max` is the largest `mdev` seen in the current round, and `rttvar` rises at once to
//!   it; when snd.una passes the round's end (once per RTT) `rttvar` decays by a quarter of its
//!   excess over `mdev_max`, `mdev_max` restarts at `min_rto`, and a new round begins;
//! - `RTO = SRTT + rttvar`, at most `max_rto`. Since `rttvar ≥ min_rto`, this is about
//!   `SRTT + max(min_rto, 4·RTTVAR)` — not RFC 6298's `max(min_rto, SRTT + 4·RTTVAR)`: a
//!   steady 40 ms path has an RTO of 240 ms in Linux, 200 ms by RFC 6298;
//! - backoff and its reset on a new sample are as RFC 6298 (Linux's `icsk_backoff`).
//!
//! The clock granularity G plays no part in Linux's rule.

use ccarena_cc::Duration;

/// RFC 6298 §2.2: K = 4, the weight of RTTVAR in the RTO.
pub const RTO_K: u64 = 4;

/// RFC 6298 §2.3: α = 1/8, the gain of a new sample in SRTT (written as its denominator).
pub const SRTT_GAIN_DENOM: u64 = 8;

/// RFC 6298 §2.3: β = 1/4, the gain of a new deviation in RTTVAR (written as its denominator).
pub const RTTVAR_GAIN_DENOM: u64 = 4;

/// Largest backoff exponent kept. 2^32 times any RTO of at least 1 ns exceeds any sensible
/// `max_rto`, so counting further would only risk overflow without changing the result.
const MAX_BACKOFF_EXP: u32 = 32;

/// Which RTO rule an [`RttEstimator`] follows (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RtoRule {
    /// RFC 6298: `RTO = max(min_rto, SRTT + max(G, 4·RTTVAR))`.
    #[default]
    Rfc6298,
    /// Linux's `tcp_rtt_estimator`/`tcp_set_rto`: `RTO = SRTT + rttvar`, with `rttvar` floored
    /// at `min_rto` and decaying once per RTT towards the round's largest deviation.
    Linux,
}

impl std::str::FromStr for RtoRule {
    type Err = String;

    /// `"rfc6298"` or `"linux"`, as specs and the udp backend's options name the rules.
    ///
    /// # Errors
    /// Any other name, with a message listing the two (the caller adds the field's name).
    fn from_str(name: &str) -> Result<RtoRule, String> {
        match name {
            "rfc6298" => Ok(RtoRule::Rfc6298),
            "linux" => Ok(RtoRule::Linux),
            other => Err(format!("unknown rule '{other}': use \"rfc6298\" or \"linux\"")),
        }
    }
}

/// Linux's extra RTO state ([`RtoRule::Linux`]): `rttvar` and the round's `mdev_max`, and
/// the sequence number that ends the round (Linux's `rtt_seq`).
#[derive(Clone, Copy, Debug, Default)]
struct LinuxRto {
    /// Four times the mean deviation (Linux's `mdev_us`).
    mdev: Duration,
    rttvar: Duration,
    mdev_max: Duration,
    round_end_seq: u64,
}

/// RFC 6298 (or Linux) RTT estimator and retransmission-timeout calculator.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    /// RFC 6298's RTTVAR (both rules; Linux's `mdev_us / 4`).
    rttvar: Duration,
    rule: RtoRule,
    linux: LinuxRto,
    min_rtt: Option<Duration>,
    latest: Option<Duration>,
    backoff_exp: u32,
    min_rto: Duration,
    initial_rto: Duration,
    max_rto: Duration,
    granularity: Duration,
}

impl RttEstimator {
    /// An estimator with no samples yet.
    ///
    /// `min_rto` and `max_rto` bound every RTO (RFC 6298 §2.4, §2.5; Linux uses 200 ms and
    /// 120 s), `initial_rto` is the RTO before the first sample (§2.1; 1 s), and `granularity` is
    /// the clock granularity G of §2.2.
    pub fn new(
        min_rto: Duration,
        initial_rto: Duration,
        max_rto: Duration,
        granularity: Duration,
    ) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            rule: RtoRule::Rfc6298,
            linux: LinuxRto::default(),
            min_rtt: None,
            latest: None,
            backoff_exp: 0,
            min_rto,
            initial_rto,
            max_rto,
            granularity,
        }
    }

    /// The same estimator following `rule` (set before the first sample).
    #[must_use]
    pub fn with_rule(mut self, rule: RtoRule) -> RttEstimator {
        self.rule = rule;
        self
    }

    /// The RTO rule in use.
    pub fn rule(&self) -> RtoRule {
        self.rule
    }

    /// Feed one RTT measurement (RFC 6298 §2.2/§2.3) and clear the backoff (§5.7: a new sample
    /// replaces the backed-off RTO). The caller applies Karn's rule: never pass a sample taken
    /// from a retransmitted segment. Under [`RtoRule::Linux`] every call without sequence
    /// numbers ends a round; a sender uses [`RttEstimator::on_sample_at`].
    pub fn on_sample(&mut self, r: Duration) {
        // Sequence numbers past the current round's end: this sample ends it.
        let past = self.linux.round_end_seq.saturating_add(1);
        self.on_sample_at(r, past, past);
    }

    /// [`RttEstimator::on_sample`] from a sender whose snd.una (after this ACK) and snd.nxt are
    /// given, bytes: under [`RtoRule::Linux`] they delimit the once-per-RTT rounds in which
    /// `rttvar` decays (Linux's `rtt_seq`: a round ends when snd.una passes the snd.nxt recorded
    /// at its start). RFC 6298 ignores them.
    pub fn on_sample_at(&mut self, r: Duration, snd_una: u64, snd_nxt: u64) {
        match self.rule {
            RtoRule::Rfc6298 => self.rfc6298_sample(r),
            RtoRule::Linux => self.linux_sample(r, snd_una, snd_nxt),
        }
    }

    /// Linux's `tcp_rtt_estimator` (net/ipv4/tcp_input.c), in RFC 6298 terms: see the module
    /// documentation.
    fn linux_sample(&mut self, r: Duration, snd_una: u64, snd_nxt: u64) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        let l = &mut self.linux;
        match self.srtt {
            None => {
                self.srtt = Some(r);
                // mdev = 2R (RTTVAR = R/2 as RFC 6298 §2.2), so a first RTO is 3R or R + min_rto.
                self.rttvar = Duration(r.0 / 2);
                l.mdev = Duration(r.0.saturating_mul(2));
                l.rttvar = l.mdev.max(self.min_rto);
                l.mdev_max = l.rttvar;
                l.round_end_seq = snd_nxt;
            }
            Some(srtt) => {
                let err = r.0 as i128 - srtt.0 as i128;
                let mut step = err.abs() - (l.mdev.0 / RTO_K) as i128;
                if err < 0 && step > 0 {
                    // RTT fell: Linux's finer gain (1/8 of the usual quarter).
                    step /= SRTT_GAIN_DENOM as i128;
                }
                // `mdev` is 4·RTTVAR, so adding `step` is RFC 6298's RTTVAR += step/4 (β = 1/4).
                l.mdev = Duration((l.mdev.0 as i128 + step).max(0) as u64);
                self.rttvar = Duration(l.mdev.0 / RTO_K);
                let srtt_new = srtt.0 as i128 + err / SRTT_GAIN_DENOM as i128;
                self.srtt = Some(Duration(srtt_new.max(1) as u64));
                if l.mdev > l.mdev_max {
                    l.mdev_max = l.mdev;
                    l.rttvar = l.rttvar.max(l.mdev);
                }
                if snd_una > l.round_end_seq {
                    if l.mdev_max < l.rttvar {
                        l.rttvar = l.rttvar - Duration((l.rttvar.0 - l.mdev_max.0) / 4);
                    }
                    l.round_end_seq = snd_nxt;
                    l.mdev_max = self.min_rto;
                }
            }
        }
        self.backoff_exp = 0;
    }

    /// RFC 6298 §2.2/§2.3.
    fn rfc6298_sample(&mut self, r: Duration) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Duration(r.0 / 2);
            }
            Some(srtt) => {
                let dev = srtt.0.abs_diff(r.0);
                // RTTVAR first, using the old SRTT (RFC 6298 §2.3 says the order matters).
                self.rttvar =
                    Duration(((RTTVAR_GAIN_DENOM - 1) * self.rttvar.0 + dev) / RTTVAR_GAIN_DENOM);
                self.srtt = Some(Duration(
                    ((SRTT_GAIN_DENOM - 1) * srtt.0 + r.0) / SRTT_GAIN_DENOM,
                ));
            }
        }
        self.backoff_exp = 0;
    }

    /// The timer expired: double the RTO (RFC 6298 §5.5), up to `max_rto`.
    pub fn backoff(&mut self) {
        self.backoff_exp = (self.backoff_exp + 1).min(MAX_BACKOFF_EXP);
    }

    /// How many times the RTO has been doubled since the last sample.
    pub fn backoff_count(&self) -> u32 {
        self.backoff_exp
    }

    /// The RTO before backoff: `max(min_rto, SRTT + max(G, K·RTTVAR))` (RFC 6298) or
    /// `SRTT + rttvar` (Linux, see the module documentation), or `initial_rto` before any
    /// sample; at most `max_rto`.
    pub fn base_rto(&self) -> Duration {
        let rto = match (self.srtt, self.rule) {
            (None, _) => self.initial_rto,
            (Some(srtt), RtoRule::Rfc6298) => {
                srtt + self.granularity.max(self.rttvar.saturating_mul(RTO_K))
            }
            (Some(srtt), RtoRule::Linux) => srtt + self.linux.rttvar,
        };
        rto.max(self.min_rto).min(self.max_rto)
    }

    /// The current RTO: the base RTO doubled once per expiry since the last sample, at most
    /// `max_rto`.
    pub fn rto(&self) -> Duration {
        self.base_rto()
            .saturating_mul(1u64 << self.backoff_exp)
            .min(self.max_rto)
    }

    /// Smoothed RTT, `None` before the first sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// RTT variation, `None` before the first sample.
    pub fn rttvar(&self) -> Option<Duration> {
        self.srtt.map(|_| self.rttvar)
    }

    /// Smallest sample seen.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// Most recent sample.
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rto_rules_parse_by_name() {
        assert_eq!("rfc6298".parse(), Ok(RtoRule::Rfc6298));
        assert_eq!("linux".parse(), Ok(RtoRule::Linux));
        let e = "bsd".parse::<RtoRule>().unwrap_err();
        assert!(e.contains("'bsd'") && e.contains("rfc6298") && e.contains("linux"), "{e}");
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn est() -> RttEstimator {
        RttEstimator::new(ms(200), ms(1000), ms(60_000), ms(1))
    }

    #[test]
    fn initial_rto_before_any_sample() {
        let e = est();
        assert_eq!(e.rto(), ms(1000));
        assert_eq!(e.srtt(), None);
        assert_eq!(e.rttvar(), None);
    }

    #[test]
    fn hand_computed_sequence() {
        // min_rto lowered to 1 ms so the computed value shows through.
        let mut e = RttEstimator::new(ms(1), ms(1000), ms(60_000), ms(1));
        // R1 = 100 ms: SRTT = 100, RTTVAR = 50, RTO = 100 + max(1, 4·50) = 300 ms.
        e.on_sample(ms(100));
        assert_eq!(
            (e.srtt(), e.rttvar(), e.rto()),
            (Some(ms(100)), Some(ms(50)), ms(300))
        );
        // R2 = 200 ms: RTTVAR = 3/4·50 + 1/4·|100 − 200| = 37.5 + 25 = 62.5 ms,
        // SRTT = 7/8·100 + 1/8·200 = 112.5 ms, RTO = 112.5 + 4·62.5 = 362.5 ms.
        e.on_sample(ms(200));
        assert_eq!(e.rttvar(), Some(Duration::from_micros(62_500)));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(), Duration::from_micros(362_500));
        // R3 = 112.5 ms (= SRTT): RTTVAR = 3/4·62.5 = 46.875 ms, SRTT unchanged,
        // RTO = 112.5 + 187.5 = 300 ms.
        e.on_sample(Duration::from_micros(112_500));
        assert_eq!(e.rttvar(), Some(Duration::from_micros(46_875)));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(), ms(300));
    }

    #[test]
    fn granularity_floor_when_rttvar_is_tiny() {
        // After many identical samples RTTVAR decays towards 0 and G takes over.
        let mut e = RttEstimator::new(Duration::ZERO, ms(1000), ms(60_000), ms(10));
        for _ in 0..200 {
            e.on_sample(ms(50));
        }
        assert_eq!(e.rttvar(), Some(Duration::ZERO));
        assert_eq!(e.rto(), ms(60));
    }

    #[test]
    fn min_rto_clamp() {
        let mut e = est();
        // 10 ms: 10 + 4·5 = 30 ms, clamped up to 200 ms.
        e.on_sample(ms(10));
        assert_eq!(e.rto(), ms(200));
    }

    #[test]
    fn backoff_doubles_caps_and_resets_on_sample() {
        let mut e = RttEstimator::new(ms(200), ms(1000), ms(5000), ms(1));
        e.on_sample(ms(100)); // RTO 300 ms
        e.backoff();
        assert_eq!(e.rto(), ms(600));
        e.backoff();
        assert_eq!(e.rto(), ms(1200));
        e.backoff();
        assert_eq!(e.rto(), ms(2400));
        e.backoff();
        assert_eq!(e.rto(), ms(4800));
        e.backoff();
        assert_eq!(e.rto(), ms(5000), "capped at max_rto");
        for _ in 0..100 {
            e.backoff();
        }
        assert_eq!(e.rto(), ms(5000), "no overflow however often it backs off");
        // A new sample clears the backoff: RTTVAR = 3/4·50 + 0 = 37.5, SRTT = 100,
        // RTO = 100 + 150 = 250 ms.
        e.on_sample(ms(100));
        assert_eq!(e.backoff_count(), 0);
        assert_eq!(e.rto(), ms(250));
    }
}
