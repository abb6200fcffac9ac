//! Queue disciplines: the admission decision at a link's egress queue.
//!
//! A discipline looks at an arriving packet and the queue it finds (waiting packets and bytes,
//! the one being serialized excluded, as a Linux qdisc's backlog excludes the NIC's) and returns
//! a [`Verdict`]: enqueue it, enqueue it marked CE, or drop it. DropTail decides on the
//! instantaneous queue; RED (`red.rs`) on an average of it.

use ccarena_cc::SimTime;

use crate::red::{Red, RedDecision};
use crate::rng::Rng;
use crate::spec::{Discipline, QueueSpec};

/// What a queue discipline decides for an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Enqueue unchanged.
    Enqueue,
    /// Enqueue with the ECN Congestion Experienced codepoint set (RFC 3168 §5).
    Mark,
    /// Refuse because the queue is full, or (RED) because the average is in the drop-every-arrival
    /// region: a forced drop.
    Drop,
    /// Refuse by RED's random early drop (Floyd & Jacobson 1993 §4), an unforced drop.
    EarlyDrop,
}

/// The queue an arriving packet finds, and what the discipline needs to know about the link.
#[derive(Clone, Copy, Debug)]
pub struct Arrival {
    /// Packets waiting (the one being serialized excluded).
    pub waiting_packets: u64,
    /// Bytes waiting.
    pub waiting_bytes: u64,
    /// The arriving packet's size on the wire, bytes.
    pub size_bytes: u64,
    /// The packet is ECN-capable (ECT data segment).
    pub ect: bool,
    /// The arrival time.
    pub now: SimTime,
    /// When the transmitter finished (or finishes) its last packet.
    pub tx_free_at: SimTime,
    /// The link's current rate, bits/s.
    pub rate_bps: u64,
}

impl Arrival {
    /// How long the link has been idle (nothing waiting, nothing being serialized), ns; `None`
    /// while it is busy.
    pub fn idle_ns(&self) -> Option<u64> {
        idle_ns(self.waiting_packets, self.tx_free_at, self.now)
    }
}

/// How long a link with `waiting_packets` whose transmitter is free from `tx_free_at` has been
/// idle at `now`, ns; `None` while busy.
pub fn idle_ns(waiting_packets: u64, tx_free_at: SimTime, now: SimTime) -> Option<u64> {
    (waiting_packets == 0 && tx_free_at <= now).then(|| (now - tx_free_at).as_nanos())
}

/// A queue discipline's state and limits.
#[derive(Clone, Debug)]
pub enum Aqm {
    /// Tail drop: refuse an arrival when the waiting packets already reach `limit_packets`, or
    /// when it would push the waiting bytes past `limit_bytes`. With an ECN threshold K, an
    /// ECN-capable arrival that is admitted while at least K packets (or bytes) wait is marked CE:
    /// the step marking on the instantaneous queue that DCTCP needs (RFC 8257 §3.1; Alizadeh et
    /// al., SIGCOMM 2010 §3.1). Packets that are not ECN-capable are never marked and are dropped
    /// only at the limit.
    DropTail {
        /// Limit on waiting packets.
        limit_packets: Option<u64>,
        /// Limit on waiting bytes.
        limit_bytes: Option<u64>,
        /// Mark ECT arrivals CE when at least this many packets wait.
        ecn_threshold_packets: Option<u64>,
        /// Mark ECT arrivals CE when at least this many bytes wait.
        ecn_threshold_bytes: Option<u64>,
    },
    /// Random Early Detection (Floyd & Jacobson 1993, gentle variant of Floyd 2000; `red.rs`)
    /// in front of the same hard limit as DropTail. RED's early decision comes first; with `ecn`
    /// an early decision marks an ECT packet CE instead of dropping it (RFC 3168 §7), but drops
    /// in the drop-every-arrival region and at the hard limit stay drops (as ns-2's RED does
    /// for its "forced" drops): marking there would let the queue grow to the limit.
    Red {
        /// Hard limit on waiting packets.
        limit_packets: Option<u64>,
        /// Hard limit on waiting bytes.
        limit_bytes: Option<u64>,
        /// Mark ECT packets instead of dropping them early.
        ecn: bool,
        /// RED's average and decision.
        red: Box<Red>,
    },
}

