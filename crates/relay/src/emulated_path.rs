//! The emulated path of one direction of a pipe ([`EmulatedPath`]): the simulator's link model
//! (`crates/sim/src/link.rs`, htsim's Queue + Pipe) computed from each frame's arrival time.
//!
//! A frame of `ip_bytes` arriving at `t` meets a queue discipline, a transmitter serializing at
//! `rate_bps`, random loss on the wire and a propagation delay:
//!
//! - **Queue**: the shared discipline of `ccarena_link::qdisc` — the simulator's own code, so
//!   the same arrivals get the same drops and marks. DropTail (the default: dropped if the frames
//!   *waiting* — admitted, serialization not started — already reach `limit` packets, or if its
//!   bytes would take the waiting bytes past `limit` bytes; with DCTCP's step marking), RED
//!   (gentle, Adaptive) and PIE decide at arrival and keep arrival order, so a frame's fate and due
//!   time are known when it arrives ([`EmulatedPath::offer_frame`]). CoDel, FQ-CoDel and FQ decide
//!   when the transmitter frees up (CoDel's drops at dequeue, FQ's choice of flow, FQ-CoDel's
//!   drops from the fattest flow): the link then *holds* the frame ([`EmulatedPath::holds_frames`],
//!   [`EmulatedPath::hold_frame`]) with its body `B` (the relay's bytes) and hands it out when its
//!   serialization starts ([`EmulatedPath::take_departure`]), with its fate and due time — the
//!   simulator's enqueue/dequeue sequence (`crates/sim/src/link.rs`) step for step.
//! - **Transmitter**: serialization starts at `start = max(t, tx_free_at)` and takes
//!   `ceil(ip_bytes · 8 · 10⁹ / rate_bps)` ns; `tx_free_at` becomes the end.
//!   With a capacity trace ([`EmulatedPath::with_trace`]) the end is when the trace lets the frame
//!   go instead (`ccarena_link::trace`: Mahimahi delivery opportunities or rate steps, the
//!   simulator's own code), the trace's time 0 at the run's start instant.
//! - **Wire loss**: each serialized frame is lost with probability `loss` (it still used the link).
//! - **Pipe**: a surviving frame is due at the far end at `end + delay_ns`.
//! - **Duplication and reordering** ([`EmulatedPath::with_impairments`], `ccarena_link::impair`, the
//!   simulator's code): a surviving frame may be delivered twice (the copy right behind it,
//!   [`Offered::impair`]) or held back by the reorder delay, due at `end + delay_ns +
//!   reorder_delay_ns`, so later frames overtake it.
//!
//! With a fixed delay, due times are non-decreasing in arrival order, so the relay's FIFO
//! [`crate::DelayLine`] stays the whole schedule; held-back frames, all held by the same extra
//! delay, keep their order among themselves and go to a second FIFO. Without a rate (`rate_bps = None`) there is no
//! queue and no transmitter: each frame is due `delay_ns` after it arrived (delay-only mode, when
//! a kernel qdisc does the rate and queue).
//!
//! Everything is computed from arrival timestamps, never from when the relay got round to a frame,
//! so the queue's decisions do not depend on the relay's own scheduling: the relay's error shows
//! only as *lateness* (sent after the due time), which it measures separately. Samples of the
//! queue at given instants are exact for the same reason ([`EmulatedPath::sample`]).
//!
//! Why the relay serializes at all rather than leaving the rate to htb or tbf: on the project's
//! virtual machines arming a high-resolution timer costs 10–40 µs of CPU, and a kernel shaper arms
//! one per packet whenever its queue is backlogged (its watchdog waits for the next packet's
//! tokens). At 1 Gbit/s that is ~80,000 timers a second, spent in whichever thread handed the
//! packet to the qdisc — the relay. The relay instead wakes once per batch of due frames.

use std::collections::VecDeque;

use ccarena_link::qdisc::dualpi2::ClassCounters;
use ccarena_link::qdisc::QueuedPacket;
use ccarena_link::wire::transmission_ns as shared_transmission_ns;
use ccarena_link::{Aqm, Impairment, Qdisc, QdiscConfig, QdiscCounters, RateTrace, SplitMix64, TraceTransmitter, Verdict, WireImpairments};

use crate::rng::Loss;

/// The queue's limit: the link crate's ([`ccarena_link::qdisc::Limit`]), in frames (a frame of a GSO batch counts as
/// its segments) or IP bytes; unlimited, only the relay's own memory bounds apply.
pub use ccarena_link::qdisc::Limit as QueueLimit;

/// What one direction emulates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkParams {
    /// Serialization rate, bits per second (IP bytes); `None` = no transmitter and no queue.
    pub rate_bps: Option<u64>,
    /// The hard limit of the queue in front of the transmitter (ignored without a rate).
    pub limit: QueueLimit,
    /// Propagation delay, ns.
    pub delay_ns: u64,
}

/// What became of an offered frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Refused by the full queue.
    Dropped,
    /// Serialized, then lost on the wire.
    LostOnWire,
    /// Reaches the far end at this CLOCK_MONOTONIC time, ns.
    Deliver {
        /// When the frame is due to leave the relay, ns.
        due_ns: u64,
    },
}

/// Cumulative counters of one direction (packets are segments: a GSO frame counts as many).
/// Conservation: `arrivals = drops + departures + waiting` at every instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Packets offered to the queue.
    pub arrivals: u64,
    /// Packets the discipline dropped: refused at arrival, dropped at dequeue (CoDel), or dropped
    /// from the fattest flow (FQ-CoDel, FQ).
    pub drops: u64,
    /// Of `drops`, the AQM's own (unforced) drops: RED's and PIE's early drops, CoDel's drops at
    /// dequeue; the rest are the hard limit's.
    pub early_drops: u64,
    /// Packets the discipline marked CE instead of dropping (still delivered).
    pub marks: u64,
    /// Packets whose serialization has started.
    pub departures: u64,
    /// IP bytes of those packets.
    pub departed_bytes: u64,
    /// Of the departed packets, those lost on the wire (counted when they depart).
    pub lost_wire: u64,
    /// Sum over departed packets of their time in the queue (start − arrival), ns.
    pub sojourn_total_ns: u64,
    /// Time the transmitter spent serializing the departed packets, ns (busy time over elapsed
    /// time is the utilization, right even when the rate changes).
    pub busy_ns: u64,
    /// Of the departed packets, those the wire delivers twice (counted when they depart; the
    /// copies are not in `arrivals` or `departures`).
    pub duplicated: u64,
    /// Of the departed packets, those the wire holds back to be overtaken (reordered).
    pub reordered: u64,
}

