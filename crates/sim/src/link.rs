//! A directed link: an egress queue, a transmitter that serializes at the link rate, and a pipe
//! that delays by the propagation delay (htsim's Queue + Pipe).
//!
//! The link is advanced lazily: a packet leaves the queue when the transmitter frees up, and that
//! instant is fully determined by the queue's contents, so the link computes the departures that
//! happened since it was last touched whenever it is touched again (an arrival, a sample, a
//! pipe-head event). Packets in the pipe arrive in FIFO order, so the link needs exactly one
//! pending event, for the head of its pipe, not one per packet in flight.
//!
//! Scheduled changes ([`Link::apply_change`]) fit the lazy design: the link first computes every
//! departure that started before the change with the old values, then switches; only the packet
//! on the wire may need its pipe arrival recomputed (a new delay), and the engine reschedules
//! the link's one event if the head's arrival moved earlier.

use std::collections::VecDeque;

use ccarena_cc::{Duration, SimTime};
use ccarena_link::qdisc::{idle_ns, Limit};
use ccarena_link::wire::{transmission_ns, WireLoss};
use ccarena_link::{Aqm, AqmMut, Impairment, Qdisc, SplitMix64, TraceTransmitter, WireImpairments};

use crate::fifo::Fifo;
use crate::packet::Packet;
use crate::pcap::{CaptureStats, LinkCapture};
use crate::queue::Verdict;
use crate::spec::LinkChangeSpec;

/// Cumulative per-link counters. Conservation: `packets_in + packets_duplicated =
/// packets_delivered + packets_dropped_queue + packets_lost_wire + packets_dropped_down + queued +
/// in pipe` at every instant (a duplicate's copy is delivered, or lost with the link, too).
///
/// The fields every packet updates come first (`repr(C)` keeps the order): with the link's
/// other per-packet fields they share the link's first cache lines ([`Link`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct LinkCounters {
    /// Packets offered to the queue.
    pub packets_in: u64,
    /// Bytes offered to the queue.
    pub bytes_in: u64,
    /// Packets that reached the far end.
    pub packets_delivered: u64,
    /// Packets that left the queue (started serialization).
    pub departures: u64,
    /// Bytes serialized.
    pub bytes_transmitted: u64,
    /// Sum of queueing delays of departed packets, ns.
    pub sojourn_total_ns: u64,
    /// Sum of serialization times of departed packets (the one on the wire in full), ns.
    pub busy_ns: u64,
    /// Packets the queue discipline dropped: refused at arrival (forced and early drops), dropped
    /// at dequeue (CoDel), or dropped from the fattest flow on overflow (FQ-CoDel, FQ).
    pub packets_dropped_queue: u64,
    /// Of `packets_dropped_queue`, the AQM's own (unforced) drops: RED's early drops, CoDel's
    /// and PIE's drops.
    pub packets_dropped_early: u64,
    /// Packets the queue discipline admitted with CE set (ECN marking; they are still delivered).
    pub packets_marked: u64,
    /// Packets serialized but lost on the wire (random loss).
    pub packets_lost_wire: u64,
    /// Packets lost to the link being down: queued or on the wire when it went down, or offered
    /// while it was down.
    pub packets_dropped_down: u64,
    /// Packets the wire duplicated (each delivered twice; `ccarena_link::impair`).
    pub packets_duplicated: u64,
    /// Packets the wire held back so that later ones overtook them (reordered; a duplicated one
    /// counts once).
    pub packets_reordered: u64,
}

/// One direction of a link.
///
/// Laid out for the per-packet path (`repr(C)`, fields in declaration order, each link on its
/// own cache lines): what an arrival, a departure on a plain wire and a delivery touch comes
/// first — the pipe, the transmitter's clock, the event bookkeeping, then the serialization
/// cache and the counters a packet bumps — so a link the caches have not seen for a while (one
/// of 40,000 access links at 10,000 flows) costs its first four lines, the packet in its pipe
/// included, not the scattered half-dozen of the compiler's own order plus the pipe's buffer. The queue discipline follows; what only a wire with loss, jitter, a
/// trace, impairments or a capture uses comes last.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Link {
    /// Packets serialized and not yet arrived, with their arrival times (a packet alone in the
    /// pipe stays inline: [`Fifo`]).
    pipe: Fifo<(SimTime, Packet)>,
    tx_free_at: SimTime,
    last_arrival: SimTime,
    /// Time of this link's earliest pending arrival event in the heap (`NEVER` if none).
    pub scheduled_at: SimTime,
    /// Receiving node.
    pub to: u32,
    /// False while a scheduled change holds the link down.
    up: bool,
    /// The wire only delays and nothing is captured: no rate trace, no capture, no jitter, no
    /// random loss, no duplication or reordering (none draws anything then), so
    /// [`Link::transmit`] takes its short path. Kept by [`Link::update_plain_wire`] whenever one
    /// of them changes.
    plain_wire: bool,
    /// The last packet to start serialization went into the pipe (was not lost on the wire), so
    /// it is the pipe's back.
    last_in_pipe: bool,
    /// `qdisc.is_empty()`, and `qdisc.empty_and_admits_all()`, as of the discipline's last
    /// change ([`Link::sync_queue`] after every call that may change them): read on every
    /// packet, they spare the per-packet path a visit to the discipline's own cache lines.
    queue_empty: bool,
    /// See `queue_empty`.
    queue_takes_any: bool,
    /// The last (size in bytes, serialization time) computed at the current rate: a direction
    /// carries mostly one size (data one way, ACKs the other), and the exact division is costly.
    serialization_cache: (u64, Duration),
    delay: Duration,
    /// The jitter the last packet put in the pipe got (kept when a delay change recomputes its
    /// arrival).
    last_jitter: Duration,
    /// Packets held back to be overtaken (reordered), in their own FIFO: all are held by the
    /// same extra delay, so they keep their order among themselves. Every delivery checks it
    /// is empty, so it sits with the per-packet fields.
    held: VecDeque<(SimTime, Packet)>,
    counters: LinkCounters,
    /// The egress queue (waiting packets only; the one on the wire has left it).
    qdisc: Qdisc<Packet>,
    /// Sending node.
    pub from: u32,
    rate_bps: u64,
    loss: WireLoss,
    /// When set, the transmitter follows this trace instead of `rate_bps` ([`Link::with_trace`]).
    trace: Option<TraceTransmitter>,
    /// Forwarding jitter ([`Link::with_jitter`]), if any.
    jitter: Option<Jitter>,
    /// Duplication and reordering ([`Link::with_impairments`]).
    impair: WireImpairments,
    /// What the wire did to the last packet put in the pipe.
    last_impair: Impairment,
    /// The latest arrival of a held-back packet (the held FIFO's back).
    held_last: SimTime,
    /// Packet capture ([`Link::start_capture`]): every packet that starts serialization is
    /// recorded. A captured link never takes the plain-wire path, so `None` (the usual case)
    /// costs a plain wire nothing and any other one test per packet.
    capture: Option<Box<LinkCapture>>,
}

