//! A set of packet sequence numbers kept as disjoint half-open ranges: the sender's loss list
//! (UDT), and the QUIC sender's and receiver's packet-number and stream-byte sets.
//!
//! The ranges sit sorted in a deque rather than a search tree: every user adds at or near the
//! top (new sequence numbers) and removes at or near the bottom (acknowledged or retransmitted
//! ones), which a deque does in O(1) and a B-tree in O(log n) with node churn. A change in the
//! middle (a retransmission filling an old hole) shifts the shorter side of the deque.

use std::collections::VecDeque;

/// Sorted, disjoint, non-adjacent ranges `[start, end)` of sequence numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// `(start, end)`, ascending; each `start` is above the previous `end`.
    ranges: VecDeque<(u64, u64)>,
    /// Sequence numbers in the set.
    len: u64,
}

impl RangeSet {
    /// An empty set.
    pub fn new() -> RangeSet {
        RangeSet::default()
    }

    /// Sequence numbers in the set.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The smallest member.
    pub fn first(&self) -> Option<u64> {
        self.ranges.front().map(|r| r.0)
    }

    /// The range holding `seq`, if any, as its index.
    fn index_holding(&self, seq: u64) -> Option<usize> {
        // Most lookups are at the top (the newest packet numbers): no search then.
        let n = self.ranges.len();
        let &(last_start, last_end) = self.ranges.back()?;
        if seq >= last_start {
            return (seq < last_end).then(|| n - 1);
        }
        // Ranges starting at or below `seq`; the last of them is the only one that may hold it.
        let i = self.ranges.partition_point(|r| r.0 <= seq);
        (i > 0 && seq < self.ranges[i - 1].1).then(|| i - 1)
    }

    /// True when `seq` is in the set.
    pub fn contains(&self, seq: u64) -> bool {
        self.index_holding(seq).is_some()
    }

    /// Add `[start, end)`, merging with overlapping or adjacent ranges.
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        // Fast path: at or above the top range (new sequence numbers).
        match self.ranges.back_mut() {
            None => {
                self.ranges.push_back((start, end));
                self.len += end - start;
                return;
            }
            Some(last) if start > last.1 => {
                self.ranges.push_back((start, end));
                self.len += end - start;
                return;
            }
            Some(last) if start >= last.0 => {
                if end > last.1 {
                    self.len += end - last.1;
                    last.1 = end;
                }
                return;
            }
            Some(_) => {}
        }
        // Fast path: below the top range, at or above the end of the one before it (an ACK's
        // packets processed newest first lay their stream bytes down this way).
        let n = self.ranges.len();
        let prev_end = if n >= 2 { Some(self.ranges[n - 2].1) } else { None };
        if prev_end.is_none_or(|pe| start >= pe) {
            let last = self.ranges[n - 1];
            let joins_prev = prev_end == Some(start);
            let joins_last = end >= last.0;
            self.len += end.min(last.0) - start + if joins_last { end.saturating_sub(last.1) } else { 0 };
            match (joins_prev, joins_last) {
                (true, true) => {
                    self.ranges.pop_back();
                    self.ranges[n - 2].1 = end.max(last.1);
                }
                (true, false) => self.ranges[n - 2].1 = end,
                (false, true) => self.ranges[n - 1] = (start, end.max(last.1)),
                (false, false) => self.ranges.insert(n - 1, (start, end)),
            }
            return;
        }
        let (mut s, mut e) = (start, end);
        // First range to merge: the one before `start` if it reaches it (adjacent counts).
        let mut i = self.ranges.partition_point(|r| r.0 <= s);
        if i > 0 && self.ranges[i - 1].1 >= s {
            i -= 1;
            s = self.ranges[i].0;
        }
        // Then every range starting inside [s, e].
        let mut j = i;
        let mut merged_len = 0;
        while let Some(&(ns, ne)) = self.ranges.get(j) {
            if ns > e {
                break;
            }
            e = e.max(ne);
            merged_len += ne - ns;
            j += 1;
        }
        self.len = self.len - merged_len + (e - s);
        if i == j {
            self.ranges.insert(i, (s, e));
        } else {
            self.ranges[i] = (s, e);
            self.ranges.drain(i + 1..j);
        }
    }

    /// Remove and return the smallest member.
    pub fn pop_first(&mut self) -> Option<u64> {
        let first = self.ranges.front_mut()?;
        let s = first.0;
        if s + 1 < first.1 {
            first.0 = s + 1;
        } else {
            self.ranges.pop_front();
        }
        self.len -= 1;
        Some(s)
    }

    /// Remove every member below `seq`.
    pub fn remove_below(&mut self, seq: u64) {
        while let Some(first) = self.ranges.front_mut() {
            if first.0 >= seq {
                break;
            }
            if first.1 > seq {
                self.len -= seq - first.0;
                first.0 = seq;
                break;
            }
            self.len -= first.1 - first.0;
            self.ranges.pop_front();
        }
    }

    /// The ranges, in order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().copied()
    }

    /// The ranges, largest first (as an ACK frame lists them).
    pub fn iter_rev(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().rev().copied()
    }

    /// How many disjoint ranges the set holds.
    pub fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// The smallest number at or above `seq` that is not in the set.
    pub fn next_absent(&self, seq: u64) -> u64 {
        // Ranges never touch, so the end of the range holding `seq` is absent.
        self.index_holding(seq).map_or(seq, |i| self.ranges[i].1)
    }
}

