//! The QUIC data receiver in explicit simulated time: ACK generation (RFC 9000 §13.2.1–§13.2.2 and
//! draft-ietf-quic-ack-frequency §6.2–§6.3), ACK ranges and their cap, ECN counts (§13.4), flow
//! control credit (§4) and stream reassembly.

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::quic::{AckFrame, PnRange, QuicConfig, QuicPacket, QuicReceiver, MAX_ACK_RANGES};
use ccarena_transport::{Ecn, SenderEcn};

const PAYLOAD: u32 = 1000;

fn ms(v: u64) -> SimTime {
    SimTime(v * 1_000_000)
}

fn cfg() -> QuicConfig {
    QuicConfig::new(PAYLOAD)
}

/// Packet `pn` carrying the `pn`-th full payload of the stream.
fn pkt(pn: u64) -> QuicPacket {
    data(pn, pn * PAYLOAD as u64, PAYLOAD)
}

fn data(pn: u64, offset: u64, len: u32) -> QuicPacket {
    QuicPacket { pn, offset, len, sent_at: SimTime::ZERO, ecn: Ecn::NotEct, retransmit: false }
}

fn marked(pn: u64, ecn: Ecn) -> QuicPacket {
    QuicPacket { ecn, ..pkt(pn) }
}

/// The ranges as (smallest, largest) pairs, largest first.
fn ranges(a: &AckFrame) -> Vec<(u64, u64)> {
    a.ranges().iter().map(|r| (r.smallest, r.largest)).collect()
}

/// Deliver `p` at `now` and poll for an ACK at once, as the simulator does.
fn arrive(r: &mut QuicReceiver, now: SimTime, p: QuicPacket) -> Option<AckFrame> {
    r.on_packet(now, &p);
    r.poll_ack(now)
}

#[test]
fn acks_every_second_packet_not_the_first() {
    let mut r = QuicReceiver::new(cfg());
    assert!(arrive(&mut r, ms(0), pkt(0)).is_none(), "the first packet waits");
    let a = arrive(&mut r, ms(1), pkt(1)).expect("the second packet is acknowledged at once");
    assert_eq!(a.largest, 1);
    assert_eq!(ranges(&a), vec![(0, 1)]);
    assert_eq!(a.ack_delay, Duration::ZERO);
    assert_eq!(a.largest_received_at, ms(1));
    assert!(r.poll_ack(ms(1)).is_none(), "an ACK is returned once");
    assert!(r.poll_timeout().is_none(), "nothing left to acknowledge");
    assert!(arrive(&mut r, ms(2), pkt(2)).is_none());
    assert_eq!(arrive(&mut r, ms(3), pkt(3)).map(|a| ranges(&a)), Some(vec![(0, 3)]));
    assert_eq!(r.stats().acks_sent, 2);
}

#[test]
fn delayed_ack_fires_at_max_ack_delay_with_the_largest_packets_delay() {
    let mut c = cfg();
    c.ack_eliciting_threshold = 3;
    let mut r = QuicReceiver::new(c);
    assert!(arrive(&mut r, ms(10), pkt(0)).is_none());
    assert!(arrive(&mut r, ms(20), pkt(1)).is_none());
    // The timer runs from the first unacknowledged packet (RFC 9000 §13.2.1).
    assert_eq!(r.poll_timeout(), Some(ms(35)));
    r.handle_timeout(ms(34));
    assert!(r.poll_ack(ms(34)).is_none(), "not due before max_ack_delay");
    r.handle_timeout(ms(35));
    let a = r.poll_ack(ms(35)).expect("due at max_ack_delay");
    // The delay is from the largest acknowledged packet's arrival (§13.2.5).
    assert_eq!(a.ack_delay, Duration::from_millis(15));
    assert_eq!(a.largest_received_at, ms(20));
    assert_eq!(ranges(&a), vec![(0, 1)]);
    assert!(r.poll_timeout().is_none());
    assert!(r.poll_ack(ms(100)).is_none());
    // The ACK reset the count: two more packets are below the threshold again.
    assert!(arrive(&mut r, ms(40), pkt(2)).is_none());
    assert!(arrive(&mut r, ms(41), pkt(3)).is_none());
    assert!(arrive(&mut r, ms(42), pkt(4)).is_some());
}

