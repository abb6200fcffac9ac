//! The transmitter and the wire: serialization time at a rate, and random loss.

use ccarena_rng::SplitMix64;

/// Time to serialize `bytes` at `rate_bps`, rounded up to a whole ns (a link never runs faster
/// than its rate), ns. A rate of 0 is treated as 1 bit/s.
#[inline]
pub fn transmission_ns(bytes: u64, rate_bps: u64) -> u64 {
    let bits = u128::from(bytes) * 8 * 1_000_000_000;
    bits.div_ceil(u128::from(rate_bps.max(1))) as u64
}

/// Independent (Bernoulli) random loss on the wire with a fixed probability, drawing from its
/// own stream.
#[derive(Clone, Debug)]
pub struct WireLoss {
    probability: f64,
    rng: SplitMix64,
}

impl WireLoss {
    /// Lose each packet with `probability` (in [0, 1]) using `rng`.
    pub fn new(probability: f64, rng: SplitMix64) -> WireLoss {
        WireLoss { probability, rng }
    }

    /// The loss probability now.
    pub fn probability(&self) -> f64 {
        self.probability
    }

    /// Use `probability` (in [0, 1]) from now on; the stream continues where it was.
    pub fn set_probability(&mut self, probability: f64) {
        self.probability = probability;
    }

    /// True if this packet is lost. Draws nothing when the probability is 0, so a lossless wire
    /// costs nothing and leaves its stream untouched.
    #[inline]
    pub fn lose(&mut self) -> bool {
        self.probability > 0.0 && self.rng.bernoulli(self.probability)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmission_time_rounds_up() {
        assert_eq!(transmission_ns(1500, 1_000_000_000), 12_000);
        assert_eq!(transmission_ns(1500, 3), 4_000_000_000_000);
        assert_eq!(transmission_ns(1, 3_000_000_000), 3);
    }

    #[test]
    fn loss_fraction_is_close_to_the_probability_and_extremes_are_exact() {
        for (p, seed) in [(0.01, 1), (0.1, 7), (0.5, 42)] {
            let mut loss = WireLoss::new(p, SplitMix64::for_direction(seed, 0, 0));
            let n = 1_000_000;
            let frac = (0..n).filter(|_| loss.lose()).count() as f64 / n as f64;
            let tol = 5.0 * (p * (1.0 - p) / n as f64).sqrt();
            assert!((frac - p).abs() < tol, "p = {p}: measured {frac}");
        }
        let mut never = WireLoss::new(0.0, SplitMix64::new(3));
        let mut always = WireLoss::new(1.0, SplitMix64::new(3));
        assert!((0..10_000).all(|_| !never.lose()));
        assert!((0..10_000).all(|_| always.lose()));
    }
}
