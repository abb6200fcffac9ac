//! RFC 6937 Proportional Rate Reduction on a hand-checked example, driving the sender by hand.
//!
//! Setup (segments of 1 MSS): cwnd = FlightSize = 20 segments (0..19), segment 0 is lost, and
//! each later segment k produces an ACK that SACKs it. Reno's ssthresh = FlightSize/2 = 10,
//! RecoverFS = snd.nxt − snd.una = 20, DupThresh = 3.
//!
//! ACKs 1 and 2 are duplicates (Disorder). ACK 3 makes IsLost(0) true (three SACKed segments
//! above it): recovery starts with segment 0 marked lost, and PRR runs on that ACK too.
//! After ACK k (k ≥ 3), with N the new segments sent so far and prr_out = 1 + N:
//!
//! ```text
//! prr_delivered = k − 2               (segments 3..k SACKed during recovery)
//! pipe          = 20 + N − k − 1 + 1  (outstanding − SACKed − lost + retransmitted; before
//!                                      the retransmission on ACK 3 the last +1 is missing)
//! pipe > 10:  sndcnt = CEIL((k − 2)·10/20) − prr_out
//! pipe ≤ 10:  sndcnt = MIN(10 − pipe, MAX(prr_delivered − prr_out, 1) + 1)   (PRR-SSRB)
//! cwnd = pipe + sndcnt
//! ```
//!
//! | ACK k | pipe | prr_delivered | prr_out before | sndcnt | cwnd | sends |
//! |---|---|---|---|---|---|---|
//! | 3  | 16 | 1  | 0 | CEIL(0.5)=1 − 0 = 1 | 17 | retransmission of 0 |
//! | 4  | 16 | 2  | 1 | 1 − 1 = 0           | 16 | — |
//! | 5  | 15 | 3  | 1 | CEIL(1.5)=2 − 1 = 1 | 16 | new 20 |
//! | 6  | 15 | 4  | 2 | 2 − 2 = 0           | 15 | — |
//! | 7  | 14 | 5  | 2 | 3 − 2 = 1           | 15 | new 21 |
//! | 8  | 14 | 6  | 3 | 0                   | 14 | — |
//! | 9  | 13 | 7  | 3 | 1                   | 14 | new 22 |
//! | 10 | 13 | 8  | 4 | 0                   | 13 | — |
//! | 11 | 12 | 9  | 4 | 1                   | 13 | new 23 |
//! | 12 | 12 | 10 | 5 | 0                   | 12 | — |
//! | 13 | 11 | 11 | 5 | 6 − 5 = 1           | 12 | new 24 |
//! | 14 | 11 | 12 | 6 | 6 − 6 = 0           | 11 | — |
//! | 15 | 10 | 13 | 6 | SSRB: min(0, 8) = 0 | 10 | — |
//! | 16 | 9  | 14 | 6 | min(1, 9) = 1       | 10 | new 25 |
//! | 17 | 9  | 15 | 7 | min(1, 9) = 1       | 10 | new 26 |
//! | 18 | 9  | 16 | 8 | 1                   | 10 | new 27 |
//! | 19 | 9  | 17 | 9 | 1                   | 10 | new 28 |
//!
//! Then the retransmission of 0 is acknowledged (ACK of 20 segments, everything sent before
//! recovery): recovery ends with cwnd = ssthresh = 10.

use ccarena_cc::{CaState, SimTime};
use ccarena_transport::{RecoveryMode, Sender, SenderConfig};
use crate::support::*;

const M: u64 = MSS as u64;

fn twenty_in_flight(mode: RecoveryMode) -> Sender {
    let cfg = SenderConfig {
        initial_cwnd_bytes: 20 * M,
        ..sender_cfg(mode)
    };
    let mut s = Sender::new(cfg, controller_for(mode), SimTime::ZERO);
    s.app_write(1_000 * M);
    let segs = drain(&mut s, SimTime::ZERO);
    assert_eq!(segs.len(), 20);
    s
}

/// ACK k: cumulative 0, SACKing segments 1..=k.
fn sack_ack(k: u64) -> ccarena_transport::AckSegment {
    ack_seg(0, &[(M, (k + 1) * M)], SimTime::ZERO)
}

#[test]
fn prr_follows_rfc6937_on_the_hand_checked_example() {
    let mut s = twenty_in_flight(RecoveryMode::Prr);
    let t = ms(20);
    for k in 1..=2 {
        let _ = s.on_ack(t, &sack_ack(k));
        assert_eq!(s.ca_state(), CaState::Disorder);
        // Not polled here, so the window is not grown by these SACKs (no cwnd-limited flag).
    }
    // (k, pipe after the ACK, cwnd after the ACK, segments sent)
    let table: [(u64, u64, u64, usize); 17] = [
        (3, 16, 17, 1),
        (4, 16, 16, 0),
        (5, 15, 16, 1),
        (6, 15, 15, 0),
        (7, 14, 15, 1),
        (8, 14, 14, 0),
        (9, 13, 14, 1),
        (10, 13, 13, 0),
        (11, 12, 13, 1),
        (12, 12, 12, 0),
        (13, 11, 12, 1),
        (14, 11, 11, 0),
        (15, 10, 10, 0),
        (16, 9, 10, 1),
        (17, 9, 10, 1),
        (18, 9, 10, 1),
        (19, 9, 10, 1),
    ];
    let mut new_seq = 20 * M;
    for (k, pipe, cwnd, sends) in table {
        let _ = s.on_ack(t, &sack_ack(k));
        assert_eq!(s.ca_state(), CaState::Recovery, "ACK {k}");
        assert_eq!(s.cwnd().ssthresh_bytes, 10 * M);
        assert_eq!(s.in_flight_bytes(), pipe * M, "pipe after ACK {k}");
        assert_eq!(s.cwnd().cwnd_bytes, cwnd * M, "cwnd after ACK {k}");
        let out = drain(&mut s, t);
        assert_eq!(out.len(), sends, "segments sent on ACK {k}");
        if k == 3 {
            assert!(
                out[0].retransmit && out[0].seq == 0,
                "fast retransmission first"
            );
        } else if sends == 1 {
            assert_eq!((out[0].seq, out[0].retransmit), (new_seq, false));
            new_seq += M;
        }
    }
    assert_eq!(s.prr().prr_delivered, 17 * M);
    assert_eq!(s.prr().prr_out, 10 * M);
    // The retransmission arrives: cumulative ACK of all 20 (RecoveryPoint), new data unacked.
    let _ = s.on_ack(ms(40), &ack_seg(20 * M, &[], SimTime::ZERO));
    assert_eq!(s.ca_state(), CaState::Open);
    assert_eq!(s.cwnd().cwnd_bytes, 10 * M, "cwnd = ssthresh on exit");
    assert_eq!(s.stats().fast_recoveries, 1);
}

