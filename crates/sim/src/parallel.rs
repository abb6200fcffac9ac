//! One run on several threads: the network split into parts, each simulated by its own copy of
//! the simulation on its own thread, synchronized conservatively in windows of simulated time as
//! long as the shortest propagation delay between two parts (the lookahead: a packet serialized
//! in one part cannot reach another sooner; Chandy & Misra, "Distributed simulation", IEEE TSE
//! 1979; Lubachevsky's bounded-lag windows, CACM 1989; Unison, EuroSys 2024, for a packet-level
//! network simulator). After each window every part hands the packets in flight on its links
//! into other parts to those parts, which schedule their arrivals.
//!
//! Results are bit-identical to the single-threaded run's whatever the number of threads:
//! events at one instant run in an order that does not depend on which queue holds them
//! (`crate::event`), each part runs exactly the events of its nodes, and the parts' state is
//! put back together into one simulation at the end ([`Simulation::assemble`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ccarena_cc::SimTime;

use crate::engine::{Part, Simulation, Transit};
use crate::packet::Payload;
use crate::spec::{FlowSpec, NodeKind, Spec, SpecError};

/// A barrier that spins, then yields: a window of a microsecond of simulated time holds a few
/// microseconds of work per thread, where a sleeping barrier's wake-up alone costs more.
/// With more threads than cores a waiting thread holds a core another needs: it yields at once.
/// A thread that panics breaks the barrier ([`SpinBarrier::break_all`]), so the others return
/// instead of waiting for it for ever.
struct SpinBarrier {
    waiting: AtomicUsize,
    generation: AtomicUsize,
    broken: AtomicBool,
    threads: usize,
    spins: u32,
}

impl SpinBarrier {
    fn new(threads: usize) -> SpinBarrier {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spins = if threads <= cores { 20_000 } else { 0 };
        SpinBarrier { waiting: AtomicUsize::new(0), generation: AtomicUsize::new(0), broken: AtomicBool::new(false), threads, spins }
    }