/// A link's forwarding jitter: its stream, the next draw (kept one ahead so
/// [`Link::next_arrival`] stays exact), and its range as a fraction of a serialization time.
#[derive(Debug)]
struct Jitter {
    rng: SplitMix64,
    next: u64,
    fraction: f64,
}

impl Link {
    /// A link from `from` to `to` with the given rate (bits/s), delay, loss probability, queue
    /// discipline and wire-loss RNG stream.
    pub fn new(from: u32, to: u32, rate_bps: u64, delay: Duration, loss: f64, qdisc: Qdisc<Packet>, rng: SplitMix64) -> Link {
        let mut link = Link {
            from,
            to,
            rate_bps,
            delay,
            loss: WireLoss::new(loss, rng),
            qdisc,
            tx_free_at: SimTime::ZERO,
            pipe: Fifo::new(),
            last_arrival: SimTime::ZERO,
            last_in_pipe: false,
            queue_empty: true,
            queue_takes_any: false,
            scheduled_at: SimTime::NEVER,
            serialization_cache: (0, Duration::ZERO),
            counters: LinkCounters::default(),
            up: true,
            trace: None,
            jitter: None,
            last_jitter: Duration::ZERO,
            impair: WireImpairments::none(),
            last_impair: Impairment::default(),
            held: VecDeque::new(),
            held_last: SimTime::ZERO,
            plain_wire: false,
            capture: None,
        };
        link.update_plain_wire();
        link.sync_queue();
        link
    }

    /// Refresh `queue_empty` and `queue_takes_any` from the discipline.
    #[inline(always)]
    fn sync_queue(&mut self) {
        self.queue_empty = self.qdisc.is_empty();
        self.queue_takes_any = self.qdisc.empty_and_admits_all();
    }

    /// Recompute `plain_wire` after the trace, capture, jitter, loss or impairments changed. The
    /// loss test mirrors [`WireLoss::lose`], which draws only for a probability above 0.
    fn update_plain_wire(&mut self) {
        self.plain_wire = self.trace.is_none()
            && self.capture.is_none()
            && self.jitter.is_none()
            && self.loss.probability().partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
            && !self.impair.active();
    }

    /// This link with duplication and reordering on the wire (`ccarena_link::impair`): a
    /// surviving packet may arrive twice (the copy right behind it) or be held back by the
    /// reorder delay so later packets overtake it.
    pub fn with_impairments(mut self, impair: WireImpairments) -> Link {
        self.impair = impair;
        self.update_plain_wire();
        self
    }

    /// This link with forwarding jitter: each packet reaches the far end a random time after its
    /// propagation delay, uniform in [0, `fraction` × its own serialization time at the link's
    /// rate), never before the packet ahead of it (no reordering); `fraction` in [0, 1]. Real hosts and routers vary the instant
    /// they forward a packet; a simulator that does not lets competing flows whose paths have
    /// equal delays and rates lock their packets into fixed phases at a DropTail queue, so the
    /// tail drop hits one flow every time (Floyd & Jacobson, "On Traffic Phase Effects in
    /// Packet-Switched Gateways", 1992: the discrimination goes away with a random processing
    /// time of up to one service time). Draws come from `rng` alone.
    pub fn with_jitter(mut self, mut rng: SplitMix64, fraction: f64) -> Link {
        let next = rng.next_u64();
        self.jitter = Some(Jitter { rng, next, fraction });
        self.update_plain_wire();
        self
    }

    /// The jitter the next packet serialized in `serialization` gets (zero without jitter): the
    /// pending draw scaled to [0, fraction × serialization).
    #[inline]
    fn next_jitter(&self, serialization: Duration) -> Duration {
        match &self.jitter {
            Some(j) => {
                let full = (u128::from(j.next) * u128::from(serialization.as_nanos())) >> 64;
                Duration((full as f64 * j.fraction) as u64)
            }
            None => Duration::ZERO,
        }
    }

    /// This link with its capacity following `trace` (its time 0 at simulation time 0) instead
    /// of the constant rate: a packet leaves when the trace says ([`TraceTransmitter::depart`]),
    /// never if the trace ends first. `rate_bps` stays the one rate quoted for the link (the
    /// front end gives the trace's mean), used by RED's idle estimate and the reports.
    pub fn with_trace(mut self, trace: TraceTransmitter) -> Link {
        self.trace = Some(trace);
        self.update_plain_wire();
        self
    }

    /// Record every packet that starts serialization from now on in `capture` (crate::pcap: the
    /// capture point is the start of serialization, after the queue).
    pub fn start_capture(&mut self, capture: LinkCapture) {
        self.capture = Some(Box::new(capture));
        self.update_plain_wire();
    }

    /// Stop capturing: flush the file and return what it holds (`None` if this link was not
    /// captured). Call after [`Link::advance`] to the end, so every packet started is recorded.
    pub fn finish_capture(&mut self) -> Option<CaptureStats> {
        let stats = self.capture.take().map(|mut c| c.finish());
        self.update_plain_wire();
        stats
    }

