//! The discrete-event engine: nodes, links, routes and flows driven by one event queue.
//!
//! Time is integer nanoseconds. Events of one instant run in an order fixed by the events
//! themselves, not by when they were scheduled (`crate::event`), every random
//! process draws from its own stream, so the same spec gives bit-identical results. The run is
//! advanced in chunks with [`Simulation::run_until`] so a front end can show progress and stop.

use ccarena_cc::{Duration, SimTime};

use crate::endpoint::{drain, with_endpoint, AckBoxes, Endpoint, Side};
use crate::event::{Event, EventQueue};
use crate::flow::Flow;
use crate::link::Link;
use crate::packet::{Packet, Payload};
use crate::pcap::frame::FlowAddress;
use crate::pcap::{CaptureStats, LinkCapture};
use crate::results::{flow_row, flow_sample, flow_table, link_row, link_table};
use ccarena_link::LinkStreams;
use ccarena_rng::{SplitMix64, StreamKind};
use ccarena_link::TraceTransmitter;
use crate::routing::{hash_threshold, uniform_index, FlowKeys, Graph, Routes, MULTI};
use crate::sampler::Sampler;
use crate::subflows::SubflowSampler;
use crate::spec::{EventSpec, FlowSpec, RoutingMode, Spec, SpecError};
use crate::table::Results;

/// `via` of a packet its own host sends (it arrived over no link).
const FROM_HOST: u32 = u32::MAX;

/// The most TCP ACK boxes a part of a split run keeps for reuse (about 7 MB): a bound on what
/// the exchange of boxes between parts ([`Simulation::import`]) leaves in one part.
const SPLIT_ACK_BOXES: usize = 1 << 16;

/// Events between two budget checks (a power of two): a check reads a file, so it is amortized
/// over many events, yet comes within milliseconds of wall time.
pub const BUDGET_CHECK_EVERY: u64 = 1 << 16;

/// Limits a run may not exceed ([`Simulation::set_budget`]).
#[derive(Clone, Copy, Debug, Default)]
struct Budget {
    max_events: Option<u64>,
    max_memory_bytes: Option<u64>,
}

impl Budget {
    fn is_set(&self) -> bool {
        self.max_events.is_some() || self.max_memory_bytes.is_some()
    }

    /// Why `events` handled so far, or the process's memory now, exceed the budget.
    fn exceeded(&self, events: u64) -> Option<String> {
        if let Some(max) = self.max_events.filter(|&m| events > m) {
            return Some(format!("the run handled {events} events, over its budget of {max}"));
        }
        let max = self.max_memory_bytes?;
        let rss = resident_bytes()?;
        (rss > max).then(|| format!("the process holds {} MB, over the memory budget of {} MB", rss >> 20, max >> 20))
    }
}

/// The process's resident memory in bytes (Linux), or None where it cannot be read.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// A simulation of one resolved [`Spec`].
#[derive(Debug)]
pub struct Simulation {
    spec: Spec,
    now: SimTime,
    end: SimTime,
    events: EventQueue,
    links: Vec<Link>,
    /// The forwarding table (`crate::routing`).
    routes: Routes,
    /// How a node picks from a next-hop set; `None` = the static table (one link per entry).
    mode: Option<RoutingMode>,
    /// The graph routes are computed over (computed routing only).
    graph: Graph,
    /// Per node: its ECMP hash salt.
    node_salt: Vec<u64>,
    /// Per node: its spraying stream.
    node_rng: Vec<SplitMix64>,
    /// Per flow: the 5-tuple hashes of both directions.
    flow_keys: Vec<FlowKeys>,
    /// Per link: packets that arrived over it at a node with no route onward.
    no_route_drops: Vec<u64>,
    flows: Vec<Flow>,
    /// The spec's scheduled link changes sorted by time (stable), indexed by `Event::LinkChange`.
    changes: Vec<EventSpec>,
    sampler: Sampler,
    subflow_sampler: SubflowSampler,
    sample_interval: Duration,
    events_processed: u64,
    /// Limits the run stops at ([`Simulation::set_budget`]), and why it stopped, if it did.
    budget: Budget,
    over_budget: Option<String>,
    /// Reused buffer so the per-packet path never allocates.
    outgoing: Vec<Packet>,
    /// Boxes of TCP ACKs, shared by every flow ([`AckBoxes`]).
    ack_boxes: AckBoxes,
    /// When the run is split over threads (`crate::parallel`): the part of the network this
    /// copy simulates; `None`: all of it.
    part: Option<Part>,
    /// Per link, in a split run (empty otherwise): whether it leads into another part and
    /// holds packets not yet exported. A window's export visits only `cross_dirty`, the links
    /// with packets, not every link into another part (a cache miss each).
    cross_pending: Vec<CrossState>,
    /// The links leading into another part that hold packets not yet exported.
    cross_dirty: Vec<u32>,
    /// In a split run, per part: spare header boxes for that part, one for each boxed header
    /// it sent into this one, to give at the window's end ([`Simulation::import`]); each with
    /// its flow's index.
    returning_boxes: Vec<Vec<(u32, Payload)>>,
    /// In a split run, each flow's (source, destination) hosts: where a header crossing into
    /// this part was boxed ([`Simulation::import`]), without reading the flow's spec.
    flow_ends: Vec<(u32, u32)>,
    /// [`Simulation::fail_at_for_tests`]: `run_until` panics once asked to run past this time.
    fault_at: Option<SimTime>,
}

