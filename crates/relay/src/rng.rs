//! The relay's random loss: a SplitMix64 stream per direction and a Bernoulli drop decision.
//!
//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014)
//! is one add and a three-step mix per draw: cheap enough for every frame at line rate, and good
//! enough for loss decisions (it passes BigCrush). Each direction of each pipe gets its own stream,
//! derived from (run seed, pipe index, direction), so one direction's traffic never shifts another's
//! loss pattern.

/// The golden-ratio increment of SplitMix64 (2^64 / φ, odd).
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// A SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed` (any value, zero included).
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The stream for one direction of one pipe: the run seed mixed with the pipe's index and the
    /// direction (0 = a→b, 1 = b→a), so streams for neighbouring pipes are unrelated.
    pub fn for_direction(seed: u64, pipe_index: usize, direction: u8) -> SplitMix64 {
        // Mix the coordinates through SplitMix64 itself so nearby (seed, pipe, dir) triples do
        // not start on overlapping stretches of the same sequence.
        let mut m = SplitMix64::new(seed ^ GAMMA.wrapping_mul(pipe_index as u64 * 2 + u64::from(direction) + 1));
        SplitMix64::new(m.next_u64())
    }

    /// The next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw in [0, 1) with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Independent random loss with a fixed probability.
#[derive(Clone, Debug)]
pub struct Loss {
    probability: f64,
    rng: SplitMix64,
}

impl Loss {
    /// Drop each frame with `probability` (in [0, 1]) using `rng`.
    pub fn new(probability: f64, rng: SplitMix64) -> Loss {
        Loss { probability, rng }
    }

    /// Use `probability` (in [0, 1]) from now on; the stream continues where it was.
    pub fn set_probability(&mut self, probability: f64) {
        self.probability = probability;
    }

    /// True if this frame is to be dropped. Draws nothing when the probability is 0, so a lossless
    /// direction costs nothing.
    pub fn drop_this(&mut self) -> bool {
        if self.probability <= 0.0 {
            return false;
        }
        self.rng.next_f64() < self.probability
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // The first outputs of SplitMix64 seeded with 0, as published with the algorithm
        // (Vigna's reference splitmix64.c).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn loss_fraction_is_close_to_the_probability() {
        for (p, seed) in [(0.01, 1), (0.1, 7), (0.5, 42)] {
            let mut loss = Loss::new(p, SplitMix64::for_direction(seed, 0, 0));
            let n = 1_000_000;
            let dropped = (0..n).filter(|_| loss.drop_this()).count();
            let frac = dropped as f64 / n as f64;
            // 5 standard deviations of a binomial fraction.
            let tol = 5.0 * (p * (1.0 - p) / n as f64).sqrt();
            assert!((frac - p).abs() < tol, "p = {p}: measured {frac}");
        }
    }

    #[test]
    fn zero_and_one_are_exact() {
        let mut never = Loss::new(0.0, SplitMix64::new(3));
        let mut always = Loss::new(1.0, SplitMix64::new(3));
        assert!((0..10_000).all(|_| !never.drop_this()));
        assert!((0..10_000).all(|_| always.drop_this()));
    }

    #[test]
    fn directions_and_pipes_get_different_streams() {
        let first = |pipe, dir| SplitMix64::for_direction(1, pipe, dir).next_u64();
        let all = [first(0, 0), first(0, 1), first(1, 0), first(1, 1)];
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i], all[j]);
            }
        }
        // Same coordinates, same stream: runs are reproducible.
        assert_eq!(first(3, 1), first(3, 1));
    }

    #[test]
    fn uniform_draws_stay_in_the_unit_interval() {
        let mut r = SplitMix64::new(99);
        let mut sum = 0.0;
        for _ in 0..100_000 {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x));
            sum += x;
        }
        assert!((sum / 100_000.0 - 0.5).abs() < 0.01);
    }
}
