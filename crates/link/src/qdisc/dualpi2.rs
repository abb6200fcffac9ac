//! DualPI2, the Dual-Queue Coupled AQM (De Schepper, Briscoe, White, RFC 9332, 2023).
//!
//! Two FIFOs share one limit (§2.4; App. A's enqueue): the L4S queue L takes the packets
//! carrying the L4S identifier, ECT(1) or CE (RFC 9331 §5.1; RFC 9332 §2.3), the Classic queue C
//! the rest (Not-ECT and ECT(0)). One base AQM, PI2 (§2.4; App. A), runs on C: every `tupdate`
//! it moves the base probability p' by `alpha·(curq − target) + beta·(curq − prevq)` (App. A's
//! update), clamped to [0, 1]. From p' come
//!
//! - the Classic probability p_C = p'² (§2.1, the "squared" drop or mark that a Reno-friendly
//!   flow's 1/√p response needs), applied to C's packets: Not-ECT dropped, ECT(0) marked CE;
//! - the coupled L4S probability p_CL = k·p' (§2.1, coupling factor k = 2), which together with
//!   the native L4S AQM gives p_L = max(p'_L, min(p_CL, 1)) (§2.4; App. A's dequeue and
//!   its combining function): L's packets are marked, never dropped while not overloaded.
//!
//! The native L4S AQM (§2.4; App. A's `laqm`) reads the sojourn of the L4S packet being
//! dequeued: 0 below `l4s_threshold`, 1 at or above `l4s_threshold + l4s_ramp`, linear in
//! between — with `l4s_ramp = 0` that is the step Linux's `sch_dualpi2` uses (`step_thresh`,
//! 1 ms), with the RFC's `minTh` 800 µs and `range` 400 µs the RFC's ramp. Marking is suppressed
//! while at most `l4s_min_qlen_packets` L4S packets wait (App. A's `Th_len`: a single packet's
//! serialization at a low link rate can exceed the threshold on its own).
//!
//! The queue-delay metric (ccarena's choice among those the RFC allows): `curq` is the time the
//! head of C has waited so far at the update instant (App. A's `cq.time()`), 0 when C is empty;
//! the native L4S AQM uses the dequeued packet's sojourn. Drops and marks happen at
//! dequeue (App. A's dequeue), so the discipline decides at dequeue, like CoDel.
//!
//! Overload (§4.2.3; App. A): once p_CL reaches 1 (p' ≥ 1/k), L4S marking is
//! saturated; L's packets are then dropped with probability p_C like Classic ones and the rest
//! marked, and Classic ECT(0) packets are dropped instead of marked once p_C ≥ p_Cmax =
//! min(1/k², 1) (App. A's parameters).
//!
//! The scheduler is the time-shifted FIFO (§2.4; §4.2.2): with both queues non-empty, C is
//! served when its head arrived more than `tshift` before L's head (its sojourn exceeds L's by
//! more than `tshift`), L otherwise. A standing L queue therefore holds C back by at most
//! `tshift` beyond L's own delay: C is never starved (classic protection).
//! Linux's `sch_dualpi2` uses a weighted round robin with `classic_protection` = 10% instead
//! (docs/engine-spec.md compares the two).
//!
//! Random draws (the marks and drops at p_L, p_C, p_CL) come from the queue's own seeded stream;
//! a probability of 0 draws nothing.

use serde::{Deserialize, Serialize};

use super::fifo::Fifo;
use super::interface::{Entry, Limit, QdiscCounters, QueuedPacket, Verdict};
use crate::field_error::{positive, FieldError};
use crate::histogram::Histogram;
use ccarena_rng::SplitMix64;

/// DualPI2's parameters (RFC 9332 App. A's parameters and §2.4), and the engine spec's
/// `queue.dualpi2` object (every key required). The limit is the queue's, shared by both queues.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DualPi2Config {
    /// PI2's target for the Classic queue's delay (`target`, 15 ms), ns.
    pub target_ns: u64,
    /// Interval between updates of p' (`Tupdate`, 16 ms), ns.
    pub tupdate_ns: u64,
    /// PI2's integral gain (`alpha`, 0.16 Hz): weight of the delay's deviation from the target,
    /// per second of delay per second of update.
    pub alpha: f64,
    /// PI2's proportional gain (`beta`, 3.2 Hz): weight of the delay's change since the last
    /// update, per second of delay.
    pub beta: f64,
    /// Coupling factor k between the base probability and the L4S one (`k`, 2; §2.1).
    pub coupling: f64,
    /// Sojourn at which the native L4S AQM starts marking (`minTh`; Linux `step_thresh`, 1 ms),
    /// ns.
    pub l4s_threshold_ns: u64,
    /// Width of the native L4S AQM's ramp from 0 to 1 above the threshold (`range`; 0 = a step,
    /// as Linux's), ns.
    pub l4s_ramp_ns: u64,
    /// The native L4S AQM marks only while more than this many L4S packets wait (`Th_len`,
    /// 1 packet; Linux `min_qlen_step` 0).
    pub l4s_min_qlen_packets: u64,
    /// The time-shifted FIFO's shift: C is served when its head waited more than this longer
    /// than L's head (30 ms = 2·target: ccarena's default, the RFC's pseudocode leaves the
    /// scheduler's parameter out), ns.
    pub tshift_ns: u64,
}

