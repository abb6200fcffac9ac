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

use super::codel::{CeThreshold, Codel, CodelConfig};
use super::fifo::Fifo;
use super::interface::{Backlog, Entry, Limit, QdiscCounters, QueuedPacket, Verdict, MTU_BYTES};
use super::selector::EcnSelector;
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
/// Every key is required except the CE threshold's two (Linux's `ce_threshold` and
/// `ce_threshold_selector`, tc-fq_codel(8): the L4S mode, [`super::codel::CeThreshold`]), which
/// are absent or null when unused.
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
    /// Mark CE every selected ECT packet whose sojourn exceeds this, besides CoDel's law
    /// (Linux's `ce_threshold`), ns; null (or absent) = no threshold.
    #[serde(default)]
    pub ce_threshold_ns: Option<u64>,
    /// The packets `ce_threshold_ns` applies to: `"all"` ECT packets (the default, Linux's without
    /// a selector) or `"l4s"`, only ECT(1) (Linux's `ce_threshold_selector 0x1/0x1`; RFC 9331
    /// §5.1). Null (or absent) = `"all"`; set only with `ce_threshold_ns`.
    #[serde(default)]
    pub ce_threshold_selector: Option<EcnSelector>,
}

impl FqCodelSpec {
    /// The flow scheduler's part.
    pub fn fq(&self) -> FqConfig {
        FqConfig { flows: self.flows, quantum_bytes: self.quantum_bytes }
    }

    /// Each flow queue's CoDel.
    pub fn codel(&self) -> CodelConfig {
        let ce_threshold =
            self.ce_threshold_ns.map(|sojourn_ns| CeThreshold { sojourn_ns, selector: self.ce_threshold_selector.unwrap_or_default() });
        CodelConfig { target_ns: self.target_ns, interval_ns: self.interval_ns, ecn: self.ecn, mtu_bytes: MTU_BYTES, ce_threshold }
    }

    /// Check the values as [`CodelConfig::validate`] and [`FqConfig::validate`] do, CoDel's first,
    /// then the CE threshold's: a selector only with a threshold.
    ///
    /// # Errors
    /// The first problem, naming the field.
    pub fn validate(&self) -> Result<(), FieldError> {
        self.codel().validate()?;
        self.fq().validate()?;
        if self.ce_threshold_selector.is_some() && self.ce_threshold_ns.is_none() {
            return Err(FieldError::new("ce_threshold_selector", "needs ce_threshold (the sojourn time above which it marks)"));
        }
        Ok(())
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
    /// What waits in all queues.
    backlog: Backlog,
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
            backlog: Backlog::default(),
        }
    }

    /// Packets and bytes waiting in all queues.
    #[inline]
    pub fn backlog(&self) -> Backlog {
        self.backlog
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
        self.backlog.add(&pkt);
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
        while limit.exceeded(self.backlog.packets(), self.backlog.bytes()) {
            let fattest = self.fattest();
            let e = self.queues[fattest].fifo.pop().expect("the fattest queue holds packets");
            self.backlog.remove(&e.pkt);
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
            let before = q.fifo.backlog();
            let e = match &mut q.codel {
                Some(c) => c.dequeue(&mut q.fifo, now_ns, counters),
                None => q.fifo.pop(),
            };
            // CoDel may have dropped packets of this queue: keep the totals in step.
            self.backlog.remove_shrinkage(before, q.fifo.backlog());
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
        self.backlog = Backlog::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::test_packets::FlagPkt;

    fn spec(ce_threshold_ns: Option<u64>, ce_threshold_selector: Option<EcnSelector>) -> FqCodelSpec {
        FqCodelSpec {
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            flows: 1024,
            quantum_bytes: 1500,
            ecn: true,
            ce_threshold_ns,
            ce_threshold_selector,
        }
    }

    /// An ECT(1) flow and an ECT(0) flow, four packets each enqueued at 0, sent one per 0.4 ms
    /// from 0.4 ms (sojourn 0.4 … 3.2 ms, under CoDel's 5 ms target): with a 1 ms threshold the
    /// packets sent after 1 ms are marked — both flows' with `"all"`, only the ECT(1) flow's with
    /// `"l4s"` — and counted as marks.
    #[test]
    fn the_threshold_marks_each_flow_queue_by_sojourn_and_selector() {
        let run = |s: &FqCodelSpec| {
            let mut f = FlowQueues::new(&s.fq(), Some(&s.codel()), 7);
            let mut counters = QdiscCounters::default();
            for _ in 0..4 {
                for (flow, l4s) in [(1, true), (2, false)] {
                    let pkt = FlagPkt { flow, ect: true, l4s, ..FlagPkt::default() };
                    f.enqueue(pkt, 0, Limit::Packets(100), &mut counters);
                }
            }
            let mut marked = [0u64; 3];
            for i in 1..=8u64 {
                let e = f.dequeue(i * 400_000, &mut counters).expect("eight packets wait");
                let sojourn_over = i * 400_000 > 1_000_000;
                assert!(!e.pkt.ce || sojourn_over, "marked at {} ns", i * 400_000);
                marked[e.pkt.flow as usize] += u64::from(e.pkt.ce);
            }
            (marked, counters)
        };
        let (none, counters) = run(&spec(None, None));
        assert_eq!((none, counters), ([0, 0, 0], QdiscCounters::default()));
        // Sent at 1.2, 1.6, 2.0, 2.4, 2.8, 3.2 ms: three packets of each flow.
        let (all, counters) = run(&spec(Some(1_000_000), None));
        assert_eq!((all, counters.marked), ([0, 3, 3], 6));
        assert_eq!(run(&spec(Some(1_000_000), Some(EcnSelector::All))).0, all);
        let (l4s, counters) = run(&spec(Some(1_000_000), Some(EcnSelector::L4s)));
        assert_eq!((l4s, counters.marked, counters.dropped), ([0, 3, 0], 3, 0));
    }

    #[test]
    fn a_selector_needs_a_threshold_and_the_fields_are_optional_in_the_format() {
        assert_eq!(spec(Some(1_000_000), Some(EcnSelector::L4s)).validate(), Ok(()));
        assert_eq!(
            spec(None, Some(EcnSelector::L4s)).validate().unwrap_err().to_string(),
            "ce_threshold_selector: needs ce_threshold (the sojourn time above which it marks)"
        );
        let before: FqCodelSpec =
            serde_json::from_str(r#"{"target_ns": 5000000, "interval_ns": 100000000, "flows": 1024, "quantum_bytes": 1500, "ecn": true}"#).unwrap();
        assert_eq!(before, spec(None, None));
        assert_eq!(before.codel(), CodelConfig { ecn: true, ..CodelConfig::default() });
        let l4s: FqCodelSpec = serde_json::from_str(
            r#"{"target_ns": 5000000, "interval_ns": 100000000, "flows": 1024, "quantum_bytes": 1500, "ecn": true, "ce_threshold_ns": 1000000, "ce_threshold_selector": "l4s"}"#,
        )
        .unwrap();
        assert_eq!(l4s.codel().ce_threshold, Some(CeThreshold { sojourn_ns: 1_000_000, selector: EcnSelector::L4s }));
        assert_eq!(spec(Some(5), None).codel().ce_threshold, Some(CeThreshold { sojourn_ns: 5, selector: EcnSelector::All }));
    }
}
