//! The connection-level receiver: data-level reassembly across subflows, DATA_ACK, the shared
//! receive window, and the data-level reordering delay.
//!
//! # Reassembly (RFC 8684 §3.3.1)
//!
//! Each segment carries its DSS mapping, so its connection bytes `[dsn, dsn + len)` are known
//! on arrival; the subflow's [`Receiver`] takes the segment too (for its own cumulative ACK and
//! SACK). Bytes at `data_rcv_nxt` are delivered at once, with whatever was held contiguous above
//! them; bytes above it are held in a sorted list of disjoint ranges, each with its arrival time,
//! until the gap fills. Bytes already delivered or held (a reinjected copy, a subflow
//! retransmission of data another subflow brought) are counted once. The list is a `VecDeque`
//! kept sorted: out-of-order data mostly lands at its end and leaves from its front, so neither
//! costs a scan, and its storage is reused (no allocation per segment once it has grown). A
//! range that continues the one below it joins it (keeping the count and the sum of its pieces'
//! arrival times), so a gap that stays open while the other subflows stream on (a subflow
//! waiting for its RTO under an unlimited buffer) holds one range, not one per segment.
//!
//! # DATA_ACK and the shared window (RFC 8684 §3.3.2, §3.3.5)
//!
//! Every subflow ACK is sent as a [`DssAck`] carrying the DATA_ACK (`data_rcv_nxt`: the
//! receiving application reads in-order data at once) and the connection window: the receive
//! buffer less the bytes held out of order above the DATA_ACK, with the right edge
//! (DATA_ACK + window) never moving left; `u64::MAX` without a buffer limit. The subflow
//! receivers' own buffers are unlimited: the shared buffer governs.
//!
//! # Receive-buffer autotuning (Linux; [`MptcpReceiver::set_rcvbuf_autotuning`])
//!
//! Off by default (no `rcvbuf_bytes`: an unlimited shared buffer). When on, the connection's
//! buffer is tuned as Linux 6.18's MPTCP tunes it (net/mptcp/protocol.c,
//! `mptcp_rcv_space_adjust` and `mptcp_rcvbuf_grow`; [`RcvBufAutotuning`] holds the sysctls):
//!
//! - The buffer starts at `tcp_rmem[1]`; the window it allows is shared by the subflows, less
//!   the bytes held out of order.
//! - Each subflow is a Linux TCP receiver with its own `rcv_ssthresh`, starting at the
//!   SYN-ACK's 65,160 bytes and growing two MSS per segment it receives
//!   ([`Receiver::set_rcvbuf_autotuning_follower`]): an ACK on a subflow advertises the smaller
//!   of that and the shared window (Linux's `__tcp_select_window` takes the free space from the
//!   MPTCP socket, `mptcp_space`, and caps it at the subflow's `rcv_ssthresh`).
//! - Once per measurement period the connection compares the bytes delivered to the
//!   application in it (`copied`) with the most before (`space`, starting at 10 MSS) and, when
//!   more, grows its buffer as TCP does ([`RcvBufAutotuning::grown_rcvbuf`]); the subflows'
//!   buffers and clamps follow. The period is the largest of the subflows' receiver RTT
//!   estimates ([`MptcpReceiver::on_rcv_rtt_sample`]), read at the previous measurement: a
//!   measurement waits for the RTT the last one read before it reads the subflows' again. The
//!   first period runs from the connection's establishment (`mptcp_sk_clone_init`), not from
//!   its first data as TCP's does.
//!
//! Measured on Linux 6.18.44 (`ss -tinM` at the receiver): the subflows' `rcv_space` stays at
//! 14,480 bytes (10 MSS) and every sender's window at most 80,896 bytes until the connection's
//! first measurement, then all subflows' `rcv_space` jump together to the connection's
//! `copied` (e.g. 34,176, 54,112, 246,416, 889,000 bytes on a 100 Mbit/s, 20 ms path).
//!
//! # Reordering delay
//!
//! A range that arrives above `data_rcv_nxt` waits for the gap below it (head-of-line blocking
//! at the data level, typically behind a slower subflow); its wait, from arrival to delivery, is
//! recorded in [`ReorderStats`] when it is delivered.

use std::collections::VecDeque;

use ccarena_cc::{Duration, SimTime};

use super::{DssAck, DssData, MptcpConfig, ReorderStats};
use crate::receiver::{RcvBufAutotuning, Receiver, ReceiverConfig};

