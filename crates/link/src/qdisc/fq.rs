//! Flow queueing: FQ-CoDel (Høiland-Jørgensen, McKenney, Täht, Gettys, Dumazet, RFC 8290, 2018)
//! and plain per-flow fair queueing by deficit round robin (Shreedhar & Varghese, "Efficient Fair
//! Queueing using Deficit Round Robin", SIGCOMM 1995).
//!
//! Packets are hashed by flow into `flows` queues (RFC 8290 §4.1.1; the hash is perturbed by a
//! value drawn from the queue's stream, so collisions differ between seeds). Queues take turns by
//! deficit round robin with a quantum of `quantum` bytes (§4.2: a queue whose deficit is
//! exhausted gets another quantum and goes to the back of the list). FQ-CoDel keeps two lists
//! (§4.2): a queue that becomes active joins the *new* list, served before the *old* one, so a
//! sparse flow's packets go out almost at once; a new queue that empties or spends its quantum
//! moves to the old list, an old queue that empties leaves. Each queue runs its own CoDel
//! (§4.3, [`super::codel`]). When the total backlog exceeds the limit, a packet is dropped from
//! the head of the queue with the most bytes (§4.1: the flow causing the overflow pays).
//! FQ is the same scheduler with one list, no CoDel: DRR as in Shreedhar & Varghese §3.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::codel::{Codel, CodelConfig};
use super::fifo::Fifo;
use super::interface::{Entry, Limit, QdiscCounters, QueuedPacket, Verdict, MTU_BYTES};
use crate::field_error::{positive, FieldError};
use ccarena_rng::mix64;

/// The most flow queues FQ-CoDel and FQ take (the engine spec's bound; Linux's fq_codel allows
/// 65,536 too).
pub const MAX_FLOWS: u32 = 65_536;

/// The flow scheduler's parameters, and the engine spec's `queue.fq` object (every key required).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FqConfig {
    /// Number of flow queues packets are hashed into (RFC 8290 §5.2.1: 1024).
    pub flows: u32,
    /// Bytes a queue may send per round (RFC 8290 §5.2.3: the MTU, 1514 in Linux; here 1500).
    pub quantum_bytes: u64,
}

impl Default for FqConfig {
    /// 1024 queues, a 1500-byte quantum.
    fn default() -> Self {
        FqConfig { flows: 1024, quantum_bytes: MTU_BYTES }
    }
}

impl FqConfig {
    /// Check the values: 1 to [`MAX_FLOWS`] flow queues, a positive quantum.
    ///
    /// # Errors
    /// The first problem, naming the field (`flows`, `quantum_bytes`).
    pub fn validate(&self) -> Result<(), FieldError> {
        if !(1..=MAX_FLOWS).contains(&self.flows) {
            return Err(FieldError::new("flows", format!("{} is not in [1, {MAX_FLOWS}]", self.flows)));
        }
        positive("quantum_bytes", self.quantum_bytes)
    }
}

/// The engine spec's `queue.fq_codel` object (RFC 8290 §5.2: 1024 flows, quantum = MTU; CoDel's
/// 5 ms / 100 ms): CoDel's parameters per flow queue and the flow scheduler's, in one object.
/// Every key is required.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FqCodelSpec {
    /// Each queue's CoDel target, ns (positive, below `interval_ns`).
    pub target_ns: u64,
    /// Each queue's CoDel interval, ns (positive).
    pub interval_ns: u64,
    /// Number of flow queues packets are hashed into (1 to [`MAX_FLOWS`]).
    pub flows: u32,
    /// Deficit round robin quantum, bytes (positive).
    pub quantum_bytes: u64,
    /// Mark ECT packets CE instead of dropping them.
    pub ecn: bool,
}

impl FqCodelSpec {
    /// The flow scheduler's part.
    pub fn fq(&self) -> FqConfig {
        FqConfig { flows: self.flows, quantum_bytes: self.quantum_bytes }
    }

    /// Each flow queue's CoDel.
    pub fn codel(&self) -> CodelConfig {
        CodelConfig { target_ns: self.target_ns, interval_ns: self.interval_ns, ecn: self.ecn, mtu_bytes: MTU_BYTES }
    }

    /// Check the values as [`CodelConfig::validate`] and [`FqConfig::validate`] do, CoDel's first.
    ///
    /// # Errors
    /// The first problem, naming the field.
    pub fn validate(&self) -> Result<(), FieldError> {
        self.codel().validate()?;
        self.fq().validate()
    }
}

/// Which list a queue is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum On {
    None,
    New,
    Old,
}

#[derive(Clone, Debug)]
struct FlowQueue<P> {
    fifo: Fifo<P>,
    deficit: i64,
    on: On,
    codel: Option<Codel>,
}

/// The flow queues and their schedule.
#[derive(Clone, Debug)]
pub struct FlowQueues<P> {
    queues: Vec<FlowQueue<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    quantum: i64,
    perturbation: u64,
    /// FQ-CoDel (two lists, CoDel per queue) rather than plain DRR.
    fq_codel: bool,
    packets: u64,
    bytes: u64,
}

