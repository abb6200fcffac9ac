//! Duplication and reordering on the wire, as a netem user expects them.
//!
//! - **Duplication** (netem's `duplicate P`): each packet that survives the wire is, with
//!   probability `duplicate`, delivered twice, the copy right behind the original (same arrival
//!   instant, next in order). The copy takes no capacity: it is made at the far end of the wire,
//!   as by a retransmitting layer below IP.
//! - **Reordering**: each surviving packet is, with probability `reorder`, *held back* by an extra
//!   `reorder_delay_ns` after its propagation delay, so the packets behind it that arrive within
//!   that time overtake it. Held-back packets keep their order among themselves; the packets that
//!   are not held back are delivered in order as before. (netem's own `reorder` sends the chosen
//!   packets *early* instead and needs a delay on every packet; holding one back is the same
//!   displacement seen from the other side and keeps a reorder-free link's timing untouched.)
//!
//! A packet is decided after the wire's loss (a lost packet is neither duplicated nor held), with
//! two seeded streams of its own, one per process, drawn only while the probability is above 0:
//! a link with both probabilities at 0 draws nothing and behaves bit for bit as before these
//! conditions existed. A duplicated packet that is held back is held back with its copy.

use ccarena_rng::SplitMix64;

/// The extra delay of a held-back packet when none is given: the link's propagation delay, at
/// least 1 ms (so a link without delay still reorders packets a millisecond apart), ns.
pub fn default_reorder_delay_ns(delay_ns: u64) -> u64 {
    delay_ns.max(1_000_000)
}

/// What the wire does to one surviving packet beyond delaying it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Impairment {
    /// Deliver it twice (the copy right behind it).
    pub duplicated: bool,
    /// Hold it back by this much after its propagation delay, ns (0: not reordered).
    pub held_ns: u64,
}

impl Impairment {
    /// True when the packet is held back (reordered).
    #[inline]
    pub fn reordered(&self) -> bool {
        self.held_ns > 0
    }

    /// How many copies reach the far end: 2 if duplicated, else 1.
    #[inline]
    pub fn copies(&self) -> u64 {
        1 + u64::from(self.duplicated)
    }
}

/// A link's duplication and reordering processes (see the module docs).
#[derive(Clone, Debug)]
pub struct WireImpairments {
    duplicate: f64,
    reorder: f64,
    reorder_delay_ns: u64,
    duplicate_rng: SplitMix64,
    reorder_rng: SplitMix64,
}

impl WireImpairments {
    /// Duplicate each packet with probability `duplicate` (in [0, 1]) drawing from
    /// `duplicate_rng`; hold it back by `reorder_delay_ns` with probability `reorder` (in [0, 1])
    /// drawing from `reorder_rng`. A `reorder_delay_ns` of 0 reorders nothing.
    pub fn new(duplicate: f64, reorder: f64, reorder_delay_ns: u64, duplicate_rng: SplitMix64, reorder_rng: SplitMix64) -> WireImpairments {
        WireImpairments { duplicate, reorder, reorder_delay_ns, duplicate_rng, reorder_rng }
    }

    /// No duplication, no reordering (draws nothing).
    pub fn none() -> WireImpairments {
        WireImpairments::new(0.0, 0.0, 0, SplitMix64::new(0), SplitMix64::new(0))
    }

    /// True when the link may duplicate or reorder.
    #[inline]
    pub fn active(&self) -> bool {
        self.duplicate > 0.0 || (self.reorder > 0.0 && self.reorder_delay_ns > 0)
    }

    /// The duplication probability.
    pub fn duplicate(&self) -> f64 {
        self.duplicate
    }

    /// The reordering probability.
    pub fn reorder(&self) -> f64 {
        self.reorder
    }

    /// The extra delay of a held-back packet, ns.
    pub fn reorder_delay_ns(&self) -> u64 {
        self.reorder_delay_ns
    }

