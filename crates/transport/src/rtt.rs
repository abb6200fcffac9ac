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

/// RFC 6298 RTT estimator and retransmission-timeout calculator.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
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
            min_rtt: None,
            latest: None,
            backoff_exp: 0,
            min_rto,
            initial_rto,
            max_rto,
            granularity,
        }
    }

    /// Feed one RTT measurement (RFC 6298 §2.2/§2.3) and clear the backoff (§5.7: a new sample
    /// replaces the backed-off RTO). The caller applies Karn's rule: never pass a sample taken
    /// from a retransmitted segment.
    pub fn on_sample(&mut self, r: Duration) {
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

    /// The RTO before backoff: `max(min_rto, SRTT + max(G, K·RTTVAR))`, or `initial_rto` before
    /// any sample; at most `max_rto`.
    pub fn base_rto(&self) -> Duration {
        let rto = match self.srtt {
            None => self.initial_rto,
            Some(srtt) => srtt + self.granularity.max(self.rttvar.saturating_mul(RTO_K)),
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
