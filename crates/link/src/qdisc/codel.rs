//! CoDel, Controlled Delay (Nichols, Jacobson, McGregor, Iyengar, RFC 8289, 2018).
//!
//! CoDel decides at dequeue, on the *sojourn time* of the packet leaving (§3.1: "the local
//! minimum queue ... over an interval"): when every packet has waited at least `target` for a
//! whole `interval` (§3.2), it enters the dropping state and drops the head packet; while in it,
//! it drops the next packets at the times of the control law `drop_next + interval/sqrt(count)`
//! (§3.3), so the drop rate rises as the square root of the drops until the sojourn time falls
//! below `target` (or the queue holds at most one MTU, §4.2's `maxpacket` check). Re-entering the
//! dropping state soon after leaving it resumes near the previous rate (§5.6: `count` restarts
//! at `count − lastcount` when that is above 1 and the last drop was less than 16 intervals ago).
//! With ECN, an ECT packet due to be dropped is marked CE and sent instead, and the control law
//! advances as for a drop (§5: "packets may be ECN-marked instead of dropped").
//! Defaults: target 5 ms, interval 100 ms (§4.2–§4.3).
//!
//! An optional CE threshold ([`CeThreshold`], Linux's `ce_threshold` on sch_codel and
//! sch_fq_codel, their L4S mode) marks the packet leaving when its sojourn time exceeds a shallow
//! threshold, on top of the control law: the immediate, unsmoothed signal scalable congestion
//! controls respond to (RFC 9331 §5.1's identifier selects them, [`EcnSelector`]).

use serde::{Deserialize, Serialize};

use super::fifo::Fifo;
use super::interface::{Entry, QdiscCounters, QueuedPacket, MTU_BYTES};
use super::selector::EcnSelector;
use crate::field_error::{positive, FieldError};

/// CoDel's parameters (RFC 8289 §4), and the engine spec's `queue.codel` object
/// ([`CodelFormat`]: `target_ns`, `interval_ns` and `ecn` required, the front end writing 5 ms and
/// 100 ms by default; the CE threshold's `ce_threshold_ns` and `ce_threshold_selector` optional,
/// Linux's `ce_threshold` on sch_codel as on sch_fq_codel). `mtu_bytes` is not in the format: it
/// is [`MTU_BYTES`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CodelFormat", into = "CodelFormat")]
pub struct CodelConfig {
    /// Acceptable standing sojourn time (§4.3: 5 ms), ns.
    pub target_ns: u64,
    /// Sliding window over which the minimum sojourn must exceed `target` before dropping, and
    /// the control law's base interval (§4.2: 100 ms), ns.
    pub interval_ns: u64,
    /// Mark ECT packets CE instead of dropping them.
    pub ecn: bool,
    /// The largest packet (`maxpacket`, §4.2 / §5.5): CoDel never drops while the queue holds at
    /// most this many bytes, bytes.
    pub mtu_bytes: u64,
    /// Mark CE the ECT packets whose sojourn exceeds this threshold, besides the control law
    /// ([`CeThreshold`]); `None` = no threshold. In the `queue.codel` object as
    /// `ce_threshold_ns` and `ce_threshold_selector`; FQ-CoDel's object sets it for each flow
    /// queue ([`super::fq::FqCodelSpec`]).
    pub ce_threshold: Option<CeThreshold>,
}

/// The engine spec's `queue.codel` object as written: [`CodelConfig`]'s fields in the format's
/// units, the CE threshold as two optional keys (absent, or null, when unused: a spec without them
/// reads, and is written, as before they existed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodelFormat {
    /// [`CodelConfig::target_ns`].
    pub target_ns: u64,
    /// [`CodelConfig::interval_ns`].
    pub interval_ns: u64,
    /// [`CodelConfig::ecn`].
    pub ecn: bool,
    /// Mark CE every selected ECT packet whose sojourn exceeds this, besides the control law
    /// (Linux's `ce_threshold`, tc-codel(8)), ns; null (or absent) = no threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ce_threshold_ns: Option<u64>,
    /// The packets `ce_threshold_ns` applies to: `"all"` ECT packets (null or absent) or `"l4s"`,
    /// only ECT(1) ones (RFC 9331 §5.1); set only with `ce_threshold_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ce_threshold_selector: Option<EcnSelector>,
}