    /// Return true once all `threads` threads have called it (as many times); false, at once or
    /// while waiting, once the barrier is broken.
    fn wait(&self) -> bool {
        let generation = self.generation.load(Ordering::Acquire);
        if self.waiting.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.waiting.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return !self.broken.load(Ordering::Acquire);
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if self.broken.load(Ordering::Acquire) {
                return false;
            }
            if spins < self.spins {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
        !self.broken.load(Ordering::Acquire)
    }

    /// Release every thread waiting now or later: one of them failed.
    fn break_all(&self) {
        self.broken.store(true, Ordering::Release);
    }
}

/// Split the nodes of `spec` into at most `parts` parts for [`SplitRun`]: hosts in contiguous
/// blocks of equal size by index, and every router in the part most common among its
/// neighbours nearer a host (breadth-first from the hosts; ties spread by the router's index).
/// A run that captures packets (`pcap`) is not split. Then parts are joined (the higher number into the lower) wherever a split would be wrong or
/// give no lookahead: the two ends of a link of zero delay or of a link a scheduled event
/// changes (its packets in flight would change with it), and the two hosts of a flow whose
/// receiver reads its sender's RTT samples (TCP with receive-buffer autotuning or SACK
/// compression: `Receiver::on_rcv_rtt_sample`) or of an MPTCP connection. Parts are numbered
/// from 0 without gaps.
pub fn partition(spec: &Spec, parts: usize) -> Vec<u16> {
    // A capture's files are written by the thread that serializes the packets; one part keeps
    // them whole.
    let parts = if spec.pcap.is_some() { 1 } else { parts.clamp(1, u16::MAX as usize) };
    let n = spec.nodes.len();
    let hosts: Vec<usize> = (0..n).filter(|&v| spec.nodes[v].kind == NodeKind::Host).collect();
    let mut part = vec![0u16; n];
    let mut dist = vec![usize::MAX; n];
    let mut adj = vec![Vec::new(); n];
    for l in &spec.links {
        adj[l.from].push(l.to);
        adj[l.to].push(l.from);
    }
    let mut frontier = Vec::new();
    for (i, &h) in hosts.iter().enumerate() {
        part[h] = (i * parts / hosts.len()) as u16;
        dist[h] = 0;
        frontier.push(h);
    }
    let mut d = 0;
    while !frontier.is_empty() {
        d += 1;
        let mut next = Vec::new();
        for &u in &frontier {
            for &v in &adj[u] {
                if dist[v] == usize::MAX {
                    dist[v] = d;
                    next.push(v);
                }
            }
        }
        next.sort_unstable();
        for &v in &next {
            let mut votes = vec![0usize; parts];
            for &u in adj[v].iter().filter(|&&u| dist[u] == d - 1) {
                votes[part[u] as usize] += 1;
            }
            let best = *votes.iter().max().expect("at least one part");
            let tied: Vec<usize> = (0..parts).filter(|&p| votes[p] == best).collect();
            part[v] = tied[v % tied.len()] as u16;
        }
        frontier = next;
    }
    let changed_links: Vec<usize> = spec.events.iter().map(|e| e.link).collect();
    let mut together: Vec<(usize, usize)> = spec
        .links
        .iter()
        .enumerate()
        .filter(|(i, l)| l.delay_ns == 0 || changed_links.contains(i))
        .map(|(_, l)| (l.from, l.to))
        .collect();
    together.extend(spec.flows.iter().filter(|f| reads_peer_state(f)).map(|f| f.endpoints()));
    let mut label: Vec<u16> = (0..parts as u16).collect();
    let find = |label: &[u16], mut p: u16| {
        while label[p as usize] != p {
            p = label[p as usize];
        }
        p
    };
    for (a, b) in together {
        let (ra, rb) = (find(&label, part[a]), find(&label, part[b]));
        label[ra.max(rb) as usize] = ra.min(rb);
    }
    // Renumber the parts left from 0, in order of their lowest node.
    let mut number = vec![u16::MAX; parts];
    let mut next = 0;
    for p in part.iter_mut() {
        let root = find(&label, *p) as usize;
        if number[root] == u16::MAX {
            number[root] = next;
            next += 1;
        }
        *p = number[root];
    }
    part
}

/// The flow's receiving end reads its sending end's state directly (not through packets), so
/// the two must run in one part.
fn reads_peer_state(f: &FlowSpec) -> bool {
    match f {
        FlowSpec::Tcp(t) => t.mptcp.is_some() || t.quic.is_none() && (t.rcvbuf_autotuning || t.sack_compression),
        _ => false,
    }
}

/// The lookahead of a partition: the shortest delay of a link between two parts, ns; `None`
/// when no link crosses.
pub fn lookahead_ns(spec: &Spec, part: &[u16]) -> Option<u64> {
    spec.links.iter().filter(|l| part[l.from] != part[l.to]).map(|l| l.delay_ns).min()
}

/// What one part hands another at a window's end.
#[derive(Debug, Default)]
struct Mail {
    /// Packets in flight on links into the receiving part.
    transits: Vec<Transit>,
    /// Spare header boxes for the receiving part's pools, with their flows' indices
    /// ([`Simulation::import`]).
    boxes: Vec<(u32, Payload)>,
}

/// A run split over threads: one copy of the simulation per part of the network
/// ([`partition`]), advanced together window by window.
#[derive(Debug)]
pub struct SplitRun {
    parts: Vec<Simulation>,
    /// The longest window, ns: the lookahead.
    window_ns: u64,
    /// The first instant not yet handled, ns.
    next_ns: u64,
    /// The parts the network was split into (1: not split), also once put back together.
    split_into: usize,
    /// CPU time of the threads that ran the parts so far, ns.
    worker_cpu_ns: u64,
}

/// CPU time of the calling thread, ns (Linux's `/proc/thread-self/schedstat`); 0 where it
/// cannot be read.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

impl SplitRun {
    /// Build the copies of `spec`'s simulation for a run on up to `threads` threads.
    ///
    /// # Errors
    /// A [`SpecError`] if the spec is invalid.
    pub fn new(spec: Spec, threads: usize) -> Result<SplitRun, SpecError> {
        // Checked before the partition reads the spec's node and link indices.
        spec.validate()?;
        let part_of: Arc<[u16]> = partition(&spec, threads).into();
        let parts = part_of.iter().copied().max().map_or(1, |m| m as usize + 1);
        let window_ns = lookahead_ns(&spec, &part_of).unwrap_or(u64::MAX);
        let mut sims = Vec::with_capacity(parts);
        if parts == 1 {
            // Not split: the plain simulation, which owns every node.
            return Ok(SplitRun { parts: vec![Simulation::new(spec)?], window_ns, next_ns: 0, split_into: 1, worker_cpu_ns: 0 });
        }
        for me in 0..parts as u16 {
            let mut sim = Simulation::new(spec.clone())?;
            let cross_links =
                spec.links.iter().enumerate().filter(|(_, l)| part_of[l.from] == me && part_of[l.to] != me).map(|(i, _)| i as u32).collect();
            sim.set_part(Part { node_part: part_of.clone(), me, cross_links });
            sims.push(sim);
        }
        Ok(SplitRun { parts: sims, window_ns, next_ns: 0, split_into: parts, worker_cpu_ns: 0 })
    }

