//! Queue samples on a fixed grid: a link's exact state at `origin + k·interval`.
//!
//! The link model is advanced by arrival timestamps, so its state at an instant `T` is known once
//! every frame that arrived by `T` has been offered. A direction therefore records `T` just before
//! it offers the first frame stamped after `T`, or, when no such frame comes, once its socket is
//! empty and a grace period has passed (a frame stamped before `T` may still be on its way through
//! the kernel's receive path); [`crate::schedule::next_due`] orders samples with the link's
//! scheduled changes. The rows are the same whatever the relay's own scheduling did.

use crate::emulated_path::{EmulatedPath, QueueSample};

/// At most this many rows are kept per direction (at most 272 bytes a row with the AQM's
/// probabilities and DualPI2's per-class counters: about 270 MB, reached after 2.8 hours at a
/// 10 ms interval);
/// later instants are counted in
/// [`QueueSampler::skipped`] instead.
pub const MAX_ROWS: usize = 1_000_000;

/// The grid and the rows recorded so far.
#[derive(Debug)]
pub struct QueueSampler {
    origin_ns: u64,
    interval_ns: u64,
    next_k: u64,
    rows: Vec<QueueSample>,
    skipped: u64,
}

impl QueueSampler {
    /// A grid starting at `origin_ns` (CLOCK_MONOTONIC) with one instant every `interval_ns` (> 0).
    pub fn new(origin_ns: u64, interval_ns: u64) -> QueueSampler {
        QueueSampler { origin_ns, interval_ns: interval_ns.max(1), next_k: 0, rows: Vec::with_capacity(4096), skipped: 0 }
    }

    /// The next instant to record, ns.
    pub fn next_instant_ns(&self) -> u64 {
        self.origin_ns.saturating_add(self.next_k.saturating_mul(self.interval_ns))
    }

    /// Record the next instant (which the caller knows to be final: every arrival up to it
    /// offered, every change up to it applied).
    pub fn record_next<B: Default>(&mut self, link: &mut EmulatedPath<B>) {
        let t = self.next_instant_ns();
        self.next_k += 1;
        if self.rows.len() < MAX_ROWS {
            self.rows.push(link.sample(t));
        } else {
            self.skipped += 1;
        }
    }

    /// The rows, in time order, and how many instants were left out because [`MAX_ROWS`] was
    /// reached.
    pub fn into_rows(self) -> (Vec<QueueSample>, u64) {
        (self.rows, self.skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulated_path::{LinkParams, QueueLimit};
    use crate::rng::{Loss, SplitMix64};

    #[test]
    fn rows_are_the_state_at_each_grid_instant() {
        // 1 Mbit/s: a 1250-byte frame takes 10 ms. Three frames at t = 5 ms; grid every 10 ms from 0.
        let mut link = EmulatedPath::new(
            LinkParams { rate_bps: Some(1_000_000), limit: QueueLimit::Packets(10), delay_ns: 0 },
            Loss::new(0.0, SplitMix64::new(0)),
        );
        let mut s = QueueSampler::new(0, 10_000_000);
        s.record_next(&mut link); // t = 0, before the arrivals
        for _ in 0..3 {
            link.offer(5_000_000, 1250, 1);
        }
        while s.next_instant_ns() <= 40_000_000 {
            s.record_next(&mut link);
        }
        assert_eq!(s.next_instant_ns(), 50_000_000);
        let (rows, skipped) = s.into_rows();
        let backlog: Vec<u64> = rows.iter().map(|r| r.backlog_packets).collect();
        let departures: Vec<u64> = rows.iter().map(|r| r.counters.departures).collect();
        let times: Vec<u64> = rows.iter().map(|r| r.t_ns).collect();
        assert_eq!(times, vec![0, 10_000_000, 20_000_000, 30_000_000, 40_000_000]);
        // Starts at 5, 15 and 25 ms.
        assert_eq!(backlog, vec![0, 2, 1, 0, 0]);
        assert_eq!(departures, vec![0, 1, 2, 3, 3]);
        assert_eq!(skipped, 0);
    }
}
