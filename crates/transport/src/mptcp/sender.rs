//! The connection-level sender: data sequence numbers, the packet scheduler, DATA_ACK and the
//! connection window, reinjection after a subflow's RTO, stale subflows, and the coupling view
//! lent to the subflows' controllers.
//!
//! # Data sequence (RFC 8684 §3.3.1)
//!
//! The application's bytes `[0, offered)` are the data sequence numbers (DSNs). New data is
//! handed out in chunks of at most one MSS; each chunk becomes the next bytes of one subflow's
//! own stream and is recorded as a mapping (subflow sequence range → DSN range, [`DssMap`]).
//! The subflow's [`Sender`] keeps its segments' boundaries for every retransmission, so each
//! segment it sends is one chunk and carries that chunk's DSN.
//!
//! # Scheduler (pull)
//!
//! The connection hands a subflow a chunk only when it is joined, not stale, has no unsent data
//! of its own, nothing waiting for retransmission, and room in its window
//! (`pipe + MSS ≤ cwnd`); the subflow's own `poll_transmit` then applies pacing. Among such
//! subflows [`Scheduler::MinRtt`] takes the lowest smoothed RTT (a subflow without a sample
//! counts as the initial RTO; ties to the lower index), as Linux's default scheduler does;
//! [`Scheduler::RoundRobin`] takes the next one after the last chosen. Before any new data,
//! each poll lets the subflows send what is already theirs (retransmissions, tail loss probes,
//! chunks the pacer held back): a subflow's own losses come first. A subflow that would be
//! offered a chunk is not polled before the scheduler runs, since polling a sender with nothing
//! to send marks its delivery-rate samples application-limited. When data is waiting and a
//! subflow has no room, the subflow is told it is cwnd-limited ([`Sender::note_cwnd_limited`]),
//! or Reno-family controllers would never grow its window.
//!
//! # DATA_ACK and the connection window (RFC 8684 §3.3.2, §3.3.5)
//!
//! Every ACK carries the receiver's DATA_ACK (everything below it reached the application) and
//! the window above it. `data_una` is the highest DATA_ACK; the window's right edge
//! (DATA_ACK + window) only moves right, as §3.3.5 asks of the sender. New data stays below the
//! right edge and below `data_una + sndbuf` (the send buffer is released at the DATA_ACK, a
//! simplification of §3.3.6's "acknowledged at both levels"), with the subflow sender's silly
//! window rule (a chunk shorter than the MSS only when it ends the offered data or is at least
//! half the largest window). Before the first ACK the window is the receive buffer, which the
//! handshake would have advertised.
//!
//! # Reinjection and stale subflows (RFC 8684 §3.3.6; Linux's `stale_loss_cnt`)
//!
//! When a subflow's retransmission timer fires, the DSN ranges mapped to it that are not yet
//! DATA_ACKed are queued for reinjection (each mapping once), and the scheduler sends them on
//! another joined, non-stale subflow before any new data; they are not held back by the
//! connection window (they lie below the data sent). The subflow itself keeps retransmitting its
//! own segments: its receiver needs its sequence space filled, and RFC 8684 §3.3.6 keeps data
//! until both levels acknowledge it. `stale_loss_count` RTOs in a row, with no ACK advancing the
//! subflow's snd.una between them, make a subflow stale: the scheduler leaves it until such an
//! ACK revives it. Once every offered byte is DATA_ACKed the connection is complete and sends
//! nothing more, whatever its subflows still hold (Linux closes the subflows then).
//!
//! # Opportunistic retransmission and penalisation ([`MptcpConfig::opportunistic`], off by default)
//!
//! Raiciu et al., "How Hard Can It Be? Designing and Implementing a Deployable Multipath TCP",
//! NSDI 2012, §4.2: with a receive buffer smaller than the subflows' bandwidth-delay products
//! summed, a segment in flight on a slow subflow holds up the connection window's left edge
//! while a fast subflow, with room in its window, sits idle. When new data is waiting and the
//! connection window or send buffer holds it back, the scheduler's choice among the subflows
//! with room (as for new data) resends the segment at the DATA_ACK (at most one MSS, up to the
//! end of the mapping that carries it elsewhere) if another subflow carries it and this one does
//! not: an *opportunistic retransmission*, each subflow at most once per DATA_ACK value. Before
//! it, every other subflow carrying that segment is *penalised* ([`Sender::penalize`]: cwnd
//! halved, ssthresh set to the new cwnd) if its smoothed RTT is higher than the retransmitting
//! subflow's (a subflow without a sample counts as the initial RTO), it is in the Open state,
//! and it was not penalised within its own smoothed RTT. The srtt and Open conditions are the
//! out-of-tree Linux kernel's (multipath-tcp.org v0.9x, `mptcp_rcv_buf_optimization`); that
//! kernel also added a heuristic (v0.95: retransmit only when the slow subflow's srtt is above
//! four times the fast one's or its cwnd at most 4) not modelled here. Upstream Linux
//! (`net/mptcp`) has neither mechanism (mptcp_net-next issues #332 and #345 are open).
//!
//! # Coupling (RFC 6356 §3; [`ccarena_cc::coupled`])
//!
//! Before each ACK and timeout of subflow `i`, a coupled connection lends `i`'s controller the
//! [`SubflowView`] of every subflow, read from their senders into a reused vector. Bytes
//! acknowledged since a subflow's last congestion event and between its last two are tracked
//! from its delivered bytes and its counts of fast recoveries, RTOs and ECN reductions;
//! congestion events with nothing delivered between them (an RTO's backoffs) count as one.

