//! Queue disciplines: what a link's egress queue admits, marks, drops, and sends next.
//!
//! One interface ([`Qdisc`]) for every discipline, with both halves of a queue's life:
//! [`Qdisc::enqueue`] decides an arriving packet's admission (DropTail, RED and PIE decide
//! here), [`Qdisc::dequeue`] picks the packet the transmitter sends next (CoDel decides here;
//! FQ-CoDel and FQ schedule among flows here). The queue holds the *waiting* packets only: the
//! one being serialized has left it (as a Linux qdisc's backlog excludes the NIC's), so limits,
//! thresholds and sojourn times are over waiting packets, and a packet's sojourn is the time
//! from its enqueue to the start of its serialization.
//!
//! The discipline is an enum, not a trait object: the simulator's per-packet path is hot and a
//! `match` inlines where a virtual call would not. The packet type is generic
//! ([`QueuedPacket`]): the simulator queues its `Packet`, the relay its frames.
//!
//! Disciplines, each from its primary source (see the module of each):
//! DropTail with DCTCP step marking ([`fifo`]), RED with gentle and Adaptive RED ([`red`]),
//! CoDel ([`codel`], RFC 8289), FQ-CoDel and FQ ([`fq`], RFC 8290; Shreedhar & Varghese 1995),
//! PIE ([`pie`], RFC 8033).

pub mod codel;
pub mod fifo;
pub mod fq;
pub mod interface;
pub mod pie;
pub mod red;

pub use interface::{Entry, Limit, QdiscCounters, QueuedPacket, Verdict, MTU_BYTES};

use ccarena_rng::SplitMix64;
use codel::{Codel, CodelConfig};
use fifo::Fifo;
use fq::{FlowQueues, FqConfig};
use pie::{Pie, PieConfig};
use red::{Red, RedConfig, RedDecision};

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
}

/// The discipline of one FIFO queue.
#[derive(Clone, Debug)]
enum FifoAqm {
    DropTail { k_packets: Option<u64>, k_bytes: Option<u64> },
    Red { red: Box<Red>, ecn: bool },
    Codel(Codel),
    Pie(Box<Pie>),
}

#[derive(Clone, Debug)]
enum Kind<P> {
    Fifo(Fifo<P>, FifoAqm),
    Flows(Box<FlowQueues<P>>),
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
            QdiscConfig::DropTail { ecn_threshold_packets, ecn_threshold_bytes } => {
                Kind::Fifo(Fifo::new(), FifoAqm::DropTail { k_packets: *ecn_threshold_packets, k_bytes: *ecn_threshold_bytes })
            }
            QdiscConfig::Red(c) => Kind::Fifo(Fifo::new(), FifoAqm::Red { ecn: c.ecn, red: Box::new(Red::new(c, rng)) }),
            QdiscConfig::Codel(c) => Kind::Fifo(Fifo::new(), FifoAqm::Codel(Codel::new(c))),
            QdiscConfig::Pie(c) => Kind::Fifo(Fifo::new(), FifoAqm::Pie(Box::new(Pie::new(c, rng)))),
            QdiscConfig::FqCodel(fq, codel) => Kind::Flows(Box::new(FlowQueues::new(fq, Some(codel), rng.next_u64()))),
            QdiscConfig::Fq(fq) => Kind::Flows(Box::new(FlowQueues::new(fq, None, rng.next_u64()))),
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
            matches!(&self.kind, Kind::Fifo(_, FifoAqm::DropTail { k_packets, k_bytes }) if *k_packets != Some(0) && *k_bytes != Some(0));
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
            Kind::Fifo(q, FifoAqm::DropTail { k_packets, k_bytes }) => {
                fifo::droptail(self.limit, *k_packets, *k_bytes, q.packets(), q.bytes(), pkt.size_bytes(), pkt.ect())
            }
            Kind::Fifo(q, aqm) => admit_aqm(aqm, self.limit, q, &pkt, now_ns, tx_free_at_ns, rate_bps),
            Kind::Flows(f) => return enqueue_flows(f, pkt, now_ns, self.limit, &mut self.counters),
        };
        let Kind::Fifo(q, _) = &mut self.kind else { unreachable!("flow queues returned above") };
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
        let Kind::Fifo(q, FifoAqm::DropTail { k_packets, k_bytes }) = &self.kind else { return None };
        if !q.is_empty() {
            return None;
        }
        if self.empty_admits_all {
            return Some(Verdict::Enqueue);
        }
        let verdict = fifo::droptail(self.limit, *k_packets, *k_bytes, 0, 0, pkt.size_bytes(), pkt.ect());
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
        }
    }

    /// The packet [`Qdisc::dequeue`] will return, when that is already certain: the head of a
    /// FIFO whose discipline decides only at arrival (DropTail, RED, PIE). `None` for an empty
    /// queue and for CoDel, FQ-CoDel and FQ, whose choice depends on the dequeue time or on later
    /// arrivals.
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

    /// The packet enqueued last, when the queue is a FIFO and it is still waiting; for callers
    /// that complete its schedule once it is admitted.
    pub fn last_enqueued_mut(&mut self) -> Option<&mut Entry<P>> {
        match &mut self.kind {
            Kind::Fifo(q, _) => q.back_mut(),
            Kind::Flows(_) => None,
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
            Kind::Flows(f) => f.packets(),
        }
    }

    /// Bytes waiting.
    #[inline]
    pub fn backlog_bytes(&self) -> u64 {
        match &self.kind {
            Kind::Fifo(q, _) => q.bytes(),
            Kind::Flows(f) => f.bytes(),
        }
    }

    /// True when nothing waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        match &self.kind {
            Kind::Fifo(q, _) => q.is_empty(),
            Kind::Flows(f) => f.packets() == 0,
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
        }
        n
    }

    /// The active queue management of a FIFO discipline with state of its own (RED, CoDel,
    /// PIE), for reading that state through the discipline's own type; `None` for DropTail,
    /// FQ-CoDel and FQ.
    pub fn aqm(&self) -> Option<Aqm<'_>> {
        match &self.kind {
            Kind::Fifo(_, FifoAqm::Red { red, .. }) => Some(Aqm::Red(red)),
            Kind::Fifo(_, FifoAqm::Codel(c)) => Some(Aqm::Codel(c)),
            Kind::Fifo(_, FifoAqm::Pie(p)) => Some(Aqm::Pie(p)),
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