/// The queue at one instant: what waits, the counters so far, and the AQM's state — the
/// simulator's `queues` row (docs/engine-spec.md, "Tables"; `crates/sim/src/sampler.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueSample {
    /// The instant, CLOCK_MONOTONIC ns.
    pub t_ns: u64,
    /// Packets waiting (the one being serialized not counted).
    pub backlog_packets: u64,
    /// IP bytes waiting.
    pub backlog_bytes: u64,
    /// Counters up to and including `t_ns`.
    pub counters: LinkCounters,
    /// The probability, in [0, 1], the AQM drops or marks a Classic packet with: DualPI2's
    /// p_C = p'² (RFC 9332 §2.1), PIE's drop probability (RFC 8033 §4.2); `None` for the other
    /// disciplines. Like the simulator's, the value in force at the link's last packet event (PI2
    /// and PIE update lazily).
    pub aqm_prob_classic: Option<f64>,
    /// DualPI2's coupled L4S marking probability p_CL = min(k·p', 1) (RFC 9332 §2.1), in [0, 1];
    /// `None` for the other disciplines.
    pub aqm_prob_l4s: Option<f64>,
    /// DualPI2's L4S queue's cumulative counters (packets, ns); `None` for the other disciplines.
    pub l4s: Option<ClassCounters>,
    /// DualPI2's Classic queue's cumulative counters (packets, ns); `None` for the other
    /// disciplines. The two classes' `marked` add up to `counters.marks`, their
    /// `dropped_limit + dropped_aqm` to `counters.drops`, their `departed` to `counters.departures`.
    pub classic: Option<ClassCounters>,
}

/// A change of the link's parameters at an instant ([`EmulatedPath::apply_change`]); `None` keeps
/// the current value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkChange {
    /// New serialization rate, bits per second.
    pub rate_bps: Option<u64>,
    /// New propagation delay, ns.
    pub delay_ns: Option<u64>,
    /// New wire-loss probability.
    pub loss: Option<f64>,
    /// New queue limit.
    pub limit: Option<QueueLimit>,
}

/// What the discipline needs to know of an arriving frame beyond its size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameInfo {
    /// IP bytes (the frame's size as the queue counts it).
    pub ip_bytes: u64,
    /// Segments it stands for (1 unless it is a GSO batch).
    pub packets: u64,
    /// A hash of its flow (the 5-tuple), for FQ-CoDel and FQ.
    pub flow_hash: u64,
    /// The IP header's ECN field is ECT(0) or ECT(1).
    pub ect: bool,
    /// The IP header's ECN field is ECT(1) or CE: the L4S identifier (RFC 9331 §5.1).
    pub l4s: bool,
}

/// What became of an offered frame, with the discipline's mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offered {
    /// Its fate.
    pub fate: Fate,
    /// The discipline marked it: the caller must set CE in its IP header (RFC 3168 §5).
    pub ce: bool,
    /// What the wire does to it if delivered: send it twice (the copy right behind it), or hold
    /// it back (its due time includes the hold; it goes on the held-back line, not the FIFO).
    pub impair: Impairment,
}

/// A frame that started serialization on a link that holds frames ([`EmulatedPath::take_departure`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Departure<B> {
    /// Its fate (never [`Fate::Dropped`]: the discipline's drops never leave the queue).
    pub fate: Fate,
    /// The discipline marked it: the caller must set CE in its IP header (RFC 3168 §5).
    pub ce: bool,
    /// Duplicated or held back, as in [`Offered::impair`].
    pub impair: Impairment,
    /// What the caller held the frame with.
    pub body: B,
}

/// A frame admitted to the queue: where it stands in the link's schedule.
#[derive(Clone, Debug)]
struct Scheduled<B> {
    arrival_ns: u64,
    start_ns: u64,
    end_ns: u64,
    /// When it reaches the far end (meaningless if lost).
    due_ns: u64,
    ip_bytes: u64,
    packets: u64,
    /// Drawn at admission (the stream stays in admission order = departure order), counted when
    /// the frame departs, as the simulator counts it.
    lost_on_wire: bool,
    /// Duplication and reordering, drawn with the loss (only for a frame not lost).
    impair: Impairment,
    flow_hash: u64,
    ect: bool,
    l4s: bool,
    ce: bool,
    /// The frame itself, while a link that holds frames holds it.
    body: B,
}

impl<B> Scheduled<B> {
    /// `frame`, arrived at `arrival_ns` as `packets` segments (at least 1), as the queue first holds
    /// it: serialization from `start_ns` to `end_ns` (both 0 while the discipline has yet to choose
    /// its start), not yet lost, impaired or marked (those are drawn when its place is fixed).
    #[inline]
    fn admitted(arrival_ns: u64, start_ns: u64, end_ns: u64, packets: u64, frame: &FrameInfo, body: B) -> Self {
        Scheduled {
            arrival_ns,
            start_ns,
            end_ns,
            due_ns: 0,
            ip_bytes: frame.ip_bytes,
            packets,
            lost_on_wire: false,
            impair: Impairment::default(),
            flow_hash: frame.flow_hash,
            ect: frame.ect,
            l4s: frame.l4s,
            ce: false,
            body,
        }
    }
}

impl<B> QueuedPacket for Scheduled<B> {
    #[inline]
    fn size_bytes(&self) -> u64 {
        self.ip_bytes
    }
    #[inline]
    fn packets(&self) -> u64 {
        self.packets
    }
    #[inline]
    fn flow_hash(&self) -> u64 {
        self.flow_hash
    }
    #[inline]
    fn ect(&self) -> bool {
        self.ect
    }
    #[inline]
    fn l4s(&self) -> bool {
        self.l4s
    }
    #[inline]
    fn set_ce(&mut self) {
        self.ce = true;
    }
}

/// One direction's emulated path, advanced by arrivals (see the module docs); `B` is what a path that
/// holds frames holds them with (the relay's bytes; `()` where only fates matter).
#[derive(Debug)]
pub struct EmulatedPath<B = ()> {
    params: LinkParams,
    loss: Loss,
    tx_free_at_ns: u64,
    last_arrival_ns: u64,
    /// Admitted frames whose serialization has not started, in the discipline.
    qdisc: Qdisc<Scheduled<B>>,
    /// The last frame to start serialization (it may still be on the transmitter).
    on_wire: Option<Scheduled<B>>,
    /// The discipline decides at dequeue: frames are held until their serialization starts.
    holds: bool,
    /// Held frames whose serialization has started, not yet taken by the caller, in order, each
    /// with the instant its serialization started (ns).
    departed: VecDeque<(u64, Departure<B>)>,
    /// When the last frame [`EmulatedPath::offer_frame`] admitted starts serialization, ns.
    last_start_ns: u64,
    /// The latest due time of a delivered frame before `on_wire`: no later frame may arrive
    /// earlier (the pipe is FIFO).
    settled_due_ns: u64,
    /// The latest due time of any delivered frame (the pipe's back).
    pipe_back_ns: u64,
    counters: LinkCounters,
    /// The capacity trace the transmitter follows instead of the rate, if any, and whether its
    /// origin is the start instant yet (until then, the first frame's arrival).
    trace: Option<(TraceTransmitter, bool)>,
    /// Duplication and reordering on the wire.
    impair: WireImpairments,
    /// The latest due time of a held-back frame (the held-back FIFO's back).
    held_back_ns: u64,
}

/// Serialization time of `ip_bytes` at `rate_bps`, rounded up to a whole ns (a link never runs
/// faster than its rate), ns: the simulator's arithmetic (`ccarena_link::wire`).
pub fn transmission_ns(ip_bytes: u64, rate_bps: u64) -> u64 {
    shared_transmission_ns(ip_bytes, rate_bps)
}