use std::collections::VecDeque;

use ccarena_cc::coupled::{Coupling, SubflowView};
use ccarena_cc::{CongestionControl, Duration, SimTime};

use super::dss_map::DssMap;
use super::{DssAck, DssData, MptcpConfig, Scheduler, SubflowStats};
use crate::rtt::RtoRule;
use crate::sender::{AckOutcome, Sender};

/// One subflow as the connection keeps it.
#[derive(Debug)]
struct Subflow {
    sender: Sender,
    /// When it joins (subflow 0: the connection's start).
    start: SimTime,
    joined: bool,
    stale: bool,
    /// RTOs since an ACK last advanced the subflow's snd.una.
    consecutive_rtos: u64,
    map: DssMap,
    bytes_scheduled: u64,
    bytes_reinjected: u64,
    /// `sender.delivered_bytes()` and its count of congestion events when last looked at.
    delivered_seen: u64,
    events_seen: u64,
    acked_since_loss_bytes: u64,
    acked_between_losses_bytes: u64,
    /// Opportunistic retransmissions sent on it: segments, bytes.
    opp_retransmits: u64,
    opp_bytes: u64,
    /// Times its cwnd was halved, and the last time.
    penalisations: u64,
    last_penalised: Option<SimTime>,
    /// Its handshake's round trip, given before it joined: the first RTT sample once it does.
    pending_handshake_rtt: Option<Duration>,
}

/// A DSN range queued for reinjection, and the subflow it came from.
#[derive(Clone, Copy, Debug)]
struct Reinjection {
    start: u64,
    end: u64,
    from: usize,
}

/// The sending half of an MPTCP connection (see the module documentation).
#[derive(Debug)]
pub struct MptcpSender {
    cfg: MptcpConfig,
    mss: u64,
    subs: Vec<Subflow>,
    all_joined: bool,
    /// Bytes the application has offered: DSNs `[0, offered)`.
    offered: u64,
    app_stopped: bool,
    /// The next DSN never handed to any subflow.
    data_nxt: u64,
    /// The highest DATA_ACK.
    data_una: u64,
    /// DATA_ACK + window, the highest seen (u64::MAX: unlimited).
    right_edge: u64,
    /// The largest window seen, for silly window avoidance.
    max_wnd: u64,
    sndbuf: u64,
    reinject: VecDeque<Reinjection>,
    /// Round-robin: the subflow after the last one chosen.
    rr_next: usize,
    /// Where the next poll of the subflows' own transmissions starts (fairness between them).
    poll_start: usize,
    /// Subflows that may have something of their own to send: set when an ACK, a timer or a
    /// join touches a subflow, cleared when its sender, polled, has nothing. A subflow's own
    /// transmissions change only then, so the others are not polled again on every packet
    /// (with 8 subflows that polling was most of a packet's cost).
    dirty: Mask,
    /// Subflows the scheduler found not eligible ([`MptcpSender::eligible`]) and that nothing
    /// has touched since: an ACK, a timer, a join or a segment sent is all that can make a
    /// subflow eligible, and each clears its bit, so the scheduler skips these without reading
    /// their senders (8 of them on every packet of a bulk connection otherwise).
    ineligible: Mask,
    /// Reused for the coupling view.
    views: Vec<SubflowView>,
    /// The DATA_ACK whose segment opportunistic retransmission last looked at, and the
    /// subflows already considered for it (each at most once per DATA_ACK value).
    opp_head: u64,
    opp_tried: Mask,
}