/// The connection-level autotuning state (Linux's MPTCP socket's `sk_rcvbuf` and
/// `rcvq_space`; the module documentation).
#[derive(Clone, Copy, Debug)]
struct ConnAutotune {
    cfg: RcvBufAutotuning,
    /// The shared buffer, bytes.
    rcvbuf: u64,
    /// Most bytes delivered in one period so far.
    space: u64,
    /// `data_rcv_nxt` and the time when the current period began.
    space_seq: u64,
    space_time: SimTime,
    /// The period the last measurement read (the largest subflow receiver RTT then): the next
    /// measurement waits at least this long.
    period: Option<Duration>,
}

/// Connection bytes `[start, end)` held above `data_rcv_nxt`: `pieces` pieces that arrived
/// apart, the first of them (the one waiting longest) at `first_arrived`, their arrival times
/// summing to `arrived_sum_ns`.
#[derive(Clone, Copy, Debug)]
struct Held {
    start: u64,
    end: u64,
    first_arrived: SimTime,
    pieces: u64,
    arrived_sum_ns: u128,
}

impl Held {
    fn new(start: u64, end: u64, arrived: SimTime) -> Held {
        Held { start, end, first_arrived: arrived, pieces: 1, arrived_sum_ns: arrived.as_nanos() as u128 }
    }

    /// Extend to `end` with a piece that arrived at `arrived`.
    fn extend(&mut self, end: u64, arrived: SimTime) {
        self.end = end;
        self.first_arrived = self.first_arrived.min(arrived);
        self.pieces += 1;
        self.arrived_sum_ns += arrived.as_nanos() as u128;
    }

    /// The pieces' summed wait until `now`, ns (each arrived at or before `now`).
    fn total_wait_ns(&self, now: SimTime) -> u64 {
        (self.pieces as u128 * now.as_nanos() as u128 - self.arrived_sum_ns) as u64
    }
}

/// The receiving half of an MPTCP connection (see the module documentation).
#[derive(Debug)]
pub struct MptcpReceiver {
    subs: Vec<Receiver>,
    data_rcv_nxt: u64,
    /// Disjoint, sorted by start, every start above `data_rcv_nxt`.
    held: VecDeque<Held>,
    held_bytes: u64,
    rcvbuf: Option<u64>,
    /// Linux's autotuning of the shared buffer, when on (then `rcvbuf` is None).
    autotune: Option<ConnAutotune>,
    /// DATA_ACK + window as last advertised (never moves left).
    right_edge: u64,
    reorder: ReorderStats,
    /// See [`MptcpReceiver::duplicate_data_bytes`].
    duplicate_data_bytes: u64,
    /// Where the next poll for ACKs starts (fairness between subflows).
    ack_start: usize,
    /// Subflows that may have an ACK to send: set when a segment or a timer reaches a subflow,
    /// cleared when its receiver, polled, has none (only then does a subflow's ACK become due),
    /// so the others are not polled on every segment.
    dirty: u32,
}

impl MptcpReceiver {
    /// The receiving half for `cfg`: one subflow receiver per subflow (`cfg.receiver` with an
    /// unlimited buffer), and the shared buffer `cfg.rcvbuf_bytes`.
    pub fn new(cfg: MptcpConfig) -> MptcpReceiver {
        let rcfg = ReceiverConfig { rcvbuf_bytes: None, ..cfg.receiver };
        MptcpReceiver {
            subs: (0..cfg.subflows).map(|_| Receiver::new(rcfg)).collect(),
            data_rcv_nxt: 0,
            held: VecDeque::new(),
            held_bytes: 0,
            rcvbuf: cfg.rcvbuf_bytes,
            autotune: None,
            right_edge: cfg.rcvbuf_bytes.unwrap_or(u64::MAX),
            reorder: ReorderStats::default(),
            duplicate_data_bytes: 0,
            ack_start: 0,
            dirty: 0,
        }
    }