/// True when a packet of `size_bytes` fits under the hard limit.
fn fits(limit_packets: Option<u64>, limit_bytes: Option<u64>, a: &Arrival) -> bool {
    if let Some(limit) = limit_packets {
        a.waiting_packets < limit
    } else if let Some(limit) = limit_bytes {
        a.waiting_bytes + a.size_bytes <= limit
    } else {
        true
    }
}

/// RED's verdict: its early decision first, then the hard limit. Out of line so that the
/// DropTail path stays small enough to inline into the link's enqueue.
#[inline(never)]
fn admit_red(red: &mut Red, limit_packets: Option<u64>, limit_bytes: Option<u64>, ecn: bool, a: &Arrival) -> Verdict {
    let q = if red.in_bytes() { a.waiting_bytes } else { a.waiting_packets };
    let decision = red.on_arrival(q as f64, a.idle_ns(), a.rate_bps);
    let fits = fits(limit_packets, limit_bytes, a);
    match decision {
        RedDecision::Forced => Verdict::Drop,
        RedDecision::Early if ecn && a.ect => {
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

impl Aqm {
    /// The discipline a validated [`QueueSpec`] describes; `rng` is the queue's own random
    /// stream (used by RED only).
    pub fn from_spec(q: &QueueSpec, rng: Rng) -> Aqm {
        match (q.discipline, &q.red) {
            (Discipline::Red, Some(red)) => Aqm::Red {
                limit_packets: q.limit_packets,
                limit_bytes: q.limit_bytes,
                ecn: red.ecn,
                red: Box::new(Red::new(red, rng)),
            },
            _ => Aqm::DropTail {
                limit_packets: q.limit_packets,
                limit_bytes: q.limit_bytes,
                ecn_threshold_packets: q.ecn_threshold_packets,
                ecn_threshold_bytes: q.ecn_threshold_bytes,
            },
        }
    }

    /// The verdict for an arriving packet.
    #[inline]
    pub fn admit(&mut self, a: &Arrival) -> Verdict {
        match self {
            Aqm::DropTail { .. } => self.admit_droptail(a.waiting_packets, a.waiting_bytes, a.size_bytes, a.ect),
            Aqm::Red { limit_packets, limit_bytes, ecn, red } => admit_red(red, *limit_packets, *limit_bytes, *ecn, a),
        }
    }

    /// True for RED (whose verdict needs the link's idle time and rate; see [`Arrival`]).
    #[inline]
    pub fn is_red(&self) -> bool {
        matches!(self, Aqm::Red { .. })
    }

    /// DropTail's verdict from the waiting packets and bytes alone (the per-packet fast path);
    /// `Enqueue` for a RED queue, which must go through [`Aqm::admit`].
    #[inline]
    pub fn admit_droptail(&self, waiting_packets: u64, waiting_bytes: u64, size_bytes: u64, ect: bool) -> Verdict {
        let Aqm::DropTail { limit_packets, limit_bytes, ecn_threshold_packets, ecn_threshold_bytes } = *self else {
            return Verdict::Enqueue;
        };
        let fits = if let Some(limit) = limit_packets {
            waiting_packets < limit
        } else if let Some(limit) = limit_bytes {
            waiting_bytes + size_bytes <= limit
        } else {
            true
        };
        if !fits {
            return Verdict::Drop;
        }
        let above_k = ecn_threshold_packets.is_some_and(|k| waiting_packets >= k)
            || ecn_threshold_bytes.is_some_and(|k| waiting_bytes >= k);
        if ect && above_k {
            Verdict::Mark
        } else {
            Verdict::Enqueue
        }
    }

    /// RED's average queue (packets or bytes, the thresholds' unit) that an arrival after
    /// `idle_ns` of idleness (`None`: busy) at `rate_bps` would start from; NaN for DropTail.
    pub fn red_avg(&self, idle_ns: Option<u64>, rate_bps: u64) -> f64 {
        match self {
            Aqm::DropTail { .. } => f64::NAN,
            Aqm::Red { red, .. } => red.avg_at(idle_ns, rate_bps),
        }
    }

    /// Change the hard limit (scheduled events); `None` leaves a limit unchanged. ECN thresholds
    /// and RED's parameters are kept.
    pub fn set_limits(&mut self, packets: Option<u64>, bytes: Option<u64>) {
        let (Aqm::DropTail { limit_packets, limit_bytes, .. } | Aqm::Red { limit_packets, limit_bytes, .. }) = self;
        if packets.is_some() {
            *limit_packets = packets;
            *limit_bytes = None;
        } else if bytes.is_some() {
            *limit_bytes = bytes;
            *limit_packets = None;
        }
    }

    /// Change RED's thresholds (scheduled events; validated: a RED queue, its unit, min < max).
    /// A DropTail queue has none and is left unchanged.
    pub fn set_red_thresholds(&mut self, min_th: u64, max_th: u64) {
        if let Aqm::Red { red, .. } = self {
            red.set_thresholds(min_th, max_th);
        }
    }

    /// RED's thresholds `(min_th, max_th)` in its unit; `None` for DropTail.
    pub fn red_thresholds(&self) -> Option<(f64, f64)> {
        match self {
            Aqm::DropTail { .. } => None,
            Aqm::Red { red, .. } => Some(red.thresholds()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::StreamKind;
    use crate::spec::RedSpec;

    fn droptail(limit_packets: Option<u64>, limit_bytes: Option<u64>) -> Aqm {
        Aqm::DropTail { limit_packets, limit_bytes, ecn_threshold_packets: None, ecn_threshold_bytes: None }
    }

    /// A busy link's arrival finding `waiting_packets` / `waiting_bytes`.
    fn arr(waiting_packets: u64, waiting_bytes: u64, size_bytes: u64, ect: bool) -> Arrival {
        // The transmitter is busy until 1 s: no idle aging.
        Arrival { waiting_packets, waiting_bytes, size_bytes, ect, now: SimTime::ZERO, tx_free_at: SimTime(1_000_000_000), rate_bps: 10_000_000 }
    }

    #[test]
    fn droptail_in_packets_refuses_at_the_limit() {
        let mut q = droptail(Some(2), None);
        assert_eq!(q.admit(&arr(0, 0, 1500, false)), Verdict::Enqueue);
        assert_eq!(q.admit(&arr(1, 1500, 1500, true)), Verdict::Enqueue);
        assert_eq!(q.admit(&arr(2, 3000, 1500, false)), Verdict::Drop);
        assert!(q.red_avg(None, 10_000_000).is_nan());
    }

    #[test]
    fn droptail_in_bytes_refuses_what_would_overflow() {
        let mut q = droptail(None, Some(3000));
        assert_eq!(q.admit(&arr(1, 1500, 1500, false)), Verdict::Enqueue);
        assert_eq!(q.admit(&arr(1, 1600, 1500, false)), Verdict::Drop);
        assert_eq!(q.admit(&arr(5, 2900, 100, false)), Verdict::Enqueue);
    }

    #[test]
    fn ecn_threshold_in_packets_marks_ect_at_or_above_k() {
        let mut q = Aqm::DropTail { limit_packets: Some(10), limit_bytes: None, ecn_threshold_packets: Some(3), ecn_threshold_bytes: None };
        assert_eq!(q.admit(&arr(2, 3000, 1500, true)), Verdict::Enqueue);
        assert_eq!(q.admit(&arr(3, 4500, 1500, true)), Verdict::Mark);
        assert_eq!(q.admit(&arr(9, 13500, 1500, true)), Verdict::Mark);
        // Non-ECT packets are not marked and are dropped only at the limit; ECT ones too.
        assert_eq!(q.admit(&arr(9, 13500, 1500, false)), Verdict::Enqueue);
        assert_eq!(q.admit(&arr(10, 15000, 1500, true)), Verdict::Drop);
        assert_eq!(q.admit(&arr(10, 15000, 1500, false)), Verdict::Drop);
    }

    #[test]
    fn ecn_threshold_in_bytes_marks_on_waiting_bytes() {
        let mut q = Aqm::DropTail { limit_packets: Some(100), limit_bytes: None, ecn_threshold_packets: None, ecn_threshold_bytes: Some(3000) };
        assert_eq!(q.admit(&arr(1, 2999, 1500, true)), Verdict::Enqueue);
        assert_eq!(q.admit(&arr(2, 3000, 1500, true)), Verdict::Mark);
    }

    #[test]
    fn set_limits_keeps_the_ecn_threshold() {
        let mut q = Aqm::DropTail { limit_packets: Some(10), limit_bytes: None, ecn_threshold_packets: Some(3), ecn_threshold_bytes: None };
        q.set_limits(Some(20), None);
        assert_eq!(q.admit(&arr(15, 0, 1500, true)), Verdict::Mark);
    }

    /// A RED queue (packets; min_th 5, max_th 15, gentle) with w_q = 1 so the average is the
    /// instantaneous queue, and a hard limit of `limit` packets.
    fn red(limit: u64, ecn: bool) -> Aqm {
        let spec = RedSpec {
            min_th_packets: Some(5),
            max_th_packets: Some(15),
            min_th_bytes: None,
            max_th_bytes: None,
            max_p: 0.1,
            w_q: 1.0,
            gentle: true,
            ecn,
            idle_packet_bytes: 1500,
            wait: false,
        };
        let q = QueueSpec {
            discipline: Discipline::Red,
            limit_packets: Some(limit),
            limit_bytes: None,
            ecn_threshold_packets: None,
            ecn_threshold_bytes: None,
            red: Some(spec),
        };
        Aqm::from_spec(&q, Rng::stream(1, StreamKind::QueueAqm, 0))
    }

    fn tally(q: &mut Aqm, a: Arrival, n: usize) -> [usize; 4] {
        let mut t = [0; 4];
        for _ in 0..n {
            t[match q.admit(&a) {
                Verdict::Enqueue => 0,
                Verdict::Mark => 1,
                Verdict::Drop => 2,
                Verdict::EarlyDrop => 3,
            }] += 1;
        }
        t
    }

    #[test]
    fn red_drops_early_without_ecn_and_marks_ect_with_it() {
        // avg 10: p_b = 0.05, so about 2/(1/p_b + 1) ≈ 9.5% of arrivals are picked.
        let [enq, mark, drop, early] = tally(&mut red(100, false), arr(10, 15_000, 1500, true), 10_000);
        assert_eq!((mark, drop), (0, 0));
        assert!((800..1100).contains(&early), "early drops {early} (enqueued {enq})");
        let [_, mark, drop, early] = tally(&mut red(100, true), arr(10, 15_000, 1500, true), 10_000);
        assert_eq!((drop, early), (0, 0));
        assert!((800..1100).contains(&mark), "marks {mark}");
        // Non-ECT packets are still dropped early by an ECN queue.
        let [_, mark, _, early] = tally(&mut red(100, true), arr(10, 15_000, 1500, false), 10_000);
        assert_eq!(mark, 0);
        assert!(early > 800);
    }

    #[test]
    fn red_forced_drops_stay_drops_with_ecn() {
        // Beyond 2·max_th every arrival is dropped, ECT or not, marking or not.
        for ecn in [false, true] {
            let [enq, mark, drop, early] = tally(&mut red(100, ecn), arr(30, 45_000, 1500, true), 1000);
            assert_eq!((enq, mark, drop, early), (0, 0, 1000, 0), "ecn {ecn}");
        }
        // The hard limit drops what RED lets pass (avg below min_th, queue at the limit of 3).
        let [enq, _, drop, _] = tally(&mut red(3, false), arr(3, 4_500, 1500, false), 100);
        assert_eq!((enq, drop), (0, 100));
        // An ECT packet RED picks for a mark is dropped when it does not fit.
        let [_, mark, drop, early] = tally(&mut red(10, true), arr(10, 15_000, 1500, true), 10_000);
        assert_eq!((mark, early), (0, 0));
        assert_eq!(drop, 10_000);
    }

    #[test]
    fn red_set_limits_changes_the_hard_limit_only() {
        let mut q = red(3, false);
        assert_eq!(q.admit(&arr(3, 4_500, 1500, false)), Verdict::Drop);
        q.set_limits(Some(4), None);
        assert_eq!(q.admit(&arr(3, 4_500, 1500, false)), Verdict::Enqueue);
        assert_eq!(q.red_avg(None, 10_000_000), 3.0, "w_q = 1: the average is the last queue seen");
    }
}
