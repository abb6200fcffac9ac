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

use serde::{Deserialize, Serialize};

use super::fifo::Fifo;
use super::interface::{Entry, QdiscCounters, QueuedPacket, MTU_BYTES};
use crate::field_error::{positive, FieldError};

/// CoDel's parameters (RFC 8289 §4), and the engine spec's `queue.codel` object (every key
/// required; the front end writes 5 ms and 100 ms by default). `mtu_bytes` is not in the format:
/// it is [`MTU_BYTES`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    #[serde(skip, default = "super::interface::mtu_bytes")]
    pub mtu_bytes: u64,
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
    /// RFC 8289's defaults: target 5 ms, interval 100 ms, no ECN, 1500-byte MTU.
    fn default() -> Self {
        CodelConfig { target_ns: 5_000_000, interval_ns: 100_000_000, ecn: false, mtu_bytes: MTU_BYTES }
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

    /// §5.5 `dequeue`: the packet to send at `now_ns` from `q`, after CoDel's drops.
    pub fn dequeue<P: QueuedPacket>(&mut self, q: &mut Fifo<P>, now_ns: u64, counters: &mut QdiscCounters) -> Option<Entry<P>> {
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
                    return Some(marked);
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
            Some(e)
        } else if ok_to_drop {
            // Enter the dropping state: drop (or mark) this packet, schedule the next drop.
            self.dropping = true;
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = if delta > 1 && now_ns.saturating_sub(self.drop_next_ns) < 16 * self.cfg.interval_ns { delta } else { 1 };
            self.drop_next_ns = self.control_law(now_ns);
            self.lastcount = self.count;
            if let Some(marked) = self.drop_or_mark(e, counters) {
                return Some(marked);
            }
            match self.dodequeue(q, now_ns) {
                None => {
                    self.dropping = false;
                    None
                }
                Some((next, _)) => Some(next),
            }
        } else {
            Some(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug)]
    struct Pkt {
        ect: bool,
        ce: bool,
    }

    impl QueuedPacket for Pkt {
        fn size_bytes(&self) -> u64 {
            1500
        }
        fn flow_hash(&self) -> u64 {
            0
        }
        fn ect(&self) -> bool {
            self.ect
        }
        fn set_ce(&mut self) {
            self.ce = true;
        }
    }

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
                q.push(Entry { pkt: Pkt { ect: true, ce: false }, enqueued_ns: i * 1_000_000 });
            }
            let mut events = Vec::new();
            for i in 20..2000u64 {
                let now = i * 1_000_000;
                q.push(Entry { pkt: Pkt { ect: true, ce: false }, enqueued_ns: now });
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
                q.push(Entry { pkt: Pkt { ect: false, ce: false }, enqueued_ns: i * 10_000_000 });
            }
            while c.dequeue(&mut q, i * 10_000_000 + 4_000_000, &mut counters).is_some() {}
        }
        assert_eq!(counters, QdiscCounters::default());
        // One packet waiting for 50 ms each time: above target, but at most one MTU queued.
        let mut c = Codel::new(&CodelConfig::default());
        for i in 0..100u64 {
            let mut q = Fifo::new();
            q.push(Entry { pkt: Pkt { ect: false, ce: false }, enqueued_ns: i * 50_000_000 });
            q.push(Entry { pkt: Pkt { ect: false, ce: false }, enqueued_ns: i * 50_000_000 });
            assert!(c.dequeue(&mut q, (i + 1) * 50_000_000, &mut counters).is_some());
        }
        assert_eq!(counters, QdiscCounters::default());
    }
}
