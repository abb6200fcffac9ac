//! RACK-TLP's timeout rules in the `linux` recovery mode, in explicit time: the RTO armed from
//! the oldest outstanding segment's transmission (RFC 8985 §6.3, §7.2 and §8; Linux's
//! `tcp_rearm_rto` with `tcp_rto_delta_us`), what a timeout marks lost (§6.3
//! RACK_mark_losses_on_RTO; Linux's `tcp_timeout_mark_lost`), and the end of a tail loss probe
//! episode (§7.4.2 TLP_process_ack; Linux's `tcp_process_tlp_ack`): a probe D-SACKed as a
//! duplicate costs no window.
//!
//! Every sender here has SRTT 100 ms from its first round, so its RTO (RFC 6298, the harness's
//! default rule) is 100 + 4·50 = 300 ms and its PTO 2·SRTT = 200 ms.

mod support;

use ccarena_cc::{CaState, SimTime};
use ccarena_transport::{AckSegment, RecoveryMode, Sender};
use support::*;

const M: u64 = MSS as u64;

fn linux_sender(segments: u64) -> Sender {
    let mode = RecoveryMode::Linux;
    let mut s = Sender::new(sender_cfg(mode), controller_for(mode), SimTime::ZERO);
    s.app_write(segments * M);
    s
}

/// Cumulative ACK of segment `una`, SACKing segments `[a, b)`, echoing `ts`.
fn ack(una: u64, sack: &[(u64, u64)], ts: SimTime) -> AckSegment {
    let blocks: Vec<(u64, u64)> = sack.iter().map(|&(a, b)| (a * M, b * M)).collect();
    ack_seg(una * M, &blocks, ts)
}

/// Ten segments sent at 0 ms; at 100 ms the ACK of the first `acked` (RTT 100 ms).
fn first_round(acked: u64) -> Sender {
    let mut s = linux_sender(10);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    let _ = s.on_ack(ms(100), &ack(acked, &[], ms(0)));
    assert!(drain(&mut s, ms(100)).is_empty());
    assert_eq!(s.rto(), ccarena_cc::Duration::from_millis(300));
    s
}

#[test]
fn new_data_caps_the_probe_timer_at_one_rto_after_the_oldest_segment_was_sent() {
    // Segments 7..9 (sent at 0 ms) are outstanding after the ACK at 100 ms: PTO at
    // 100 + 200 = 300 ms, the ACK's RTO at 100 + 300 = 400 ms.
    let mut s = first_round(7);
    assert_eq!(s.poll_timeout(), Some(ms(300)));
    // New data at 150 ms. The RTO is re-armed from segment 7's transmission: 0 + 300 = 300 ms,
    // and caps the PTO (150 + 200 = 350 ms) there. Armed from the last ACK, as RFC 6298 §5.3,
    // it would stay at 400 ms and the PTO at 350 ms.
    s.app_write(M);
    assert_eq!(drain(&mut s, ms(150)).len(), 1);
    assert_eq!(s.poll_timeout(), Some(ms(300)));
    // At 300 ms the capped PTO stands in for the RTO (one timer, §8): a probe, not a timeout.
    s.handle_timeout(ms(300));
    let probe = drain(&mut s, ms(300));
    assert_eq!(probe.len(), 1);
    assert!(probe[0].retransmit && probe[0].seq == 10 * M, "the last segment again");
    assert_eq!((s.stats().tlp_probes, s.stats().rto_count), (1, 0));
    // The probe re-arms the RTO from its own transmission (§7.3): 300 + 300 = 600 ms.
    assert_eq!(s.poll_timeout(), Some(ms(600)));
}

#[test]
fn with_a_probe_in_flight_the_timeout_comes_one_pto_after_new_data_not_one_rto() {
    // Segments 7..9 lost. PTO at 300 ms: probe (segment 9 again), RTO re-armed to 600 ms.
    let mut s = first_round(7);
    s.handle_timeout(ms(300));
    assert_eq!(drain(&mut s, ms(300)).len(), 1);
    assert_eq!(s.poll_timeout(), Some(ms(600)));
    // New data at 350 ms, the probe still unanswered. Segment 7 was sent 350 ms ago, more than
    // an RTO: the PTO armed for the new segment is not capped by it (350 + 200 = 550 ms).
    s.app_write(M);
    assert_eq!(drain(&mut s, ms(350)).len(), 1);
    assert_eq!(s.poll_timeout(), Some(ms(550)));
    // At 550 ms no second probe may go out (§7.3: one in flight); the RTO is re-armed from
    // segment 7's transmission, 0 + 300 ms, already past: the timeout fires at once.
    s.handle_timeout(ms(550));
    assert_eq!(s.stats().tlp_probes, 1);
    assert_eq!(s.stats().rto_count, 1, "timeout at 550 ms, not at the probe's 600 ms");
    assert_eq!(s.ca_state(), CaState::Loss);
}