/// Bitmask of subflows (MAX_SUBFLOWS = 32 fits).
type Mask = u32;

impl MptcpSender {
    /// A connection starting at `now` whose subflow `i` uses controller `ccs[i]`
    /// (`ccs.len() == cfg.subflows`). Subflow 0 joins at `now`, the others at
    /// `now + cfg.join_delay`; each subflow's sender is built with its join time (so its
    /// controller's `init` sees it), with unlimited flow control of its own.
    ///
    /// # Panics
    /// If `cfg` fails [`MptcpConfig::validate`] or `ccs` has the wrong length.
    pub fn new(cfg: MptcpConfig, ccs: Vec<Box<dyn CongestionControl>>, now: SimTime) -> MptcpSender {
        if let Err(e) = cfg.validate() {
            panic!("invalid MptcpConfig: {e}");
        }
        assert_eq!(ccs.len(), cfg.subflows as usize, "one controller per subflow");
        let mut scfg = cfg.sender;
        scfg.initial_rwnd_bytes = None;
        scfg.sndbuf_bytes = None;
        let subs: Vec<Subflow> = ccs
            .into_iter()
            .enumerate()
            .map(|(i, cc)| {
                let start = if i == 0 { now } else { now + cfg.join_delay };
                Subflow {
                    sender: Sender::new(scfg, cc, start),
                    start,
                    joined: i == 0,
                    stale: false,
                    consecutive_rtos: 0,
                    map: DssMap::default(),
                    bytes_scheduled: 0,
                    bytes_reinjected: 0,
                    delivered_seen: 0,
                    events_seen: 0,
                    acked_since_loss_bytes: 0,
                    acked_between_losses_bytes: 0,
                    opp_retransmits: 0,
                    opp_bytes: 0,
                    penalisations: 0,
                    last_penalised: None,
                    pending_handshake_rtt: None,
                }
            })
            .collect();
        let wnd = cfg.rcvbuf_bytes.unwrap_or(u64::MAX);
        let mut s = MptcpSender {
            cfg,
            mss: cfg.sender.mss_bytes as u64,
            all_joined: subs.len() == 1,
            views: vec![SubflowView::default(); subs.len()],
            subs,
            offered: 0,
            app_stopped: false,
            data_nxt: 0,
            data_una: 0,
            right_edge: wnd,
            max_wnd: wnd,
            sndbuf: cfg.sndbuf_bytes.unwrap_or(u64::MAX),
            reinject: VecDeque::new(),
            rr_next: 0,
            poll_start: 0,
            dirty: 0,
            ineligible: 0,
            opp_head: 0,
            opp_tried: 0,
        };
        s.join_due(now);
        for i in 0..s.subs.len() {
            s.refresh_view(i);
        }
        s
    }

    /// The application offers `bytes` more bytes (saturating); reopens a stopped stream.
    pub fn app_write(&mut self, bytes: u64) {
        self.offered = self.offered.saturating_add(bytes);
        self.app_stopped = false;
    }

    /// The application offers nothing beyond the data already handed to a subflow; that data
    /// is still delivered.
    pub fn app_stop(&mut self) {
        self.offered = self.data_nxt;
        self.app_stopped = true;
    }

    /// Every byte offered has been DATA_ACKed (and something was offered, or the application
    /// stopped).
    pub fn is_complete(&self) -> bool {
        self.data_una >= self.offered && (self.offered > 0 || self.app_stopped)
    }