    /// Offer `pkt` to the queue at `now`. Returns false when the discipline drops it. A packet
    /// the discipline marks has CE set on its data segment (only ECT data segments are marked).
    #[inline(always)]
    pub fn enqueue(&mut self, now: SimTime, pkt: Packet) -> bool {
        // Most arrivals find the link idle with an empty DropTail queue that takes anything:
        // `enqueue_queued` would only count the packet and start it at once. Inline that path.
        if self.tx_free_at <= now && self.up && self.queue_takes_any {
            self.counters.packets_in += 1;
            self.counters.bytes_in += pkt.size_bytes as u64;
            self.tx_free_at = now;
            self.transmit(now, pkt, now);
            return true;
        }
        self.enqueue_queued(now, pkt)
    }

    /// [`Link::enqueue`] in general: the transmitter busy, packets waiting, or a discipline that
    /// decides. Out of line: the common case above stays small where it is inlined.
    #[inline(never)]
    fn enqueue_queued(&mut self, now: SimTime, pkt: Packet) -> bool {
        let admitted = self.enqueue_general(now, pkt);
        self.sync_queue();
        admitted
    }

    /// The body of [`Link::enqueue_queued`], which then refreshes the queue flags.
    #[inline(always)]
    fn enqueue_general(&mut self, now: SimTime, mut pkt: Packet) -> bool {
        self.advance(now);
        self.counters.packets_in += 1;
        self.counters.bytes_in += pkt.size_bytes as u64;
        if !self.up {
            self.counters.packets_dropped_down += 1;
            return false;
        }
        if self.tx_free_at <= now {
            // Idle transmitter, empty DropTail queue: the packet starts at once, decided (and
            // marked) as the queue would, without passing through it.
            if let Some(verdict) = self.qdisc.pass_through(&mut pkt) {
                if matches!(verdict, Verdict::Drop | Verdict::EarlyDrop) {
                    return false;
                }
                self.tx_free_at = now;
                self.transmit(now, pkt, now);
                return true;
            }
        }
        let verdict = self.qdisc.enqueue(pkt, now.as_nanos(), self.tx_free_at.as_nanos(), self.rate_bps);
        if matches!(verdict, Verdict::Drop | Verdict::EarlyDrop) {
            return false;
        }
        if self.tx_free_at <= now {
            // The transmitter is idle and (after `advance`) nothing else waited: the
            // discipline's choice (this packet, unless it keeps it back) starts at once.
            self.tx_free_at = now;
            if let Some(e) = self.qdisc.dequeue(now.as_nanos()) {
                self.transmit(now, e.pkt, SimTime(e.enqueued_ns));
            }
        }
        true
    }

    /// Start the serialization of every packet the discipline hands out while the transmitter
    /// frees up at or before `now`. A packet starts when the one before it ends (`tx_free_at`):
    /// every waiting packet arrived while the transmitter was busy, so the link never idles with
    /// packets waiting. The discipline decides at each start (CoDel's drops, FQ's choice).
    #[inline(always)]
    pub fn advance(&mut self, now: SimTime) {
        if self.tx_free_at <= now && !self.queue_empty {
            self.advance_queue(now);
        }
    }

    /// [`Link::advance`] with packets waiting and the transmitter free by `now`.
    #[inline(always)]
    fn advance_queue(&mut self, now: SimTime) {
        while self.tx_free_at <= now && !self.qdisc.is_empty() {
            let start = self.tx_free_at;
            let Some(e) = self.qdisc.dequeue(start.as_nanos()) else { break };
            self.transmit(start, e.pkt, SimTime(e.enqueued_ns));
        }
        self.sync_queue();
    }

    /// Serialize `pkt`, queued since `enqueued_at`, from `start` (the transmitter is free then)
    /// and put it in the pipe, unless the wire loses it.
    #[inline(always)]
    fn transmit(&mut self, start: SimTime, pkt: Packet, enqueued_at: SimTime) {
        let size = pkt.size_bytes as u64;
        let serialization = self.serialization(size);
        if self.plain_wire {
            // What the general path below does when nothing draws: no loss, no jitter.
            let end = start + serialization;
            self.count_departure(start, end, size, enqueued_at);
            self.last_jitter = Duration::ZERO;
            self.last_in_pipe = true;
            let arrival = (end + self.delay).max(self.last_arrival);
            self.last_arrival = arrival;
            self.pipe.push_back((arrival, pkt));
            return;
        }
        self.transmit_wire(start, pkt, enqueued_at, size, serialization);
    }

    /// Count a departure that occupies the transmitter from `start` to `end`.
    #[inline(always)]
    fn count_departure(&mut self, start: SimTime, end: SimTime, size: u64, enqueued_at: SimTime) {
        self.tx_free_at = end;
        self.counters.departures += 1;
        self.counters.bytes_transmitted += size;
        // A trace link is busy from the start until the packet has left (waiting for its
        // delivery opportunity included); a trace that ended keeps it busy for ever.
        self.counters.busy_ns = self.counters.busy_ns.saturating_add((end - start).as_nanos());
        self.counters.sojourn_total_ns += (start - enqueued_at).as_nanos();
    }

    /// [`Link::transmit`] on a wire that may follow a trace, lose, jitter, duplicate or reorder.
    #[inline(never)]
    fn transmit_wire(&mut self, start: SimTime, pkt: Packet, enqueued_at: SimTime, size: u64, serialization: Duration) {
        if let Some(capture) = self.capture.as_deref_mut() {
            capture.record(start, &pkt, self.from, self.to);
        }
        let end = match self.trace.as_mut() {
            Some(trace) => SimTime(trace.depart(start.as_nanos(), size)),
            None => start + serialization,
        };
        self.count_departure(start, end, size, enqueued_at);
        if self.loss.lose() {
            self.counters.packets_lost_wire += 1;
            self.last_in_pipe = false;
            return;
        }
        let jitter = self.next_jitter(serialization);
        if let Some(j) = self.jitter.as_mut() {
            j.next = j.rng.next_u64();
        }
        self.last_jitter = jitter;
        self.last_in_pipe = true;
        if self.impair.active() {
            return self.transmit_impaired(end + self.delay + jitter, pkt);
        }
        // A link does not reorder: if the delay was lowered mid-run, or jitter held the packet
        // ahead back, later packets wait.
        let arrival = (end + self.delay + jitter).max(self.last_arrival);
        self.last_arrival = arrival;
        self.pipe.push_back((arrival, pkt));
    }

