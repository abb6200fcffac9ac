//! Linux's host rules, in explicit time: the RTO rule of `tcp_rtt_estimator`/`tcp_set_rto`
//! (net/ipv4/tcp_input.c; `RtoRule::Linux`) against RFC 6298's, and the receiver's quick-ACK
//! mode at connection start and after idle (`tcp_event_data_recv`, `tcp_incr_quickack`,
//! `tcp_dec_quickack_mode`; `Receiver::set_quickack`).
//!
//! Measured on this machine (Linux 6.18, two network namespaces over a veth pair at 20 Mbit/s,
//! a 40–60 KB transfer to a receiver that does not read yet, tcpdump at the receiver): with the
//! default tcp_rmem (128 KB) the first 21 data segments were each ACKed at once, then none until
//! the delayed-ACK timer; with tcp_rmem 64 KB, 13; with 256 KB, 25. Linux's grant at the first
//! data is `min(16, rcv_wnd / (2·rcv_mss))` (16 for the default 64 KB initial window, fewer
//! for a smaller one), and `tcp_grow_window` adds one quick ACK per segment while it raises
//! `rcv_ssthresh` — the receive-window autotuning `Receiver::set_rcvbuf_autotuning` models
//! (tests/rcvbuf_autotuning.rs); without it a `quickack_segments` of 16 is the grant alone.

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::rtt::{RtoRule, RttEstimator};
use ccarena_transport::{DataSegment, Receiver, ReceiverConfig, RecoveryMode, Sender};
use crate::support::*;

const M: u64 = MSS as u64;

