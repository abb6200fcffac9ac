//! PIE, Proportional Integral controller Enhanced (Pan, Natarajan, Baker, White, RFC 8033, 2017).
//!
//! PIE drops (or marks) arriving packets at random with a probability it updates every
//! `tupdate` from the queueing delay: `p = α·(qdelay − target) + β·(qdelay − qdelay_old)`
//! (§4.2), the step scaled down while the probability is small (§4.2's auto-tuning table: ÷2048
//! below 10⁻⁶, ÷512 below 10⁻⁵, ÷128 below 10⁻⁴, ÷32 below 10⁻³, ÷8 below 1%, ÷2 below 10%),
//! capped at 2% per update once the probability is at least 10%, and decayed by ×0.98 while the
//! delay stays at 0. The queueing delay is the sojourn time of the last packet dequeued (§5.2:
//! timestamps instead of a departure-rate estimate). Arrivals are spared while a burst allowance
//! remains (§4.4: `max_burst`, re-armed when the probability is 0 and both delays are under half
//! the target), when the delay was under half the target and the probability under 20%, and
//! when at most two packets' worth of bytes wait (§4.1). With ECN, an ECT packet picked while the
//! probability is at most 10% is marked instead of dropped (§5.1). Defaults (§4, §5.1): target
//! 15 ms, tupdate 15 ms, α 0.125 Hz, β 1.25 Hz, max_burst 150 ms. Derandomization (§5.4) is
//! not used.

use serde::{Deserialize, Serialize};

use super::fifo::Fifo;
use super::interface::{Entry, QueuedPacket, Verdict, MTU_BYTES};
use crate::field_error::{positive, FieldError};
use ccarena_rng::SplitMix64;

/// PIE's parameters (RFC 8033 §4 and §5), and the engine spec's `queue.pie` object (every key
/// required). `mean_packet_bytes` is not in the format: it is [`MTU_BYTES`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PieConfig {
    /// Target queueing delay (QDELAY_REF, 15 ms), ns.
    pub target_ns: u64,
    /// Interval between probability updates (T_UPDATE, 15 ms), ns.
    pub tupdate_ns: u64,
    /// Weight of the delay's deviation from target, per second of delay (α, 0.125).
    pub alpha: f64,
    /// Weight of the delay's change since the last update, per second of delay (β, 1.25).
    pub beta: f64,
    /// Burst allowance (MAX_BURST, 150 ms), ns.
    pub max_burst_ns: u64,
    /// Mark ECT packets instead of dropping them while the probability is at most 10%.
    pub ecn: bool,
    /// Mean packet size for the "two packets or fewer wait" test (MEAN_PKTSIZE), bytes.
    #[serde(skip, default = "super::interface::mtu_bytes")]
    pub mean_packet_bytes: u64,
}

impl PieConfig {
    /// Check the values: target and update interval positive, α and β positive and finite.
    ///
    /// # Errors
    /// The first problem, naming the field (`target_ns`, `tupdate_ns`, `alpha`, `beta`).
    pub fn validate(&self) -> Result<(), FieldError> {
        positive("target_ns", self.target_ns)?;
        positive("tupdate_ns", self.tupdate_ns)?;
        for (field, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(FieldError::new(field, format!("{v} is not a positive number")));
            }
        }
        Ok(())
    }
}

impl Default for PieConfig {
    /// RFC 8033's defaults: target 15 ms, tupdate 15 ms, α 0.125, β 1.25, max_burst 150 ms.
    fn default() -> Self {
        PieConfig { target_ns: 15_000_000, tupdate_ns: 15_000_000, alpha: 0.125, beta: 1.25, max_burst_ns: 150_000_000, ecn: false, mean_packet_bytes: MTU_BYTES }
    }
}

/// PIE's state (RFC 8033 §4).
#[derive(Clone, Debug)]
pub struct Pie {
    cfg: PieConfig,
    drop_prob: f64,
    /// The delay at the previous update (`qdelay_old`), ns.
    qdelay_old_ns: u64,
    /// Sojourn time of the last packet dequeued, ns (the current delay while packets wait).
    last_sojourn_ns: u64,
    /// True when the queue was empty after the last dequeue or before the first arrival.
    empty: bool,
    burst_allowance_ns: u64,
    next_update_ns: u64,
    rng: SplitMix64,
}

impl Pie {
    /// Idle state with `cfg`, drawing from `rng`.
    pub fn new(cfg: &PieConfig, rng: SplitMix64) -> Pie {
        Pie {
            cfg: *cfg,
            drop_prob: 0.0,
            qdelay_old_ns: 0,
            last_sojourn_ns: 0,
            empty: true,
            burst_allowance_ns: cfg.max_burst_ns,
            next_update_ns: cfg.tupdate_ns,
            rng,
        }
    }

    /// The drop probability now.
    pub fn drop_prob(&self) -> f64 {
        self.drop_prob
    }

    /// Run every periodic update (§4.2) due at or before `now_ns`. Nothing was enqueued or
    /// dequeued in between, so the current delay is the same for all of them.
    #[inline]
    fn catch_up(&mut self, now_ns: u64) {
        while self.next_update_ns <= now_ns {
            self.update();
            self.next_update_ns += self.cfg.tupdate_ns;
        }
    }

