//! Deterministic random streams: SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom
//! number generators", OOPSLA 2014), the one generator of the workspace.
//!
//! Tiny state, one add and a three-step mix per draw, passes BigCrush, and its mixing function
//! doubles as the stream-derivation hash. It is never seeded from the OS. The simulator gives each
//! component its own stream ([`SplitMix64::stream`]: each link's loss process, each queue
//! discipline, each application, each node's routing), so adding a flow or a RED queue does not
//! shift another component's random pattern and flavors can be compared on common random
//! numbers; the relay derives one per direction of each pipe ([`SplitMix64::for_direction`]);
//! controllers seed one from their `seed` parameter ([`SplitMix64::new`], [`splitmix64`]).
//!
//! A crate of its own, below everything else, so the congestion controllers (`crates/cc`) and the
//! link model (`crates/link`) draw from the same generator without one depending on the other.
//! Nothing here reads a clock or the OS.

/// Which kind of simulator component a stream belongs to; part of the stream's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// A link's random-loss process (index: link index).
    LinkLoss = 1,
    /// An application's randomness (index: flow index).
    Application = 2,
    /// A queue discipline's randomness: RED's and PIE's early drops, FQ's hash perturbation
    /// (index: link index).
    QueueAqm = 3,
    /// A node's routing randomness: its ECMP hash salt and its spraying draws (index: node index).
    Routing = 4,
    /// A link's forwarding jitter (index: link index).
    LinkJitter = 5,
    /// A link's duplication process (index: link index; `ccarena_link::impair`).
    LinkDuplicate = 6,
    /// A link's reordering process (index: link index; `ccarena_link::impair`).
    LinkReorder = 7,
}

/// The golden-ratio increment between states (γ of the paper: 2^64 / φ, odd).
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finalizer: a bijective 64-bit mix (also the simulator's ECMP flow hash and the
/// flow hash of the fair-queueing disciplines).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One step as a pure function: the output of a generator in state `x` (state advanced by γ,
/// then mixed), for callers that derive a draw from a value instead of keeping a stream.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    mix64(x.wrapping_add(GOLDEN_GAMMA))
}

/// A draw's top 53 bits as a uniform number in [0, 1).
#[inline]
pub fn unit_f64(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A SplitMix64 generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from state `seed` (any value, zero included).
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The simulator's stream for component `(kind, index)` of a run with seed `seed`.
    pub fn stream(seed: u64, kind: StreamKind, index: u64) -> SplitMix64 {
        let id = mix64(mix64(seed ^ GOLDEN_GAMMA) ^ mix64(((kind as u64) << 48) ^ index));
        SplitMix64 { state: id }
    }

    /// The relay's stream for one direction of one pipe: the run seed mixed with the pipe's
    /// index and the direction (0 = a→b, 1 = b→a), so streams for neighbouring pipes are
    /// unrelated (the coordinates go through SplitMix64 itself so nearby triples do not start on
    /// overlapping stretches of one sequence).
    pub fn for_direction(seed: u64, pipe_index: usize, direction: u8) -> SplitMix64 {
        let mut m = SplitMix64::new(seed ^ GOLDEN_GAMMA.wrapping_mul(pipe_index as u64 * 2 + u64::from(direction) + 1));
        SplitMix64::new(m.next_u64())
    }

    /// The relay's stream of process `kind` for one direction of one pipe, for the processes
    /// added after the loss stream ([`SplitMix64::for_direction`], which stays the loss's): the
    /// seed is mixed with the kind first, so each kind's streams are unrelated to the loss's.
    pub fn for_direction_of(seed: u64, pipe_index: usize, direction: u8, kind: StreamKind) -> SplitMix64 {
        SplitMix64::for_direction(mix64(seed ^ ((kind as u64) << 48)), pipe_index, direction)
    }

    /// XOR `salt` into the state: the same seed with different salts gives unrelated streams
    /// (a controller mixing its flow's identity into its seed).
    pub fn salt(&mut self, salt: u64) {
        self.state ^= salt;
    }

    /// The next 64 uniformly distributed bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
    }

    /// A uniform draw in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        unit_f64(self.next_u64())
    }

    /// True with probability `p` (clamped to [0, 1]). Draws exactly one value whatever `p` is.
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        let x = self.next_u64();
        if p >= 1.0 {
            return true;
        }
        // Compare 53 uniform bits against p: exact for every p representable in an f64 mantissa
        // (and the same decision as `next_f64() < p`: scaling by 2^53 is exact).
        ((x >> 11) as f64) < p * (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // The first outputs of SplitMix64 seeded with 0 (Vigna's reference splitmix64.c).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let draw = |i| {
            let mut r = SplitMix64::stream(7, StreamKind::LinkLoss, i);
            (0..4).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
        let first = |pipe, dir| SplitMix64::for_direction(1, pipe, dir).next_u64();
        let all = [first(0, 0), first(0, 1), first(1, 0), first(1, 1)];
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i], all[j]);
            }
        }
    }

    #[test]
    fn bernoulli_frequency_matches_p_and_agrees_with_next_f64() {
        let mut r = SplitMix64::stream(1, StreamKind::LinkLoss, 0);
        let n = 200_000;
        let hits = (0..n).filter(|_| r.bernoulli(0.01)).count() as f64;
        // Binomial sd = sqrt(n p (1-p)) ≈ 44.5; allow 5 sd.
        assert!((hits - 2000.0).abs() < 225.0, "hits = {hits}");
        assert!(!r.bernoulli(0.0));
        assert!(r.bernoulli(1.0));
        let (mut a, mut b) = (SplitMix64::new(5), SplitMix64::new(5));
        for p in [0.0, 1e-9, 0.01, 0.3, 0.5, 0.999_999, 1.0] {
            for _ in 0..10_000 {
                assert_eq!(a.bernoulli(p), b.next_f64() < p);
            }
        }
    }
}
