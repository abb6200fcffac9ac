//! One direction's delay line: a FIFO of frames, each with the time it is due to leave.
//!
//! With a fixed delay, frames leave in the order they came, so a FIFO is the whole schedule: the
//! head is always the next frame due, and the relay only ever sleeps until the head's due time.
//! Frame bytes live back to back in one growable ring buffer (no allocation per frame, no 64 KiB
//! slot per frame for 1.5 KB frames); the per-frame record is (due time, offset, length).

use std::collections::VecDeque;

/// Why a frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The line already holds `max_frames` frames.
    TooManyFrames,
    /// The bytes would exceed `max_bytes` even after growing the buffer to its limit.
    TooManyBytes,
    /// A frame of zero bytes (never produced by a packet socket; refused so it cannot confuse the ring).
    Empty,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    due_ns: u64,
    off: usize,
    len: usize,
}

/// A FIFO of frames with due times, storing the bytes contiguously in a ring.
#[derive(Debug)]
pub struct DelayLine {
    buf: Vec<u8>,
    slots: VecDeque<Slot>,
    /// Where the next frame's bytes go if they fit there.
    write: usize,
    bytes: usize,
    max_frames: usize,
    max_bytes: usize,
}

impl DelayLine {
    /// An empty line holding at most `max_frames` frames and `max_bytes` bytes, starting with a
    /// buffer of `initial_bytes` (grown by doubling when needed).
    pub fn new(max_frames: usize, initial_bytes: usize, max_bytes: usize) -> DelayLine {
        let initial = initial_bytes.clamp(1, max_bytes.max(1));
        DelayLine {
            buf: vec![0; initial],
            slots: VecDeque::new(),
            write: 0,
            bytes: 0,
            max_frames,
            max_bytes: max_bytes.max(1),
        }
    }

    /// Frames held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when no frame is held.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Bytes held (frame bytes only).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Make room for `frames` frame records and touch every page of the byte buffer, so neither
    /// allocates nor faults while the relay runs.
    pub fn prepare(&mut self, frames: usize) {
        self.slots.reserve(frames.min(self.max_frames));
        crate::sys::prefault(&mut self.buf);
    }

    /// Current size of the ring buffer, bytes.
    pub fn capacity_bytes(&self) -> usize {
        self.buf.len()
    }

    /// The due time of the head frame, ns, if any.
    pub fn head_due_ns(&self) -> Option<u64> {
        self.slots.front().map(|s| s.due_ns)
    }

    /// The head frame: its due time, ns, and its bytes.
    pub fn head(&self) -> Option<(u64, &[u8])> {
        self.slots.front().map(|s| (s.due_ns, &self.buf[s.off..s.off + s.len]))
    }

    /// Give the last `dues.len()` frames (at most all of them) new due times, in order (a link
    /// change retimed them; FIFO order must still hold, which the link model guarantees).
    pub fn retime_tail(&mut self, dues: &[u64]) {
        let n = dues.len().min(self.slots.len());
        let first = self.slots.len() - n;
        for (slot, &due_ns) in self.slots.range_mut(first..).zip(&dues[dues.len() - n..]) {
            slot.due_ns = due_ns;
        }
    }

    /// Remove the head frame (no-op when empty).
    pub fn pop(&mut self) {
        if let Some(s) = self.slots.pop_front() {
            self.bytes -= s.len;
            if self.slots.is_empty() {
                // Start over at the beginning: keeps the next frames contiguous with no wrap.
                self.write = 0;
            }
        }
    }

    /// Where `len` bytes can go without growing, if anywhere.
    fn place(&self, len: usize) -> Option<usize> {
        let cap = self.buf.len();
        let Some(head) = self.slots.front() else {
            return (len <= cap).then_some(0);
        };
        let read = head.off;
        if self.write > read {
            // Live bytes are [read, write): room after them, else before them at the start.
            if self.write + len <= cap {
                Some(self.write)
            } else if len <= read {
                Some(0)
            } else {
                None
            }
        } else {
            // Wrapped: live bytes are [read, cap) and [0, write); the gap is [write, read).
            (self.write + len <= read).then_some(self.write)
        }
    }

    /// Reallocate with room for `extra` more bytes (doubling, up to `max_bytes`), copying the frames
    /// to the front in order; at the limit this still compacts away a wrap's wasted tail.
    fn grow(&mut self, extra: usize) -> bool {
        let want = (self.bytes + extra).max(self.buf.len() * 2).min(self.max_bytes);
        if want < self.bytes + extra {
            return false;
        }
        let mut fresh = vec![0u8; want];
        let mut at = 0;
        for s in self.slots.iter_mut() {
            fresh[at..at + s.len].copy_from_slice(&self.buf[s.off..s.off + s.len]);
            s.off = at;
            at += s.len;
        }
        self.buf = fresh;
        self.write = at;
        true
    }

