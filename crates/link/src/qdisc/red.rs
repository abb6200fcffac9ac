//! Random Early Detection: the average-queue estimator and the early drop/mark decision.
//!
//! Floyd & Jacobson, "Random Early Detection Gateways for Congestion Avoidance", IEEE/ACM
//! Transactions on Networking 1(4), 1993 (§4 the algorithm, §7 the drop probability and the
//! `count` mechanism, §11 the pseudo-code), with the gentle variant of Floyd, "Recommendation on
//! using the gentle_ variant of RED" (2000), and Adaptive RED of Floyd, Gummadi & Shenker,
//! "Adaptive RED: An Algorithm for Increasing the Robustness of RED's Active Queue Management"
//! (2001, §4 and Fig. 5: every 0.5 s, max_p is raised additively when the average is above the
//! target band and lowered multiplicatively below it). This module decides; the discipline
//! (`super::Qdisc`) turns the decision into a verdict with the hard limit and ECN.

use ccarena_rng::SplitMix64 as Rng;
use serde::{Deserialize, Serialize};

use crate::field_error::FieldError;
use crate::required::present;

/// The engine spec's `queue.red` object: RED's parameters (Floyd & Jacobson, IEEE/ACM ToN 1993,
/// §4 and §11; gentle: Floyd 2000). The thresholds are on the average queue, in packets or in
/// bytes: exactly one of the two pairs is non-null, and its unit is the unit of RED's queue
/// measure and average. Every key is required except `wait` and `adaptive`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedSpec {
    /// Lower threshold min_th on the average, waiting packets.
    #[serde(deserialize_with = "present")]
    pub min_th_packets: Option<u64>,
    /// Upper threshold max_th on the average, waiting packets.
    #[serde(deserialize_with = "present")]
    pub max_th_packets: Option<u64>,
    /// Lower threshold min_th on the average, waiting bytes.
    #[serde(deserialize_with = "present")]
    pub min_th_bytes: Option<u64>,
    /// Upper threshold max_th on the average, waiting bytes.
    #[serde(deserialize_with = "present")]
    pub max_th_bytes: Option<u64>,
    /// Drop probability at `avg = max_th` (maxp), in (0, 1].
    pub max_p: f64,
    /// Weight of each new queue sample in the average (w_q), in (0, 1].
    pub w_q: f64,
    /// Gentle variant: the drop probability rises linearly from max_p to 1 between max_th and
    /// 2·max_th instead of jumping to 1 at max_th.
    pub gentle: bool,
    /// Mark ECN-capable packets CE instead of dropping them early (RFC 3168 §7).
    pub ecn: bool,
    /// Size of the "typical small packet" whose transmission time at the link rate converts an
    /// idle period into the number of EWMA steps the average decays by (§11), bytes.
    pub idle_packet_bytes: u64,
    /// ns-2's and ns-3's `wait` option (their default; not in Floyd & Jacobson 1993): p_a is 0
    /// until count·p_b ≥ 1, then p_b/(2 − count·p_b), so the gap between early drops is uniform
    /// on [1/p_b, 2/p_b] (mean 1.5/p_b) instead of the paper's [1, 1/p_b] (§7). Optional: absent
    /// or false is the paper's rule.
    #[serde(default)]
    pub wait: bool,
    /// Adaptive RED (Floyd, Gummadi & Shenker 2001): every 0.5 s max_p moves toward keeping the
    /// average in the middle of [min_th, max_th] (`max_p` is the starting value). Optional:
    /// absent or false is plain RED.
    #[serde(default)]
    pub adaptive: bool,
}

impl RedSpec {
    /// RED's max_th, if its thresholds are in the unit of the queue limit `(limit_packets,
    /// limit_bytes)`: only then can the two be compared (the thresholds' unit may differ from the
    /// limit's, `docs/engine-spec.md`).
    pub fn max_th_in_limit_unit(&self, limit_packets: Option<u64>, limit_bytes: Option<u64>) -> Option<u64> {
        match (limit_packets, limit_bytes) {
            (Some(_), _) => self.max_th_packets,
            (None, Some(_)) => self.max_th_bytes,
            (None, None) => None,
        }
    }

