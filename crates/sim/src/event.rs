//! The event queue: a binary heap of small `Copy` entries ordered by (time, insertion sequence).
//!
//! The sequence number makes the order total and deterministic: two events at the same
//! nanosecond run in the order they were scheduled. Entries are 24 bytes and never own heap data.
//! Timers re-armed on every ACK are not cancelled and reinserted: their owners keep the time of
//! their earliest pending entry and push a new one only when they need to fire earlier (see
//! `endpoint.rs`), so a stale entry costs one cheap no-op when it fires.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed so that `BinaryHeap` (a max-heap) pops the earliest entry first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// A deterministic priority queue of events.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> EventQueue {
        EventQueue::default()
    }

    /// Schedule `event` at `time`.
    pub fn push(&mut self, time: SimTime, event: Event) {
        self.heap.push(Entry { time, seq: self.next_seq, event });
        self.next_seq += 1;
    }

    /// Remove and return the earliest event if it is due at or before `limit`.
    pub fn pop_until(&mut self, limit: SimTime) -> Option<(SimTime, Event)> {
        match self.heap.peek() {
            Some(e) if e.time <= limit => {
                let e = self.heap.pop().expect("peeked");
                Some((e.time, e.event))
            }
            _ => None,
        }
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

    #[test]
    fn pop_until_leaves_later_events() {
        let mut q = EventQueue::new();
        q.push(SimTime(7), Event::Sample);
        assert_eq!(q.pop_until(SimTime(6)), None);
        assert_eq!(q.len(), 1);
    }
}
