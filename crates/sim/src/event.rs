//! The event queue: a radix heap of small `Copy` entries ordered by a key that does not depend
//! on the order events were scheduled in.
//!
//! An entry's key is (time, cause depth, kind, index): events at the same nanosecond run by the
//! depth of the chain of same-instant events that scheduled them (0: scheduled at an earlier
//! instant), then by kind (`Event::rank`), then by the link, flow or change index. Two entries
//! with equal keys are the same event, so their order cannot matter, and the order of all others
//! is a function of the events alone: a run split over several threads, whose queues receive
//! their events in another order, pops every event at the same place as one queue would
//! (issue 35: results bit-identical at any thread count; Jefferson's "Virtual time", ACM TOPLAS
//! 1985, §4, orders simultaneous messages by such a key for the same reason).
//! Entries are 16 bytes (the key alone; the event is decoded from it) and never own heap data.
//! Timers re-armed on every ACK are not cancelled and reinserted: their owners keep the time of
//! their earliest pending entry and push a new one only when they need to fire earlier (see
//! `endpoint.rs`), so a stale entry costs one cheap no-op when it fires.

use ccarena_cc::SimTime;

/// What happens when an entry fires. Indices refer to the engine's links and flows. The
/// variants are declared in their rank order (`Event::rank`), so the rank is the tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Apply scheduled link change `.0` (index into the engine's time-sorted changes).
    LinkChange(u32),
    /// Flow `.0`'s application starts.
    FlowStart(u32),
    /// Flow `.0`'s application stops offering data.
    FlowStop(u32),
    /// Record one row of samples.
    Sample,
    /// The packet at the head of link `.0`'s pipe may have reached the far end.
    LinkArrival(u32),
    /// Flow `.0`'s TCP or UDT sender may have a timer due (RTO or EXP, pacing).
    SenderTimer(u32),
    /// Flow `.0`'s TCP receiver may have a delayed ACK due, or its UDT receiver an ACK or NAK timer.
    ReceiverTimer(u32),
    /// Flow `.0` (UDP CBR) sends its next datagram.
    CbrSend(u32),
}

impl Event {
    /// The kind's place among events of one instant and one cause depth, and the index. A
    /// scheduled link change applies before anything else at its instant (docs/engine-spec.md,
    /// `events`), applications start and stop before the network moves, a sample sees the
    /// state the instant's earlier events left; packets arrive before the timers of that
    /// instant fire.
    #[inline(always)]
    const fn rank(self) -> (u8, u32) {
        match self {
            Event::LinkChange(i) => (0, i),
            Event::FlowStart(f) => (1, f),
            Event::FlowStop(f) => (2, f),
            Event::Sample => (3, 0),
            Event::LinkArrival(l) => (4, l),
            Event::SenderTimer(f) => (5, f),
            Event::ReceiverTimer(f) => (6, f),
            Event::CbrSend(f) => (7, f),
        }
    }

    /// The event of rank `rank` and index `index` ([`Event::rank`]'s inverse).
    #[inline(always)]
    const fn from_rank(rank: u8, index: u32) -> Event {
        match rank {
            0 => Event::LinkChange(index),
            1 => Event::FlowStart(index),
            2 => Event::FlowStop(index),
            3 => Event::Sample,
            4 => Event::LinkArrival(index),
            5 => Event::SenderTimer(index),
            6 => Event::ReceiverTimer(index),
            _ => Event::CbrSend(index),
        }
    }
}

/// Bits of a key below the time: cause depth (16), kind (8), index (32).
const DEPTH_SHIFT: u32 = 40;
const RANK_SHIFT: u32 = 32;
/// The deepest chain of same-instant events a key can order.
const MAX_DEPTH: u64 = (1 << 16) - 1;

