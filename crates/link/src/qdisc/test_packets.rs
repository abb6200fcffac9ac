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

/// A 1500-byte packet whose ECN signals are flags set one by one, for tests that need what
/// [`Ecn`] cannot say: an id to follow it by, a flow of its choosing, a CE mark kept apart from
/// the codepoint it was sent with (`ce` is set by [`QueuedPacket::set_ce`] and changes neither
/// `ect()` nor `l4s()`), or a combination no codepoint has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FlagPkt {
    /// Which packet it is, for the test to follow it.
    pub id: u32,
    /// Its flow hash.
    pub flow: u64,
    /// What `ect()` reads.
    pub ect: bool,
    /// What `l4s()` reads.
    pub l4s: bool,
    /// Marked CE.
    pub ce: bool,
}

impl QueuedPacket for FlagPkt {
    fn size_bytes(&self) -> u64 {
        1500
    }
    fn flow_hash(&self) -> u64 {
        self.flow
    }
    fn ect(&self) -> bool {
        self.ect
    }
    fn l4s(&self) -> bool {
        self.l4s
    }
    fn set_ce(&mut self) {
        self.ce = true;
    }
}
