//! Queue disciplines: what a link's egress queue admits, marks, drops, and sends next.
//!
//! One interface ([`Qdisc`]) for every discipline, with both halves of a queue's life:
//! [`Qdisc::enqueue`] decides an arriving packet's admission (DropTail, RED and PIE decide
//! here), [`Qdisc::dequeue`] picks the packet the transmitter sends next (CoDel and DualPI2
//! decide here; FQ-CoDel and FQ schedule among flows here, DualPI2 between its two queues). The
//! queue holds the *waiting* packets only: the one being serialized has left it (as a Linux
//! qdisc's backlog excludes the NIC's), so limits, thresholds and sojourn times are over waiting
//! packets, and a packet's sojourn is the time from its enqueue to the start of its
//! serialization.
//!
//! The discipline is an enum, not a trait object: the simulator's per-packet path is hot and a
//! `match` inlines where a virtual call would not. The packet type is generic
//! ([`QueuedPacket`]): the simulator queues its `Packet`, the relay its frames.
//!
//! This module is the one registration of a discipline: its name and parameter object in the
//! link format ([`QueueSpec`], [`Discipline`]: what the engine spec's `queue` and the relay's
//! config say, with their validation, each rule once), its configuration ([`QdiscConfig`]) and its
//! place in the dispatch of [`Qdisc`]. The parameter object's fields and its own checks live in
//! the discipline's module.
//!
//! Disciplines, each from its primary source (see the module of each):
//! DropTail with DCTCP step marking ([`fifo`]), RED with gentle and Adaptive RED ([`red`]),
//! CoDel ([`codel`], RFC 8289), FQ-CoDel and FQ ([`fq`], RFC 8290; Shreedhar & Varghese 1995),
//! PIE ([`pie`], RFC 8033), DualPI2 ([`dualpi2`], RFC 9332). DropTail's step and the CE
//! threshold of CoDel and FQ-CoDel have L4S modes that apply only to ECT(1) packets ([`selector`]).

pub mod codel;
pub mod dualpi2;
pub mod fifo;
pub mod fq;
pub mod interface;
pub mod pie;
pub mod red;
pub mod selector;
#[cfg(test)]
pub(crate) mod test_packets;

pub use interface::{Backlog, Entry, Limit, QdiscCounters, QueuedPacket, Verdict, MTU_BYTES};

use ccarena_rng::SplitMix64;
use serde::{Deserialize, Serialize};

use crate::field_error::FieldError;
use codel::{Codel, CodelConfig};
use dualpi2::{DualPi2, DualPi2Config, DualQueues};
use fifo::Fifo;
use fq::{FlowQueues, FqCodelSpec, FqConfig};
use pie::{Pie, PieConfig};
use red::{Red, RedConfig, RedDecision, RedSpec};
pub use selector::EcnSelector;

/// An egress queue.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// Queue discipline.
    pub discipline: Discipline,
    /// Limit on waiting packets, or null when limited in bytes.
    pub limit_packets: Option<u64>,
    /// Limit on waiting bytes, or null when limited in packets.
    pub limit_bytes: Option<u64>,
    /// ECN marking threshold K in waiting packets: an ECN-capable (ECT) packet arriving when at
    /// least this many packets wait is marked CE instead of being dropped (DCTCP's marking, RFC
    /// 8257 §3.1). Null (or absent) = no marking by packets.
    #[serde(default)]
    pub ecn_threshold_packets: Option<u64>,
    /// ECN marking threshold K in waiting bytes, as `ecn_threshold_packets`. Null (or absent) = no
    /// marking by bytes. At most one of the two is set.
    #[serde(default)]
    pub ecn_threshold_bytes: Option<u64>,
    /// The arrivals the ECN threshold marks: `"all"` ECT packets (null or absent: today's step)
    /// or `"l4s"`, only ECT(1) ones (RFC 9331 §5.1), Classic ECT(0) packets then being treated
    /// as by plain DropTail. Set only with a threshold.
    #[serde(default)]
    pub ecn_threshold_selector: Option<EcnSelector>,
    /// RED's parameters: required with `discipline = "red"`, absent or null otherwise (written
    /// as null, so a serialized spec names every field).
    #[serde(default)]
    pub red: Option<RedSpec>,
    /// CoDel's parameters: required with `discipline = "codel"`, absent or null otherwise.
    #[serde(default)]
    pub codel: Option<CodelConfig>,
    /// FQ-CoDel's parameters: required with `discipline = "fq_codel"`, absent or null otherwise.
    #[serde(default)]
    pub fq_codel: Option<FqCodelSpec>,
    /// PIE's parameters: required with `discipline = "pie"`, absent or null otherwise.
    #[serde(default)]
    pub pie: Option<PieConfig>,
    /// FQ's parameters: required with `discipline = "fq"`, absent or null otherwise.
    #[serde(default)]
    pub fq: Option<FqConfig>,
    /// DualPI2's parameters: required with `discipline = "dualpi2"`, absent or null otherwise.
    #[serde(default)]
    pub dualpi2: Option<DualPi2Config>,
}

/// Queue disciplines.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Discipline {
    /// Tail drop at a fixed limit.
    Droptail,
    /// Random Early Detection (Floyd & Jacobson 1993) in front of the same hard limit.
    Red,
    /// CoDel (RFC 8289) in front of the same hard limit.
    Codel,
    /// FQ-CoDel (RFC 8290): flow queues, deficit round robin, CoDel per queue.
    FqCodel,
    /// PIE (RFC 8033) in front of the same hard limit.
    Pie,
    /// Per-flow fair queueing by deficit round robin, no AQM.
    Fq,
    /// The DualQ Coupled AQM (RFC 9332): an L4S queue and a Classic queue under PI2, coupled.
    #[serde(rename = "dualpi2")]
    DualPi2,
}

