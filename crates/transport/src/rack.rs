//! RACK: time-based loss detection (RFC 8985 §6), the state the `linux` recovery mode keeps.
//!
//! RACK remembers the most recently *sent* segment that has been delivered (acknowledged or
//! SACKed): its transmission time `xmit_ts`, its end `end_seq`, and the RTT it measured. A
//! segment still unacknowledged that was sent before it is lost once
//! `xmit_ts + rtt + reo_wnd ≤ now` (§6.2 step 5); until then the reordering timer waits for it.
//! The scoreboard applies that rule (`Scoreboard::rack_detect_loss`); this module keeps the state
//! and computes the reordering window.
//!
//! Reordering window (§6.2 step 4): zero while no reordering has been seen and the sender is in
//! recovery or has DupThresh segments SACKed (so RACK then acts like the duplicate-ACK
//! threshold), else `min(reo_wnd_mult · min_rtt / 4, srtt)`. `reo_wnd_mult` starts at 1 and
//! grows by one for an ACK carrying a D-SACK (RFC 2883: a retransmission, or the original it
//! repeated, arrived twice, so the loss was probably reordering), at most once per round trip:
//! after an increment, D-SACKs are ignored until SND.UNA passes RACK.dsack_round (SND.NXT at the
//! increment). Each increment sets `reo_wnd_persist` to 16; each loss recovery (fast or RTO) that
//! ends without a D-SACK in its last ACK counts it down, and at 0 `reo_wnd_mult` returns to 1.
//! Reordering is seen (§6.2 step 3) when a never-retransmitted segment is delivered below the
//! highest sequence delivered so far (RACK.fack).
//!
//! One departure from §6.2's pseudocode, as Linux does: a D-SACK grows `reo_wnd_mult` only once
//! RACK has seen reordering, and is not itself taken as reordering. Without reordering a D-SACK
//! reports a duplicate the sender caused without RACK (a timeout's go-back-N resending data
//! still in flight, a tail loss probe): widening the window then only delays loss detection. In
//! ccarena's Hybla test (600 ms RTT, random loss) counting those D-SACKs raised the timeouts
//! from 27 to 63.

use ccarena_cc::{Duration, SimTime};

/// RACK's state (RFC 8985 §6.1), times in the sender's clock.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rack {
    /// RACK.xmit_ts and RACK.end_seq of the most recently sent delivered segment.
    newest: Option<(SimTime, u64)>,
    /// RACK.rtt: the RTT that segment measured.
    rtt: Duration,
    /// RACK.fack: highest end sequence delivered.
    fack: u64,
    /// RACK.reordering_seen.
    reordering_seen: bool,
    /// Newest valid delivered segment of the ACK being processed: (xmit_ts, end_seq).
    ack_newest: Option<(SimTime, u64)>,
    /// RACK.reo_wnd_mult − 1 (so that `Default` gives the RFC's initial 1).
    reo_wnd_extra: u32,
    /// RACK.reo_wnd_persist: recoveries left before `reo_wnd_mult` is reset.
    reo_wnd_persist: u32,
    /// RACK.dsack_round: SND.NXT when `reo_wnd_mult` last grew, until SND.UNA passes it.
    dsack_round: Option<u64>,
}

/// RFC 8985 §6.2 step 4: loss recoveries after the last D-SACK-driven growth of `reo_wnd_mult`
/// before it is reset to 1.
pub(crate) const REO_WND_PERSIST: u32 = 16;

/// `a` was sent after `b` (RFC 8985 §6.2 RACK_sent_after: later time, or same time and higher
/// sequence).
pub(crate) fn sent_after(a: (SimTime, u64), b: (SimTime, u64)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 > b.1)
}