    /// Give back the storage kept for data in flight once the connection is complete
    /// ([`MptcpSender::is_complete`]): each finished subflow's ([`Sender::release_storage`]),
    /// emptied mapping and reinjection lists; nothing before. Changes no behaviour.
    pub fn release_storage(&mut self) {
        if !self.is_complete() {
            return;
        }
        for s in &mut self.subs {
            s.sender.release_storage();
            s.map.release_storage();
        }
        if self.reinject.is_empty() {
            self.reinject = VecDeque::new();
        }
    }

    /// Every subflow's RTO follows `rule` ([`Sender::set_rto_rule`]): each subflow is a TCP
    /// connection with its own RTT estimator (RFC 8684 §3.2), as Linux's are. Call before the
    /// first RTT sample; later calls are ignored.
    pub fn set_rto_rule(&mut self, rule: RtoRule) {
        for s in &mut self.subs {
            s.sender.set_rto_rule(rule);
        }
    }

    /// The round trip of each subflow's handshake (MP_CAPABLE for subflow 0, MP_JOIN for the
    /// others, RFC 8684 §3.1–3.2), one entry per subflow (`Duration::ZERO`: none), as its first
    /// RTT sample ([`Sender::on_handshake_rtt`]): at once for a joined subflow, when it joins for
    /// the others, as a Linux host takes its SYN/SYN-ACK round trip on every subflow.
    ///
    /// # Panics
    /// If `rtts` does not have one entry per subflow.
    pub fn on_handshake_rtts(&mut self, rtts: &[Duration], now: SimTime) {
        assert_eq!(rtts.len(), self.subs.len(), "one handshake RTT per subflow");
        for (i, &rtt) in rtts.iter().enumerate() {
            let s = &mut self.subs[i];
            if s.joined {
                s.sender.on_handshake_rtt(rtt, now);
                self.refresh_view(i);
            } else if rtt > Duration::ZERO {
                s.pending_handshake_rtt = Some(rtt);
            }
        }
    }

    /// Mark the subflows whose join time has come as joined.
    fn join_due(&mut self, now: SimTime) {
        if self.all_joined {
            return;
        }
        let mut all = true;
        for (i, s) in self.subs.iter_mut().enumerate() {
            if !s.joined && now >= s.start {
                s.joined = true;
                if let Some(rtt) = s.pending_handshake_rtt.take() {
                    s.sender.on_handshake_rtt(rtt, now);
                }
                self.dirty |= 1 << i;
                self.ineligible &= !(1 << i);
                self.views[i].active = !s.stale;
            }
            all &= s.joined;
        }
        self.all_joined = all;
    }

    /// Subflow `i` may be handed a chunk now (see the module documentation).
    #[inline]
    fn eligible(&self, i: usize) -> bool {
        let s = &self.subs[i];
        let tx = &s.sender;
        s.joined
            && !s.stale
            && tx.snd_nxt() == tx.bytes_offered()
            && tx.pending_retransmit_bytes() == 0
            && tx.in_flight_bytes() + self.mss <= tx.cwnd().cwnd_bytes
    }

    /// Length of the next chunk of new data, 0 if none may go now (nothing offered, or the
    /// connection window or send buffer holds it back).
    fn new_chunk_len(&self) -> u64 {
        let want = self.offered.saturating_sub(self.data_nxt).min(self.mss);
        if want == 0 {
            return 0;
        }
        let limit = self.right_edge.min(self.data_una.saturating_add(self.sndbuf));
        let len = want.min(limit.saturating_sub(self.data_nxt));
        // Silly window avoidance as the subflow sender's (RFC 9293 §3.8.6.2.1, Fs = 1/2).
        let max_window = self.max_wnd.min(self.sndbuf);
        let sendable = len == want || (len > 0 && len.saturating_mul(2) >= max_window.min(u64::MAX / 2));
        if sendable {
            len
        } else {
            0
        }
    }

    /// Drop queued reinjections the DATA_ACK has passed; true if any is left.
    fn prune_reinjections(&mut self) -> bool {
        while self.reinject.front().is_some_and(|r| r.end <= self.data_una) {
            self.reinject.pop_front();
        }
        !self.reinject.is_empty()
    }

    /// Connection data waiting for a subflow: a reinjection or a chunk of new data.
    fn data_waiting(&mut self) -> bool {
        self.prune_reinjections() || self.new_chunk_len() > 0
    }

