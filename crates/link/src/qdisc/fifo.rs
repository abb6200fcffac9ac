//! A FIFO of waiting packets with its packet and byte counts, and DropTail's decision.

use std::collections::VecDeque;

use super::interface::{Entry, Limit, QueuedPacket, Verdict};

/// Waiting packets in arrival order.
#[derive(Clone, Debug)]
pub struct Fifo<P> {
    entries: VecDeque<Entry<P>>,
    packets: u64,
    bytes: u64,
}

impl<P: QueuedPacket> Default for Fifo<P> {
    fn default() -> Self {
        Fifo::new()
    }
}

impl<P: QueuedPacket> Fifo<P> {
    /// An empty FIFO.
    pub fn new() -> Fifo<P> {
        Fifo { entries: VecDeque::new(), packets: 0, bytes: 0 }
    }

    /// Append at the tail.
    #[inline]
    pub fn push(&mut self, e: Entry<P>) {
        self.packets += e.pkt.packets();
        self.bytes += e.pkt.size_bytes();
        self.entries.push_back(e);
    }

    /// Remove the head.
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<P>> {
        let e = self.entries.pop_front()?;
        self.packets -= e.pkt.packets();
        self.bytes -= e.pkt.size_bytes();
        Some(e)
    }

    /// The head.
    #[inline]
    pub fn front(&self) -> Option<&Entry<P>> {
        self.entries.front()
    }

    /// The tail, mutably.
    pub fn back_mut(&mut self) -> Option<&mut Entry<P>> {
        self.entries.back_mut()
    }

    /// Every entry, head first, mutably (sizes must not change).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Entry<P>> {
        self.entries.iter_mut()
    }

    /// Packets waiting.
    #[inline]
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Bytes waiting.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Remove everything.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.packets = 0;
        self.bytes = 0;
    }
}

/// DropTail's verdict for an arrival of `size_bytes` finding `waiting_packets` /
/// `waiting_bytes`: refused when it does not fit under `limit`; otherwise, with an ECN threshold
/// K, an ECT arrival admitted while at least K packets (or bytes) wait is marked CE — the step
/// marking on the instantaneous queue DCTCP needs (RFC 8257 §3.1; Alizadeh et al., SIGCOMM 2010
/// §3.1). Packets that are not ECT are never marked and are dropped only at the limit.
#[inline]
pub fn droptail(
    limit: Limit,
    k_packets: Option<u64>,
    k_bytes: Option<u64>,
    waiting_packets: u64,
    waiting_bytes: u64,
    size_bytes: u64,
    ect: bool,
) -> Verdict {
    if !limit.fits(waiting_packets, waiting_bytes, size_bytes) {
        return Verdict::Drop;
    }
    let above_k = k_packets.is_some_and(|k| waiting_packets >= k) || k_bytes.is_some_and(|k| waiting_bytes >= k);
    if ect && above_k {
        Verdict::Mark
    } else {
        Verdict::Enqueue
    }
}