impl Default for DualPi2Config {
    /// Target 15 ms, Tupdate 16 ms, alpha 0.16 Hz, beta 3.2 Hz (the RFC's worked values, as Linux's
    /// defaults), k = 2, a 1 ms step (Linux's), `Th_len` 1 packet (the RFC's), tshift 30 ms.
    fn default() -> Self {
        DualPi2Config {
            target_ns: 15_000_000,
            tupdate_ns: 16_000_000,
            alpha: 0.16,
            beta: 3.2,
            coupling: 2.0,
            l4s_threshold_ns: 1_000_000,
            l4s_ramp_ns: 0,
            l4s_min_qlen_packets: 1,
            tshift_ns: 30_000_000,
        }
    }
}

impl DualPi2Config {
    /// Check the values: target and update interval positive; alpha, beta and the coupling
    /// factor positive and finite.
    ///
    /// # Errors
    /// The first problem, naming the field (`target_ns`, `tupdate_ns`, `alpha`, `beta`,
    /// `coupling`).
    pub fn validate(&self) -> Result<(), FieldError> {
        positive("target_ns", self.target_ns)?;
        positive("tupdate_ns", self.tupdate_ns)?;
        for (field, v) in [("alpha", self.alpha), ("beta", self.beta), ("coupling", self.coupling)] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(FieldError::new(field, format!("{v} is not a positive number")));
            }
        }
        Ok(())
    }

    /// The largest Classic probability before ECN is disabled for C (p_Cmax = min(1/k², 1),
    /// App. A's parameters).
    pub fn p_c_max(&self) -> f64 {
        (1.0 / (self.coupling * self.coupling)).min(1.0)
    }
}

/// Which of DualPI2's two queues (RFC 9332 §2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// The L4S queue: ECT(1) and CE.
    L4s,
    /// The Classic queue: Not-ECT and ECT(0).
    Classic,
}

/// Cumulative per-class decisions and delays of DualPI2, in packets
/// ([`QueuedPacket::packets`]) and ns. The queue-wide totals are in [`QdiscCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassCounters {
    /// Packets admitted into this queue.
    pub enqueued: u64,
    /// Packets refused at the shared limit.
    pub dropped_limit: u64,
    /// Packets the AQM dropped at dequeue (Classic: p_C on Not-ECT or under overload; L4S: p_C
    /// under overload).
    pub dropped_aqm: u64,
    /// Packets marked CE at dequeue.
    pub marked: u64,
    /// Packets that left the queue for the transmitter.
    pub departed: u64,
    /// Sum of the departed packets' sojourns, ns (divided by `departed`: the mean sojourn).
    pub sojourn_total_ns: u64,
    /// The longest sojourn of a departed packet, ns.
    pub sojourn_max_ns: u64,
}

/// DualPI2's state besides its two queues: PI2's base probability, the derived probabilities,
/// the per-class counters and the random stream. The queues are [`DualQueues`].
#[derive(Clone, Debug)]
pub struct DualPi2 {
    cfg: DualPi2Config,
    /// PI2's base probability p', in [0, 1].
    p_base: f64,
    /// `curq` at the previous update (`prevq`), ns.
    prevq_ns: u64,
    next_update_ns: u64,
    l4s: ClassCounters,
    classic: ClassCounters,
    /// Sojourns of the L4S queue's departed packets, ns (one value per departure).
    l4s_sojourn: Histogram,
    /// Sojourns of the Classic queue's departed packets, ns (one value per departure).
    classic_sojourn: Histogram,
    rng: SplitMix64,
}

/// The two FIFOs of DualPI2 and the AQM that couples them.
#[derive(Clone, Debug)]
pub struct DualQueues<P> {
    l4s: Fifo<P>,
    classic: Fifo<P>,
    aqm: DualPi2,
}