    /// Subflow `i` was touched (an ACK, a timer, a join): poll it again, and let the scheduler
    /// look at it again.
    fn touch(&mut self, i: usize) {
        self.dirty |= 1 << i;
        self.ineligible &= !(1 << i);
    }

    /// Poll subflow `i`'s sender; a segment sent may make it eligible again.
    fn poll_subflow(&mut self, i: usize, now: SimTime) -> Option<crate::segment::DataSegment> {
        let seg = self.subs[i].sender.poll_transmit(now)?;
        self.ineligible &= !(1 << i);
        Some(seg)
    }

    /// The scheduler's choice among the eligible subflows not in `excluded`. Remembers the
    /// subflows it finds not eligible (`ineligible`) and skips them until touched.
    fn select(&mut self, excluded: Mask) -> Option<usize> {
        #[cfg(debug_assertions)]
        for i in (0..self.subs.len()).filter(|&i| self.ineligible & (1 << i) != 0) {
            debug_assert!(!self.eligible(i), "subflow {i} became eligible untouched");
        }
        let n = self.subs.len();
        let skip = excluded | self.ineligible;
        let mut found_ineligible: Mask = 0;
        let mut ok = |i: usize| {
            if skip & (1 << i) != 0 {
                return false;
            }
            let yes = self.eligible(i);
            if !yes {
                found_ineligible |= 1 << i;
            }
            yes
        };
        let choice = match self.cfg.scheduler {
            Scheduler::MinRtt => {
                let mut best: Option<(ccarena_cc::Duration, usize)> = None;
                // The subflows not skipped, in index order, one set bit at a time.
                let mut left = !skip & (Mask::MAX >> (Mask::BITS as usize - n));
                while left != 0 {
                    let i = left.trailing_zeros() as usize;
                    left &= left - 1;
                    if !ok(i) {
                        continue;
                    }
                    let rtt = self.subs[i].sender.srtt().unwrap_or(self.cfg.sender.initial_rto);
                    if best.is_none_or(|(b, _)| rtt < b) {
                        best = Some((rtt, i));
                    }
                }
                best.map(|(_, i)| i)
            }
            Scheduler::RoundRobin => (0..n).map(|k| (self.rr_next + k) % n).find(|&i| ok(i)),
        };
        self.ineligible |= found_ineligible;
        choice
    }

    /// Hand subflow `i` its next chunk: a queued reinjection from another subflow, else new
    /// data. Returns false when there is nothing for it.
    fn assign_chunk(&mut self, i: usize) -> bool {
        let data_una = self.data_una;
        let pos = self.reinject.iter().position(|r| r.from != i && r.end > data_una);
        let (dsn, len, reinjected) = if let Some(p) = pos {
            let r = &mut self.reinject[p];
            let start = r.start.max(data_una);
            let end = r.end.min(start + self.mss);
            if end >= r.end {
                self.reinject.remove(p);
            } else {
                r.start = end;
            }
            (start, end - start, true)
        } else {
            let len = self.new_chunk_len();
            if len == 0 {
                return false;
            }
            let dsn = self.data_nxt;
            self.data_nxt += len;
            (dsn, len, false)
        };
        let s = &mut self.subs[i];
        s.map.push(s.sender.bytes_offered(), dsn, len as u32);
        s.sender.app_write(len);
        if reinjected {
            s.bytes_reinjected += len;
        } else {
            s.bytes_scheduled += len;
        }
        true
    }

    /// Wrap subflow `i`'s segment with its DSS mapping.
    fn wrap(&self, i: usize, seg: crate::segment::DataSegment) -> DssData {
        let dsn = self.subs[i]
            .map
            .dsn_of(seg.seq, seg.len)
            .expect("every subflow segment lies inside one DSS mapping");
        DssData { subflow: i as u8, seg, dsn }
    }