    /// Put a packet due at `due` (serialization, delay and jitter) in the pipe on a link that
    /// may duplicate or reorder: held back in its own FIFO if chosen, twice if duplicated.
    #[inline(never)]
    fn transmit_impaired(&mut self, due: SimTime, pkt: Packet) {
        let imp = self.impair.draw();
        self.last_impair = imp;
        let held = imp.reordered();
        let back = if held {
            self.counters.packets_reordered += 1;
            &mut self.held_last
        } else {
            &mut self.last_arrival
        };
        let arrival = (due + Duration(imp.held_ns)).max(*back);
        *back = arrival;
        if imp.duplicated {
            self.counters.packets_duplicated += 1;
            self.put_on_wire(held, arrival, pkt.clone());
        }
        self.put_on_wire(held, arrival, pkt);
    }

    /// Append a packet arriving at `arrival` to the held-back FIFO (`held`) or to the pipe.
    fn put_on_wire(&mut self, held: bool, arrival: SimTime, pkt: Packet) {
        if held {
            self.held.push_back((arrival, pkt));
        } else {
            self.pipe.push_back((arrival, pkt));
        }
    }

    /// Time to serialize `size` bytes at the current rate ([`transmission_ns`]).
    #[inline]
    fn serialization(&mut self, size: u64) -> Duration {
        if self.serialization_cache.0 != size {
            self.serialization_cache = (size, Duration(transmission_ns(size, self.rate_bps)));
        }
        self.serialization_cache.1
    }

    /// When the next packet reaches the far end, if any is queued or in the pipe: exact when the
    /// pipe holds a packet or the discipline's next departure is certain (DropTail, RED, PIE);
    /// otherwise (CoDel, FQ-CoDel, FQ: the next packet, or whether one is sent at all, is decided
    /// when the transmitter frees up) a lower bound, the transmitter's next start plus the delay,
    /// so the engine wakes the link in time and it decides then.
    #[inline]
    pub fn next_arrival(&self) -> Option<SimTime> {
        let main = match self.pipe.front() {
            Some((t, _)) => Some(*t),
            // An empty link (the usual case once a pipe-head event has delivered) needs no call.
            None if self.queue_empty => None,
            None => self.next_arrival_from_queue(),
        };
        match self.held.front() {
            Some((h, _)) => Some(main.map_or(*h, |m| m.min(*h))),
            None => main,
        }
    }

    /// [`Link::next_arrival`] with an empty pipe: out of line, the pipe is rarely empty.
    #[inline(never)]
    fn next_arrival_from_queue(&self) -> Option<SimTime> {
        if let Some(head) = self.qdisc.certain_head() {
            let start = self.tx_free_at.max(SimTime(head.enqueued_ns));
            let size = head.pkt.size_bytes as u64;
            let serialization = if self.serialization_cache.0 == size {
                self.serialization_cache.1
            } else {
                Duration(transmission_ns(size, self.rate_bps))
            };
            let jitter = self.next_jitter(serialization);
            if let Some(trace) = &self.trace {
                let end = SimTime(trace.peek_departure(start.as_nanos(), size));
                return Some((end + self.delay + jitter).max(self.last_arrival));
            }
            return Some((start + serialization + self.delay + jitter).max(self.last_arrival));
        }
        (!self.qdisc.is_empty()).then(|| (self.tx_free_at + self.delay).max(self.last_arrival))
    }

    /// Hand every packet that has left the transmitter by `now` (the link advanced to `now`
    /// first) to `out` as (arrival time, held back to be overtaken, packet), in the order each
    /// FIFO holds them: a link whose far end another thread simulates passes its packets in
    /// flight there ([`Link::inject`]) instead of delivering them itself. Every packet's
    /// arrival is at least the link's delay after `now` less the window since the last export,
    /// which is what lets the far end run that far ahead (`crate::parallel`).
    pub fn export_in_flight(&mut self, now: SimTime, out: &mut impl FnMut(SimTime, bool, Packet)) {
        self.advance(now);
        while let Some((t, pkt)) = self.pipe.pop_front() {
            out(t, false, pkt);
        }
        while let Some((t, pkt)) = self.held.pop_front() {
            out(t, true, pkt);
        }
    }

    /// Nothing queued, on the wire or held back: no packet left to hand on.
    pub fn is_idle(&self) -> bool {
        self.queue_empty && self.pipe.is_empty() && self.held.is_empty()
    }

    /// Put a packet that another thread's copy of this link serialized on this copy's wire, due
    /// at `arrival` ([`Link::export_in_flight`]); the engine then schedules its arrival.
    pub fn inject(&mut self, arrival: SimTime, held: bool, pkt: Packet) {
        self.put_on_wire(held, arrival, pkt);
    }

    /// Take back what the far end's copy of this link (another thread's, `crate::parallel`)
    /// held at the end of the run: the packets still in flight and the count of those
    /// delivered, so this copy reports the whole link.
    pub fn absorb_far_end(&mut self, far: &mut Link) {
        debug_assert!(self.pipe.is_empty() && self.held.is_empty(), "packets in flight were exported");
        std::mem::swap(&mut self.pipe, &mut far.pipe);
        std::mem::swap(&mut self.held, &mut far.held);
        self.counters.packets_delivered = far.counters.packets_delivered;
    }

    /// Append to `out` every packet that has reached the far end by `now`.
    pub fn take_arrivals(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.advance(now);
        while let Some(pkt) = self.pop_arrived(now) {
            out.push(pkt);
        }
    }

