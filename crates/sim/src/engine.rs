//! The discrete-event engine: nodes, links, routes and flows driven by one event queue.
//!
//! Time is integer nanoseconds. Every event is ordered by (time, insertion sequence), every random
//! process draws from its own stream, so the same spec gives bit-identical results. The run is
//! advanced in chunks with [`Simulation::run_until`] so a front end can show progress and stop.

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::udt::{ToReceiver, ToSender};
use ccarena_transport::{AckSegment, DataSegment};

use crate::event::{Event, EventQueue};
use crate::flow::{CbrFlow, Flow, TcpFlow, UdtFlow, UNLIMITED_BYTES};
use crate::link::Link;
use crate::packet::{Packet, Payload};
use crate::queue::Aqm;
use crate::rng::{Rng, StreamKind};
use crate::sampler::{ca_state_code, FlowSample, QueueSample, Sampler};
use crate::spec::{EventSpec, FlowSpec, Spec, SpecError};
use crate::table::{Column, Results, Table};

/// Marks "no route" in the dense routing table.
const NO_ROUTE: u32 = u32::MAX;
/// Bytes a SACK option adds to an ACK: 2 for kind and length, 8 per block (RFC 2018 §3).
const SACK_OPTION_HEADER_BYTES: u32 = 2;
const SACK_BLOCK_BYTES: u32 = 8;

/// When to schedule an endpoint's timer event, if a new entry is needed: `want` (the endpoint's
/// `poll_timeout`) clamped to at least 1 ns after `now`, so a timer that stays due cannot spin at
/// one instant, and only when earlier than the endpoint's earliest pending entry `armed_at`, which
/// is then updated. Later deadlines need no entry: the pending one fires early and re-arms (lazy
/// timers, see `event.rs`).
fn timer_to_arm(armed_at: &mut SimTime, want: Option<SimTime>, now: SimTime) -> Option<SimTime> {
    let at = want?.max(now + Duration(1));
    if at < *armed_at {
        *armed_at = at;
        Some(at)
    } else {
        None
    }
}

/// A simulation of one resolved [`Spec`].
#[derive(Debug)]
pub struct Simulation {
    spec: Spec,
    now: SimTime,
    end: SimTime,
    events: EventQueue,
    links: Vec<Link>,
    /// `routes[node * n_nodes + dst]` = link index.
    routes: Vec<u32>,
    n_nodes: usize,
    flows: Vec<Flow>,
    /// The spec's scheduled link changes sorted by time (stable), indexed by `Event::LinkChange`.
    changes: Vec<EventSpec>,
    sampler: Sampler,
    sample_interval: Duration,
    events_processed: u64,
    /// Reused buffers so the per-packet path never allocates.
    arrivals: Vec<Packet>,
    outgoing: Vec<Packet>,
}

