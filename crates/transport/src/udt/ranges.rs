//! A set of packet sequence numbers kept as disjoint half-open ranges: the sender's loss list.

use std::collections::BTreeMap;

/// Sorted, disjoint, non-adjacent ranges `[start, end)` of sequence numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start → end.
    ranges: BTreeMap<u64, u64>,
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
        self.ranges.first_key_value().map(|(s, _)| *s)
    }

    /// True when `seq` is in the set.
    pub fn contains(&self, seq: u64) -> bool {
        self.ranges.range(..=seq).next_back().is_some_and(|(_, e)| seq < *e)
    }

    /// Add `[start, end)`, merging with overlapping or adjacent ranges.
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut s, mut e) = (start, end);
        // A range starting at or before `start` that reaches it.
        if let Some((&ps, &pe)) = self.ranges.range(..=s).next_back() {
            if pe >= s {
                s = ps;
                e = e.max(pe);
                self.ranges.remove(&ps);
                self.len -= pe - ps;
            }
        }
        // Ranges starting inside [s, e].
        while let Some((&ns, &ne)) = self.ranges.range(s..=e).next() {
            e = e.max(ne);
            self.ranges.remove(&ns);
            self.len -= ne - ns;
        }
        self.ranges.insert(s, e);
        self.len += e - s;
    }

    /// Remove and return the smallest member.
    pub fn pop_first(&mut self) -> Option<u64> {
        let (s, e) = self.ranges.pop_first()?;
        if s + 1 < e {
            self.ranges.insert(s + 1, e);
        }
        self.len -= 1;
        Some(s)
    }

    /// Remove every member below `seq`.
    pub fn remove_below(&mut self, seq: u64) {
        while let Some((&s, &e)) = self.ranges.first_key_value() {
            if s >= seq {
                break;
            }
            self.ranges.remove(&s);
            self.len -= e - s;
            if e > seq {
                self.ranges.insert(seq, e);
                self.len += e - seq;
                break;
            }
        }
    }

    /// The ranges, in order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(s, e)| (*s, *e))
    }

    /// The ranges, largest first (as an ACK frame lists them).
    pub fn iter_rev(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().rev().map(|(s, e)| (*s, *e))
    }

    /// How many disjoint ranges the set holds.
    pub fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// The smallest number at or above `seq` that is not in the set.
    pub fn next_absent(&self, seq: u64) -> u64 {
        match self.ranges.range(..=seq).next_back() {
            // Ranges never touch, so the end of the range holding `seq` is absent.
            Some((_, &e)) if seq < e => e,
            _ => seq,
        }
    }
}

/// Interval operations the QUIC sender's stream bookkeeping uses (acknowledged and lost byte
/// ranges, [`crate::quic::sender`]).
impl RangeSet {
    /// The lowest range `[start, end)`, if any.
    pub fn first_range(&self) -> Option<(u64, u64)> {
        self.ranges.first_key_value().map(|(s, e)| (*s, *e))
    }

    /// Remove every member of `[start, end)` (members outside it stay).
    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        // A range starting before `start` that reaches into [start, end): keep its head (and
        // its tail beyond `end`, if it spans the whole interval).
        if let Some((&ps, &pe)) = self.ranges.range(..start).next_back() {
            if pe > start {
                self.ranges.insert(ps, start);
                self.len -= pe - start;
                if pe > end {
                    self.ranges.insert(end, pe);
                    self.len += pe - end;
                }
            }
        }
        // Ranges starting inside [start, end): drop them, keeping any tail beyond `end`.
        while let Some((&ns, &ne)) = self.ranges.range(start..end).next() {
            self.ranges.remove(&ns);
            self.len -= ne - ns;
            if ne > end {
                self.ranges.insert(end, ne);
                self.len += ne - end;
            }
        }
    }

    /// True when every member of `[start, end)` is in the set (an empty interval always is).
    pub fn contains_range(&self, start: u64, end: u64) -> bool {
        start >= end || self.ranges.range(..=start).next_back().is_some_and(|(_, e)| *e >= end)
    }

    /// The lowest maximal sub-range of `[start, end)` holding no member of the set, or `None`
    /// when the set covers all of it.
    pub fn first_gap(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        // Ranges never touch, so stepping past the one holding `start` lands on a non-member.
        let s = match self.ranges.range(..=start).next_back() {
            Some((_, &e)) if e > start => e,
            _ => start,
        };
        if s >= end {
            return None;
        }
        let gap_end = self.ranges.range(s..end).next().map_or(end, |(ns, _)| *ns);
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
}