    /// Check the values against the queue's limit `(limit_packets, limit_bytes)`: one pair of
    /// thresholds with 0 ≤ min_th < max_th (≤ the limit when in its unit), max_p and w_q in
    /// (0, 1], a positive idle packet size.
    ///
    /// # Errors
    /// The first problem, naming the field (empty for the object itself).
    pub fn validate(&self, limit_packets: Option<u64>, limit_bytes: Option<u64>) -> Result<(), FieldError> {
        let (min_name, max_name, min_th, max_th) = match (self.min_th_packets, self.max_th_packets, self.min_th_bytes, self.max_th_bytes) {
            (Some(lo), Some(hi), None, None) => ("min_th_packets", "max_th_packets", lo, hi),
            (None, None, Some(lo), Some(hi)) => ("min_th_bytes", "max_th_bytes", lo, hi),
            _ => {
                return Err(FieldError::new(
                    "",
                    "set exactly one pair of thresholds: min_th_packets and max_th_packets, or min_th_bytes and max_th_bytes",
                ))
            }
        };
        if max_th <= min_th {
            return Err(FieldError::new(max_name, format!("must be greater than {min_name} ({min_th})")));
        }
        if self.max_th_in_limit_unit(limit_packets, limit_bytes).is_some() {
            let limit = limit_packets.or(limit_bytes).expect("a limit in the thresholds' unit");
            if max_th > limit {
                return Err(FieldError::new(max_name, format!("{max_th} exceeds the queue limit ({limit}); RED needs max_th ≤ limit")));
            }
        }
        for (field, v) in [("max_p", self.max_p), ("w_q", self.w_q)] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(FieldError::new(field, format!("{v} is not in (0, 1]")));
            }
        }
        if self.idle_packet_bytes == 0 {
            return Err(FieldError::new("idle_packet_bytes", "must be positive"));
        }
        Ok(())
    }

    /// The discipline's parameters (thresholds in the unit of the non-null pair).
    pub fn config(&self) -> RedConfig {
        let (min_th, max_th, in_bytes) = match (self.min_th_packets, self.max_th_packets) {
            (Some(lo), Some(hi)) => (lo, hi, false),
            _ => (self.min_th_bytes.unwrap_or(0), self.max_th_bytes.unwrap_or(0), true),
        };
        RedConfig {
            min_th,
            max_th,
            in_bytes,
            max_p: self.max_p,
            w_q: self.w_q,
            gentle: self.gentle,
            ecn: self.ecn,
            idle_packet_bytes: self.idle_packet_bytes,
            wait: self.wait,
            adaptive: self.adaptive,
        }
    }
}

/// RED's parameters (Floyd & Jacobson 1993, §4 and §11; gentle: Floyd 2000; Adaptive RED: Floyd,
/// Gummadi & Shenker 2001). Thresholds are on the average queue, in packets or bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct RedConfig {
    /// Lower threshold min_th on the average queue, packets or bytes (see `in_bytes`).
    pub min_th: u64,
    /// Upper threshold max_th, same unit; greater than `min_th`.
    pub max_th: u64,
    /// True when the thresholds (and RED's queue measure) are in bytes, false for packets.
    pub in_bytes: bool,
    /// Drop probability at `avg = max_th` (maxp), in (0, 1]; Adaptive RED's starting value.
    pub max_p: f64,
    /// Weight of each new queue sample in the average (w_q), in (0, 1].
    pub w_q: f64,
    /// Gentle variant: the probability rises from max_p to 1 between max_th and 2·max_th.
    pub gentle: bool,
    /// Mark ECT packets CE instead of dropping them early (RFC 3168 §7).
    pub ecn: bool,
    /// The "typical small packet" whose transmission time converts idle time into EWMA steps
    /// (§11), bytes.
    pub idle_packet_bytes: u64,
    /// ns-2's `wait`: gaps between early drops uniform on [1/p_b, 2/p_b] instead of [1, 1/p_b].
    pub wait: bool,
    /// Adaptive RED (2001): adapt max_p every 0.5 s toward the target band.
    pub adaptive: bool,
}

