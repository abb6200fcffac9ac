//! The retransmission queue and SACK scoreboard (RFC 6675 §3–§4), with O(1) pipe.
//!
//! Every segment sent and not yet cumulatively acknowledged has a [`SegRecord`] in a `VecDeque`,
//! in sequence order; a cumulative ACK pops records from the front. Records never split or merge
//! (retransmissions reuse the original boundaries), so a segment is found by binary search on its
//! start. A record is addressed by its *absolute index* (records popped so far + position), which
//! stays valid while the record exists.
//!
//! Per-record flags: SACKED, LOST (declared lost, not SACKed since), RETRANS (a retransmission
//! sent since the record was last declared lost is presumed in flight), EVER_RETRANS (Karn).
//! Byte counters for each flag are kept up to date, so RFC 6675's `pipe`,
//! `outstanding − SACKed − lost + retransmitted-in-flight`, is O(1).
//!
//! Costs, with n the number of records and R the number of SACKed ranges (holes + 1):
//!
//! - SACK processing: the ranges already known to be SACKed are kept merged in a sorted
//!   `VecDeque`; a block is clipped against them (binary search) so only the newly SACKed bytes'
//!   records are walked. A block reported again costs O(log R), not its length.
//! - IsLost (RFC 6675 §4): a segment is lost when at least DupThresh SACKed segments lie above it.
//!   That holds exactly for the unSACKed segments below the DupThresh-th highest SACKed segment,
//!   the *loss boundary*. The boundary only moves up (SACKs add segments, cumulative ACKs remove
//!   them from below), and each record is passed by it at most once, so marking losses is
//!   amortized O(1) per record.
//! - NextSeg rule (1): a retransmission cursor (HighRxt) that only moves forward; amortized
//!   O(1). Retransmissions declared lost again sit in their own FIFO, served before the cursor,
//!   so the cursor never steps back over the window (which made each lost retransmission cost
//!   O(window) when a recovery lost many of them).
//! - Lost retransmissions: a retransmission is declared lost when more than
//!   (DupThresh − 1)·MSS bytes of data first sent *after* it have been SACKed (the same evidence
//!   IsLost asks of an original transmission; Linux's pre-RACK `tcp_mark_lost_retrans` uses the
//!   same sequence test). Retransmissions are checked in the order they were sent from a FIFO,
//!   each once: amortized O(1). Without it a lost retransmission would wait for the RTO.
//! - Timeouts (mark everything lost) and spurious-timeout undo walk the whole queue: O(n), once
//!   per RTO, never per ACK.
//!
//! A segment is SACKed only when a SACK range covers all of it. IsLost counts SACKed *segments*:
//! with full-sized segments this is the RFC's "more than (DupThresh − 1)·SMSS bytes SACKed above"
//! test.

use std::collections::VecDeque;

use ccarena_cc::{Duration, SimTime};

use crate::rate::TxStamp;

const SACKED: u8 = 1;
const LOST: u8 = 1 << 1;
const RETRANS: u8 = 1 << 2;
const EVER_RETRANS: u8 = 1 << 3;
/// The delivery-rate stamp's `is_app_limited`, kept among the flags (see [`SegRecord`]).
const APP_LIMITED: u8 = 1 << 4;

/// One segment sent and not yet cumulatively acknowledged.
///
/// Exactly one cache line (issue 35: at 1,000 flows a flow's records are cold when its ACK
/// comes, and the scoreboard's queue was the sender's largest source of D1 misses): the
/// delivery-rate stamp is stored flattened, its `is_app_limited` as a flag bit, which takes the
/// record from 72 bytes (the stamp's own padding plus the record's) to 61, and the alignment
/// keeps a record from straddling two lines.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(crate) struct SegRecord {
    /// First byte.
    pub seq: u64,
    /// Time of the latest (re)transmission.
    pub sent_time: SimTime,
    /// [`TxStamp::delivered`] of the latest (re)transmission, bytes.
    stamp_delivered: u64,
    /// [`TxStamp::delivered_time`] of the latest (re)transmission.
    stamp_delivered_time: SimTime,
    /// [`TxStamp::first_sent_time`] of the latest (re)transmission.
    stamp_first_sent_time: SimTime,
    /// [`TxStamp::in_flight`] of the latest (re)transmission, bytes.
    stamp_in_flight: u64,
    /// [`TxStamp::lost`] of the latest (re)transmission, bytes.
    stamp_lost: u64,
    /// Payload bytes.
    pub len: u32,
    flags: u8,
}

impl SegRecord {
    /// A record for a segment first sent at `now`.
    pub fn new(seq: u64, len: u32, now: SimTime, stamp: TxStamp) -> SegRecord {
        let mut rec = SegRecord {
            seq,
            sent_time: now,
            stamp_delivered: 0,
            stamp_delivered_time: SimTime::ZERO,
            stamp_first_sent_time: SimTime::ZERO,
            stamp_in_flight: 0,
            stamp_lost: 0,
            len,
            flags: 0,
        };
        rec.set_stamp(stamp);
        rec
    }

    /// Delivery-rate stamp of the latest (re)transmission.
    #[inline]
    pub fn stamp(&self) -> TxStamp {
        TxStamp {
            delivered: self.stamp_delivered,
            delivered_time: self.stamp_delivered_time,
            first_sent_time: self.stamp_first_sent_time,
            is_app_limited: self.flags & APP_LIMITED != 0,
            in_flight: self.stamp_in_flight,
            lost: self.stamp_lost,
        }
    }