impl Discipline {
    /// Every discipline, in the order messages list them.
    pub const ALL: [Discipline; 7] = [
        Discipline::Droptail,
        Discipline::Red,
        Discipline::Pie,
        Discipline::Codel,
        Discipline::FqCodel,
        Discipline::Fq,
        Discipline::DualPi2,
    ];

    /// The name the spec uses (also the key of the discipline's parameter object).
    pub fn name(self) -> &'static str {
        match self {
            Discipline::Droptail => "droptail",
            Discipline::Red => "red",
            Discipline::Codel => "codel",
            Discipline::FqCodel => "fq_codel",
            Discipline::Pie => "pie",
            Discipline::Fq => "fq",
            Discipline::DualPi2 => "dualpi2",
        }
    }

    /// The discipline the spec calls `name`, if any.
    pub fn from_name(name: &str) -> Option<Discipline> {
        Discipline::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl QueueSpec {
    /// The disciplines that take a parameter object, each with whether this queue carries one.
    fn parameter_objects(&self) -> [(Discipline, bool); 6] {
        [
            (Discipline::Red, self.red.is_some()),
            (Discipline::Codel, self.codel.is_some()),
            (Discipline::FqCodel, self.fq_codel.is_some()),
            (Discipline::Pie, self.pie.is_some()),
            (Discipline::Fq, self.fq.is_some()),
            (Discipline::DualPi2, self.dualpi2.is_some()),
        ]
    }

    /// Check the queue's values; the limit's presence is the caller's rule (the engine spec
    /// requires exactly one, the relay allows none): the ECN step threshold (one unit, within the
    /// limit, DropTail only), the parameter object of the discipline and no other, and the
    /// discipline's own values.
    ///
    /// # Errors
    /// The first problem, naming the field relative to the queue (`codel.target_ns`; empty for
    /// the queue itself).
    pub fn validate(&self) -> Result<(), FieldError> {
        self.validate_ecn_threshold()?;
        self.validate_parameter_objects()?;
        self.validate_parameters()
    }

    /// The ECN step threshold: at most one unit, at most the limit in that unit; its selector
    /// only on DropTail and with a threshold.
    fn validate_ecn_threshold(&self) -> Result<(), FieldError> {
        if self.ecn_threshold_selector.is_some() {
            const FIELD: &str = "ecn_threshold_selector";
            match self.discipline {
                Discipline::Droptail if self.ecn_threshold_packets.is_none() && self.ecn_threshold_bytes.is_none() => {
                    return Err(FieldError::new(FIELD, "needs ecn_threshold (the step it selects for)"));
                }
                Discipline::Droptail => {}
                d @ (Discipline::FqCodel | Discipline::Codel) => {
                    let name = d.name();
                    return Err(FieldError::new(FIELD, format!("must be null with discipline \"{name}\" (it selects with {name}.ce_threshold_selector)")));
                }
                d => return Err(FieldError::new(FIELD, format!("must be null with discipline \"{}\" (a setting of DropTail's step marking)", d.name()))),
            }
        }
        match (self.ecn_threshold_packets, self.ecn_threshold_bytes) {
            (Some(_), Some(_)) => Err(FieldError::new("", "set at most one of ecn_threshold_packets and ecn_threshold_bytes")),
            (Some(k), None) if self.limit_packets.is_some_and(|lim| k > lim) => {
                Err(FieldError::new("ecn_threshold_packets", "must not exceed the queue limit"))
            }
            (None, Some(k)) if self.limit_bytes.is_some_and(|lim| k > lim) => Err(FieldError::new("ecn_threshold_bytes", "must not exceed the queue limit")),
            _ => Ok(()),
        }
    }

    /// The discipline's parameter object present and no other; the ECN step threshold only on
    /// DropTail (the others mark with their own `ecn`).
    fn validate_parameter_objects(&self) -> Result<(), FieldError> {
        let d = self.discipline;
        for (owner, present) in self.parameter_objects() {
            let field = owner.name();
            if owner == d && !present {
                return Err(FieldError::new(field, format!("required with discipline \"{field}\"")));
            }
            if owner != d && present {
                return Err(FieldError::new(
                    field,
                    format!("only a queue with discipline \"{field}\" takes {} parameters; set it to null", field.to_uppercase().replace('_', "-")),
                ));
            }
        }
        if d != Discipline::Droptail {
            for (field, k) in [("ecn_threshold_packets", self.ecn_threshold_packets), ("ecn_threshold_bytes", self.ecn_threshold_bytes)] {
                if k.is_some() {
                    let own = match d {
                        Discipline::Red => "RED marks with red.ecn = true".to_string(),
                        Discipline::DualPi2 => "it marks by its L4S step, dualpi2.l4s_threshold_ns".to_string(),
                        _ => format!("it marks with {}.ecn = true", d.name()),
                    };
                    return Err(FieldError::new(field, format!("must be null with discipline \"{}\" ({own})", d.name())));
                }
            }
        }
        Ok(())
    }

    /// Each present parameter object's own checks, its errors under its key.
    fn validate_parameters(&self) -> Result<(), FieldError> {
        if let Some(red) = self.red.as_ref().filter(|_| self.discipline == Discipline::Red) {
            red.validate(self.limit_packets, self.limit_bytes).map_err(|e| e.under("red"))?;
        }
        if let Some(c) = &self.codel {
            c.validate().map_err(|e| e.under("codel"))?;
        }
        if let Some(c) = &self.fq_codel {
            c.validate().map_err(|e| e.under("fq_codel"))?;
        }
        if let Some(c) = &self.fq {
            c.validate().map_err(|e| e.under("fq"))?;
        }
        if let Some(c) = &self.pie {
            c.validate().map_err(|e| e.under("pie"))?;
        }
        if let Some(c) = &self.dualpi2 {
            c.validate().map_err(|e| e.under("dualpi2"))?;
        }
        Ok(())
    }

    /// The hard limit (none when neither limit is set).
    pub fn limit(&self) -> Limit {
        match (self.limit_packets, self.limit_bytes) {
            (Some(p), _) => Limit::Packets(p),
            (None, Some(b)) => Limit::Bytes(b),
            (None, None) => Limit::Unlimited,
        }
    }

    /// The discipline a validated queue describes.
    ///
    /// # Panics
    /// When the discipline's parameter object is missing (see [`QueueSpec::validate`]); RED
    /// without one falls back to DropTail.
    pub fn qdisc_config(&self) -> QdiscConfig {
        let droptail = QdiscConfig::DropTail {
            ecn_threshold_packets: self.ecn_threshold_packets,
            ecn_threshold_bytes: self.ecn_threshold_bytes,
            ecn_threshold_selector: self.ecn_threshold_selector.unwrap_or_default(),
        };
        match self.discipline {
            Discipline::Droptail => droptail,
            Discipline::Red => self.red.as_ref().map_or(droptail, |r| QdiscConfig::Red(r.config())),
            Discipline::Codel => QdiscConfig::Codel(self.codel.expect("validated: codel present")),
            Discipline::FqCodel => {
                let c = self.fq_codel.as_ref().expect("validated: fq_codel present");
                QdiscConfig::FqCodel(c.fq(), c.codel())
            }
            Discipline::Pie => QdiscConfig::Pie(self.pie.expect("validated: pie present")),
            Discipline::Fq => QdiscConfig::Fq(self.fq.expect("validated: fq present")),
            Discipline::DualPi2 => QdiscConfig::DualPi2(self.dualpi2.expect("validated: dualpi2 present")),
        }
    }
}

/// A discipline and its parameters (the limit is separate: [`Limit`]).
#[derive(Clone, Debug, PartialEq)]
pub enum QdiscConfig {
    /// Tail drop at the limit; with a threshold K, ECT arrivals admitted while at least K
    /// packets (or bytes) wait are marked CE ([`fifo`]).
    DropTail {
        /// Mark ECT arrivals when at least this many packets wait.
        ecn_threshold_packets: Option<u64>,
        /// Mark ECT arrivals when at least this many bytes wait.
        ecn_threshold_bytes: Option<u64>,
        /// The arrivals the threshold applies to: all, or only ECT(1) ([`EcnSelector`]).
        ecn_threshold_selector: EcnSelector,
    },
    /// RED, gentle, Adaptive RED ([`red`]).
    Red(RedConfig),
    /// CoDel (RFC 8289, [`codel`]).
    Codel(CodelConfig),
    /// FQ-CoDel (RFC 8290, [`fq`]).
    FqCodel(FqConfig, CodelConfig),
    /// PIE (RFC 8033, [`pie`]).
    Pie(PieConfig),
    /// Per-flow deficit round robin without AQM ([`fq`]).
    Fq(FqConfig),
    /// The DualQ Coupled AQM (RFC 9332, [`dualpi2`]).
    DualPi2(DualPi2Config),
}

/// The discipline of one FIFO queue.
#[derive(Clone, Debug)]
enum FifoAqm {
    DropTail { k_packets: Option<u64>, k_bytes: Option<u64>, selector: EcnSelector },
    Red { red: Box<Red>, ecn: bool },
    Codel(Codel),
    Pie(Box<Pie>),
}

#[derive(Clone, Debug)]
enum Kind<P> {
    Fifo(Fifo<P>, FifoAqm),
    Flows(Box<FlowQueues<P>>),
    Dual(Box<DualQueues<P>>),
}

/// A queue discipline with its queued packets ([`QueuedPacket`]), limit and counters.
#[derive(Clone, Debug)]
pub struct Qdisc<P> {
    limit: Limit,
    counters: QdiscCounters,
    kind: Kind<P>,
    /// DropTail whose verdict on any arrival at an empty queue is `Enqueue` (a limit of at least
    /// one packet, or none; no ECN threshold of 0), so [`Qdisc::pass_through`] need not decide.
    /// Kept by [`Qdisc::set_limit`].
    empty_admits_all: bool,
}

/// How long a link with an empty queue whose transmitter is free from `tx_free_at_ns` has been
/// idle at `now_ns`, ns; `None` while the queue holds packets or the transmitter is busy.
#[inline]
pub fn idle_ns(queue_empty: bool, tx_free_at_ns: u64, now_ns: u64) -> Option<u64> {
    (queue_empty && tx_free_at_ns <= now_ns).then(|| now_ns - tx_free_at_ns)
}

impl<P: QueuedPacket> Qdisc<P> {
    /// A discipline with `config` and `limit`, drawing from `rng` (the queue's own stream: RED's
    /// and PIE's drop draws, the flow hash's perturbation of FQ-CoDel and FQ).
    pub fn new(config: &QdiscConfig, limit: Limit, mut rng: SplitMix64) -> Qdisc<P> {
        let kind = match config {
            QdiscConfig::DropTail { ecn_threshold_packets, ecn_threshold_bytes, ecn_threshold_selector } => Kind::Fifo(
                Fifo::new(),
                FifoAqm::DropTail { k_packets: *ecn_threshold_packets, k_bytes: *ecn_threshold_bytes, selector: *ecn_threshold_selector },
            ),
            QdiscConfig::Red(c) => Kind::Fifo(Fifo::new(), FifoAqm::Red { ecn: c.ecn, red: Box::new(Red::new(c, rng)) }),
            QdiscConfig::Codel(c) => Kind::Fifo(Fifo::new(), FifoAqm::Codel(Codel::new(c))),
            QdiscConfig::Pie(c) => Kind::Fifo(Fifo::new(), FifoAqm::Pie(Box::new(Pie::new(c, rng)))),
            QdiscConfig::FqCodel(fq, codel) => Kind::Flows(Box::new(FlowQueues::new(fq, Some(codel), rng.next_u64()))),
            QdiscConfig::Fq(fq) => Kind::Flows(Box::new(FlowQueues::new(fq, None, rng.next_u64()))),
            QdiscConfig::DualPi2(c) => Kind::Dual(Box::new(DualQueues::new(c, rng))),
        };
        let mut q = Qdisc { limit, counters: QdiscCounters::default(), kind, empty_admits_all: false };
        q.update_empty_admits_all();
        q
    }

    /// Recompute `empty_admits_all`: [`fifo::droptail`] with nothing waiting refuses only when
    /// the limit has no room for one packet (a byte limit depends on the size) and marks only
    /// with a threshold of 0.
    fn update_empty_admits_all(&mut self) {
        let thresholds_above_0 =
            matches!(&self.kind, Kind::Fifo(_, FifoAqm::DropTail { k_packets, k_bytes, .. }) if *k_packets != Some(0) && *k_bytes != Some(0));
        let room_for_any = match self.limit {
            Limit::Packets(n) => n >= 1,
            Limit::Bytes(_) => false,
            Limit::Unlimited => true,
        };
        self.empty_admits_all = thresholds_above_0 && room_for_any;
    }

    /// Offer `pkt` arriving at `now_ns` to the queue; `tx_free_at_ns` is when the transmitter
    /// finished (or finishes) its last packet and `rate_bps` the link's rate (RED ages its
    /// average over idle time with them). Arrivals come in time order, interleaved in time
    /// order with [`Qdisc::dequeue`]. A marked packet has had [`QueuedPacket::set_ce`] called.
    #[inline]
    pub fn enqueue(&mut self, mut pkt: P, now_ns: u64, tx_free_at_ns: u64, rate_bps: u64) -> Verdict {
        let verdict = match &mut self.kind {
            Kind::Fifo(q, FifoAqm::DropTail { k_packets, k_bytes, selector }) => {
                fifo::droptail(self.limit, *k_packets, *k_bytes, *selector, q.packets(), q.bytes(), &pkt)
            }
            Kind::Fifo(q, aqm) => admit_aqm(aqm, self.limit, q, &pkt, now_ns, tx_free_at_ns, rate_bps),
            Kind::Flows(f) => return enqueue_flows(f, pkt, now_ns, self.limit, &mut self.counters),
            Kind::Dual(d) => return enqueue_dual(d, pkt, now_ns, self.limit, &mut self.counters),
        };
        let Kind::Fifo(q, _) = &mut self.kind else { unreachable!("flow and dual queues returned above") };
        match verdict {
            Verdict::Enqueue => {}
            Verdict::Mark => {
                pkt.set_ce();
                self.counters.marked += pkt.packets();
            }
            Verdict::Drop => {
                self.counters.dropped += pkt.packets();
                return verdict;
            }
            Verdict::EarlyDrop => {
                self.counters.dropped += pkt.packets();
                self.counters.dropped_early += pkt.packets();
                return verdict;
            }
        }
        q.push(Entry { pkt, enqueued_ns: now_ns });
        verdict
    }

    /// True when the queue is empty and [`Qdisc::pass_through`] would admit any packet unmarked
    /// (DropTail with room for one packet and no ECN threshold of 0): a caller whose transmitter
    /// is idle may send the packet at once without asking.
    #[inline(always)]
    pub fn empty_and_admits_all(&self) -> bool {
        self.empty_admits_all && matches!(&self.kind, Kind::Fifo(q, _) if q.is_empty())
    }

    /// DropTail's decision on `pkt` arriving at an empty queue whose transmitter is idle, with
    /// the packet's mark set and counted as [`Qdisc::enqueue`] would: on `Enqueue` or `Mark` the
    /// caller sends it at once, exactly what an enqueue followed by a dequeue at the same
    /// instant gives, without the two copies through the queue. `None` (nothing changed) for
    /// any other discipline or a non-empty queue: use `enqueue` and `dequeue`.
    #[inline]
    pub fn pass_through(&mut self, pkt: &mut P) -> Option<Verdict> {
        let Kind::Fifo(q, FifoAqm::DropTail { k_packets, k_bytes, selector }) = &self.kind else { return None };
        if !q.is_empty() {
            return None;
        }
        if self.empty_admits_all {
            return Some(Verdict::Enqueue);
        }
        let verdict = fifo::droptail(self.limit, *k_packets, *k_bytes, *selector, 0, 0, pkt);
        match verdict {
            Verdict::Enqueue => {}
            Verdict::Mark => {
                pkt.set_ce();
                self.counters.marked += pkt.packets();
            }
            Verdict::Drop | Verdict::EarlyDrop => {
                self.counters.dropped += pkt.packets();
                if verdict == Verdict::EarlyDrop {
                    self.counters.dropped_early += pkt.packets();
                }
            }
        }
        Some(verdict)
    }

    /// The packet the transmitter starts sending at `now_ns`, if any: the discipline's choice,
    /// after its dequeue-time drops and marks (CoDel). Calls come in time order.
    #[inline]
    pub fn dequeue(&mut self, now_ns: u64) -> Option<Entry<P>> {
        // DropTail's and RED's dequeue is a pop: inline it, keep the others out of line.
        if let Kind::Fifo(q, FifoAqm::DropTail { .. } | FifoAqm::Red { .. }) = &mut self.kind {
            return q.pop();
        }
        self.dequeue_aqm(now_ns)
    }

    /// [`Qdisc::dequeue`] for the disciplines that decide or schedule at dequeue.
    #[inline(never)]
    fn dequeue_aqm(&mut self, now_ns: u64) -> Option<Entry<P>> {
        match &mut self.kind {
            Kind::Fifo(q, FifoAqm::DropTail { .. } | FifoAqm::Red { .. }) => q.pop(),
            Kind::Fifo(q, FifoAqm::Codel(c)) => c.dequeue(q, now_ns, &mut self.counters),
            Kind::Fifo(q, FifoAqm::Pie(p)) => p.dequeue(q, now_ns),
            Kind::Flows(f) => f.dequeue(now_ns, &mut self.counters),
            Kind::Dual(d) => d.dequeue(now_ns, &mut self.counters),
        }
    }

    /// The packet [`Qdisc::dequeue`] will return, when that is already certain: the head of a
    /// FIFO whose discipline decides only at arrival (DropTail, RED, PIE). `None` for an empty
    /// queue and for CoDel, FQ-CoDel, FQ and DualPI2, whose choice depends on the dequeue time or
    /// on later arrivals.
    #[inline]
    pub fn certain_head(&self) -> Option<&Entry<P>> {
        match &self.kind {
            Kind::Fifo(q, FifoAqm::DropTail { .. } | FifoAqm::Red { .. } | FifoAqm::Pie(_)) => q.front(),
            _ => None,
        }
    }

    /// The waiting packets in departure order, mutably, when that order is certain (DropTail,
    /// RED, PIE: see [`Qdisc::certain_head`]); `None` for the other disciplines. For callers that
    /// keep a schedule in their packets (the relay retimes it when the rate changes).
    pub fn certain_order_mut(&mut self) -> Option<impl Iterator<Item = &mut Entry<P>>> {
        match &mut self.kind {
            Kind::Fifo(q, FifoAqm::DropTail { .. } | FifoAqm::Red { .. } | FifoAqm::Pie(_)) => Some(q.iter_mut()),
            _ => None,
        }
    }

    /// The packet enqueued last, when the queue is a FIFO and it is still waiting (`None` for
    /// FQ-CoDel, FQ and DualPI2); for callers that complete its schedule once it is admitted.
    pub fn last_enqueued_mut(&mut self) -> Option<&mut Entry<P>> {
        match &mut self.kind {
            Kind::Fifo(q, _) => q.back_mut(),
            Kind::Flows(_) | Kind::Dual(_) => None,
        }
    }

    /// True when the discipline decides only at arrival and serves in arrival order (DropTail,
    /// RED, PIE): an admitted packet's departure is then fixed when it arrives.
    pub fn decides_at_arrival(&self) -> bool {
        matches!(&self.kind, Kind::Fifo(_, FifoAqm::DropTail { .. } | FifoAqm::Red { .. } | FifoAqm::Pie(_)))
    }

    /// Packets waiting.
    #[inline]
    pub fn backlog_packets(&self) -> u64 {
        match &self.kind {
            Kind::Fifo(q, _) => q.packets(),
            Kind::Flows(f) => f.backlog().packets(),
            Kind::Dual(d) => d.packets(),
        }
    }

    /// Bytes waiting.
    #[inline]
    pub fn backlog_bytes(&self) -> u64 {
        match &self.kind {
            Kind::Fifo(q, _) => q.bytes(),
            Kind::Flows(f) => f.backlog().bytes(),
            Kind::Dual(d) => d.bytes(),
        }
    }

    /// True when nothing waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        match &self.kind {
            Kind::Fifo(q, _) => q.is_empty(),
            Kind::Flows(f) => f.backlog().packets() == 0,
            Kind::Dual(d) => d.is_empty(),
        }
    }

    /// Cumulative decisions.
    #[inline]
    pub fn counters(&self) -> &QdiscCounters {
        &self.counters
    }

    /// The hard limit now.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Change the hard limit (scheduled events); nothing already queued is dropped.
    pub fn set_limit(&mut self, limit: Limit) {
        self.limit = limit;
        self.update_empty_admits_all();
    }

    /// Drop every waiting packet (the link went down); returns how many packets that was. Not
    /// counted as the discipline's drops.
    pub fn clear(&mut self) -> u64 {
        let n = self.backlog_packets();
        match &mut self.kind {
            Kind::Fifo(q, _) => q.clear(),
            Kind::Flows(f) => f.clear(),
            Kind::Dual(d) => d.clear(),
        }
        n
    }

    /// The active queue management of a discipline with state of its own (RED, CoDel, PIE,
    /// DualPI2), for reading that state through the discipline's own type; `None` for DropTail,
    /// FQ-CoDel and FQ.
    pub fn aqm(&self) -> Option<Aqm<'_>> {
        match &self.kind {
            Kind::Fifo(_, FifoAqm::Red { red, .. }) => Some(Aqm::Red(red)),
            Kind::Fifo(_, FifoAqm::Codel(c)) => Some(Aqm::Codel(c)),
            Kind::Fifo(_, FifoAqm::Pie(p)) => Some(Aqm::Pie(p)),
            Kind::Dual(d) => Some(Aqm::DualPi2(d.aqm())),
            _ => None,
        }
    }

    /// As [`Qdisc::aqm`], mutably (scheduled events change RED's thresholds).
    pub fn aqm_mut(&mut self) -> Option<AqmMut<'_>> {
        match &mut self.kind {
            Kind::Fifo(_, FifoAqm::Red { red, .. }) => Some(AqmMut::Red(red)),
            Kind::Fifo(_, FifoAqm::Codel(c)) => Some(AqmMut::Codel(c)),
            Kind::Fifo(_, FifoAqm::Pie(p)) => Some(AqmMut::Pie(p)),
            _ => None,
        }
    }
}