impl Rack {
    /// A segment `[.., end)` last sent at `xmit_ts` was newly delivered by an ACK echoing
    /// `ts_ecr` at `now` (§6.2 steps 2 and 3). A retransmitted segment counts only when the
    /// echo shows the retransmission was delivered and its RTT is not below `min_rtt` (else the
    /// ACK may be for the original).
    #[allow(clippy::too_many_arguments)]
    pub fn on_delivered(
        &mut self,
        now: SimTime,
        xmit_ts: SimTime,
        end: u64,
        retransmitted: bool,
        ts_ecr: SimTime,
        min_rtt: Option<Duration>,
    ) {
        if end > self.fack {
            self.fack = end;
        } else if end < self.fack && !retransmitted {
            self.reordering_seen = true;
        }
        if retransmitted {
            let rtt = now.saturating_since(xmit_ts);
            if ts_ecr < xmit_ts || min_rtt.is_some_and(|m| rtt < m) {
                return;
            }
        }
        if self
            .ack_newest
            .is_none_or(|n| sent_after((xmit_ts, end), n))
        {
            self.ack_newest = Some((xmit_ts, end));
        }
    }

    /// End of an ACK's deliveries: RACK.rtt from the newest segment it delivered, and
    /// RACK.xmit_ts/end_seq moved forward if that segment was sent after the current one.
    pub fn finish_ack(&mut self, now: SimTime) {
        let Some(n) = self.ack_newest.take() else {
            return;
        };
        self.rtt = now.saturating_since(n.0);
        if self.newest.is_none_or(|cur| sent_after(n, cur)) {
            self.newest = Some(n);
        }
    }

    /// RACK.xmit_ts and RACK.end_seq, `None` before anything was delivered.
    pub fn newest(&self) -> Option<(SimTime, u64)> {
        self.newest
    }

    /// The D-SACK part of RACK_update_reo_wnd (§6.2 step 4), for every ACK: `dsack` says the
    /// ACK carried a D-SACK block; `snd_una` is after the ACK, `snd_nxt` now. A D-SACK counts
    /// only once reordering has been seen (see the module documentation). Returns true when
    /// `reo_wnd_mult` grew.
    pub fn on_ack_dsack(&mut self, snd_una: u64, snd_nxt: u64, dsack: bool) -> bool {
        if self.dsack_round.is_some_and(|r| snd_una >= r) {
            self.dsack_round = None;
        }
        if !dsack || !self.reordering_seen {
            return false;
        }
        if self.dsack_round.is_some() {
            return false;
        }
        self.dsack_round = Some(snd_nxt);
        self.reo_wnd_extra = self.reo_wnd_extra.saturating_add(1);
        self.reo_wnd_persist = REO_WND_PERSIST;
        true
    }

    /// A fast or RTO recovery ended on an ACK that did not grow `reo_wnd_mult` (§6.2 step 4):
    /// count `reo_wnd_persist` down and reset `reo_wnd_mult` to 1 when it reaches 0.
    pub fn on_recovery_exit(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
        if self.reo_wnd_persist == 0 {
            self.reo_wnd_extra = 0;
        }
    }

    /// RACK.reo_wnd_mult.
    pub fn reo_wnd_mult(&self) -> u32 {
        self.reo_wnd_extra + 1
    }

    /// RACK.reo_wnd (§6.2 step 4).
    pub fn reo_wnd(
        &self,
        in_recovery: bool,
        dupthresh_sacked: bool,
        min_rtt: Option<Duration>,
        srtt: Option<Duration>,
    ) -> Duration {
        if !self.reordering_seen && (in_recovery || dupthresh_sacked) {
            return Duration::ZERO;
        }
        let quarter = min_rtt.map_or(Duration::ZERO, |m| Duration(m.0 / 4));
        let wnd = quarter.saturating_mul(u64::from(self.reo_wnd_mult()));
        srtt.map_or(wnd, |s| wnd.min(s))
    }

    /// How long after its transmission a segment sent before RACK.xmit_ts is declared lost:
    /// RACK.rtt + reo_wnd.
    pub fn wait(&self, reo_wnd: Duration) -> Duration {
        self.rtt + reo_wnd
    }

