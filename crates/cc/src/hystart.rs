//! HyStart, the hybrid slow start of Ha and Rhee ("Taming the elephants: New TCP slow start",
//! Computer Networks 55(9), 2011; first as "Hybrid slow start for high-bandwidth and long-distance
//! networks", PFLDnet 2008): the slow-start exit that Linux's `tcp_cubic` runs by default, as
//! opposed to HyStart++ (RFC 9406), which [`crate::cubic`] runs by default.
//!
//! # What it does
//!
//! Two independent detectors watch each round of the initial slow start and end it (ssthresh =
//! cwnd, straight to congestion avoidance: no conservative phase) as soon as either fires:
//!
//! - **ACK train**: ACKs that arrive closely spaced (at most [`ACK_DELTA`] apart) come from one
//!   back-to-back burst paced by the bottleneck. Once such a train, measured from the first ACK of
//!   the round, lasts longer than half the minimum RTT, the window fills the pipe (the paper's
//!   §3.1: the train length of a window of W packets is W/bottleneck rate, and W ≥ BDP when it
//!   exceeds the forward one-way delay, taken as minRTT/2).
//! - **Delay increase**: the minimum RTT over the first [`MIN_SAMPLES`] ACKs of the round (and
//!   every later ACK of it) exceeds the connection's minimum RTT by η = minRTT/8 clamped to
//!   [[`MIN_DELAY_THRESH`], [`MAX_DELAY_THRESH`]] (paper §3.2): a queue is building.
//!
//! The detectors run only while cwnd is at least [`LOW_WINDOW_SEGMENTS`] (below it slow start is
//! cheap and the samples are few). The constants are the paper's as Linux sets them by default
//! (`hystart_low_window` 16, `hystart_ack_delta_us` 2000, 8 samples, η clamped to 4–16 ms).
//!
//! # Choices
//!
//! - A round starts when snd_una passes the snd_nxt recorded at the previous round's start; the
//!   first ACK of a round is both the train's start and its first member.
//! - The train's threshold is minRTT/2 without an allowance for ACK compression by TSO/GRO (the
//!   simulator neither aggregates segments nor ACKs).

use crate::{AckSample, Duration, SimTime};

/// Largest spacing between two ACKs of one train (Linux `hystart_ack_delta_us`, 2 ms).
pub const ACK_DELTA: Duration = Duration::from_millis(2);

/// RTT samples a round needs before the delay-increase detector judges it (Linux
/// `HYSTART_MIN_SAMPLES`).
pub const MIN_SAMPLES: u32 = 8;

/// Lower bound of the delay-increase threshold η.
pub const MIN_DELAY_THRESH: Duration = Duration::from_millis(4);

/// Upper bound of the delay-increase threshold η.
pub const MAX_DELAY_THRESH: Duration = Duration::from_millis(16);

/// Below this cwnd, segments, neither detector runs (Linux `hystart_low_window`).
pub const LOW_WINDOW_SEGMENTS: f64 = 16.0;

/// Which detector ended slow start (for tests and traces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The ACK train of a round outlasted minRTT/2.
    AckTrain,
    /// A round's minimum RTT rose by more than η above the connection's minimum.
    Delay,
}

/// HyStart's per-round state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HyStart {
    /// snd_nxt when the current round started; the round ends when snd_una passes it. `None`
    /// before the first ACK.
    round_end_seq: Option<u64>,
    /// Arrival of the round's first ACK.
    round_start: SimTime,
    /// Arrival of the train's latest ACK.
    last_ack: SimTime,
    /// The round's minimum RTT so far (`None`: no sample yet).
    round_min_rtt: Option<Duration>,
    /// RTT samples taken this round.
    samples: u32,
    /// The connection's minimum RTT (`None`: no sample yet).
    min_rtt: Option<Duration>,
}

impl HyStart {
    /// A detector before the first ACK.
    pub fn new() -> HyStart {
        HyStart::default()
    }

