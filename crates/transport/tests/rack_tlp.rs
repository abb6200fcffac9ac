//! RACK-TLP (RFC 8985) in the `linux` recovery mode, with explicit times: reordering within the
//! reordering window is not a loss, RACK declares a loss by time (its reordering timer), and a
//! tail loss is repaired by a tail loss probe instead of a retransmission timeout.

use ccarena_cc::{CaState, SimTime};
use ccarena_transport::{AckSegment, RecoveryMode, Sender};
use crate::support::*;

const M: u64 = MSS as u64;

fn sender(mode: RecoveryMode, segments: u64) -> Sender {
    let mut s = Sender::new(sender_cfg(mode), controller_for(mode), SimTime::ZERO);
    s.app_write(segments * M);
    s
}

/// Cumulative ACK of segment `una`, SACKing segments `[a, b)`, echoing `ts`.
fn ack(una: u64, sack: &[(u64, u64)], ts: SimTime) -> AckSegment {
    let blocks: Vec<(u64, u64)> = sack.iter().map(|&(a, b)| (a * M, b * M)).collect();
    ack_seg(una * M, &blocks, ts)
}

/// Ten segments at 0 ms, all acknowledged at 100 ms (RTT, SRTT and min RTT 100 ms, so RACK's
/// reordering window is 25 ms); what the ACK lets out is sent at 100 ms.
fn after_first_round(mode: RecoveryMode, segments: u64) -> Sender {
    let mut s = sender(mode, segments);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    let _ = s.on_ack(ms(100), &ack(10, &[], ms(0)));
    drain(&mut s, ms(100));
    s
}

/// The reordering scenario: segment 11 overtakes 10 (RACK learns that the path reorders), then
/// segment 12 is overtaken by five later segments and arrives 5 ms later. Returns the sender.
fn reordered(mode: RecoveryMode) -> Sender {
    let mut s = after_first_round(mode, 100);
    let _ = s.on_ack(ms(200), &ack(10, &[(11, 12)], ms(100)));
    drain(&mut s, ms(200));
    let _ = s.on_ack(ms(205), &ack(12, &[], ms(100)));
    drain(&mut s, ms(205));
    s.handle_timeout(ms(225));
    drain(&mut s, ms(225));
    // 13..18 arrive before 12: five segments SACKed above the hole.
    let _ = s.on_ack(ms(230), &ack(12, &[(13, 18)], ms(100)));
    drain(&mut s, ms(230));
    let _ = s.on_ack(ms(235), &ack(18, &[], ms(100)));
    drain(&mut s, ms(235));
    s
}

#[test]
fn reordering_within_the_reordering_window_is_not_a_loss() {
    let s = reordered(RecoveryMode::Linux);
    let st = s.stats();
    assert_eq!((st.segments_retransmitted, st.fast_recoveries, st.rto_count), (0, 0, 0));
    assert_eq!(s.ca_state(), CaState::Open);
    // Segment 12 was due at 100 + RACK.rtt 100 + reo_wnd 25 = 225 ms after it was sent... at
    // 230 ms RACK.rtt is 130 ms (the newest delivered segment, 17, was sent at 100 ms), so it
    // would be lost only at 255 ms; it arrived at 235 ms.
    // The duplicate-ACK threshold (RFC 6675 IsLost) calls the same reordering a loss.
    let prr = reordered(RecoveryMode::Prr);
    assert!(prr.stats().segments_retransmitted >= 1);
    assert_eq!(prr.stats().fast_recoveries, 1);
}

