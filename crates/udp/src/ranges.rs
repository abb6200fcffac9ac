//! Byte ranges of a file: what the receiver holds, and the map between the transport's stream
//! (which carries only the missing ranges, back to back) and file offsets. This is how a resumed
//! transfer sends only what is missing while the transport still sees one stream from 0.

/// A set of disjoint, non-adjacent byte ranges `[start, end)`, sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
}

impl RangeSet {
    /// The empty set.
    pub fn new() -> RangeSet {
        RangeSet::default()
    }

    /// A set of `ranges` (any order, overlaps merged; empty ranges ignored).
    pub fn from_ranges(ranges: impl IntoIterator<Item = (u64, u64)>) -> RangeSet {
        let mut s = RangeSet::new();
        for (a, b) in ranges {
            s.insert(a, b);
        }
        s
    }

    /// Add `[start, end)`.
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        // First range that ends at or after `start` (touching ranges merge).
        let i = self.ranges.partition_point(|&(_, e)| e < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        while j < self.ranges.len() && self.ranges[j].0 <= e {
            s = s.min(self.ranges[j].0);
            e = e.max(self.ranges[j].1);
            j += 1;
        }
        self.ranges.splice(i..j, [(s, e)]);
    }

    /// The ranges, sorted.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// Total bytes covered.
    pub fn len_bytes(&self) -> u64 {
        self.ranges.iter().map(|(s, e)| e - s).sum()
    }

    /// `[0, total)` minus this set.
    pub fn complement(&self, total: u64) -> RangeSet {
        let mut out = Vec::new();
        let mut at = 0;
        for &(s, e) in &self.ranges {
            if s >= total {
                break;
            }
            if s > at {
                out.push((at, s));
            }
            at = at.max(e);
        }
        if at < total {
            out.push((at, total));
        }
        RangeSet { ranges: out }
    }

    /// This set cut down to its `max` largest ranges (what a sidecar or an ACCEPT can carry);
    /// forgetting a held range only means sending it again.
    pub fn keep_largest(&self, max: usize) -> RangeSet {
        if self.ranges.len() <= max {
            return self.clone();
        }
        let mut by_size = self.ranges.clone();
        by_size.sort_by_key(|&(s, e)| std::cmp::Reverse(e - s));
        by_size.truncate(max);
        RangeSet::from_ranges(by_size)
    }
}

/// The transport stream's layout over the file: the missing ranges, back to back.
#[derive(Clone, Debug)]
pub struct StreamMap {
    /// (file start, file end, stream offset of file start), sorted.
    pieces: Vec<(u64, u64, u64)>,
    stream_bytes: u64,
}

impl StreamMap {
    /// The stream that carries `missing` (sorted, disjoint).
    pub fn new(missing: &RangeSet) -> StreamMap {
        let mut at = 0;
        let pieces = missing
            .ranges()
            .iter()
            .map(|&(s, e)| {
                let p = (s, e, at);
                at += e - s;
                p
            })
            .collect();
        StreamMap { pieces, stream_bytes: at }
    }

    /// Bytes in the stream.
    pub fn stream_bytes(&self) -> u64 {
        self.stream_bytes
    }

    /// The file pieces `(file offset, length)` that stream bytes `[offset, offset + len)` map to,
    /// in order; none if the span leaves the stream. An iterator, not a list: the sender and the
    /// receiver ask once per packet.
    pub fn file_pieces(&self, offset: u64, len: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let end = offset.checked_add(len).filter(|&e| e <= self.stream_bytes && len > 0);
        let mut i = match end {
            Some(_) => self.pieces.partition_point(|&(s, e, at)| at + (e - s) <= offset),
            None => self.pieces.len(),
        };
        let end = end.unwrap_or(offset);
        let mut pos = offset;
        std::iter::from_fn(move || {
            if pos >= end || i >= self.pieces.len() {
                return None;
            }
            let (s, e, at) = self.pieces[i];
            let take = (e - s - (pos - at)).min(end - pos);
            let piece = (s + (pos - at), take);
            pos += take;
            i += 1;
            Some(piece)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_complement_fills_the_gaps() {
        let mut s = RangeSet::new();
        s.insert(10, 20);
        s.insert(30, 40);
        s.insert(20, 25);
        s.insert(5, 6);
        s.insert(24, 31);
        assert_eq!(s.ranges(), &[(5, 6), (10, 40)]);
        assert_eq!(s.complement(50).ranges(), &[(0, 5), (6, 10), (40, 50)]);
        assert_eq!(s.len_bytes(), 31);
        assert_eq!(RangeSet::new().complement(7).ranges(), &[(0, 7)]);
        assert_eq!(s.keep_largest(1).ranges(), &[(10, 40)]);
    }

    #[test]
    fn stream_offsets_map_onto_the_missing_file_ranges() {
        let m = StreamMap::new(&RangeSet::from_ranges([(0, 5), (6, 10), (40, 50)]));
        assert_eq!(m.stream_bytes(), 19);
        let pieces = |offset, len| m.file_pieces(offset, len).collect::<Vec<_>>();
        assert_eq!(pieces(0, 5), vec![(0, 5)]);
        assert_eq!(pieces(3, 5), vec![(3, 2), (6, 3)]);
        assert_eq!(pieces(8, 11), vec![(9, 1), (40, 10)]);
        assert!(pieces(18, 2).is_empty());
        assert!(pieces(u64::MAX, 2).is_empty());
    }
}
