//! Receiver behaviour: delayed ACKs, immediate ACKs, SACK block order (RFC 2018 §4), timestamp
//! echo (RFC 7323 §4.3), ECN echo (RFC 3168 §6.1.3), duplicate accounting.

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::{AckSegment, DataSegment, Receiver, ReceiverConfig, SackBlock};
use crate::support::*;

const M: u64 = MSS as u64;

/// Segment number `n` (full-sized), sent at `n` ms.
fn seg(n: u64) -> DataSegment {
    DataSegment {
        seq: n * M,
        len: MSS,
        ts_val: ms(n),
        ecn: ccarena_transport::Ecn::NotEct,
        cwr: false,
        retransmit: false,
    }
}

fn blocks(a: &AckSegment) -> Vec<(u64, u64)> {
    a.sack_blocks()
        .iter()
        .map(|b: &SackBlock| (b.start / M, b.end / M))
        .collect()
}

#[test]
fn acks_every_second_full_segment() {
    let mut r = Receiver::new(receiver_cfg());
    assert_eq!(r.on_segment(ms(10), &seg(0)), M);
    assert_eq!(r.poll_ack(ms(10)), None, "first segment: delayed");
    assert_eq!(r.poll_timeout(), Some(ms(50)), "40 ms delayed-ACK timer");
    assert_eq!(r.on_segment(ms(11), &seg(1)), M);
    let a = r.poll_ack(ms(11)).expect("second full segment: ACK now");
    assert_eq!(a.ack, 2 * M);
    assert_eq!(a.sack_count, 0);
    // RFC 7323: the delayed ACK echoes the earliest unacknowledged segment's TSval.
    assert_eq!((a.ts_ecr, a.ts_recv), (ms(0), ms(10)));
    assert_eq!(r.poll_timeout(), None);
    assert_eq!(r.poll_ack(ms(11)), None, "nothing more to acknowledge");
    assert_eq!(r.stats().acks_sent, 1);
}

#[test]
fn delayed_ack_timer_fires_at_40ms() {
    let mut r = Receiver::new(receiver_cfg());
    let _ = r.on_segment(ms(5), &seg(0));
    assert_eq!(r.poll_timeout(), Some(ms(45)));
    r.handle_timeout(ms(44));
    assert_eq!(r.poll_ack(ms(44)), None, "not yet");
    r.handle_timeout(ms(45));
    let a = r.poll_ack(ms(45)).expect("timer fired");
    assert_eq!(a.ack, M);
    assert_eq!(r.poll_timeout(), None);
    // A late caller gets the ACK too (lazy timer).
    let _ = r.on_segment(ms(50), &seg(1));
    assert!(r.poll_ack(ms(200)).is_some());
}

#[test]
fn short_segments_count_bytes_towards_the_ack_threshold() {
    let mut r = Receiver::new(receiver_cfg());
    let half = |n: u64| DataSegment {
        seq: n * M / 2,
        len: MSS / 2,
        ..seg(0)
    };
    let _ = r.on_segment(ms(1), &half(0));
    let _ = r.on_segment(ms(2), &half(1));
    let _ = r.on_segment(ms(3), &half(2));
    assert_eq!(r.poll_ack(ms(3)), None, "1.5 MSS: below two full segments");
    let _ = r.on_segment(ms(4), &half(3));
    assert_eq!(r.poll_ack(ms(4)).unwrap().ack, 2 * M);
}