impl DualPi2 {
    /// Idle state with `cfg` (p' = 0, the first update at `tupdate`), drawing from `rng`.
    pub fn new(cfg: &DualPi2Config, rng: SplitMix64) -> DualPi2 {
        DualPi2 {
            cfg: *cfg,
            p_base: 0.0,
            prevq_ns: 0,
            next_update_ns: cfg.tupdate_ns,
            l4s: ClassCounters::default(),
            classic: ClassCounters::default(),
            l4s_sojourn: Histogram::new(),
            classic_sojourn: Histogram::new(),
            rng,
        }
    }

    /// The parameters.
    pub fn config(&self) -> &DualPi2Config {
        &self.cfg
    }

    /// PI2's base probability p' now.
    pub fn p_base(&self) -> f64 {
        self.p_base
    }

    /// The Classic drop/mark probability p_C = p'² (RFC 9332 §2.1).
    pub fn p_classic(&self) -> f64 {
        self.p_base * self.p_base
    }

    /// The coupled L4S marking probability p_CL = k·p', capped at 1 (§2.1; App. A).
    pub fn p_coupled(&self) -> f64 {
        (self.cfg.coupling * self.p_base).min(1.0)
    }

    /// True while the L4S queue is overloaded: p_CL has reached p_Lmax = 1 (§4.2.3; App. A),
    /// so L4S packets are dropped with p_C as well as marked.
    pub fn overloaded(&self) -> bool {
        self.cfg.coupling * self.p_base >= 1.0
    }

    /// The native L4S AQM's probability p'_L for a packet that waited `sojourn_ns` with
    /// `l4s_waiting` L4S packets still queued behind it (App. A's `laqm`, the ramp from
    /// `l4s_threshold` over `l4s_ramp`, a step when the ramp is 0; `Th_len`).
    pub fn p_native(&self, sojourn_ns: u64, l4s_waiting: u64) -> f64 {
        if l4s_waiting <= self.cfg.l4s_min_qlen_packets || sojourn_ns < self.cfg.l4s_threshold_ns {
            return 0.0;
        }
        let above_ns = sojourn_ns - self.cfg.l4s_threshold_ns;
        if above_ns >= self.cfg.l4s_ramp_ns {
            1.0
        } else {
            above_ns as f64 / self.cfg.l4s_ramp_ns as f64
        }
    }

    /// The L4S marking probability p_L = max(p'_L, p_CL) (§2.4; App. A's dequeue).
    pub fn p_l4s(&self, sojourn_ns: u64, l4s_waiting: u64) -> f64 {
        self.p_native(sojourn_ns, l4s_waiting).max(self.p_coupled())
    }

    /// The L4S queue's counters.
    pub fn l4s_counters(&self) -> &ClassCounters {
        &self.l4s
    }

    /// The Classic queue's counters.
    pub fn classic_counters(&self) -> &ClassCounters {
        &self.classic
    }

    /// The sojourns (enqueue to the start of transmission, ns) of the packets that left one
    /// queue, one value per departure (a departure of several packets, [`QueuedPacket::packets`],
    /// is one value): the per-class queueing delay RFC 9332 §2.1 sets the two queues apart by
    /// (L4S around a millisecond, Classic around `target`). Dropped packets are not in it.
    pub fn sojourn_histogram(&self, class: Class) -> &Histogram {
        match class {
            Class::L4s => &self.l4s_sojourn,
            Class::Classic => &self.classic_sojourn,
        }
    }

    /// One update of p' (App. A's update) with the Classic queue's delay `curq_ns`:
    /// p' ← clamp(p' + alpha·(curq − target) + beta·(curq − prevq), 0, 1), times in seconds.
    fn update(&mut self, curq_ns: u64) {
        let (curq, prevq, target) = (curq_ns as f64 / 1e9, self.prevq_ns as f64 / 1e9, self.cfg.target_ns as f64 / 1e9);
        let p = self.p_base + self.cfg.alpha * (curq - target) + self.cfg.beta * (curq - prevq);
        self.p_base = p.clamp(0.0, 1.0);
        self.prevq_ns = curq_ns;
    }

    /// Run every update due at or before `now_ns`; the Classic head (enqueued at
    /// `classic_head_enqueued_ns`, `None` when C is empty) is the same for all of them: nothing
    /// arrived or left in between.
    #[inline]
    fn catch_up(&mut self, now_ns: u64, classic_head_enqueued_ns: Option<u64>) {
        if classic_head_enqueued_ns.is_none() && self.p_base == 0.0 && self.prevq_ns == 0 && self.next_update_ns <= now_ns {
            // At rest (C empty, p' = 0, prevq = 0) an update gives p' = clamp(−alpha·target) = 0
            // and prevq = 0 again: skip to the first update after `now_ns` (long idle periods).
            let missed = (now_ns - self.next_update_ns) / self.cfg.tupdate_ns + 1;
            self.next_update_ns += missed * self.cfg.tupdate_ns;
            return;
        }
        while self.next_update_ns <= now_ns {
            let at = self.next_update_ns;
            let curq_ns = classic_head_enqueued_ns.map_or(0, |enq| at.saturating_sub(enq));
            self.update(curq_ns);
            self.next_update_ns += self.cfg.tupdate_ns;
        }
    }