impl EmulatedPath {
    /// An idle link with `params` and a DropTail queue, losing frames on the wire per `loss`.
    pub fn new(params: LinkParams, loss: Loss) -> EmulatedPath {
        let droptail = QdiscConfig::DropTail { ecn_threshold_packets: None, ecn_threshold_bytes: None, ecn_threshold_selector: ccarena_link::qdisc::EcnSelector::All };
        EmulatedPath::with_queue(params, &droptail, SplitMix64::new(0), loss)
    }

    /// An idle link with `params` and the discipline `queue`, its random draws from `queue_rng`,
    /// losing frames on the wire per `loss` ([`EmulatedPath::holding`] with nothing to hold).
    pub fn with_queue(params: LinkParams, queue: &QdiscConfig, queue_rng: SplitMix64, loss: Loss) -> EmulatedPath {
        EmulatedPath::holding(params, queue, queue_rng, loss)
    }
}

impl<B: Default> EmulatedPath<B> {
    /// An idle link with `params` and the discipline `queue`, its random draws from `queue_rng`,
    /// losing frames on the wire per `loss`, holding frames with a `B` when the discipline
    /// decides at dequeue (CoDel, FQ-CoDel, FQ; with a rate).
    pub fn holding(params: LinkParams, queue: &QdiscConfig, queue_rng: SplitMix64, loss: Loss) -> EmulatedPath<B> {
        let qdisc = Qdisc::new(queue, params.limit, queue_rng);
        let holds = params.rate_bps.is_some() && !qdisc.decides_at_arrival();
        EmulatedPath {
            params,
            loss,
            tx_free_at_ns: 0,
            last_arrival_ns: 0,
            qdisc,
            on_wire: None,
            holds,
            departed: VecDeque::new(),
            last_start_ns: 0,
            settled_due_ns: 0,
            pipe_back_ns: 0,
            counters: LinkCounters::default(),
            trace: None,
            impair: WireImpairments::none(),
            held_back_ns: 0,
        }
    }

    /// This link with duplication and reordering on the wire (`ccarena_link::impair`).
    pub fn with_impairments(mut self, impair: WireImpairments) -> EmulatedPath<B> {
        self.impair = impair;
        self
    }

    /// True when the link may hold frames back (the caller needs a second delay line).
    pub fn reorders(&self) -> bool {
        self.impair.reorder() > 0.0 && self.impair.reorder_delay_ns() > 0
    }

    /// Draw what the wire does to a frame that survived it, and its due time from `nominal_ns`
    /// (end of serialization plus delay): a held-back frame is due the hold later, behind the
    /// held-back frames before it; any other frame behind the pipe's back (FIFO).
    fn deliver_at(&mut self, nominal_ns: u64) -> (u64, Impairment) {
        let imp = self.impair.draw();
        if imp.reordered() {
            let due = nominal_ns.saturating_add(imp.held_ns).max(self.held_back_ns);
            self.held_back_ns = due;
            (due, imp)
        } else {
            let due = nominal_ns.max(self.pipe_back_ns);
            self.pipe_back_ns = due;
            (due, imp)
        }
    }

    /// Count a departing frame's duplication and reordering.
    #[inline]
    fn count_impairment(&mut self, imp: Impairment, packets: u64) {
        if imp.duplicated {
            self.counters.duplicated += packets;
        }
        if imp.reordered() {
            self.counters.reordered += packets;
        }
    }

    /// This link with its transmitter following `trace` instead of the constant rate (which
    /// stays the rate quoted for the discipline's idle estimate). The trace's time 0 is the start
    /// instant ([`EmulatedPath::set_trace_origin`]); until that is known, the first frame's arrival.
    pub fn with_trace(mut self, trace: RateTrace) -> EmulatedPath<B> {
        self.trace = Some((TraceTransmitter::new(trace, 0), false));
        self
    }

    /// True when the transmitter follows a trace.
    pub fn has_trace(&self) -> bool {
        self.trace.is_some()
    }

    /// Start the trace at `origin_ns` (CLOCK_MONOTONIC, the run's start instant), as the
    /// simulator starts it at its time 0. Nothing without a trace.
    pub fn set_trace_origin(&mut self, origin_ns: u64) {
        if let Some((tx, known)) = self.trace.as_mut() {
            tx.set_origin(origin_ns);
            *known = true;
        }
    }

    /// When a frame of `ip_bytes` starting at `start_ns` has left: serialized at `rate_bps`, or
    /// as the trace lets it go (without using the trace up: [`EmulatedPath::offer_frame`] commits
    /// it once the frame is admitted).
    fn end_ns(&mut self, start_ns: u64, ip_bytes: u64, rate_bps: u64) -> u64 {
        match self.trace.as_mut() {
            Some((tx, known)) => {
                if !*known {
                    tx.set_origin(start_ns);
                    *known = true;
                }
                tx.peek_departure(start_ns, ip_bytes)
            }
            None => start_ns + transmission_ns(ip_bytes, rate_bps),
        }
    }

    /// True when frames must be offered with [`EmulatedPath::hold_frame`] (the discipline decides
    /// when a frame leaves the queue), false when [`EmulatedPath::offer_frame`] decides at arrival.
    pub fn holds_frames(&self) -> bool {
        self.holds
    }

    /// The link's parameters now.
    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    /// Counters as of the last arrival or sample.
    pub fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    /// Packets waiting as of the last arrival or sample.
    pub fn backlog_packets(&self) -> u64 {
        self.qdisc.backlog_packets()
    }

    /// The discipline's decisions so far: drops (as in [`LinkCounters::drops`]), of them the
    /// AQM's own, and CE marks.
    pub fn qdisc_counters(&self) -> &QdiscCounters {
        self.qdisc.counters()
    }

