//! Test packets for the disciplines' unit tests: a packet that is nothing but its ECN codepoint.

use super::QueuedPacket;

/// A 1500-byte packet by its ECN codepoint (Not-ECT, ECT(0), ECT(1), CE). As the simulator's and
/// the relay's packets, a CE packet still reads as ECN-capable (marking it again changes
/// nothing) and as L4S (RFC 9331 §5.1); each codepoint hashes to a flow of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ecn {
    NotEct,
    Ect0,
    Ect1,
    Ce,
}

/// Every codepoint, in the order of the enum.
pub(crate) const ALL: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];

impl QueuedPacket for Ecn {
    fn size_bytes(&self) -> u64 {
        1500
    }
    fn flow_hash(&self) -> u64 {
        *self as u64
    }
    fn ect(&self) -> bool {
        *self != Ecn::NotEct
    }
    fn l4s(&self) -> bool {
        matches!(self, Ecn::Ect1 | Ecn::Ce)
    }
    fn set_ce(&mut self) {
        *self = Ecn::Ce;
    }
}