#[test]
fn gap_and_gap_filling_packets_are_acknowledged_at_once_with_reordering_threshold_1() {
    let mut c = cfg();
    c.ack_eliciting_threshold = 10; // isolate the reordering rule
    c.reordering_threshold = 1;
    let mut r = QuicReceiver::new(c);
    assert!(arrive(&mut r, ms(0), pkt(0)).is_none());
    let a = arrive(&mut r, ms(1), pkt(2)).expect("a gap opens: ACK at once");
    assert_eq!(ranges(&a), vec![(2, 2), (0, 0)]);
    let a = arrive(&mut r, ms(2), pkt(1)).expect("a packet below the largest: ACK at once");
    assert_eq!(ranges(&a), vec![(0, 2)]);
    assert_eq!(a.largest, 2);
    assert_eq!(a.ack_delay, Duration::from_millis(1), "delay of the largest (2, at 1 ms)");
    assert!(arrive(&mut r, ms(3), pkt(3)).is_none(), "in order: no hurry");
    assert!(arrive(&mut r, ms(4), pkt(4)).is_none());
    assert!(arrive(&mut r, ms(5), pkt(6)).is_some(), "a new gap");
    // A first packet above 0 leaves a gap too.
    let mut r = QuicReceiver::new(c);
    assert!(arrive(&mut r, ms(0), pkt(1)).is_some());
}

#[test]
fn reordering_threshold_0_never_acks_at_once_for_reordering() {
    let mut c = cfg();
    c.ack_eliciting_threshold = 10;
    c.reordering_threshold = 0;
    let mut r = QuicReceiver::new(c);
    for (t, pn) in [0, 2, 1, 3, 4, 6, 9, 5].into_iter().enumerate() {
        assert!(arrive(&mut r, ms(t as u64), pkt(pn)).is_none(), "pn {pn}");
    }
    r.handle_timeout(ms(25));
    let a = r.poll_ack(ms(25)).expect("only the timer acknowledges");
    assert_eq!(ranges(&a), vec![(9, 9), (0, 6)]);
    assert_eq!(a.ack_delay, Duration::from_millis(25 - 6), "9 arrived at 6 ms");
}

/// The two examples of draft-ietf-quic-ack-frequency §6.2.1, packet by packet.
#[test]
fn reordering_threshold_above_1_follows_the_ack_frequency_draft() {
    let run = |n: u32, steps: &[(u64, bool)]| {
        let mut c = cfg();
        c.ack_eliciting_threshold = 100; // acknowledgements only due to reordering
        c.reordering_threshold = n;
        let mut r = QuicReceiver::new(c);
        for &(pn, want) in steps {
            let got = arrive(&mut r, ms(pn), pkt(pn)).is_some();
            assert_eq!(got, want, "threshold {n}, packet {pn}");
        }
        r
    };
    let mut r = run(3, &[(0, false), (1, false), (3, false), (4, false), (5, true), (8, false), (9, true), (10, true)]);
    // 2 is at most Largest Acked − 3 = 7: the sender has likely declared it lost; ACK at once.
    let a = arrive(&mut r, ms(11), pkt(2)).expect("late packet");
    assert_eq!(ranges(&a), vec![(8, 10), (0, 5)]);
    // 6 and 7 still missing; 11 comes in order, 11 − 6 ≥ 3 again but 6 and 7 are reported (≤ 10 − 3).
    assert!(arrive(&mut r, ms(12), pkt(11)).is_none());
    run(5, &[(0, false), (1, false), (3, false), (5, false), (6, false), (7, true), (8, false), (9, true)]);
}

#[test]
fn ack_eliciting_threshold_10_acks_every_tenth_packet() {
    let mut c = cfg();
    c.ack_eliciting_threshold = 10;
    let mut r = QuicReceiver::new(c);
    let acked: Vec<u64> = (0..30).filter(|&pn| arrive(&mut r, ms(pn), pkt(pn)).is_some()).collect();
    assert_eq!(acked, vec![9, 19, 29]);
}