    /// The discipline's active queue management, for its own state (RED's average, PIE's
    /// probability, DualPI2's probabilities, per-class counters and sojourn histograms); `None`
    /// for DropTail, FQ-CoDel and FQ ([`Qdisc::aqm`]).
    pub fn aqm(&self) -> Option<Aqm<'_>> {
        self.qdisc.aqm()
    }

    /// Start the serialization of every waiting frame whose start time is at or before `t_ns`.
    pub fn advance(&mut self, t_ns: u64) {
        if self.holds {
            return self.advance_held(t_ns);
        }
        while let Some(head) = self.qdisc.certain_head() {
            if head.pkt.start_ns > t_ns {
                break;
            }
            let start_ns = head.pkt.start_ns;
            let w = self.qdisc.dequeue(start_ns).expect("the certain head departs").pkt;
            self.counters.departures += w.packets;
            self.counters.departed_bytes += w.ip_bytes;
            self.counters.sojourn_total_ns += (w.start_ns - w.arrival_ns) * w.packets;
            self.counters.busy_ns = self.counters.busy_ns.saturating_add(w.end_ns - w.start_ns);
            if w.lost_on_wire {
                self.counters.lost_wire += w.packets;
            }
            self.count_impairment(w.impair, w.packets);
            self.put_on_wire(w);
        }
    }

    /// Hand `w`, arrived at `t_ns`, to the discipline (the transmitter serializes at `rate_bps`) and
    /// take over its counters; true when the discipline refused it at once. One path for frames that
    /// are held and frames decided at arrival, so both meet the discipline alike.
    #[inline]
    fn enqueue_dropped(&mut self, w: Scheduled<B>, t_ns: u64, rate_bps: u64) -> bool {
        let verdict = self.qdisc.enqueue(w, t_ns, self.tx_free_at_ns, rate_bps);
        self.sync_qdisc_counters();
        matches!(verdict, Verdict::Drop | Verdict::EarlyDrop)
    }

    /// Copy the discipline's decisions into the link's counters.
    #[inline]
    fn sync_qdisc_counters(&mut self) {
        let q = self.qdisc.counters();
        (self.counters.drops, self.counters.early_drops, self.counters.marks) = (q.dropped, q.dropped_early, q.marked);
    }

    /// `w` is the last frame to start serialization: the one before it is settled.
    fn put_on_wire(&mut self, w: Scheduled<B>) {
        if let Some(prev) = self.on_wire.replace(w) {
            if !prev.lost_on_wire && !prev.impair.reordered() {
                self.settled_due_ns = self.settled_due_ns.max(prev.due_ns);
            }
        }
    }

    /// [`EmulatedPath::advance`] of a link that holds frames: the simulator's `Link::advance`. While
    /// frames wait, the transmitter takes the discipline's choice each time it frees up (every
    /// waiting frame arrived while it was busy, so it never idles with frames waiting).
    fn advance_held(&mut self, t_ns: u64) {
        while self.tx_free_at_ns <= t_ns && !self.qdisc.is_empty() {
            let start_ns = self.tx_free_at_ns;
            let Some(e) = self.qdisc.dequeue(start_ns) else { break };
            self.transmit_held(start_ns, e.enqueued_ns, e.pkt);
        }
        self.sync_qdisc_counters();
    }

    /// Serialize the held frame `w` (enqueued at `enqueued_ns`) from `start_ns`: draw its wire
    /// loss (in departure order, as the simulator does), fix its due time, hand it out.
    fn transmit_held(&mut self, start_ns: u64, enqueued_ns: u64, mut w: Scheduled<B>) {
        let rate_bps = self.params.rate_bps.expect("a link holds frames only with a rate");
        w.start_ns = start_ns;
        w.end_ns = self.end_ns(start_ns, w.ip_bytes, rate_bps);
        if let Some((tx, _)) = self.trace.as_mut() {
            // The discipline chose this frame now: it uses the trace's opportunities up.
            tx.depart(start_ns, w.ip_bytes);
        }
        self.tx_free_at_ns = w.end_ns;
        self.counters.departures += w.packets;
        self.counters.departed_bytes += w.ip_bytes;
        self.counters.sojourn_total_ns += (start_ns - enqueued_ns) * w.packets;
        self.counters.busy_ns += w.end_ns - start_ns;
        w.lost_on_wire = self.loss.lose();
        let fate = if w.lost_on_wire {
            self.counters.lost_wire += w.packets;
            Fate::LostOnWire
        } else {
            (w.due_ns, w.impair) = self.deliver_at(w.end_ns.saturating_add(self.params.delay_ns));
            self.count_impairment(w.impair, w.packets);
            Fate::Deliver { due_ns: w.due_ns }
        };
        self.departed.push_back((start_ns, Departure { fate, ce: w.ce, impair: w.impair, body: std::mem::take(&mut w.body) }));
        self.put_on_wire(w);
    }

    /// Offer a frame that arrived at `arrival_ns` to a link that holds frames
    /// ([`EmulatedPath::holds_frames`]), with its `body`. Returns false when the discipline refused
    /// it at once (the body is dropped); an admitted frame comes out of
    /// [`EmulatedPath::take_departure`] when its serialization starts — or never, if the discipline
    /// drops it later (CoDel at dequeue, FQ from the fattest flow). Arrivals come in time order
    /// (an earlier timestamp than the previous arrival or advance counts as simultaneous with it).
    pub fn hold_frame(&mut self, arrival_ns: u64, frame: FrameInfo, body: B) -> bool {
        debug_assert!(self.holds, "hold_frame on a link that decides at arrival");
        let t = arrival_ns.max(self.last_arrival_ns);
        self.last_arrival_ns = t;
        let packets = frame.packets.max(1);
        self.advance_held(t);
        self.counters.arrivals += packets;
        let rate_bps = self.params.rate_bps.expect("a link holds frames only with a rate");
        // Its start is the discipline's choice, made when the transmitter takes it (`advance_held`).
        let w = Scheduled::admitted(t, 0, 0, packets, &frame, body);
        if self.enqueue_dropped(w, t, rate_bps) {
            return false;
        }
        if self.tx_free_at_ns <= t {
            // The transmitter is idle and nothing else waited: the discipline's choice starts now.
            self.tx_free_at_ns = t;
            self.advance_held(t);
        }
        true
    }

    /// The next held frame whose serialization has started, in start order.
    pub fn take_departure(&mut self) -> Option<Departure<B>> {
        self.departed.pop_front().map(|(_, d)| d)
    }

    /// [`EmulatedPath::take_departure`] with the instant the frame's serialization started, ns
    /// (the capture point of [`crate::capture`]).
    pub fn take_departure_started(&mut self) -> Option<(u64, Departure<B>)> {
        self.departed.pop_front()
    }

    /// When the last frame [`EmulatedPath::offer_frame`] did not drop starts serialization, ns
    /// (its arrival on a link without a rate); meaningless after a drop. A later change of rate
    /// may still move it ([`EmulatedPath::apply_change`]); this is the instant as offered.
    pub fn last_start_ns(&self) -> u64 {
        self.last_start_ns
    }

    /// When the transmitter takes its next frame, if a frame is held waiting, ns: a frame due at
    /// the far end leaves no earlier than this plus the delay, so the caller need not advance the
    /// link before then.
    pub fn next_start_ns(&self) -> Option<u64> {
        (self.holds && !self.qdisc.is_empty()).then_some(self.tx_free_at_ns)
    }

    /// Advance a link that holds frames to `t_ns` from outside an arrival (every arrival up to
    /// `t_ns` offered): serialization starts up to it happen, later arrivals count from it.
    pub fn advance_to(&mut self, t_ns: u64) {
        if self.holds && t_ns > self.last_arrival_ns {
            self.last_arrival_ns = t_ns;
            self.advance_held(t_ns);
        }
    }

    /// Offer a frame of `ip_bytes` IP bytes (`packets` segments, 1 unless it is a GSO batch) that
    /// arrived at `arrival_ns`, not ECN-capable, of flow 0 ([`EmulatedPath::offer_frame`]).
    pub fn offer(&mut self, arrival_ns: u64, ip_bytes: u64, packets: u64) -> Fate {
        self.offer_frame(arrival_ns, FrameInfo { ip_bytes, packets, flow_hash: 0, ect: false, l4s: false }).fate
    }

    /// Offer a frame that arrived at `arrival_ns`. Arrivals must be offered in time order; an
    /// earlier timestamp than the previous one (two CPUs' receive paths racing) is treated as
    /// simultaneous with it. The discipline decides as the simulator's does for the same
    /// arrivals (`ccarena_link::qdisc`); `ce` asks the caller to mark the frame.
    pub fn offer_frame(&mut self, arrival_ns: u64, frame: FrameInfo) -> Offered {
        debug_assert!(!self.holds, "offer_frame on a link that holds frames");
        let t = arrival_ns.max(self.last_arrival_ns);
        self.last_arrival_ns = t;
        let packets = frame.packets.max(1);
        let ip_bytes = frame.ip_bytes;
        self.advance(t);
        self.counters.arrivals += packets;
        let Some(rate_bps) = self.params.rate_bps else {
            self.last_start_ns = t;
            self.counters.departures += packets;
            self.counters.departed_bytes += ip_bytes;
            if self.loss.lose() {
                self.counters.lost_wire += packets;
                return Offered { fate: Fate::LostOnWire, ce: false, impair: Impairment::default() };
            }
            let (due_ns, impair) = self.deliver_at(t.saturating_add(self.params.delay_ns));
            self.count_impairment(impair, packets);
            return Offered { fate: Fate::Deliver { due_ns }, ce: false, impair };
        };
        let start_ns = self.tx_free_at_ns.max(t);
        let end_ns = self.end_ns(start_ns, ip_bytes, rate_bps);
        let w = Scheduled::admitted(t, start_ns, end_ns, packets, &frame, B::default());
        if self.enqueue_dropped(w, t, rate_bps) {
            return Offered { fate: Fate::Dropped, ce: false, impair: Impairment::default() };
        }
        // Admitted: its place in the schedule is fixed now (the discipline keeps arrival order).
        if let Some((tx, _)) = self.trace.as_mut() {
            tx.depart(start_ns, ip_bytes);
        }
        self.tx_free_at_ns = end_ns;
        self.last_start_ns = start_ns;
        let lost_on_wire = self.loss.lose();
        let nominal_ns = end_ns.saturating_add(self.params.delay_ns);
        let (due_ns, impair) = if lost_on_wire { (nominal_ns, Impairment::default()) } else { self.deliver_at(nominal_ns) };
        let queued = self.qdisc.last_enqueued_mut().expect("a FIFO discipline keeps the admitted frame at its tail");
        queued.pkt.lost_on_wire = lost_on_wire;
        queued.pkt.due_ns = due_ns;
        queued.pkt.impair = impair;
        let ce = queued.pkt.ce;
        self.advance(t);
        let fate = if lost_on_wire { Fate::LostOnWire } else { Fate::Deliver { due_ns } };
        Offered { fate, ce, impair }
    }

    /// Change the link at `at_ns` (not earlier than the last arrival offered), with the
    /// simulator's semantics (docs/engine-spec.md, `events`): frames that start serialization at
    /// or after `at_ns` are serialized at the new rate; frames that finish serialization at or
    /// after it (the one on the transmitter included) take the new delay, never overtaking an
    /// earlier frame; a new limit drops nothing already queued. One difference: a new loss
    /// probability applies to frames *arriving* from `at_ns` on, not to those already queued
    /// (their fate was drawn when they arrived, and a lost frame is not kept).
    ///
    /// A held-back (reordered) frame keeps the due time it was given; a duplicated frame's new
    /// due time is returned twice (its copy is on the line right behind it).
    ///
    /// Returns the new due times of the delivered frames whose due time changed: the last frames
    /// handed to the delay line, in order (the caller retimes that many at its tail).
    pub fn apply_change(&mut self, at_ns: u64, change: &LinkChange) -> Vec<u64> {
        self.advance(at_ns.saturating_sub(1));
        self.last_arrival_ns = self.last_arrival_ns.max(at_ns);
        if let Some(p) = change.loss {
            self.loss.set_probability(p);
        }
        if let Some(limit) = change.limit {
            self.params.limit = limit;
            self.qdisc.set_limit(limit);
        }
        let rate_changed = change.rate_bps.is_some_and(|r| Some(r) != self.params.rate_bps);
        let delay_changed = change.delay_ns.is_some_and(|d| d != self.params.delay_ns);
        if let Some(r) = change.rate_bps {
            self.params.rate_bps = Some(r);
        }
        if let Some(d) = change.delay_ns {
            self.params.delay_ns = d;
        }
        let Some(rate_bps) = self.params.rate_bps else { return Vec::new() };
        if self.holds {
            // Waiting frames have no schedule yet (the new rate applies when they start): only
            // the frame on the wire may take the new delay.
            return self.retime_on_wire_held(at_ns, delay_changed);
        }
        if !rate_changed && !delay_changed {
            return Vec::new();
        }
        let delay_ns = self.params.delay_ns;
        let mut dues = Vec::new();
        let mut pipe_back = self.settled_due_ns;
        let mut tx_free = 0;
        if let Some(w) = self.on_wire.as_mut() {
            tx_free = w.end_ns;
            let in_fifo = !w.lost_on_wire && !w.impair.reordered();
            if delay_changed && w.end_ns >= at_ns && in_fifo {
                w.due_ns = (w.end_ns + delay_ns).max(pipe_back);
                dues.extend(std::iter::repeat_n(w.due_ns, w.impair.copies() as usize));
            }
            if in_fifo {
                pipe_back = pipe_back.max(w.due_ns);
            }
        }
        let waiting = self.qdisc.certain_order_mut().expect("the relay's disciplines keep arrival order");
        let mut any_waiting = false;
        for w in waiting.map(|e| &mut e.pkt) {
            any_waiting = true;
            if self.trace.is_none() {
                // (A trace link's schedule does not depend on a rate: only the delay changed.)
                w.start_ns = tx_free.max(w.arrival_ns);
                w.end_ns = w.start_ns + transmission_ns(w.ip_bytes, rate_bps);
            }
            tx_free = w.end_ns;
            if !w.lost_on_wire && !w.impair.reordered() {
                w.due_ns = (w.end_ns + delay_ns).max(pipe_back);
                pipe_back = w.due_ns;
                dues.extend(std::iter::repeat_n(w.due_ns, w.impair.copies() as usize));
            }
        }
        if any_waiting {
            self.tx_free_at_ns = tx_free;
        }
        self.pipe_back_ns = pipe_back;
        dues
    }

    /// [`EmulatedPath::apply_change`]'s retiming on a link that holds frames: the frame on the wire
    /// takes a new delay if its serialization ends at or after `at_ns`, behind the one before it.
    /// If it is still waiting to be taken its departure is changed in place; if it was taken, its
    /// new due time is returned.
    fn retime_on_wire_held(&mut self, at_ns: u64, delay_changed: bool) -> Vec<u64> {
        let delay_ns = self.params.delay_ns;
        let settled = self.settled_due_ns;
        let Some(w) = self.on_wire.as_mut().filter(|w| delay_changed && w.end_ns >= at_ns && !w.lost_on_wire && !w.impair.reordered()) else {
            return Vec::new();
        };
        w.due_ns = (w.end_ns + delay_ns).max(settled);
        self.pipe_back_ns = w.due_ns;
        match self.departed.back_mut() {
            Some((_, d)) => {
                d.fate = Fate::Deliver { due_ns: w.due_ns };
                Vec::new()
            }
            None => vec![w.due_ns; w.impair.copies() as usize],
        }
    }

    /// The queue at `t_ns`, which must not be earlier than the last arrival offered (so every
    /// arrival up to `t_ns` must have been offered for the sample to be exact).
    pub fn sample(&mut self, t_ns: u64) -> QueueSample {
        let t = t_ns.max(self.last_arrival_ns);
        if self.holds {
            // Dequeues happened up to `t`: a later arrival cannot be earlier.
            self.last_arrival_ns = t;
        }
        self.advance(t);
        let mut s = QueueSample { t_ns, backlog_packets: self.qdisc.backlog_packets(), backlog_bytes: self.qdisc.backlog_bytes(), counters: self.counters, ..QueueSample::default() };
        // The simulator's `aqm_probabilities` (crates/sim/src/sampler.rs), read the same way.
        match self.qdisc.aqm() {
            Some(Aqm::DualPi2(d)) => {
                (s.aqm_prob_classic, s.aqm_prob_l4s) = (Some(d.p_classic()), Some(d.p_coupled()));
                (s.l4s, s.classic) = (Some(*d.l4s_counters()), Some(*d.classic_counters()));
            }
            Some(Aqm::Pie(p)) => s.aqm_prob_classic = Some(p.drop_prob()),
            _ => {}
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use proptest::prelude::*;

    const GBIT: u64 = 1_000_000_000;

    fn link(rate_bps: Option<u64>, limit: QueueLimit, delay_ns: u64) -> EmulatedPath {
        EmulatedPath::new(LinkParams { rate_bps, limit, delay_ns }, Loss::new(0.0, SplitMix64::new(1)))
    }

    fn due(f: Fate) -> u64 {
        match f {
            Fate::Deliver { due_ns } => due_ns,
            other => panic!("expected delivery, got {other:?}"),
        }
    }

    #[test]
    fn transmission_time_rounds_up_like_the_simulator() {
        assert_eq!(transmission_ns(1500, GBIT), 12_000);
        assert_eq!(transmission_ns(1500, 3), 4_000_000_000_000);
        assert_eq!(transmission_ns(1, 3 * GBIT), 3);
    }

    #[test]
    fn an_idle_link_delays_by_serialization_plus_propagation() {
        let mut l = link(Some(GBIT), QueueLimit::Packets(10), 50_000_000);
        assert_eq!(due(l.offer(1_000, 1500, 1)), 1_000 + 12_000 + 50_000_000);
        // Long after: idle again, no queueing.
        assert_eq!(due(l.offer(10_000_000, 1000, 1)), 10_000_000 + 8_000 + 50_000_000);
        assert_eq!(l.counters().sojourn_total_ns, 0);
    }

    #[test]
    fn back_to_back_frames_queue_behind_the_transmitter() {
        // Ten 1500-byte frames at once on 1 Gbit/s: the k-th starts at 12k µs and arrives 12 µs later.
        let mut l = link(Some(GBIT), QueueLimit::Packets(100), 0);
        for k in 0..10u64 {
            assert_eq!(due(l.offer(0, 1500, 1)), 12_000 * (k + 1));
        }
        let s = l.sample(0);
        assert_eq!((s.backlog_packets, s.backlog_bytes, s.counters.departures), (9, 9 * 1500, 1));
        let s = l.sample(12_000 * 5);
        assert_eq!((s.backlog_packets, s.counters.departures), (4, 6));
        // Queueing delays 0, 12, 24, ... 60 µs for the six departed frames.
        assert_eq!(s.counters.sojourn_total_ns, 12_000 * (1 + 2 + 3 + 4 + 5));
        let s = l.sample(1_000_000);
        assert_eq!((s.backlog_packets, s.counters.departures, s.counters.departed_bytes), (0, 10, 15_000));
        assert_eq!(s.counters.busy_ns, 10 * 12_000);
    }

    #[test]
    fn packet_limit_counts_only_the_waiting_frames() {
        // Limit 3: the first frame goes straight to the transmitter, three wait, the fifth is dropped.
        let mut l = link(Some(GBIT), QueueLimit::Packets(3), 0);
        let fates: Vec<Fate> = (0..5).map(|_| l.offer(0, 1500, 1)).collect();
        assert!(fates[..4].iter().all(|f| matches!(f, Fate::Deliver { .. })));
        assert_eq!(fates[4], Fate::Dropped);
        // Once the head has started, one more fits.
        assert!(matches!(l.offer(12_000, 1500, 1), Fate::Deliver { .. }));
        assert_eq!(l.offer(12_000, 1500, 1), Fate::Dropped);
        assert_eq!(l.counters().drops, 2);
    }

    #[test]
    fn byte_limit_admits_what_fits() {
        let mut l = link(Some(GBIT), QueueLimit::Bytes(3000), 0);
        assert!(matches!(l.offer(0, 1500, 1), Fate::Deliver { .. })); // on the transmitter
        assert!(matches!(l.offer(0, 1500, 1), Fate::Deliver { .. })); // 1500 waiting
        assert!(matches!(l.offer(0, 1500, 1), Fate::Deliver { .. })); // 3000 waiting
        assert_eq!(l.offer(0, 100, 1), Fate::Dropped);
        assert_eq!(l.sample(0).backlog_bytes, 3000);
    }

    #[test]
    fn without_a_rate_frames_are_only_delayed() {
        let mut l = link(None, QueueLimit::Packets(1), 7_000);
        for t in [0u64, 0, 0, 5, 9] {
            assert_eq!(due(l.offer(t, 1500, 1)), t + 7_000);
        }
        let s = l.sample(10);
        assert_eq!((s.backlog_packets, s.counters.arrivals, s.counters.departures, s.counters.drops), (0, 5, 5, 0));
    }

    #[test]
    fn wire_loss_happens_after_serialization() {
        let mut l = EmulatedPath::new(LinkParams { rate_bps: Some(GBIT), limit: QueueLimit::Packets(100), delay_ns: 0 }, Loss::new(1.0, SplitMix64::new(3)));
        assert_eq!(l.offer(0, 1500, 1), Fate::LostOnWire);
        assert_eq!((l.counters().departures, l.counters().lost_wire), (1, 1));
        // The lost frame still held the transmitter for 12 µs.
        l.loss.set_probability(0.0);
        assert_eq!(due(l.offer(0, 1500, 1)), 24_000);
    }

    #[test]
    fn a_lost_frame_is_counted_when_it_departs() {
        let mut l = EmulatedPath::new(LinkParams { rate_bps: Some(GBIT), limit: QueueLimit::Packets(100), delay_ns: 0 }, Loss::new(1.0, SplitMix64::new(3)));
        assert_eq!(l.offer(0, 1500, 1), Fate::LostOnWire);
        assert_eq!(l.offer(0, 1500, 1), Fate::LostOnWire);
        // The second one is still waiting for the transmitter.
        assert_eq!((l.counters().departures, l.counters().lost_wire), (1, 1));
        let s = l.sample(12_000);
        assert_eq!((s.counters.departures, s.counters.lost_wire), (2, 2));
    }

    #[test]
    fn gso_batches_count_as_their_segments() {
        let mut l = link(Some(GBIT), QueueLimit::Packets(3), 0);
        assert!(matches!(l.offer(0, 1500, 1), Fate::Deliver { .. }));
        assert!(matches!(l.offer(0, 4500, 3), Fate::Deliver { .. }));
        assert_eq!(l.offer(0, 1500, 1), Fate::Dropped);
        assert_eq!(l.sample(0).backlog_packets, 3);
        assert_eq!(l.sample(12_000).counters.departures, 4);
    }

    #[test]
    fn late_timestamps_count_as_simultaneous() {
        let mut l = link(Some(GBIT), QueueLimit::Packets(10), 0);
        assert_eq!(due(l.offer(100_000, 1500, 1)), 112_000);
        assert_eq!(due(l.offer(90_000, 1500, 1)), 124_000);
        assert_eq!(l.counters().sojourn_total_ns, 0);
        assert_eq!(l.sample(112_000).counters.sojourn_total_ns, 12_000);
    }

    #[test]
    fn a_rate_change_retimes_the_queued_frames_not_the_one_on_the_wire() {
        // Four frames at once on 1 Gbit/s (12 µs each), delay 1 ms; at 6 µs the rate halves.
        let mut l = link(Some(GBIT), QueueLimit::Packets(10), 1_000_000);
        let old: Vec<u64> = (0..4).map(|_| due(l.offer(0, 1500, 1))).collect();
        assert_eq!(old, vec![1_012_000, 1_024_000, 1_036_000, 1_048_000]);
        let dues = l.apply_change(6_000, &LinkChange { rate_bps: Some(GBIT / 2), ..Default::default() });
        // The first keeps its 12 µs; the others take 24 µs each after it.
        assert_eq!(dues, vec![1_036_000, 1_060_000, 1_084_000]);
        assert_eq!(due(l.offer(6_000, 1500, 1)), 1_108_000);
        // Nothing queued and nothing on the wire: nothing to retime.
        let mut idle = link(Some(GBIT), QueueLimit::Packets(10), 0);
        assert!(idle.apply_change(5, &LinkChange { rate_bps: Some(1), ..Default::default() }).is_empty());
    }

    #[test]
    fn a_delay_change_applies_from_the_frame_on_the_wire_and_keeps_the_pipe_fifo() {
        let mut l = link(Some(GBIT), QueueLimit::Packets(10), 1_000_000);
        for _ in 0..3 {
            l.offer(0, 1500, 1);
        }
        // At 30 µs the third frame is on the wire (24–36 µs): it and later frames take 0.1 ms,
        // but none may arrive before the second (due 1.024 ms).
        let dues = l.apply_change(30_000, &LinkChange { delay_ns: Some(100_000), ..Default::default() });
        assert_eq!(dues, vec![1_024_000]);
        assert_eq!(due(l.offer(40_000, 1500, 1)), 1_024_000);
        assert_eq!(due(l.offer(2_000_000, 1500, 1)), 2_000_000 + 12_000 + 100_000);
        // A frame that finished before the change keeps its delay: nothing to retime.
        let mut m = link(Some(GBIT), QueueLimit::Packets(10), 1_000_000);
        m.offer(0, 1500, 1);
        assert!(m.apply_change(20_000, &LinkChange { delay_ns: Some(5), ..Default::default() }).is_empty());
    }

    #[test]
    fn a_lower_limit_drops_nothing_queued() {
        let mut l = link(Some(GBIT), QueueLimit::Packets(10), 0);
        for _ in 0..6 {
            assert!(matches!(l.offer(0, 1500, 1), Fate::Deliver { .. }));
        }
        assert!(l.apply_change(0, &LinkChange { limit: Some(QueueLimit::Packets(2)), ..Default::default() }).is_empty());
        assert_eq!(l.sample(0).backlog_packets, 5);
        assert_eq!(l.offer(0, 1500, 1), Fate::Dropped);
        // Once the backlog is below the new limit, arrivals are admitted again.
        assert!(matches!(l.offer(12_000 * 4, 1500, 1), Fate::Deliver { .. }));
        assert_eq!(l.params().limit, QueueLimit::Packets(2));
    }

    #[test]
    fn a_loss_change_applies_to_later_arrivals() {
        let mut l = link(Some(GBIT), QueueLimit::Packets(10), 0);
        l.offer(0, 1500, 1);
        l.apply_change(1, &LinkChange { loss: Some(1.0), ..Default::default() });
        assert_eq!(l.offer(2, 1500, 1), Fate::LostOnWire);
    }

    fn fq_link(delay_ns: u64) -> EmulatedPath<u32> {
        let fq = QdiscConfig::Fq(ccarena_link::qdisc::fq::FqConfig { flows: 64, quantum_bytes: 1500 });
        let params = LinkParams { rate_bps: Some(GBIT), limit: QueueLimit::Packets(10), delay_ns };
        EmulatedPath::holding(params, &fq, SplitMix64::new(4), Loss::new(0.0, SplitMix64::new(1)))
    }

    fn frame(flow: u64) -> FrameInfo {
        FrameInfo { ip_bytes: 1500, packets: 1, flow_hash: flow, ect: false, l4s: false }
    }

    fn departures(l: &mut EmulatedPath<u32>) -> Vec<(u32, u64)> {
        std::iter::from_fn(|| l.take_departure()).map(|d| match d.fate {
            Fate::Deliver { due_ns } => (d.body, due_ns),
            other => panic!("{other:?}"),
        }).collect()
    }

    #[test]
    fn a_held_frame_leaves_when_the_transmitter_takes_it_in_the_disciplines_order() {
        // FQ: three frames of flow 1 then one of flow 2, all at t = 0, on 1 Gbit/s (12 µs each).
        let mut l = fq_link(1_000);
        assert!(l.holds_frames() && !link(Some(GBIT), QueueLimit::Packets(1), 0).holds_frames());
        for (i, flow) in [1u64, 1, 1, 2].into_iter().enumerate() {
            assert!(l.hold_frame(0, frame(flow), i as u32));
        }
        // The first starts at once; the rest wait for the transmitter.
        assert_eq!(departures(&mut l), vec![(0, 12_000 + 1_000)]);
        assert_eq!((l.next_start_ns(), l.backlog_packets()), (Some(12_000), 3));
        l.advance_to(12_000);
        // Round robin: flow 1 spent its quantum on the first frame, so flow 2's goes next.
        l.advance_to(36_000);
        assert_eq!(departures(&mut l), vec![(3, 24_000 + 1_000), (1, 36_000 + 1_000), (2, 48_000 + 1_000)]);
        assert_eq!(l.next_start_ns(), None);
        let c = l.counters();
        assert_eq!((c.arrivals, c.departures, c.drops, c.sojourn_total_ns), (4, 4, 0, 12_000 + 24_000 + 36_000));
    }

    #[test]
    fn a_delay_change_retimes_the_held_frame_on_the_wire_where_it_is() {
        let mut l = fq_link(1_000_000);
        l.hold_frame(0, frame(1), 0);
        l.hold_frame(0, frame(1), 1);
        // Taken by the caller, on the wire (0–12 µs) at the change: its new due time is returned
        // for the caller's delay line.
        assert_eq!(departures(&mut l), vec![(0, 1_012_000)]);
        assert_eq!(l.apply_change(6_000, &LinkChange { delay_ns: Some(100_000), ..Default::default() }), vec![112_000]);
        // Not taken yet (on the wire 12–24 µs): changed in place, never before the frame ahead.
        l.advance_to(20_000);
        assert!(l.apply_change(20_000, &LinkChange { delay_ns: Some(5_000), ..Default::default() }).is_empty());
        assert_eq!(departures(&mut l), vec![(1, 112_000)]);
        // A rate change applies to the frames that start after it.
        l.apply_change(30_000, &LinkChange { rate_bps: Some(GBIT / 2), ..Default::default() });
        l.hold_frame(200_000, frame(1), 2);
        assert_eq!(departures(&mut l), vec![(2, 200_000 + 24_000 + 5_000)]);
    }

    fn impaired(duplicate: f64, reorder: f64, held_ns: u64) -> EmulatedPath {
        let imp = WireImpairments::new(duplicate, reorder, held_ns, SplitMix64::new(8), SplitMix64::new(9));
        link(Some(GBIT), QueueLimit::Packets(100), 1_000_000).with_impairments(imp)
    }

    /// A held-back frame is due the hold later than in order, so the frames behind it are due
    /// first; a duplicated frame is reported as such; the counters count both at departure.
    #[test]
    fn held_back_frames_are_overtaken_and_duplicates_are_reported() {
        // One 1500-byte frame every 100 µs (idle link): due 12 µs + 1 ms after arrival, or
        // 350 µs later when held back.
        let mut l = impaired(0.1, 0.1, 350_000);
        let mut dues = Vec::new();
        let (mut dup, mut held) = (0, 0);
        for k in 0..5000u64 {
            let t = k * 100_000;
            let o = l.offer_frame(t, FrameInfo { ip_bytes: 1500, packets: 1, flow_hash: 0, ect: false, l4s: false });
            let d = due(o.fate);
            let nominal = t + 12_000 + 1_000_000;
            if o.impair.reordered() {
                held += 1;
                assert_eq!(d, nominal + 350_000);
            } else {
                assert_eq!(d, nominal);
            }
            dup += u64::from(o.impair.duplicated);
            dues.push(d);
        }
        // A held-back frame is overtaken by the next three (due 100, 200, 300 µs after it was
        // due in order), unless they were held too.
        let overtaken = dues.windows(2).filter(|w| w[1] < w[0]).count();
        assert!(overtaken > 300 && held > 400 && dup > 400, "{overtaken} {held} {dup}");
        let c = l.sample(600_000_000).counters;
        assert_eq!((c.duplicated, c.reordered), (dup, held));
        // No reordering configured: due times never decrease.
        let mut plain = impaired(0.5, 0.0, 350_000);
        let mut last = 0;
        for k in 0..1000u64 {
            let d = due(plain.offer(k * 20_000, 1500, 1));
            assert!(d >= last);
            last = d;
        }
        assert!(!plain.reorders() && l.reorders());
    }

    /// A delay change retimes the duplicated frame's two copies and leaves a held-back frame
    /// alone.
    #[test]
    fn a_delay_change_retimes_both_copies_and_not_a_held_frame() {
        let mut l = impaired(1.0, 0.0, 0);
        l.offer(0, 1500, 1);
        l.offer(0, 1500, 1);
        let dues = l.apply_change(6_000, &LinkChange { delay_ns: Some(100_000), ..Default::default() });
        assert_eq!(dues, vec![112_000, 112_000, 124_000, 124_000]);
        let mut h = impaired(0.0, 1.0, 50_000);
        h.offer(0, 1500, 1);
        assert!(h.apply_change(6_000, &LinkChange { delay_ns: Some(100_000), ..Default::default() }).is_empty());
    }

    proptest! {
        /// Conservation at every instant (arrivals = drops + departures + waiting), FIFO (due
        /// times never decrease), the rate is never exceeded, and a frame that finds the queue
        /// below its limit is never dropped.
        #[test]
        fn conserves_orders_and_respects_the_rate(
            gaps in proptest::collection::vec(0u64..40_000, 1..300),
            sizes in proptest::collection::vec(40u64..1501, 300),
            limit in 1u64..20,
            rate_mbps in 1u64..2000,
        ) {
            let rate_bps = rate_mbps * 1_000_000;
            let mut l = link(Some(rate_bps), QueueLimit::Packets(limit), 1_000);
            let (mut t, mut last_due, mut delivered) = (0u64, 0u64, Vec::new());
            for (i, gap) in gaps.iter().enumerate() {
                t += gap;
                let before = l.sample(t).backlog_packets;
                let size = sizes[i];
                match l.offer(t, size, 1) {
                    Fate::Deliver { due_ns } => {
                        prop_assert!(due_ns >= last_due);
                        prop_assert!(due_ns >= t + transmission_ns(size, rate_bps) + 1_000);
                        last_due = due_ns;
                        delivered.push((due_ns - 1_000, size));
                    }
                    Fate::Dropped => prop_assert!(before >= limit),
                    Fate::LostOnWire => prop_assert!(false, "no loss configured"),
                }
                let c = l.counters();
                prop_assert_eq!(c.arrivals, c.drops + c.departures + l.backlog_packets());
            }
            // Ends of serialization are at least one transmission time apart.
            for w in delivered.windows(2) {
                prop_assert!(w[1].0 >= w[0].0 + transmission_ns(w[1].1, rate_bps));
            }
        }

        /// With changes of rate and delay at random instants, the delay line the relay keeps
        /// (every delivered frame's due time, the tail retimed after each change) stays in FIFO
        /// order, never delivers a frame before it could have been serialized, and the counters
        /// stay conserved.
        #[test]
        fn changes_keep_the_pipe_fifo(
            steps in proptest::collection::vec((0u64..30_000, 40u64..1501, 0u8..6, 1u64..2000, 0u64..2_000_000), 1..300),
        ) {
            let mut l = link(Some(100_000_000), QueueLimit::Packets(20), 1_000_000);
            let mut line: Vec<(u64, u64)> = Vec::new(); // (arrival, due) of delivered frames
            let mut t = 0u64;
            for (gap, size, op, rate_mbps, delay_ns) in steps {
                t += gap;
                if op == 0 {
                    let change = LinkChange { rate_bps: Some(rate_mbps * 1_000_000), delay_ns: Some(delay_ns), ..Default::default() };
                    let dues = l.apply_change(t, &change);
                    prop_assert!(dues.len() <= line.len());
                    let n = line.len();
                    for (slot, d) in line[n - dues.len()..].iter_mut().zip(dues) {
                        slot.1 = d;
                    }
                } else if let Fate::Deliver { due_ns } = l.offer(t, size, 1) {
                    line.push((t, due_ns));
                }
                for w in line.windows(2) {
                    prop_assert!(w[1].1 >= w[0].1, "{:?}", line);
                }
                for &(arrival, due) in &line {
                    prop_assert!(due > arrival);
                }
                let c = l.counters();
                prop_assert_eq!(c.arrivals, c.drops + c.departures + l.backlog_packets());
            }
        }
    }
}