impl TryFrom<CodelFormat> for CodelConfig {
    type Error = FieldError;

    /// The parameters a `queue.codel` object gives.
    ///
    /// # Errors
    /// `ce_threshold_selector` without `ce_threshold_ns`.
    fn try_from(f: CodelFormat) -> Result<CodelConfig, FieldError> {
        let ce_threshold = match (f.ce_threshold_ns, f.ce_threshold_selector) {
            (None, Some(_)) => {
                return Err(FieldError::new("ce_threshold_selector", "needs ce_threshold (the sojourn time above which it marks)"));
            }
            (None, None) => None,
            (Some(sojourn_ns), selector) => Some(CeThreshold { sojourn_ns, selector: selector.unwrap_or_default() }),
        };
        Ok(CodelConfig { target_ns: f.target_ns, interval_ns: f.interval_ns, ecn: f.ecn, mtu_bytes: MTU_BYTES, ce_threshold })
    }
}

impl From<CodelConfig> for CodelFormat {
    /// The object the engine spec writes (`mtu_bytes` is not in it; the selector only when it
    /// is not the default `"all"`, so a spec that gave none reads back as it was).
    fn from(c: CodelConfig) -> CodelFormat {
        CodelFormat {
            target_ns: c.target_ns,
            interval_ns: c.interval_ns,
            ecn: c.ecn,
            ce_threshold_ns: c.ce_threshold.map(|t| t.sojourn_ns),
            ce_threshold_selector: c.ce_threshold.map(|t| t.selector).filter(|s| *s != EcnSelector::All),
        }
    }
}

/// A CE-marking threshold on the sojourn time, applied at dequeue independently of CoDel's
/// control law — Linux's `ce_threshold` on CoDel and FQ-CoDel (tc-fq_codel(8); Linux commit
/// 80ba92fa1a92, 2015: "a queue occupancy threshold above which ECT packets get CE mark ...
/// translates to a sojourn time"), the step marking of DCTCP (RFC 8257 §3.1) measured in time.
/// The control law keeps running: the threshold marks what it sends, it does not change what it
/// drops or when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CeThreshold {
    /// A packet whose sojourn time exceeds this is marked, ns.
    pub sojourn_ns: u64,
    /// The packets the threshold applies to: every ECT packet, or only ECT(1) ones (Linux's
    /// `ce_threshold_selector 0x1/0x1` on the ECN field).
    pub selector: EcnSelector,
}

impl CeThreshold {
    /// Mark `e` CE when it leaves at `now_ns` with a sojourn above the threshold, is selected
    /// and is ECN-capable; each mark counts in `counters.marked`.
    #[inline]
    pub fn apply<P: QueuedPacket>(&self, e: &mut Entry<P>, now_ns: u64, counters: &mut QdiscCounters) {
        let sojourn_ns = now_ns.saturating_sub(e.enqueued_ns);
        if sojourn_ns > self.sojourn_ns && e.pkt.ect() && self.selector.selects(&e.pkt) {
            e.pkt.set_ce();
            counters.marked += e.pkt.packets();
        }
    }
}

impl CodelConfig {
    /// Check the values: target and interval positive, target below interval (RFC 8289 §4.3).
    ///
    /// # Errors
    /// The first problem, naming the field (`target_ns`, `interval_ns`).
    pub fn validate(&self) -> Result<(), FieldError> {
        positive("target_ns", self.target_ns)?;
        positive("interval_ns", self.interval_ns)?;
        if self.target_ns >= self.interval_ns {
            // In words and milliseconds: the scenario layer shows this message under its own field names.
            return Err(FieldError::new("target_ns", format!("must be shorter than the interval ({} ms)", self.interval_ns as f64 / 1e6)));
        }
        Ok(())
    }
}

impl Default for CodelConfig {
    /// RFC 8289's defaults: target 5 ms, interval 100 ms, no ECN, 1500-byte MTU, no CE threshold.
    fn default() -> Self {
        CodelConfig { target_ns: 5_000_000, interval_ns: 100_000_000, ecn: false, mtu_bytes: MTU_BYTES, ce_threshold: None }
    }
}