    /// One update of the drop probability (§4.2) and the burst allowance (§4.4).
    fn update(&mut self) {
        let qdelay_ns = if self.empty { 0 } else { self.last_sojourn_ns };
        let (qdelay, old, target) = (qdelay_ns as f64 / 1e9, self.qdelay_old_ns as f64 / 1e9, self.cfg.target_ns as f64 / 1e9);
        let mut p = self.cfg.alpha * (qdelay - target) + self.cfg.beta * (qdelay - old);
        // §4.2 auto-tuning: small probabilities move in small steps.
        let scale = match self.drop_prob {
            x if x < 0.000_001 => 1.0 / 2048.0,
            x if x < 0.000_01 => 1.0 / 512.0,
            x if x < 0.000_1 => 1.0 / 128.0,
            x if x < 0.001 => 1.0 / 32.0,
            x if x < 0.01 => 1.0 / 8.0,
            x if x < 0.1 => 1.0 / 2.0,
            _ => 1.0,
        };
        p *= scale;
        // §4.2: at 10% and above, rise by at most 2% per update.
        if self.drop_prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        // §4.2: decay while the queue stays empty.
        if qdelay_ns == 0 && self.qdelay_old_ns == 0 {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        // §4.4: spend the burst allowance; re-arm it once the queue has calmed down.
        let half = self.cfg.target_ns / 2;
        if self.burst_allowance_ns > 0 {
            self.burst_allowance_ns = self.burst_allowance_ns.saturating_sub(self.cfg.tupdate_ns);
        } else if self.drop_prob == 0.0 && qdelay_ns < half && self.qdelay_old_ns < half {
            self.burst_allowance_ns = self.cfg.max_burst_ns;
        }
        self.qdelay_old_ns = qdelay_ns;
    }

    /// The verdict for an arrival that fits under the hard limit and finds `q` (§4.1, §5.1).
    pub fn on_arrival<P: QueuedPacket>(&mut self, q: &Fifo<P>, ect: bool, now_ns: u64) -> Verdict {
        self.catch_up(now_ns);
        let half = self.cfg.target_ns / 2;
        if self.burst_allowance_ns > 0
            || (self.qdelay_old_ns < half && self.drop_prob < 0.2)
            || q.bytes() <= 2 * self.cfg.mean_packet_bytes
        {
            self.empty = false;
            return Verdict::Enqueue;
        }
        if !self.rng.bernoulli(self.drop_prob) {
            self.empty = false;
            return Verdict::Enqueue;
        }
        if self.cfg.ecn && ect && self.drop_prob <= 0.1 {
            self.empty = false;
            Verdict::Mark
        } else {
            Verdict::EarlyDrop
        }
    }

    /// The head of `q` at `now_ns` (PIE never drops at dequeue); records its sojourn as the
    /// current queueing delay.
    #[inline]
    pub fn dequeue<P: QueuedPacket>(&mut self, q: &mut Fifo<P>, now_ns: u64) -> Option<Entry<P>> {
        self.catch_up(now_ns);
        let e = q.pop()?;
        self.last_sojourn_ns = now_ns.saturating_sub(e.enqueued_ns);
        self.empty = q.is_empty();
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Pkt;
    impl QueuedPacket for Pkt {
        fn size_bytes(&self) -> u64 {
            1500
        }
        fn flow_hash(&self) -> u64 {
            0
        }
        fn ect(&self) -> bool {
            false
        }
        fn l4s(&self) -> bool {
            false
        }
        fn set_ce(&mut self) {}
    }

    /// A standing delay of 40 ms raises the probability (slowly at first: auto-tuning), one of
    /// exactly the target leaves it alone once β's term is spent, and an empty queue decays it.
    #[test]
    fn probability_integrates_the_delay_error() {
        let mut pie = Pie::new(&PieConfig::default(), SplitMix64::new(1));
        let mut q: Fifo<Pkt> = Fifo::new();
        // Start late enough that every packet's enqueue time is after 0.
        let mut t = 100_000_000;
        let mut hold = |pie: &mut Pie, q: &mut Fifo<Pkt>, sojourn_ns: u64, until_ns: u64| {
            while t < until_ns {
                t += 1_000_000;
                q.push(Entry { pkt: Pkt, enqueued_ns: t - sojourn_ns });
                q.push(Entry { pkt: Pkt, enqueued_ns: t - sojourn_ns });
                pie.dequeue(q, t);
            }
        };
        hold(&mut pie, &mut q, 40_000_000, 3_000_000_000);
        let p = pie.drop_prob();
        assert!(p > 0.05, "p {p}");
        hold(&mut pie, &mut q, 15_000_000, 6_000_000_000);
        let at_target = pie.drop_prob();
        hold(&mut pie, &mut q, 15_000_000, 9_000_000_000);
        assert!((pie.drop_prob() - at_target).abs() < 1e-9, "{at_target} -> {}", pie.drop_prob());
        // Empty: the delay is 0 at every update from then on.
        while pie.dequeue(&mut q, t).is_some() {}
        pie.catch_up(t + 10_000_000_000);
        assert!(pie.drop_prob() < at_target * 0.01, "{}", pie.drop_prob());
    }
}