    /// The next segment to send at `now`, if any: call until `None` after every
    /// [`MptcpSender::on_ack`], [`MptcpSender::handle_timeout`] and
    /// [`MptcpSender::app_write`]. Nothing once the connection is complete.
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<DssData> {
        if self.is_complete() {
            return None;
        }
        self.join_due(now);
        let n = self.subs.len();
        let waiting = self.data_waiting();
        // 1. What the subflows already hold: retransmissions, probes, paced chunks.
        let mut skipped: Mask = 0;
        // The dirty, joined subflows in turn from `poll_start` (wrapping), one bit at a time:
        // no pass over the clean ones (this loop runs on every packet of the connection).
        let joined = if self.all_joined {
            Mask::MAX
        } else {
            self.subs.iter().enumerate().fold(0, |m, (i, s)| if s.joined { m | 1 << i } else { m })
        };
        let candidates = self.dirty & joined;
        let from_start = candidates & (Mask::MAX << self.poll_start);
        for mut turn in [from_start, candidates & !from_start] {
            while turn != 0 {
                let i = turn.trailing_zeros() as usize;
                turn &= turn - 1;
                if waiting && self.eligible(i) {
                    skipped |= 1 << i;
                    continue;
                }
                if let Some(seg) = self.poll_subflow(i, now) {
                    self.poll_start = (i + 1) % n;
                    return Some(self.wrap(i, seg));
                }
                self.dirty &= !(1 << i);
            }
        }
        if !waiting {
            return if self.cfg.opportunistic { self.opportunistic_retransmit(now) } else { None };
        }
        // 2. The scheduler hands out reinjections, then new data.
        let mut excluded: Mask = 0;
        while let Some(i) = self.select(excluded) {
            if !self.assign_chunk(i) {
                excluded |= 1 << i;
                continue;
            }
            if self.cfg.scheduler == Scheduler::RoundRobin {
                self.rr_next = (i + 1) % n;
            }
            if let Some(seg) = self.poll_subflow(i, now) {
                return Some(self.wrap(i, seg));
            }
            // The pacer holds the chunk: the subflow sends it at its release time.
            skipped &= !(1 << i);
            self.touch(i);
            if !self.data_waiting() {
                break;
            }
        }
        // 3. Subflows skipped in step 1 that got nothing may still hold a probe.
        for i in (0..n).filter(|i| skipped & (1 << i) != 0) {
            if let Some(seg) = self.poll_subflow(i, now) {
                return Some(self.wrap(i, seg));
            }
            self.dirty &= !(1 << i);
        }
        // 4. Data is still waiting: the full subflows are cwnd-limited.
        if self.data_waiting() {
            for s in self.subs.iter_mut().filter(|s| s.joined && !s.stale) {
                let tx = &mut s.sender;
                if tx.in_flight_bytes() + self.mss > tx.cwnd().cwnd_bytes {
                    tx.note_cwnd_limited();
                }
            }
        }
        None
    }

    /// Opportunistic retransmission with penalisation (see the module documentation): the
    /// segment to send, if the connection window blocks new data and a subflow with room can
    /// resend the one at the DATA_ACK.
    fn opportunistic_retransmit(&mut self, now: SimTime) -> Option<DssData> {
        let head = self.data_una;
        let blocked = self.offered > self.data_nxt && self.new_chunk_len() == 0;
        if self.subs.len() < 2 || !blocked || head >= self.data_nxt {
            return None;
        }
        if self.opp_head != head {
            self.opp_head = head;
            self.opp_tried = 0;
        }
        // The subflows whose unacknowledged mappings carry the head, and where that mapping ends.
        let mut holders: Mask = 0;
        let mut end = head;
        for (j, s) in self.subs.iter().enumerate() {
            if let Some(e) = s.map.dsn_end_carrying(head) {
                holders |= 1 << j;
                end = end.max(e);
            }
        }
        if holders == 0 {
            return None;
        }
        // A subflow that carries the head already is not asked again for it.
        self.opp_tried |= holders;
        let i = self.select(self.opp_tried)?;
        self.opp_tried |= 1 << i;
        let initial_rto = self.cfg.sender.initial_rto;
        let srtt_of = |s: &Subflow| s.sender.srtt().unwrap_or(initial_rto);
        let my_rtt = srtt_of(&self.subs[i]);
        for j in (0..self.subs.len()).filter(|j| holders & (1 << j) != 0) {
            let s = &self.subs[j];
            let rtt = srtt_of(s);
            let rested = s.last_penalised.is_none_or(|t| now >= t + rtt);
            if my_rtt < rtt && s.sender.ca_state() == ccarena_cc::CaState::Open && rested {
                let s = &mut self.subs[j];
                s.sender.penalize();
                self.ineligible &= !(1 << j);
                let s = &mut self.subs[j];
                s.penalisations += 1;
                s.last_penalised = Some(now);
                self.refresh_view(j);
            }
        }
        let len = (end - head).min(self.mss);
        let s = &mut self.subs[i];
        s.map.push(s.sender.bytes_offered(), head, len as u32);
        s.sender.app_write(len);
        s.opp_retransmits += 1;
        s.opp_bytes += len;
        self.touch(i);
        if self.cfg.scheduler == Scheduler::RoundRobin {
            self.rr_next = (i + 1) % self.subs.len();
        }
        // The pacer may hold it: the subflow then sends it at its release time.
        let seg = self.poll_subflow(i, now)?;
        Some(self.wrap(i, seg))
    }

