//! D-SACK (RFC 2883) with explicit times: the receiver reports a duplicate segment in the first
//! SACK block of its next ACK; the `linux` sender recognises it (RFC 2883 §4, RFC 3708 §2),
//! undoes a fast recovery all of whose retransmissions were spurious (RFC 3708 §3, RFC 4015 §3.2)
//! and widens RACK's reordering window (RFC 8985 §6.2 step 4). The textbook SACK modes ignore it.

use ccarena_cc::{CaState, SimTime};
use ccarena_transport::{AckSegment, DataSegment, Receiver, ReceiverConfig, RecoveryMode, Sender};
use crate::support::*;

const M: u64 = MSS as u64;

/// Segment number `n` (full-sized), sent at `n` ms.
fn seg(n: u64) -> DataSegment {
    DataSegment { seq: n * M, len: MSS, ts_val: ms(n), ecn: ccarena_transport::Ecn::NotEct, cwr: false, retransmit: false }
}

fn blocks(a: &AckSegment) -> Vec<(u64, u64)> {
    a.sack_blocks().iter().map(|b| (b.start / M, b.end / M)).collect()
}

fn dsack_receiver(dsack: bool) -> Receiver {
    Receiver::new(ReceiverConfig { dsack, ..receiver_cfg() })
}

#[test]
fn a_duplicate_below_the_cumulative_ack_is_reported_first_and_once() {
    let mut r = dsack_receiver(true);
    let _ = r.on_segment(ms(1), &seg(0));
    let _ = r.on_segment(ms(2), &seg(1));
    assert_eq!(r.poll_ack(ms(2)).map(|a| a.ack), Some(2 * M));
    // Segment 0 again: acknowledged at once, D-SACK [0, 1) below the cumulative ACK.
    let _ = r.on_segment(ms(3), &seg(0));
    let a = r.poll_ack(ms(3)).expect("a duplicate is acknowledged at once");
    assert_eq!((a.ack, blocks(&a)), (2 * M, vec![(0, 1)]));
    // Reported once.
    let _ = r.on_segment(ms(4), &seg(2));
    let _ = r.on_segment(ms(5), &seg(3));
    assert_eq!(blocks(&r.poll_ack(ms(5)).unwrap()), vec![]);
    // A segment straddling RCV.NXT: only the part already received is a duplicate.
    let _ = r.on_segment(ms(6), &DataSegment { seq: 3 * M + M / 2, ..seg(3) });
    let a = r.poll_ack(ms(6)).expect("immediate ACK");
    assert_eq!(a.ack, 4 * M + M / 2);
    assert_eq!(a.sack_blocks()[0].start, 3 * M + M / 2);
    assert_eq!(a.sack_blocks()[0].end, 4 * M);
    // Without D-SACK (RFC 2018 only) the duplicate is acknowledged with no block.
    let mut plain = dsack_receiver(false);
    let _ = plain.on_segment(ms(1), &seg(0));
    let _ = plain.on_segment(ms(2), &seg(0));
    assert_eq!(blocks(&plain.poll_ack(ms(2)).unwrap()), vec![]);
}

#[test]
fn a_duplicate_above_a_hole_is_followed_by_the_block_containing_it() {
    let mut r = dsack_receiver(true);
    let _ = r.on_segment(ms(0), &seg(0));
    for n in [2, 3, 4, 6, 8] {
        let _ = r.on_segment(ms(n), &seg(n));
    }
    assert_eq!(blocks(&r.poll_ack(ms(8)).unwrap()), vec![(8, 9), (6, 7), (2, 5)]);
    // Segment 3 again: D-SACK [3, 4), then [2, 5) (RFC 2883 §4), then the most recent other
    // block; the three-block limit drops the oldest.
    let _ = r.on_segment(ms(9), &seg(3));
    let a = r.poll_ack(ms(9)).unwrap();
    assert_eq!((a.ack, blocks(&a)), (M, vec![(3, 4), (2, 5), (8, 9)]));
    assert_eq!(r.poll_ack(ms(9)), None, "no second ACK for one duplicate");
    let _ = r.on_segment(ms(10), &seg(10));
    assert_eq!(blocks(&r.poll_ack(ms(10)).unwrap()), vec![(10, 11), (2, 5), (8, 9)]);
}

fn sender(mode: RecoveryMode, segments: u64) -> Sender {
    let mut s = Sender::new(sender_cfg(mode), controller_for(mode), SimTime::ZERO);
    s.app_write(segments * M);
    s
}

/// Cumulative ACK of segment `una`, SACK blocks in segments, echoing `ts`.
fn ack(una: u64, sack: &[(u64, u64)], ts: SimTime) -> AckSegment {
    let blocks: Vec<(u64, u64)> = sack.iter().map(|&(a, b)| (a * M, b * M)).collect();
    ack_seg(una * M, &blocks, ts)
}