#[test]
fn ranges_follow_losses() {
    let mut c = cfg();
    c.ack_eliciting_threshold = 100;
    c.reordering_threshold = 0;
    let mut r = QuicReceiver::new(c);
    for pn in [0, 1, 3, 4, 7] {
        r.on_packet(ms(1), &pkt(pn));
    }
    r.handle_timeout(ms(26));
    let a = r.poll_ack(ms(26)).unwrap();
    assert_eq!(a.largest, 7);
    assert_eq!(a.ranges(), &[
        PnRange { smallest: 7, largest: 7 },
        PnRange { smallest: 3, largest: 4 },
        PnRange { smallest: 0, largest: 1 }
    ]);
    assert_eq!(a.wire_bytes(), ccarena_transport::quic::ACK_PACKET_BASE_BYTES + 2 * 4);
}

#[test]
fn ranges_are_capped_at_32_keeping_the_newest() {
    let mut c = cfg();
    c.ack_eliciting_threshold = 1; // acknowledge every packet, so every range is reported
    let mut r = QuicReceiver::new(c);
    let mut last = None;
    for i in 0..=40 {
        last = arrive(&mut r, ms(i), data(2 * i, 0, 0));
    }
    let a = last.unwrap();
    assert_eq!(a.range_count as usize, MAX_ACK_RANGES);
    assert_eq!(a.ranges()[0], PnRange { smallest: 80, largest: 80 });
    assert_eq!(a.ranges()[MAX_ACK_RANGES - 1], PnRange { smallest: 18, largest: 18 });
    // A packet below the oldest range kept is refused (never acknowledged, data not taken).
    assert_eq!(r.on_packet(ms(50), &data(1, 0, PAYLOAD)), 0);
    assert_eq!(r.stats().discarded_packets, 1);
    assert!(r.poll_ack(ms(50)).is_none());
    assert_eq!(r.delivered_bytes(), 0);
    // One inside a gap between kept ranges is taken and merges.
    let a = arrive(&mut r, ms(51), data(19, 0, 0)).unwrap();
    assert_eq!(a.range_count as usize, MAX_ACK_RANGES - 1);
    assert_eq!(a.ranges().last(), Some(&PnRange { smallest: 18, largest: 20 }));
}

#[test]
fn acknowledged_ranges_hold_only_received_packets() {
    // Random order, loss and duplication: every ACK claims only packets received, always its
    // largest, and the stream comes out whole once the missing data is resent.
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut next = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        x >> 33
    };
    let mut c = cfg();
    c.ack_eliciting_threshold = 3;
    c.reordering_threshold = 2;
    let mut r = QuicReceiver::new(c);
    let mut got = std::collections::BTreeSet::new();
    let mut order: Vec<u64> = (0..400).collect();
    for i in (1..order.len()).rev() {
        let j = (next() % 6) as usize; // local reordering
        order.swap(i, i.saturating_sub(j));
    }
    let mut delivered = 0;
    let mut t = 0;
    let mut lost = Vec::new();
    for &pn in &order {
        t += 1;
        if next() % 10 == 0 {
            lost.push(pn);
            continue;
        }
        let copies = if next() % 15 == 0 { 2 } else { 1 };
        for _ in 0..copies {
            delivered += r.on_packet(ms(t), &pkt(pn));
            got.insert(pn);
            r.handle_timeout(ms(t));
            if let Some(a) = r.poll_ack(ms(t)) {
                assert_eq!(a.largest, *got.last().unwrap());
                for w in a.ranges().windows(2) {
                    assert!(w[0].smallest > w[1].largest + 1, "disjoint, not adjacent, descending");
                }
                for rg in a.ranges() {
                    assert!((rg.smallest..=rg.largest).all(|p| got.contains(&p)), "{rg:?} claims a packet not received");
                }
            }
        }
    }
    // The sender resends the lost data in new packets.
    for (k, &pn) in lost.iter().enumerate() {
        delivered += r.on_packet(ms(t + 1), &data(1000 + k as u64, pn * PAYLOAD as u64, PAYLOAD));
    }
    assert_eq!(delivered, 400 * PAYLOAD as u64);
    assert_eq!(r.delivered_bytes(), delivered);
    let s = r.stats();
    assert_eq!(s.duplicate_bytes, s.duplicate_packets * PAYLOAD as u64);
    assert_eq!(s.bytes_received - s.duplicate_bytes, delivered);
}