#[test]
fn a_timeout_marks_the_head_and_only_segments_older_than_rack_rtt() {
    // Segments 2..9 outstanding after the ACK at 100 ms (RACK.rtt 100 ms); the probe (segment
    // 9 again) at 300 ms; one more segment, 10, at 550 ms; everything lost.
    let mut s = first_round(2);
    s.handle_timeout(ms(300));
    assert_eq!(drain(&mut s, ms(300)).len(), 1);
    s.app_write(M);
    assert_eq!(drain(&mut s, ms(550)).len(), 1);
    assert_eq!(s.poll_timeout(), Some(ms(600)));
    s.handle_timeout(ms(600));
    assert_eq!(s.stats().rto_count, 1);
    // §6.3 at 600 ms, reo_wnd 0 (no reordering seen): the head (segment 2) and every segment
    // sent at or before 600 − 100 = 500 ms are lost: 2..8 (0 ms) and the probe's copy of 9
    // (300 ms). Segment 10, sent 50 ms ago, may still be in flight: not marked, still in pipe.
    assert_eq!(s.pending_retransmit_bytes(), 8 * M);
    assert_eq!(s.in_flight_bytes(), M);
    // cwnd is one MSS and segment 10 fills it: only the forced retransmission of the head.
    let out = drain(&mut s, ms(600));
    assert_eq!(out.len(), 1);
    assert!(out[0].retransmit && out[0].seq == 2 * M);
    // The head's retransmission re-arms the RTO from now, backed off: 600 + 600 ms.
    assert_eq!(s.poll_timeout(), Some(ms(1200)));
    // Its ACK at 700 ms makes RACK.xmit_ts 600 ms: segment 10, sent before it and due at
    // 550 + 100 ms, is now lost by RACK's ordinary rule (§6.2).
    let _ = s.on_ack(ms(700), &ack(3, &[], ms(600)));
    assert_eq!(s.pending_retransmit_bytes(), 8 * M, "3..9 and 10");
    assert_eq!(s.in_flight_bytes(), 0);
}

#[test]
fn without_rack_a_timeout_marks_everything_outstanding() {
    // The same as above in the `prr` mode (RFC 6298 §5.4 go-back-N; no probes, so the timer
    // runs from the ACK at 100 ms, fires at 400 ms, and everything was sent by then).
    let mode = RecoveryMode::Prr;
    let mut s = Sender::new(sender_cfg(mode), controller_for(mode), SimTime::ZERO);
    s.app_write(10 * M);
    drain(&mut s, ms(0));
    let _ = s.on_ack(ms(100), &ack(2, &[], ms(0)));
    s.app_write(M);
    assert_eq!(drain(&mut s, ms(350)).len(), 1);
    assert_eq!(s.poll_timeout(), Some(ms(400)));
    s.handle_timeout(ms(400));
    assert_eq!(s.pending_retransmit_bytes(), 9 * M, "segment 10, sent 50 ms ago, too");
}

/// The tail: segments 0..8 ACKed at 100 ms, segment 9's ACK lost. PTO at
/// min(100 + 200 + 200 (one segment in flight: §7.2 WCDelAckT), RTO 400) = 400 ms: segment 9
/// is probed at 400 ms. Returns the sender after the probe.
fn probed_tail() -> Sender {
    let mut s = first_round(9);
    assert_eq!(s.poll_timeout(), Some(ms(400)));
    s.handle_timeout(ms(400));
    let probe = drain(&mut s, ms(400));
    assert_eq!(probe.len(), 1);
    assert!(probe[0].retransmit && probe[0].seq == 9 * M);
    assert_eq!(s.stats().rto_count, 0);
    s
}

#[test]
fn a_probe_dsacked_as_a_duplicate_costs_no_window() {
    let mut s = probed_tail();
    let (cwnd, ssthresh) = (s.cwnd().cwnd_bytes, s.cwnd().ssthresh_bytes);
    // 450 ms: the ACK of segment 9 reaches TLP.end_seq exactly. It cannot tell whether the
    // original or the probe arrived, so the episode stays open (§7.4.2): no response yet.
    let _ = s.on_ack(ms(450), &ack(10, &[], ms(0)));
    assert_eq!(s.ca_state(), CaState::Open);
    // 500 ms: the probe arrives as a duplicate and is D-SACKed (RFC 2883: a block below the
    // cumulative ACK). Case 1 of §7.4.2: the probe repaired nothing, the episode ends.
    let _ = s.on_ack(ms(500), &ack(10, &[(9, 10)], ms(400)));
    assert_eq!(s.stats().dsacks_received, 1);
    // A later ACK beyond TLP.end_seq finds no episode open: the window was never cut.
    s.app_write(M);
    drain(&mut s, ms(500));
    let _ = s.on_ack(ms(600), &ack(11, &[], ms(500)));
    assert_eq!(s.ca_state(), CaState::Open);
    assert_eq!(s.cwnd().ssthresh_bytes, ssthresh);
    assert!(s.cwnd().cwnd_bytes >= cwnd);
}

#[test]
fn a_probe_that_repaired_the_tail_cuts_the_window_once_the_ack_goes_beyond_it() {
    let mut s = probed_tail();
    let ssthresh = s.cwnd().ssthresh_bytes;
    // The original segment 9 was lost; the probe repaired it: the ACK at TLP.end_seq echoes
    // the probe. Still ambiguous without a D-SACK: no response yet.
    let _ = s.on_ack(ms(500), &ack(10, &[], ms(400)));
    assert_eq!((s.ca_state(), s.cwnd().ssthresh_bytes), (CaState::Open, ssthresh));
    // No D-SACK came; an ACK beyond TLP.end_seq means the probe repaired a loss: one window
    // reduction (CWR), as for any loss (§7.4.2).
    s.app_write(M);
    drain(&mut s, ms(500));
    let _ = s.on_ack(ms(600), &ack(11, &[], ms(500)));
    assert_eq!(s.ca_state(), CaState::Cwr);
    assert!(s.cwnd().ssthresh_bytes < ssthresh);
}