impl<P: QueuedPacket> FlowQueues<P> {
    /// Empty queues; `codel` makes it FQ-CoDel, `perturbation` salts the flow hash.
    pub fn new(cfg: &FqConfig, codel: Option<&CodelConfig>, perturbation: u64) -> FlowQueues<P> {
        let queues = (0..cfg.flows.max(1))
            .map(|_| FlowQueue { fifo: Fifo::new(), deficit: 0, on: On::None, codel: codel.map(Codel::new) })
            .collect();
        FlowQueues {
            queues,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            quantum: cfg.quantum_bytes.max(1) as i64,
            perturbation,
            fq_codel: codel.is_some(),
            packets: 0,
            bytes: 0,
        }
    }

    /// Packets waiting in all queues.
    #[inline]
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Bytes waiting in all queues.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The queue a flow hashes to (RFC 8290 §4.1.1).
    #[inline]
    fn classify(&self, flow_hash: u64) -> usize {
        (mix64(flow_hash ^ self.perturbation) % self.queues.len() as u64) as usize
    }

    /// Enqueue at the tail of the flow's queue (§4.1), activating it; on overflow drop from the
    /// fattest queue's head.
    pub fn enqueue(&mut self, pkt: P, now_ns: u64, limit: Limit, counters: &mut QdiscCounters) -> Verdict {
        let i = self.classify(pkt.flow_hash());
        self.packets += pkt.packets();
        self.bytes += pkt.size_bytes();
        let q = &mut self.queues[i];
        q.fifo.push(Entry { pkt, enqueued_ns: now_ns });
        if q.on == On::None {
            q.deficit = self.quantum;
            if self.fq_codel {
                q.on = On::New;
                self.new_flows.push_back(i as u32);
            } else {
                q.on = On::Old;
                self.old_flows.push_back(i as u32);
            }
        }
        let mut verdict = Verdict::Enqueue;
        while limit.exceeded(self.packets, self.bytes) {
            let fattest = self.fattest();
            let e = self.queues[fattest].fifo.pop().expect("the fattest queue holds packets");
            self.packets -= e.pkt.packets();
            self.bytes -= e.pkt.size_bytes();
            counters.dropped += e.pkt.packets();
            if fattest == i && self.queues[i].fifo.is_empty() {
                // The arrival itself was the only packet of its queue.
                verdict = Verdict::Drop;
            }
        }
        verdict
    }

    /// The queue holding the most bytes (the first listed among equals). Only listed queues can
    /// hold packets, so the scan costs the active flows, not all `flows` queues.
    fn fattest(&self) -> usize {
        let mut best = (0, 0);
        for &i in self.new_flows.iter().chain(self.old_flows.iter()) {
            let bytes = self.queues[i as usize].fifo.bytes();
            if bytes > best.1 {
                best = (i as usize, bytes);
            }
        }
        best.0
    }

    /// The next packet by the round robin (§4.2), after each queue's CoDel (FQ-CoDel).
    pub fn dequeue(&mut self, now_ns: u64, counters: &mut QdiscCounters) -> Option<Entry<P>> {
        loop {
            let (i, from_new) = if let Some(&i) = self.new_flows.front() {
                (i as usize, true)
            } else if let Some(&i) = self.old_flows.front() {
                (i as usize, false)
            } else {
                return None;
            };
            let quantum = self.quantum;
            let q = &mut self.queues[i];
            if q.deficit <= 0 {
                // Quantum spent: another one, and to the back of the old list.
                q.deficit += quantum;
                q.on = On::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(i as u32);
                continue;
            }
            let (before_packets, before_bytes) = (q.fifo.packets(), q.fifo.bytes());
            let e = match &mut q.codel {
                Some(c) => c.dequeue(&mut q.fifo, now_ns, counters),
                None => q.fifo.pop(),
            };
            // CoDel may have dropped packets of this queue: keep the totals in step.
            self.packets -= before_packets - q.fifo.packets();
            self.bytes -= before_bytes - q.fifo.bytes();
            match e {
                Some(e) => {
                    q.deficit -= e.pkt.size_bytes() as i64;
                    return Some(e);
                }
                None => {
                    // Empty: a new queue moves to the old list (so it cannot return to the new
                    // list at once and starve the others, §4.2), an old queue leaves.
                    if from_new {
                        self.new_flows.pop_front();
                        if self.old_flows.is_empty() {
                            q.on = On::None;
                        } else {
                            q.on = On::Old;
                            self.old_flows.push_back(i as u32);
                        }
                    } else {
                        self.old_flows.pop_front();
                        q.on = On::None;
                    }
                }
            }
        }
    }

    /// Drop everything (the link went down).
    pub fn clear(&mut self) {
        for q in &mut self.queues {
            q.fifo.clear();
            q.on = On::None;
            q.deficit = 0;
        }
        self.new_flows.clear();
        self.old_flows.clear();
        self.packets = 0;
        self.bytes = 0;
    }
}