fn msd(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

/// min RTO 200 ms, initial 1 s, max 60 s, G 1 ms (Linux's values).
fn estimator(rule: RtoRule) -> RttEstimator {
    RttEstimator::new(msd(200), msd(1000), msd(60_000), msd(1)).with_rule(rule)
}

#[test]
fn steady_40ms_path_linux_rto_is_srtt_plus_min_rto() {
    // Linux: rttvar ≥ tcp_rto_min, so RTO = 40 + 200 = 240 ms however steady the RTT.
    // RFC 6298: max(200, 40 + max(G, 4·RTTVAR)) = 200 ms once RTTVAR has decayed.
    let (mut linux, mut rfc) = (estimator(RtoRule::Linux), estimator(RtoRule::Rfc6298));
    for k in 0..100u64 {
        // One sample per round: snd.una passes the previous sample's snd.nxt every time.
        linux.on_sample_at(msd(40), k * M, (k + 1) * M);
        rfc.on_sample_at(msd(40), k * M, (k + 1) * M);
    }
    assert_eq!(linux.rto(), msd(240));
    assert_eq!(rfc.rto(), msd(200));
    // Without sequence numbers every sample ends a round: the same steady state.
    let mut plain = estimator(RtoRule::Linux);
    plain.on_sample(msd(440));
    for _ in 0..100 {
        plain.on_sample(msd(40));
    }
    // rttvar is back at min_rto; SRTT is still a few hundred ns above 40 ms (integer EWMA).
    assert!(plain.rto().0.abs_diff(msd(240).0) < 1_000, "{:?}", plain.rto());
    // Both report RFC 6298's RTTVAR (tcp_info's rttvar is mdev/4), decayed to zero here.
    assert_eq!(linux.rttvar(), Some(Duration::ZERO));
    assert_eq!(linux.srtt(), Some(msd(40)));
}

#[test]
fn first_sample_linux_rto_is_srtt_plus_max_of_2r_and_min_rto() {
    // R = 40 ms: mdev = 80 ms < 200 ms → RTO 240 ms. R = 150 ms: mdev = 300 ms → RTO 450 ms
    // (= 3R, as RFC 6298's R + 4·R/2).
    let mut e = estimator(RtoRule::Linux);
    e.on_sample_at(msd(40), 0, 0);
    assert_eq!(e.rto(), msd(240));
    let mut e = estimator(RtoRule::Linux);
    e.on_sample_at(msd(150), 0, 0);
    assert_eq!(e.rto(), msd(450));
}

#[test]
fn rtt_jump_raises_rttvar_at_once_then_it_decays_a_quarter_per_round() {
    let mut e = estimator(RtoRule::Linux);
    // Round 1 ends when snd.una passes 10.
    e.on_sample_at(msd(40), 0, 10); // SRTT 40, mdev 80, rttvar 200 → RTO 240
    assert_eq!(e.rto(), msd(240));
    // Same round (una 5 ≤ 10), R = 440: err 400, mdev = 80 + (400 − 20) = 460 > mdev_max 200
    // → rttvar 460; SRTT = 40 + 50 = 90 → RTO 550 (RFC 6298 gives the same, 90 + 4·115).
    e.on_sample_at(msd(440), 5, 20);
    assert_eq!(e.rto(), msd(550));
    // Round ends (una 15 > 10), R = 90 = SRTT: mdev = 460 − 115 = 345; mdev_max (460) is not
    // below rttvar (460): no decay; a new round to 30 starts with mdev_max = 200.
    e.on_sample_at(msd(90), 15, 30);
    assert_eq!(e.rto(), msd(550), "RFC 6298 would already give 90 + 345 = 435");
    // Round ends (una 35 > 30), R = 90: mdev = 345 − 86.25 = 258.75 > mdev_max 200 →
    // mdev_max 258.75; decay rttvar by (460 − 258.75)/4 = 50.3125 → 409.6875 → RTO 499.6875.
    e.on_sample_at(msd(90), 35, 40);
    assert_eq!(e.rto(), us(499_687) + Duration(500));
    // Same round (una 38 ≤ 40): mdev → 194.0625, below mdev_max 200; no decay.
    e.on_sample_at(msd(90), 38, 45);
    assert_eq!(e.rto(), us(499_687) + Duration(500));
    // Round ends (una 45 > 40): rttvar −= (409.6875 − 200)/4 → 357.265625 → RTO 447.265625.
    e.on_sample_at(msd(90), 45, 50);
    assert_eq!(e.rto(), us(447_265) + Duration(625));
    assert_eq!(e.rttvar(), Some(Duration(145_546_875 / 4)));
}

#[test]
fn a_falling_rtt_moves_mdev_by_an_eighth_of_the_rfc_step() {
    // R1 = 100: SRTT 100, mdev 200 (RTTVAR 50), rttvar max(200, 200) = 200.
    // R2 = 20: err −80, step = 80 − 50 = 30 > 0 and the RTT fell → 30/8 = 3.75:
    // mdev 203.75 (RTTVAR 50.9375; RFC 6298: 57.5), SRTT 90, rttvar 203.75 → RTO 293.75.
    let mut e = estimator(RtoRule::Linux);
    e.on_sample_at(msd(100), 0, 10);
    e.on_sample_at(msd(20), 0, 10);
    assert_eq!(e.rttvar(), Some(us(50_937) + Duration(500)));
    assert_eq!(e.srtt(), Some(msd(90)));
    assert_eq!(e.rto(), us(293_750));
    let mut r = estimator(RtoRule::Rfc6298);
    r.on_sample(msd(100));
    r.on_sample(msd(20));
    assert_eq!((r.rttvar(), r.rto()), (Some(us(57_500)), msd(320)));
}

#[test]
fn linux_backoff_doubles_and_a_sample_resets_it() {
    let mut e = estimator(RtoRule::Linux);
    e.on_sample_at(msd(40), 0, 0);
    e.backoff();
    e.backoff();
    assert_eq!(e.rto(), msd(960));
    e.on_sample_at(msd(40), 1, 1);
    assert_eq!(e.rto(), msd(240));
}

#[test]
fn sender_arms_the_linux_rto_from_the_send_and_rearms_it_from_the_ack() {
    let rto_after = |rule: RtoRule| {
        let mut s = Sender::new(sender_cfg(RecoveryMode::Sack), controller_for(RecoveryMode::Sack), SimTime::ZERO);
        s.set_rto_rule(rule);
        s.on_handshake_rtt(msd(40), SimTime::ZERO);
        s.app_write(2 * M);
        let segs = drain(&mut s, SimTime::ZERO);
        let armed = s.poll_timeout();
        // The first segment's ACK at 40 ms re-arms the timer from the ACK (RFC 6298 §5.3,
        // Linux's tcp_rearm_rto); the new 40 ms sample leaves both RTOs where they were.
        let _ = s.on_ack(ms(40), &ack_seg(segs[0].end(), &[], segs[0].ts_val));
        (armed, s.poll_timeout())
    };
    assert_eq!(rto_after(RtoRule::Linux), (Some(ms(240)), Some(ms(280))));
    assert_eq!(rto_after(RtoRule::Rfc6298), (Some(ms(200)), Some(ms(240))));
}

/// Full-sized segment `n`, arriving at `n` ms.
fn seg(n: u64) -> DataSegment {
    DataSegment { seq: n * M, len: MSS, ts_val: ms(n), ecn: ccarena_transport::Ecn::NotEct, cwr: false, retransmit: false }
}

/// Deliver segments `from..to`, segment n at `at(n)`; the numbers of those ACKed at once.
fn immediately_acked(r: &mut Receiver, from: u64, to: u64, at: impl Fn(u64) -> SimTime) -> Vec<u64> {
    (from..to)
        .filter(|&n| {
            let _ = r.on_segment(at(n), &seg(n));
            r.poll_ack(at(n)).is_some()
        })
        .collect()
}

#[test]
fn quickack_acks_the_first_16_segments_at_once_then_every_second() {
    let mut r = Receiver::new(receiver_cfg());
    r.set_quickack(16, None);
    let acked = immediately_acked(&mut r, 0, 24, ms);
    let mut want: Vec<u64> = (0..16).collect();
    want.extend([17, 19, 21, 23]);
    assert_eq!(acked, want);
    assert_eq!(r.quickacks_left(), 0);
}

#[test]
fn without_quickack_the_first_segment_waits_for_the_delayed_ack() {
    let mut r = Receiver::new(receiver_cfg());
    r.set_quickack(0, Some(msd(200)));
    let _ = r.on_segment(ms(0), &seg(0));
    assert!(r.poll_ack(ms(0)).is_none());
    assert_eq!(r.poll_timeout(), Some(ms(40)), "a 1-segment flow waits 40 ms (RFC 5681 §4.2)");
}

#[test]
fn quickack_is_granted_again_after_an_idle_gap_longer_than_the_threshold() {
    let mut r = Receiver::new(receiver_cfg());
    r.set_quickack(4, Some(msd(200)));
    assert_eq!(immediately_acked(&mut r, 0, 6, ms), vec![0, 1, 2, 3, 5]);
    // 150 ms of silence (under the threshold): no new grant; 2 segments, 1 ACK.
    assert_eq!(immediately_acked(&mut r, 6, 8, |n| ms(150 + n)), vec![7]);
    // 300 ms of silence: 4 quick ACKs again.
    assert_eq!(immediately_acked(&mut r, 8, 14, |n| ms(500 + n)), vec![8, 9, 10, 11, 13]);
}

#[test]
fn quickack_grant_is_bounded_by_half_the_receive_buffer_in_segments() {
    // Linux: min(16, rcv_wnd / (2·rcv_mss)); a 6-segment buffer grants 3.
    let mut r = Receiver::new(ReceiverConfig { rcvbuf_bytes: Some(6 * M), ..receiver_cfg() });
    r.set_quickack(16, None);
    assert_eq!(immediately_acked(&mut r, 0, 6, ms), vec![0, 1, 2, 4]);
}

#[test]
fn a_short_in_order_segment_is_acked_at_once_when_asked() {
    // Linux's pushed ACK (tcp_measure_rcv_mss + tcp_cleanup_rbuf): the short tail of a transfer
    // does not wait the 40 ms delayed ACK. Off (RFC 5681), it waits.
    let tail = DataSegment { len: MSS / 2, ..seg(0) };
    for (on, want) in [(true, true), (false, false)] {
        let mut r = Receiver::new(receiver_cfg());
        r.set_ack_short_segments(on);
        let _ = r.on_segment(ms(0), &tail);
        assert_eq!(r.poll_ack(ms(0)).is_some(), want, "on = {on}");
    }
    // A full-sized segment still follows the every-second-segment rule.
    let mut r = Receiver::new(receiver_cfg());
    r.set_ack_short_segments(true);
    let _ = r.on_segment(ms(0), &seg(0));
    assert!(r.poll_ack(ms(0)).is_none());
}
