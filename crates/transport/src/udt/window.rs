//! The receiver's median-filtered interval windows (draft-gg-udt-03: the PKT History Window and
//! the Packet Pair Window, used by the ACK event of §6.2, steps 4–5; Gu 2009 §2.2, §2.4).

/// Intervals each window keeps (draft-gg-udt-03 §6.2: "the last 16 packet arrival intervals",
/// "the last 16 packet pair intervals").
pub const WINDOW_INTERVALS: usize = 16;

/// Values farther than this factor from the median are discarded (draft-gg-udt-03 §6.2: "remove
/// those either greater than AI*8 or less than AI/8"; Gu 2009 §2.2 for the pair window too).
pub const MEDIAN_FILTER_FACTOR: u64 = 8;

/// The arrival speed is reported only when more than this many intervals survive the filter
/// (draft-gg-udt-03 §6.2 step 4: "If more than 8 values are left ... Otherwise, return 0").
pub const MIN_ARRIVAL_INTERVALS: usize = 8;

/// Initial packet-pair interval, ns: 1 ms, a link capacity of 1 000 packets/s until the real
/// pairs are the majority of the window. Gu 2009 §2.2 asks for "very large intervals (i.e., low
/// bandwidth, for safety purpose)" and says "UDT uses 1 second", but the reference implementation
/// it describes, UDT4 (libudt 4.11, `CPktTimeWindow`'s constructor), fills the probe window with
/// 1000 µs (only its arrival window starts at 1 s); we follow UDT4 so that ccarena's UDT and libudt
/// start from the same estimate (draft-gg-udt-03 gives no initial value).
pub const INITIAL_PAIR_INTERVAL_NS: u64 = 1_000_000;

/// A circular window of the last [`WINDOW_INTERVALS`] intervals, nanoseconds.
#[derive(Clone, Debug)]
pub struct IntervalWindow {
    values: [u64; WINDOW_INTERVALS],
    next: usize,
    filled: usize,
}

impl IntervalWindow {
    /// An empty window (the PKT History Window).
    pub fn empty() -> IntervalWindow {
        IntervalWindow { values: [0; WINDOW_INTERVALS], next: 0, filled: 0 }
    }

    /// A window full of `value` (the Packet Pair Window, with [`INITIAL_PAIR_INTERVAL_NS`]).
    pub fn filled_with(value: u64) -> IntervalWindow {
        IntervalWindow { values: [value; WINDOW_INTERVALS], next: 0, filled: WINDOW_INTERVALS }
    }

    /// Record an interval, replacing the oldest once full.
    pub fn push(&mut self, interval_ns: u64) {
        self.values[self.next] = interval_ns;
        self.next = (self.next + 1) % WINDOW_INTERVALS;
        self.filled = (self.filled + 1).min(WINDOW_INTERVALS);
    }

    /// The mean of the intervals within [median/8, 8·median] and how many there are; `None` when
    /// empty. The median of an even count is the upper one.
    pub fn filtered_mean(&self) -> Option<(f64, usize)> {
        if self.filled == 0 {
            return None;
        }
        let mut v = self.values;
        let v = &mut v[..self.filled];
        v.sort_unstable();
        let median = v[v.len() / 2];
        let (lo, hi) = (median / MEDIAN_FILTER_FACTOR, median.saturating_mul(MEDIAN_FILTER_FACTOR));
        // Summed in place: a vector of the kept values was an allocation per ACK event.
        let (sum, kept) = v.iter().filter(|x| **x >= lo && **x <= hi).fold((0u64, 0usize), |(s, n), x| (s + x, n + 1));
        Some((sum as f64 / kept as f64, kept))
    }

    /// Packet arrival speed AS, packets/s: 1 / filtered mean arrival interval, or 0 unless more
    /// than [`MIN_ARRIVAL_INTERVALS`] intervals survive the filter.
    pub fn arrival_speed_pps(&self) -> u32 {
        match self.filtered_mean() {
            Some((mean, n)) if n > MIN_ARRIVAL_INTERVALS => per_second(mean),
            _ => 0,
        }
    }

    /// Link capacity B, packets/s: 1 / filtered mean packet-pair interval (Gu 2009 §2.2).
    pub fn link_capacity_pps(&self) -> u32 {
        self.filtered_mean().map_or(0, |(mean, _)| per_second(mean))
    }
}

/// Events per second for a mean interval of `mean_ns` (an interval of 0 counts as 1 ns).
fn per_second(mean_ns: f64) -> u32 {
    (1e9 / mean_ns.max(1.0)).round().min(u32::MAX as f64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_speed_needs_more_than_eight_intervals_and_drops_outliers() {
        let mut w = IntervalWindow::empty();
        assert_eq!(w.arrival_speed_pps(), 0);
        for _ in 0..8 {
            w.push(100_000); // 0.1 ms: 10 000 packets/s
        }
        assert_eq!(w.arrival_speed_pps(), 0, "8 values are not more than 8");
        w.push(100_000);
        assert_eq!(w.arrival_speed_pps(), 10_000);
        // An idle gap of 1 s and a back-to-back pair (1 µs) are outside [AI/8, 8·AI].
        w.push(1_000_000_000);
        w.push(1_000);
        assert_eq!(w.filtered_mean().unwrap().1, 9);
        assert_eq!(w.arrival_speed_pps(), 10_000);
        // Values within the band are averaged: 9 × 100 µs and 4 × 200 µs.
        for _ in 0..4 {
            w.push(200_000);
        }
        let (mean, n) = w.filtered_mean().unwrap();
        assert_eq!(n, 13);
        assert!((mean - (9.0 * 100_000.0 + 4.0 * 200_000.0) / 13.0).abs() < 1e-6);
    }

    #[test]
    fn pair_window_starts_at_a_thousand_packets_per_second_and_follows_the_median() {
        let mut w = IntervalWindow::filled_with(INITIAL_PAIR_INTERVAL_NS);
        assert_eq!(w.link_capacity_pps(), 1_000, "UDT4's initial 1000 µs probe intervals");
        // 12 µs pairs (1500 B at 1 Gbps): once they are the majority, B = 83 333 packets/s.
        for i in 0..9 {
            w.push(12_000);
            let b = w.link_capacity_pps();
            if i < 8 {
                assert_eq!(b, 1_000, "after {} pairs the median is still 1 ms", i + 1);
            } else {
                assert_eq!(b, 83_333);
            }
        }
        // A pair split by cross traffic (60 µs) is within 8× and pulls the mean; a 1 ms one is not.
        w.push(60_000);
        w.push(1_000_000);
        let (mean, n) = w.filtered_mean().unwrap();
        assert_eq!(n, 10);
        assert!((mean - (9.0 * 12_000.0 + 60_000.0) / 10.0).abs() < 1e-6);
    }
}