    /// RACK.reordering_seen.
    #[cfg(test)]
    pub fn reordering_seen(&self) -> bool {
        self.reordering_seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> SimTime {
        SimTime(v * 1_000_000)
    }

    #[test]
    fn newest_delivered_segment_and_its_rtt() {
        let mut r = Rack::default();
        r.on_delivered(ms(50), ms(10), 2000, false, ms(10), None);
        r.on_delivered(ms(50), ms(5), 1000, false, ms(5), None);
        r.finish_ack(ms(50));
        assert_eq!(r.newest(), Some((ms(10), 2000)));
        assert_eq!(r.wait(Duration::ZERO), Duration::from_millis(40));
        // Delivered below fack, never retransmitted: reordering.
        assert!(r.reordering_seen());
    }

    #[test]
    fn a_retransmission_acked_too_soon_is_not_trusted() {
        let mut r = Rack::default();
        // Retransmitted at 40 ms, ACKed at 45 ms: 5 ms < min_rtt 30 ms, it was the original.
        r.on_delivered(ms(45), ms(40), 1000, true, ms(40), Some(Duration::from_millis(30)));
        r.finish_ack(ms(45));
        assert_eq!(r.newest(), None);
    }

    #[test]
    fn d_sack_grows_the_window_once_per_round_and_16_recoveries_reset_it() {
        let mut r = Rack::default();
        let (m, s) = (Some(Duration::from_millis(40)), Some(Duration::from_millis(100)));
        // Before any reordering a D-SACK changes nothing.
        assert!(!r.on_ack_dsack(0, 10_000, true));
        assert_eq!(r.reo_wnd_mult(), 1);
        r.reordering_seen = true;
        assert!(r.on_ack_dsack(0, 10_000, true));
        assert_eq!(r.reo_wnd(true, true, m, s), Duration::from_millis(20));
        // Same round (SND.UNA below RACK.dsack_round = 10 000): ignored.
        assert!(!r.on_ack_dsack(9_999, 12_000, true));
        assert_eq!(r.reo_wnd_mult(), 2);
        // Next round.
        assert!(r.on_ack_dsack(10_000, 20_000, true));
        assert!(r.on_ack_dsack(20_000, 30_000, true));
        assert!(r.on_ack_dsack(30_000, 40_000, true));
        assert!(r.on_ack_dsack(40_000, 50_000, true));
        // min(6 · 10 ms, SRTT 100 ms).
        assert_eq!(r.reo_wnd_mult(), 6);
        assert_eq!(r.reo_wnd(false, false, m, s), Duration::from_millis(60));
        assert!(r.on_ack_dsack(50_000, 60_000, true));
        assert!(r.on_ack_dsack(60_000, 70_000, true));
        assert!(r.on_ack_dsack(70_000, 80_000, true));
        assert!(r.on_ack_dsack(80_000, 90_000, true));
        assert!(r.on_ack_dsack(90_000, 100_000, true));
        assert!(r.on_ack_dsack(100_000, 110_000, true));
        assert_eq!(r.reo_wnd(false, false, m, s), Duration::from_millis(100), "capped by SRTT");
        // Fifteen recoveries without D-SACK keep it; the sixteenth resets it.
        for _ in 0..15 {
            r.on_recovery_exit();
        }
        assert_eq!(r.reo_wnd_mult(), 12);
        r.on_recovery_exit();
        assert_eq!(r.reo_wnd_mult(), 1);
        assert_eq!(r.reo_wnd(false, false, m, s), Duration::from_millis(10));
    }

    #[test]
    fn reordering_window_is_a_quarter_min_rtt_or_zero() {
        let mut r = Rack::default();
        let (m, s) = (Some(Duration::from_millis(40)), Some(Duration::from_millis(50)));
        assert_eq!(r.reo_wnd(false, false, m, s), Duration::from_millis(10));
        assert_eq!(r.reo_wnd(true, false, m, s), Duration::ZERO);
        assert_eq!(r.reo_wnd(false, true, m, s), Duration::ZERO);
        r.reordering_seen = true;
        assert_eq!(r.reo_wnd(true, true, m, s), Duration::from_millis(10));
    }
}