/// Adaptive RED's adaptation interval (2001, Fig. 5: "interval: time; 0.5 seconds"), ns.
pub const ARED_INTERVAL_NS: u64 = 500_000_000;
/// Adaptive RED's decrease factor β (2001, Fig. 5: 0.9).
const ARED_BETA: f64 = 0.9;
/// Adaptive RED keeps max_p within [0.01, 0.5] (2001, §4: "max_p ... in the range [0.01, 0.5]").
const ARED_MAX_P_RANGE: (f64, f64) = (0.01, 0.5);

/// What RED decides for one arriving packet, before the hard limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedDecision {
    /// Admit: the average is below `min_th`, or the random draw spared the packet.
    Pass,
    /// A probabilistic early drop (or CE mark with ECN): `min_th ≤ avg < max_th`, or the gentle
    /// region `max_th ≤ avg < 2·max_th` (§7; Floyd 2000).
    Early,
    /// The average is in the drop-every-arrival region: `avg ≥ max_th` without gentle, `avg ≥
    /// 2·max_th` with it (§4: "every arriving packet is marked").
    Forced,
}

/// RED's parameters and state for one queue. Queue sizes (`q`, `avg` and the thresholds) are
/// in one unit, packets or bytes, chosen by the spec; the link tells RED which.
#[derive(Clone, Debug)]
pub struct Red {
    /// Lower threshold on the average queue, packets or bytes.
    min_th: f64,
    /// Upper threshold on the average queue, packets or bytes.
    max_th: f64,
    /// Drop probability p_b at `avg = max_th` (`maxp`, §4).
    max_p: f64,
    /// Weight of the newest sample in the average (`w_q`, §4 and §6).
    w_q: f64,
    /// Gentle variant: p_b rises from `max_p` to 1 over `[max_th, 2·max_th)`.
    gentle: bool,
    /// Measure the queue in bytes (else packets).
    in_bytes: bool,
    /// The "typical small packet" whose transmission time ages the average over an idle period
    /// (§11: m = f(time − q_time)), bytes.
    idle_packet_bytes: u64,
    /// Average queue size in packets or bytes (`avg`, §4).
    avg: f64,
    /// Packets that were not dropped or marked since the last drop or mark, while `avg ≥ min_th`
    /// (`count`, §7). 0 for the first packet after a mark, so the n-th packet after a mark is
    /// marked with p_b / (1 − (n − 1)·p_b) and the gap between marks is uniform on
    /// {1, …, ⌈1/p_b⌉} (§7, "method 2").
    count: u64,
    /// ns-2/ns-3's `wait`: gaps between early drops uniform on [1/p_b, 2/p_b] (see
    /// [`RedSpec::wait`]).
    wait: bool,
    /// The queue's own stream for the drop draws.
    rng: Rng,
    /// Adaptive RED on.
    adaptive: bool,
    /// When Adaptive RED next adapts max_p, ns.
    next_adapt_ns: u64,
}

impl Red {
    /// RED state from validated parameters, drawing from `rng` (the queue's own stream).
    pub fn new(spec: &RedConfig, rng: Rng) -> Red {
        let (min_th, max_th, in_bytes) = (spec.min_th, spec.max_th, spec.in_bytes);
        Red {
            adaptive: spec.adaptive,
            next_adapt_ns: ARED_INTERVAL_NS,
            min_th: min_th as f64,
            max_th: max_th as f64,
            max_p: spec.max_p,
            w_q: spec.w_q,
            gentle: spec.gentle,
            in_bytes,
            idle_packet_bytes: spec.idle_packet_bytes,
            avg: 0.0,
            count: 0,
            wait: spec.wait,
            rng,
        }
    }

    /// True when the thresholds (and so `q` and `avg`) are in bytes.
    pub fn in_bytes(&self) -> bool {
        self.in_bytes
    }

    /// max_p now (Adaptive RED moves it).
    pub fn max_p(&self) -> f64 {
        self.max_p
    }