/// A FIFO discipline's active queue management ([`Qdisc::aqm`]): each variant its own type, so
/// discipline-specific state (RED's average and max_p, PIE's drop probability) is read from the
/// discipline, not from the generic queue.
#[derive(Clone, Copy, Debug)]
pub enum Aqm<'a> {
    /// RED, gentle, Adaptive RED.
    Red(&'a Red),
    /// CoDel.
    Codel(&'a Codel),
    /// PIE.
    Pie(&'a Pie),
    /// DualPI2: its probabilities and per-class counters.
    DualPi2(&'a DualPi2),
}

/// [`Aqm`], mutably ([`Qdisc::aqm_mut`]).
#[derive(Debug)]
pub enum AqmMut<'a> {
    /// RED, gentle, Adaptive RED.
    Red(&'a mut Red),
    /// CoDel.
    Codel(&'a mut Codel),
    /// PIE.
    Pie(&'a mut Pie),
}

/// FQ-CoDel's and FQ's enqueue, out of line like [`admit_aqm`].
#[inline(never)]
fn enqueue_flows<P: QueuedPacket>(f: &mut FlowQueues<P>, pkt: P, now_ns: u64, limit: Limit, counters: &mut QdiscCounters) -> Verdict {
    f.enqueue(pkt, now_ns, limit, counters)
}

/// DualPI2's enqueue, out of line like [`admit_aqm`].
#[inline(never)]
fn enqueue_dual<P: QueuedPacket>(d: &mut DualQueues<P>, pkt: P, now_ns: u64, limit: Limit, counters: &mut QdiscCounters) -> Verdict {
    d.enqueue(pkt, now_ns, limit, counters)
}

/// The arrival decision of RED, CoDel (the hard limit only) and PIE on a FIFO. Out of line so
/// that DropTail's path stays small enough to inline into the link's enqueue.
#[inline(never)]
fn admit_aqm<P: QueuedPacket>(aqm: &mut FifoAqm, limit: Limit, q: &Fifo<P>, pkt: &P, now_ns: u64, tx_free_at_ns: u64, rate_bps: u64) -> Verdict {
    let fits = limit.fits(q.packets(), q.bytes(), pkt.size_bytes());
    match aqm {
        FifoAqm::DropTail { .. } => unreachable!("DropTail is decided inline"),
        FifoAqm::Red { red, ecn } => {
            let queue = if red.in_bytes() { q.bytes() } else { q.packets() };
            let idle = idle_ns(q.is_empty(), tx_free_at_ns, now_ns);
            match red.on_arrival(queue as f64, idle, rate_bps, now_ns) {
                RedDecision::Forced => Verdict::Drop,
                // RFC 3168 §7: an early decision marks an ECT packet instead of dropping it,
                // but a packet that does not fit is still dropped.
                RedDecision::Early if *ecn && pkt.ect() => {
                    if fits {
                        Verdict::Mark
                    } else {
                        Verdict::Drop
                    }
                }
                RedDecision::Early => Verdict::EarlyDrop,
                RedDecision::Pass if fits => Verdict::Enqueue,
                RedDecision::Pass => {
                    red.on_forced_drop();
                    Verdict::Drop
                }
            }
        }
        FifoAqm::Codel(_) => {
            if fits {
                Verdict::Enqueue
            } else {
                Verdict::Drop
            }
        }
        FifoAqm::Pie(p) => {
            if !fits {
                return Verdict::Drop;
            }
            p.on_arrival(q, pkt.ect(), now_ns)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::test_packets::Ecn;
    use codel::CeThreshold;

    fn codel_queue(target_ns: u64, interval_ns: u64) -> QueueSpec {
        QueueSpec {
            discipline: Discipline::Codel,
            limit_packets: Some(100),
            limit_bytes: None,
            ecn_threshold_packets: None,
            ecn_threshold_bytes: None,
            ecn_threshold_selector: None,
            red: None,
            codel: Some(CodelConfig { target_ns, interval_ns, ecn: false, mtu_bytes: MTU_BYTES, ce_threshold: None }),
            fq_codel: None,
            pie: None,
            fq: None,
            dualpi2: None,
        }
    }

    #[test]
    fn errors_name_the_field_relative_to_the_queue() {
        assert_eq!(codel_queue(5, 100).validate(), Ok(()));
        assert_eq!(codel_queue(100, 100).validate().unwrap_err().to_string(), "codel.target_ns: must be shorter than the interval (0.0001 ms)");
        let mut q = codel_queue(5, 100);
        q.ecn_threshold_packets = Some(5);
        assert_eq!(q.validate().unwrap_err().to_string(), "ecn_threshold_packets: must be null with discipline \"codel\" (it marks with codel.ecn = true)");
        q.ecn_threshold_bytes = Some(5);
        assert_eq!(q.validate().unwrap_err(), FieldError::new("", "set at most one of ecn_threshold_packets and ecn_threshold_bytes"));
        assert_eq!(q.validate().unwrap_err().under("links[2].queue").to_string(), "links[2].queue: set at most one of ecn_threshold_packets and ecn_threshold_bytes");
        let mut q = codel_queue(5, 100);
        q.fq = Some(FqConfig { flows: 70_000, quantum_bytes: 1 });
        assert_eq!(q.validate().unwrap_err().to_string(), "fq: only a queue with discipline \"fq\" takes FQ parameters; set it to null");
        q.discipline = Discipline::Fq;
        q.codel = None;
        assert_eq!(q.validate().unwrap_err().to_string(), "fq.flows: 70000 is not in [1, 65536]");
    }

    #[test]
    fn the_format_leaves_out_the_packet_size_and_the_discipline_names_round_trip() {
        let c: CodelConfig = serde_json::from_str(r#"{"target_ns": 5000000, "interval_ns": 100000000, "ecn": true}"#).unwrap();
        assert_eq!(c, CodelConfig { ecn: true, ..CodelConfig::default() });
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"target_ns":5000000,"interval_ns":100000000,"ecn":true}"#);
        let e = serde_json::from_str::<PieConfig>(r#"{"target_ns": 1, "tupdate_ns": 1, "alpha": 1, "beta": 1, "max_burst_ns": 0, "ecn": false, "mean_packet_bytes": 9}"#);
        assert!(e.unwrap_err().to_string().contains("unknown field `mean_packet_bytes`"));
        for d in Discipline::ALL {
            assert_eq!(Discipline::from_name(d.name()), Some(d));
            assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{}\"", d.name()));
        }
        assert_eq!(Discipline::from_name("sfq"), None);
    }

    /// DualPI2's object: required with its discipline, its errors under `dualpi2.`, optional in
    /// the JSON of other queues (a spec written before it still parses), and it builds its
    /// discipline.
    #[test]
    fn dualpi2_registers_once() {
        let mut q = codel_queue(5, 100);
        let mut before = serde_json::to_value(&q).unwrap();
        assert_eq!(before.as_object_mut().unwrap().remove("dualpi2"), Some(serde_json::Value::Null));
        assert_eq!(serde_json::from_value::<QueueSpec>(before).unwrap(), q);
        q.discipline = Discipline::DualPi2;
        q.codel = None;
        assert_eq!(q.validate().unwrap_err().to_string(), "dualpi2: required with discipline \"dualpi2\"");
        q.dualpi2 = Some(DualPi2Config { target_ns: 0, ..DualPi2Config::default() });
        assert_eq!(q.validate().unwrap_err().to_string(), "dualpi2.target_ns: must be positive");
        q.dualpi2 = Some(DualPi2Config::default());
        assert_eq!(q.validate(), Ok(()));
        q.ecn_threshold_packets = Some(5);
        assert_eq!(
            q.validate().unwrap_err().to_string(),
            "ecn_threshold_packets: must be null with discipline \"dualpi2\" (it marks by its L4S step, dualpi2.l4s_threshold_ns)"
        );
        q.ecn_threshold_packets = None;
        let json = serde_json::to_string(&q).unwrap();
        assert!(json.contains(r#""discipline":"dualpi2""#) && json.contains(r#""l4s_threshold_ns":1000000"#), "{json}");
        assert_eq!(serde_json::from_str::<QueueSpec>(&json).unwrap(), q);
        assert_eq!(q.qdisc_config(), QdiscConfig::DualPi2(DualPi2Config::default()));
        struct Ect1;
        impl QueuedPacket for Ect1 {
            fn size_bytes(&self) -> u64 {
                1500
            }
            fn flow_hash(&self) -> u64 {
                0
            }
            fn ect(&self) -> bool {
                true
            }
            fn l4s(&self) -> bool {
                true
            }
            fn set_ce(&mut self) {}
        }
        let mut qdisc: Qdisc<Ect1> = Qdisc::new(&q.qdisc_config(), q.limit(), SplitMix64::new(1));
        assert!(!qdisc.decides_at_arrival() && qdisc.certain_head().is_none());
        qdisc.enqueue(Ect1, 0, 0, 1_000_000);
        assert_eq!(qdisc.backlog_packets(), 1);
        let Some(Aqm::DualPi2(d)) = qdisc.aqm() else { panic!("DualPI2's state") };
        assert_eq!(d.l4s_counters().enqueued, 1);
        assert!(qdisc.dequeue(1).is_some() && qdisc.is_empty());
    }


    fn droptail_queue(k: Option<u64>, selector: Option<EcnSelector>) -> QueueSpec {
        QueueSpec { discipline: Discipline::Droptail, codel: None, ecn_threshold_packets: k, ecn_threshold_selector: selector, ..codel_queue(5, 100) }
    }

    /// DropTail's selector: optional in the JSON (a spec without it parses to the same queue and
    /// the same discipline as before), refused without a threshold or on another discipline,
    /// and with `"l4s"` the step (here K = 0: every arrival is above it) marks only ECT(1), both
    /// through `enqueue` and through `pass_through`.
    #[test]
    fn droptail_step_marking_selects_l4s_packets() {
        let q = droptail_queue(Some(2), None);
        let mut json = serde_json::to_value(&q).unwrap();
        assert_eq!(json.as_object_mut().unwrap().remove("ecn_threshold_selector"), Some(serde_json::Value::Null));
        assert_eq!(serde_json::from_value::<QueueSpec>(json).unwrap(), q);
        assert_eq!(
            q.qdisc_config(),
            QdiscConfig::DropTail { ecn_threshold_packets: Some(2), ecn_threshold_bytes: None, ecn_threshold_selector: EcnSelector::All }
        );
        assert_eq!(droptail_queue(None, Some(EcnSelector::L4s)).validate().unwrap_err().to_string(), "ecn_threshold_selector: needs ecn_threshold (the step it selects for)");
        let mut fq_codel = droptail_queue(None, Some(EcnSelector::L4s));
        fq_codel.discipline = Discipline::FqCodel;
        fq_codel.fq_codel = Some(FqCodelSpec { target_ns: 5, interval_ns: 100, flows: 4, quantum_bytes: 1500, ecn: true, ce_threshold_ns: None, ce_threshold_selector: None });
        assert_eq!(
            fq_codel.validate().unwrap_err().to_string(),
            "ecn_threshold_selector: must be null with discipline \"fq_codel\" (it selects with fq_codel.ce_threshold_selector)"
        );
        let mut codel = codel_queue(5, 100);
        codel.ecn_threshold_selector = Some(EcnSelector::All);
        assert_eq!(codel.validate().unwrap_err().to_string(), "ecn_threshold_selector: must be null with discipline \"codel\" (it selects with codel.ce_threshold_selector)");
        let mut pie = droptail_queue(None, Some(EcnSelector::All));
        (pie.discipline, pie.pie) = (Discipline::Pie, Some(PieConfig::default()));
        assert_eq!(pie.validate().unwrap_err().to_string(), "ecn_threshold_selector: must be null with discipline \"pie\" (a setting of DropTail's step marking)");

        let all = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
        for (selector, want) in [(None, [Ecn::NotEct, Ecn::Ce, Ecn::Ce, Ecn::Ce]), (Some(EcnSelector::L4s), [Ecn::NotEct, Ecn::Ect0, Ecn::Ce, Ecn::Ce])] {
            let q = droptail_queue(Some(0), selector);
            assert_eq!(q.validate(), Ok(()));
            // Through the queue.
            let mut qdisc: Qdisc<Ecn> = Qdisc::new(&q.qdisc_config(), q.limit(), SplitMix64::new(1));
            for p in all {
                qdisc.enqueue(p, 0, 0, 1_000_000);
            }
            let sent: Vec<Ecn> = std::iter::from_fn(|| qdisc.dequeue(1).map(|e| e.pkt)).collect();
            assert_eq!(sent, want, "{selector:?}");
            // Every packet the step selects is marked, a CE one again (counted, unchanged).
            let marks = all.iter().filter(|p| p.ect() && (selector != Some(EcnSelector::L4s) || p.l4s())).count() as u64;
            assert_eq!(qdisc.counters().marked, marks);
            // Straight through an idle link.
            let mut qdisc: Qdisc<Ecn> = Qdisc::new(&q.qdisc_config(), q.limit(), SplitMix64::new(1));
            assert!(!qdisc.empty_and_admits_all(), "a threshold of 0 decides even on an empty queue");
            let passed: Vec<Ecn> = all
                .iter()
                .map(|p| {
                    let mut p = *p;
                    qdisc.pass_through(&mut p).expect("an empty DropTail decides");
                    p
                })
                .collect();
            assert_eq!(passed, want, "{selector:?}");
            assert_eq!(qdisc.counters().marked, marks);
        }
    }

    /// CoDel's CE threshold in the `queue.codel` object (Linux's `ce_threshold` on sch_codel):
    /// both keys optional (a spec without them reads and writes as before), the selector refused
    /// without a threshold under `codel.`, `"all"` written as absent, and the discipline it builds
    /// marks an ECT(1) packet that waited beyond it, not an ECT(0) one, with the L4S selector.
    #[test]
    fn codel_ce_threshold_registers_and_marks() {
        let plain = codel_queue(5_000_000, 100_000_000);
        let json = serde_json::to_string(&plain).unwrap();
        assert!(json.contains(r#""codel":{"target_ns":5000000,"interval_ns":100000000,"ecn":false}"#), "{json}");
        let parse = |codel: &str| serde_json::from_str::<QueueSpec>(&json.replace(r#""ecn":false}"#, &format!(r#""ecn":false{codel}}}"#)));
        assert_eq!(parse(r#","ce_threshold_ns":null,"ce_threshold_selector":null"#).unwrap(), plain);
        let e = parse(r#","ce_threshold_selector":"l4s""#).unwrap_err().to_string();
        assert!(e.starts_with("ce_threshold_selector: needs ce_threshold (the sojourn time above which it marks)"), "{e}");
        assert!(parse(r#","ce_threshold":1"#).unwrap_err().to_string().contains("unknown field `ce_threshold`"));
        let all = parse(r#","ce_threshold_ns":1000000,"ce_threshold_selector":"all""#).unwrap();
        assert_eq!(all.codel.unwrap().ce_threshold, Some(CeThreshold { sojourn_ns: 1_000_000, selector: EcnSelector::All }));
        assert!(serde_json::to_string(&all).unwrap().contains(r#""ecn":false,"ce_threshold_ns":1000000}"#));
        let q = parse(r#","ce_threshold_ns":1000000,"ce_threshold_selector":"l4s""#).unwrap();
        assert_eq!(q.validate(), Ok(()));
        assert_eq!(serde_json::from_str::<QueueSpec>(&serde_json::to_string(&q).unwrap()).unwrap(), q);
        let mut qdisc: Qdisc<Ecn> = Qdisc::new(&q.qdisc_config(), q.limit(), SplitMix64::new(1));
        qdisc.enqueue(Ecn::Ect1, 0, 0, 1_000_000);
        qdisc.enqueue(Ecn::Ect0, 0, 0, 1_000_000);
        let sent: Vec<Ecn> = std::iter::from_fn(|| qdisc.dequeue(2_000_000).map(|e| e.pkt)).collect();
        assert_eq!(sent, [Ecn::Ce, Ecn::Ect0]);
        assert_eq!(*qdisc.counters(), QdiscCounters { marked: 1, ..QdiscCounters::default() });
    }

    /// FQ-CoDel's CE threshold registered in the queue: its errors under `fq_codel.`, the
    /// discipline it builds marks an ECT(1) packet that waited beyond it and not an ECT(0) one.
    #[test]
    fn fq_codel_ce_threshold_registers_and_marks() {
        let mut q = droptail_queue(None, None);
        q.discipline = Discipline::FqCodel;
        let spec = FqCodelSpec {
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            flows: 1024,
            quantum_bytes: 1500,
            ecn: false,
            ce_threshold_ns: None,
            ce_threshold_selector: Some(EcnSelector::L4s),
        };
        q.fq_codel = Some(spec.clone());
        assert_eq!(q.validate().unwrap_err().to_string(), "fq_codel.ce_threshold_selector: needs ce_threshold (the sojourn time above which it marks)");
        q.fq_codel = Some(FqCodelSpec { ce_threshold_ns: Some(1_000_000), ..spec });
        assert_eq!(q.validate(), Ok(()));
        let json = serde_json::to_string(&q).unwrap();
        assert!(json.contains(r#""ce_threshold_ns":1000000,"ce_threshold_selector":"l4s""#), "{json}");
        assert_eq!(serde_json::from_str::<QueueSpec>(&json).unwrap(), q);
        let mut qdisc: Qdisc<Ecn> = Qdisc::new(&q.qdisc_config(), q.limit(), SplitMix64::new(1));
        qdisc.enqueue(Ecn::Ect1, 0, 0, 1_000_000);
        qdisc.enqueue(Ecn::Ect0, 0, 0, 1_000_000);
        let mut sent: Vec<Ecn> = std::iter::from_fn(|| qdisc.dequeue(2_000_000).map(|e| e.pkt)).collect();
        sent.sort_by_key(|p| *p as u8);
        assert_eq!(sent, [Ecn::Ect0, Ecn::Ce]);
        assert_eq!(*qdisc.counters(), QdiscCounters { marked: 1, ..QdiscCounters::default() });
    }
}