#[test]
fn rack_declares_a_loss_by_time_with_its_reordering_timer() {
    // Twelve segments: 10 and 11 go out at 100 ms; 11 is SACKed at 200 ms, 10 never arrives.
    let mut s = after_first_round(RecoveryMode::Linux, 12);
    assert_eq!(s.snd_nxt(), 12 * M);
    let _ = s.on_ack(ms(200), &ack(10, &[(11, 12)], ms(100)));
    assert!(drain(&mut s, ms(200)).is_empty());
    assert_eq!(s.ca_state(), CaState::Disorder);
    // One SACKed segment: below DupThresh, so the reordering window is min_rtt/4 = 25 ms and
    // segment 10 is lost at 100 + 100 + 25 = 225 ms — long before the RTO (400 ms).
    assert_eq!(s.poll_timeout(), Some(ms(225)));
    s.handle_timeout(ms(224));
    assert!(drain(&mut s, ms(224)).is_empty());
    s.handle_timeout(ms(225));
    let out = drain(&mut s, ms(225));
    assert_eq!(out.len(), 1);
    assert!(out[0].retransmit && out[0].seq == 10 * M);
    assert_eq!(s.ca_state(), CaState::Recovery);
    let _ = s.on_ack(ms(325), &ack(12, &[], ms(225)));
    assert_eq!(s.ca_state(), CaState::Open);
    assert_eq!((s.stats().rto_count, s.stats().tlp_probes), (0, 0));
    // Without RACK the same loss waits for the retransmission timer.
    let mut p = after_first_round(RecoveryMode::Prr, 12);
    let _ = p.on_ack(ms(200), &ack(10, &[(11, 12)], ms(100)));
    assert_eq!(p.poll_timeout(), Some(ms(400)));
}

#[test]
fn a_tail_loss_is_repaired_by_a_probe_not_a_timeout() {
    // Ten segments at 0 ms; 7, 8 and 9 (the tail) are lost; 0..7 are acknowledged at 100 ms.
    let mut s = sender(RecoveryMode::Linux, 10);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    let _ = s.on_ack(ms(100), &ack(7, &[], ms(0)));
    assert!(drain(&mut s, ms(100)).is_empty());
    // PTO = 2·SRTT = 200 ms after the ACK, before the RTO (100 + 300 ms).
    assert_eq!(s.poll_timeout(), Some(ms(300)));
    s.handle_timeout(ms(300));
    let probe = drain(&mut s, ms(300));
    assert_eq!(probe.len(), 1, "one probe");
    assert!(probe[0].retransmit && probe[0].seq == 9 * M, "no new data: the last segment again");
    assert_eq!(s.stats().tlp_probes, 1);
    // The probe's SACK lets RACK declare 7 and 8 lost (sent at 0 ms, due at 0 + 100 + 25 ms):
    // fast recovery retransmits them.
    let _ = s.on_ack(ms(400), &ack(7, &[(9, 10)], ms(300)));
    assert_eq!(s.ca_state(), CaState::Recovery);
    let rtx: Vec<u64> = drain(&mut s, ms(400)).iter().map(|d| d.seq / M).collect();
    assert_eq!(rtx, vec![7, 8]);
    let _ = s.on_ack(ms(500), &ack(10, &[], ms(400)));
    assert!(s.is_complete());
    let st = s.stats();
    assert_eq!((st.rto_count, st.fast_recoveries, st.tlp_probes), (0, 1, 1));
    // Without TLP the tail waits for the RTO.
    let mut p = sender(RecoveryMode::Prr, 10);
    drain(&mut p, ms(0));
    let _ = p.on_ack(ms(100), &ack(7, &[], ms(0)));
    assert_eq!(p.poll_timeout(), Some(ms(400)));
    p.handle_timeout(ms(400));
    assert_eq!(p.stats().rto_count, 1);
}

#[test]
fn one_segment_in_flight_waits_for_a_delayed_ack_too() {
    // RFC 8985 §7.2: PTO = 2·SRTT + WCDelAckT (200 ms) with one segment in flight, but never
    // later than the RTO.
    let mut s = sender(RecoveryMode::Linux, 11);
    drain(&mut s, ms(0));
    let _ = s.on_ack(ms(100), &ack(10, &[], ms(0)));
    assert_eq!(drain(&mut s, ms(100)).len(), 1);
    // 100 + 200 + 200 = 500 ms would be after the RTO at 100 + 300 ms.
    assert_eq!(s.poll_timeout(), Some(ms(400)));
}

/// Ten segments at 0 ms, 0..7 acknowledged at 100 ms (SRTT 100 ms), the probe at 300 ms:
/// segment 9 again (no new data).
fn probed() -> Sender {
    let mut s = sender(RecoveryMode::Linux, 10);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    let _ = s.on_ack(ms(100), &ack(7, &[], ms(0)));
    s.handle_timeout(ms(300));
    let probe = drain(&mut s, ms(300));
    assert!(probe.len() == 1 && probe[0].retransmit && probe[0].seq == 9 * M);
    s
}