    /// Adaptive RED (Floyd, Gummadi & Shenker 2001, Fig. 5), run for every 0.5 s boundary up to
    /// `now_ns`: with the target band `[min_th + 0.4·(max_th − min_th), min_th + 0.6·(max_th −
    /// min_th)]`, an average above it raises max_p by α = min(0.01, max_p/4) (while max_p ≤
    /// 0.5), one below it multiplies max_p by β = 0.9 (while max_p ≥ 0.01). The average used is
    /// the one of the last arrival (no arrival in between: the queue did not change).
    fn adapt(&mut self, now_ns: u64) {
        let span = self.max_th - self.min_th;
        let (lo, hi) = (self.min_th + 0.4 * span, self.min_th + 0.6 * span);
        while self.next_adapt_ns <= now_ns {
            self.next_adapt_ns += ARED_INTERVAL_NS;
            if self.avg > hi && self.max_p <= ARED_MAX_P_RANGE.1 {
                self.max_p += (self.max_p / 4.0).min(0.01);
            } else if self.avg < lo && self.max_p >= ARED_MAX_P_RANGE.0 {
                self.max_p *= ARED_BETA;
            }
        }
    }

    /// The average queue as of the last arrival, packets or bytes.
    pub fn avg(&self) -> f64 {
        self.avg
    }

    /// The drop probability p_b before the `count` correction, for an average queue `avg`
    /// (packets or bytes): 0 below `min_th`; `max_p·(avg − min_th)/(max_th − min_th)` up to
    /// `max_th` (§4); with gentle, `max_p + (1 − max_p)·(avg − max_th)/max_th` up to `2·max_th`
    /// (Floyd 2000); 1 beyond (every arrival dropped).
    pub fn p_b(&self, avg: f64) -> f64 {
        if avg < self.min_th {
            0.0
        } else if avg < self.max_th {
            self.max_p * (avg - self.min_th) / (self.max_th - self.min_th)
        } else if self.gentle && avg < 2.0 * self.max_th {
            self.max_p + (1.0 - self.max_p) * (avg - self.max_th) / self.max_th
        } else {
            1.0
        }
    }

    /// Number of typical packets (`idle_packet_bytes`) the link could have sent in `idle_ns` at
    /// `rate_bps`: the exponent m of the idle-time aging (§11).
    fn idle_packets(&self, idle_ns: u64, rate_bps: u64) -> f64 {
        idle_ns as f64 * rate_bps as f64 / (8e9 * self.idle_packet_bytes as f64)
    }

    /// The average an arrival now would start from: the stored one, aged by (1 − w_q)^m when the
    /// link has been idle for `idle_ns` (m as in [`Red::on_arrival`]). For samples; changes nothing.
    pub fn avg_at(&self, idle_ns: Option<u64>, rate_bps: u64) -> f64 {
        match idle_ns {
            Some(idle) => self.avg * (1.0 - self.w_q).powf(self.idle_packets(idle, rate_bps)),
            None => self.avg,
        }
    }

    /// Update the average for an arrival that finds `q` waiting (packets or bytes, in RED's
    /// unit) and decide its fate (§11's per-arrival pseudo-code). `idle_ns` is how long the link
    /// has been idle (nothing waiting, nothing being serialized) or `None` when it is busy:
    /// a busy link takes the EWMA step avg ← (1 − w_q)·avg + w_q·q; an idle one ages the average
    /// as avg ← (1 − w_q)^m·avg, m = the typical packets the link could have sent meanwhile at
    /// `rate_bps` (§11, "m ← f(time − q_time)"). With Adaptive RED, max_p is adapted first for
    /// every interval boundary up to `now_ns`.
    pub fn on_arrival(&mut self, q: f64, idle_ns: Option<u64>, rate_bps: u64, now_ns: u64) -> RedDecision {
        if self.adaptive {
            self.adapt(now_ns);
        }
        self.avg = match idle_ns {
            Some(_) => self.avg_at(idle_ns, rate_bps),
            None => (1.0 - self.w_q) * self.avg + self.w_q * q,
        };
        let p_b = self.p_b(self.avg);
        if p_b <= 0.0 {
            // Below min_th: the spacing restarts when the average next rises (§11: count ← −1).
            self.count = 0;
            return RedDecision::Pass;
        }
        let forced = if self.gentle { self.avg >= 2.0 * self.max_th } else { self.avg >= self.max_th };
        if forced {
            self.count = 0;
            return RedDecision::Forced;
        }
        let p_a = if self.wait {
            // ns-2's `wait`: the n-th arrival after a mark (count = n − 1 unmarked before it) is
            // spared while n·p_b < 1, then marked with p_b/(2 − n·p_b): gaps uniform on
            // [1/p_b, 2/p_b].
            let n = (self.count + 1) as f64 * p_b;
            if n < 1.0 {
                0.0
            } else if n < 2.0 {
                p_b / (2.0 - n)
            } else {
                1.0
            }
        } else {
            // §7: p_a = p_b / (1 − count·p_b) spreads marks evenly instead of in clusters.
            let spread = 1.0 - self.count as f64 * p_b;
            if spread <= p_b {
                1.0
            } else {
                p_b / spread
            }
        };
        if self.rng.bernoulli(p_a) {
            self.count = 0;
            RedDecision::Early
        } else {
            self.count += 1;
            RedDecision::Pass
        }
    }

