//! Linux's SACK compression in explicit time (`Receiver::set_sack_compression`; net/ipv4/
//! tcp_input.c `__tcp_ack_snd_check`, sysctls `tcp_comp_sack_delay_ns` = 1 ms and
//! `tcp_comp_sack_nr` = 44, Linux ≥ 4.18): above a hole, the first three out-of-order segments
//! at a given RCV.NXT are acknowledged at once, later ones with one ACK per millisecond.
//!
//! Measured here (Linux 6.18, the quick calibration's bbr-vs-bbr cell, relay captures of the
//! receivers' ACK links over 2–9 s): the first flow's receiver sent 764 ACKs/s for ~1,500 data
//! segments/s, its SACK-carrying ACKs a median 1.24 ms apart; the simulated twin without
//! compression 1,099 ACKs/s, one per out-of-order segment (median 0.63 ms apart), and 770
//! ACKs/s (1.19 ms) with it.

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::{Receiver, SackCompression};

use crate::support::{linux_receiver_cfg as config, linux_seg as seg, LINUX_MSS as MSS};

const M: u64 = MSS as u64;

fn at_us(v: u64) -> SimTime {
    SimTime(v * 1_000)
}

/// Segments 1.. arrive every `gap_us` after segment 0 was lost (segment 0 never arrives);
/// returns the arrival times (µs) of the segments whose arrival, or the timer after it, sent
/// an ACK, and that ACK's time.
fn ooo_acks(r: &mut Receiver, n: u64, gap_us: u64) -> Vec<u64> {
    let mut sent = Vec::new();
    for i in 1..=n {
        let now = at_us(i * gap_us);
        // The timer first, as the engine fires it at its deadline.
        if let Some(due) = r.poll_timeout() {
            if due <= now {
                r.handle_timeout(due);
                if r.poll_ack(due).is_some() {
                    sent.push(due.as_nanos() / 1_000);
                }
            }
        }
        let _ = r.on_segment(now, &seg(i));
        if r.poll_ack(now).is_some() {
            sent.push(now.as_nanos() / 1_000);
        }
    }
    sent
}

#[test]
fn without_compression_every_out_of_order_segment_is_acknowledged_at_once() {
    let mut r = Receiver::new(config());
    let sent = ooo_acks(&mut r, 10, 300);
    assert_eq!(sent, (1..=10).map(|i| i * 300).collect::<Vec<_>>());
}

#[test]
fn three_at_once_then_one_ack_per_millisecond_above_a_hole() {
    let mut r = Receiver::new(config());
    r.set_sack_compression(SackCompression::LINUX);
    // One segment every 300 µs above the hole: 1–3 at once (the sender's three duplicate ACKs),
    // then segment 4 at 1,200 µs starts a 1 ms timer (the receiver has no RTT: the sysctl's
    // 1 ms), which sends one ACK at 2,200 µs for 4–7; segment 8 at 2,400 µs starts the next.
    let sent = ooo_acks(&mut r, 12, 300);
    assert_eq!(sent, vec![300, 600, 900, 2_200, 3_400]);
    // The hole fills: that ACK goes at once, and the next hole gets three immediate ACKs again.
    let now = at_us(3_700);
    let _ = r.on_segment(now, &seg(0));
    let a = r.poll_ack(now).expect("the hole filled: ACK at once");
    assert_eq!(a.ack, 13 * M);
    for (k, i) in (14..17).enumerate() {
        let now = at_us(4_000 + 300 * k as u64);
        let _ = r.on_segment(now, &seg(i));
        assert!(r.poll_ack(now).is_some(), "segment {i} above the new hole at 13");
    }
}

#[test]
fn the_forty_fifth_held_back_segment_is_acknowledged_at_once() {
    let mut r = Receiver::new(config());
    r.set_sack_compression(SackCompression { delay: Duration::from_millis(100), ..SackCompression::LINUX });
    // A burst above a hole, 1 µs apart: three at once, 44 held back, the 45th sent.
    let sent = ooo_acks(&mut r, 48, 1);
    assert_eq!(sent, vec![1, 2, 3, 48]);
}

#[test]
fn the_delay_is_a_twentieth_of_the_rtt_when_that_is_shorter_with_or_without_autotuning() {
    // The bound is the receiver's RTT whatever sizes its window: an autotuned buffer (a
    // `linux`-host flow without `rwnd`) or a fixed one (with `rwnd`).
    let mut autotuned = Receiver::new(config());
    autotuned.set_rcvbuf_autotuning(ccarena_transport::RcvBufAutotuning::LINUX);
    let fixed = Receiver::new(ccarena_transport::ReceiverConfig { rcvbuf_bytes: Some(1 << 20), ..config() });
    for (name, mut r) in [("autotuned", autotuned), ("fixed buffer", fixed)] {
        r.on_rcv_rtt_sample(Duration::from_millis(10));
        r.set_sack_compression(SackCompression::LINUX);
        // RTT 10 ms: 500 µs, not 1 ms. Segment 4 at 1,200 µs → ACK at 1,700 µs (for 4 and 5);
        // segment 6 at 1,800 µs → ACK at 2,300 µs.
        let sent = ooo_acks(&mut r, 8, 300);
        assert_eq!(sent, vec![300, 600, 900, 1_700, 2_300], "{name}");
    }
}