    /// Lend subflow `i`'s controller the view of every subflow (coupled connections only).
    /// Each entry is kept current by [`MptcpSender::refresh_view`] after every event of its
    /// subflow, so an ACK reads no other subflow's sender.
    fn lend_view(&mut self, i: usize) {
        if self.cfg.coupling == Coupling::Uncoupled {
            return;
        }
        self.subs[i].sender.set_coupling_view(&self.views, i);
    }

    /// Bring subflow `i`'s entry of the coupling view up to date: after its ACKs, timers, join
    /// and change of staleness, the only events that change its window, RTT, loss intervals or
    /// activity.
    fn refresh_view(&mut self, i: usize) {
        let s = &self.subs[i];
        self.views[i] = SubflowView {
            cwnd_bytes: s.sender.cwnd().cwnd_bytes,
            mss_bytes: self.mss,
            srtt: s.sender.srtt(),
            acked_since_loss_bytes: s.acked_since_loss_bytes,
            acked_between_losses_bytes: s.acked_between_losses_bytes,
            active: s.joined && !s.stale,
        };
    }

    /// After an ACK or timeout of subflow `i`: bytes delivered since its last congestion event,
    /// and the interval closed by a new one.
    fn note_delivery(&mut self, i: usize) {
        let s = &mut self.subs[i];
        let delivered = s.sender.delivered_bytes();
        s.acked_since_loss_bytes += delivered - s.delivered_seen;
        s.delivered_seen = delivered;
        let st = s.sender.stats();
        let events = st.fast_recoveries + st.rto_count + st.ecn_reductions;
        if events != s.events_seen {
            s.events_seen = events;
            if s.acked_since_loss_bytes > 0 {
                s.acked_between_losses_bytes = s.acked_since_loss_bytes;
                s.acked_since_loss_bytes = 0;
            }
        }
    }

    /// An ACK arrived on `ack.subflow`; returns that subflow sender's outcome (the default for
    /// an ACK of a subflow that does not exist or has not joined).
    pub fn on_ack(&mut self, now: SimTime, ack: &DssAck) -> AckOutcome {
        self.join_due(now);
        let i = ack.subflow as usize;
        if i >= self.subs.len() || !self.subs[i].joined {
            return AckOutcome::default();
        }
        // DATA_ACK (§3.3.2); a DATA_ACK beyond the data sent is bogus and capped.
        let data_ack = ack.data_ack.min(self.data_nxt);
        self.data_una = self.data_una.max(data_ack);
        // §3.3.5: the right edge moves only right.
        self.right_edge = self.right_edge.max(data_ack.saturating_add(ack.data_rwnd_bytes));
        self.max_wnd = self.max_wnd.max(ack.data_rwnd_bytes);
        self.lend_view(i);
        self.touch(i);
        let s = &mut self.subs[i];
        let out = s.sender.on_ack(now, &ack.ack);
        if out.bytes_newly_acked > 0 {
            s.consecutive_rtos = 0;
            s.stale = false;
        }
        s.map.trim(s.sender.snd_una());
        self.note_delivery(i);
        self.refresh_view(i);
        out
    }

    /// When [`MptcpSender::handle_timeout`] (or, for a pacing release, `poll_transmit`) is next
    /// due: the earliest subflow timer and join; `None` once complete.
    pub fn poll_timeout(&self) -> Option<SimTime> {
        if self.is_complete() {
            return None;
        }
        self.subs
            .iter()
            .filter_map(|s| if s.joined { s.sender.poll_timeout() } else { Some(s.start) })
            .min()
    }