/// CoDel's state for one queue (RFC 8289 §5.2's variables).
#[derive(Clone, Debug)]
pub struct Codel {
    cfg: CodelConfig,
    /// When the sojourn time will have stayed above target for a whole interval; 0 = it is not
    /// above target now (`first_above_time`).
    first_above_ns: u64,
    /// When the next drop is due while dropping (`drop_next`).
    drop_next_ns: u64,
    /// Drops (and marks) since entering the dropping state (`count`).
    count: u32,
    /// `count` when the dropping state was last entered (`lastcount`).
    lastcount: u32,
    /// In the dropping state (`dropping`).
    dropping: bool,
}

impl Codel {
    /// Idle state with `cfg`.
    pub fn new(cfg: &CodelConfig) -> Codel {
        Codel { cfg: *cfg, first_above_ns: 0, drop_next_ns: 0, count: 0, lastcount: 0, dropping: false }
    }

    /// Drops and marks since the dropping state was last entered (`count`).
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The control law (§5.5): the next drop `interval/sqrt(count)` after `t_ns`.
    #[inline]
    fn control_law(&self, t_ns: u64) -> u64 {
        t_ns + (self.cfg.interval_ns as f64 / f64::from(self.count.max(1)).sqrt()) as u64
    }

    /// §5.4 `dodequeue`: take the head and say whether it may be dropped (its sojourn has been
    /// above target for at least an interval, and more than one MTU waits behind it).
    #[inline]
    fn dodequeue<P: QueuedPacket>(&mut self, q: &mut Fifo<P>, now_ns: u64) -> Option<(Entry<P>, bool)> {
        let Some(e) = q.pop() else {
            self.first_above_ns = 0;
            return None;
        };
        let sojourn_ns = now_ns.saturating_sub(e.enqueued_ns);
        let mut ok_to_drop = false;
        if sojourn_ns < self.cfg.target_ns || q.bytes() <= self.cfg.mtu_bytes {
            self.first_above_ns = 0;
        } else if self.first_above_ns == 0 {
            self.first_above_ns = now_ns + self.cfg.interval_ns;
        } else if now_ns >= self.first_above_ns {
            ok_to_drop = true;
        }
        Some((e, ok_to_drop))
    }

    /// Drop or mark `e` (an ECT packet is marked when `ecn`): returns it back when marked.
    #[inline]
    fn drop_or_mark<P: QueuedPacket>(&self, mut e: Entry<P>, counters: &mut QdiscCounters) -> Option<Entry<P>> {
        if self.cfg.ecn && e.pkt.ect() {
            e.pkt.set_ce();
            counters.marked += e.pkt.packets();
            Some(e)
        } else {
            counters.dropped += e.pkt.packets();
            counters.dropped_early += e.pkt.packets();
            None
        }
    }

    /// The packet to send at `now_ns` from `q`, after CoDel's drops and marks and then the CE
    /// threshold's mark, if one is set.
    pub fn dequeue<P: QueuedPacket>(&mut self, q: &mut Fifo<P>, now_ns: u64, counters: &mut QdiscCounters) -> Option<Entry<P>> {
        let (mut e, marked_by_law) = self.dequeue_by_law(q, now_ns, counters)?;
        if let Some(threshold) = self.cfg.ce_threshold.as_ref().filter(|_| !marked_by_law) {
            // A packet the law has just marked is not marked (nor counted) twice.
            threshold.apply(&mut e, now_ns, counters);
        }
        Some(e)
    }

