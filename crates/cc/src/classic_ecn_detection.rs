//! Detection of a classic ECN AQM at the bottleneck, for TCP Prague's optional fall-back to a
//! classic response (`prague`'s `classic_ecn_detection = 1`).
//!
//! # Source
//!
//! B. Briscoe and A. S. Ahmed, "TCP Prague Fall-back on Detection of a Classic ECN AQM",
//! arXiv:1911.00710 (version 2 of the design, the one implemented in the reference Linux
//! `tcp_prague`), the optional classic ECN AQM detection of
//! draft-briscoe-iccrg-prague-congestion-control-04. RFC 9331 §4.3 (Prerequisite Congestion
//! Response) is why it exists: an L4S sender is to fall back to a Reno-friendly response when
//! its bottleneck is a classic ECN AQM (RFC 3168), which marks ECT(1) like ECT(0) and expects
//! a halving per round trip of marks, not DCTCP's `α/2`.
//!
//! # The idea
//!
//! A classic AQM (RED, PIE, CoDel) keeps a queue of several milliseconds that varies with the
//! sawtooth of the classic flows through it; an L4S AQM marks from a shallow threshold (about a
//! millisecond), so the queue an L4S flow sees is shallow and steady. The paper distinguishes the
//! two primarily by the variation of the RTT, helped by the depth of the queue, both measured
//! over a much longer horizon than TCP's own srtt/rttvar, and only once CE marks show there is an
//! ECN AQM at all:
//!
//! - A slow moving average of the RTT samples, `srtt_slow`, and of their mean deviation from it,
//!   `σ` (the RTT variation), each with gain [`AVERAGING_GAIN_PER_ROUND`] per round trip, spread
//!   over the ACKs of the round in proportion to the bytes each acknowledges.
//! - The queue depth `τ = srtt_slow − min_rtt`.
//! - Once per round trip of congestion avoidance after the first CE feedback, a score moves by
//!   the logarithm of each against its reference:
//!   `score ← score + V·log2(σ/V0) + D·max(0, log2(τ/D0))`, with V0 = [`V0_US`] µs and
//!   D0 = [`D0_US`] µs, weights V = D = 1/2 per doubling. A deep, varying queue moves it toward
//!   classic, a steady shallow one toward L4S; depth only ever adds evidence (a queue shallower
//!   than D0 says nothing either way, the variation decides).
//! - The score is clamped to `[−S, 1 + S]`, S = [`STICKY_WIDTH`]: from 0 to 1 is the transition
//!   between the L4S and the classic response, and the two "sticky" margins beyond it are
//!   evidence the score has to climb back through before the response changes again, so a few
//!   odd round trips do not flip it. A connection starts at `−S`, fully L4S.
//!
//! # The response
//!
//! [`ClassicEcnDetector::classic_fraction`] `c` = the score clamped to [0, 1]. Prague reduces on
//! ECN feedback by `α_eff/2` with `α_eff = max(α, c)`: scalable (`α/2`) while the path looks
//! L4S, Reno's halving (RFC 5681 §3.1, the classic ECN response of RFC 3168 §6.1.2) once it
//! looks classic, and in between a reduction no smaller than the classic fraction's share of a
//! halving.
//!
//! # Constants and departures
//!
//! V0 = 750 µs and D0 = 2 ms, the weights of 1/2 per doubling and the sticky margins of 8 (16
//! doublings of evidence) are the values of the reference implementation the paper describes
//! (L4STeam's Linux `tcp_prague`, `prague_classic_ecn_detection`; read to understand, not
//! copied: it works in fixed point). Two departures, both ours:
//!
//! - The averaging gain is a fixed 1/16 per round trip (equal to Prague's α gain: a horizon of
//!   about 16 round trips, much longer than TCP's srtt's 1/8 per sample, as the paper asks); the
//!   reference implementation uses a per-ACK gain that shrinks with the window.
//! - The fully classic response is Reno's halving, the Reno-friendly response RFC 9331 §4.3
//!   names; the reference implementation floors α at 5/8 of the classic fraction, a reduction to
//!   about 0.69 of the window, close to CUBIC's 0.7.
//!
//! As the paper reports of its own algorithm, a transient can be mistaken for a classic queue:
//! on the simulator, Prague through DualPI2 at 50 Mbit/s turns classic for about 1.5 s while a
//! CUBIC flow beside it leaves slow start, then returns to L4S (`crates/sim/tests/prague_classic_ecn.rs`).