/// (time, cause depth, kind, index) packed into one number: one wide comparison orders two
/// entries.
#[inline(always)]
fn key_of(time: SimTime, depth: u64, event: Event) -> u128 {
    let (rank, index) = event.rank();
    (time.0 as u128) << 64 | (depth << DEPTH_SHIFT | (rank as u64) << RANK_SHIFT | index as u64) as u128
}

/// The time and event of a key ([`key_of`]'s inverse, less the depth).
#[inline(always)]
fn decode(key: u128) -> (SimTime, Event) {
    let low = key as u64;
    (SimTime((key >> 64) as u64), Event::from_rank((low >> RANK_SHIFT) as u8, low as u32))
}

/// The cause depth of a key.
#[inline(always)]
fn depth_of(key: u128) -> u64 {
    (key as u64) >> DEPTH_SHIFT
}

/// Buckets of the radix heap: one per possible highest differing bit of two 128-bit keys, and
/// one for keys equal to the last popped.
const BUCKETS: usize = 129;

/// Slots for the buckets: [`BUCKETS`] rounded up to the occupancy bitmap's 3 words, so every
/// index the bitmap or a key yields is in range and indexing needs no bounds check.
const SLOTS: usize = BUCKETS.next_multiple_of(64);

/// A deterministic priority queue of events: a radix heap (Ahuja, Mehlhorn, Orlin & Tarjan,
/// "Faster algorithms for the shortest path problem", JACM 1990) on the 128-bit key (time,
/// cause depth, kind, index) described in the module documentation.
///
/// A radix heap needs monotone keys: no key pushed is below the last one popped. A simulator's
/// are: events are scheduled at or after the current time, and one scheduled at the current
/// time is one level deeper than the event being handled. An entry sits in the bucket of the
/// highest bit where its key differs from the last popped key, so every key in a lower bucket
/// is smaller than every key in a higher one; a pop takes the lowest non-empty bucket's
/// smallest entry and redistributes that bucket's others, each to a strictly lower bucket. Push
/// is O(1) and a pop amortized O(key bits) but, in practice, a few moves per entry whatever the
/// number pending: the cost per event stays flat as flows (and pending timers and links) grow,
/// where a heap's grows with its depth. The pop order is the exact key order, the same as any
/// correct priority queue's.
#[derive(Debug)]
pub struct EventQueue {
    /// Bucket `b` (< [`BUCKETS`]) holds the keys that differ from `last` first at bit `b − 1`
    /// (bucket 0: equal keys); slots past [`BUCKETS`] stay empty.
    buckets: Box<[Vec<u128>; SLOTS]>,
    /// Bit `b` set when bucket `b` is not empty.
    occupied: [u64; 3],
    /// The last popped key (0 before the first pop).
    last: u128,
    /// False until the first pop: events scheduled before the run starts are all of depth 0.
    popped: bool,
    len: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue { buckets: Box::new(std::array::from_fn(|_| Vec::new())), occupied: [0; 3], last: 0, popped: false, len: 0 }
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
    fn put(&mut self, key: u128) {
        let b = self.bucket_of(key);
        self.buckets[b].push(key);
        self.occupied[b >> 6] |= 1 << (b & 63);
    }