#[test]
fn immediate_ack_on_out_of_order_and_on_hole_fill() {
    let mut r = Receiver::new(receiver_cfg());
    let _ = r.on_segment(ms(1), &seg(0));
    let _ = r.on_segment(ms(2), &seg(1));
    r.poll_ack(ms(2)).unwrap();
    // Segment 2 lost; 3 arrives out of order: duplicate ACK at once, SACKing it. TS.Recent is
    // still segment 0's TSval: segment 1 arrived above Last.ACK.sent (0) and 3 is above 2·MSS.
    assert_eq!(r.on_segment(ms(4), &seg(3)), 0);
    let a = r
        .poll_ack(ms(4))
        .expect("immediate ACK for out-of-order data");
    assert_eq!(a.ack, 2 * M);
    assert_eq!(blocks(&a), vec![(3, 4)]);
    assert_eq!(a.ts_ecr, ms(0));
    assert_eq!(r.stats().out_of_order_segments, 1);
    // The hole is filled: ACK at once, covering 0..4, echoing the filling segment.
    assert_eq!(
        r.on_segment(
            ms(6),
            &DataSegment {
                ts_val: ms(5),
                ..seg(2)
            }
        ),
        2 * M
    );
    let a = r.poll_ack(ms(6)).expect("immediate ACK for a hole fill");
    assert_eq!(a.ack, 4 * M);
    assert_eq!(a.sack_count, 0);
    assert_eq!((a.ts_ecr, a.ts_recv), (ms(5), ms(6)));
}

#[test]
fn immediate_ack_on_partial_hole_fill() {
    let mut r = Receiver::new(receiver_cfg());
    let _ = r.on_segment(ms(1), &seg(0));
    let _ = r.poll_ack(ms(1));
    r.handle_timeout(ms(100));
    let _ = r.poll_ack(ms(100));
    let _ = r.on_segment(ms(101), &seg(3));
    r.poll_ack(ms(101)).unwrap();
    // Segment 1 fills the first part of the hole 1..3.
    assert_eq!(r.on_segment(ms(102), &seg(1)), M);
    let a = r.poll_ack(ms(102)).expect("ACK at once");
    assert_eq!((a.ack, blocks(&a)), (2 * M, vec![(3, 4)]));
}

#[test]
fn duplicate_segments_are_acked_at_once_and_counted() {
    let mut r = Receiver::new(receiver_cfg());
    let _ = r.on_segment(ms(1), &seg(0));
    let _ = r.on_segment(ms(2), &seg(1));
    let _ = r.poll_ack(ms(2));
    assert_eq!(r.on_segment(ms(3), &seg(0)), 0);
    assert_eq!(r.poll_ack(ms(3)).unwrap().ack, 2 * M);
    // A duplicate of out-of-order data too.
    let _ = r.on_segment(ms(4), &seg(5));
    let _ = r.poll_ack(ms(4));
    let _ = r.on_segment(ms(5), &seg(5));
    assert!(r.poll_ack(ms(5)).is_some());
    assert_eq!(r.stats().duplicate_bytes, 2 * M);
    assert_eq!(r.stats().segments_received, 5);
}

#[test]
fn sack_blocks_most_recent_first_at_most_three() {
    let mut r = Receiver::new(receiver_cfg());
    let _ = r.on_segment(ms(0), &seg(0));
    for n in [2, 4, 6, 8] {
        let _ = r.on_segment(ms(n), &seg(n));
        r.poll_ack(ms(n)).unwrap();
    }
    let mut last = None;
    let _ = r.on_segment(ms(10), &seg(8)); // duplicate inside [8, 9): reported first
    if let Some(a) = r.poll_ack(ms(10)) {
        last = Some(blocks(&a));
    }
    assert_eq!(
        last.unwrap(),
        vec![(8, 9), (6, 7), (4, 5)],
        "newest first, three at most"
    );
    // Segment 5 joins [4,5) and [6,7): the merged block leads, then the others by recency.
    let _ = r.on_segment(ms(11), &seg(5));
    let a = r.poll_ack(ms(11)).unwrap();
    assert_eq!(blocks(&a), vec![(4, 7), (8, 9), (2, 3)]);
    // Segment 2 again, then 3: [2,3) then [2,7) lead.
    let _ = r.on_segment(ms(12), &seg(2));
    assert_eq!(
        blocks(&r.poll_ack(ms(12)).unwrap()),
        vec![(2, 3), (4, 7), (8, 9)]
    );
    let _ = r.on_segment(ms(13), &seg(3));
    assert_eq!(blocks(&r.poll_ack(ms(13)).unwrap()), vec![(2, 7), (8, 9)]);
    // Segment 1 fills the first hole: 0..7 in order, only [8,9) left.
    assert_eq!(r.on_segment(ms(14), &seg(1)), 6 * M);
    let a = r.poll_ack(ms(14)).unwrap();
    assert_eq!((a.ack, blocks(&a)), (7 * M, vec![(8, 9)]));
    assert_eq!(
        r.out_of_order_ranges().collect::<Vec<_>>(),
        vec![(8 * M, 9 * M)]
    );
}