use crate::{AckSample, Duration};

/// Reference RTT variation V0, microseconds: σ above it is evidence of a classic queue.
pub const V0_US: f64 = 750.0;

/// Reference queue depth D0, microseconds: τ above it is evidence of a classic queue.
pub const D0_US: f64 = 2000.0;

/// Weight of each doubling of σ/V0 in the score, per round trip.
pub const V_WEIGHT: f64 = 0.5;

/// Weight of each doubling of τ/D0 in the score, per round trip.
pub const D_WEIGHT: f64 = 0.5;

/// Width of each sticky margin beyond the transition [0, 1], in score units.
pub const STICKY_WIDTH: f64 = 8.0;

/// Gain of the slow RTT and RTT-variation averages per round trip (one window of bytes
/// acknowledged), dimensionless.
pub const AVERAGING_GAIN_PER_ROUND: f64 = 1.0 / 16.0;

/// The smallest σ the score takes a logarithm of, seconds (1 µs): a path with no variation at
/// all is strong, not infinite, evidence of L4S.
const MIN_VARIATION_S: f64 = 1e-6;

/// The detector's state: the slow RTT averages and the score. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassicEcnDetector {
    /// Slow moving average of the RTT samples, seconds; `None` before the first sample.
    srtt_slow_s: Option<f64>,
    /// Slow moving average of |RTT sample − srtt_slow|, seconds (σ).
    variation_s: f64,
    /// The score: below 0 L4S, above 1 classic, in [−STICKY_WIDTH, 1 + STICKY_WIDTH].
    score: f64,
}

impl Default for ClassicEcnDetector {
    fn default() -> Self {
        ClassicEcnDetector::new()
    }
}

impl ClassicEcnDetector {
    /// A detector at the start of a connection: no samples, the score fully L4S (−S).
    pub fn new() -> ClassicEcnDetector {
        ClassicEcnDetector { srtt_slow_s: None, variation_s: 0.0, score: -STICKY_WIDTH }
    }

    /// Feed one ACK's RTT sample to the slow averages. `window_bytes` is the sender's window
    /// (the bytes of one round trip); the ACK's weight is its share of it, so the gain per round
    /// trip is [`AVERAGING_GAIN_PER_ROUND`] whatever the number of ACKs. ACKs without an RTT
    /// sample (retransmissions) are skipped.
    pub fn on_ack(&mut self, ack: &AckSample, window_bytes: f64) {
        let Some(rtt) = ack.rtt else { return };
        let r = rtt.as_secs_f64();
        match self.srtt_slow_s {
            None => self.srtt_slow_s = Some(r),
            Some(mean) => {
                let share = (ack.bytes_acked as f64 / window_bytes.max(1.0)).min(1.0);
                let g = AVERAGING_GAIN_PER_ROUND * share;
                self.variation_s += g * ((r - mean).abs() - self.variation_s);
                self.srtt_slow_s = Some(mean + g * (r - mean));
            }
        }
    }

    /// One round trip of evidence: move the score by
    /// `V·log2(σ/V0) + D·max(0, log2(τ/D0))`, τ = srtt_slow − `min_rtt`, and clamp it. The
    /// caller calls it once per round trip of congestion avoidance after the first CE feedback.
    /// Nothing happens before the first RTT sample.
    pub fn end_round(&mut self, min_rtt: Duration) {
        let Some(mean) = self.srtt_slow_s else { return };
        let sigma = self.variation_s.max(MIN_VARIATION_S);
        let depth = mean - min_rtt.as_secs_f64();
        let mut step = V_WEIGHT * (sigma / (V0_US * 1e-6)).log2();
        if depth > D0_US * 1e-6 {
            step += D_WEIGHT * (depth / (D0_US * 1e-6)).log2();
        }
        self.score = (self.score + step).clamp(-STICKY_WIDTH, 1.0 + STICKY_WIDTH);
    }