    /// A segment arrived at `now`; returns connection bytes newly delivered in order. A segment
    /// of a subflow that does not exist is ignored.
    pub fn on_segment(&mut self, now: SimTime, seg: &DssData) -> u64 {
        let Some(rx) = self.subs.get_mut(seg.subflow as usize) else {
            return 0;
        };
        self.dirty |= 1 << seg.subflow;
        let sub_dup_before = rx.stats().duplicate_bytes;
        let _ = rx.on_segment(now, &seg.seg);
        let sub_dup = rx.stats().duplicate_bytes - sub_dup_before;
        let len = seg.seg.len as u64;
        let (start, end) = (seg.dsn, seg.dsn + len);
        // A byte already received on the same subflow is also one already placed at the data
        // level, so data-level duplicates ≥ the subflow's: count only the excess.
        if end <= self.data_rcv_nxt {
            self.duplicate_data_bytes += len.saturating_sub(sub_dup);
            return 0;
        }
        if start > self.data_rcv_nxt {
            let held_before = self.held_bytes;
            self.hold(start, end, now);
            let placed = self.held_bytes - held_before;
            self.duplicate_data_bytes += (len - placed).saturating_sub(sub_dup);
            return 0;
        }
        let before = self.data_rcv_nxt;
        let held_before = self.held_bytes;
        self.data_rcv_nxt = end;
        self.release_held(now);
        let delivered = self.data_rcv_nxt - before;
        // New bytes of this segment: what was delivered less what had been held before.
        let placed = delivered - (held_before - self.held_bytes);
        self.duplicate_data_bytes += (len - placed).saturating_sub(sub_dup);
        self.autotune_measure(now);
        delivered
    }

    /// Turn on Linux's autotuning of the shared buffer with `sysctls` (the module
    /// documentation), for a connection established at `established`: every subflow's receiver
    /// follows it ([`Receiver::set_rcvbuf_autotuning_follower`]). The sender's window before
    /// the first DATA_ACK is [`RcvBufAutotuning::initial_window`]
    /// (`MptcpSender::set_initial_rwnd`). Call before any data arrives and before
    /// [`MptcpReceiver::set_quickack`].
    ///
    /// # Panics
    /// If the connection has a fixed `rcvbuf_bytes`, or `sysctls` allows no window.
    pub fn set_rcvbuf_autotuning(&mut self, sysctls: RcvBufAutotuning, established: SimTime) {
        assert!(self.rcvbuf.is_none(), "autotuning replaces a fixed rcvbuf_bytes");
        for r in &mut self.subs {
            r.set_rcvbuf_autotuning_follower(sysctls);
        }
        let mss = self.subs.first().map_or(0, |r| r.config().mss_bytes as u64);
        self.autotune = Some(ConnAutotune {
            cfg: sysctls,
            rcvbuf: sysctls.initial_rcvbuf_bytes,
            space: 10 * mss,
            space_seq: 0,
            space_time: established,
            period: None,
        });
        // The SYN-ACK's window, already offered.
        self.right_edge = sysctls.initial_window(mss as u32);
    }

    /// The shared buffer's size now, bytes: autotuning's, else the fixed one (None: unlimited).
    pub fn rcvbuf_bytes(&self) -> Option<u64> {
        self.autotune.map(|a| a.rcvbuf).or(self.rcvbuf)
    }

    /// A round-trip sample for subflow `subflow`'s receiver RTT estimate
    /// ([`Receiver::on_rcv_rtt_sample`]): what the connection's autotuning measures over. A
    /// subflow that does not exist is ignored.
    pub fn on_rcv_rtt_sample(&mut self, subflow: u8, sample: Duration) {
        if let Some(r) = self.subs.get_mut(subflow as usize) {
            r.on_rcv_rtt_sample(sample);
        }
    }

    /// In-order data was delivered at `now` (Linux's `mptcp_rcv_space_adjust`, run after each
    /// read): once the period has passed, grow the shared buffer if more was delivered in it
    /// than ever, and the subflows' with it.
    fn autotune_measure(&mut self, now: SimTime) {
        let Some(a) = self.autotune.as_mut() else { return };
        let elapsed = now.saturating_since(a.space_time);
        if a.period.is_some_and(|p| elapsed < p) {
            return;
        }
        a.period = self.subs.iter().filter_map(Receiver::rcv_rtt).max().filter(|p| *p > Duration::ZERO);
        match a.period {
            Some(p) if elapsed >= p => {}
            _ => return,
        }
        let copied = self.data_rcv_nxt - a.space_seq;
        if copied > a.space {
            let buf = a.cfg.grown_rcvbuf(copied, a.space, 0);
            if buf > a.rcvbuf {
                a.rcvbuf = buf;
                for r in &mut self.subs {
                    r.follow_rcvbuf(buf);
                }
            }
            a.space = copied;
        }
        a.space_seq = self.data_rcv_nxt;
        a.space_time = now;
    }

