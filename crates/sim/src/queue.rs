//! The simulator's queue disciplines: the spec's [`QueueSpec`] (the link crate's format) turned
//! into a `ccarena-link` [`Qdisc`] of [`Packet`]s (the disciplines themselves live in
//! `ccarena_link::qdisc`, shared with the relay).

use ccarena_link::qdisc::QueuedPacket;
use ccarena_link::{Qdisc, QueueSpec, SplitMix64};

use crate::packet::{Packet, Payload};

pub use ccarena_link::qdisc::Verdict;

impl QueuedPacket for Packet {
    #[inline]
    fn size_bytes(&self) -> u64 {
        u64::from(self.size_bytes)
    }

    /// The flow index: every packet of a flow in one direction shares it.
    #[inline]
    fn flow_hash(&self) -> u64 {
        u64::from(self.flow)
    }

    /// Only ECN-capable data segments are ECT (ACKs and datagrams are not, RFC 3168 §6.1.4).
    #[inline]
    fn ect(&self) -> bool {
        matches!(self.payload, Payload::Data(seg) if seg.ect)
    }

    #[inline]
    fn set_ce(&mut self) {
        if let Payload::Data(seg) = &mut self.payload {
            seg.ce = true;
        }
    }
}

/// The queue a validated [`QueueSpec`] describes, drawing from `rng` (the queue's own stream).
pub fn qdisc(q: &QueueSpec, rng: SplitMix64) -> Qdisc<Packet> {
    Qdisc::new(&q.qdisc_config(), q.limit(), rng)
}
