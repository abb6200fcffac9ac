//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA
//! 2014): the one small deterministic generator the controllers that draw random numbers use
//! (BBR's probe phases, CDG's probabilistic backoff, UDT's DecRandom). Controllers own no RNG
//! stream of the simulator, so each seeds its own from its `seed` parameter.

/// The golden-ratio increment between states (γ of the paper).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// One step as a pure function: the output for state `x` (state advanced by γ, then mixed).
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A draw's top 53 bits as a uniform number in [0, 1).
pub(crate) fn unit_f64(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// The generator: its state is the last value of the Weyl sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        let out = splitmix64(self.0);
        self.0 = self.0.wrapping_add(GAMMA);
        out
    }

    /// Uniform in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        unit_f64(self.next_u64())
    }
}