#[test]
fn ecn_counts_are_cumulative_and_ce_is_acknowledged_at_once() {
    let mut c = cfg();
    c.ecn = SenderEcn::L4s;
    let mut r = QuicReceiver::new(c);
    assert!(arrive(&mut r, ms(0), marked(0, Ecn::Ect1)).is_none());
    let a = arrive(&mut r, ms(1), marked(1, Ecn::Ect1)).unwrap();
    assert_eq!(a.ecn.map(|e| (e.ect0, e.ect1, e.ce)), Some((0, 2, 0)));
    let a = arrive(&mut r, ms(2), marked(2, Ecn::Ce)).expect("CE: ACK at once");
    assert_eq!(a.ecn.map(|e| (e.ect0, e.ect1, e.ce)), Some((0, 2, 1)), "a CE packet counts as CE only");
    assert!(arrive(&mut r, ms(3), marked(3, Ecn::Ce)).is_some(), "every CE packet (RFC 9000 §13.2.1)");
    assert!(arrive(&mut r, ms(4), marked(4, Ecn::Ect0)).is_none());
    // A duplicate changes no count (RFC 9000 §13.4.1) and elicits nothing.
    assert!(arrive(&mut r, ms(5), marked(3, Ecn::Ce)).is_none());
    let a = arrive(&mut r, ms(6), marked(5, Ecn::Ect1)).unwrap();
    assert_eq!(a.ecn.map(|e| (e.ect0, e.ect1, e.ce)), Some((1, 3, 2)));
    assert_eq!((r.stats().ce_packets, r.stats().ce_bytes), (3, 3 * PAYLOAD as u64));
    assert_eq!(a.wire_bytes(), ccarena_transport::quic::ACK_PACKET_BASE_BYTES + 6);

    // Without ECN the frame carries no counts.
    let mut r = QuicReceiver::new(cfg());
    r.on_packet(ms(0), &marked(0, Ecn::Ect0));
    assert_eq!(arrive(&mut r, ms(1), marked(1, Ecn::Ect0)).unwrap().ecn, None);
}

#[test]
fn with_ack_frequency_only_the_first_of_a_ce_run_is_acknowledged_at_once() {
    // draft-ietf-quic-ack-frequency §6.3, Ack-Eliciting Threshold 9.
    let mut c = cfg();
    c.ecn = SenderEcn::Classic;
    c.ack_eliciting_threshold = 10;
    let mut r = QuicReceiver::new(c);
    let want = [(Ecn::Ect0, false), (Ecn::Ce, true), (Ecn::Ce, false), (Ecn::Ce, false), (Ecn::Ect0, false), (Ecn::Ce, true), (Ecn::Ect0, false)];
    for (pn, &(ecn, ack)) in want.iter().enumerate() {
        assert_eq!(arrive(&mut r, ms(pn as u64), marked(pn as u64, ecn)).is_some(), ack, "pn {pn}");
    }
    r.handle_timeout(ms(31));
    let e = r.poll_ack(ms(31)).unwrap().ecn.unwrap();
    assert_eq!((e.ect0, e.ect1, e.ce), (3, 0, 4));
}

