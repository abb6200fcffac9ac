//! What every discipline shares, below them all: the packet a queue holds ([`QueuedPacket`],
//! [`Entry`]), the decision on an arrival ([`Verdict`]), the hard limit ([`Limit`]), what waits
//! ([`Backlog`]), the decisions' counters ([`QdiscCounters`]) and the packet size the disciplines assume
//! ([`MTU_BYTES`]). The discipline modules and [`super::Qdisc`] import these; they import none of
//! them, so the modules of `qdisc` form no circle.

/// The largest packet the disciplines assume, bytes: CoDel's and FQ-CoDel's `maxpacket` (RFC
/// 8289 §4.2), PIE's mean packet size (RFC 8033 §4.1), FQ's default quantum. The simulator's
/// full-sized TCP segment is 1448 + 52 bytes; the relay's frames are at most an Ethernet MTU.
pub const MTU_BYTES: u64 = 1500;

/// [`MTU_BYTES`], for the serde default of a parameter the format leaves out (CoDel's
/// `mtu_bytes`, PIE's `mean_packet_bytes`).
pub(crate) fn mtu_bytes() -> u64 {
    MTU_BYTES
}

/// What a discipline needs of a packet.
pub trait QueuedPacket {
    /// Size on the wire (the simulator) or IP size (the relay), bytes.
    fn size_bytes(&self) -> u64;
    /// How many packets it counts as for packet limits and counters: 1, or a GSO batch's segments
    /// (the relay).
    #[inline]
    fn packets(&self) -> u64 {
        1
    }
    /// A flow identifier or hash: packets with equal values belong to one flow (FQ-CoDel and FQ
    /// classify by it, RFC 8290 §4.1.1).
    fn flow_hash(&self) -> u64;
    /// The packet is ECN-capable (ECT(0) or ECT(1), RFC 3168 §5).
    fn ect(&self) -> bool;
    /// The packet carries the L4S identifier: ECT(1) or CE (RFC 9331 §5.1). A dual-queue
    /// discipline classifies it into its low-latency queue (RFC 9332 §2.3).
    fn l4s(&self) -> bool;
    /// Set the Congestion Experienced codepoint (RFC 3168 §5). Called only on ECT packets.
    fn set_ce(&mut self);
}

/// A queued packet and when it was enqueued, ns.
#[derive(Clone, Copy, Debug)]
pub struct Entry<P> {
    /// The packet.
    pub pkt: P,
    /// When it entered the queue, ns.
    pub enqueued_ns: u64,
}

/// What a discipline decides for an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Enqueued unchanged.
    Enqueue,
    /// Enqueued with CE set (RFC 3168 §5).
    Mark,
    /// Refused because the queue is full, or (RED) because the average is in the
    /// drop-every-arrival region: a forced drop.
    Drop,
    /// Refused by the discipline's random early decision (RED, PIE): an unforced drop.
    EarlyDrop,
}

/// A queue's hard limit on waiting packets or bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// At most this many packets wait.
    Packets(u64),
    /// At most this many bytes wait.
    Bytes(u64),
    /// No limit.
    Unlimited,
}

impl Limit {
    /// True when a packet of `size_bytes` fits behind `waiting_packets` / `waiting_bytes`.
    #[inline]
    pub fn fits(self, waiting_packets: u64, waiting_bytes: u64, size_bytes: u64) -> bool {
        match self {
            Limit::Packets(limit) => waiting_packets < limit,
            Limit::Bytes(limit) => waiting_bytes + size_bytes <= limit,
            Limit::Unlimited => true,
        }
    }

    /// True when `packets` / `bytes` waiting exceed the limit (FQ's overflow test).
    #[inline]
    pub(crate) fn exceeded(self, packets: u64, bytes: u64) -> bool {
        match self {
            Limit::Packets(limit) => packets > limit,
            Limit::Bytes(limit) => bytes > limit,
            Limit::Unlimited => false,
        }
    }
}

/// What waits in a queue, or in a discipline's queues together (FQ's total): packets
/// ([`QueuedPacket::packets`]) and bytes ([`QueuedPacket::size_bytes`]), counted as packets
/// arrive and leave so that a limit or an AQM reads them without a scan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    packets: u64,
    bytes: u64,
}

impl Backlog {
    /// Packets waiting.
    #[inline]
    pub fn packets(self) -> u64 {
        self.packets
    }

    /// Bytes waiting.
    #[inline]
    pub fn bytes(self) -> u64 {
        self.bytes
    }

    /// `pkt` arrived.
    #[inline]
    pub(crate) fn add<P: QueuedPacket>(&mut self, pkt: &P) {
        self.packets += pkt.packets();
        self.bytes += pkt.size_bytes();
    }

    /// `pkt` left (sent or dropped).
    #[inline]
    pub(crate) fn remove<P: QueuedPacket>(&mut self, pkt: &P) {
        self.packets -= pkt.packets();
        self.bytes -= pkt.size_bytes();
    }

    /// A part of what is counted here shrank from `before` to `after` on its own (FQ-CoDel: one
    /// flow's CoDel dropped packets): count out the difference.
    #[inline]
    pub(crate) fn remove_shrinkage(&mut self, before: Backlog, after: Backlog) {
        self.packets -= before.packets - after.packets;
        self.bytes -= before.bytes - after.bytes;
    }
}

/// Cumulative decisions of a discipline, in packets ([`QueuedPacket::packets`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QdiscCounters {
    /// Packets the discipline dropped: refused on arrival, dropped at dequeue (CoDel), dropped
    /// from the fattest flow on overflow (FQ-CoDel, FQ).
    pub dropped: u64,
    /// Of `dropped`, the active queue management's own (unforced) drops: RED's early drops,
    /// CoDel's drops at dequeue, PIE's random drops. The rest are the hard limit's.
    pub dropped_early: u64,
    /// Packets the discipline marked CE instead of dropping (they are still delivered).
    pub marked: u64,
}