    /// The pipe's head if it has reached the far end by `now`, counted delivered. Call
    /// [`Link::advance`] to `now` first (as [`Link::take_arrivals`] does): the engine hands each
    /// packet on before taking the next, with no staging copy.
    #[inline]
    pub fn pop_arrived(&mut self, now: SimTime) -> Option<Packet> {
        if !self.held.is_empty() {
            return self.pop_arrived_with_held(now);
        }
        if self.pipe.front()?.0 > now {
            return None;
        }
        let (_, pkt) = self.pipe.pop_front()?;
        self.counters.packets_delivered += 1;
        Some(pkt)
    }

    /// [`Link::pop_arrived`] while packets are held back: the earlier of the two FIFOs' heads
    /// (the in-order one first at a tie).
    #[inline(never)]
    fn pop_arrived_with_held(&mut self, now: SimTime) -> Option<Packet> {
        let held_at = self.held.front().map_or(SimTime::NEVER, |h| h.0);
        let main_at = self.pipe.front().map_or(SimTime::NEVER, |p| p.0);
        if main_at.min(held_at) > now {
            return None;
        }
        let (_, pkt) = if main_at <= held_at { self.pipe.pop_front()? } else { self.held.pop_front()? };
        self.counters.packets_delivered += 1;
        Some(pkt)
    }

    /// Packets waiting in the queue (not counting the one being serialized).
    pub fn queued_packets(&self) -> u64 {
        self.qdisc.backlog_packets()
    }

    /// Bytes waiting in the queue.
    pub fn queued_bytes(&self) -> u64 {
        self.qdisc.backlog_bytes()
    }

    /// The queue discipline (its counters, RED's or PIE's state).
    pub fn qdisc(&self) -> &Qdisc<Packet> {
        &self.qdisc
    }

    /// Packets serialized (or being serialized) and not yet arrived.
    pub fn in_pipe_packets(&self) -> u64 {
        (self.pipe.len() + self.held.len()) as u64
    }

    /// Cumulative counters (the discipline's drops and marks included).
    pub fn counters(&self) -> LinkCounters {
        let q = self.qdisc.counters();
        LinkCounters { packets_dropped_queue: q.dropped, packets_dropped_early: q.dropped_early, packets_marked: q.marked, ..self.counters }
    }

    /// Serialization rate now, bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Propagation delay now (without jitter).
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The time a `size`-byte packet takes across the link when its queue is empty: its
    /// serialization at the current rate plus the propagation delay.
    pub fn idle_transit(&self, size: u64) -> Duration {
        Duration(transmission_ns(size, self.rate_bps)) + self.delay
    }

    /// RED's average queue at `now` (packets or bytes, the thresholds' unit), aged over the
    /// current idle period if any; NaN for DropTail. Call after [`Link::advance`] to `now`.
    pub fn red_avg(&self, now: SimTime) -> f64 {
        match self.qdisc.aqm() {
            Some(Aqm::Red(red)) => red.avg_at(idle_ns(self.qdisc.is_empty(), self.tx_free_at.as_nanos(), now.as_nanos()), self.rate_bps),
            _ => f64::NAN,
        }
    }

    /// Time the transmitter spent serializing up to `now`, ns: busy time over elapsed time is
    /// the utilization, right even when the rate changes. Call after [`Link::advance`] to `now`.
    pub fn busy_ns(&self, now: SimTime) -> u64 {
        // The packet on the wire is counted in full in `busy_ns`; take off what lies ahead.
        self.counters.busy_ns.saturating_sub((self.tx_free_at - now).as_nanos())
    }

    /// Apply a scheduled change at `now`, before any packet event at that instant. Packets that
    /// started serialization before `now` keep the old rate and wire loss; later ones get the
    /// new values. A new delay applies to every packet that starts propagating at or after
    /// `now`, the one on the wire included, and never lets a packet overtake an earlier one. A
    /// new queue limit drops nothing already queued; new RED thresholds keep RED's average. The
    /// caller reschedules the link's event.
    pub fn apply_change(&mut self, now: SimTime, change: &LinkChangeSpec) {
        if now > SimTime::ZERO {
            self.advance(SimTime(now.0 - 1));
        }
        if let Some(rate) = change.rate_bps {
            self.rate_bps = rate;
            self.serialization_cache = (0, Duration::ZERO);
        }
        if let Some(loss) = change.loss {
            self.loss.set_probability(loss);
            self.update_plain_wire();
        }
        if let Some(delay) = change.delay_ns {
            self.delay = Duration(delay);
            // The packet on the wire starts propagating when its serialization ends, after the
            // change: give it the new delay, behind the packet before it (and its copy, right
            // behind it). A held-back packet keeps its arrival.
            if self.last_in_pipe && self.tx_free_at >= now && !self.last_impair.reordered() {
                let n = self.pipe.len();
                let copies = self.last_impair.copies() as usize;
                let before = if n > copies { self.pipe.get(n - copies - 1).expect("in range").0 } else { SimTime::ZERO };
                let arrival = (self.tx_free_at + self.delay + self.last_jitter).max(before);
                for slot in self.pipe.iter_mut_from(n - copies) {
                    slot.0 = arrival;
                }
                self.last_arrival = arrival;
            }
        }
        if let Some(p) = change.limit_packets {
            self.qdisc.set_limit(Limit::Packets(p));
        } else if let Some(b) = change.limit_bytes {
            self.qdisc.set_limit(Limit::Bytes(b));
        }
        if let Some((min_th, max_th)) = change.red_thresholds() {
            if let Some(AqmMut::Red(red)) = self.qdisc.aqm_mut() {
                red.set_thresholds(min_th, max_th);
            }
        }
        match change.up {
            Some(false) if self.up => self.go_down(now),
            Some(up) => self.up = up,
            None => {}
        }
        self.sync_queue();
    }

    /// True unless a scheduled change holds the link down.
    pub fn is_up(&self) -> bool {
        self.up
    }

    /// Take the link down at `now` (after [`Link::advance`] to just before `now`): every packet
    /// waiting or on the wire is lost, the transmitter stops mid-packet.
    fn go_down(&mut self, now: SimTime) {
        self.up = false;
        let lost = self.qdisc.clear() + self.in_pipe_packets();
        self.sync_queue();
        self.counters.packets_dropped_down += lost;
        self.pipe.clear();
        self.held.clear();
        // The packet being serialized was counted busy in full; the rest of it never happens.
        if self.tx_free_at > now {
            self.counters.busy_ns = self.counters.busy_ns.saturating_sub((self.tx_free_at - now).as_nanos());
            self.tx_free_at = now;
        }
        self.last_arrival = now;
        self.held_last = now;
        self.last_in_pipe = false;
    }
}

