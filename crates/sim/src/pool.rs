//! Pools of the boxes that bulky packet headers travel in (a TCP ACK with its SACK blocks, a
//! QUIC packet or ACK frame, a UDT ACK or NAK, an MPTCP DSS mapping).
//!
//! One end of a transfer takes a box for each header it sends; the other end puts the box back
//! when the packet arrives, and the next header reuses it, so a steady run allocates none
//! (`tests/steady_state_allocations.rs`). Split over threads ([`crate::parallel`]), the two ends
//! may live in different parts: the part that puts a box back may never take one. So for each
//! boxed header that crosses into the part where it ends, that part hands a spare box of the
//! same kind from its pool back to the part that boxed the header (`Simulation::import`): each
//! part gets back as many boxes as it sent, and neither allocates nor frees one per header.
//! Without the exchange a part would hold one box for every header the run ever carried one way
//! (hundreds of MB on a busy fat-tree), or, with its pool limited, free one per header while
//! the other part allocated one.

/// A last-in-first-out pool of boxes of `T`, holding at most its limit (unlimited by default).
#[derive(Debug)]
pub struct BoxPool<T> {
    boxes: Vec<Box<T>>,
    keep: usize,
    /// Boxes allocated because the pool was empty.
    allocated: u64,
}

impl<T> Default for BoxPool<T> {
    fn default() -> Self {
        BoxPool { boxes: Vec::new(), keep: usize::MAX, allocated: 0 }
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
            None => {
                self.allocated += 1;
                Box::new(value)
            }
        }
    }

    /// The last box put back, as it was left, or a new one from `make` (for a header written in
    /// place, whose previous contents the writer overwrites).
    #[inline]
    pub fn take_or(&mut self, make: impl FnOnce() -> Box<T>) -> Box<T> {
        self.boxes.pop().unwrap_or_else(|| {
            self.allocated += 1;
            make()
        })
    }

    /// The last box put back, if any (nothing is allocated).
    #[inline]
    pub fn take_kept(&mut self) -> Option<Box<T>> {
        self.boxes.pop()
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

    /// Free every box and hold none from now on (a finished transfer, whose headers are done).
    pub fn release(&mut self) {
        self.keep = 0;
        self.boxes = Vec::new();
    }

    /// Boxes this pool has allocated so far (each time a box was asked of it empty).
    pub fn allocated(&self) -> u64 {
        self.allocated
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
        assert_eq!(pool.allocated(), 1);
        let address = &*first as *const u64;
        pool.put(first);
        let again = pool.take(2);
        assert_eq!(&*again as *const u64, address);
        assert_eq!(*again, 2);
        assert_eq!(pool.allocated(), 1);
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
        assert!(pool.take_kept().is_none());
        assert_eq!(pool.allocated(), 1);
    }
}