    /// Decide the fate of the next packet that survived the wire. Each process draws one value
    /// per packet while its probability is above 0, nothing otherwise.
    #[inline]
    pub fn draw(&mut self) -> Impairment {
        if !self.active() {
            return Impairment::default();
        }
        let held = self.reorder > 0.0 && self.reorder_delay_ns > 0 && self.reorder_rng.bernoulli(self.reorder);
        let duplicated = self.duplicate > 0.0 && self.duplicate_rng.bernoulli(self.duplicate);
        Impairment { duplicated, held_ns: if held { self.reorder_delay_ns } else { 0 } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccarena_rng::StreamKind;

    fn impairments(seed: u64, duplicate: f64, reorder: f64) -> WireImpairments {
        WireImpairments::new(
            duplicate,
            reorder,
            3_000_000,
            SplitMix64::stream(seed, StreamKind::LinkDuplicate, 0),
            SplitMix64::stream(seed, StreamKind::LinkReorder, 0),
        )
    }

    /// Fractions duplicated and held back are the probabilities within 5 binomial standard
    /// deviations, for several seeds, and the two processes are independent (their joint
    /// fraction is the product).
    #[test]
    fn fractions_match_the_probabilities() {
        let n = 200_000;
        for (seed, d, r) in [(1u64, 0.01, 0.05), (7, 0.1, 0.1), (42, 0.5, 0.01)] {
            let mut w = impairments(seed, d, r);
            let draws: Vec<Impairment> = (0..n).map(|_| w.draw()).collect();
            let within = |count: usize, p: f64, what: &str| {
                let sd = (n as f64 * p * (1.0 - p)).sqrt();
                assert!((count as f64 - n as f64 * p).abs() < 5.0 * sd, "seed {seed}: {what} {count} of {n}, p = {p}");
            };
            within(draws.iter().filter(|i| i.duplicated).count(), d, "duplicated");
            within(draws.iter().filter(|i| i.reordered()).count(), r, "reordered");
            within(draws.iter().filter(|i| i.duplicated && i.reordered()).count(), d * r, "both");
            assert!(draws.iter().filter(|i| i.reordered()).all(|i| i.held_ns == 3_000_000));
        }
    }

    /// Probability 0 (or no reorder delay) never duplicates or reorders and draws nothing: the
    /// streams are where they started.
    #[test]
    fn zero_probabilities_do_nothing_and_draw_nothing() {
        let mut w = impairments(3, 0.0, 0.0);
        assert!(!w.active());
        assert!((0..10_000).all(|_| w.draw() == Impairment::default()));
        let mut no_delay = WireImpairments::new(0.0, 1.0, 0, SplitMix64::new(1), SplitMix64::new(2));
        assert!((0..100).all(|_| !no_delay.draw().reordered()));
        assert_eq!(w.duplicate_rng, SplitMix64::stream(3, StreamKind::LinkDuplicate, 0));
        assert_eq!(w.reorder_rng, SplitMix64::stream(3, StreamKind::LinkReorder, 0));
        // One process on leaves the other's stream untouched.
        let mut only_dup = impairments(3, 0.5, 0.0);
        (0..100).for_each(|_| {
            only_dup.draw();
        });
        assert_eq!(only_dup.reorder_rng, SplitMix64::stream(3, StreamKind::LinkReorder, 0));
        assert_ne!(only_dup.duplicate_rng, SplitMix64::stream(3, StreamKind::LinkDuplicate, 0));
    }

    #[test]
    fn the_default_reorder_delay_is_the_link_delay_at_least_a_millisecond() {
        assert_eq!(default_reorder_delay_ns(20_000_000), 20_000_000);
        assert_eq!(default_reorder_delay_ns(0), 1_000_000);
        let i = Impairment { duplicated: true, held_ns: 5 };
        assert_eq!((i.copies(), i.reordered()), (2, true));
        assert_eq!((Impairment::default().copies(), Impairment::default().reordered()), (1, false));
    }
}