    /// Bernoulli draw with probability `p`, drawing nothing when `p` is 0.
    #[inline]
    fn draw(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.bernoulli(p)
    }

    fn counters_mut(&mut self, class: Class) -> &mut ClassCounters {
        match class {
            Class::L4s => &mut self.l4s,
            Class::Classic => &mut self.classic,
        }
    }
}

/// What DualPI2 does with a packet it dequeued.
enum Fate {
    Send,
    Mark,
    Drop,
}

impl<P: QueuedPacket> DualQueues<P> {
    /// Empty queues with `cfg`, drawing from `rng`.
    pub fn new(cfg: &DualPi2Config, rng: SplitMix64) -> DualQueues<P> {
        DualQueues { l4s: Fifo::new(), classic: Fifo::new(), aqm: DualPi2::new(cfg, rng) }
    }

    /// The AQM's state and counters.
    pub fn aqm(&self) -> &DualPi2 {
        &self.aqm
    }

    /// Packets waiting in both queues.
    #[inline]
    pub fn packets(&self) -> u64 {
        self.l4s.packets() + self.classic.packets()
    }

    /// Bytes waiting in both queues.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.l4s.bytes() + self.classic.bytes()
    }

    /// Packets waiting in one queue.
    pub fn class_packets(&self, class: Class) -> u64 {
        match class {
            Class::L4s => self.l4s.packets(),
            Class::Classic => self.classic.packets(),
        }
    }

    /// True when both queues are empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.l4s.is_empty() && self.classic.is_empty()
    }

    /// Drop everything waiting (not counted as decisions).
    pub fn clear(&mut self) {
        self.l4s.clear();
        self.classic.clear();
    }

    /// Admit `pkt` arriving at `now_ns` into its queue (RFC 9332 App. A's enqueue): refused when
    /// it does not fit under the shared `limit`, classified by [`QueuedPacket::l4s`] otherwise.
    /// Counted in `counters` (the limit's drops); never marked here.
    pub fn enqueue(&mut self, pkt: P, now_ns: u64, limit: Limit, counters: &mut QdiscCounters) -> Verdict {
        self.aqm.catch_up(now_ns, self.classic.front().map(|e| e.enqueued_ns));
        let class = if pkt.l4s() { Class::L4s } else { Class::Classic };
        if !limit.fits(self.packets(), self.bytes(), pkt.size_bytes()) {
            counters.dropped += pkt.packets();
            self.aqm.counters_mut(class).dropped_limit += pkt.packets();
            return Verdict::Drop;
        }
        self.aqm.counters_mut(class).enqueued += pkt.packets();
        let q = match class {
            Class::L4s => &mut self.l4s,
            Class::Classic => &mut self.classic,
        };
        q.push(Entry { pkt, enqueued_ns: now_ns });
        Verdict::Enqueue
    }

    /// The queue the time-shifted FIFO serves next (§2.4, §4.2.2): the only non-empty one, else C
    /// when its head arrived more than `tshift` before L's head, else L.
    pub fn scheduled(&self) -> Option<Class> {
        match (self.l4s.front(), self.classic.front()) {
            (None, None) => None,
            (Some(_), None) => Some(Class::L4s),
            (None, Some(_)) => Some(Class::Classic),
            (Some(l), Some(c)) => {
                if c.enqueued_ns.saturating_add(self.aqm.cfg.tshift_ns) < l.enqueued_ns {
                    Some(Class::Classic)
                } else {
                    Some(Class::L4s)
                }
            }
        }
    }

    /// The packet the transmitter starts sending at `now_ns` (App. A's dequeue): the scheduled
    /// queue's head, marked or dropped by its AQM (a dropped packet is counted in `counters`
    /// and the next is tried); `None` when both queues are empty.
    pub fn dequeue(&mut self, now_ns: u64, counters: &mut QdiscCounters) -> Option<Entry<P>> {
        self.aqm.catch_up(now_ns, self.classic.front().map(|e| e.enqueued_ns));
        while let Some(class) = self.scheduled() {
            let mut e = match class {
                Class::L4s => self.l4s.pop(),
                Class::Classic => self.classic.pop(),
            }
            .expect("the scheduled queue is not empty");
            let sojourn_ns = now_ns.saturating_sub(e.enqueued_ns);
            let fate = match class {
                Class::L4s => self.l4s_fate(sojourn_ns),
                Class::Classic => self.classic_fate(e.pkt.ect()),
            };
            let n = e.pkt.packets();
            let c = self.aqm.counters_mut(class);
            match fate {
                Fate::Drop => {
                    c.dropped_aqm += n;
                    counters.dropped += n;
                    counters.dropped_early += n;
                    continue;
                }
                Fate::Mark => {
                    e.pkt.set_ce();
                    c.marked += n;
                    counters.marked += n;
                }
                Fate::Send => {}
            }
            c.departed += n;
            c.sojourn_total_ns += sojourn_ns * n;
            c.sojourn_max_ns = c.sojourn_max_ns.max(sojourn_ns);
            match class {
                Class::L4s => self.aqm.l4s_sojourn.record(sojourn_ns),
                Class::Classic => self.aqm.classic_sojourn.record(sojourn_ns),
            }
            return Some(e);
        }
        None
    }

    /// An L4S packet's fate (App. A's dequeue, the L branch): marked with p_L while not
    /// overloaded; under overload dropped with p_C, else marked with p_CL (= 1).
    fn l4s_fate(&mut self, sojourn_ns: u64) -> Fate {
        let aqm = &mut self.aqm;
        if !aqm.overloaded() {
            let p_l = aqm.p_l4s(sojourn_ns, self.l4s.packets());
            return if aqm.draw(p_l) { Fate::Mark } else { Fate::Send };
        }
        if aqm.draw(aqm.p_classic()) {
            Fate::Drop
        } else if aqm.draw(aqm.p_coupled()) {
            Fate::Mark
        } else {
            Fate::Send
        }
    }

    /// A Classic packet's fate (App. A's dequeue, the C branch): picked with p_C, then dropped
    /// when Not-ECT or when p_C ≥ p_Cmax (overload disables ECN), marked otherwise.
    fn classic_fate(&mut self, ect: bool) -> Fate {
        let aqm = &mut self.aqm;
        let p_c = aqm.p_classic();
        if !aqm.draw(p_c) {
            Fate::Send
        } else if !ect || p_c >= aqm.cfg.p_c_max() {
            Fate::Drop
        } else {
            Fate::Mark
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::test_packets::FlagPkt;

    const NOT_ECT: (bool, bool) = (false, false);
    const ECT0: (bool, bool) = (true, false);
    const ECT1: (bool, bool) = (true, true);

    fn pkt(id: u32, (ect, l4s): (bool, bool)) -> FlagPkt {
        FlagPkt { id, ect, l4s, ..FlagPkt::default() }
    }

    const MS: u64 = 1_000_000;

    fn queues(cfg: DualPi2Config) -> (DualQueues<FlagPkt>, QdiscCounters) {
        (DualQueues::new(&cfg, SplitMix64::new(7)), QdiscCounters::default())
    }

    /// ECT(1) and CE go to L, Not-ECT and ECT(0) to C (RFC 9331 §5.1; RFC 9332 §2.3); CE is
    /// `l4s()` too (the packet type reports it).
    #[test]
    fn classification_by_codepoint() {
        let (mut q, mut c) = queues(DualPi2Config::default());
        let ce = FlagPkt { id: 3, ect: true, l4s: true, ce: true, ..FlagPkt::default() };
        for p in [pkt(0, NOT_ECT), pkt(1, ECT0), pkt(2, ECT1), ce] {
            assert_eq!(q.enqueue(p, 0, Limit::Packets(10), &mut c), Verdict::Enqueue);
        }
        assert_eq!((q.class_packets(Class::L4s), q.class_packets(Class::Classic)), (2, 2));
        assert_eq!((q.aqm().l4s_counters().enqueued, q.aqm().classic_counters().enqueued), (2, 2));
        // The shared limit: a fifth packet of either class is refused and counted in its class.
        assert_eq!(q.enqueue(pkt(4, ECT1), 0, Limit::Packets(4), &mut c), Verdict::Drop);
        assert_eq!(q.enqueue(pkt(5, NOT_ECT), 0, Limit::Packets(4), &mut c), Verdict::Drop);
        assert_eq!((q.aqm().l4s_counters().dropped_limit, q.aqm().classic_counters().dropped_limit), (1, 1));
        assert_eq!(c.dropped, 2);
    }

    /// The PI2 update against App. A's update, step by step with hand-computed values
    /// (alpha 0.16, beta 3.2, target 15 ms, Tupdate 16 ms): a Classic packet enqueued at 0 is
    /// 16 ms old at the first update, 32 ms at the second; then C empties and the delay is 0.
    #[test]
    fn pi2_update_follows_the_pseudocode() {
        let (mut q, mut c) = queues(DualPi2Config::default());
        q.enqueue(pkt(0, NOT_ECT), 0, Limit::Unlimited, &mut c);
        // Update at 16 ms: curq = 0.016 s, prevq = 0.
        // p' = 0 + 0.16·(0.016 − 0.015) + 3.2·(0.016 − 0) = 0.00016 + 0.0512 = 0.05136.
        q.aqm.catch_up(16 * MS, Some(0));
        assert!((q.aqm().p_base() - 0.05136).abs() < 1e-12, "{}", q.aqm().p_base());
        // Update at 32 ms: curq = 0.032, prevq = 0.016.
        // p' = 0.05136 + 0.16·0.017 + 3.2·0.016 = 0.05136 + 0.00272 + 0.0512 = 0.10528.
        q.aqm.catch_up(32 * MS, Some(0));
        assert!((q.aqm().p_base() - 0.10528).abs() < 1e-12, "{}", q.aqm().p_base());
        // p_C = p'², p_CL = k·p'.
        assert!((q.aqm().p_classic() - 0.10528 * 0.10528).abs() < 1e-15);
        assert!((q.aqm().p_coupled() - 0.21056).abs() < 1e-12);
        // C empties at 40 ms (p_C ≈ 1.1%: the draw may mark or drop; the packet leaves either way).
        q.dequeue(40 * MS, &mut c);
        assert!(q.is_empty());
        // Update at 48 ms: curq = 0, prevq = 0.032.
        // p' = 0.10528 + 0.16·(−0.015) + 3.2·(−0.032) = 0.10528 − 0.0024 − 0.1024 = 0.00048.
        q.aqm.catch_up(48 * MS, None);
        assert!((q.aqm().p_base() - 0.00048).abs() < 1e-12, "{}", q.aqm().p_base());
        // Update at 64 ms: p' = 0.00048 − 0.0024 − 0 < 0, clamped to 0.
        q.aqm.catch_up(64 * MS, None);
        assert_eq!(q.aqm().p_base(), 0.0);
        // At rest the updates are skipped in one step, on the same grid of Tupdate.
        q.aqm.catch_up(80 * MS, None);
        q.aqm.catch_up(10_000 * MS + 5, None);
        assert_eq!((q.aqm().p_base(), q.aqm.next_update_ns), (0.0, 10_016 * MS));
        // A Classic packet after the rest: the next update (10.016 s) sees it 16 ms old.
        q.enqueue(pkt(1, NOT_ECT), 10_000 * MS, Limit::Unlimited, &mut c);
        q.aqm.catch_up(10_016 * MS, Some(10_000 * MS));
        assert!((q.aqm().p_base() - 0.05136).abs() < 1e-12, "{}", q.aqm().p_base());
    }

    fn with_p_base(p: f64) -> DualPi2 {
        let mut aqm = DualPi2::new(&DualPi2Config::default(), SplitMix64::new(1));
        aqm.p_base = p;
        aqm
    }

    /// p_C = p'², p_L = max(p'_L, k·p') (§2.1, §2.4), the native AQM a step at 1 ms that
    /// needs more than `Th_len` = 1 L4S packet waiting, or a ramp.
    #[test]
    fn probabilities_square_couple_and_combine() {
        let aqm = with_p_base(0.1);
        assert!((aqm.p_classic() - 0.01).abs() < 1e-15);
        assert!((aqm.p_coupled() - 0.2).abs() < 1e-15);
        // Below the step: the coupled probability.
        assert!((aqm.p_l4s(999_999, 5) - 0.2).abs() < 1e-15);
        // At the step with 2 waiting: the native 1 dominates.
        assert_eq!(aqm.p_l4s(MS, 2), 1.0);
        // At the step with only 1 waiting (Th_len): no native marking.
        assert!((aqm.p_l4s(5 * MS, 1) - 0.2).abs() < 1e-15);
        // k·p' is capped at 1.
        assert_eq!(with_p_base(0.7).p_coupled(), 1.0);
        // The RFC's ramp: minTh 800 µs, range 400 µs.
        let ramp = DualPi2Config { l4s_threshold_ns: 800_000, l4s_ramp_ns: 400_000, ..DualPi2Config::default() };
        let aqm = DualPi2::new(&ramp, SplitMix64::new(1));
        assert_eq!(aqm.p_native(799_999, 5), 0.0);
        assert_eq!(aqm.p_native(800_000, 5), 0.0);
        assert!((aqm.p_native(1_000_000, 5) - 0.5).abs() < 1e-15);
        assert_eq!(aqm.p_native(1_200_000, 5), 1.0);
    }

    /// With p' = 0, an L4S packet is marked exactly when it waited at least 1 ms with more than
    /// one L4S packet left behind it; Classic packets are never touched.
    #[test]
    fn step_marking_at_one_millisecond() {
        let (mut q, mut c) = queues(DualPi2Config::default());
        // Five L4S packets at 0, 0.1, …, 0.4 ms; dequeued from 1.2 ms one every 0.1 ms.
        for i in 0..5u32 {
            q.enqueue(pkt(i, ECT1), u64::from(i) * 100_000, Limit::Unlimited, &mut c);
        }
        let mut marks = Vec::new();
        for i in 0..5u64 {
            let e = q.dequeue(1_200_000 + i * 100_000, &mut c).unwrap();
            marks.push((e.pkt.id, e.pkt.ce));
        }
        // Sojourns 1.2 ms each; L4S packets left after each dequeue: 4, 3, 2, 1, 0.
        assert_eq!(marks, vec![(0, true), (1, true), (2, true), (3, false), (4, false)]);
        assert_eq!((q.aqm().l4s_counters().marked, c.marked), (3, 3));
        // Under 1 ms: no mark.
        for i in 0..4u32 {
            q.enqueue(pkt(10 + i, ECT1), 10 * MS, Limit::Unlimited, &mut c);
        }
        assert!(!q.dequeue(10 * MS + 999_999, &mut c).unwrap().pkt.ce);
    }

    /// Overload (§4.2.3; App. A): with p' ≥ 1/k L4S packets are dropped with p_C; with
    /// p_C ≥ p_Cmax = 1/4 Classic ECT(0) packets are dropped instead of marked.
    #[test]
    fn overload_drops_l4s_and_disables_classic_ecn() {
        let (mut q, mut c) = queues(DualPi2Config::default());
        // Below overload: p' = 0.3, p_CL = 0.6, p_C = 0.09. L4S packets are marked, never dropped.
        q.aqm.p_base = 0.3;
        q.aqm.next_update_ns = u64::MAX;
        for i in 0..2000u32 {
            q.enqueue(pkt(i, ECT1), 0, Limit::Unlimited, &mut c);
            q.dequeue(0, &mut c).unwrap();
        }
        let l = *q.aqm().l4s_counters();
        assert_eq!(l.dropped_aqm, 0);
        assert!((l.marked as f64 / 2000.0 - 0.6).abs() < 0.05, "{l:?}");
        // Overload: p' = 0.6, p_CL = 1, p_C = 0.36 ≥ 1/4.
        q.aqm.p_base = 0.6;
        assert!(q.aqm().overloaded());
        for i in 0..2000u32 {
            q.enqueue(pkt(i, ECT1), 0, Limit::Unlimited, &mut c);
            q.enqueue(pkt(i, ECT0), 0, Limit::Unlimited, &mut c);
            while q.dequeue(0, &mut c).is_some() {}
        }
        let after = *q.aqm().l4s_counters();
        let share = after.dropped_aqm as f64 / 2000.0;
        assert!((share - 0.36).abs() < 0.05, "L4S drop share {share}");
        // Every surviving L4S packet is marked (p_CL = 1).
        assert_eq!(after.marked - l.marked, after.departed - l.departed);
        let cc = *q.aqm().classic_counters();
        assert_eq!(cc.marked, 0, "ECN is disabled for C under overload");
        assert!((cc.dropped_aqm as f64 / 2000.0 - 0.36).abs() < 0.05, "{cc:?}");
        // Not overloaded but p_C picks: Not-ECT dropped, ECT(0) marked.
        q.aqm.p_base = 0.45; // p_C = 0.2025 < 1/4, p_CL = 0.9
        let before = *q.aqm().classic_counters();
        for i in 0..2000u32 {
            q.enqueue(pkt(i, ECT0), 0, Limit::Unlimited, &mut c);
            q.dequeue(0, &mut c).unwrap();
        }
        let after = *q.aqm().classic_counters();
        assert_eq!(after.dropped_aqm, before.dropped_aqm);
        assert!(((after.marked - before.marked) as f64 / 2000.0 - 0.2025).abs() < 0.05);
    }

    /// The time-shifted FIFO: L is served ahead of older Classic packets until C's head has
    /// waited more than `tshift` longer than L's, so a standing L queue cannot starve C.
    #[test]
    fn time_shifted_fifo_protects_classic() {
        let cfg = DualPi2Config { tshift_ns: 30 * MS, ..DualPi2Config::default() };
        let (mut q, mut c) = queues(cfg);
        q.aqm.next_update_ns = u64::MAX; // p' stays 0: no marks or drops
        q.enqueue(pkt(100, NOT_ECT), 0, Limit::Unlimited, &mut c);
        // A standing L queue: one L4S arrival and one departure every ms from 1 ms on.
        let mut served_classic_at = None;
        for t in 1..100u64 {
            q.enqueue(pkt(t as u32, ECT1), t * MS, Limit::Unlimited, &mut c);
            q.enqueue(pkt(t as u32 + 1000, ECT1), t * MS, Limit::Unlimited, &mut c);
            let e = q.dequeue(t * MS, &mut c).unwrap();
            if e.pkt.id == 100 {
                served_classic_at = Some(t);
                break;
            }
        }
        // Two arrivals per departure: L's head at t ms arrived at ⌈t/2⌉ ms; C's head at 0. C goes
        // once L's head is more than 30 ms younger: at t = 61 ms (L's head from 31 ms).
        assert_eq!(served_classic_at, Some(61));
        // With both heads young, L goes first even when C's head is older.
        let (mut q, mut c) = queues(cfg);
        q.enqueue(pkt(1, NOT_ECT), 0, Limit::Unlimited, &mut c);
        q.enqueue(pkt(2, ECT1), 5 * MS, Limit::Unlimited, &mut c);
        assert_eq!(q.scheduled(), Some(Class::L4s));
        assert_eq!(q.dequeue(6 * MS, &mut c).unwrap().pkt.id, 2);
        assert_eq!(q.dequeue(6 * MS, &mut c).unwrap().pkt.id, 1);
        assert!(q.dequeue(6 * MS, &mut c).is_none());
    }

    /// Each departure's sojourn goes into its own class's histogram, dropped packets into none.
    #[test]
    fn sojourn_histograms_per_class() {
        let (mut q, mut c) = queues(DualPi2Config::default());
        q.aqm.next_update_ns = u64::MAX; // p' stays 0: nothing dropped or marked by p'
        q.enqueue(pkt(0, NOT_ECT), 0, Limit::Unlimited, &mut c);
        q.enqueue(pkt(1, ECT1), 3 * MS, Limit::Unlimited, &mut c);
        q.enqueue(pkt(2, ECT0), 4 * MS, Limit::Unlimited, &mut c);
        // L first (both heads within tshift): 1 waited 2 ms; then C: 0 waited 6 ms, 2 waited 3 ms.
        let order: Vec<u32> = [5 * MS, 6 * MS, 7 * MS].iter().map(|&t| q.dequeue(t, &mut c).unwrap().pkt.id).collect();
        assert_eq!(order, vec![1, 0, 2]);
        let (l, cl) = (q.aqm().sojourn_histogram(Class::L4s), q.aqm().sojourn_histogram(Class::Classic));
        assert_eq!((l.count(), cl.count()), (1, 2));
        assert_eq!((l.min(), l.max_ns()), (2e6, 2 * MS));
        assert_eq!((cl.min(), cl.max_ns(), cl.mean()), (3e6, 6 * MS, 4.5e6));
        // A Not-ECT packet dropped at dequeue (p_C = 1) adds nothing.
        q.aqm.p_base = 1.0;
        q.enqueue(pkt(3, NOT_ECT), 8 * MS, Limit::Unlimited, &mut c);
        assert!(q.dequeue(9 * MS, &mut c).is_none());
        assert_eq!(q.aqm().sojourn_histogram(Class::Classic).count(), 2);
        assert_eq!(q.aqm().classic_counters().dropped_aqm, 1);
    }

    #[test]
    fn validation_names_the_field() {
        assert_eq!(DualPi2Config::default().validate(), Ok(()));
        let e = DualPi2Config { target_ns: 0, ..DualPi2Config::default() }.validate().unwrap_err();
        assert_eq!(e.to_string(), "target_ns: must be positive");
        let e = DualPi2Config { tupdate_ns: 0, ..DualPi2Config::default() }.validate().unwrap_err();
        assert_eq!(e.to_string(), "tupdate_ns: must be positive");
        let e = DualPi2Config { coupling: 0.0, ..DualPi2Config::default() }.validate().unwrap_err();
        assert_eq!(e.to_string(), "coupling: 0 is not a positive number");
        let e = DualPi2Config { beta: f64::NAN, ..DualPi2Config::default() }.validate().unwrap_err();
        assert_eq!(e.field, "beta");
        assert_eq!(DualPi2Config { coupling: 0.5, ..DualPi2Config::default() }.p_c_max(), 1.0);
        assert_eq!(DualPi2Config::default().p_c_max(), 0.25);
    }
}