#[test]
fn no_delay_when_configured_off() {
    let cfg = ReceiverConfig {
        delayed_ack: Duration::ZERO,
        ..receiver_cfg()
    };
    let mut r = Receiver::new(cfg);
    let _ = r.on_segment(ms(1), &seg(0));
    assert_eq!(r.poll_ack(ms(1)).unwrap().ack, M);
    let cfg = ReceiverConfig {
        ack_every_segments: 1,
        ..receiver_cfg()
    };
    let mut r = Receiver::new(cfg);
    let _ = r.on_segment(ms(1), &seg(0));
    assert_eq!(r.poll_ack(ms(1)).unwrap().ack, M);
}

#[test]
fn ecn_echo_from_ce_until_cwr() {
    let cfg = ReceiverConfig {
        ecn: ccarena_transport::EcnMode::Classic,
        ..receiver_cfg()
    };
    let mut r = Receiver::new(cfg);
    let _ = r.on_segment(ms(1), &seg(0));
    let _ = r.on_segment(ms(2), &DataSegment { ecn: ccarena_transport::Ecn::Ce, ..seg(1) });
    let a = r.poll_ack(ms(2)).unwrap();
    assert!(a.ece);
    let _ = r.on_segment(ms(3), &DataSegment { ecn: ccarena_transport::Ecn::Ce, ..seg(2) });
    assert!(r.poll_ack(ms(3)).expect("CE: ACK at once").ece);
    let _ = r.on_segment(ms(4), &seg(3));
    let _ = r.on_segment(ms(5), &seg(4));
    assert!(r.poll_ack(ms(5)).unwrap().ece, "ECE persists until CWR");
    let _ = r.on_segment(
        ms(6),
        &DataSegment {
            cwr: true,
            ..seg(5)
        },
    );
    let _ = r.on_segment(ms(7), &seg(6));
    assert!(!r.poll_ack(ms(7)).unwrap().ece, "CWR seen: ECE off");
    assert_eq!(r.stats().ce_segments, 2);
    // Without ECN, CE is not echoed.
    let mut r = Receiver::new(receiver_cfg());
    let _ = r.on_segment(ms(1), &DataSegment { ecn: ccarena_transport::Ecn::Ce, ..seg(0) });
    let _ = r.on_segment(ms(2), &seg(1));
    assert!(!r.poll_ack(ms(2)).unwrap().ece);
}