    /// The simulation, while the run is not split or once it is put back together
    /// ([`SplitRun::run_until`] does at the end): its results, paths and captures.
    ///
    /// # Errors
    /// The run is split and not finished: its parts are put together only at the end.
    pub fn simulation(&mut self) -> Result<&mut Simulation, &'static str> {
        match self.parts.len() {
            1 => Ok(&mut self.parts[0]),
            _ => Err("the run is split over threads and has not finished: its results are put together at its end"),
        }
    }

    /// [`Simulation::fail_at_for_tests`] for part `part` alone.
    pub fn fail_part_at_for_tests(&mut self, part: usize, at: SimTime) {
        self.parts[part].fail_at_for_tests(at);
    }

    /// [`Simulation::set_budget`] for every part (events counted per part).
    pub fn set_budget(&mut self, max_events: Option<u64>, max_memory_bytes: Option<u64>) {
        for sim in &mut self.parts {
            sim.set_budget(max_events, max_memory_bytes);
        }
    }

    /// Why the run stopped before its end, if a part went over its budget.
    pub fn over_budget(&self) -> Option<&str> {
        self.parts.iter().find_map(Simulation::over_budget)
    }

    /// Events handled so far, all parts.
    pub fn events_processed(&self) -> u64 {
        self.parts.iter().map(Simulation::events_processed).sum()
    }

    /// Header boxes the parts' pools hold now ([`Simulation::pooled_boxes`]).
    pub fn pooled_boxes(&self) -> usize {
        self.parts.iter().map(Simulation::pooled_boxes).sum()
    }

    /// Header boxes the parts' pools have allocated so far ([`Simulation::header_boxes_allocated`]).
    pub fn header_boxes_allocated(&self) -> u64 {
        self.parts.iter().map(Simulation::header_boxes_allocated).sum()
    }

    /// The parts the network is split into (1: the run is not split, or was put back together).
    pub fn parts(&self) -> usize {
        self.parts.len()
    }

    /// The parts the network was split into when the run was built (1: not split): what
    /// [`SplitRun::parts`] said before the run was put back together.
    pub fn split_into(&self) -> usize {
        self.split_into
    }

    /// CPU seconds the threads that ran the parts have used so far (0 for a run not split, which
    /// runs on the calling thread); read from Linux's per-thread accounting, 0 where missing.
    pub fn worker_cpu_s(&self) -> f64 {
        self.worker_cpu_ns as f64 / 1e9
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.parts[0].spec().seed
    }

    /// The current simulated time.
    pub fn now(&self) -> SimTime {
        self.parts[0].now()
    }

    /// The end of the run.
    pub fn end(&self) -> SimTime {
        self.parts[0].end()
    }

    /// True once the run has reached its duration.
    pub fn finished(&self) -> bool {
        self.parts.iter().all(Simulation::finished)
    }