impl Simulation {
    /// Build a simulation from a validated spec.
    ///
    /// # Errors
    /// A [`SpecError`] if the spec fails [`Spec::validate`].
    pub fn new(spec: Spec) -> Result<Simulation, SpecError> {
        spec.validate()?;
        let n = spec.nodes.len();
        let links = spec
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                Link::new(
                    l.from as u32,
                    l.to as u32,
                    l.rate_bps,
                    Duration(l.delay_ns),
                    l.loss,
                    Aqm::from_spec(&l.queue, Rng::stream(spec.seed, StreamKind::QueueAqm, i as u64)),
                    Rng::stream(spec.seed, StreamKind::LinkLoss, i as u64),
                )
            })
            .collect();
        let mut routes = vec![NO_ROUTE; n * n];
        for r in &spec.routes {
            routes[r.node * n + r.dst] = r.link as u32;
        }
        let mut flows = Vec::with_capacity(spec.flows.len());
        let mut events = EventQueue::new();
        // Scheduled changes go in first: at equal times the heap pops in insertion order, so a
        // change applies before every other event at its instant (docs/engine-spec.md, events).
        let mut changes = spec.events.clone();
        changes.sort_by_key(|e| e.time_ns);
        for (i, c) in changes.iter().enumerate() {
            events.push(SimTime(c.time_ns), Event::LinkChange(i as u32));
        }
        for (i, f) in spec.flows.iter().enumerate() {
            flows.push(match f {
                FlowSpec::Tcp(t) => Flow::Tcp(Box::new(TcpFlow::new(i, t)?)),
                FlowSpec::UdpCbr(c) => Flow::Cbr(CbrFlow::new(c)),
                FlowSpec::Udt(u) => Flow::Udt(Box::new(UdtFlow::new(i, u, spec.seed)?)),
            });
            let (start, stop) = f.schedule();
            events.push(SimTime(start), Event::FlowStart(i as u32));
            if let Some(stop) = stop {
                events.push(SimTime(stop), Event::FlowStop(i as u32));
            }
        }
        let sample_interval = Duration(spec.sample_interval_ns);
        events.push(SimTime::ZERO + sample_interval, Event::Sample);
        Ok(Simulation {
            now: SimTime::ZERO,
            end: SimTime(spec.duration_ns),
            events,
            routes,
            n_nodes: n,
            sampler: Sampler::new(flows.len(), spec.links.len(), sample_interval.as_secs_f64()),
            flows,
            changes,
            links,
            sample_interval,
            events_processed: 0,
            arrivals: Vec::new(),
            outgoing: Vec::new(),
            spec,
        })
    }

    /// Parse, validate and build from JSON (see `docs/engine-spec.md`).
    ///
    /// # Errors
    /// A [`SpecError`] naming the offending field.
    pub fn from_json(json: &str) -> Result<Simulation, SpecError> {
        Simulation::new(Spec::from_json(json)?)
    }

    /// The current simulated time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The end of the run.
    pub fn end(&self) -> SimTime {
        self.end
    }

    /// True once the run has reached its duration.
    pub fn finished(&self) -> bool {
        self.now >= self.end
    }

    /// Events handled so far (for benchmarks).
    pub fn events_processed(&self) -> u64 {
        self.events_processed
    }

    /// The spec being run.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The links, in spec order.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The flows, in spec order.
    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// Handle every event due at or before `min(t, end)` and set the clock there.
    pub fn run_until(&mut self, t: SimTime) {
        let limit = t.min(self.end);
        while let Some((time, event)) = self.events.pop_until(limit) {
            self.now = time;
            self.events_processed += 1;
            self.handle(event);
        }
        self.now = self.now.max(limit);
    }

    /// Run to the end.
    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::LinkArrival(l) => self.on_link_arrival(l as usize),
            Event::SenderTimer(f) => self.on_sender_timer(f as usize),
            Event::ReceiverTimer(f) => self.on_receiver_timer(f as usize),
            Event::FlowStart(f) => self.on_flow_start(f as usize),
            Event::FlowStop(f) => self.on_flow_stop(f as usize),
            Event::CbrSend(f) => self.on_cbr_send(f as usize),
            Event::Sample => self.on_sample(),
            Event::LinkChange(c) => self.on_link_change(c as usize),
        }
    }

    // ---- network ---------------------------------------------------------------------------

    /// Put `pkt` on the link `node` routes its destination to.
    fn send_from(&mut self, node: u32, pkt: Packet) {
        let link = self.routes[node as usize * self.n_nodes + pkt.dst as usize];
        debug_assert!(link != NO_ROUTE, "validated specs route every flow");
        let l = link as usize;
        self.links[l].enqueue(self.now, pkt);
        self.ensure_link_event(l);
    }

    #[inline]
    fn ensure_link_event(&mut self, l: usize) {
        let link = &mut self.links[l];
        if let Some(t) = link.next_arrival() {
            if t < link.scheduled_at {
                link.scheduled_at = t;
                self.events.push(t, Event::LinkArrival(l as u32));
            }
        }
    }

    /// Apply scheduled change `c`; the head of the link's pipe may now arrive earlier. Cold: a
    /// handful per run, kept out of the per-packet dispatch.
    #[cold]
    #[inline(never)]
    fn on_link_change(&mut self, c: usize) {
        let change = &self.changes[c];
        let l = change.link;
        self.links[l].apply_change(self.now, &change.set);
        self.ensure_link_event(l);
    }

    fn on_link_arrival(&mut self, l: usize) {
        if self.links[l].scheduled_at == self.now {
            self.links[l].scheduled_at = SimTime::NEVER;
        }
        let mut arrived = std::mem::take(&mut self.arrivals);
        self.links[l].take_arrivals(self.now, &mut arrived);
        let node = self.links[l].to;
        for pkt in arrived.drain(..) {
            if pkt.dst == node {
                self.deliver(pkt);
            } else {
                self.send_from(node, pkt);
            }
        }
        self.arrivals = arrived;
        self.ensure_link_event(l);
    }

    /// A packet reached its destination host.
    fn deliver(&mut self, pkt: Packet) {
        let f = pkt.flow as usize;
        match pkt.payload {
            Payload::Data(seg) => self.on_data(f, &seg),
            Payload::Ack(ack) => self.on_ack(f, &ack),
            Payload::Datagram { .. } => {
                if let Flow::Cbr(c) = &mut self.flows[f] {
                    c.received += 1;
                }
            }
            Payload::UdtToReceiver(p) => self.on_udt_to_receiver(f, p),
            Payload::UdtToSender(p) => self.on_udt_to_sender(f, p),
        }
    }

    // ---- TCP -------------------------------------------------------------------------------

    fn tcp(&mut self, f: usize) -> &mut TcpFlow {
        match &mut self.flows[f] {
            Flow::Tcp(t) => t,
            _ => unreachable!("flow {f} is not TCP"),
        }
    }

    fn on_data(&mut self, f: usize, seg: &DataSegment) {
        let now = self.now;
        let t = self.tcp(f);
        t.delivered_bytes += t.receiver.on_segment(now, seg);
        self.flush_receiver(f);
    }

    fn on_ack(&mut self, f: usize, ack: &AckSegment) {
        let now = self.now;
        let t = self.tcp(f);
        let outcome = t.sender.on_ack(now, ack);
        if let Some(rtt) = outcome.rtt {
            t.rtt.record(rtt.as_nanos());
        }
        if t.completed_at.is_none() && t.bytes.is_some() && t.sender.is_complete() {
            t.completed_at = Some(now);
        }
        self.flush_sender(f);
    }

    /// Send every segment the sender allows now, then make sure its timer is scheduled.
    fn flush_sender(&mut self, f: usize) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.outgoing);
        let t = self.tcp(f);
        while let Some(seg) = t.sender.poll_transmit(now) {
            out.push(Packet {
                flow: f as u32,
                dst: t.dst,
                size_bytes: seg.len + t.header_bytes,
                enqueued_at: now,
                payload: Payload::Data(seg),
            });
        }
        let src = t.src;
        if let Some(at) = timer_to_arm(&mut t.sender_timer_at, t.sender.poll_timeout(), now) {
            self.events.push(at, Event::SenderTimer(f as u32));
        }
        for pkt in out.drain(..) {
            self.send_from(src, pkt);
        }
        self.outgoing = out;
    }

    /// Send every ACK the receiver has ready, then make sure its delayed-ACK timer is scheduled.
    fn flush_receiver(&mut self, f: usize) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.outgoing);
        let t = self.tcp(f);
        while let Some(ack) = t.receiver.poll_ack(now) {
            let sack_bytes = if ack.sack_count > 0 {
                SACK_OPTION_HEADER_BYTES + SACK_BLOCK_BYTES * ack.sack_count as u32
            } else {
                0
            };
            t.acks_sent += 1;
            out.push(Packet {
                flow: f as u32,
                dst: t.src,
                size_bytes: t.ack_bytes + sack_bytes,
                enqueued_at: now,
                payload: Payload::Ack(ack),
            });
        }
        let dst = t.dst;
        if let Some(at) = timer_to_arm(&mut t.receiver_timer_at, t.receiver.poll_timeout(), now) {
            self.events.push(at, Event::ReceiverTimer(f as u32));
        }
        for pkt in out.drain(..) {
            self.send_from(dst, pkt);
        }
        self.outgoing = out;
    }

    fn on_sender_timer(&mut self, f: usize) {
        if matches!(self.flows[f], Flow::Udt(_)) {
            return self.on_udt_sender_timer(f);
        }
        let now = self.now;
        let t = self.tcp(f);
        if t.sender_timer_at == now {
            t.sender_timer_at = SimTime::NEVER;
        }
        if t.sender.poll_timeout().is_some_and(|due| due <= now) {
            t.sender.handle_timeout(now);
        }
        self.flush_sender(f);
    }

    fn on_receiver_timer(&mut self, f: usize) {
        if matches!(self.flows[f], Flow::Udt(_)) {
            return self.on_udt_receiver_timer(f);
        }
        let now = self.now;
        let t = self.tcp(f);
        if t.receiver_timer_at == now {
            t.receiver_timer_at = SimTime::NEVER;
        }
        if t.receiver.poll_timeout().is_some_and(|due| due <= now) {
            t.receiver.handle_timeout(now);
        }
        self.flush_receiver(f);
    }

    // ---- UDT -------------------------------------------------------------------------------

    fn udt(&mut self, f: usize) -> &mut UdtFlow {
        match &mut self.flows[f] {
            Flow::Udt(u) => u,
            _ => unreachable!("flow {f} is not UDT"),
        }
    }

    /// A UDT data packet or ACK2 reached the receiving host.
    fn on_udt_to_receiver(&mut self, f: usize, p: ToReceiver) {
        let now = self.now;
        let u = self.udt(f);
        match p {
            ToReceiver::Data(d) => u.delivered_bytes += u.receiver.on_data(now, &d),
            ToReceiver::Ack2(a) => {
                if let Some(rtt) = u.receiver.on_ack2(now, &a) {
                    u.rtt.record(rtt.as_nanos());
                }
            }
        }
        self.flush_udt_receiver(f);
    }

    /// A UDT ACK or NAK reached the sending host.
    fn on_udt_to_sender(&mut self, f: usize, p: ToSender) {
        let now = self.now;
        let u = self.udt(f);
        match p {
            ToSender::Ack(a) => u.sender.on_ack(now, &a),
            ToSender::Nak(n) => u.sender.on_nak(now, &n),
        }
        if u.completed_at.is_none() && u.bytes.is_some() && u.sender.is_complete() {
            u.completed_at = Some(now);
        }
        self.flush_udt_sender(f);
    }

    /// Send every packet the UDT sender allows now (data and ACK2s), then make sure its timer
    /// (EXP, pacing release) is scheduled.
    fn flush_udt_sender(&mut self, f: usize) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.outgoing);
        let u = self.udt(f);
        while let Some(p) = u.sender.poll_transmit(now) {
            let size_bytes = match p {
                ToReceiver::Data(d) => d.len + u.header_bytes,
                ToReceiver::Ack2(_) => u.header_bytes,
            };
            out.push(Packet { flow: f as u32, dst: u.dst, size_bytes, enqueued_at: now, payload: Payload::UdtToReceiver(p) });
        }
        let src = u.src;
        if let Some(at) = timer_to_arm(&mut u.sender_timer_at, u.sender.poll_timeout(), now) {
            self.events.push(at, Event::SenderTimer(f as u32));
        }
        for pkt in out.drain(..) {
            self.send_from(src, pkt);
        }
        self.outgoing = out;
    }

    /// Send every ACK and NAK the UDT receiver has ready, then make sure its timer (ACK, NAK) is
    /// scheduled.
    fn flush_udt_receiver(&mut self, f: usize) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.outgoing);
        let u = self.udt(f);
        while let Some(p) = u.receiver.poll_transmit(now) {
            let size_bytes = match p {
                ToSender::Ack(_) => u.ack_bytes,
                ToSender::Nak(n) => u.header_bytes + n.loss_info_bytes(),
            };
            out.push(Packet { flow: f as u32, dst: u.src, size_bytes, enqueued_at: now, payload: Payload::UdtToSender(p) });
        }
        let dst = u.dst;
        if let Some(at) = timer_to_arm(&mut u.receiver_timer_at, u.receiver.poll_timeout(), now) {
            self.events.push(at, Event::ReceiverTimer(f as u32));
        }
        for pkt in out.drain(..) {
            self.send_from(dst, pkt);
        }
        self.outgoing = out;
    }

    fn on_udt_sender_timer(&mut self, f: usize) {
        let now = self.now;
        let u = self.udt(f);
        if u.sender_timer_at == now {
            u.sender_timer_at = SimTime::NEVER;
        }
        if u.sender.poll_timeout().is_some_and(|due| due <= now) {
            u.sender.handle_timeout(now);
        }
        self.flush_udt_sender(f);
    }

    fn on_udt_receiver_timer(&mut self, f: usize) {
        let now = self.now;
        let u = self.udt(f);
        if u.receiver_timer_at == now {
            u.receiver_timer_at = SimTime::NEVER;
        }
        if u.receiver.poll_timeout().is_some_and(|due| due <= now) {
            u.receiver.handle_timeout(now);
        }
        self.flush_udt_receiver(f);
    }

    // ---- applications ----------------------------------------------------------------------

    fn on_flow_start(&mut self, f: usize) {
        match &mut self.flows[f] {
            Flow::Tcp(t) => {
                t.sender.app_write(t.bytes.unwrap_or(UNLIMITED_BYTES));
                self.flush_sender(f);
            }
            Flow::Cbr(_) => self.on_cbr_send(f),
            Flow::Udt(u) => {
                u.sender.app_write(u.bytes.unwrap_or(UNLIMITED_BYTES));
                self.flush_udt_sender(f);
            }
        }
    }

    fn on_flow_stop(&mut self, f: usize) {
        match &mut self.flows[f] {
            Flow::Tcp(t) => t.sender.app_stop(),
            Flow::Udt(u) => u.sender.app_stop(),
            // CBR flows check their stop time when they send.
            Flow::Cbr(_) => {}
        }
    }

    fn on_cbr_send(&mut self, f: usize) {
        let now = self.now;
        let Flow::Cbr(c) = &mut self.flows[f] else { unreachable!("flow {f} is not CBR") };
        if now >= c.stop {
            return;
        }
        let pkt = Packet {
            flow: f as u32,
            dst: c.dst,
            size_bytes: c.packet_bytes + c.header_bytes,
            enqueued_at: now,
            payload: Payload::Datagram { seq: c.sent },
        };
        c.sent += 1;
        let (src, next) = (c.src, now + c.interval);
        self.events.push(next, Event::CbrSend(f as u32));
        self.send_from(src, pkt);
    }

    // ---- sampling --------------------------------------------------------------------------

    fn on_sample(&mut self) {
        let now = self.now;
        let time_s = now.as_secs_f64();
        for (i, (flow, spec)) in self.flows.iter().zip(&self.spec.flows).enumerate() {
            if now.as_nanos() < spec.schedule().0 {
                continue;
            }
            let row = match flow {
                Flow::Tcp(t) => {
                    let s = &t.sender;
                    let cw = s.cwnd();
                    let secs = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64());
                    FlowSample {
                        flow: i as u32,
                        delivered_bytes: t.delivered_bytes,
                        sent_bytes: s.stats().bytes_sent,
                        cwnd_bytes: cw.cwnd_bytes as f64,
                        ssthresh_bytes: if cw.ssthresh_bytes == u64::MAX { f64::NAN } else { cw.ssthresh_bytes as f64 },
                        srtt_s: secs(s.srtt()),
                        rttvar_s: secs(s.rttvar()),
                        rto_s: s.rto().as_secs_f64(),
                        inflight_bytes: s.in_flight_bytes() as f64,
                        pacing_rate_bps: cw.pacing_rate_bps.map_or(f64::NAN, |r| r as f64),
                        retransmits: s.stats().segments_retransmitted as f64,
                        ca_state: ca_state_code(s.ca_state()),
                    }
                }
                Flow::Udt(u) => {
                    let s = &u.sender;
                    let secs = |d: Duration| d.as_secs_f64();
                    FlowSample {
                        flow: i as u32,
                        delivered_bytes: u.delivered_bytes,
                        sent_bytes: s.stats().bytes_sent,
                        // The window new packets are held to: min(congestion, flow window).
                        cwnd_bytes: (s.window_packets() * s.config().mss_bytes as u64) as f64,
                        ssthresh_bytes: f64::NAN,
                        srtt_s: secs(s.rtt()),
                        rttvar_s: secs(s.rtt_var()),
                        rto_s: secs(s.exp_period()),
                        inflight_bytes: s.unacked_bytes() as f64,
                        pacing_rate_bps: s.cwnd().pacing_rate_bps.map_or(f64::NAN, |r| r as f64),
                        retransmits: s.stats().packets_retransmitted as f64,
                        ca_state: f64::NAN,
                    }
                }
                Flow::Cbr(c) => FlowSample {
                    flow: i as u32,
                    delivered_bytes: c.received * c.packet_bytes as u64,
                    sent_bytes: c.sent * c.packet_bytes as u64,
                    cwnd_bytes: f64::NAN,
                    ssthresh_bytes: f64::NAN,
                    srtt_s: f64::NAN,
                    rttvar_s: f64::NAN,
                    rto_s: f64::NAN,
                    inflight_bytes: f64::NAN,
                    pacing_rate_bps: f64::NAN,
                    retransmits: f64::NAN,
                    ca_state: f64::NAN,
                },
            };
            self.sampler.flow(time_s, &row);
        }
        for (i, link) in self.links.iter_mut().enumerate() {
            link.advance(now);
            let c = link.counters();
            let row = QueueSample {
                link: i as u32,
                backlog_bytes: link.queued_bytes(),
                backlog_packets: link.queued_packets(),
                drops: c.packets_dropped_queue,
                marks: c.packets_marked,
                arrivals: c.packets_in,
                departures: c.departures,
                sojourn_total_ns: c.sojourn_total_ns,
                red_avg: link.red_avg(now),
                early_drops: c.packets_dropped_early,
            };
            self.sampler.queue(time_s, &row);
        }
        let next = now + self.sample_interval;
        if next <= self.end {
            self.events.push(next, Event::Sample);
        }
    }

    // ---- results ---------------------------------------------------------------------------

    /// All result tables as of now (see `docs/engine-spec.md` for the columns).
    pub fn results(&mut self) -> Results {
        for link in &mut self.links {
            link.advance(self.now);
        }
        Results {
            flows: self.flow_table(),
            samples: self.sampler.flow_table(),
            queues: self.sampler.queue_table(),
            links: self.link_table(),
        }
    }

    fn flow_table(&self) -> Table {
        let mut name = Vec::new();
        let mut kind = Vec::new();
        let mut flavor = Vec::new();
        let mut recovery = Vec::new();
        let mut num: Vec<(&'static str, Vec<f64>)> = [
            "flow",
            "start_s",
            "end_s",
            "bytes_offered",
            "bytes_sent",
            "bytes_retransmitted",
            "bytes_delivered",
            "packets_sent",
            "packets_retransmitted",
            "packets_received",
            "packets_lost",
            "rto_count",
            "fast_recoveries",
            "spurious_rtos",
            "duplicate_bytes_received",
            "completion_time_s",
            "rtt_min_s",
            "rtt_mean_s",
            "rtt_p50_s",
            "rtt_p95_s",
            "rtt_p99_s",
            "rtt_samples",
        ]
        .iter()
        .map(|n| (*n, Vec::with_capacity(self.flows.len())))
        .collect();
        let end_s = self.now.as_secs_f64();
        for (i, (flow, spec)) in self.flows.iter().zip(&self.spec.flows).enumerate() {
            let (start_ns, stop_ns) = spec.schedule();
            let start_s = start_ns as f64 / 1e9;
            name.push(spec.name().to_string());
            let row: [f64; 22] = match (flow, spec) {
                (Flow::Tcp(t), FlowSpec::Tcp(ts)) => {
                    kind.push("tcp".to_string());
                    flavor.push(ts.flavor.clone());
                    recovery.push(ts.recovery.clone());
                    let st = t.sender.stats();
                    let r = t.receiver.stats();
                    let flow_end = t
                        .completed_at
                        .map(|c| c.as_secs_f64())
                        .or(stop_ns.map(|s| (s as f64 / 1e9).min(end_s)))
                        .unwrap_or(end_s);
                    let h = &t.rtt;
                    [
                        i as f64,
                        start_s,
                        flow_end,
                        t.sender.bytes_offered().min(t.bytes.unwrap_or(u64::MAX)) as f64,
                        st.bytes_sent as f64,
                        st.bytes_retransmitted as f64,
                        t.delivered_bytes as f64,
                        st.segments_sent as f64,
                        st.segments_retransmitted as f64,
                        r.segments_received as f64,
                        // Segments that never arrived: sent minus received (duplicates counted
                        // once each on both sides, so spurious retransmissions cancel).
                        st.segments_sent.saturating_sub(r.segments_received) as f64,
                        st.rto_count as f64,
                        st.fast_recoveries as f64,
                        st.spurious_rtos as f64,
                        r.duplicate_bytes as f64,
                        t.completed_at.map_or(f64::NAN, |c| (c - SimTime(start_ns)).as_secs_f64()),
                        h.min() / 1e9,
                        h.mean() / 1e9,
                        h.quantile(0.5) / 1e9,
                        h.quantile(0.95) / 1e9,
                        h.quantile(0.99) / 1e9,
                        h.count() as f64,
                    ]
                }
                (Flow::Udt(u), FlowSpec::Udt(_)) => {
                    kind.push("udt".to_string());
                    flavor.push("udt".to_string());
                    recovery.push("nak".to_string());
                    let st = u.sender.stats();
                    let r = u.receiver.stats();
                    let flow_end = u
                        .completed_at
                        .map(|c| c.as_secs_f64())
                        .or(stop_ns.map(|s| (s as f64 / 1e9).min(end_s)))
                        .unwrap_or(end_s);
                    let h = &u.rtt;
                    [
                        i as f64,
                        start_s,
                        flow_end,
                        u.sender.bytes_offered().min(u.bytes.unwrap_or(u64::MAX)) as f64,
                        st.bytes_sent as f64,
                        st.bytes_retransmitted as f64,
                        u.delivered_bytes as f64,
                        st.packets_sent as f64,
                        st.packets_retransmitted as f64,
                        r.packets_received as f64,
                        st.packets_sent.saturating_sub(r.packets_received) as f64,
                        // EXP timeouts; congestion periods (NAKs that started one); no spurious
                        // timeout detection.
                        st.exp_timeouts as f64,
                        u.sender.cc().stats().congestion_periods as f64,
                        f64::NAN,
                        r.duplicate_bytes as f64,
                        u.completed_at.map_or(f64::NAN, |c| (c - SimTime(start_ns)).as_secs_f64()),
                        h.min() / 1e9,
                        h.mean() / 1e9,
                        h.quantile(0.5) / 1e9,
                        h.quantile(0.95) / 1e9,
                        h.quantile(0.99) / 1e9,
                        h.count() as f64,
                    ]
                }
                (Flow::Cbr(c), _) => {
                    kind.push("udp_cbr".to_string());
                    flavor.push("udp-cbr".to_string());
                    recovery.push(String::new());
                    let pb = c.packet_bytes as f64;
                    let flow_end = stop_ns.map(|s| (s as f64 / 1e9).min(end_s)).unwrap_or(end_s);
                    let nan = f64::NAN;
                    [
                        i as f64,
                        start_s,
                        flow_end,
                        c.sent as f64 * pb,
                        c.sent as f64 * pb,
                        0.0,
                        c.received as f64 * pb,
                        c.sent as f64,
                        0.0,
                        c.received as f64,
                        c.sent.saturating_sub(c.received) as f64,
                        nan,
                        nan,
                        nan,
                        0.0,
                        nan,
                        nan,
                        nan,
                        nan,
                        nan,
                        nan,
                        0.0,
                    ]
                }
                _ => unreachable!("flow kinds follow the spec"),
            };
            for (col, v) in num.iter_mut().zip(row) {
                col.1.push(v);
            }
        }
        let mut columns: Vec<(&'static str, Column)> = vec![
            ("name", Column::Str(name)),
            ("kind", Column::Str(kind)),
            ("flavor", Column::Str(flavor)),
            ("recovery", Column::Str(recovery)),
        ];
        columns.extend(num.into_iter().map(|(n, v)| (n, Column::F64(v))));
        // Keep `flow` first, as in the spec document.
        let flow = columns.remove(4);
        columns.insert(0, flow);
        Table { columns }
    }

    fn link_table(&self) -> Table {
        let mut name = Vec::new();
        let cols = [
            "link",
            "rate_bps",
            "delay_ns",
            "packets_in",
            "bytes_in",
            "packets_delivered",
            "packets_dropped_queue",
            "packets_marked",
            "packets_lost_wire",
            "packets_queued_end",
            "packets_in_flight_end",
            "bytes_transmitted",
            "utilization",
        ];
        let mut num: Vec<Vec<f64>> = vec![Vec::with_capacity(self.links.len()); cols.len()];
        let elapsed_ns = self.now.as_nanos();
        for (i, (link, spec)) in self.links.iter().zip(&self.spec.links).enumerate() {
            name.push(spec.name.clone());
            let c = link.counters();
            let row = [
                i as f64,
                spec.rate_bps as f64,
                spec.delay_ns as f64,
                c.packets_in as f64,
                c.bytes_in as f64,
                c.packets_delivered as f64,
                c.packets_dropped_queue as f64,
                c.packets_marked as f64,
                c.packets_lost_wire as f64,
                link.queued_packets() as f64,
                link.in_pipe_packets() as f64,
                c.bytes_transmitted as f64,
                // Busy time over elapsed time: right when events change the rate.
                if elapsed_ns > 0 { link.busy_ns(self.now) as f64 / elapsed_ns as f64 } else { f64::NAN },
            ];
            for (col, v) in num.iter_mut().zip(row) {
                col.push(v);
            }
        }
        let mut columns: Vec<(&'static str, Column)> = Vec::new();
        let mut it = cols.iter().zip(num);
        let (n0, v0) = it.next().expect("link column");
        columns.push((n0, Column::F64(v0)));
        columns.push(("name", Column::Str(name)));
        columns.extend(it.map(|(n, v)| (*n, Column::F64(v))));
        Table { columns }
    }
}
