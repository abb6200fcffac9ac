//! A FIFO whose oldest element, when it is the only one, lives inline: a link's pipe.
//!
//! Most links of a large run (the access links of a 10,000-flow dumbbell) carry one packet at a
//! time: it enters the pipe when its serialization starts and leaves it a serialization time
//! later, before the next one arrives. In a `VecDeque` that packet is written to and read from
//! a buffer of its own on the heap, one more cache line the caches lost since the link's last
//! packet (issue 35: these writes were about 6 of the 45 D1 misses per bottleneck packet at 1,000
//! flows). Here a packet that finds the FIFO empty stays in the FIFO's own slot, next to the
//! link's other per-packet fields; only packets behind it go to the ring buffer.

use std::collections::VecDeque;

/// A first-in first-out queue with an inline slot for its front element.
///
/// Invariant: when `head` holds an element it is older than every element of `rest` (an element
/// goes to `head` only when the queue is empty).
#[derive(Clone, Debug)]
pub struct Fifo<T> {
    head: Option<T>,
    rest: VecDeque<T>,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo { head: None, rest: VecDeque::new() }
    }
}

impl<T> Fifo<T> {
    /// An empty FIFO (allocates nothing).
    pub fn new() -> Fifo<T> {
        Fifo::default()
    }

    /// Append `x` at the back.
    #[inline(always)]
    pub fn push_back(&mut self, x: T) {
        // The ring first: a long pipe's pushes decide on one test.
        if self.rest.is_empty() && self.head.is_none() {
            self.head = Some(x);
        } else {
            self.rest.push_back(x);
        }
    }

    /// Remove and return the front element.
    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        // Test before taking: `take` on an empty slot would still store to it, on every pop of
        // a long pipe (a bottleneck's) that never uses the slot.
        if self.head.is_some() {
            self.head.take()
        } else {
            self.rest.pop_front()
        }
    }

    /// The front element.
    #[inline(always)]
    pub fn front(&self) -> Option<&T> {
        match &self.head {
            Some(x) => Some(x),
            None => self.rest.front(),
        }
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.len()
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.is_none() && self.rest.is_empty()
    }

    /// Remove every element.
    pub fn clear(&mut self) {
        self.head = None;
        self.rest.clear();
    }

    /// The element at position `i` from the front, if any.
    pub fn get(&self, i: usize) -> Option<&T> {
        match (&self.head, i) {
            (Some(x), 0) => Some(x),
            (Some(_), i) => self.rest.get(i - 1),
            (None, i) => self.rest.get(i),
        }
    }

    /// The elements from position `i` from the front to the back, mutably.
    pub fn iter_mut_from(&mut self, i: usize) -> impl Iterator<Item = &mut T> {
        self.head.iter_mut().chain(self.rest.iter_mut()).skip(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The FIFO gives the same order, lengths and positions as a `VecDeque` under a long
    /// pseudo-random mix of pushes and pops (empty and refilled many times, so the inline slot
    /// and the ring buffer take turns at the front).
    #[test]
    fn behaves_as_a_vecdeque() {
        let mut fifo = Fifo::new();
        let mut reference = VecDeque::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Pushes and pops in runs, so the queue often empties and often holds many.
            if (x >> 20) % 7 < (i / 1000 % 2 + 3) as u64 {
                fifo.push_back(i);
                reference.push_back(i);
            } else {
                assert_eq!(fifo.pop_front(), reference.pop_front());
            }
            assert_eq!(fifo.len(), reference.len());
            assert_eq!(fifo.is_empty(), reference.is_empty());
            assert_eq!(fifo.front(), reference.front());
            let k = (x % 5) as usize;
            assert_eq!(fifo.get(k), reference.get(k));
        }
        let n = fifo.len();
        for v in fifo.iter_mut_from(n.saturating_sub(2)) {
            *v += 1_000_000;
        }
        for v in reference.range_mut(n.saturating_sub(2)..) {
            *v += 1_000_000;
        }
        assert!(fifo.iter_mut_from(0).map(|v| *v).eq(reference.iter().copied()));
        fifo.clear();
        assert!(fifo.is_empty() && fifo.front().is_none());
    }
}
