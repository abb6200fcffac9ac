//! The event queue: a radix heap of small `Copy` entries ordered by (time, insertion sequence).
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

/// Buckets of the radix heap: one per possible highest differing bit of two 128-bit keys, and
/// one for keys equal to the last popped.
const BUCKETS: usize = 129;

/// Slots for the buckets: [`BUCKETS`] rounded up to the occupancy bitmap's 3 words, so every
/// index the bitmap or a key yields is in range and indexing needs no bounds check.
const SLOTS: usize = BUCKETS.next_multiple_of(64);

/// A deterministic priority queue of events: a radix heap (Ahuja, Mehlhorn, Orlin & Tarjan,
/// "Faster algorithms for the shortest path problem", JACM 1990) on the 128-bit key (time,
/// sequence).
///
/// A radix heap needs monotone keys: no key pushed is below the last one popped. A simulator's
/// are: events are scheduled at or after the current time, and a later push has a higher
/// sequence. An entry sits in the bucket of the highest bit where its key differs from the last
/// popped key, so every key in a lower bucket is smaller than every key in a higher one; a pop
/// takes the lowest non-empty bucket's smallest entry and redistributes that bucket's others,
/// each to a strictly lower bucket. Push is O(1) and a pop amortized O(key bits) but, in
/// practice, a few moves per entry whatever the number pending: the cost per event stays flat
/// as flows (and pending timers and links) grow, where a heap's grows with its depth. The pop
/// order is the exact (time, sequence) order, the same as any correct priority queue's.
#[derive(Debug)]
pub struct EventQueue {
    /// Bucket `b` (< [`BUCKETS`]) holds the entries whose key differs from `last` first at bit
    /// `b − 1` (bucket 0: equal keys); slots past [`BUCKETS`] stay empty.
    buckets: Box<[Vec<Entry>; SLOTS]>,
    /// Bit `b` set when bucket `b` is not empty.
    occupied: [u64; 3],
    /// Key of the last popped entry (0 before the first pop).
    last: u128,
    len: usize,
    next_seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue { buckets: Box::new(std::array::from_fn(|_| Vec::new())), occupied: [0; 3], last: 0, len: 0, next_seq: 0 }
    }
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> EventQueue {
        EventQueue::default()
    }

    /// The bucket of `key`: the bit length of its difference with the last popped key.
    #[inline(always)]
    fn bucket_of(&self, key: u128) -> usize {
        (128 - (key ^ self.last).leading_zeros()) as usize
    }

    #[inline(always)]
    fn put(&mut self, e: Entry) {
        let b = self.bucket_of(e.key());
        self.buckets[b].push(e);
        self.occupied[b >> 6] |= 1 << (b & 63);
    }

    /// Schedule `event` at `time`.
    ///
    /// # Panics
    /// If `time` is before the last popped event's (time never goes back in the simulation).
    #[inline]
    pub fn push(&mut self, time: SimTime, event: Event) {
        // The key is at least the last popped one exactly when the time is: this entry's
        // sequence is above every sequence pushed before, popped ones included.
        assert!(time.0 >= (self.last >> 64) as u64, "event scheduled at {} ns, before the current time", time.0);
        let e = Entry { time, seq: self.next_seq, event };
        self.next_seq += 1;
        self.len += 1;
        self.put(e);
    }

    /// The lowest non-empty bucket, if any. Word by word: bucket 0 and the low buckets, where
    /// near events sit, are found at the first test.
    #[inline(always)]
    fn lowest(&self) -> Option<usize> {
        let [w0, w1, w2] = self.occupied;
        if w0 != 0 {
            Some(w0.trailing_zeros() as usize)
        } else if w1 != 0 {
            Some(64 + w1.trailing_zeros() as usize)
        } else if w2 != 0 {
            Some(128 + w2.trailing_zeros() as usize)
        } else {
            None
        }
    }

    /// Remove and return the earliest event if it is due at or before `limit`.
    #[inline]
    pub fn pop_until(&mut self, limit: SimTime) -> Option<(SimTime, Event)> {
        let b = self.lowest()?;
        let bucket = &mut self.buckets[b];
        let top = if bucket.len() == 1 {
            if bucket[0].time > limit {
                return None;
            }
            let top = bucket.pop().expect("one entry");
            self.occupied[b >> 6] &= !(1 << (b & 63));
            self.last = top.key();
            top
        } else {
            let mut m = 0;
            for i in 1..bucket.len() {
                if bucket[i].before(&bucket[m]) {
                    m = i;
                }
            }
            if bucket[m].time > limit {
                return None;
            }
            let top = bucket.swap_remove(m);
            self.last = top.key();
            // Every other entry of the bucket moves to a lower one relative to the new `last`
            // (never to `b` itself), so the bucket is taken out, read, and put back empty (its
            // allocation kept).
            self.occupied[b >> 6] &= !(1 << (b & 63));
            let mut moving = std::mem::take(&mut self.buckets[b]);
            for &e in &moving {
                debug_assert!(self.bucket_of(e.key()) < b);
                self.put(e);
            }
            moving.clear();
            self.buckets[b] = moving;
            top
        };
        self.len -= 1;
        Some((top.time, top.event))
    }

    /// Number of pending entries (stale ones included).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
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

    /// The same against a sort with times spread over every magnitude (nanoseconds to the end
    /// of time), so entries start in high buckets and move down several times before they pop,
    /// and with pops bounded by a limit that often stops short of the earliest entry.
    #[test]
    fn matches_a_sorted_order_with_times_of_every_magnitude() {
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u64)> = Vec::new();
        let (mut x, mut seq, mut now) = (0x2545_f491_4f6c_dd1du64, 0u64, 0u64);
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 5 < 3 {
                let t = now.saturating_add((x >> 8) >> (x % 64));
                q.push(SimTime(t), Event::LinkArrival(seq as u32));
                reference.push((t, seq));
                seq += 1;
            } else {
                let limit = now.saturating_add((x >> 16) >> (x % 61));
                reference.sort_unstable();
                match q.pop_until(SimTime(limit)) {
                    Some((t, e)) => {
                        let (rt, rseq) = reference.remove(0);
                        assert_eq!((t.0, e), (rt, Event::LinkArrival(rseq as u32)));
                        assert!(rt <= limit);
                        now = t.0;
                    }
                    None => assert!(reference.first().is_none_or(|&(rt, _)| rt > limit)),
                }
            }
            assert_eq!(q.len(), reference.len());
        }
        reference.sort_unstable();
        for (rt, rseq) in reference {
            assert_eq!(q.pop_until(SimTime::NEVER), Some((SimTime(rt), Event::LinkArrival(rseq as u32))));
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