    /// Act on every due timer: joins, then each subflow's timers (an RTO queues the subflow's
    /// unacknowledged data for reinjection and may make it stale). Nothing once complete.
    pub fn handle_timeout(&mut self, now: SimTime) {
        if self.is_complete() {
            return;
        }
        self.join_due(now);
        for i in 0..self.subs.len() {
            let s = &self.subs[i];
            if !s.joined || s.sender.poll_timeout().is_none_or(|t| t > now) {
                continue;
            }
            let rtos_before = s.sender.stats().rto_count;
            self.lend_view(i);
            self.touch(i);
            self.subs[i].sender.handle_timeout(now);
            let rtos = self.subs[i].sender.stats().rto_count - rtos_before;
            if rtos > 0 {
                self.on_subflow_rto(i, rtos);
            }
            self.note_delivery(i);
            self.refresh_view(i);
        }
    }

    /// Subflow `i`'s retransmission timer fired `rtos` times.
    fn on_subflow_rto(&mut self, i: usize, rtos: u64) {
        let several = self.subs.len() > 1;
        let s = &mut self.subs[i];
        s.consecutive_rtos += rtos;
        if s.consecutive_rtos >= self.cfg.stale_loss_count as u64 {
            s.stale = true;
        }
        if several {
            let q = &mut self.reinject;
            s.map.take_for_reinjection(self.data_una, |start, end| q.push_back(Reinjection { start, end, from: i }));
        }
    }

    /// Subflow `i`'s sender.
    ///
    /// # Panics
    /// If `i >= subflow_count()`.
    pub fn subflow(&self, i: usize) -> &Sender {
        &self.subs[i].sender
    }

    /// Subflows (joined or not).
    pub fn subflow_count(&self) -> usize {
        self.subs.len()
    }

    /// Subflow `i`'s connection-level facts.
    ///
    /// # Panics
    /// If `i >= subflow_count()`.
    pub fn subflow_stats(&self, i: usize) -> SubflowStats {
        let s = &self.subs[i];
        SubflowStats {
            bytes_scheduled: s.bytes_scheduled,
            bytes_reinjected: s.bytes_reinjected,
            stale: s.stale,
            joined: s.joined,
            opportunistic_retransmits: s.opp_retransmits,
            opportunistic_bytes: s.opp_bytes,
            penalisations: s.penalisations,
        }
    }

    /// The highest DATA_ACK received.
    pub fn data_una(&self) -> u64 {
        self.data_una
    }

    /// The next DSN never handed to a subflow (one past the highest DSN sent).
    pub fn data_nxt(&self) -> u64 {
        self.data_nxt
    }

    /// Bytes the application has offered.
    pub fn bytes_offered(&self) -> u64 {
        self.offered
    }

    /// The window the connection's SYN-ACK offered, bytes: the right edge before the first
    /// DATA_ACK (with the receiver's autotuning on, `RcvBufAutotuning::initial_window`; the
    /// handshake is not modelled). Call before any data is sent.
    pub fn set_initial_rwnd(&mut self, rwnd_bytes: u64) {
        debug_assert_eq!(self.data_nxt, 0, "the initial window is set before data");
        self.right_edge = rwnd_bytes;
        self.max_wnd = rwnd_bytes;
    }

    /// The connection window's right edge (DATA_ACK + window, the highest seen), DSN;
    /// `u64::MAX` when unlimited.
    pub fn data_right_edge(&self) -> u64 {
        self.right_edge
    }

    /// Connection bytes queued for reinjection and not yet sent.
    pub fn reinjection_queued_bytes(&self) -> u64 {
        self.reinject.iter().map(|r| r.end.saturating_sub(r.start.max(self.data_una))).sum()
    }

    /// DSS mappings held by subflow `i` (its data not yet acknowledged on it).
    pub fn subflow_mappings(&self, i: usize) -> usize {
        self.subs[i].map.len()
    }

    /// The configuration.
    pub fn config(&self) -> &MptcpConfig {
        &self.cfg
    }
}
