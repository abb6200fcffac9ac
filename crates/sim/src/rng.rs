//! Deterministic random streams: one per component, derived from (run seed, component).
//!
//! Each link's loss process, each queue discipline (RED) and each application draw from their own
//! stream, so adding a flow or a RED queue does not shift another component's random pattern and
//! flavors can be compared on common random numbers.
//! The generator is SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
//! generators", OOPSLA 2014): tiny state, passes BigCrush, and its mixing function doubles as the
//! stream-derivation hash. It is never seeded from the OS.

/// Which kind of component a stream belongs to; part of the stream's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// A link's random-loss process (index: link index).
    LinkLoss = 1,
    /// An application's randomness (index: flow index).
    Application = 2,
    /// A queue discipline's randomness, RED's early drops (index: link index).
    QueueAqm = 3,
    /// A node's routing randomness: its ECMP hash salt and its spraying draws (index: node index).
    Routing = 4,
}

/// A SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finalizer: a bijective 64-bit mix (also the ECMP flow hash, `crate::routing`).
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// The stream for component `(kind, index)` of a run with seed `seed`.
    pub fn stream(seed: u64, kind: StreamKind, index: u64) -> Rng {
        let id = mix64(mix64(seed ^ GOLDEN_GAMMA) ^ mix64(((kind as u64) << 48) ^ index));
        Rng { state: id }
    }

    /// The next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
    }

    /// True with probability `p` (clamped to [0, 1]). Draws exactly one value whatever `p` is.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        let x = self.next_u64();
        if p >= 1.0 {
            return true;
        }
        // Compare 53 uniform bits against p: exact for every p representable in an f64 mantissa.
        ((x >> 11) as f64) < p * (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4).map({
            let mut r = Rng::stream(7, StreamKind::LinkLoss, 3);
            move |_| r.next_u64()
        }).collect();
        let b: Vec<u64> = (0..4).map({
            let mut r = Rng::stream(7, StreamKind::LinkLoss, 3);
            move |_| r.next_u64()
        }).collect();
        let c: Vec<u64> = (0..4).map({
            let mut r = Rng::stream(7, StreamKind::LinkLoss, 4);
            move |_| r.next_u64()
        }).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn bernoulli_frequency_matches_p() {
        let mut r = Rng::stream(1, StreamKind::LinkLoss, 0);
        let n = 200_000;
        let hits = (0..n).filter(|_| r.bernoulli(0.01)).count() as f64;
        // Binomial sd = sqrt(n p (1-p)) ≈ 44.5; allow 5 sd.
        assert!((hits - 2000.0).abs() < 225.0, "hits = {hits}");
        assert!(!r.bernoulli(0.0));
        assert!(r.bernoulli(1.0));
    }
}