/// Interval operations the QUIC sender's stream bookkeeping uses (acknowledged and lost byte
/// ranges, [`crate::quic::sender`]).
impl RangeSet {
    /// The lowest range `[start, end)`, if any.
    pub fn first_range(&self) -> Option<(u64, u64)> {
        self.ranges.front().copied()
    }

    /// Remove every member of `[start, end)` (members outside it stay).
    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        // Ends ascend as starts do: ranges[i..j] are those meeting [start, end).
        let i = self.ranges.partition_point(|r| r.1 <= start);
        let j = self.ranges.partition_point(|r| r.0 < end);
        if i >= j {
            return;
        }
        let (first_start, _) = self.ranges[i];
        let (_, last_end) = self.ranges[j - 1];
        let removed: u64 = self.ranges.range(i..j).map(|r| r.1 - r.0).sum();
        // What survives: the head below `start` and the tail beyond `end`.
        let head = (first_start < start).then_some((first_start, start));
        let tail = (last_end > end).then_some((end, last_end));
        let kept: u64 = head.iter().chain(tail.iter()).map(|r| r.1 - r.0).sum();
        self.len = self.len - removed + kept;
        let mut at = i;
        for r in head.into_iter().chain(tail) {
            if at < j {
                self.ranges[at] = r;
            } else {
                self.ranges.insert(at, r);
            }
            at += 1;
        }
        if at < j {
            self.ranges.drain(at..j);
        }
    }

    /// True when every member of `[start, end)` is in the set (an empty interval always is).
    pub fn contains_range(&self, start: u64, end: u64) -> bool {
        start >= end || self.index_holding(start).is_some_and(|i| self.ranges[i].1 >= end)
    }

    /// The lowest maximal sub-range of `[start, end)` holding no member of the set, or `None`
    /// when the set covers all of it.
    pub fn first_gap(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        // Ranges never touch, so stepping past the one holding `start` lands on a non-member.
        let s = self.next_absent(start);
        if s >= end {
            return None;
        }
        let k = self.ranges.partition_point(|r| r.0 < s);
        let gap_end = self.ranges.get(k).map_or(end, |r| r.0.min(end));
        Some((s, gap_end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_pop_removes_in_order() {
        let mut r = RangeSet::new();
        r.insert(10, 12);
        r.insert(5, 6);
        r.insert(12, 15); // adjacent: merges
        r.insert(11, 13); // overlapping
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(5, 6), (10, 15)]);
        assert_eq!(r.len(), 6);
        assert!(r.contains(14) && !r.contains(15) && !r.contains(7));
        r.insert(6, 10); // bridges
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(5, 15)]);
        assert_eq!(r.pop_first(), Some(5));
        assert_eq!(r.first(), Some(6));
        r.remove_below(9);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(9, 15)]);
        assert_eq!(r.len(), 6);
        r.remove_below(100);
        assert!(r.is_empty());
        r.insert(3, 3);
        assert!(r.is_empty());
    }

    #[test]
    fn matches_a_naive_set() {
        let mut r = RangeSet::new();
        let mut naive = std::collections::BTreeSet::new();
        let mut x: u64 = 12345;
        for _ in 0..5000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let op = (x >> 60) % 4;
            let a = (x >> 20) % 200;
            let b = a + (x >> 40) % 7;
            match op {
                0 | 1 => {
                    r.insert(a, b);
                    naive.extend(a..b);
                }
                2 => {
                    assert_eq!(r.pop_first(), naive.pop_first());
                }
                _ => {
                    r.remove_below(a);
                    naive.retain(|v| *v >= a);
                }
            }
            assert_eq!(r.len(), naive.len() as u64);
            assert_eq!(r.first(), naive.first().copied());
            let ranges: Vec<_> = r.iter().collect();
            for w in ranges.windows(2) {
                assert!(w[0].1 < w[1].0, "disjoint and not adjacent: {ranges:?}");
            }
        }
    }

    /// The interval operations against a naive set, with ranges added mostly at the top and
    /// removed mostly at the bottom (as the QUIC sender and receiver do) and some anywhere.
    #[test]
    fn interval_operations_match_a_naive_set() {
        let mut r = RangeSet::new();
        let mut naive = std::collections::BTreeSet::new();
        let mut x: u64 = 987;
        let mut top: u64 = 0;
        for _ in 0..8000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Near the top, where the kept members are (remove_below trails it by 40 to 80).
            let a = top.saturating_sub((x >> 20) % 90);
            let b = a + (x >> 40) % 9;
            match (x >> 59) % 6 {
                0 | 1 => {
                    let s = top + (x >> 30) % 3;
                    top = s + 1 + (x >> 34) % 4;
                    r.insert(s, top);
                    naive.extend(s..top);
                }
                2 => {
                    r.insert(a, b);
                    naive.extend(a..b);
                }
                3 => {
                    r.remove(a, b);
                    naive.retain(|v| *v < a || *v >= b);
                }
                4 => {
                    let below = top.saturating_sub(40 + (x >> 33) % 40);
                    r.remove_below(below);
                    naive.retain(|v| *v >= below);
                }
                _ => {
                    assert_eq!(r.pop_first(), naive.pop_first());
                }
            }
            assert_eq!(r.len(), naive.len() as u64);
            let ranges: Vec<_> = r.iter().collect();
            for w in ranges.windows(2) {
                assert!(w[0].1 < w[1].0, "disjoint and not adjacent: {ranges:?}");
            }
            let members: u64 = ranges.iter().map(|(s, e)| e - s).sum();
            assert_eq!(members, r.len());
            assert!(ranges.iter().all(|&(s, e)| s < e && (s..e).all(|v| naive.contains(&v))));
            let probe = (x >> 8) % (top + 10);
            let probe_end = probe + (x >> 12) % 12;
            assert_eq!(r.contains(probe), naive.contains(&probe));
            assert_eq!(r.next_absent(probe), (probe..).find(|v| !naive.contains(v)).unwrap());
            assert_eq!(r.contains_range(probe, probe_end), (probe..probe_end).all(|v| naive.contains(&v)));
            let gap_start = (probe..probe_end).find(|v| !naive.contains(v));
            let want_gap =
                gap_start.map(|s| (s, (s..probe_end).find(|v| naive.contains(v)).unwrap_or(probe_end)));
            assert_eq!(r.first_gap(probe, probe_end), want_gap);
            assert_eq!(r.first_range().map(|(s, _)| s), naive.first().copied());
        }
    }
}
