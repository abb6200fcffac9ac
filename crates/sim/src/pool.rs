//! Pools of the boxes that bulky packet headers travel in (a TCP ACK with its SACK blocks, a
//! QUIC packet or ACK frame, a UDT ACK or NAK, an MPTCP DSS mapping).
//!
//! One end of a transfer takes a box for each header it sends; the other end puts the box back
//! when the packet arrives, and the next header reuses it, so a steady run allocates none
//! (`tests/steady_state_allocations.rs`). Split over threads ([`crate::parallel`]), the two ends
//! may live in different parts: the part that puts a box back may never take one. Its pool is
//! then limited ([`BoxPool::limit`]) so it frees what it cannot reuse; unlimited, it would hold
//! one box for every header the run ever carried that way (hundreds of MB on a busy fat-tree).

/// A last-in-first-out pool of boxes of `T`, holding at most its limit (unlimited by default).
#[derive(Debug)]
pub struct BoxPool<T> {
    boxes: Vec<Box<T>>,
    keep: usize,
}

impl<T> Default for BoxPool<T> {
    fn default() -> Self {
        BoxPool { boxes: Vec::new(), keep: usize::MAX }
    }
}

impl<T> BoxPool<T> {
    /// A box holding `value`: the last one put back, or a new one.
    #[inline]
    pub fn take(&mut self, value: T) -> Box<T> {
        match self.boxes.pop() {
            Some(mut b) => {
                *b = value;
                b
            }
            None => Box::new(value),
        }
    }

    /// The last box put back, as it was left, or a new one from `make` (for a header written in
    /// place, whose previous contents the writer overwrites).
    #[inline]
    pub fn take_or(&mut self, make: impl FnOnce() -> Box<T>) -> Box<T> {
        self.boxes.pop().unwrap_or_else(make)
    }

    /// Keep `b` for a later [`BoxPool::take`], or free it when the pool holds its limit.
    #[inline]
    pub fn put(&mut self, b: Box<T>) {
        if self.boxes.len() < self.keep {
            self.boxes.push(b);
        }
    }

    /// Hold at most `keep` boxes from now on (0: free every box put back); frees the excess.
    pub fn limit(&mut self, keep: usize) {
        self.keep = keep;
        self.boxes.truncate(keep);
    }

    /// Boxes held now.
    pub fn len(&self) -> usize {
        self.boxes.len()
    }

    /// True when no box is held.
    pub fn is_empty(&self) -> bool {
        self.boxes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_put_back_is_the_next_one_taken() {
        let mut pool = BoxPool::default();
        let first = pool.take(1u64);
        let address = &*first as *const u64;
        pool.put(first);
        let again = pool.take(2);
        assert_eq!(&*again as *const u64, address);
        assert_eq!(*again, 2);
    }

    #[test]
    fn a_limited_pool_frees_what_it_cannot_keep() {
        let mut pool = BoxPool::default();
        for i in 0..10u64 {
            pool.put(Box::new(i));
        }
        assert_eq!(pool.len(), 10);
        pool.limit(3);
        assert_eq!(pool.len(), 3);
        pool.put(Box::new(99));
        assert_eq!(pool.len(), 3);
        pool.limit(0);
        pool.put(Box::new(7));
        assert!(pool.is_empty());
        assert_eq!(*pool.take_or(|| Box::new(5)), 5);
    }
}