    /// Replace the delivery-rate stamp (a retransmission's).
    #[inline]
    fn set_stamp(&mut self, stamp: TxStamp) {
        self.stamp_delivered = stamp.delivered;
        self.stamp_delivered_time = stamp.delivered_time;
        self.stamp_first_sent_time = stamp.first_sent_time;
        self.stamp_in_flight = stamp.in_flight;
        self.stamp_lost = stamp.lost;
        self.flags = (self.flags & !APP_LIMITED) | if stamp.is_app_limited { APP_LIMITED } else { 0 };
    }

    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }

    /// Covered by SACK blocks.
    pub fn is_sacked(&self) -> bool {
        self.flags & SACKED != 0
    }

    /// Declared lost (and not SACKed since).
    pub fn is_lost(&self) -> bool {
        self.flags & LOST != 0
    }

    /// A retransmission of it is presumed in flight.
    pub fn is_retrans(&self) -> bool {
        self.flags & RETRANS != 0
    }

    /// Retransmitted at least once (Karn's rule: no RTT sample from it).
    pub fn ever_retransmitted(&self) -> bool {
        self.flags & EVER_RETRANS != 0
    }

    /// What RACK may declare lost: not SACKed, and not already waiting for a retransmission.
    fn rack_candidate(&self) -> bool {
        !self.is_sacked() && (self.is_retrans() || !self.is_lost())
    }
}

/// The queue of outstanding segments and what is known about each.
#[derive(Debug)]
pub(crate) struct Scoreboard {
    segs: VecDeque<SegRecord>,
    /// Absolute index of `segs[0]`.
    base: u64,
    /// Sum of the records' lengths: snd.nxt − snd.una.
    total_bytes: u64,
    sacked_bytes: u64,
    /// Bytes LOST and not SACKED.
    lost_bytes: u64,
    /// Bytes RETRANS and not SACKED.
    retrans_bytes: u64,
    /// Bytes LOST, not RETRANS, not SACKED: retransmissions owed.
    pending_bytes: u64,
    sacked_segs: u64,
    dupthresh: u64,
    /// Absolute index of the DupThresh-th highest SACKed record, when that many exist.
    boundary: Option<u64>,
    /// SACKs above the boundary seen during the current ACK; each moves it up one SACKed record.
    boundary_advances: u64,
    /// Retransmission cursor (absolute index): no record below it needs a retransmission.
    cursor: u64,
    /// Merged, sorted, disjoint byte ranges reported SACKed, above snd.una.
    sack_ranges: VecDeque<(u64, u64)>,
    highest_sacked_end: u64,
    /// Bytes newly declared lost since the last `take_newly_lost`.
    newly_lost_bytes: u64,
    /// Retransmissions in the order sent: (absolute index, send time, snd.nxt when sent).
    rtx_fifo: VecDeque<RtxEntry>,
    /// Absolute indices of retransmissions declared lost, waiting to be retransmitted again
    /// (stale entries are skipped when served).
    relost: VecDeque<u64>,
    /// Bytes of data sent after a retransmission that must be SACKed to declare it lost.
    rtx_lost_margin: u64,
    /// Every (re)transmission in the order sent: (absolute index, send time). An entry is live
    /// while its record is outstanding, unSACKed, not waiting for a retransmission and last sent
    /// at that time; the others are dropped lazily. RACK walks it in time order (Linux keeps the
    /// same list, `tsorted_sent_queue`), so it stops at the first record sent after the newest
    /// delivered one instead of walking every record of a long recovery.
    tsorted: VecDeque<(u64, SimTime)>,
    /// Whether `tsorted` is kept (see [`Scoreboard::for_detectors`]).
    send_order: bool,
    /// Whether `rtx_fifo` is kept (see [`Scoreboard::for_detectors`]).
    rtx_order: bool,
    /// Scratch: retransmissions a RACK walk found lost, offered again in sequence order.
    relost_scratch: Vec<usize>,
}

/// One retransmission, for lost-retransmission detection.
#[derive(Clone, Copy, Debug)]
struct RtxEntry {
    abs: u64,
    sent: SimTime,
    snd_nxt: u64,
}

impl Scoreboard {
    /// An empty scoreboard; `dupthresh` is RFC 6675's DupThresh (at least 1), `mss` the sender's
    /// MSS in bytes.
    pub fn new(dupthresh: u32, mss: u64) -> Scoreboard {
        Scoreboard {
            segs: VecDeque::new(),
            base: 0,
            total_bytes: 0,
            sacked_bytes: 0,
            lost_bytes: 0,
            retrans_bytes: 0,
            pending_bytes: 0,
            sacked_segs: 0,
            dupthresh: dupthresh.max(1) as u64,
            boundary: None,
            boundary_advances: 0,
            cursor: 0,
            sack_ranges: VecDeque::new(),
            highest_sacked_end: 0,
            newly_lost_bytes: 0,
            rtx_fifo: VecDeque::new(),
            relost: VecDeque::new(),
            tsorted: VecDeque::new(),
            send_order: true,
            rtx_order: true,
            relost_scratch: Vec::new(),
            rtx_lost_margin: (dupthresh.max(1) as u64 - 1) * mss,
        }
    }

    /// [`Scoreboard::new`] with room for `segments` records before the queues grow.
    pub fn with_capacity(dupthresh: u32, mss: u64, segments: usize) -> Scoreboard {
        let mut sb = Scoreboard::new(dupthresh, mss);
        sb.segs.reserve_exact(segments);
        sb.tsorted.reserve_exact(segments);
        sb
    }

