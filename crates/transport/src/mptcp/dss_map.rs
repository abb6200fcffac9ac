//! The sender's data sequence mappings of one subflow (RFC 8684 §3.3.1): which connection bytes
//! (DSNs) each range of the subflow's own sequence space carries.
//!
//! The connection hands a subflow one chunk of at most one MSS at a time, and a subflow
//! [`crate::Sender`] never splits or merges a segment once sent (its scoreboard keeps the
//! original boundaries for every retransmission), so every segment the subflow sends is exactly
//! one mapping. Mappings are appended in subflow-sequence order, contiguous, and popped from the
//! front as the subflow's snd.una passes them: a `VecDeque` bounded by the subflow's window, a
//! lookup by binary search (the newest mapping first, the common case of new data).

use std::collections::VecDeque;

/// Subflow bytes `[sub_seq, sub_seq + len)` carry connection bytes `[dsn, dsn + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    /// First subflow byte.
    pub sub_seq: u64,
    /// Its data sequence number.
    pub dsn: u64,
    /// Length, bytes (at most one MSS).
    pub len: u32,
    /// Already queued for reinjection on another subflow after an RTO of this one.
    pub reinjected: bool,
}

impl Mapping {
    /// One past the last subflow byte.
    pub fn sub_end(&self) -> u64 {
        self.sub_seq + self.len as u64
    }

    /// One past the last connection byte.
    pub fn dsn_end(&self) -> u64 {
        self.dsn + self.len as u64
    }
}

/// The mappings of one subflow not yet cumulatively acknowledged on it.
#[derive(Clone, Debug, Default)]
pub(crate) struct DssMap {
    maps: VecDeque<Mapping>,
}

impl DssMap {
    /// Give back the storage once no mapping is left (capacity only).
    pub fn release_storage(&mut self) {
        if self.maps.is_empty() {
            self.maps = VecDeque::new();
        }
    }

    /// Record that subflow bytes from `sub_seq` (the subflow's end of offered data) carry
    /// `len` connection bytes from `dsn`.
    pub fn push(&mut self, sub_seq: u64, dsn: u64, len: u32) {
        debug_assert!(self.maps.back().is_none_or(|m| m.sub_end() == sub_seq));
        self.maps.push_back(Mapping { sub_seq, dsn, len, reinjected: false });
    }

    /// The DSN of the segment `[seq, seq + len)`, which must lie inside one mapping; `None`
    /// if it does not (a segment the connection never mapped).
    pub fn dsn_of(&self, seq: u64, len: u32) -> Option<u64> {
        let inside = |m: &Mapping| m.sub_seq <= seq && seq + len as u64 <= m.sub_end();
        let m = match self.maps.back() {
            Some(m) if inside(m) => m,
            _ => {
                let idx = self.maps.partition_point(|m| m.sub_end() <= seq);
                self.maps.get(idx).filter(|m| inside(m))?
            }
        };
        Some(m.dsn + (seq - m.sub_seq))
    }

    /// Forget the mappings wholly below the subflow's snd.una.
    pub fn trim(&mut self, snd_una: u64) {
        while self.maps.front().is_some_and(|m| m.sub_end() <= snd_una) {
            self.maps.pop_front();
        }
    }

    /// Call `f(dsn_start, dsn_end)` for every mapping not yet reinjected that carries bytes at
    /// or above `data_una` (clipped to it), and mark it reinjected, so a later RTO of the same
    /// subflow does not queue it again. O(mappings): called on an RTO only.
    pub fn take_for_reinjection(&mut self, data_una: u64, mut f: impl FnMut(u64, u64)) {
        for m in self.maps.iter_mut().filter(|m| !m.reinjected && m.dsn_end() > data_una) {
            m.reinjected = true;
            f(m.dsn.max(data_una), m.dsn_end());
        }
    }

    /// One past the last connection byte of the first mapping that carries connection byte
    /// `dsn`, if one does. O(mappings): called only for opportunistic retransmission, when the
    /// connection window blocks new data.
    pub fn dsn_end_carrying(&self, dsn: u64) -> Option<u64> {
        self.maps.iter().find(|m| m.dsn <= dsn && dsn < m.dsn_end()).map(|m| m.dsn_end())
    }

    /// Mappings held.
    pub fn len(&self) -> usize {
        self.maps.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_trim_and_reinjection() {
        let mut m = DssMap::default();
        m.push(0, 5000, 1000);
        m.push(1000, 9000, 1000);
        m.push(2000, 6000, 500);
        assert_eq!(m.dsn_of(2000, 500), Some(6000));
        assert_eq!(m.dsn_of(0, 1000), Some(5000));
        assert_eq!(m.dsn_of(1000, 1000), Some(9000));
        // A segment spanning two mappings, or beyond them, has no single DSN.
        assert_eq!(m.dsn_of(500, 1000), None);
        assert_eq!(m.dsn_of(2500, 100), None);
        let mut got = Vec::new();
        m.take_for_reinjection(5500, |a, b| got.push((a, b)));
        assert_eq!(got, vec![(5500, 6000), (9000, 10000), (6000, 6500)]);
        got.clear();
        m.take_for_reinjection(0, |a, b| got.push((a, b)));
        assert!(got.is_empty(), "a mapping is queued for reinjection once");
        assert_eq!(m.dsn_end_carrying(9999), Some(10000));
        assert_eq!(m.dsn_end_carrying(6000), Some(6500));
        assert_eq!(m.dsn_end_carrying(6500), None);
        m.trim(1500);
        assert_eq!(m.len(), 2);
        m.trim(2500);
        assert_eq!(m.len(), 0);
    }
}