    /// Deliver at `now` the held ranges that `data_rcv_nxt` has reached, recording each piece's
    /// wait.
    fn release_held(&mut self, now: SimTime) {
        while let Some(h) = self.held.front().copied().filter(|h| h.start <= self.data_rcv_nxt) {
            self.held.pop_front();
            self.held_bytes -= h.end - h.start;
            self.data_rcv_nxt = self.data_rcv_nxt.max(h.end);
            self.reorder.segments_delayed += h.pieces;
            self.reorder.total_delay_ns += h.total_wait_ns(now);
            let longest = now.saturating_since(h.first_arrived).as_nanos();
            self.reorder.max_delay_ns = self.reorder.max_delay_ns.max(longest);
        }
    }

    /// Hold `[start, end)` (above `data_rcv_nxt`), less what is already held; a piece that
    /// continues the range below it joins that range.
    fn hold(&mut self, start: u64, end: u64, now: SimTime) {
        // The first held range that ends above `start` (ranges below it are untouched): past the
        // last one for data above everything held, the common case, without a search.
        let mut idx = match self.held.back() {
            Some(b) if b.end <= start => self.held.len(),
            _ => self.held.partition_point(|h| h.end <= start),
        };
        let mut cur = start;
        while cur < end {
            match self.held.get(idx) {
                Some(h) if h.start <= cur => {
                    cur = cur.max(h.end);
                    idx += 1;
                }
                next => {
                    let stop = next.map_or(end, |h| h.start.min(end));
                    self.held_bytes += stop - cur;
                    match idx.checked_sub(1).and_then(|i| self.held.get_mut(i)) {
                        Some(below) if below.end == cur => below.extend(stop, now),
                        _ => {
                            self.held.insert(idx, Held::new(cur, stop, now));
                            idx += 1;
                        }
                    }
                    cur = stop;
                }
            }
        }
    }

    /// The connection window to advertise on subflow `i`'s ACK, bytes above the DATA_ACK;
    /// moves the right edge.
    fn window(&mut self, i: usize) -> u64 {
        let free = if let Some(a) = &self.autotune {
            // The shared buffer's window, at most this subflow's rcv_ssthresh (Linux's
            // `__tcp_select_window` with `mptcp_space`).
            a.cfg.free_window(a.rcvbuf, self.held_bytes, self.subs[i].rcv_ssthresh_bytes().unwrap_or(u64::MAX))
        } else {
            match self.rcvbuf {
                None => return u64::MAX,
                Some(b) => b.saturating_sub(self.held_bytes),
            }
        };
        self.right_edge = self.right_edge.max(self.data_rcv_nxt.saturating_add(free));
        self.right_edge - self.data_rcv_nxt
    }

    /// The next ACK to send at `now`, if any (any subflow, in turn), with the current DATA_ACK
    /// and window. Call until `None` after every `on_segment` and `handle_timeout`.
    pub fn poll_ack(&mut self, now: SimTime) -> Option<DssAck> {
        let n = self.subs.len();
        // The dirty subflows in turn from `ack_start` (wrapping), one set bit at a time: no pass
        // over the clean ones (this runs after every segment the connection receives).
        let from_start = self.dirty & (u32::MAX << self.ack_start);
        for mut turn in [from_start, self.dirty & !from_start] {
            while turn != 0 {
                let i = turn.trailing_zeros() as usize;
                turn &= turn - 1;
                if let Some(ack) = self.subs[i].poll_ack(now) {
                    self.ack_start = (i + 1) % n;
                    return Some(DssAck {
                        subflow: i as u8,
                        ack,
                        data_ack: self.data_rcv_nxt,
                        data_rwnd_bytes: self.window(i),
                    });
                }
                self.dirty &= !(1 << i);
            }
        }
        None
    }

    /// When [`MptcpReceiver::handle_timeout`] is next due (the earliest delayed ACK).
    pub fn poll_timeout(&self) -> Option<SimTime> {
        self.subs.iter().filter_map(Receiver::poll_timeout).min()
    }

    /// Act on due timers (the subflows' delayed ACKs).
    pub fn handle_timeout(&mut self, now: SimTime) {
        for (i, rx) in self.subs.iter_mut().enumerate() {
            if rx.poll_timeout().is_some_and(|t| t <= now) {
                rx.handle_timeout(now);
                self.dirty |= 1 << i;
            }
        }
    }