#[test]
fn sack_mode_sets_cwnd_to_ssthresh_and_sends_only_below_it() {
    // RFC 6675: cwnd = ssthresh = 10 on entry; only the first retransmission is sent whatever
    // cwnd says; new data waits until pipe falls below 10.
    let mut s = twenty_in_flight(RecoveryMode::Sack);
    let t = ms(20);
    for k in 1..=2 {
        let _ = s.on_ack(t, &sack_ack(k));
    }
    let mut sent_at = Vec::new();
    for k in 3..=19 {
        let _ = s.on_ack(t, &sack_ack(k));
        assert_eq!(s.cwnd().cwnd_bytes, 10 * M, "ACK {k}");
        let out = drain(&mut s, t);
        if k == 3 {
            assert_eq!(out.len(), 1);
            assert!(out[0].retransmit);
        } else {
            sent_at.push((k, out.len()));
        }
        if k >= 10 {
            assert_eq!(
                s.in_flight_bytes(),
                10 * M,
                "pipe held at ssthresh from ACK 10 on"
            );
        }
    }
    // pipe after ACK k = 20 − k (k ≥ 3, retransmission counted), so nothing new until pipe < 10
    // (ACK 11), then one per ACK.
    for (k, n) in sent_at {
        assert_eq!(n, usize::from(k >= 11), "ACK {k}");
    }
}

/// A burst loss: segments 0..9 of 20 lost, ACK k SACKs segment 9 + k. ACK 3 makes all ten lost
/// at once (three SACKed above each), so pipe = 20 − 3 − 10 = 7 is already below ssthresh = 10
/// and PRR-SSRB governs from the start (prr_out before the ACK in brackets):
///
/// | ACK | pipe | prr_delivered | limit = MAX(prr_delivered − prr_out, DeliveredData) + 1 | sndcnt = MIN(10 − pipe, limit) | cwnd |
/// |---|---|---|---|---|---|
/// | 3  | 7 | 1 | max(1 − [0], 1) + 1 = 2 | min(3, 2) = 2 | 9  |
/// | 4  | 8 | 2 | max(2 − [2], 1) + 1 = 2 | min(2, 2) = 2 | 10 |
/// | 5  | 9 | 3 | max(0, 1) + 1 = 2       | min(1, 2) = 1 | 10 |
/// | 6..10 | 9 | 4..8 | 2                | 1             | 10 |
///
/// (pipe after ACK k = 20 − k SACKed − 10 lost + retransmissions so far.) The conservative bound
/// (PRR-CRB, limit = prr_delivered − prr_out) would send 1, 0, ... and rebuild the flight
/// much more slowly; slow-start-like catching up is what SSRB is for.
#[test]
fn prr_ssrb_rebuilds_the_flight_after_a_burst_loss() {
    let mut s = twenty_in_flight(RecoveryMode::Prr);
    let t = ms(20);
    let ack = |k: u64| ack_seg(0, &[(10 * M, (10 + k) * M)], SimTime::ZERO);
    for k in 1..=2 {
        let _ = s.on_ack(t, &ack(k));
        assert_eq!(s.ca_state(), CaState::Disorder);
    }
    let table: [(u64, u64, u64, usize); 8] = [
        (3, 7, 9, 2),
        (4, 8, 10, 2),
        (5, 9, 10, 1),
        (6, 9, 10, 1),
        (7, 9, 10, 1),
        (8, 9, 10, 1),
        (9, 9, 10, 1),
        (10, 9, 10, 1),
    ];
    let mut next_rtx = 0;
    for (k, pipe, cwnd, sends) in table {
        let _ = s.on_ack(t, &ack(k));
        assert_eq!(s.ca_state(), CaState::Recovery);
        assert_eq!(s.in_flight_bytes(), pipe * M, "pipe after ACK {k}");
        assert_eq!(s.cwnd().cwnd_bytes, cwnd * M, "cwnd after ACK {k}");
        let out = drain(&mut s, t);
        assert_eq!(out.len(), sends, "ACK {k}");
        for seg in out {
            assert!(seg.retransmit);
            assert_eq!(seg.seq, next_rtx * M, "holes repaired in order");
            next_rtx += 1;
        }
    }
    assert_eq!(next_rtx, 10, "all ten holes retransmitted by the last SACK");
}