    /// Schedule `event` at `time`: at the current time (the last popped event's), one cause
    /// level deeper than that event; later, at depth 0.
    ///
    /// # Panics
    /// If `time` is before the last popped event's (time never goes back in the simulation),
    /// or a chain of more than 65,535 events schedules each other at one instant.
    #[inline(always)]
    pub fn push(&mut self, time: SimTime, event: Event) {
        let now = (self.last >> 64) as u64;
        assert!(time.0 >= now, "event scheduled at {} ns, before the current time", time.0);
        let depth = if time.0 == now && self.popped {
            let depth = depth_of(self.last) + 1;
            assert!(depth <= MAX_DEPTH, "more than {MAX_DEPTH} events scheduled each other at {now} ns");
            depth
        } else {
            0
        };
        self.len += 1;
        self.put(key_of(time, depth, event));
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
        let limit_key = ((limit.0 as u128) << 64) | u64::MAX as u128;
        let b = self.lowest()?;
        let bucket = &mut self.buckets[b];
        let top = if bucket.len() == 1 {
            if bucket[0] > limit_key {
                return None;
            }
            let top = bucket.pop().expect("one entry");
            self.occupied[b >> 6] &= !(1 << (b & 63));
            top
        } else {
            let mut m = 0;
            for i in 1..bucket.len() {
                if bucket[i] < bucket[m] {
                    m = i;
                }
            }
            if bucket[m] > limit_key {
                return None;
            }
            let top = bucket.swap_remove(m);
            if b != 0 {
                // Every other entry of the bucket moves to a lower one relative to the new
                // `last` (never to `b` itself), so the bucket is taken out, read, and put back
                // empty (its allocation kept). Bucket 0 holds keys equal to `last`, which stay.
                self.last = top;
                self.occupied[b >> 6] &= !(1 << (b & 63));
                let mut moving = std::mem::take(&mut self.buckets[b]);
                for &k in &moving {
                    debug_assert!(self.bucket_of(k) < b);
                    self.put(k);
                }
                moving.clear();
                self.buckets[b] = moving;
            }
            top
        };
        self.last = top;
        self.popped = true;
        self.len -= 1;
        Some(decode(top))
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

    /// Events of one instant pop by kind, then index, whatever the order they were pushed in.
    #[test]
    fn pops_in_time_kind_and_index_order_whatever_the_push_order() {
        let events = [
            (SimTime(5), Event::Sample),
            (SimTime(3), Event::SenderTimer(1)),
            (SimTime(5), Event::FlowStart(2)),
            (SimTime(3), Event::LinkArrival(7)),
            (SimTime(3), Event::LinkArrival(2)),
            (SimTime(3), Event::FlowStart(0)),
            (SimTime(3), Event::LinkChange(4)),
        ];
        let expected = vec![
            (SimTime(3), Event::LinkChange(4)),
            (SimTime(3), Event::FlowStart(0)),
            (SimTime(3), Event::LinkArrival(2)),
            (SimTime(3), Event::LinkArrival(7)),
            (SimTime(3), Event::SenderTimer(1)),
            (SimTime(5), Event::FlowStart(2)),
            (SimTime(5), Event::Sample),
        ];
        for rotation in 0..events.len() {
            let mut q = EventQueue::new();
            for &(t, e) in events.iter().cycle().skip(rotation).take(events.len()) {
                q.push(t, e);
            }
            let order: Vec<_> = std::iter::from_fn(|| q.pop_until(SimTime(10))).collect();
            assert_eq!(order, expected, "pushed from rotation {rotation}");
        }
    }

    /// An event scheduled at the current instant runs after every event of that instant
    /// scheduled earlier (it is one cause level deeper), even of a kind that ranks first.
    #[test]
    fn an_event_scheduled_for_now_runs_after_the_instants_earlier_events() {
        let mut q = EventQueue::new();
        q.push(SimTime(4), Event::SenderTimer(0));
        q.push(SimTime(4), Event::CbrSend(9));
        assert_eq!(q.pop_until(SimTime::NEVER), Some((SimTime(4), Event::SenderTimer(0))));
        q.push(SimTime(4), Event::LinkArrival(0));
        q.push(SimTime(6), Event::LinkArrival(1));
        assert_eq!(q.pop_until(SimTime::NEVER), Some((SimTime(4), Event::CbrSend(9))));
        assert_eq!(q.pop_until(SimTime::NEVER), Some((SimTime(4), Event::LinkArrival(0))));
        assert_eq!(q.pop_until(SimTime::NEVER), Some((SimTime(6), Event::LinkArrival(1))));
        assert!(q.is_empty());
    }

    /// Every kind and index survives the packing into a key.
    #[test]
    fn keys_decode_to_their_event() {
        for index in [0, 1, 77, u32::MAX] {
            for e in [
                Event::LinkArrival(index),
                Event::SenderTimer(index),
                Event::ReceiverTimer(index),
                Event::FlowStart(index),
                Event::FlowStop(index),
                Event::CbrSend(index),
                Event::LinkChange(index),
            ] {
                assert_eq!(decode(key_of(SimTime(123), 9, e)), (SimTime(123), e));
            }
        }
        assert_eq!(decode(key_of(SimTime(u64::MAX), MAX_DEPTH, Event::Sample)), (SimTime(u64::MAX), Event::Sample));
    }

    /// A reference queue: a sorted list of (time, depth, rank, index), depth given as
    /// [`EventQueue::push`] documents it.
    #[derive(Default)]
    struct Reference {
        entries: Vec<(u64, u64, u8, u32)>,
        now: Option<(u64, u64)>,
    }

    impl Reference {
        fn push(&mut self, t: u64, e: Event) {
            let depth = match self.now {
                Some((now, depth)) if now == t => depth + 1,
                _ => 0,
            };
            let (rank, index) = e.rank();
            self.entries.push((t, depth, rank, index));
        }

        fn pop_until(&mut self, limit: u64) -> Option<(SimTime, Event)> {
            self.entries.sort_unstable();
            if self.entries.first().is_none_or(|e| e.0 > limit) {
                return None;
            }
            let (t, depth, rank, index) = self.entries.remove(0);
            self.now = Some((t, depth));
            Some((SimTime(t), Event::from_rank(rank, index)))
        }
    }

    /// A pseudo-random event of any kind.
    fn any_event(x: u64) -> Event {
        Event::from_rank((x % 8) as u8, ((x >> 3) % 5) as u32)
    }

    /// The heap pops in exactly the reference's order on a long pseudo-random mix of pushes and
    /// pops with many equal times and many equal keys (few indices), events scheduled for the
    /// current instant included.
    #[test]
    fn matches_a_sorted_order_under_random_pushes_and_pops() {
        let mut q = EventQueue::new();
        let mut reference = Reference::default();
        let (mut x, mut now) = (0x9e37_79b9_7f4a_7c15u64, 0u64);
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 3 != 0 {
                let t = now + (x >> 20) % 4;
                q.push(SimTime(t), any_event(x >> 30));
                reference.push(t, any_event(x >> 30));
            } else if let Some((t, e)) = q.pop_until(SimTime(u64::MAX)) {
                assert_eq!(Some((t, e)), reference.pop_until(u64::MAX));
                now = t.0;
            }
        }
        while let Some(expected) = reference.pop_until(u64::MAX) {
            assert_eq!(q.pop_until(SimTime::NEVER), Some(expected));
        }
        assert!(q.is_empty());
    }

    /// The same against the reference with times spread over every magnitude (nanoseconds to
    /// the end of time), so entries start in high buckets and move down several times before
    /// they pop, and with pops bounded by a limit that often stops short of the earliest entry.
    #[test]
    fn matches_a_sorted_order_with_times_of_every_magnitude() {
        let mut q = EventQueue::new();
        let mut reference = Reference::default();
        let (mut x, mut now) = (0x2545_f491_4f6c_dd1du64, 0u64);
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 5 < 3 {
                let t = now.saturating_add((x >> 8) >> (x % 64));
                q.push(SimTime(t), any_event(x >> 40));
                reference.push(t, any_event(x >> 40));
            } else {
                let limit = now.saturating_add((x >> 16) >> (x % 61));
                let got = q.pop_until(SimTime(limit));
                assert_eq!(got, reference.pop_until(limit));
                if let Some((t, _)) = got {
                    assert!(t.0 <= limit);
                    now = t.0;
                }
            }
            assert_eq!(q.len(), reference.entries.len());
        }
        while let Some(expected) = reference.pop_until(u64::MAX) {
            assert_eq!(q.pop_until(SimTime::NEVER), Some(expected));
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