    /// Linux's quick-ACK mode on every subflow's receiver ([`Receiver::set_quickack`]: the
    /// first `segments` in-order segments of each subflow acknowledged at once, again after
    /// `idle_restart` without data), and its immediate ACK of a sub-MSS segment
    /// ([`Receiver::set_ack_short_segments`]) when `segments > 0`. Each subflow is a TCP
    /// connection with its own receive state (RFC 8684 §3.2), as on Linux. Without autotuning
    /// the subflows' receivers have no buffer of their own (the connection's is shared), so
    /// the grant is `segments`, unbounded by a window; with it, each is bounded by the
    /// SYN-ACK's window as a TCP receiver's is.
    pub fn set_quickack(&mut self, segments: u32, idle_restart: Option<Duration>) {
        for r in &mut self.subs {
            r.set_quickack(segments, idle_restart);
            r.set_ack_short_segments(segments > 0);
        }
    }

    /// Subflow `i`'s receiver.
    ///
    /// # Panics
    /// If `i` is not a subflow.
    pub fn subflow(&self, i: usize) -> &Receiver {
        &self.subs[i]
    }

    /// Connection bytes delivered in order so far (the DATA_ACK).
    pub fn data_rcv_nxt(&self) -> u64 {
        self.data_rcv_nxt
    }

    /// Connection bytes held out of order above the DATA_ACK (what occupies the shared buffer).
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Connection bytes that arrived again at the data level in segments that were new on
    /// their own subflow: chiefly reinjected copies whose original also arrived (or the
    /// reverse). The subflow receivers' `duplicate_bytes` do not count these, so the
    /// connection's duplicate bytes are their sum plus this.
    pub fn duplicate_data_bytes(&self) -> u64 {
        self.duplicate_data_bytes
    }

    /// Data-level reordering waits.
    pub fn reorder_stats(&self) -> ReorderStats {
        self.reorder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receiver without subflows, to drive `hold` and `release_held` alone.
    fn empty() -> MptcpReceiver {
        MptcpReceiver {
            subs: Vec::new(),
            data_rcv_nxt: 0,
            held: VecDeque::new(),
            held_bytes: 0,
            rcvbuf: None,
            autotune: None,
            right_edge: u64::MAX,
            reorder: ReorderStats::default(),
            duplicate_data_bytes: 0,
            ack_start: 0,
            dirty: 0,
        }
    }

    #[test]
    fn hold_keeps_disjoint_sorted_ranges() {
        let mut r = empty();
        let t = SimTime(5);
        r.hold(300, 400, t);
        r.hold(100, 200, t);
        r.hold(150, 350, t); // fills 200..300 only
        r.hold(100, 400, t); // nothing new
        r.hold(500, 600, t);
        r.hold(450, 650, t); // 450..500 and 600..650
        let got: Vec<(u64, u64, u64)> = r.held.iter().map(|h| (h.start, h.end, h.pieces)).collect();
        // 200..300 joins the range below it, 600..650 likewise; 300..400 and 450..500 were
        // held before the bytes below them arrived.
        assert_eq!(got, vec![(100, 300, 2), (300, 400, 1), (450, 500, 1), (500, 650, 2)]);
        assert_eq!(r.held_bytes, 100 + 100 + 100 + 50 + 100 + 50);
    }

    /// Joined ranges keep every piece's wait: the delivery of a gap records each piece as it
    /// would have been recorded alone (count, summed wait, longest wait).
    #[test]
    fn joined_ranges_record_every_piece_wait() {
        let mut r = empty();
        r.hold(1000, 2000, SimTime(10));
        r.hold(2000, 3000, SimTime(40));
        r.hold(3000, 4000, SimTime(20)); // a reinjected piece can arrive before its neighbour
        r.hold(5000, 6000, SimTime(50));
        assert_eq!(r.held.len(), 2);
        r.data_rcv_nxt = 1000; // the gap below filled
        r.release_held(SimTime(100));
        assert_eq!(r.data_rcv_nxt, 4000);
        assert_eq!(r.held_bytes, 1000);
        assert_eq!(r.reorder.segments_delayed, 3);
        assert_eq!(r.reorder.total_delay_ns, 90 + 60 + 80);
        assert_eq!(r.reorder.max_delay_ns, 90);
    }
}