    /// §5.5 `dequeue`: the packet to send at `now_ns` from `q`, after CoDel's drops, and whether
    /// the control law marked it.
    fn dequeue_by_law<P: QueuedPacket>(&mut self, q: &mut Fifo<P>, now_ns: u64, counters: &mut QdiscCounters) -> Option<(Entry<P>, bool)> {
        let Some((mut e, mut ok_to_drop)) = self.dodequeue(q, now_ns) else {
            self.dropping = false;
            return None;
        };
        if self.dropping {
            if !ok_to_drop {
                // Sojourn below target: leave the dropping state.
                self.dropping = false;
            }
            while self.dropping && now_ns >= self.drop_next_ns {
                self.count += 1;
                if let Some(marked) = self.drop_or_mark(e, counters) {
                    self.drop_next_ns = self.control_law(self.drop_next_ns);
                    return Some((marked, true));
                }
                match self.dodequeue(q, now_ns) {
                    None => {
                        self.dropping = false;
                        return None;
                    }
                    Some((next, ok)) => {
                        e = next;
                        ok_to_drop = ok;
                    }
                }
                if !ok_to_drop {
                    self.dropping = false;
                } else {
                    self.drop_next_ns = self.control_law(self.drop_next_ns);
                }
            }
            Some((e, false))
        } else if ok_to_drop {
            // Enter the dropping state: drop (or mark) this packet, schedule the next drop.
            self.dropping = true;
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = if delta > 1 && now_ns.saturating_sub(self.drop_next_ns) < 16 * self.cfg.interval_ns { delta } else { 1 };
            self.drop_next_ns = self.control_law(now_ns);
            self.lastcount = self.count;
            if let Some(marked) = self.drop_or_mark(e, counters) {
                return Some((marked, true));
            }
            match self.dodequeue(q, now_ns) {
                None => {
                    self.dropping = false;
                    None
                }
                Some((next, _)) => Some((next, false)),
            }
        } else {
            Some((e, false))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::test_packets::{Ecn, FlagPkt};

    /// A queue kept at a standing sojourn of 20 ms (one arrival per departure, every 1 ms): the
    /// first drop comes one interval after the sojourn first exceeded target, and the gaps
    /// between drops follow interval/sqrt(count): 100, 70.7, 57.7, 50 ms, … (count = 1, 2, …)
    #[test]
    fn drops_follow_the_control_law_under_a_standing_queue() {
        for ecn in [false, true] {
            let mut c = Codel::new(&CodelConfig { ecn, ..CodelConfig::default() });
            let mut q = Fifo::new();
            let mut counters = QdiscCounters::default();
            // 20 packets arrived 1 ms apart before t = 20 ms, then one per ms.
            for i in 0..20u64 {
                q.push(Entry { pkt: FlagPkt { ect: true, ..FlagPkt::default() }, enqueued_ns: i * 1_000_000 });
            }
            let mut events = Vec::new();
            for i in 20..2000u64 {
                let now = i * 1_000_000;
                q.push(Entry { pkt: FlagPkt { ect: true, ..FlagPkt::default() }, enqueued_ns: now });
                let before = counters;
                let out = c.dequeue(&mut q, now, &mut counters);
                if counters != before {
                    events.push(now);
                }
                if ecn {
                    assert!(out.is_some());
                }
            }
            if ecn {
                assert_eq!(counters.dropped, 0);
                assert_eq!(counters.marked as usize, events.len());
            } else {
                assert_eq!(counters.marked, 0);
            }
            // Sojourn is above target from the first dequeue (20 ms): first drop at 120 ms.
            assert_eq!(events[0], 120_000_000, "ecn {ecn}: {events:?}");
            for (k, w) in events.windows(2).enumerate().take(8) {
                // Without ECN each drop also takes one packet off the standing queue: the gaps
                // still follow the law within the 1 ms dequeue granularity.
                let want = 100.0 / ((k + 1) as f64).sqrt();
                let gap_ms = (w[1] - w[0]) as f64 / 1e6;
                assert!((gap_ms - want).abs() <= 1.0, "ecn {ecn}: gap {k} {gap_ms} ms, want {want:.1}: {events:?}");
            }
        }
    }

    #[test]
    fn no_drop_below_target_or_with_at_most_one_mtu_waiting() {
        let mut c = Codel::new(&CodelConfig::default());
        let mut q = Fifo::new();
        let mut counters = QdiscCounters::default();
        // Bursts of three packets, each sent 4 ms after it came (< 5 ms target), for 2 s.
        for i in 0..200u64 {
            for _ in 0..3 {
                q.push(Entry { pkt: FlagPkt::default(), enqueued_ns: i * 10_000_000 });
            }
            while c.dequeue(&mut q, i * 10_000_000 + 4_000_000, &mut counters).is_some() {}
        }
        assert_eq!(counters, QdiscCounters::default());
        // One packet waiting for 50 ms each time: above target, but at most one MTU queued.
        let mut c = Codel::new(&CodelConfig::default());
        for i in 0..100u64 {
            let mut q = Fifo::new();
            q.push(Entry { pkt: FlagPkt::default(), enqueued_ns: i * 50_000_000 });
            q.push(Entry { pkt: FlagPkt::default(), enqueued_ns: i * 50_000_000 });
            assert!(c.dequeue(&mut q, (i + 1) * 50_000_000, &mut counters).is_some());
        }
        assert_eq!(counters, QdiscCounters::default());
    }


    fn with_threshold(sojourn_ns: u64, selector: EcnSelector) -> CodelConfig {
        CodelConfig { ecn: true, ce_threshold: Some(CeThreshold { sojourn_ns, selector }), ..CodelConfig::default() }
    }

    /// Each codepoint enqueued at 0 and sent at `at_ns` through a 1 ms threshold: what leaves.
    fn sent_at(at_ns: u64, selector: EcnSelector) -> (Vec<Ecn>, QdiscCounters) {
        let mut c = Codel::new(&with_threshold(1_000_000, selector));
        let mut counters = QdiscCounters::default();
        let mut out = Vec::new();
        for p in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
            let mut q = Fifo::new();
            q.push(Entry { pkt: p, enqueued_ns: 0 });
            out.push(c.dequeue(&mut q, at_ns, &mut counters).expect("one packet waits").pkt);
        }
        (out, counters)
    }

    /// Linux's `ce_threshold`: a packet whose sojourn *exceeds* the threshold is marked if
    /// ECN-capable; with the L4S selector only ECT(1) (RFC 9331 §5.1). A CE arrival is marked
    /// again and counted, as CoDel's law counts it. Well below CoDel's 5 ms target, so the
    /// control law is not involved.
    #[test]
    fn the_ce_threshold_marks_by_sojourn_and_codepoint() {
        use Ecn::{Ce, Ect0, Ect1, NotEct};
        for selector in [EcnSelector::All, EcnSelector::L4s] {
            for at_ns in [500_000, 1_000_000] {
                let (out, counters) = sent_at(at_ns, selector);
                assert_eq!(out, [NotEct, Ect0, Ect1, Ce], "{selector:?} at {at_ns} ns");
                assert_eq!(counters, QdiscCounters::default());
            }
        }
        let (out, counters) = sent_at(1_000_001, EcnSelector::All);
        assert_eq!((out, counters.marked), (vec![NotEct, Ce, Ce, Ce], 3));
        let (out, counters) = sent_at(1_000_001, EcnSelector::L4s);
        assert_eq!((out, counters.marked), (vec![NotEct, Ect0, Ce, Ce], 2));
        assert_eq!(counters.dropped, 0);
    }

    /// The threshold runs beside the control law, not instead of it: under a standing 20 ms
    /// queue of ECT(1) packets CoDel (without ECN) drops at exactly the times it drops with no
    /// threshold, and the threshold marks every packet that is sent. With ECN the law marks
    /// some packets and the threshold the others: each sent packet is counted once.
    #[test]
    fn the_control_law_runs_unchanged_under_the_threshold() {
        let run = |cfg: CodelConfig| {
            let mut c = Codel::new(&cfg);
            let mut q = Fifo::new();
            let mut counters = QdiscCounters::default();
            for i in 0..20u64 {
                q.push(Entry { pkt: Ecn::Ect1, enqueued_ns: i * 1_000_000 });
            }
            let (mut drops, mut sent) = (Vec::new(), 0u64);
            for i in 20..1000u64 {
                let now = i * 1_000_000;
                q.push(Entry { pkt: Ecn::Ect1, enqueued_ns: now });
                let before = counters.dropped;
                if c.dequeue(&mut q, now, &mut counters).is_some() {
                    sent += 1;
                }
                if counters.dropped != before {
                    drops.push(now);
                }
            }
            (drops, sent, counters)
        };
        let (plain_drops, plain_sent, plain) = run(CodelConfig::default());
        let (drops, sent, counters) = run(CodelConfig { ecn: false, ..with_threshold(1_000_000, EcnSelector::L4s) });
        assert!(plain_drops.len() >= 5, "{plain_drops:?}");
        assert_eq!(drops, plain_drops);
        assert_eq!((sent, counters.dropped), (plain_sent, plain.dropped));
        assert_eq!((plain.marked, counters.marked), (0, sent));
        let (law_marks, _, by_law) = run(CodelConfig { ecn: true, ..CodelConfig::default() });
        let (none, sent, counters) = run(with_threshold(1_000_000, EcnSelector::L4s));
        assert!(law_marks.is_empty() && by_law.marked >= 5, "{by_law:?}");
        assert_eq!((none, counters.dropped, counters.marked), (vec![], 0, sent));
    }
}
