//! The random streams of one direction of a link, derived from the run's seed
//! ([`ccarena_rng::SplitMix64`]): the simulator and the relay build their link models from one
//! [`LinkStreams`] each.

use ccarena_rng::{SplitMix64, StreamKind};

/// The random streams of one direction of a link: wire loss, the queue discipline's draws,
/// forwarding jitter, duplication and reordering. The simulator and the relay build their link
/// models from one of these, so that a relay direction can draw exactly what the simulated link
/// draws ([`LinkStreams::simulator`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkStreams {
    /// Wire loss.
    pub loss: SplitMix64,
    /// The queue discipline's randomness (RED's and PIE's early drops, FQ's hash perturbation).
    pub queue: SplitMix64,
    /// Forwarding jitter (the simulator's `link_jitter`).
    pub jitter: SplitMix64,
    /// Duplication.
    pub duplicate: SplitMix64,
    /// Reordering.
    pub reorder: SplitMix64,
}

impl LinkStreams {
    /// The simulator's streams for link `index` of a run with seed `seed` (one
    /// [`SplitMix64::stream`] per [`StreamKind`]).
    pub fn simulator(seed: u64, index: u64) -> LinkStreams {
        LinkStreams {
            loss: SplitMix64::stream(seed, StreamKind::LinkLoss, index),
            queue: SplitMix64::stream(seed, StreamKind::QueueAqm, index),
            jitter: SplitMix64::stream(seed, StreamKind::LinkJitter, index),
            duplicate: SplitMix64::stream(seed, StreamKind::LinkDuplicate, index),
            reorder: SplitMix64::stream(seed, StreamKind::LinkReorder, index),
        }
    }

    /// The relay's own streams for direction `direction` (0 = a→b) of pipe `pipe_index`
    /// ([`SplitMix64::for_direction`] and [`SplitMix64::for_direction_of`]; the queue's from the
    /// complemented seed). The relay has no jitter: that stream is derived but never drawn.
    pub fn relay(seed: u64, pipe_index: usize, direction: u8) -> LinkStreams {
        LinkStreams {
            loss: SplitMix64::for_direction(seed, pipe_index, direction),
            queue: SplitMix64::for_direction(!seed, pipe_index, direction),
            jitter: SplitMix64::for_direction_of(seed, pipe_index, direction, StreamKind::LinkJitter),
            duplicate: SplitMix64::for_direction_of(seed, pipe_index, direction, StreamKind::LinkDuplicate),
            reorder: SplitMix64::for_direction_of(seed, pipe_index, direction, StreamKind::LinkReorder),
        }
    }
}