/// A link's standing in a split run's export ([`Simulation::export_in_flight`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CrossState {
    /// Both ends in this part.
    Inside,
    /// Into another part, nothing to export.
    Idle,
    /// Into another part, with packets queued or in flight.
    Pending,
}

/// The nodes one thread's copy of a simulation handles (`crate::parallel`): it runs their
/// links' queues, the ends of transfers on its hosts and their applications; the copy's other
/// state stays idle.
#[derive(Clone, Debug)]
pub struct Part {
    /// Per node: the part that simulates it.
    pub node_part: std::sync::Arc<[u16]>,
    /// This copy's part.
    pub me: u16,
    /// Links from a node of this part to a node of another: their packets in flight are handed
    /// to the far end's part ([`Simulation::export_in_flight`]).
    pub cross_links: Vec<u32>,
}

/// A packet in flight on link `link`, due at its far end at `arrival`, handed from the thread
/// that serialized it to the thread that simulates that end.
#[derive(Debug)]
pub struct Transit {
    /// The link.
    pub link: u32,
    /// When it reaches the far end.
    pub arrival: SimTime,
    /// Held back to be overtaken (a reordering wire).
    pub held: bool,
    /// The packet.
    pub packet: Packet,
}

impl Simulation {
    /// Validate `spec` ([`Spec::validate`], the one place a run's values are checked) and build
    /// its simulation.
    ///
    /// # Errors
    /// A [`SpecError`] naming the first field that fails validation.
    pub fn new(spec: Spec) -> Result<Simulation, SpecError> {
        spec.validate()?;
        let n = spec.nodes.len();
        let links = spec
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let streams = LinkStreams::simulator(spec.seed, i as u64);
                let link = Link::new(
                    l.from as u32,
                    l.to as u32,
                    l.rate_bps,
                    Duration(l.delay_ns),
                    l.wire.loss,
                    crate::queue::qdisc(&l.queue, streams.queue),
                    streams.loss,
                );
                let link = link.with_impairments(l.impairments(streams.duplicate, streams.reorder));
                let link = match spec.link_jitter.filter(|f| *f > 0.0) {
                    Some(fraction) => link.with_jitter(streams.jitter, fraction),
                    None => link,
                };
                match l.trace.as_ref().map(|t| t.rate_trace().expect("validated")) {
                    Some(trace) => link.with_trace(TraceTransmitter::new(trace, 0)),
                    None => link,
                }
            })
            .collect();
        let mode = crate::routing::mode(&spec);
        let graph = Graph::new(&spec);
        let routes = if mode.is_some() {
            let routes = Routes::compute(&spec, &graph, &vec![true; spec.links.len()]);
            routes.check_flows(&spec, &graph)?;
            routes
        } else {
            Routes::from_static(&spec)
        };
        let mut node_rng: Vec<SplitMix64> = (0..n).map(|v| SplitMix64::stream(spec.seed, StreamKind::Routing, v as u64)).collect();
        let node_salt = node_rng.iter_mut().map(SplitMix64::next_u64).collect();
        let flow_keys = spec.flows.iter().enumerate().map(|(i, f)| FlowKeys::new(spec.seed, i, f)).collect();
        let mut flows = Vec::with_capacity(spec.flows.len());
        let mut events = EventQueue::new();
        // Scheduled changes rank first among the events of an instant (`Event::rank`), so a
        // change applies before every other event at its instant (docs/engine-spec.md, events).
        let mut changes = spec.events.clone();
        changes.sort_by_key(|e| e.time_ns);
        for (i, c) in changes.iter().enumerate() {
            events.push(SimTime(c.time_ns), Event::LinkChange(i as u32));
        }
        for (i, f) in spec.flows.iter().enumerate() {
            flows.push(Flow::idle(i, f, spec.seed)?);
            let stop = f.schedule().1;
            events.push(SimTime(f.sender_start_ns()), Event::FlowStart(i as u32));
            if let Some(stop) = stop {
                events.push(SimTime(stop), Event::FlowStop(i as u32));
            }
        }
        let sample_interval = Duration(spec.sample_interval_ns);
        events.push(SimTime::ZERO + sample_interval, Event::Sample);
        let mut sampler = Sampler::new(flows.len(), &spec.links, sample_interval.as_secs_f64());
        sampler.reserve((spec.duration_ns / spec.sample_interval_ns.max(1)) as usize);
        Ok(Simulation {
            now: SimTime::ZERO,
            end: SimTime(spec.duration_ns),
            events,
            routes,
            mode,
            graph,
            node_salt,
            node_rng,
            flow_keys,
            no_route_drops: vec![0; spec.links.len()],
            sampler,
            subflow_sampler: SubflowSampler::new(flows.len(), sample_interval.as_secs_f64()),
            flows,
            changes,
            links,
            sample_interval,
            events_processed: 0,
            budget: Budget::default(),
            over_budget: None,
            outgoing: Vec::new(),
            ack_boxes: AckBoxes::default(),
            part: None,
            cross_pending: Vec::new(),
            cross_dirty: Vec::new(),
            returning_boxes: Vec::new(),
            flow_ends: Vec::new(),
            fault_at: None,
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

    /// Entries in the event queue now, stale timer entries included (for benchmarks).
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    /// The spec being run.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The links, in spec order.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The flows, in spec order (a TCP or UDT transfer is [`Flow::Idle`] until it starts).
    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// Handle every event due at or before `min(t, end)` and set the clock there.
    ///
    /// With a budget ([`Simulation::set_budget`]) the run stops inside this call once it has
    /// handled more events, or the process holds more resident memory, than allowed:
    /// [`Simulation::over_budget`] then says why, and further calls do nothing.
    pub fn run_until(&mut self, t: SimTime) {
        if self.over_budget.is_some() {
            return;
        }
        if self.fault_at.is_some_and(|at| t >= at) {
            panic!("fault injected by the test suite at {} ns", t.as_nanos());
        }
        let limit = t.min(self.end);
        while let Some((time, event)) = self.events.pop_until(limit) {
            self.now = time;
            self.events_processed += 1;
            self.handle(event);
            if self.events_processed & (BUDGET_CHECK_EVERY - 1) == 0 && self.budget.is_set() {
                if let Some(why) = self.budget.exceeded(self.events_processed) {
                    self.over_budget = Some(why);
                    return;
                }
            }
        }
        self.now = self.now.max(limit);
    }

    /// Make [`Simulation::run_until`] panic when asked to run to `at` or later, as an engine
    /// fault would: for the tests of what a fault does to a run split over threads.
    pub fn fail_at_for_tests(&mut self, at: SimTime) {
        self.fault_at = Some(at);
    }

    /// Stop the run inside [`Simulation::run_until`] once it has handled more than `max_events`
    /// events or the process's resident memory (Linux `/proc/self/statm`) exceeds
    /// `max_memory_bytes`; `None` = no limit. Checked every [`BUDGET_CHECK_EVERY`] events.
    pub fn set_budget(&mut self, max_events: Option<u64>, max_memory_bytes: Option<u64>) {
        self.budget = Budget { max_events, max_memory_bytes };
    }

    /// Why the run stopped before its end (a budget of [`Simulation::set_budget`]), if it did.
    pub fn over_budget(&self) -> Option<&str> {
        self.over_budget.as_deref()
    }

    /// One simulation from the parts of a run split over threads, as if one thread had run it
    /// (`crate::parallel`): each flow's sending end from its sending host's part and its
    /// receiving end from its receiving host's ([`Flow::take_receiver_side`]), each link from
    /// its sending node's part with what the far end's part still holds in flight
    /// ([`Link::absorb_far_end`]), the samples merged row by row. Its results, paths and
    /// captures read as a single-threaded run's; it is not run further.
    ///
    /// # Panics
    /// If `parts` is empty or its simulations are not the parts of one split run.
    pub fn assemble(mut parts: Vec<Simulation>) -> Simulation {
        let part_of = parts[0].part.as_ref().expect("the parts of a split run").node_part.clone();
        let spec = &parts[0].spec;
        let flow_parts: Vec<(u16, u16)> = spec.flows.iter().map(|f| f.endpoints()).map(|(s, d)| (part_of[s], part_of[d])).collect();
        let link_ends: Vec<(u16, u16)> = spec.links.iter().map(|l| (part_of[l.from], part_of[l.to])).collect();
        let link_part: Vec<u16> = link_ends.iter().map(|e| e.0).collect();
        let sampler = Sampler::merge(&parts.iter().map(|s| &s.sampler).collect::<Vec<_>>(), &flow_parts, &link_part);
        let subflow_sampler = SubflowSampler::merge(
            &parts.iter().map(|s| &s.subflow_sampler).collect::<Vec<_>>(),
            &flow_parts.iter().map(|p| p.0).collect::<Vec<_>>(),
        );
        let events_processed = parts.iter().map(|s| s.events_processed).sum();
        let over_budget = parts.iter().find_map(|s| s.over_budget.clone());
        let no_route_drops = (0..link_ends.len()).map(|l| parts.iter().map(|s| s.no_route_drops[l]).sum()).collect();
        let now = parts.iter().map(|s| s.now).max().expect("at least one part");
        let mut flow_sets: Vec<Vec<Option<Flow>>> =
            parts.iter_mut().map(|s| std::mem::take(&mut s.flows).into_iter().map(Some).collect()).collect();
        let mut link_sets: Vec<Vec<Option<Link>>> =
            parts.iter_mut().map(|s| std::mem::take(&mut s.links).into_iter().map(Some).collect()).collect();
        let flows = flow_parts
            .iter()
            .enumerate()
            .map(|(f, &(sp, rp))| {
                let mut flow = flow_sets[sp as usize][f].take().expect("each flow taken once");
                if rp != sp {
                    flow.take_receiver_side(flow_sets[rp as usize][f].as_mut().expect("each flow taken once"));
                }
                flow
            })
            .collect();
        let links = link_ends
            .iter()
            .enumerate()
            .map(|(l, &(from, to))| {
                let mut link = link_sets[from as usize][l].take().expect("each link taken once");
                if to != from {
                    link.absorb_far_end(link_sets[to as usize][l].as_mut().expect("each link taken once"));
                }
                link
            })
            .collect();
        let mut sim = parts.swap_remove(0);
        sim.flows = flows;
        sim.links = links;
        sim.sampler = sampler;
        sim.subflow_sampler = subflow_sampler;
        sim.events_processed = events_processed;
        sim.over_budget = over_budget;
        sim.no_route_drops = no_route_drops;
        sim.now = now;
        sim.clear_part();
        sim
    }

    /// Simulate only the nodes of `part` from now on (`crate::parallel`). Call before running.
    pub fn set_part(&mut self, part: Part) {
        self.cross_pending = vec![CrossState::Inside; self.links.len()];
        for &l in &part.cross_links {
            self.cross_pending[l as usize] = CrossState::Idle;
        }
        let parts = part.node_part.iter().copied().max().map_or(1, |m| m as usize + 1);
        self.returning_boxes = (0..parts).map(|_| Vec::new()).collect();
        self.flow_ends = self.spec.flows.iter().map(|f| f.endpoints()).map(|(s, d)| (s as u32, d as u32)).collect();
        self.part = Some(part);
        self.ack_boxes.0.limit(SPLIT_ACK_BOXES);
    }

    /// Header boxes the run's pools hold now (`crate::pool`): what a split run's parts keep
    /// for reuse, bounded whatever the run's length.
    pub fn pooled_boxes(&self) -> usize {
        self.ack_boxes.0.len() + self.flows.iter().map(|f| f.box_pools().0).sum::<usize>()
    }

    /// Header boxes the run's pools have allocated so far (`crate::pool`): in steady state a
    /// run allocates none, split or not.
    pub fn header_boxes_allocated(&self) -> u64 {
        self.ack_boxes.0.allocated() + self.flows.iter().map(|f| f.box_pools().1).sum::<u64>()
    }

    /// Forget the part (a split run of one part: it simulated every node).
    pub fn clear_part(&mut self) {
        self.part = None;
        self.cross_pending.clear();
        self.cross_dirty.clear();
        self.returning_boxes.clear();
    }

    /// This copy simulates `node` (always, unless the run is split over threads).
    #[inline(always)]
    fn owns(&self, node: u32) -> bool {
        self.part.as_ref().is_none_or(|p| p.node_part[node as usize] == p.me)
    }

    /// Advance this part's links that lead to another part to `now` and hand each packet in
    /// flight on them to `out` (the far end's part, the transit). Call once every event up
    /// to `now` is handled ([`Simulation::run_until`]).
    pub fn export_in_flight(&mut self, now: SimTime, out: &mut impl FnMut(u16, Transit)) {
        let Some(part) = self.part.as_ref() else { return };
        let mut k = 0;
        while k < self.cross_dirty.len() {
            let l = self.cross_dirty[k];
            let link = &mut self.links[l as usize];
            let dest = part.node_part[link.to as usize];
            link.export_in_flight(now, &mut |arrival, held, packet| out(dest, Transit { link: l, arrival, held, packet }));
            if link.is_idle() {
                self.cross_pending[l as usize] = CrossState::Idle;
                self.cross_dirty.swap_remove(k);
            } else {
                k += 1; // still serializing: its packets leave in a later window
            }
        }
    }

    /// Take a packet another part serialized onto a link that ends in this one, and schedule
    /// its arrival. Its arrival must be after every event handled so far.
    ///
    /// A boxed header (a TCP ACK; a QUIC packet or ACK frame; a UDT ACK or NAK) that is to
    /// reach its end in this part travels on in a box of the same kind from this part's pool,
    /// when it has one, and the box it came in goes back to the part that boxed it
    /// ([`Simulation::return_boxes`]): with headers flowing one way between two parts, the part
    /// that boxes them would otherwise allocate a box per header and the part that reads them
    /// free one. The header's contents move into the local box, so each part works in boxes
    /// its own cache holds and only the emptied one crosses back.
    pub fn import(&mut self, mut t: Transit) {
        let l = t.link as usize;
        if let Some(part) = self.part.as_ref().filter(|_| t.packet.payload.is_boxed()) {
            let f = t.packet.flow as usize;
            let pkt = &mut t.packet;
            let (src, dst) = self.flow_ends[f];
            // The host that boxed the header: the flow's other end from the packet's destination.
            let origin = if pkt.dst == dst { src } else { dst };
            let origin_part = part.node_part[origin as usize] as usize;
            if part.node_part[pkt.dst as usize] == part.me && origin_part != part.me as usize {
                let spare = match &pkt.payload {
                    Payload::Ack(_) => self.ack_boxes.0.take_kept().map(Payload::Ack),
                    like => self.flows[f].spare_box(like),
                };
                if let Some(local) = spare {
                    let theirs = pkt.payload.move_into(local);
                    self.returning_boxes[origin_part].push((pkt.flow, theirs));
                }
            }
        }
        self.links[l].inject(t.arrival, t.held, t.packet);
        self.ensure_link_event(l);
    }

    /// Hand the spare boxes for other parts ([`Simulation::import`]) to `out`, per part: `out`
    /// takes them from the vector (which keeps its capacity).
    pub fn return_boxes(&mut self, out: &mut impl FnMut(u16, &mut Vec<(u32, Payload)>)) {
        for (part, boxes) in self.returning_boxes.iter_mut().enumerate().filter(|(_, b)| !b.is_empty()) {
            out(part as u16, boxes);
        }
    }

    /// Keep the spare boxes another part gave ([`Simulation::return_boxes`]), each in its
    /// flow's pool (a TCP ACK's in the run's).
    pub fn accept_boxes(&mut self, boxes: impl IntoIterator<Item = (u32, Payload)>) {
        for (f, b) in boxes {
            match b {
                Payload::Ack(b) => self.ack_boxes.0.put(b),
                b => self.flows[f as usize].accept_box(b),
            }
        }
    }

    /// Run to the end.
    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::LinkArrival(l) => self.on_link_arrival(l as usize),
            Event::SenderTimer(f) => self.on_timer(f as usize, Side::Sender),
            Event::ReceiverTimer(f) => self.on_timer(f as usize, Side::Receiver),
            Event::FlowStart(f) => self.on_flow_start(f as usize),
            Event::FlowStop(f) => self.on_flow_stop(f as usize),
            Event::CbrSend(f) => self.on_cbr_send(f as usize),
            Event::Sample => self.on_sample(),
            Event::LinkChange(c) => self.on_link_change(c as usize),
        }
    }

    // ---- network ---------------------------------------------------------------------------

    /// Put `pkt`, which reached `node` over link `via` (`FROM_HOST` when `node` sent it), on the
    /// link `node` routes its destination to.
    #[inline(always)]
    fn send_from(&mut self, node: u32, via: u32, pkt: Packet) {
        let entry = self.routes.entry(node, pkt.dst);
        if entry & MULTI != 0 {
            return self.send_multi(node, via, pkt, entry);
        }
        // One next hop (every entry of a static table): a plain index, no further work.
        let l = entry as usize;
        self.links[l].enqueue(self.now, pkt);
        if self.note_cross(l) {
            return; // its arrivals are the far end's part's, handed over at the window's end
        }
        self.ensure_link_event(l);
    }

    /// [`Simulation::send_from`] for an entry that is a next-hop set or no route: pick the link
    /// by hash-threshold on the flow's 5-tuple (ECMP) or a draw from the node's stream (spray);
    /// without a route drop the packet and count it on `via`. Out of line so the single-next-hop
    /// path stays small where it is inlined.
    #[inline(never)]
    fn send_multi(&mut self, node: u32, via: u32, pkt: Packet, entry: u32) {
        let links = self.routes.links(&entry);
        let i = match (links.len(), self.mode) {
            (0, _) => return self.no_route(via),
            (1, _) | (_, None) => 0,
            (n, Some(RoutingMode::Ecmp)) => {
                let key = self.flow_keys[pkt.flow as usize].for_subflow(pkt.dst, pkt.payload.subflow());
                hash_threshold(key, self.node_salt[node as usize], n)
            }
            (n, Some(RoutingMode::Spray)) => uniform_index(self.node_rng[node as usize].next_u64(), n),
        };
        let l = links[i] as usize;
        self.links[l].enqueue(self.now, pkt);
        if self.note_cross(l) {
            return; // its arrivals are the far end's part's, handed over at the window's end
        }
        self.ensure_link_event(l);
    }

    /// Count a packet dropped for want of a route: on the link it arrived over; a packet its own
    /// host cannot route never entered the network and shows only as its flow's loss.
    #[cold]
    #[inline(never)]
    fn no_route(&mut self, via: u32) {
        if via != FROM_HOST {
            self.no_route_drops[via as usize] += 1;
        }
    }

    /// Per flow, the links of its data path and of its ACK path as routed now: exact with a
    /// static table and with ECMP; with spraying, the path of every node's first next hop
    /// (lowest link index), one of the many a flow's packets take. A path that dead-ends or loops
    /// (possible only after a link change) stops where it does.
    pub fn flow_paths(&self) -> Vec<(Vec<usize>, Vec<usize>)> {
        (0..self.spec.flows.len()).map(|f| self.flow_path_pair(f)).collect()
    }

    /// Per flow, per subflow, the data and ACK paths as routed now
    /// ([`Simulation::subflow_path_pair`]): one entry for a single-path flow, one per subflow
    /// for an MPTCP flow.
    pub fn subflow_paths(&self) -> Vec<Vec<(Vec<usize>, Vec<usize>)>> {
        self.spec
            .flows
            .iter()
            .enumerate()
            .map(|(f, spec)| {
                let n = match spec {
                    FlowSpec::Tcp(t) => t.mptcp.as_ref().map_or(1, |m| m.subflows),
                    _ => 1,
                };
                (0..n).map(|s| self.subflow_path_pair(f, s)).collect()
            })
            .collect()
    }

    /// Flow `f`'s data path and ACK path as routed now ([`Simulation::flow_paths`]); for an
    /// MPTCP flow, its first subflow's.
    fn flow_path_pair(&self, f: usize) -> (Vec<usize>, Vec<usize>) {
        self.subflow_path_pair(f, 0)
    }

    /// The data and ACK paths of subflow `subflow` of flow `f` as routed now (as
    /// [`Simulation::flow_paths`]; subflow 0 of a single-path flow is the flow).
    pub fn subflow_path_pair(&self, f: usize, subflow: u8) -> (Vec<usize>, Vec<usize>) {
        let walk = |src: usize, dst: usize| {
            let mut path = Vec::new();
            let mut at = src as u32;
            let key = self.flow_keys[f].for_subflow(dst as u32, subflow);
            while at as usize != dst && path.len() <= self.links.len() {
                let entry = self.routes.entry(at, dst as u32);
                let links = self.routes.links(&entry);
                let i = match (links.len(), self.mode) {
                    (0, _) => break,
                    (n, Some(RoutingMode::Ecmp)) if n > 1 => hash_threshold(key, self.node_salt[at as usize], n),
                    _ => 0,
                };
                path.push(links[i] as usize);
                at = self.graph.to(links[i]);
            }
            path
        };
        let (s, d) = self.spec.flows[f].endpoints();
        (walk(s, d), walk(d, s))
    }

    /// The round trip of a connection handshake for flow `f` over its paths as routed now with
    /// every queue empty: one `size`-byte segment (the SYN) across the data path and one (the
    /// SYN-ACK) back across the ACK path, each link adding its serialization and propagation
    /// delay (spec field `handshake_rtt`).
    fn idle_handshake_rtt(&self, f: usize, size: u64) -> Duration {
        self.idle_subflow_handshake_rtt(f, 0, size)
    }

    /// [`Simulation::idle_handshake_rtt`] over the paths of MPTCP subflow `subflow` of flow
    /// `f` (its MP_JOIN; subflow 0 is the flow's own).
    fn idle_subflow_handshake_rtt(&self, f: usize, subflow: u8, size: u64) -> Duration {
        let (data, ack) = self.subflow_path_pair(f, subflow);
        data.iter().chain(ack.iter()).fold(Duration::ZERO, |t, &l| t + self.links[l].idle_transit(size))
    }

    /// The forwarding table in use.
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// A packet joined link `l`'s queue: in a split run, a link into another part is then
    /// exported at the window's end (`cross_pending`), and true says so: this part schedules no
    /// arrival on it (the link serializes lazily, whenever it is next advanced). Empty outside a
    /// split run: one compare.
    #[inline(always)]
    fn note_cross(&mut self, l: usize) -> bool {
        match self.cross_pending.get_mut(l) {
            Some(state @ CrossState::Idle) => {
                *state = CrossState::Pending;
                self.cross_dirty.push(l as u32);
                true
            }
            Some(CrossState::Pending) => true,
            _ => false,
        }
    }

    /// Make sure link `l` has an event pending no later than its next arrival. Inline: most
    /// calls find one already scheduled (a packet joined a pipe that was not empty).
    #[inline(always)]
    fn ensure_link_event(&mut self, l: usize) {
        let link = &self.links[l];
        if let Some(t) = link.next_arrival() {
            if t < link.scheduled_at {
                self.schedule_link(l, t);
            }
        }
    }

    /// Push link `l`'s arrival event at `t` (earlier than any it has pending).
    #[inline]
    fn schedule_link(&mut self, l: usize, t: SimTime) {
        self.links[l].scheduled_at = t;
        self.events.push(t, Event::LinkArrival(l as u32));
    }

    /// Apply scheduled change `c`; the head of the link's pipe may now arrive earlier. Cold: a
    /// handful per run, kept out of the per-packet dispatch.
    #[cold]
    #[inline(never)]
    fn on_link_change(&mut self, c: usize) {
        let change = &self.changes[c];
        let l = change.link;
        let up = change.set.up;
        self.links[l].apply_change(self.now, &change.set);
        self.ensure_link_event(l);
        if up.is_some() && self.mode.is_some() {
            let up: Vec<bool> = self.links.iter().map(Link::is_up).collect();
            self.routes = Routes::compute(&self.spec, &self.graph, &up);
        }
    }

    fn on_link_arrival(&mut self, l: usize) {
        let now = self.now;
        let link = &mut self.links[l];
        if link.scheduled_at == now {
            link.scheduled_at = SimTime::NEVER;
        }
        link.advance(now);
        let node = link.to;
        // One packet at a time, straight from the pipe: handing a packet on touches other links
        // and flows only (a link never leads back to its own sender), so this link's arrivals
        // are the same as if all were taken first.
        while let Some(pkt) = self.links[l].pop_arrived(now) {
            if pkt.dst == node {
                self.deliver(pkt);
            } else {
                self.send_from(node, l as u32, pkt);
            }
        }
        self.ensure_link_event(l);
    }

    /// A packet reached its destination host.
    fn deliver(&mut self, pkt: Packet) {
        let f = pkt.flow as usize;
        if let Payload::Datagram { .. } = pkt.payload {
            if let Flow::Cbr(c) = &mut self.flows[f] {
                c.received += 1;
            }
            return;
        }
        let now = self.now;
        let side = with_endpoint!(&mut self.flows[f], ep => ep.receive(now, pkt.payload, &mut self.ack_boxes));
        self.flush(f, side);
    }

    // ---- transfers (TCP, UDT) --------------------------------------------------------------

    /// Send every packet `side` of transfer `f` has ready now, then make sure its timer is
    /// scheduled.
    fn flush(&mut self, f: usize, side: Side) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.outgoing);
        // One arm per side so each inlined drain sees its side as a constant.
        let flow = &mut self.flows[f];
        let acks = &mut self.ack_boxes;
        let (host, arm_at) = match side {
            Side::Sender => with_endpoint!(flow, ep => drain(ep, Side::Sender, now, f as u32, &mut out, acks)),
            Side::Receiver => with_endpoint!(flow, ep => drain(ep, Side::Receiver, now, f as u32, &mut out, acks)),
        };
        if let Some(at) = arm_at {
            let event = match side {
                Side::Sender => Event::SenderTimer(f as u32),
                Side::Receiver => Event::ReceiverTimer(f as u32),
            };
            self.events.push(at, event);
        }
        for pkt in out.drain(..) {
            self.send_from(host, FROM_HOST, pkt);
        }
        self.outgoing = out;
    }

    /// A timer entry of `side` of transfer `f` fired: act if a timer is really due (the entry may
    /// be stale), then send and re-arm.
    fn on_timer(&mut self, f: usize, side: Side) {
        let now = self.now;
        with_endpoint!(&mut self.flows[f], ep => {
            let armed_at = side.timer_at(ep.transfer());
            if *armed_at == now {
                *armed_at = SimTime::NEVER;
            }
            if ep.poll_timeout(side).is_some_and(|due| due <= now) {
                ep.handle_timeout(side, now);
            }
        });
        self.flush(f, side);
    }

    // ---- applications ----------------------------------------------------------------------

    fn on_flow_start(&mut self, f: usize) {
        self.flows[f].start(f, &self.spec.flows[f]);
        // Split over threads, the copy that simulates the sending host sends; the receiving
        // host's copy only starts its end.
        let (src, _) = self.spec.flows[f].endpoints();
        let sends = self.owns(src as u32);
        if let Flow::Cbr(_) = self.flows[f] {
            if sends {
                self.on_cbr_send(f);
            }
            return;
        }
        if let FlowSpec::Tcp(t) = &self.spec.flows[f] {
            if t.handshake_rtt {
                match &self.flows[f] {
                    Flow::Tcp(_) => {
                        let rtt = self.idle_handshake_rtt(f, t.ack_bytes as u64);
                        if let Flow::Tcp(tcp) = &mut self.flows[f] {
                            // Dated t0, not the flow's start: the connection opened before the
                            // run began (the kernel backend connects every sender before t0, the
                            // udp backend dates it at its connect), and Linux's bbr_init stamps
                            // min_rtt then, so a flow starting at 1 s expires its RTprop with the
                            // flows that started at 0 and probes RTT with them.
                            tcp.sender.on_handshake_rtt(rtt, SimTime::ZERO);
                            // The receiver's first RTT sample too (its SYN-ACK answered).
                            tcp.receiver.on_rcv_rtt_sample(rtt);
                        }
                    }
                    // Every subflow's own handshake, over its own (ECMP-hashed) path.
                    Flow::Mptcp(m) => {
                        let rtts: Vec<Duration> = (0..m.sender.subflow_count() as u8)
                            .map(|i| self.idle_subflow_handshake_rtt(f, i, t.ack_bytes as u64))
                            .collect();
                        if let Flow::Mptcp(m) = &mut self.flows[f] {
                            m.sender.on_handshake_rtts(&rtts, self.now);
                            for (i, rtt) in rtts.iter().enumerate() {
                                m.receiver.on_rcv_rtt_sample(i as u8, *rtt);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        if !sends {
            return;
        }
        with_endpoint!(&mut self.flows[f], ep => {
            let bytes = ep.transfer().app_bytes();
            ep.app_write(bytes);
        });
        self.flush(f, Side::Sender);
    }

    fn on_flow_stop(&mut self, f: usize) {
        // CBR flows check their stop time when they send.
        if !matches!(self.flows[f], Flow::Cbr(_)) {
            with_endpoint!(&mut self.flows[f], ep => ep.app_stop());
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
            payload: Payload::Datagram { seq: c.sent },
        };
        c.sent += 1;
        let (src, next) = (c.src, now + c.interval);
        self.events.push(next, Event::CbrSend(f as u32));
        self.send_from(src, FROM_HOST, pkt);
    }

    // ---- sampling --------------------------------------------------------------------------

    fn on_sample(&mut self) {
        let now = self.now;
        let time_s = now.as_secs_f64();
        for (i, (flow, spec)) in self.flows.iter().zip(&self.spec.flows).enumerate() {
            if now.as_nanos() < spec.schedule().0 {
                continue;
            }
            let row = flow_sample(i, flow);
            self.sampler.flow(time_s, &row);
            if let Flow::Mptcp(m) = flow {
                self.subflow_sampler.sample(time_s, i, m);
            }
        }
        self.sampler.sample_queues(now, time_s, &mut self.links);
        let next = now + self.sample_interval;
        if next <= self.end {
            self.events.push(next, Event::Sample);
        }
    }

    // ---- packet capture --------------------------------------------------------------------

    /// Start capturing the spec's `pcap` links into `dir` (created if missing), one file per
    /// link named by [`crate::pcap::file_names`]; nothing when the spec captures nothing. Call
    /// before running: packets that started serialization earlier are not recorded.
    ///
    /// # Errors
    /// A file cannot be created or written.
    pub fn start_capture(&mut self, dir: &std::path::Path) -> std::io::Result<()> {
        let Some(pcap) = self.spec.pcap.clone() else { return Ok(()) };
        std::fs::create_dir_all(dir)?;
        let flows: std::sync::Arc<[FlowAddress]> = FlowAddress::of_flows(&self.spec.flows).into();
        let names: Vec<&str> = self.spec.links.iter().map(|l| l.name.as_str()).collect();
        for (&l, file) in pcap.links.iter().zip(crate::pcap::file_names(&names, &pcap.links)) {
            let capture = LinkCapture::create(&dir.join(&file), flows.clone(), pcap.max_bytes)?;
            self.links[l].start_capture(capture);
        }
        Ok(())
    }

    /// Finish every capture: advance the captured links to now (recording the packets that
    /// started by then), flush the files and return, per captured link in the spec's order,
    /// (link index, file name, what it holds). Empty without a capture; a second call returns
    /// nothing.
    pub fn finish_capture(&mut self) -> Vec<(usize, String, CaptureStats)> {
        let Some(pcap) = self.spec.pcap.as_ref() else { return Vec::new() };
        let names: Vec<&str> = self.spec.links.iter().map(|l| l.name.as_str()).collect();
        let files = crate::pcap::file_names(&names, &pcap.links);
        let mut out = Vec::new();
        for (&l, file) in pcap.links.iter().zip(files) {
            self.links[l].advance(self.now);
            if let Some(stats) = self.links[l].finish_capture() {
                out.push((l, file, stats));
            }
        }
        out
    }

    // ---- results ---------------------------------------------------------------------------

    /// All result tables as of now (see `docs/engine-spec.md` for the columns).
    pub fn results(&mut self) -> Results {
        for link in &mut self.links {
            link.advance(self.now);
        }
        let flow_rows: Vec<_> =
            self.flows.iter().zip(&self.spec.flows).enumerate().map(|(i, (f, s))| flow_row(i, f, s, self.now)).collect();
        let link_rows: Vec<_> =
            self.links.iter().zip(&self.spec.links).enumerate().map(|(i, (l, s))| link_row(i, l, s, self.now, self.no_route_drops[i])).collect();
        Results {
            flows: flow_table(&flow_rows),
            samples: self.sampler.flow_table(),
            queues: self.sampler.queue_table(),
            links: link_table(&link_rows),
            subflows: self.subflow_sampler.table(),
        }
    }
}