#[cfg(test)]
mod tests {
    /// The per-packet fields stay in the link's first four cache lines (the layout [`Link`]
    /// documents): a field added before them, or a counter moved, costs every hop at scale.
    #[test]
    fn per_packet_fields_fit_in_four_cache_lines() {
        use std::mem::offset_of;
        assert_eq!(std::mem::align_of::<Link>(), 64);
        let counter = |offset: usize| offset_of!(Link, counters) + offset;
        let hot = [
            offset_of!(Link, pipe) + std::mem::size_of::<Fifo<(SimTime, Packet)>>(),
            offset_of!(Link, last_jitter) + 8,
            offset_of!(Link, held) + std::mem::size_of::<VecDeque<(SimTime, Packet)>>(),
            counter(offset_of!(LinkCounters, packets_in)),
            counter(offset_of!(LinkCounters, bytes_in)),
            counter(offset_of!(LinkCounters, packets_delivered)),
            counter(offset_of!(LinkCounters, departures)),
            counter(offset_of!(LinkCounters, bytes_transmitted)),
            counter(offset_of!(LinkCounters, sojourn_total_ns) + 8),
            counter(offset_of!(LinkCounters, busy_ns) + 8),
        ];
        for end in hot {
            assert!(end <= 4 * 64, "a per-packet field ends at byte {end} of Link");
        }
    }

    use super::*;
    use crate::packet::Payload;
    use ccarena_link::qdisc::Limit;
    use ccarena_link::{QdiscConfig, StreamKind};
    use ccarena_transport::{DataSegment, Ecn};

    /// DropTail with `limit` packets and an optional ECN threshold K in packets.
    fn droptail(limit: u64, k: Option<u64>) -> Qdisc<Packet> {
        let cfg = QdiscConfig::DropTail { ecn_threshold_packets: k, ecn_threshold_bytes: None, ecn_threshold_selector: Default::default() };
        Qdisc::new(&cfg, Limit::Packets(limit), SplitMix64::new(0))
    }

    fn pkt(size: u32) -> Packet {
        Packet { flow: 0, dst: 1, size_bytes: size, payload: Payload::Datagram { seq: 0 } }
    }

    fn link(limit: u64, loss: f64) -> Link {
        Link::new(
            0,
            1,
            8_000_000, // 1 byte per µs
            Duration::from_millis(1),
            loss,
            droptail(limit, None),
            SplitMix64::stream(1, StreamKind::LinkLoss, 0),
        )
    }