#[test]
fn dctcp_echo_mirrors_ce_exactly_with_an_ack_on_each_state_change() {
    // RFC 8257 §3.2.
    let cfg = ReceiverConfig {
        ecn: ccarena_transport::EcnMode::Dctcp,
        ..receiver_cfg()
    };
    let mut r = Receiver::new(cfg);
    let ce = |i| DataSegment { ecn: ccarena_transport::Ecn::Ce, ..seg(i) };
    let _ = r.on_segment(ms(1), &seg(0));
    assert!(r.poll_ack(ms(1)).is_none(), "delayed");
    let _ = r.on_segment(ms(2), &seg(1));
    let a = r.poll_ack(ms(2)).unwrap();
    assert_eq!((a.ack, a.ece), (2 * M, false));
    // CE begins with nothing unacknowledged: no extra ACK, and the CE segment is delayed.
    let _ = r.on_segment(ms(3), &ce(2));
    assert!(r.poll_ack(ms(3)).is_none(), "CE itself does not force an ACK");
    let _ = r.on_segment(ms(4), &ce(3));
    let a = r.poll_ack(ms(4)).unwrap();
    assert_eq!((a.ack, a.ece), (4 * M, true));
    // One marked segment waiting, then an unmarked one: the marked one is acknowledged at once
    // with ECE, the unmarked one waits and is acknowledged without.
    let _ = r.on_segment(ms(5), &ce(4));
    let _ = r.on_segment(ms(6), &seg(5));
    let a = r.poll_ack(ms(6)).expect("state change: immediate ACK");
    assert_eq!((a.ack, a.ece), (5 * M, true));
    assert!(r.poll_ack(ms(6)).is_none(), "the unmarked segment is delayed");
    // CWR does not clear anything in DCTCP mode; a marked segment after one unmarked one.
    let _ = r.on_segment(ms(7), &DataSegment { cwr: true, ..ce(6) });
    let a = r.poll_ack(ms(7)).expect("state change again");
    assert_eq!((a.ack, a.ece), (6 * M, false));
    let _ = r.on_segment(ms(8), &ce(7));
    let a = r.poll_ack(ms(8)).unwrap();
    assert_eq!((a.ack, a.ece), (8 * M, true));
    assert_eq!(r.stats().ce_segments, 5);
}

#[test]
fn one_way_delay_stamp_is_the_echoed_segments_arrival() {
    let mut r = Receiver::new(receiver_cfg());
    let _ = r.on_segment(SimTime(7_000_000), &seg(0)); // sent at 0 ms, arrives at 7 ms
    let _ = r.on_segment(SimTime(9_000_000), &seg(1));
    let a = r.poll_ack(SimTime(9_000_000)).unwrap();
    assert_eq!(
        a.ts_recv.saturating_since(a.ts_ecr),
        Duration::from_millis(7)
    );
}

#[test]
fn receive_window_is_the_buffer_space_left_and_never_shrinks_from_the_right() {
    // RFC 9293 §3.8.6; a 10-segment buffer.
    let cfg = ReceiverConfig {
        rcvbuf_bytes: Some(10 * M),
        delayed_ack: Duration::ZERO,
        ..receiver_cfg()
    };
    let mut r = Receiver::new(cfg);
    assert_eq!(Receiver::new(receiver_cfg()).poll_ack(ms(0)), None);
    let _ = r.on_segment(ms(1), &seg(0));
    let a = r.poll_ack(ms(1)).unwrap();
    assert_eq!((a.ack, a.rwnd_bytes), (M, 10 * M), "in-order data is read at once");
    // Segments 2..=4 held above the hole at 1: three segments of the buffer in use, but the
    // right edge (11) stays where it was.
    for n in 2..=4 {
        let _ = r.on_segment(ms(n), &seg(n));
        let a = r.poll_ack(ms(n)).unwrap();
        assert_eq!((a.ack, a.ack + a.rwnd_bytes), (M, 11 * M));
    }
    // The hole fills: everything is read, the whole buffer is free again.
    let _ = r.on_segment(ms(5), &seg(1));
    let a = r.poll_ack(ms(5)).unwrap();
    assert_eq!((a.ack, a.rwnd_bytes), (5 * M, 10 * M));
    // A hole at 5 with 6..=8 held: the edge would be 5 + 10 − 3 = 12 < 15, so it stays at 15.
    for n in 6..=8 {
        let _ = r.on_segment(ms(n), &seg(n));
    }
    let a = r.poll_ack(ms(8)).unwrap();
    assert_eq!(a.ack + a.rwnd_bytes, 15 * M);
    // Without a buffer limit the window is unlimited.
    let mut u = Receiver::new(ReceiverConfig { delayed_ack: Duration::ZERO, ..receiver_cfg() });
    let _ = u.on_segment(ms(1), &seg(0));
    assert_eq!(u.poll_ack(ms(1)).unwrap().rwnd_bytes, u64::MAX);
}