#[test]
fn a_probe_whose_original_was_only_delayed_cuts_no_window() {
    // RFC 8985 §7.4.2 (Linux's tcp_process_tlp_ack): 7, 8 and 9 were only queued. Their ACK
    // reaches TLP.end_seq; then the probe, a duplicate, is reported by a D-SACK.
    let mut s = probed();
    let cwnd = s.cwnd().cwnd_bytes;
    let _ = s.on_ack(ms(310), &ack(10, &[], ms(0)));
    assert_eq!(s.ca_state(), CaState::Open, "an ACK at TLP.end_seq decides nothing yet");
    let _ = s.on_ack(ms(320), &ack(10, &[(9, 10)], ms(300)));
    assert_eq!(s.ca_state(), CaState::Open);
    assert!(s.cwnd().cwnd_bytes >= cwnd, "no reduction: {} < {cwnd}", s.cwnd().cwnd_bytes);
    assert_eq!(s.stats().dsacks_received, 1);
    // The episode is over: new data, lost at its tail, gets a probe of its own.
    s.app_write(5 * M);
    assert_eq!(drain(&mut s, ms(320)).len(), 5);
    let due = s.poll_timeout().expect("a timer for the new data");
    s.handle_timeout(due);
    assert_eq!(drain(&mut s, due).len(), 1);
    assert_eq!((s.stats().tlp_probes, s.stats().rto_count), (2, 0));
}

#[test]
fn a_probe_that_repaired_a_loss_cuts_the_window_once() {
    // Segment 9 was lost; 7 and 8 arrive; the probe repairs 9: the ACK reaches TLP.end_seq
    // with no D-SACK. The next ACK, beyond it, says the probe repaired a loss: CWR.
    let mut s = probed();
    let _ = s.on_ack(ms(400), &ack(10, &[], ms(300)));
    assert_eq!(s.ca_state(), CaState::Open);
    s.app_write(10 * M);
    let sent = drain(&mut s, ms(400)).len() as u64;
    assert!(sent > 0);
    let _ = s.on_ack(ms(500), &ack(11, &[], ms(400)));
    assert_eq!(s.ca_state(), CaState::Cwr);
    // A pure duplicate ACK at TLP.end_seq would have ended it without loss.
    let mut d = probed();
    let _ = d.on_ack(ms(310), &ack(7, &[(7, 10)], ms(0)));
    let _ = d.on_ack(ms(400), &ack(10, &[], ms(300)));
    let _ = d.on_ack(ms(410), &ack(10, &[], ms(300)));
    d.app_write(10 * M);
    drain(&mut d, ms(410));
    let _ = d.on_ack(ms(500), &ack(11, &[], ms(410)));
    assert_eq!(d.ca_state(), CaState::Open);
}

#[test]
fn a_timeout_marks_lost_only_what_was_sent_a_rack_rtt_ago() {
    // RFC 8985 §6.3 (Linux's tcp_timeout_mark_lost). Ten segments at 0 ms; 0..5 acknowledged at
    // 100 ms (RACK.rtt 100 ms); 5..9 are lost, and so is the probe at 300 ms. Two new segments
    // go out 50 ms before the timeout: they are not presumed lost when it fires.
    let run = |mode: RecoveryMode| {
        let mut s = sender(mode, 10);
        assert_eq!(drain(&mut s, ms(0)).len(), 10);
        let _ = s.on_ack(ms(100), &ack(5, &[], ms(0)));
        let mut now = ms(100);
        let mut wrote = false;
        while s.stats().rto_count == 0 {
            let due = s.poll_timeout().expect("a timer is armed");
            // Linux's sender probes first (one tail loss probe); the next timer is the RTO.
            if !wrote && s.stats().tlp_probes == u64::from(mode == RecoveryMode::Linux) {
                // 50 ms before the retransmission timer.
                now = SimTime(due.0 - 50_000_000);
                s.app_write(2 * M);
                assert_eq!(drain(&mut s, now).len(), 2);
                wrote = true;
                continue;
            }
            now = due;
            s.handle_timeout(now);
            let _ = drain(&mut s, now);
        }
        (s.stats().bytes_marked_lost / M, wrote)
    };
    assert_eq!(run(RecoveryMode::Linux), (5, true), "5..9 lost; 10 and 11, sent 50 ms ago, in flight");
    assert_eq!(run(RecoveryMode::Prr), (7, true), "without RACK, everything outstanding");
}