    /// New thresholds (a scheduled event), in RED's unit; validated `min_th < max_th`. The average
    /// and the spacing count carry over: RED's state describes the queue, not the thresholds.
    pub fn set_thresholds(&mut self, min_th: u64, max_th: u64) {
        self.min_th = min_th as f64;
        self.max_th = max_th as f64;
    }

    /// The thresholds `(min_th, max_th)`, packets or bytes.
    pub fn thresholds(&self) -> (f64, f64) {
        (self.min_th, self.max_th)
    }

    /// The hard limit dropped the packet RED let pass: the spacing restarts from this drop.
    pub fn on_forced_drop(&mut self) {
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccarena_rng::StreamKind;

    fn spec(min_th: u64, max_th: u64, max_p: f64, w_q: f64, gentle: bool) -> RedConfig {
        RedConfig { min_th, max_th, in_bytes: false, max_p, w_q, gentle, ecn: false, idle_packet_bytes: 1500, wait: false, adaptive: false }
    }

    fn red(min_th: u64, max_th: u64, max_p: f64, w_q: f64, gentle: bool) -> Red {
        Red::new(&spec(min_th, max_th, max_p, w_q, gentle), Rng::stream(1, StreamKind::QueueAqm, 0))
    }

    #[test]
    fn p_b_follows_the_linear_and_gentle_ramps() {
        let r = red(5, 15, 0.1, 0.002, true);
        let cases = [
            (0.0, 0.0),
            (4.999, 0.0),
            (5.0, 0.0),
            (6.0, 0.01),
            (10.0, 0.05),
            (14.0, 0.09),
            (15.0, 0.1),
            // gentle: max_p + (1 − max_p)(avg − max_th)/max_th
            (18.0, 0.1 + 0.9 * 3.0 / 15.0),
            (22.5, 0.55),
            (29.9, 0.1 + 0.9 * 14.9 / 15.0),
            (30.0, 1.0),
            (100.0, 1.0),
        ];
        for (avg, want) in cases {
            assert!((r.p_b(avg) - want).abs() < 1e-12, "p_b({avg}) = {} want {want}", r.p_b(avg));
        }
        // Dense sweep: continuous (no jump at max_th with gentle) and non-decreasing.
        let mut last = 0.0;
        for i in 0..=4000 {
            let p = r.p_b(i as f64 * 0.01);
            assert!(p >= last - 1e-12 && (p - last) < 0.01, "at avg {}: {last} -> {p}", i as f64 * 0.01);
            last = p;
        }
        let abrupt = red(5, 15, 0.1, 0.002, false);
        assert!((abrupt.p_b(14.99) - 0.0999).abs() < 1e-9);
        assert_eq!(abrupt.p_b(15.0), 1.0);
    }

    #[test]
    fn decisions_by_region_with_a_fixed_average() {
        // w_q = 1 makes avg the instantaneous q (busy link), so each region can be held.
        let mut r = red(5, 15, 0.1, 1.0, true);
        assert!((0..1000).all(|_| r.on_arrival(4.0, None, 10_000_000, 0) == RedDecision::Pass));
        assert!((0..1000).all(|_| r.on_arrival(30.0, None, 10_000_000, 0) == RedDecision::Forced));
        assert!((0..100).any(|_| r.on_arrival(20.0, None, 10_000_000, 0) == RedDecision::Early));
        let mut abrupt = red(5, 15, 0.1, 1.0, false);
        assert!((0..1000).all(|_| abrupt.on_arrival(15.0, None, 10_000_000, 0) == RedDecision::Forced));
    }

    /// §7: with p_a = p_b/(1 − count·p_b) the number of arrivals from one drop to the next is
    /// uniform on {1, …, 1/p_b}; marking with p_b alone would make it geometric (mean 1/p_b,
    /// gaps beyond 1/p_b common). Chi-square against the uniform law, 19 degrees of freedom.
    #[test]
    fn gaps_between_drops_are_uniform_over_one_to_one_over_p_b() {
        let mut r = red(5, 15, 0.1, 1.0, true);
        let avg = 7.0; // p_b = 0.02: gaps uniform on 1..=50
        assert!((r.p_b(avg) - 0.02).abs() < 1e-12);
        let n_bins = 50;
        let mut hist = vec![0u64; n_bins + 1];
        let mut gap = 0usize;
        let mut drops = 0u64;
        while drops < 20_000 {
            gap += 1;
            if r.on_arrival(avg, None, 10_000_000, 0) == RedDecision::Early {
                assert!(gap <= n_bins, "gap {gap} beyond 1/p_b = {n_bins}");
                hist[gap] += 1;
                drops += 1;
                gap = 0;
            }
        }
        // Pool pairs of bins (expected 800 each) for the chi-square statistic.
        let expected = drops as f64 * 2.0 / n_bins as f64;
        let chi2: f64 = (0..n_bins / 2)
            .map(|k| {
                let o = (hist[2 * k + 1] + hist[2 * k + 2]) as f64;
                (o - expected).powi(2) / expected
            })
            .sum();
        // 99.9th percentile of chi-square with 24 degrees of freedom ≈ 51.2.
        assert!(chi2 < 51.2, "chi2 = {chi2:.1}, histogram {hist:?}");
        let mean_gap = (1..=n_bins).map(|g| g as f64 * hist[g] as f64).sum::<f64>() / drops as f64;
        assert!((mean_gap - 25.5).abs() < 0.5, "mean gap {mean_gap} (uniform 1..=50: 25.5)");
    }

    /// ns-2/ns-3's `wait`: no drop for the first 1/p_b − 1 arrivals after one, then uniform
    /// over the next 1/p_b: gaps on {50, …, 99} at p_b = 0.02, mean 74.5 (three times the
    /// paper's 25.5).
    #[test]
    fn with_wait_gaps_are_uniform_over_one_to_two_times_one_over_p_b() {
        let mut s = spec(5, 15, 0.1, 1.0, true);
        s.wait = true;
        let mut r = Red::new(&s, Rng::stream(1, StreamKind::QueueAqm, 0));
        let (mut gap, mut gaps) = (0usize, Vec::new());
        while gaps.len() < 20_000 {
            gap += 1;
            if r.on_arrival(7.0, None, 10_000_000, 0) == RedDecision::Early {
                gaps.push(gap);
                gap = 0;
            }
        }
        let (lo, hi) = (*gaps.iter().min().unwrap(), *gaps.iter().max().unwrap());
        assert_eq!((lo, hi), (50, 99), "gaps from {lo} to {hi}");
        let mean = gaps.iter().sum::<usize>() as f64 / gaps.len() as f64;
        assert!((mean - 74.5).abs() < 0.5, "mean gap {mean}");
        let first_half = gaps.iter().filter(|&&g| g < 75).count() as f64 / gaps.len() as f64;
        assert!((first_half - 0.5).abs() < 0.02, "{first_half}");
    }

    #[test]
    fn drop_frequency_in_the_gentle_region_matches_the_uniform_law() {
        // p_b = 0.55 at avg 22.5: gaps uniform on {1, 2} (1/p_b = 1.8), mean gap 1.45.
        let mut r = red(5, 15, 0.1, 1.0, true);
        let n = 200_000;
        let drops = (0..n).filter(|_| r.on_arrival(22.5, None, 10_000_000, 0) == RedDecision::Early).count() as f64;
        // P(X=1) = p_b = 0.55, P(X=2) = 0.45: mean gap 1.45, drop fraction 1/1.45.
        let want = n as f64 / 1.45;
        assert!((drops - want).abs() < 0.01 * want, "drops {drops} want {want:.0}");
    }

    #[test]
    fn average_is_an_ewma_while_busy_and_decays_over_idle_time() {
        let mut r = red(5, 15, 0.1, 0.002, true);
        for _ in 0..1000 {
            r.on_arrival(10.0, None, 10_000_000, 0);
        }
        let want = 10.0 * (1.0 - 0.998f64.powi(1000));
        assert!((r.avg() - want).abs() < 1e-9, "avg {} want {want}", r.avg());
        // Idle for 1.2 s at 10 Mbps: 1000 typical 1500-byte packets, so the average is aged by
        // (1 − w_q)^1000.
        let before = r.avg();
        assert!((r.avg_at(Some(1_200_000_000), 10_000_000) - before * 0.998f64.powi(1000)).abs() < 1e-9);
        assert_eq!(r.avg(), before, "avg_at does not change the state");
        r.on_arrival(0.0, Some(1_200_000_000), 10_000_000, 0);
        assert!((r.avg() - before * 0.998f64.powi(1000)).abs() < 1e-9);
        // Zero idle time leaves it unchanged.
        let now = r.avg();
        r.on_arrival(0.0, Some(0), 10_000_000, 0);
        assert_eq!(r.avg(), now);
    }

    #[test]
    fn byte_thresholds_measure_in_bytes() {
        let mut s = spec(0, 0, 0.1, 1.0, true);
        s.in_bytes = true;
        s.min_th = 7_500;
        s.max_th = 22_500;
        let mut r = Red::new(&s, Rng::stream(1, StreamKind::QueueAqm, 0));
        assert!(r.in_bytes());
        assert!((r.p_b(15_000.0) - 0.05).abs() < 1e-12);
        assert_eq!(r.on_arrival(7_499.0, None, 10_000_000, 0), RedDecision::Pass);
        assert_eq!(r.on_arrival(45_000.0, None, 10_000_000, 0), RedDecision::Forced);
    }
}

#[cfg(test)]
mod adaptive_tests {
    use super::*;