    /// This scoreboard keeping only the lists its sender's loss detection reads: the send order
    /// RACK walks (`rack`: [`Scoreboard::rack_detect_loss`], RFC 8985) and the retransmission
    /// order of RFC 6675's lost-retransmission rule (`rfc6675`: [`Scoreboard::finish_sack`]).
    /// Only its detector trims each list, so one kept for a detector that never runs grows by
    /// an entry per segment (or retransmission) sent for the rest of the run. A new scoreboard
    /// keeps both.
    pub fn for_detectors(mut self, rack: bool, rfc6675: bool) -> Scoreboard {
        self.send_order = rack;
        self.rtx_order = rfc6675;
        if !rack {
            self.tsorted = VecDeque::new();
        }
        self
    }

    /// Give back the lists' storage once nothing is outstanding (a finished transfer): they
    /// keep the capacity of the largest window otherwise, kilobytes per flow that a run of many
    /// short flows would hold to its end. Changes nothing but capacity: with no record left,
    /// every entry of the send-order, retransmission and lost lists names a record below the
    /// cumulative ACK, which their walks drop on sight. Does nothing while a record is
    /// outstanding.
    pub fn release_storage(&mut self) {
        if !self.segs.is_empty() {
            return;
        }
        self.segs = VecDeque::new();
        self.tsorted = VecDeque::new();
        self.rtx_fifo = VecDeque::new();
        self.relost = VecDeque::new();
        self.relost_scratch = Vec::new();
        if self.sack_ranges.is_empty() {
            self.sack_ranges = VecDeque::new();
        }
    }

    /// Number of outstanding records.
    pub fn len(&self) -> usize {
        self.segs.len()
    }

    /// Record `abs` (absolute index).
    #[cfg(test)]
    pub fn get(&self, abs: u64) -> &SegRecord {
        &self.segs[(abs - self.base) as usize]
    }

    /// RFC 6675 pipe: outstanding − SACKed − lost + retransmitted in flight, bytes.
    pub fn pipe(&self) -> u64 {
        self.total_bytes - self.sacked_bytes - self.lost_bytes + self.retrans_bytes
    }