    /// Account one ACK of the initial slow start, `cwnd_seg` segments being the window after
    /// the ACK's growth. Returns which detector fired, if one did: the caller then ends slow
    /// start with ssthresh = cwnd.
    pub fn on_ack(&mut self, ack: &AckSample, cwnd_seg: f64) -> Option<Exit> {
        if let Some(rtt) = ack.rtt {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        if self.round_end_seq.is_none_or(|end| ack.snd_una > end) {
            self.round_end_seq = Some(ack.snd_nxt);
            self.round_start = ack.now;
            self.last_ack = ack.now;
            self.round_min_rtt = None;
            self.samples = 0;
        }
        if cwnd_seg < LOW_WINDOW_SEGMENTS {
            return None;
        }
        let min_rtt = self.min_rtt?;

        // ACK train (paper §3.1).
        if ack.now.saturating_since(self.last_ack) <= ACK_DELTA {
            self.last_ack = ack.now;
            if ack.now.saturating_since(self.round_start) > Duration(min_rtt.as_nanos() / 2) {
                return Some(Exit::AckTrain);
            }
        }

        // Delay increase (paper §3.2).
        if let Some(rtt) = ack.rtt {
            self.round_min_rtt = Some(self.round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            if self.samples < MIN_SAMPLES {
                self.samples += 1;
            } else {
                let eta =
                    Duration(min_rtt.as_nanos() / 8).clamp(MIN_DELAY_THRESH, MAX_DELAY_THRESH);
                if self.round_min_rtt.is_some_and(|r| r > min_rtt + eta) {
                    return Some(Exit::Delay);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    fn ack(now_us: u64, una: u64, nxt: u64, rtt_ms: u64) -> AckSample {
        let mut a =
            crate::growth::testing::ack(SimTime(now_us * 1000), MSS, Duration::from_millis(rtt_ms));
        a.snd_una = una;
        a.snd_nxt = nxt;
        a
    }

    #[test]
    fn a_long_ack_train_ends_slow_start_after_half_the_minimum_rtt() {
        let mut hs = HyStart::new();
        // Round 1 (40 ms minimum RTT): 40 ACKs 1 ms apart, the flat RTT never trips the delay
        // detector; the train passes 20 ms at its 22nd ACK (t = 21 ms after the round's first).
        let nxt = 100 * MSS;
        let mut fired = None;
        for i in 0..40u64 {
            if let Some(e) = hs.on_ack(&ack(1_000_000 + 1000 * i, (i + 1) * MSS, nxt, 40), 32.0) {
                fired = Some((i, e));
                break;
            }
        }
        assert_eq!(fired, Some((21, Exit::AckTrain)));
    }

    #[test]
    fn spaced_acks_or_a_small_window_do_not_make_a_train() {
        let mut hs = HyStart::new();
        let nxt = 100 * MSS;
        // 3 ms apart: every ACK starts a new train.
        for i in 0..40u64 {
            assert_eq!(
                hs.on_ack(&ack(1_000_000 + 3000 * i, (i + 1) * MSS, nxt, 40), 32.0),
                None
            );
        }
        // Closely spaced but below the low window.
        let mut hs = HyStart::new();
        for i in 0..40u64 {
            assert_eq!(
                hs.on_ack(&ack(1_000_000 + 500 * i, (i + 1) * MSS, nxt, 40), 15.0),
                None
            );
        }
    }

    #[test]
    fn a_round_whose_minimum_rtt_rises_by_eta_ends_slow_start() {
        let mut hs = HyStart::new();
        // Round 1 at 40 ms sets the minimum; η = 5 ms. ACKs 3 ms apart (no train).
        let mut t = 1_000_000;
        for i in 0..10u64 {
            assert_eq!(hs.on_ack(&ack(t, (i + 1) * MSS, 10 * MSS, 40), 20.0), None);
            t += 3000;
        }
        // Round 2 at 44 ms (+4 < η): no exit.
        for i in 10..30u64 {
            assert_eq!(hs.on_ack(&ack(t, (i + 1) * MSS, 30 * MSS, 44), 20.0), None);
            t += 3000;
        }
        // Round 3 at 46 ms (+6 > η): the 9th sample of the round decides.
        for i in 30..60u64 {
            let r = hs.on_ack(&ack(t, (i + 1) * MSS, 60 * MSS, 46), 20.0);
            t += 3000;
            if i - 30 < MIN_SAMPLES as u64 {
                assert_eq!(r, None, "sample {}", i - 30);
            } else {
                assert_eq!(r, Some(Exit::Delay));
                return;
            }
        }
        panic!("no exit");
    }
}