    /// Adaptive RED (2001, Fig. 5): a standing average above the target band raises max_p by
    /// min(0.01, max_p/4) every 0.5 s up to 0.5; one below it lowers max_p by ×0.9 down to 0.01;
    /// inside the band max_p stays. Without `adaptive` max_p never moves.
    #[test]
    fn max_p_moves_toward_the_band_every_half_second() {
        let cfg = |adaptive| RedConfig { min_th: 5, max_th: 15, in_bytes: false, max_p: 0.1, w_q: 1.0, gentle: true, ecn: false, idle_packet_bytes: 1500, wait: false, adaptive };
        let mut r = Red::new(&cfg(true), Rng::new(1));
        // Band: [9, 11]. An arrival every ms; a boundary is judged on the average before it.
        // Average 14 (above) from 0 to 2 s: increases at 0.5, 1 and 1.5 s.
        for i in 0..2000u64 {
            r.on_arrival(14.0, None, 10_000_000, i * 1_000_000);
        }
        assert!((r.max_p() - 0.13).abs() < 1e-12, "max_p {}", r.max_p());
        // In the band from 2 s to 4 s: the 2 s boundary still sees 14 (one more increase), the
        // others leave max_p alone.
        for i in 2000..4000u64 {
            r.on_arrival(10.0, None, 10_000_000, i * 1_000_000);
        }
        assert!((r.max_p() - 0.14).abs() < 1e-12, "max_p {}", r.max_p());
        // Below the band from 4 s to 5 s: the 4.5 s boundary lowers it (4 s still saw 10).
        for i in 4000..5000u64 {
            r.on_arrival(6.0, None, 10_000_000, i * 1_000_000);
        }
        assert!((r.max_p() - 0.14 * 0.9).abs() < 1e-12, "max_p {}", r.max_p());
        // Long below: floored near 0.01 (the last decrease applies while max_p ≥ 0.01).
        r.on_arrival(6.0, None, 10_000_000, 200_000_000_000);
        assert!(r.max_p() < 0.01 && r.max_p() >= 0.009, "max_p {}", r.max_p());
        let mut fixed = Red::new(&cfg(false), Rng::new(1));
        fixed.on_arrival(14.0, None, 10_000_000, 10_000_000_000);
        assert_eq!(fixed.max_p(), 0.1);
    }
}