    #[test]
    fn departure_is_serialization_then_propagation() {
        let mut l = link(10, 0.0);
        assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        // first: 1000 µs serialization + 1 ms; second waits for the first.
        assert_eq!(l.next_arrival(), Some(SimTime(2_000_000)));
        let mut out = Vec::new();
        l.take_arrivals(SimTime(2_000_000), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(l.next_arrival(), Some(SimTime(3_000_000)));
        l.take_arrivals(SimTime(3_000_000), &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(l.counters().sojourn_total_ns, 1_000_000);
    }

    #[test]
    fn queue_limit_excludes_the_packet_being_serialized() {
        let mut l = link(2, 0.0);
        // first starts serializing at once; two more wait; the fourth is dropped.
        assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        assert!(!l.enqueue(SimTime::ZERO, pkt(1000)));
        assert_eq!(l.queued_packets(), 2);
        // after the first finishes (1 ms), the second is serializing and one waits: room for one.
        assert!(l.enqueue(SimTime(1_000_000), pkt(1000)));
        assert!(!l.enqueue(SimTime(1_000_000), pkt(1000)));
    }

    #[test]
    fn counters_conserve_packets() {
        let mut l = link(5, 0.3);
        let mut out = Vec::new();
        for i in 0..200u64 {
            l.enqueue(SimTime(i * 500_000), pkt(1000));
            l.take_arrivals(SimTime(i * 500_000), &mut out);
        }
        let c = l.counters();
        assert!(c.packets_lost_wire > 0 && c.packets_dropped_queue > 0);
        assert_eq!(
            c.packets_in,
            c.packets_delivered + c.packets_dropped_queue + c.packets_lost_wire + l.queued_packets() + l.in_pipe_packets()
        );
        assert_eq!(out.len() as u64, c.packets_delivered);
    }

    #[test]
    fn marking_sets_ce_on_ect_data_and_counts_it() {
        let mut l = Link::new(
            0,
            1,
            8_000_000,
            Duration::from_millis(1),
            0.0,
            droptail(10, Some(1)),
            SplitMix64::stream(1, StreamKind::LinkLoss, 0),
        );
        let data = |ect: bool| Packet {
            flow: 0,
            dst: 1,
            size_bytes: 1000,
            payload: Payload::Data(DataSegment {
                seq: 0,
                len: 948,
                ts_val: SimTime::ZERO,
                ecn: if ect { Ecn::Ect0 } else { Ecn::NotEct },
                cwr: false,
                retransmit: false,
            }),
        };
        // First serializes at once, second waits (0 waiting on arrival: not marked), third and
        // fourth find one or more waiting: the ECT one is marked, the non-ECT one is not.
        assert!(l.enqueue(SimTime::ZERO, data(true)));
        assert!(l.enqueue(SimTime::ZERO, data(true)));
        assert!(l.enqueue(SimTime::ZERO, data(true)));
        assert!(l.enqueue(SimTime::ZERO, data(false)));
        assert_eq!(l.counters().packets_marked, 1);
        let mut out = Vec::new();
        l.take_arrivals(SimTime(10_000_000), &mut out);
        let ce: Vec<bool> = out.iter().map(|p| matches!(p.payload, Payload::Data(s) if s.ecn.is_ce())).collect();
        assert_eq!(ce, vec![false, false, true, false]);
    }
    fn change() -> LinkChangeSpec {
        LinkChangeSpec::default()
    }

    #[test]
    fn a_rate_change_leaves_the_packet_on_the_wire_at_the_old_rate() {
        let mut l = link(10, 0.0);
        l.enqueue(SimTime::ZERO, pkt(1000));
        l.enqueue(SimTime::ZERO, pkt(1000));
        // Halfway through the first packet (1 ms at 8 Mbps), the rate halves.
        l.apply_change(SimTime(500_000), &LinkChangeSpec { rate_bps: Some(4_000_000), ..change() });
        // First: 1 ms serialization + 1 ms. Second: starts at 1 ms, 2 ms at 4 Mbps, + 1 ms.
        assert_eq!(l.next_arrival(), Some(SimTime(2_000_000)));
        let mut out = Vec::new();
        l.take_arrivals(SimTime(2_000_000), &mut out);
        assert_eq!(l.next_arrival(), Some(SimTime(4_000_000)));
        assert_eq!(l.busy_ns(SimTime(2_000_000)), 2_000_000, "busy since 0, the second on the wire");
        assert_eq!(l.busy_ns(SimTime(9_000_000)), 3_000_000);
    }

    #[test]
    fn a_change_applies_to_a_packet_starting_at_the_same_instant() {
        let mut l = link(10, 0.0);
        l.enqueue(SimTime::ZERO, pkt(1000));
        l.enqueue(SimTime::ZERO, pkt(1000));
        // The second packet starts serializing at exactly 1 ms, when the change applies.
        l.apply_change(SimTime(1_000_000), &LinkChangeSpec { rate_bps: Some(16_000_000), delay_ns: Some(3_000_000), ..change() });
        let mut out = Vec::new();
        l.take_arrivals(SimTime(1_999_999), &mut out);
        assert!(out.is_empty());
        // The first ends serializing at 1 ms (at the change): it propagates with the new 3 ms.
        assert_eq!(l.next_arrival(), Some(SimTime(4_000_000)));
        l.take_arrivals(SimTime(4_000_000), &mut out);
        assert_eq!(out.len(), 1);
        // The second: 0.5 ms at 16 Mbps from 1 ms, + 3 ms.
        assert_eq!(l.next_arrival(), Some(SimTime(4_500_000)));
    }

    #[test]
    fn a_lower_delay_never_reorders_and_a_higher_one_delays_the_packet_on_the_wire() {
        let mut l = Link::new(
            0,
            1,
            8_000_000,
            Duration::from_millis(5),
            0.0,
            droptail(100, None),
            SplitMix64::stream(1, StreamKind::LinkLoss, 0),
        );
        let data = |seq: u64| Packet { payload: Payload::Datagram { seq }, ..pkt(1000) };
        for seq in 0..6 {
            l.enqueue(SimTime::ZERO, data(seq));
        }
        // 1 ms per packet. At 2.5 ms packets 0 and 1 are in the pipe (arriving at 6 and 7 ms)
        // and packet 2 is on the wire (ends at 3 ms). The delay drops from 5 ms to 0.1 ms.
        let mut out = Vec::new();
        l.apply_change(SimTime(2_500_000), &LinkChangeSpec { delay_ns: Some(100_000), ..change() });
        let mut times = vec![];
        let mut t = SimTime(2_500_000);
        while let Some(next) = l.next_arrival() {
            assert!(next >= t, "arrivals go forward");
            t = next;
            let before = out.len();
            l.take_arrivals(t, &mut out);
            times.extend(std::iter::repeat_n(t.as_nanos(), out.len() - before));
        }
        let seqs: Vec<u64> = out.iter().map(|p| match p.payload { Payload::Datagram { seq } => seq, _ => unreachable!() }).collect();
        assert_eq!(seqs, vec![0, 1, 2, 3, 4, 5], "FIFO");
        // Packets 2..5 would arrive at 3.1, 4.1, 5.1 and 6.1 ms, before packet 1: they wait
        // behind it and all arrive at 7 ms.
        assert_eq!(times, vec![6_000_000, 7_000_000, 7_000_000, 7_000_000, 7_000_000, 7_000_000]);
        // Raising the delay holds the packet on the wire too.
        let mut l = link(100, 0.0);
        l.enqueue(SimTime::ZERO, pkt(1000));
        l.apply_change(SimTime(500_000), &LinkChangeSpec { delay_ns: Some(5_000_000), ..change() });
        assert_eq!(l.next_arrival(), Some(SimTime(6_000_000)));
    }

    #[test]
    fn a_lower_limit_drops_nothing_queued_and_refuses_arrivals_until_below_it() {
        let mut l = link(10, 0.0);
        for _ in 0..9 {
            assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        }
        assert_eq!(l.queued_packets(), 8);
        l.apply_change(SimTime(1), &LinkChangeSpec { limit_packets: Some(3), ..change() });
        assert_eq!(l.queued_packets(), 8, "nothing queued is dropped");
        assert!(!l.enqueue(SimTime(1), pkt(1000)));
        // 1 ms per packet: at 5.5 ms, 5 have left the queue and 3 wait: still full.
        assert!(!l.enqueue(SimTime(5_500_000), pkt(1000)));
        assert!(l.enqueue(SimTime(6_500_000), pkt(1000)));
        assert_eq!(l.counters().packets_dropped_queue, 2);
    }

    #[test]
    fn a_loss_change_applies_to_packets_starting_after_it() {
        let mut l = link(1000, 0.0);
        for _ in 0..100 {
            l.enqueue(SimTime::ZERO, pkt(1000));
        }
        // 50 packets have started by 49.5 ms; every later one is lost.
        l.apply_change(SimTime(49_500_000), &LinkChangeSpec { loss: Some(1.0), ..change() });
        let mut out = Vec::new();
        l.take_arrivals(SimTime(1_000_000_000), &mut out);
        assert_eq!(out.len(), 50);
        assert_eq!(l.counters().packets_lost_wire, 50);
    }

    /// Jitter: each packet arrives within one serialization time after serialization plus
    /// delay, never before the one ahead; the announced arrival is the real one; the draws
    /// vary (Floyd & Jacobson's random processing time).
    #[test]
    fn jitter_stays_within_one_serialization_time_and_keeps_order() {
        let mut l = link(1000, 0.0).with_jitter(SplitMix64::stream(1, StreamKind::LinkJitter, 0), 1.0);
        let mut out = Vec::new();
        let mut offsets = Vec::new();
        let mut last = SimTime::ZERO;
        for i in 0..200u64 {
            // 1000 bytes take 1 ms; one packet every 3 ms so none waits.
            let sent = SimTime(i * 3_000_000);
            l.enqueue(sent, pkt(1000));
            let announced = l.next_arrival().expect("a packet is in the pipe");
            l.take_arrivals(announced, &mut out);
            assert_eq!(out.len() as u64, i + 1, "it arrives when announced");
            let nominal = sent + Duration::from_millis(2);
            assert!(announced >= nominal && announced < nominal + Duration::from_millis(1), "{announced:?}");
            assert!(announced >= last);
            last = announced;
            offsets.push((announced - nominal).as_nanos());
        }
        let mean = offsets.iter().sum::<u64>() as f64 / offsets.len() as f64;
        assert!((mean - 500_000.0).abs() < 60_000.0, "mean jitter {mean} ns");
        // Back to back: a packet held back by jitter holds the next one too (FIFO).
        let mut l = link(1000, 0.0).with_jitter(SplitMix64::stream(2, StreamKind::LinkJitter, 0), 1.0);
        for _ in 0..100 {
            l.enqueue(SimTime::ZERO, pkt(10));
        }
        let mut out = Vec::new();
        let mut prev = SimTime::ZERO;
        while let Some(t) = l.next_arrival() {
            assert!(t >= prev);
            prev = t;
            l.take_arrivals(t, &mut out);
        }
        assert_eq!(out.len(), 100);
    }

    fn seq_of(p: &Packet) -> u64 {
        match p.payload {
            Payload::Datagram { seq } => seq,
            _ => unreachable!(),
        }
    }

    /// Every arrival of `l` in time order: (time, seq).
    fn drain_all(l: &mut Link) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut got = Vec::new();
        let mut prev = SimTime::ZERO;
        while let Some(t) = l.next_arrival() {
            assert!(t >= prev, "arrivals go forward");
            prev = t;
            out.clear();
            l.take_arrivals(t, &mut out);
            got.extend(out.iter().map(|p| (t.as_nanos(), seq_of(p))));
        }
        got
    }

    fn impaired(seed: u64, duplicate: f64, reorder: f64, reorder_delay_ns: u64) -> Link {
        link(100_000, 0.0).with_impairments(WireImpairments::new(
            duplicate,
            reorder,
            reorder_delay_ns,
            SplitMix64::stream(seed, StreamKind::LinkDuplicate, 0),
            SplitMix64::stream(seed, StreamKind::LinkReorder, 0),
        ))
    }

    /// A held-back packet arrives `reorder_delay` late, after the packets behind it that were
    /// not held; a duplicate arrives right behind its original; counters conserve packets.
    #[test]
    fn reordered_packets_are_overtaken_and_duplicates_follow_their_original() {
        // 1000-byte packets every 1 ms (one serialization time apart), 1 ms delay, 3.5 ms hold.
        let mut l = impaired(5, 0.1, 0.1, 3_500_000);
        for seq in 0..2000u64 {
            l.enqueue(SimTime(seq * 1_000_000), Packet { payload: Payload::Datagram { seq }, ..pkt(1000) });
        }
        let got = drain_all(&mut l);
        let c = l.counters();
        assert!(c.packets_duplicated > 150 && c.packets_reordered > 150, "{c:?}");
        assert_eq!(got.len() as u64, c.packets_in + c.packets_duplicated);
        assert_eq!(c.packets_in + c.packets_duplicated, c.packets_delivered);
        // Each packet arrives at its nominal time (2 ms after it was sent) or 3.5 ms later.
        let mut held = 0;
        for &(t, seq) in &got {
            let nominal = seq * 1_000_000 + 2_000_000;
            assert!(t == nominal || t == nominal + 3_500_000, "seq {seq} at {t}");
            if t > nominal {
                held += 1;
                // The three packets sent after it (not held) arrived before it.
                for later in seq + 1..seq + 4 {
                    let pos_later = got.iter().position(|&(_, s)| s == later).unwrap();
                    let pos = got.iter().position(|&(tt, s)| s == seq && tt == t).unwrap();
                    if got[pos_later].0 == later * 1_000_000 + 2_000_000 {
                        assert!(pos_later < pos, "{later} overtook {seq}");
                    }
                }
            }
        }
        let dups = got.windows(2).filter(|w| w[0] == w[1]).count() as u64;
        assert_eq!(dups, c.packets_duplicated, "each copy right behind its original");
        assert_eq!(held as u64, c.packets_reordered + got.windows(2).filter(|w| w[0] == w[1] && w[0].0 > w[0].1 * 1_000_000 + 2_000_000).count() as u64);
        let inversions = got.windows(2).filter(|w| w[1].1 < w[0].1).count();
        assert!(inversions > 150, "reordered: {inversions} inversions");
    }

    /// Probabilities 0: arrivals are bit for bit those of a link without impairments.
    #[test]
    fn no_impairment_is_todays_link() {
        let run = |l: &mut Link| {
            for seq in 0..500u64 {
                l.enqueue(SimTime(seq * 700_000), Packet { payload: Payload::Datagram { seq }, ..pkt(1000) });
            }
            drain_all(l)
        };
        let plain = run(&mut link(20, 0.1));
        let zero = run(&mut link(20, 0.1).with_impairments(WireImpairments::new(
            0.0,
            0.0,
            1_000_000,
            SplitMix64::new(1),
            SplitMix64::new(2),
        )));
        assert_eq!(plain, zero);
        assert!(plain.windows(2).all(|w| w[1].1 > w[0].1), "in order");
    }
}
