//! The event queue: a 4-ary heap of small `Copy` entries ordered by (time, insertion sequence).
//!
//! The sequence number makes the order total and deterministic: two events at the same
//! nanosecond run in the order they were scheduled. Entries are 24 bytes and never own heap data.
//! Timers re-armed on every ACK are not cancelled and reinserted: their owners keep the time of
//! their earliest pending entry and push a new one only when they need to fire earlier (see
//! `endpoint.rs`), so a stale entry costs one cheap no-op when it fires.

use ccarena_cc::SimTime;

/// What happens when an entry fires. Indices refer to the engine's links and flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The packet at the head of link `.0`'s pipe may have reached the far end.
    LinkArrival(u32),
    /// Flow `.0`'s TCP or UDT sender may have a timer due (RTO or EXP, pacing).
    SenderTimer(u32),
    /// Flow `.0`'s TCP receiver may have a delayed ACK due, or its UDT receiver an ACK or NAK timer.
    ReceiverTimer(u32),
    /// Flow `.0`'s application starts.
    FlowStart(u32),
    /// Flow `.0`'s application stops offering data.
    FlowStop(u32),
    /// Flow `.0` (UDP CBR) sends its next datagram.
    CbrSend(u32),
    /// Record one row of samples.
    Sample,
    /// Apply scheduled link change `.0` (index into the engine's time-sorted changes).
    LinkChange(u32),
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: SimTime,
    seq: u64,
    event: Event,
}

impl Entry {
    /// Strictly earlier in (time, insertion sequence) order; sequences are unique, so the order
    /// is total and the pop order is the same whatever the heap's shape.
    #[inline(always)]
    fn before(&self, o: &Entry) -> bool {
        self.key() < o.key()
    }

    /// (time, sequence) as one number: one wide comparison instead of two.
    #[inline(always)]
    fn key(&self) -> u128 {
        (self.time.0 as u128) << 64 | self.seq as u128
    }
}

/// Children per heap node. A 4-ary heap is half as deep as a binary one, and a node's four
/// children share a cache line or two, so a pop touches fewer lines (LaMarca & Ladner, "The
/// influence of caches on the performance of heaps", JEA 1996).
const ARITY: usize = 4;

/// A deterministic priority queue of events: an implicit 4-ary min-heap on (time, sequence).
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: Vec<Entry>,
    next_seq: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> EventQueue {
        EventQueue::default()
    }

    /// Schedule `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: SimTime, event: Event) {
        let e = Entry { time, seq: self.next_seq, event };
        self.next_seq += 1;
        // Sift up with a hole: parents move down until `e`'s place is found, one write each.
        let mut i = self.heap.len();
        self.heap.push(e);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.heap[parent];
            if !e.before(&p) {
                break;
            }
            self.heap[i] = p;
            i = parent;
        }
        self.heap[i] = e;
    }

    /// Remove and return the earliest event if it is due at or before `limit`.
    #[inline]
    pub fn pop_until(&mut self, limit: SimTime) -> Option<(SimTime, Event)> {
        let top = *self.heap.first()?;
        if top.time > limit {
            return None;
        }
        let last = self.heap.pop().expect("not empty");
        let n = self.heap.len();
        if n > 0 {
            // Bottom-up deletion (Wegener, "BOTTOM-UP-HEAPSORT", TCS 1993): move the hole from the
            // root down along the smallest children to a leaf, then sift the last entry up from
            // there; it belongs near the bottom, so this saves a comparison with it per level.
            let heap = &mut self.heap[..];
            let mut i = 0;
            loop {
                let first = ARITY * i + 1;
                if first >= n {
                    break;
                }
                let mut m = first;
                for c in first + 1..(first + ARITY).min(n) {
                    if heap[c].before(&heap[m]) {
                        m = c;
                    }
                }
                heap[i] = heap[m];
                i = m;
            }
            while i > 0 {
                let parent = (i - 1) / ARITY;
                if !last.before(&heap[parent]) {
                    break;
                }
                heap[i] = heap[parent];
                i = parent;
            }
            heap[i] = last;
        }
        Some((top.time, top.event))
    }

    /// Number of pending entries (stale ones included).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(SimTime(5), Event::Sample);
        q.push(SimTime(3), Event::FlowStart(1));
        q.push(SimTime(5), Event::FlowStart(2));
        q.push(SimTime(3), Event::FlowStart(0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop_until(SimTime(10))).collect();
        assert_eq!(
            order,
            vec![
                (SimTime(3), Event::FlowStart(1)),
                (SimTime(3), Event::FlowStart(0)),
                (SimTime(5), Event::Sample),
                (SimTime(5), Event::FlowStart(2)),
            ]
        );
    }

    /// The heap pops in exactly (time, sequence) order on a long pseudo-random mix of pushes and
    /// pops with many equal times, as a sort of the same entries would.
    #[test]
    fn matches_a_sorted_order_under_random_pushes_and_pops() {
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u64)> = Vec::new();
        let (mut x, mut seq, mut now) = (0x9e37_79b9_7f4a_7c15u64, 0u64, 0u64);
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 3 != 0 {
                let t = now + x % 16;
                q.push(SimTime(t), Event::FlowStart(seq as u32));
                reference.push((t, seq));
                seq += 1;
            } else if let Some((t, e)) = q.pop_until(SimTime(u64::MAX)) {
                reference.sort_unstable();
                let (rt, rseq) = reference.remove(0);
                assert_eq!((t.0, e), (rt, Event::FlowStart(rseq as u32)));
                now = t.0;
            }
        }
        reference.sort_unstable();
        for (rt, rseq) in reference {
            assert_eq!(q.pop_until(SimTime(u64::MAX)), Some((SimTime(rt), Event::FlowStart(rseq as u32))));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn pop_until_leaves_later_events() {
        let mut q = EventQueue::new();
        q.push(SimTime(7), Event::Sample);
        assert_eq!(q.pop_until(SimTime(6)), None);
        assert_eq!(q.len(), 1);
    }
}
