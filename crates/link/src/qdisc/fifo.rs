//! A FIFO of waiting packets with its packet and byte counts, and DropTail's decision.

use std::collections::VecDeque;

use super::interface::{Backlog, Entry, Limit, QueuedPacket, Verdict};
use super::selector::EcnSelector;

/// Waiting packets in arrival order.
#[derive(Clone, Debug)]
pub struct Fifo<P> {
    entries: VecDeque<Entry<P>>,
    backlog: Backlog,
}

impl<P: QueuedPacket> Default for Fifo<P> {
    fn default() -> Self {
        Fifo::new()
    }
}

impl<P: QueuedPacket> Fifo<P> {
    /// An empty FIFO.
    pub fn new() -> Fifo<P> {
        Fifo { entries: VecDeque::new(), backlog: Backlog::default() }
    }

    /// Append at the tail.
    #[inline]
    pub fn push(&mut self, e: Entry<P>) {
        self.backlog.add(&e.pkt);
        self.entries.push_back(e);
    }

    /// Remove the head.
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<P>> {
        let e = self.entries.pop_front()?;
        self.backlog.remove(&e.pkt);
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
        self.backlog.packets()
    }

    /// Bytes waiting.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.backlog.bytes()
    }

    /// Packets and bytes waiting.
    #[inline]
    pub fn backlog(&self) -> Backlog {
        self.backlog
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Remove everything.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.backlog = Backlog::default();
    }
}

/// DropTail's verdict for an arrival `pkt` finding `waiting_packets` / `waiting_bytes`: refused
/// when it does not fit under `limit`; otherwise, with an ECN threshold K, an ECT arrival
/// admitted while at least K packets (or bytes) wait is marked CE — the step marking on the
/// instantaneous queue DCTCP needs (RFC 8257 §3.1; Alizadeh et al., SIGCOMM 2010 §3.1). The
/// threshold applies to the arrivals `selector` picks: all of them, or (`L4s`) only those
/// carrying RFC 9331 §5.1's L4S identifier, so Classic ECT(0) traffic sharing the FIFO is treated
/// as by plain DropTail. Packets that are not ECT are never marked and are dropped only at the
/// limit.
#[inline]
pub fn droptail<P: QueuedPacket>(
    limit: Limit,
    k_packets: Option<u64>,
    k_bytes: Option<u64>,
    selector: EcnSelector,
    waiting_packets: u64,
    waiting_bytes: u64,
    pkt: &P,
) -> Verdict {
    if !limit.fits(waiting_packets, waiting_bytes, pkt.size_bytes()) {
        return Verdict::Drop;
    }
    let above_k = k_packets.is_some_and(|k| waiting_packets >= k) || k_bytes.is_some_and(|k| waiting_bytes >= k);
    // Cheapest test first: below K (the common case) the packet is not inspected.
    if above_k && pkt.ect() && selector.selects(pkt) {
        Verdict::Mark
    } else {
        Verdict::Enqueue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::test_packets::{Ecn, ALL};

    /// The verdict for each codepoint at `waiting` packets (K = 5 packets, limit 10).
    fn verdicts(selector: EcnSelector, waiting: u64) -> Vec<Verdict> {
        ALL.iter().map(|p| droptail(Limit::Packets(10), Some(5), None, selector, waiting, waiting * 1000, p)).collect()
    }

    #[test]
    fn the_step_marks_ect_arrivals_at_k_and_the_l4s_selector_only_ect1() {
        use Verdict::{Drop, Enqueue, Mark};
        // Below K nothing is marked, whatever the selector.
        for s in [EcnSelector::All, EcnSelector::L4s] {
            assert_eq!(verdicts(s, 4), [Enqueue; 4], "{s:?}");
        }
        // At K: every ECN-capable arrival (RFC 8257 §3.1), or only ECT(1) and CE (RFC 9331
        // §5.1). A CE packet is marked again, which changes nothing but counts as a mark, as for
        // the simulator's and the relay's packets; Not-ECT is never marked.
        assert_eq!(verdicts(EcnSelector::All, 5), [Enqueue, Mark, Mark, Mark]);
        assert_eq!(verdicts(EcnSelector::L4s, 5), [Enqueue, Enqueue, Mark, Mark]);
        // At the limit everything is dropped, marked or not.
        assert_eq!(verdicts(EcnSelector::L4s, 10), [Drop; 4]);
    }

    #[test]
    fn a_byte_threshold_selects_the_same_way() {
        let v = |selector, waiting_bytes, p: &Ecn| droptail(Limit::Bytes(20_000), None, Some(6_000), selector, 6, waiting_bytes, p);
        assert_eq!(v(EcnSelector::L4s, 5_999, &Ecn::Ect1), Verdict::Enqueue);
        assert_eq!(v(EcnSelector::L4s, 6_000, &Ecn::Ect1), Verdict::Mark);
        assert_eq!(v(EcnSelector::L4s, 6_000, &Ecn::Ect0), Verdict::Enqueue);
        assert_eq!(v(EcnSelector::All, 6_000, &Ecn::Ect0), Verdict::Mark);
    }
}