    /// Append a frame due at `due_ns`.
    ///
    /// # Errors
    /// [`Refused`] when the frame limit or the byte limit would be exceeded; the line is unchanged.
    pub fn push(&mut self, due_ns: u64, frame: &[u8]) -> Result<(), Refused> {
        let len = frame.len();
        if len == 0 {
            return Err(Refused::Empty);
        }
        if self.slots.len() >= self.max_frames {
            return Err(Refused::TooManyFrames);
        }
        let off = match self.place(len) {
            Some(off) => off,
            None => {
                if !self.grow(len) {
                    return Err(Refused::TooManyBytes);
                }
                self.place(len).ok_or(Refused::TooManyBytes)?
            }
        };
        self.buf[off..off + len].copy_from_slice(frame);
        self.slots.push_back(Slot { due_ns, off, len });
        self.write = off + len;
        self.bytes += len;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(tag: u64, len: usize) -> Vec<u8> {
        (0..len).map(|i| (tag as usize * 31 + i) as u8).collect()
    }

    #[test]
    fn fifo_order_and_due_times() {
        let mut line = DelayLine::new(10, 64, 1 << 20);
        assert!(line.head().is_none());
        for t in 0..5u64 {
            line.push(100 + t, &frame(t, 10 + t as usize)).unwrap();
        }
        assert_eq!((line.len(), line.bytes()), (5, 10 + 11 + 12 + 13 + 14));
        for t in 0..5u64 {
            let (due, bytes) = line.head().unwrap();
            assert_eq!(due, 100 + t);
            assert_eq!(bytes, frame(t, 10 + t as usize).as_slice());
            line.pop();
        }
        assert!(line.is_empty());
        assert_eq!(line.bytes(), 0);
    }

    #[test]
    fn frame_limit_refuses_and_leaves_the_line_alone() {
        let mut line = DelayLine::new(2, 1024, 1 << 20);
        line.push(1, &[1]).unwrap();
        line.push(2, &[2]).unwrap();
        assert_eq!(line.push(3, &[3]), Err(Refused::TooManyFrames));
        assert_eq!(line.len(), 2);
        line.pop();
        line.push(3, &[3]).unwrap();
        assert_eq!(line.head().unwrap(), (2, &[2u8][..]));
        assert_eq!(line.push(4, &[]), Err(Refused::Empty));
    }

    #[test]
    fn byte_limit_refuses_when_growth_cannot_help() {
        let mut line = DelayLine::new(100, 16, 64);
        line.push(1, &[7; 40]).unwrap();
        assert_eq!(line.capacity_bytes(), 40);
        assert_eq!(line.push(2, &[8; 30]), Err(Refused::TooManyBytes));
        line.push(2, &[8; 24]).unwrap();
        assert_eq!(line.bytes(), 64);
    }

    #[test]
    fn wraps_around_without_growing_in_steady_state() {
        // A producer one frame ahead of the consumer, frames of up to 1500 bytes: the ring wraps
        // many times and four frames' worth of space is always enough (no growth).
        let mut line = DelayLine::new(1000, 6000, 1 << 20);
        let mut next_out = 0u64;
        for t in 0..10_000u64 {
            let len = 1 + (t as usize * 7919) % 1500;
            line.push(t, &frame(t, len)).unwrap();
            while line.len() > 1 {
                let (due, bytes) = line.head().unwrap();
                assert_eq!(due, next_out);
                let want_len = 1 + (next_out as usize * 7919) % 1500;
                assert_eq!(bytes, frame(next_out, want_len).as_slice());
                line.pop();
                next_out += 1;
            }
        }
        assert_eq!(line.capacity_bytes(), 6000);
    }

    #[test]
    fn grows_while_wrapped_and_keeps_order() {
        let mut line = DelayLine::new(10_000, 100, 1 << 20);
        // Make the live region wrap: fill, drain half, fill again.
        for t in 0..6u64 {
            line.push(t, &frame(t, 15)).unwrap();
        }
        for _ in 0..4 {
            line.pop();
        }
        for t in 6..200u64 {
            line.push(t, &frame(t, 15 + (t as usize % 50))).unwrap();
        }
        assert!(line.capacity_bytes() > 100);
        for t in 4..200u64 {
            let (due, bytes) = line.head().unwrap();
            assert_eq!(due, t);
            let len = if t < 6 { 15 } else { 15 + (t as usize % 50) };
            assert_eq!(bytes, frame(t, len).as_slice());
            line.pop();
        }
        assert!(line.is_empty());
    }

    #[test]
    fn retiming_changes_only_the_tail() {
        let mut line = DelayLine::new(10, 1024, 1 << 20);
        for t in 0..4u64 {
            line.push(10 * t, &[t as u8]).unwrap();
        }
        line.retime_tail(&[25, 35]);
        let mut dues = Vec::new();
        while let Some((due, _)) = line.head() {
            dues.push(due);
            line.pop();
        }
        assert_eq!(dues, vec![0, 10, 25, 35]);
        // More new times than frames: the last ones apply.
        line.push(1, &[1]).unwrap();
        line.retime_tail(&[7, 8, 9]);
        assert_eq!(line.head_due_ns(), Some(9));
    }

    #[test]
    fn jumbo_frames_fit() {
        let mut line = DelayLine::new(10, 2048, 1 << 20);
        let big = frame(9, 65_535 + 10);
        line.push(5, &big).unwrap();
        line.push(6, &[1, 2, 3]).unwrap();
        assert_eq!(line.head().unwrap().1.len(), big.len());
        line.pop();
        assert_eq!(line.head().unwrap(), (6, &[1u8, 2, 3][..]));
    }
}