/// Ten segments at 0 ms, acknowledged at 100 ms (RTT 100 ms); segments 10..22 go out at 100 ms.
/// At 200 ms 11..14 are SACKed: DupThresh SACKed segments and no reordering seen, so RACK's
/// window is 0 and segment 10 is declared lost and retransmitted. It was only late: it arrives
/// at 201 ms (cumulative ACK 14), and its retransmission's arrival brings a D-SACK for [10, 11)
/// at 300 ms. Returns the sender and (cwnd, ssthresh) before the recovery.
fn spurious_fast_retransmit(mode: RecoveryMode) -> (Sender, (u64, u64)) {
    let mut s = sender(mode, 100);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    let _ = s.on_ack(ms(100), &ack(10, &[], ms(0)));
    assert_eq!(drain(&mut s, ms(100)).len(), 12);
    let prior = (s.cwnd().cwnd_bytes, s.cwnd().ssthresh_bytes);
    let _ = s.on_ack(ms(200), &ack(10, &[(11, 14)], ms(100)));
    assert_eq!(s.ca_state(), CaState::Recovery);
    let out = drain(&mut s, ms(200));
    assert!(out[0].retransmit && out[0].seq == 10 * M, "fast retransmit of 10");
    assert_eq!(s.stats().segments_retransmitted, 1);
    let _ = s.on_ack(ms(201), &ack(14, &[], ms(100)));
    drain(&mut s, ms(201));
    assert!(s.cwnd().ssthresh_bytes < prior.1, "recovery reduced ssthresh");
    let _ = s.on_ack(ms(300), &ack(14, &[(10, 11)], ms(100)));
    drain(&mut s, ms(300));
    (s, prior)
}

#[test]
fn a_recovery_whose_retransmissions_were_all_spurious_is_undone() {
    let (s, (cwnd, ssthresh)) = spurious_fast_retransmit(RecoveryMode::Linux);
    let st = s.stats();
    assert_eq!((st.dsacks_received, st.dsack_segments, st.dsack_undos), (1, 1, 1));
    assert_ne!(s.ca_state(), CaState::Recovery, "undo ends the recovery");
    assert_eq!(s.cwnd().ssthresh_bytes, ssthresh);
    assert!(s.cwnd().cwnd_bytes >= cwnd, "cwnd {} restored to at least {cwnd}", s.cwnd().cwnd_bytes);
    // PRR, which reads no D-SACK, keeps the reduction.
    let (p, (_, ssthresh)) = spurious_fast_retransmit(RecoveryMode::Prr);
    assert_eq!((p.stats().dsacks_received, p.stats().dsack_undos), (0, 0));
    assert!(p.cwnd().ssthresh_bytes < ssthresh);
}

#[test]
fn a_recovery_with_a_real_loss_is_not_undone() {
    // As above, but 12 is lost too and retransmitted: the D-SACK for 10 leaves one
    // retransmission unaccounted for.
    let mut s = sender(RecoveryMode::Linux, 100);
    drain(&mut s, ms(0));
    let _ = s.on_ack(ms(100), &ack(10, &[], ms(0)));
    drain(&mut s, ms(100));
    let _ = s.on_ack(ms(200), &ack(10, &[(11, 12), (13, 16)], ms(100)));
    let mut rtx: Vec<u64> = drain(&mut s, ms(200)).iter().filter(|d| d.retransmit).map(|d| d.seq / M).collect();
    let reduced = s.cwnd().ssthresh_bytes;
    // The original 10 arrives, and 16 and 17: PRR lets the retransmission of 12 out.
    let _ = s.on_ack(ms(201), &ack(11, &[(13, 18)], ms(100)));
    rtx.extend(drain(&mut s, ms(201)).iter().filter(|d| d.retransmit).map(|d| d.seq / M));
    assert_eq!(rtx, vec![10, 12]);
    let _ = s.on_ack(ms(300), &ack(11, &[(10, 11), (13, 18)], ms(100)));
    drain(&mut s, ms(300));
    assert_eq!((s.stats().dsacks_received, s.stats().dsack_undos), (1, 0));
    assert_eq!(s.cwnd().ssthresh_bytes, reduced);
}

/// Reordering first (segment 5 arrives after 6, so RACK has seen reordering and its window is
/// min_rtt / 4 = 25 ms), then segment 10 is late by more than that: RACK's timer retransmits it,
/// the original arrives, and at 300 ms the retransmission's D-SACK (when `dsack`) or an ACK
/// without it. Then 15 is SACKed above a hole at 14. Returns the sender.
fn late_after_reordering(dsack: bool) -> Sender {
    let mut s = sender(RecoveryMode::Linux, 100);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    let _ = s.on_ack(ms(100), &ack(5, &[(6, 7)], ms(0)));
    drain(&mut s, ms(100));
    let _ = s.on_ack(ms(101), &ack(10, &[], ms(0)));
    let sent = drain(&mut s, ms(101));
    assert!(sent.iter().all(|d| !d.retransmit && d.seq >= 10 * M), "5 was only late");
    let _ = s.on_ack(ms(201), &ack(10, &[(11, 14)], ms(100)));
    assert_ne!(s.ca_state(), CaState::Recovery, "within the reordering window");
    let at = s.poll_timeout().expect("RACK timer");
    s.handle_timeout(at);
    let out = drain(&mut s, at);
    assert!(out[0].retransmit && out[0].seq == 10 * M);
    let _ = s.on_ack(at + ccarena_cc::Duration::from_millis(1), &ack(14, &[], ms(100)));
    let sack: &[(u64, u64)] = if dsack { &[(10, 11)] } else { &[] };
    let _ = s.on_ack(ms(300), &ack(14, sack, ms(100)));
    let _ = s.on_ack(ms(301), &ack(14, &[(15, 16)], ms(100)));
    s
}

#[test]
fn d_sack_widens_rack_reordering_window() {
    // RFC 8985 §6.2 step 4: the D-SACK makes reo_wnd_mult 2, so 14 is declared lost
    // min_rtt / 4 = 25 ms later than without it.
    let with = late_after_reordering(true);
    let without = late_after_reordering(false);
    assert_eq!(with.stats().dsack_undos, 1);
    let (a, b) = (with.poll_timeout().unwrap(), without.poll_timeout().unwrap());
    eprintln!("RACK deadline for 14: {a:?} with D-SACK, {b:?} without");
    assert_eq!(a.saturating_since(b), ccarena_cc::Duration::from_millis(25));
}