#[test]
fn flow_control_credit_rises_with_delivery() {
    let mut c = cfg();
    c.max_data_bytes = Some(10_000);
    c.max_stream_data_bytes = Some(5_000);
    let mut r = QuicReceiver::new(c);
    r.on_packet(ms(0), &pkt(0));
    let a = arrive(&mut r, ms(1), pkt(1)).unwrap();
    assert_eq!((a.max_data, a.max_stream_data, a.credit_update), (12_000, 7_000, true));
    assert_eq!(a.wire_bytes(), ccarena_transport::quic::ACK_PACKET_BASE_BYTES + 6);
    // pn 2 (bytes 2000..3000) is lost; pn 3 carries 3000..4000: nothing delivered, no new credit.
    let a = arrive(&mut r, ms(2), pkt(3)).expect("gap");
    assert_eq!((a.max_data, a.max_stream_data, a.credit_update), (12_000, 7_000, false));
    // pn 4 resends 2000..3000: 2000 bytes delivered, the credit rises by as much.
    assert_eq!(r.on_packet(ms(3), &data(4, 2000, PAYLOAD)), 2000);
    assert!(r.poll_ack(ms(3)).is_none());
    r.handle_timeout(ms(28));
    let a = r.poll_ack(ms(28)).unwrap();
    assert_eq!((a.max_data, a.max_stream_data, a.credit_update), (14_000, 9_000, true));
    assert_eq!(r.stats().beyond_credit_packets, 0);
    // Data beyond the credit advertised is counted (and taken).
    assert_eq!(r.on_packet(ms(30), &data(5, 4000, 6000)), 6000);
    assert_eq!(r.stats().beyond_credit_packets, 1);

    // Unlimited: no limit and no update, ever.
    let mut r = QuicReceiver::new(cfg());
    r.on_packet(ms(0), &pkt(0));
    let a = arrive(&mut r, ms(1), pkt(1)).unwrap();
    assert_eq!((a.max_data, a.max_stream_data, a.credit_update), (u64::MAX, u64::MAX, false));
    assert_eq!(a.wire_bytes(), ccarena_transport::quic::ACK_PACKET_BASE_BYTES);
}

#[test]
fn in_order_bytes_are_delivered_once_and_duplicates_counted() {
    let mut r = QuicReceiver::new(cfg());
    assert_eq!(r.on_packet(ms(0), &pkt(0)), 1000);
    // The network duplicates pn 0: counted, not delivered, not a reason to acknowledge.
    assert_eq!(r.on_packet(ms(1), &pkt(0)), 0);
    assert!(r.poll_ack(ms(1)).is_none());
    assert_eq!((r.stats().duplicate_packets, r.stats().duplicate_bytes), (1, 1000));
    // A spurious retransmission: a new packet number with old bytes.
    assert_eq!(r.on_packet(ms(2), &data(1, 0, PAYLOAD)), 0);
    assert_eq!(r.stats().duplicate_bytes, 2000);
    assert_eq!(r.poll_ack(ms(2)).map(|a| ranges(&a)), Some(vec![(0, 1)]));
    // Partly old, partly new.
    assert_eq!(r.on_packet(ms(3), &data(2, 500, PAYLOAD)), 500);
    // A PING carries nothing.
    assert_eq!(r.on_packet(ms(4), &data(3, 0, 0)), 0);
    let s = r.stats();
    assert_eq!((s.packets_received, s.duplicate_packets), (5, 1));
    assert_eq!((s.bytes_received, s.duplicate_bytes, s.delivered_bytes), (4000, 2500, 1500));
    assert_eq!(r.delivered_bytes(), 1500);
}

#[test]
fn out_of_order_stream_data_is_delivered_when_the_hole_fills() {
    let mut r = QuicReceiver::new(cfg());
    assert_eq!(r.on_packet(ms(0), &pkt(0)), 1000);
    assert_eq!(r.on_packet(ms(1), &data(1, 2000, PAYLOAD)), 0);
    assert_eq!(r.on_packet(ms(2), &data(2, 3500, PAYLOAD)), 0);
    assert_eq!(r.delivered_bytes(), 1000);
    // Fills 1000..2000: delivers up to the next hole at 3000.
    assert_eq!(r.on_packet(ms(3), &data(3, 1000, PAYLOAD)), 2000);
    // Overlapping resend of 2500..3500: 500 old bytes, then 3000..4500 comes out.
    assert_eq!(r.on_packet(ms(4), &data(4, 2500, PAYLOAD)), 1500);
    assert_eq!(r.delivered_bytes(), 4500);
    assert_eq!(r.stats().duplicate_bytes, 500);
}