    /// Bytes SACKed above snd.una.
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }

    /// Bytes declared lost and not yet retransmitted.
    pub fn pending_retransmit_bytes(&self) -> u64 {
        self.pending_bytes
    }

    /// Bytes newly declared lost since the last call.
    pub fn take_newly_lost(&mut self) -> u64 {
        std::mem::take(&mut self.newly_lost_bytes)
    }

    /// True when RFC 6675 IsLost holds for the first outstanding segment: at least DupThresh
    /// SACKed segments above it.
    pub fn front_is_lost_by_sack(&self) -> bool {
        self.boundary.is_some_and(|t| t > self.base)
    }

    /// Append a newly sent segment.
    pub fn push(&mut self, rec: SegRecord) {
        debug_assert!(self.segs.back().is_none_or(|b| b.end() == rec.seq));
        self.total_bytes += rec.len as u64;
        if self.send_order {
            self.tsorted.push_back((self.base + self.segs.len() as u64, rec.sent_time));
        }
        self.segs.push_back(rec);
    }

    /// Remove `bytes` of `rec` (all of it, or its front part) from the counters.
    fn unaccount(&mut self, rec: &SegRecord, bytes: u64, whole: bool) {
        self.total_bytes -= bytes;
        if rec.is_sacked() {
            self.sacked_bytes -= bytes;
            if whole {
                self.sacked_segs -= 1;
            }
        } else {
            if rec.is_lost() {
                self.lost_bytes -= bytes;
                if !rec.is_retrans() {
                    self.pending_bytes -= bytes;
                }
            }
            if rec.is_retrans() {
                self.retrans_bytes -= bytes;
            }
        }
    }

    /// Cumulative ACK up to `ack` (at most snd.nxt). Calls `f(record, was_sacked)` for every
    /// record (or front part of a record) it removes.
    #[inline(always)]
    pub fn advance(&mut self, ack: u64, mut f: impl FnMut(&SegRecord, bool)) {
        while let Some(&front) = self.segs.front() {
            // `f` is called at one place, for a whole record or the front part of one, so the
            // compiler can inline the caller's closure.
            let (rec, whole) = if front.end() <= ack {
                self.segs.pop_front();
                self.base += 1;
                self.unaccount(&front, front.len as u64, true);
                (front, true)
            } else if front.seq < ack {
                // An ACK inside a segment (not produced by ccarena's receiver): trim the record.
                let cut = ack - front.seq;
                self.unaccount(&front, cut, false);
                if let Some(r) = self.segs.front_mut() {
                    r.seq = ack;
                    r.len -= cut as u32;
                }
                let mut part = front;
                part.len = cut as u32;
                (part, false)
            } else {
                break;
            };
            f(&rec, front.is_sacked());
            if !whole {
                break;
            }
        }
        if self.boundary.is_some_and(|t| t < self.base) {
            // The boundary record itself was acknowledged: fewer than DupThresh SACKed records
            // remain, all above it.
            self.boundary = None;
        }
        self.cursor = self.cursor.max(self.base);
        while let Some(r) = self.sack_ranges.front_mut() {
            if r.1 <= ack {
                self.sack_ranges.pop_front();
            } else {
                r.0 = r.0.max(ack);
                break;
            }
        }
    }

    /// Apply one SACK block `[start, end)`. Calls `f(record)` for every record it newly SACKs.
    /// Call [`Scoreboard::finish_sack`] after the last block of an ACK.
    pub fn sack(&mut self, start: u64, end: u64, mut f: impl FnMut(&SegRecord)) {
        let (Some(first), Some(last)) = (self.segs.front(), self.segs.back()) else {
            return;
        };
        let start = start.max(first.seq);
        let end = end.min(last.end());
        if start >= end {
            return;
        }
        // Known ranges touching [start, end): i..j. Most blocks extend or repeat the highest
        // known range (an ACK's first block holds its newest segment), so that range is tried
        // before a binary search; the ranges are sorted, disjoint and never touch.
        let n = self.sack_ranges.len();
        let i = match self.sack_ranges.back() {
            None => 0,
            Some(&(_, back_end)) if back_end < start => n,
            Some(_) if n == 1 || self.sack_ranges[n - 2].1 < start => n - 1,
            Some(_) => self.sack_ranges.partition_point(|r| r.1 < start),
        };
        if let Some(&(rs, re)) = self.sack_ranges.get(i) {
            if rs <= start && end <= re {
                // Already known (a block repeated from an earlier ACK): nothing changes.
                return;
            }
        }
        let mut j = i;
        while j < self.sack_ranges.len() && self.sack_ranges[j].0 <= end {
            j += 1;
        }
        let (ms, me) = if i < j {
            (
                start.min(self.sack_ranges[i].0),
                end.max(self.sack_ranges[j - 1].1),
            )
        } else {
            (start, end)
        };
        // Walk only the parts of [start, end) not already known.
        let mut cur = start;
        for k in i..j {
            let (rs, re) = self.sack_ranges[k];
            if rs > cur {
                self.sack_span(cur, rs.min(end), ms, me, &mut f);
            }
            cur = cur.max(re);
            if cur >= end {
                break;
            }
        }
        if cur < end {
            self.sack_span(cur, end, ms, me, &mut f);
        }
        if i < j {
            self.sack_ranges[i] = (ms, me);
            self.sack_ranges.drain(i + 1..j);
        } else {
            self.sack_ranges.insert(i, (ms, me));
        }
    }

    /// SACK the records overlapping `[gs, ge)` that lie wholly inside the merged range `[ms, me)`.
    fn sack_span(&mut self, gs: u64, ge: u64, ms: u64, me: u64, f: &mut impl FnMut(&SegRecord)) {
        let mut idx = self.segs.partition_point(|r| r.end() <= gs);
        while idx < self.segs.len() {
            let r = self.segs[idx];
            if r.seq >= ge {
                break;
            }
            if !r.is_sacked() && r.seq >= ms && r.end() <= me {
                self.mark_sacked(idx);
                f(&self.segs[idx]);
            }
            idx += 1;
        }
    }

    fn mark_sacked(&mut self, idx: usize) {
        let abs = self.base + idx as u64;
        let r = self.segs[idx];
        let len = r.len as u64;
        if r.is_lost() {
            self.lost_bytes -= len;
            if !r.is_retrans() {
                self.pending_bytes -= len;
            }
        }
        if r.is_retrans() {
            self.retrans_bytes -= len;
        }
        self.segs[idx].flags |= SACKED;
        self.sacked_bytes += len;
        self.sacked_segs += 1;
        self.highest_sacked_end = self.highest_sacked_end.max(r.end());
        if self.boundary.is_some_and(|t| abs > t) {
            self.boundary_advances += 1;
        }
    }

    /// Move the loss boundary after an ACK's SACK blocks, declaring lost every unSACKed record
    /// it passes (RFC 6675 IsLost).
    pub fn finish_sack(&mut self) {
        debug_assert!(self.rtx_order, "finish_sack on a scoreboard without its retransmission order");
        if self.boundary.is_none() && self.sacked_segs >= self.dupthresh {
            // Start at the lowest SACKed record: everything below it is unSACKed and now lost.
            let Some(&(low, _)) = self.sack_ranges.front() else {
                return;
            };
            let mut idx = self.segs.partition_point(|r| r.end() <= low);
            while !self.segs[idx].is_sacked() {
                idx += 1;
            }
            for k in 0..idx {
                self.mark_lost_idx(k);
            }
            self.boundary = Some(self.base + idx as u64);
            self.boundary_advances = self.sacked_segs - self.dupthresh;
        }
        while self.boundary_advances > 0 {
            let Some(t) = self.boundary else { break };
            let mut idx = (t - self.base) as usize + 1;
            while !self.segs[idx].is_sacked() {
                self.mark_lost_idx(idx);
                idx += 1;
            }
            self.boundary = Some(self.base + idx as u64);
            self.boundary_advances -= 1;
        }
        self.boundary_advances = 0;
        self.detect_lost_retransmissions();
    }

    /// Declare lost the retransmissions that enough later-sent data has overtaken.
    fn detect_lost_retransmissions(&mut self) {
        while let Some(&e) = self.rtx_fifo.front() {
            if e.abs < self.base {
                self.rtx_fifo.pop_front();
                continue;
            }
            let idx = (e.abs - self.base) as usize;
            let r = self.segs[idx];
            if r.is_sacked() || !r.is_retrans() || r.sent_time != e.sent {
                // Delivered, already declared lost, or retransmitted again since: stale.
                self.rtx_fifo.pop_front();
                continue;
            }
            if self.highest_sacked_end <= e.snd_nxt + self.rtx_lost_margin {
                // Entries behind this one were sent later, with snd.nxt at least as high.
                break;
            }
            self.rtx_fifo.pop_front();
            self.retransmission_lost(idx);
        }
    }

    /// Record `idx`'s retransmission as lost: it leaves the retransmitted bytes, counts as lost
    /// (once) and is offered for retransmission again.
    fn retransmission_lost(&mut self, idx: usize) {
        let r = self.segs[idx];
        debug_assert!(r.is_retrans() && !r.is_sacked(), "not a retransmission in flight: {r:?}");
        let len = r.len as u64;
        self.segs[idx].flags &= !RETRANS;
        self.retrans_bytes -= len;
        if !r.is_lost() {
            self.segs[idx].flags |= LOST;
            self.lost_bytes += len;
        }
        self.pending_bytes += len;
        self.newly_lost_bytes += len;
        self.relost.push_back(self.base + idx as u64);
    }

    /// RACK loss detection (RFC 8985 §6.2 step 5): every record not SACKed and not already
    /// waiting for a retransmission, sent before `newest` (RACK.xmit_ts, RACK.end_seq), is lost
    /// once `sent_time + wait ≤ now`; a lost retransmission is offered again. Returns the
    /// deadline of the reordering timer (the latest `sent_time + wait` still in the future, as
    /// the RFC's `max(remaining)`), if any record is waiting.
    ///
    /// The walk goes through the records in the order they were last sent (`tsorted`) and
    /// stops at the first sent later than `newest`: O(records sent in the reordering window),
    /// not O(window) per ACK. Lost retransmissions are offered again in sequence order.
    pub fn rack_detect_loss(
        &mut self,
        now: SimTime,
        newest: (SimTime, u64),
        wait: Duration,
    ) -> Option<SimTime> {
        debug_assert!(self.send_order, "rack_detect_loss on a scoreboard without its send order");
        let mut deadline: Option<SimTime> = None;
        // The entries of cumulatively acknowledged records lead the list (they were sent first):
        // drop them up front, as the walk below would one by one, so that it starts at a record
        // still outstanding.
        while self.tsorted.front().is_some_and(|&(abs, _)| abs < self.base) {
            self.tsorted.pop_front();
        }
        let (mut i, mut stale, mut live) = (0usize, 0usize, 0usize);
        while i < self.tsorted.len() {
            let (abs, sent) = self.tsorted[i];
            let Some(idx) = abs.checked_sub(self.base).map(|d| d as usize) else {
                // Cumulatively acknowledged.
                self.skip_stale(&mut i, &mut stale);
                continue;
            };
            let r = self.segs[idx];
            if r.sent_time != sent || !r.rack_candidate() {
                self.skip_stale(&mut i, &mut stale);
                continue;
            }
            if sent > newest.0 {
                break; // everything after was sent later still
            }
            i += 1;
            live += 1;
            if crate::rack::sent_after((r.sent_time, r.end()), newest) {
                continue; // sent at newest's instant, after it in sequence
            }
            let due = r.sent_time + wait;
            if due > now {
                deadline = Some(deadline.map_or(due, |d| d.max(due)));
            } else if r.is_retrans() {
                self.relost_scratch.push(idx);
            } else {
                self.mark_lost_idx(idx);
            }
        }
        // The scratch is taken only when it holds something: most walks find no lost
        // retransmission, and moving the vector out and back is a cost on every ACK.
        if !self.relost_scratch.is_empty() {
            let mut relost = std::mem::take(&mut self.relost_scratch);
            relost.sort_unstable();
            // A record sent twice in one instant (new data, then at once its rescue
            // retransmission, RFC 6675 NextSeg rule 4) has two live entries in `tsorted`: it
            // is lost once.
            relost.dedup();
            for &idx in &relost {
                self.retransmission_lost(idx);
            }
            relost.clear();
            self.relost_scratch = relost;
        }
        if stale > 64 && stale > 2 * live {
            // Drop the dead entries in the middle once they outnumber the live ones walked.
            let (base, segs) = (self.base, &self.segs);
            self.tsorted.retain(|&(abs, sent)| {
                abs >= base && {
                    let r = &segs[(abs - base) as usize];
                    r.sent_time == sent && r.rack_candidate()
                }
            });
        }
        deadline
    }

    /// Pass a dead `tsorted` entry at `i`: dropped when it is the first, else counted.
    fn skip_stale(&mut self, i: &mut usize, stale: &mut usize) {
        if *i == 0 {
            self.tsorted.pop_front();
        } else {
            *i += 1;
            *stale += 1;
        }
    }

    /// The last outstanding record if it is not SACKed: what a tail loss probe retransmits
    /// (RFC 8985 §7.3).
    pub fn last_unsacked(&self) -> Option<u64> {
        let r = self.segs.back()?;
        (!r.is_sacked()).then(|| self.base + self.segs.len() as u64 - 1)
    }

    /// Records SACKed (for RACK's "DupThresh segments SACKed").
    pub fn sacked_segments(&self) -> u64 {
        self.sacked_segs
    }

    fn mark_lost_idx(&mut self, idx: usize) {
        let r = self.segs[idx];
        if r.is_sacked() || r.is_lost() {
            return;
        }
        let len = r.len as u64;
        self.segs[idx].flags |= LOST;
        self.lost_bytes += len;
        self.newly_lost_bytes += len;
        if !r.is_retrans() {
            self.pending_bytes += len;
            let abs = self.base + idx as u64;
            self.cursor = self.cursor.min(abs);
        }
    }

    /// Declare the first outstanding record lost so it is retransmitted (again, if it already
    /// was): Reno/NewReno fast retransmit and partial ACKs, RFC 6675 step (4.3).
    pub fn mark_front_for_retransmit(&mut self) {
        let Some(&r) = self.segs.front() else { return };
        if r.is_sacked() {
            return;
        }
        if r.is_retrans() {
            self.segs[0].flags &= !RETRANS;
            self.retrans_bytes -= r.len as u64;
            if r.is_lost() {
                self.pending_bytes += r.len as u64;
            }
        }
        self.mark_lost_idx(0);
        self.cursor = self.base;
    }

    /// Retransmission timeout (RFC 6298 §5.4, RFC 5681 §3.1): every unSACKed record is lost and
    /// no retransmission is presumed in flight any more. O(n).
    pub fn mark_all_lost(&mut self) {
        let mut newly = 0;
        for r in self.segs.iter_mut() {
            r.flags &= !RETRANS;
            if !r.is_sacked() {
                if !r.is_lost() {
                    newly += r.len as u64;
                }
                r.flags |= LOST;
            }
        }
        self.newly_lost_bytes += newly;
        self.retrans_bytes = 0;
        self.lost_bytes = self.total_bytes - self.sacked_bytes;
        self.pending_bytes = self.lost_bytes;
        self.cursor = self.base;
        self.rtx_fifo.clear();
        self.relost.clear();
    }

    /// RACK's retransmission timeout (RFC 8985 §6.3, `RACK_mark_losses_on_RTO`; Linux's
    /// `tcp_timeout_mark_lost`): the first record and every unSACKed record last sent at least
    /// `lost_after` (RACK.rtt) before `now` are lost, a retransmission among them no longer
    /// presumed in flight; records sent since stay in flight, as they were. Retransmissions start
    /// again from the first record. O(n).
    pub fn mark_lost_on_rto(&mut self, now: SimTime, lost_after: Duration) {
        for idx in 0..self.segs.len() {
            let r = self.segs[idx];
            if r.is_sacked() || (idx > 0 && r.sent_time + lost_after > now) {
                continue;
            }
            if r.is_retrans() {
                self.segs[idx].flags &= !RETRANS;
                self.retrans_bytes -= r.len as u64;
                if r.is_lost() {
                    self.pending_bytes += r.len as u64;
                }
            }
            self.mark_lost_idx(idx);
        }
        self.cursor = self.base;
        self.relost.clear();
    }

    /// Undo loss marks after a spurious timeout, except where SACK still says lost (below the
    /// loss boundary). O(n).
    pub fn clear_lost_marks(&mut self) {
        let from = match self.boundary {
            Some(t) => (t - self.base) as usize,
            None => 0,
        };
        for idx in from..self.segs.len() {
            let r = self.segs[idx];
            if r.is_lost() && !r.is_sacked() {
                self.segs[idx].flags &= !LOST;
                self.lost_bytes -= r.len as u64;
                if !r.is_retrans() {
                    self.pending_bytes -= r.len as u64;
                    // A RACK walk drops the entry of a record marked lost and not resent; once
                    // unmarked it is a RACK candidate again and needs its entry back, at its
                    // place in send-time order (else only an RTO would repair it if it was lost).
                    if self.send_order {
                        let at = self.tsorted.partition_point(|&(_, t)| t <= r.sent_time);
                        self.tsorted.insert(at, (self.base + idx as u64, r.sent_time));
                    }
                }
            }
        }
    }

    /// NextSeg rule (1) (RFC 6675 §4): a retransmission declared lost again, else the first
    /// record above the cursor that is lost, unSACKed
    /// and not yet retransmitted. Moves the cursor past records that need nothing; stops at the
    /// first record not (yet) lost.
    pub fn next_lost(&mut self) -> Option<u64> {
        while let Some(&abs) = self.relost.front() {
            if abs >= self.base {
                let r = &self.segs[(abs - self.base) as usize];
                if r.is_lost() && !r.is_sacked() && !r.is_retrans() {
                    return Some(abs);
                }
            }
            self.relost.pop_front();
        }
        let mut idx = (self.cursor - self.base) as usize;
        while idx < self.segs.len() {
            let r = &self.segs[idx];
            if r.is_sacked() || r.is_retrans() {
                idx += 1;
            } else if r.is_lost() {
                self.cursor = self.base + idx as u64;
                return Some(self.cursor);
            } else {
                break;
            }
        }
        self.cursor = self.base + idx as u64;
        None
    }

    /// NextSeg rule (3): after [`Scoreboard::next_lost`] found nothing, the record at the cursor
    /// if it is unSACKed, not retransmitted, and below the highest SACKed byte.
    pub fn rule3_candidate(&self) -> Option<u64> {
        let r = self.segs.get((self.cursor - self.base) as usize)?;
        (!r.is_sacked() && !r.is_retrans() && !r.is_lost() && r.end() <= self.highest_sacked_end)
            .then_some(self.cursor)
    }

    /// NextSeg rule (4), rescue retransmission: the last outstanding record, if unSACKed and not
    /// retransmitted.
    pub fn rescue_candidate(&self) -> Option<u64> {
        let r = self.segs.back()?;
        (!r.is_sacked() && !r.is_retrans()).then(|| self.base + self.segs.len() as u64 - 1)
    }

    /// When the first outstanding record was last sent, if that was a retransmission.
    pub fn front_retransmitted_at(&self) -> Option<SimTime> {
        self.segs
            .front()
            .filter(|r| r.ever_retransmitted())
            .map(|r| r.sent_time)
    }

    /// Record a retransmission of record `abs` at `now`, when snd.nxt is `snd_nxt`. Returns
    /// `(seq, len)`.
    pub fn mark_retransmitted(
        &mut self,
        abs: u64,
        now: SimTime,
        stamp: TxStamp,
        snd_nxt: u64,
    ) -> (u64, u32) {
        let idx = (abs - self.base) as usize;
        let r = self.segs[idx];
        debug_assert!(!r.is_sacked());
        if !r.is_retrans() {
            if r.is_lost() {
                self.pending_bytes -= r.len as u64;
            }
            self.retrans_bytes += r.len as u64;
        }
        let rec = &mut self.segs[idx];
        rec.flags |= RETRANS | EVER_RETRANS;
        rec.sent_time = now;
        rec.set_stamp(stamp);
        if self.send_order {
            self.tsorted.push_back((abs, now));
        }
        if self.rtx_order {
            self.rtx_fifo.push_back(RtxEntry {
                abs,
                sent: now,
                snd_nxt,
            });
        }
        (r.seq, r.len)
    }

    /// Check every counter against a full recount (tests only).
    #[cfg(test)]
    pub fn check_invariants(&self) {
        let (mut total, mut sacked, mut lost, mut retrans, mut pending, mut nsacked) =
            (0, 0, 0, 0, 0, 0);
        for r in &self.segs {
            let len = r.len as u64;
            total += len;
            if r.is_sacked() {
                sacked += len;
                nsacked += 1;
            } else {
                if r.is_lost() {
                    lost += len;
                    if !r.is_retrans() {
                        pending += len;
                    }
                }
                if r.is_retrans() {
                    retrans += len;
                }
            }
        }
        assert_eq!(
            (total, sacked, lost, retrans, pending, nsacked),
            (
                self.total_bytes,
                self.sacked_bytes,
                self.lost_bytes,
                self.retrans_bytes,
                self.pending_bytes,
                self.sacked_segs
            )
        );
        // IsLost by brute force: unSACKed records with >= DupThresh SACKed records above are lost.
        let mut above = 0;
        for r in self.segs.iter().rev() {
            if r.is_sacked() {
                above += 1;
            } else if above >= self.dupthresh {
                assert!(
                    r.is_lost(),
                    "record at {} has {above} SACKed above but is not lost",
                    r.seq
                );
            }
        }
        for w in self.sack_ranges.iter().zip(self.sack_ranges.iter().skip(1)) {
            assert!(w.0 .1 < w.1 .0, "SACK ranges merged and sorted");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 100;

    fn board(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::new(3, MSS);
        for i in 0..n {
            sb.push(SegRecord::new(
                i * MSS,
                MSS as u32,
                SimTime(i),
                TxStamp::default(),
            ));
        }
        sb
    }

    fn sack(sb: &mut Scoreboard, s: u64, e: u64) -> Vec<u64> {
        let mut got = Vec::new();
        sb.sack(s * MSS, e * MSS, |r| got.push(r.seq / MSS));
        sb.finish_sack();
        sb.check_invariants();
        got
    }

    #[test]
    fn repeated_block_is_not_rewalked_and_growing_block_walks_only_new_part() {
        let mut sb = board(10);
        assert_eq!(sack(&mut sb, 2, 4), vec![2, 3]);
        assert_eq!(sack(&mut sb, 2, 4), Vec::<u64>::new());
        assert_eq!(sack(&mut sb, 2, 6), vec![4, 5]);
        assert_eq!(sb.sacked_bytes(), 4 * MSS);
        assert_eq!(sb.sack_ranges.len(), 1);
    }

    #[test]
    fn is_lost_needs_dupthresh_sacked_segments_above() {
        let mut sb = board(10);
        sack(&mut sb, 1, 3);
        assert!(!sb.front_is_lost_by_sack());
        assert_eq!(sb.pipe(), 8 * MSS);
        sack(&mut sb, 4, 5);
        // SACKed: 1, 2, 4. Record 0 has three SACKed above: lost. Record 3 has one: not lost.
        assert!(sb.front_is_lost_by_sack());
        assert!(sb.get(0).is_lost());
        assert!(!sb.get(3).is_lost());
        assert_eq!(sb.pipe(), 10 * MSS - 3 * MSS - MSS);
        // SACK 6 and 7: record 3 now has 4, 6, 7 above: lost; 5 has 6, 7 above: not.
        sack(&mut sb, 6, 8);
        assert!(sb.get(3).is_lost());
        assert!(!sb.get(5).is_lost());
        assert_eq!(sb.take_newly_lost(), 2 * MSS);
    }

    #[test]
    fn sacks_arriving_out_of_order_below_the_boundary() {
        let mut sb = board(12);
        sack(&mut sb, 8, 11); // 8, 9, 10: boundary at 8, 0..8 lost
        assert_eq!(sb.pending_retransmit_bytes(), 8 * MSS);
        sack(&mut sb, 3, 4); // below the boundary: 3 leaves the lost set
        assert_eq!(sb.pending_retransmit_bytes(), 7 * MSS);
        sb.check_invariants();
    }

    #[test]
    fn retransmission_cursor_and_pipe() {
        let mut sb = board(10);
        sack(&mut sb, 3, 6);
        assert_eq!(sb.next_lost(), Some(0));
        sb.mark_retransmitted(0, SimTime(50), TxStamp::default(), 1000 * MSS);
        assert_eq!(sb.next_lost(), Some(1));
        sb.mark_retransmitted(1, SimTime(50), TxStamp::default(), 1000 * MSS);
        sb.mark_retransmitted(2, SimTime(50), TxStamp::default(), 1000 * MSS);
        assert_eq!(sb.next_lost(), None);
        // 10 out, 3 SACKed, 3 lost but all retransmitted: pipe 7.
        assert_eq!(sb.pipe(), 7 * MSS);
        sb.check_invariants();
        // Rule 3 has nothing below the highest SACK (records 6.. are above it); rule 4 offers 9.
        assert_eq!(sb.rule3_candidate(), None);
        assert_eq!(sb.rescue_candidate(), Some(9));
        // Cumulative ACK of 0..6 leaves 6..10.
        let mut popped = Vec::new();
        sb.advance(6 * MSS, |r, was_sacked| {
            popped.push((r.seq / MSS, was_sacked))
        });
        assert_eq!(popped.len(), 6);
        assert!(popped[3].1 && !popped[0].1);
        assert_eq!(sb.pipe(), 4 * MSS);
        sb.check_invariants();
    }

    #[test]
    fn lost_retransmission_is_detected_by_later_data_sacked() {
        let mut sb = board(20);
        sack(&mut sb, 1, 4);
        assert_eq!(sb.next_lost(), Some(0));
        // Retransmitted when snd.nxt was record 10: records 10.. were sent after it.
        sb.mark_retransmitted(0, SimTime(50), TxStamp::default(), 10 * MSS);
        assert_eq!(sb.next_lost(), None);
        // Two segments sent later SACKed: not yet more than (3 − 1)·MSS beyond snd.nxt.
        sack(&mut sb, 10, 12);
        assert_eq!(sb.next_lost(), None);
        assert_eq!(
            sb.take_newly_lost(),
            MSS,
            "only record 0 so far (three SACKed above it)"
        );
        // A third: records 4..=9 now have three SACKed above them, and the retransmission of
        // record 0 is declared lost and offered again.
        sack(&mut sb, 12, 13);
        assert_eq!(sb.take_newly_lost(), 7 * MSS);
        assert_eq!(sb.next_lost(), Some(0));
        sb.mark_retransmitted(0, SimTime(60), TxStamp::default(), 20 * MSS);
        sack(&mut sb, 13, 14);
        assert_eq!(
            sb.next_lost(),
            Some(4),
            "the new retransmission is not judged by old data"
        );
    }

    #[test]
    fn rto_marks_everything_and_undo_restores() {
        let mut sb = board(6);
        sack(&mut sb, 4, 5);
        sb.mark_retransmitted(0, SimTime(1), TxStamp::default(), 1000 * MSS);
        sb.mark_all_lost();
        sb.check_invariants();
        assert_eq!(sb.pipe(), 0);
        assert_eq!(sb.next_lost(), Some(0));
        sb.clear_lost_marks();
        sb.check_invariants();
        assert_eq!(sb.pipe(), 5 * MSS);
    }

    #[test]
    fn a_record_unmarked_after_a_rack_walk_is_found_by_the_next_walk() {
        // Records 0–3 sent at t = 0..3; record 3 delivered (newest): RACK marks 0–2 lost and
        // drops their send-time entries; an undo unmarks them; a later walk, once they are
        // overdue again, must see them.
        let mut sb = board(4);
        sack(&mut sb, 3, 4);
        let newest = (SimTime(3), 4 * MSS);
        assert_eq!(sb.rack_detect_loss(SimTime(10), newest, Duration(5)), None);
        assert!((0..3).all(|i| sb.get(i).is_lost()));
        // The next walk (an ACK before the retransmissions go out) drops their dead entries.
        sb.rack_detect_loss(SimTime(11), newest, Duration(5));
        sb.clear_lost_marks();
        sb.check_invariants();
        assert!((0..3).all(|i| !sb.get(i).is_lost()));
        assert_eq!(sb.rack_detect_loss(SimTime(20), newest, Duration(5)), None);
        assert!((0..3).all(|i| sb.get(i).is_lost()), "unmarked records are RACK candidates again");
        sb.check_invariants();
    }

    #[test]
    fn partial_cumulative_ack_trims_a_record() {
        let mut sb = board(3);
        let mut parts = Vec::new();
        sb.advance(150, |r, _| parts.push((r.seq, r.len)));
        assert_eq!(parts, vec![(0, 100), (100, 50)]);
        assert_eq!(sb.pipe(), 150);
        sb.check_invariants();
    }

    #[test]
    fn random_sack_sequences_keep_counters_exact() {
        // A tiny xorshift drives random blocks, cumulative ACKs, retransmissions and timeouts.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..50 {
            let mut sb = board(40);
            let mut una = 0;
            for _ in 0..60 {
                match rnd(10) {
                    0 => {
                        una = (una + rnd(5)).min(40);
                        sb.advance(una * MSS, |_, _| {});
                    }
                    1 => {
                        if let Some(i) = sb.next_lost() {
                            let nxt = (una + rnd(40)) * MSS;
                            sb.mark_retransmitted(i, SimTime(rnd(1000)), TxStamp::default(), nxt);
                        }
                    }
                    2 if rnd(4) == 0 => sb.mark_all_lost(),
                    3 if rnd(4) == 0 => sb.mark_lost_on_rto(SimTime(rnd(1000)), Duration(rnd(500))),
                    _ => {
                        let s = una + rnd(40);
                        let e = s + 1 + rnd(6);
                        sb.sack(s * MSS, e * MSS, |_| {});
                        sb.finish_sack();
                    }
                }
                sb.check_invariants();
            }
        }
    }

    #[test]
    fn a_record_sent_and_rescued_in_one_instant_is_lost_once() {
        // Records 0–2 sent at t = 0, 1, 2; record 2 retransmitted at t = 2 as well (a rescue
        // retransmission of data just sent): two live entries for it in the send-time list.
        let mut sb = board(3);
        sb.mark_retransmitted(2, SimTime(2), TxStamp::default(), 3 * MSS);
        sb.push(SegRecord::new(3 * MSS, MSS as u32, SimTime(10), TxStamp::default()));
        assert_eq!(sack(&mut sb, 3, 4), vec![3]);
        // RACK: record 3 (sent at t = 10) delivered, the reordering window over: 0–2 are lost,
        // record 2 (a retransmission) once.
        let deadline = sb.rack_detect_loss(SimTime(1_000), (SimTime(10), 4 * MSS), Duration::ZERO);
        assert_eq!(deadline, None);
        sb.check_invariants();
        assert_eq!(sb.pending_retransmit_bytes(), 3 * MSS);
        assert_eq!(sb.pipe(), 0);
        assert_eq!(sb.next_lost(), Some(2)); // the lost retransmission first, once
        sb.mark_retransmitted(2, SimTime(1_000), TxStamp::default(), 4 * MSS);
        assert_eq!(sb.next_lost(), Some(0));
        sb.check_invariants();
    }
}