    /// The score, in [−S, 1 + S]: below 0 the path looks L4S, above 1 classic.
    pub fn score(&self) -> f64 {
        self.score
    }

    /// How classic the response is, c in [0, 1]: the score clamped to the transition.
    pub fn classic_fraction(&self) -> f64 {
        self.score.clamp(0.0, 1.0)
    }

    /// The RTT variation σ of the slow average, seconds.
    pub fn variation_s(&self) -> f64 {
        self.variation_s
    }

    /// The slow average of the RTT, seconds; `None` before the first sample.
    pub fn srtt_slow_s(&self) -> Option<f64> {
        self.srtt_slow_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growth::testing::{self, MSS};
    use crate::SimTime;

    /// One round trip of `n` one-MSS ACKs whose RTT samples alternate between `lo_ms` and
    /// `hi_ms`, on a window of `n` MSS.
    fn round(d: &mut ClassicEcnDetector, n: u64, lo_ms: f64, hi_ms: f64) {
        for i in 0..n {
            let ms = if i.is_multiple_of(2) { lo_ms } else { hi_ms };
            let a = testing::ack(SimTime::ZERO, MSS, Duration::from_secs_f64(ms / 1e3));
            d.on_ack(&a, (n * MSS) as f64);
        }
    }

    #[test]
    fn the_averages_follow_the_samples_at_the_per_round_gain() {
        let mut d = ClassicEcnDetector::new();
        round(&mut d, 10, 20.0, 20.0);
        assert_eq!(d.srtt_slow_s(), Some(0.020));
        assert_eq!(d.variation_s(), 0.0);
        // Samples 20 and 24 ms: the mean settles at 22 ms, the mean deviation at 2 ms.
        for _ in 0..400 {
            round(&mut d, 10, 20.0, 24.0);
        }
        assert!((d.srtt_slow_s().unwrap() - 0.022).abs() < 2e-4, "{:?}", d.srtt_slow_s());
        assert!((d.variation_s() - 0.002).abs() < 2e-4, "{}", d.variation_s());
    }

    #[test]
    fn one_round_moves_the_score_by_the_logarithms_of_the_evidence() {
        // σ = 3 ms = 4·V0 and τ = 8 ms = 4·D0: +1/2·2 + 1/2·2 = +2 per round.
        let mut d = ClassicEcnDetector { srtt_slow_s: Some(0.028), variation_s: 0.003, score: 0.0 };
        d.end_round(Duration::from_millis(20));
        assert!((d.score() - 2.0).abs() < 1e-9, "{}", d.score());
        // σ = V0/4 and τ below D0 (depth never subtracts): −1 per round.
        let mut d = ClassicEcnDetector { srtt_slow_s: Some(0.0205), variation_s: 0.0001875, score: 0.0 };
        d.end_round(Duration::from_millis(20));
        assert!((d.score() + 1.0).abs() < 1e-9, "{}", d.score());
    }

    #[test]
    fn the_score_is_clamped_to_its_sticky_margins() {
        let mut d = ClassicEcnDetector { srtt_slow_s: Some(0.1), variation_s: 0.05, score: 0.0 };
        for _ in 0..100 {
            d.end_round(Duration::from_millis(20));
        }
        assert_eq!(d.score(), 1.0 + STICKY_WIDTH);
        assert_eq!(d.classic_fraction(), 1.0);
        let mut d = ClassicEcnDetector { srtt_slow_s: Some(0.02), variation_s: 0.0, score: 0.0 };
        d.end_round(Duration::from_millis(20));
        assert!((d.score() + 0.5 * 750f64.log2()).abs() < 1e-9, "σ floored at 1 µs: {}", d.score());
        d.end_round(Duration::from_millis(20));
        assert_eq!(d.score(), -STICKY_WIDTH, "two rounds of no variation, clamped");
        assert_eq!(d.classic_fraction(), 0.0);
        // Before any RTT sample a round is no evidence.
        let mut d = ClassicEcnDetector::new();
        d.end_round(Duration::from_millis(20));
        assert_eq!(d, ClassicEcnDetector::new());
    }
}