    /// Handle every event due at or before `min(t, end)`, one thread per part: window by
    /// window, each at most the lookahead long, every part handles its events before the
    /// window's end and then hands the packets in flight into other parts to them.
    pub fn run_until(&mut self, t: SimTime) {
        let target = t.min(self.end());
        if self.parts.len() == 1 {
            return self.parts[0].run_until(target);
        }
        if target.as_nanos() < self.next_ns {
            return;
        }
        let start = self.next_ns;
        self.next_ns = target.as_nanos() + 1;
        let parts = self.parts.len();
        let window_ns = self.window_ns;
        // Per part, two mailboxes used in alternate windows: a part writes window k + 1's
        // packets into the other one while its reader may still take window k's, so one
        // barrier per window suffices.
        let mailboxes: Vec<[Mutex<Mail>; 2]> = (0..parts).map(|_| [Mutex::default(), Mutex::default()]).collect();
        let barrier = SpinBarrier::new(parts);
        let over_budget = AtomicBool::new(false);
        let cpu_ns = AtomicU64::new(0);
        let failure: Mutex<Option<Box<dyn std::any::Any + Send>>> = Mutex::new(None);
        std::thread::scope(|scope| {
            for (me, sim) in self.parts.iter_mut().enumerate() {
                let (mailboxes, barrier, over_budget, failure, cpu_ns) = (&mailboxes, &barrier, &over_budget, &failure, &cpu_ns);
                scope.spawn(move || {
                    let cpu_at_start = thread_cpu_ns();
                    // A part that panics (an engine fault) breaks the barrier so the others
                    // return, and its panic is raised again once every thread has ended.
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let mut outbox: Vec<Vec<Transit>> = (0..parts).map(|_| Vec::new()).collect();
                        // Emptied after each window and swapped for the mailbox's: the vectors'
                        // buffers go round between the threads instead of being freed and
                        // allocated again every window.
                        let mut inbox = Mail::default();
                        // Windows [from, last]: every part stops at the same ends.
                        let (mut from, mut parity) = (start, 0);
                        loop {
                            let last = SimTime(from.saturating_add(window_ns - 1).min(target.as_nanos()));
                            sim.run_until(last);
                            if sim.over_budget().is_some() {
                                over_budget.store(true, Ordering::Relaxed);
                            }
                            sim.export_in_flight(last, &mut |dest, t| outbox[dest as usize].push(t));
                            for (dest, out) in outbox.iter_mut().enumerate().filter(|(_, o)| !o.is_empty()) {
                                mailboxes[dest][parity].lock().expect("mailbox").transits.append(out);
                            }
                            sim.return_boxes(&mut |dest, boxes| {
                                mailboxes[dest as usize][parity].lock().expect("mailbox").boxes.append(boxes);
                            });
                            if !barrier.wait() {
                                break;
                            }
                            std::mem::swap(&mut *mailboxes[me][parity].lock().expect("mailbox"), &mut inbox);
                            sim.accept_boxes(inbox.boxes.drain(..));
                            for t in inbox.transits.drain(..) {
                                sim.import(t);
                            }
                            // Every part stops at the same window when one went over its budget.
                            if last >= target || over_budget.load(Ordering::Relaxed) {
                                break;
                            }
                            from = last.as_nanos() + 1;
                            parity ^= 1;
                        }
                    }));
                    cpu_ns.fetch_add(thread_cpu_ns().saturating_sub(cpu_at_start), Ordering::Relaxed);
                    if let Err(panic) = outcome {
                        barrier.break_all();
                        *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(panic);
                    }
                });
            }
        });
        self.worker_cpu_ns += cpu_ns.into_inner();
        if let Some(panic) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
            std::panic::resume_unwind(panic);
        }
        if self.finished() && self.over_budget().is_none() {
            let parts = std::mem::take(&mut self.parts);
            self.parts.push(Simulation::assemble(parts));
        }
    }

    /// Run to the end.
    pub fn run(&mut self) {
        let end = self.end();
        self.run_until(end);
    }

    /// The run as one simulation: the run is not split, or it has finished (its parts were
    /// put back together, [`Simulation::assemble`]).
    ///
    /// # Panics
    /// If the run is split and has not finished.
    pub fn finish(mut self) -> Simulation {
        assert_eq!(self.parts.len(), 1, "a split run is put together at its end");
        let mut sim = self.parts.pop().expect("one part");
        sim.clear_part();
        sim
    }
}
