//! Linux's receive-buffer autotuning in explicit time (`Receiver::set_rcvbuf_autotuning`;
//! net/ipv4/tcp_input.c's `tcp_grow_window` and `tcp_rcv_space_adjust`, tcp_output.c's
//! `tcp_select_initial_window`): the window's start, its growth per segment and per RTT, its
//! cap, and the quick ACKs that come with its growth.
//!
//! The expected numbers are this machine's kernel's (Linux 6.18.44, default tcp_rmem, MSS
//! 1448, window scale 1024; the receiver module's documentation): SYN-ACK 65,160; first ACKs
//! 68,608, 71,680, 74,752, 76,800, 79,872, 80,896, 80,896, …; 22 single-segment ACKs at start.

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::{RcvBufAutotuning, Receiver};

use crate::support::{linux_receiver_cfg as config, linux_seg as seg, LINUX_MSS as MSS};

const M: u64 = MSS as u64;

fn at_ms(v: u64) -> SimTime {
    SimTime(v * 1_000_000)
}

/// Linux's receiver: delayed ACK 40 ms every 2nd segment, quick-ACK grant 16, autotuning with
/// `sysctls`, the RTT 40 ms when `rtt`.
fn linux_receiver(sysctls: RcvBufAutotuning, rtt: bool) -> Receiver {
    let mut r = Receiver::new(config());
    r.set_rcvbuf_autotuning(sysctls);
    r.set_quickack(16, Some(Duration::from_millis(200)));
    if rtt {
        r.on_rcv_rtt_sample(Duration::from_millis(40));
    }
    r
}

/// Segments `from..to` arriving one per millisecond from `start_ms`; returns the windows of
/// the ACKs sent (one entry per ACK, with the segment count it acknowledged).
fn deliver(r: &mut Receiver, from: u64, to: u64, start_ms: u64) -> Vec<(u64, u64)> {
    let mut acks = Vec::new();
    let mut acked = r.rcv_nxt();
    for n in from..to {
        let now = at_ms(start_ms + (n - from));
        let _ = r.on_segment(now, &seg(n));
        if let Some(a) = r.poll_ack(now) {
            acks.push(((a.ack - acked) / M, a.rwnd_bytes));
            acked = a.ack;
        }
    }
    acks
}

/// Segments `from..to` all arriving at `at_ms` (a flight at a rate the receiver cannot tell
/// from infinite).
fn burst(r: &mut Receiver, from: u64, to: u64, at_ms_: u64) {
    for n in from..to {
        let _ = r.on_segment(at_ms(at_ms_), &seg(n));
        let _ = r.poll_ack(at_ms(at_ms_));
    }
}

/// Flights of 10, 20, 40, … segments (`flights` of them), one per 40 ms RTT: a sender in slow
/// start with an unlimited window.
fn slow_start(r: &mut Receiver, flights: u32) {
    let (mut next, mut n) = (0, 10);
    for k in 0..flights as u64 {
        burst(r, next, next + n, 40 * k);
        next += n;
        n *= 2;
    }
}

#[test]
fn window_starts_at_the_syn_acks_and_grows_two_segments_per_segment_to_the_clamp() {
    assert_eq!(RcvBufAutotuning::LINUX.initial_window(MSS), 65_160);
    let mut r = linux_receiver(RcvBufAutotuning::LINUX, true);
    assert_eq!(r.initial_window(), Some(65_160));
    assert_eq!(r.rcvbuf_bytes(), Some(131_072));
    let acks = deliver(&mut r, 0, 10, 0);
    let windows: Vec<u64> = acks.iter().map(|a| a.1).collect();
    // The kernel's first ten ACKs, byte for byte: + 2 MSS per segment, in 1024-byte units,
    // up to the clamp 131,072·160/256 − 1448 = 80,472 → 80,896.
    assert_eq!(windows, [68_608, 71_680, 74_752, 76_800, 79_872, 80_896, 80_896, 80_896, 80_896, 80_896]);
    assert!(acks.iter().all(|a| a.0 == 1), "quick ACKs: one per segment");
}

#[test]
fn quick_acks_are_the_grant_plus_one_per_segment_that_grew_the_window() {
    // Measured: 22 single-segment ACKs (16 + the 6 that grew the window), then every second.
    let mut r = linux_receiver(RcvBufAutotuning::LINUX, true);
    let acks = deliver(&mut r, 0, 40, 0);
    let singles = acks.iter().take_while(|a| a.0 == 1).count();
    assert_eq!(singles, 22);
    assert!(acks[22..].iter().all(|a| a.0 == 2), "{acks:?}");
    // Without autotuning the grant alone.
    let mut plain = Receiver::new(config());
    plain.set_quickack(16, None);
    let acks = deliver(&mut plain, 0, 40, 0);
    assert_eq!(acks.iter().take_while(|a| a.0 == 1).count(), 16);
    assert_eq!(plain.window_bytes(), u64::MAX, "no buffer limit without autotuning");
}

#[test]
fn clamp_grows_once_per_rtt_by_what_was_delivered() {
    // Flights of 10, 20, 40 segments at 0, 40, 80 ms (slow start), RTT 40 ms.
    let mut r = linux_receiver(RcvBufAutotuning::LINUX, true);
    deliver(&mut r, 0, 10, 0);
    // At 40 ms: 10 segments since the first, not more than the initial 10-MSS measure: no growth.
    deliver(&mut r, 10, 30, 40);
    assert_eq!(r.window_bytes(), 80_896);
    assert_eq!(r.rcvbuf_bytes(), Some(131_072));
    // At 80 ms: 20 segments in the last RTT, twice the 10 before: rcvwin = 2·20·(1 + 2·10/10)
    // = 120 MSS = 173,760 bytes, a buffer of ⌈173,760·256/160⌉ = 278,016.
    let acks = deliver(&mut r, 30, 70, 80);
    assert_eq!(r.rcvbuf_bytes(), Some(278_016));
    // The measuring segment (30) found the old clamp; from 31 on each segment raises the
    // window two MSS and is ACKed at once (31's ACK also covers 30, delayed): 80,472 + 2·1448
    // = 83,368 → 83,968, …, reached at k = 33 (80,472 + 2·1448·k ≥ 173,760): 174,080 = 170
    // units of 1024; then every second segment again.
    assert_eq!(acks[0], (2, 83_968));
    assert!(acks[1..33].iter().all(|a| a.0 == 1), "{acks:?}");
    assert_eq!(acks[32].1, 174_080);
    assert!(acks[33..].iter().all(|a| a.0 == 2 && a.1 == 174_080), "{acks:?}");
    assert_eq!(r.window_bytes(), 174_080);
}

#[test]
fn without_an_rtt_the_buffer_does_not_grow() {
    let mut r = linux_receiver(RcvBufAutotuning::LINUX, false);
    deliver(&mut r, 0, 10, 0);
    deliver(&mut r, 10, 30, 40);
    deliver(&mut r, 30, 70, 80);
    assert_eq!((r.rcvbuf_bytes(), r.window_bytes()), (Some(131_072), 80_896));
}

#[test]
fn buffer_stops_at_tcp_rmem_max() {
    // tcp_rmem[2] = 400,000: the window stops at 400,000·160/256 = 250,000 → 250,880 however
    // fast the flights double.
    let sysctls = RcvBufAutotuning { max_rcvbuf_bytes: 400_000, ..RcvBufAutotuning::LINUX };
    let mut r = linux_receiver(sysctls, true);
    slow_start(&mut r, 8);
    assert_eq!(r.rcvbuf_bytes(), Some(400_000));
    assert_eq!(r.window_bytes(), 250_880);
    // The default tcp_rmem[2] (32 MB) lets the same flights grow it far beyond: the last
    // measured flight, 640 segments, asks for a window of at least 2·640·1448 bytes.
    let mut big = linux_receiver(RcvBufAutotuning::LINUX, true);
    slow_start(&mut big, 8);
    assert!(big.rcvbuf_bytes().expect("on") > 2 * 640 * M, "{:?}", big.rcvbuf_bytes());
    assert!(big.window_bytes() > 1_000_000, "{}", big.window_bytes());
    // And no further than tcp_rmem[2]: 14 such flights would ask for more than 32 MB.
    let mut capped = linux_receiver(RcvBufAutotuning::LINUX, true);
    slow_start(&mut capped, 14);
    assert_eq!(capped.rcvbuf_bytes(), Some(33_554_432));
}

#[test]
fn out_of_order_data_does_not_move_the_edge_left() {
    // 5 segments held above a hole take 7,240 bytes of the buffer's 81,920-byte window (less
    // than the 80,472 clamp), but the edge already advertised never moves left.
    let mut r = linux_receiver(RcvBufAutotuning::LINUX, true);
    deliver(&mut r, 0, 10, 0);
    assert_eq!(r.window_bytes(), 80_896);
    for n in 11..16 {
        let _ = r.on_segment(at_ms(20), &seg(n));
        let a = r.poll_ack(at_ms(20)).expect("out of order: ACK at once");
        assert_eq!(a.rwnd_bytes, 80_896, "the edge does not move left");
    }
    let _ = r.on_segment(at_ms(21), &seg(10));
    let a = r.poll_ack(at_ms(21)).expect("hole filled: ACK at once");
    assert_eq!(a.ack, 16 * M);
    assert_eq!(a.rwnd_bytes, 80_896);
}

#[test]
fn the_receivers_rtt_takes_a_lower_sample_at_once_and_a_higher_one_by_an_eighth() {
    // Linux ≥ 6.16's tcp_rcv_rtt_update with timestamps ("tcp: always seek for minimal rtt").
    let mut r = Receiver::new(config());
    assert_eq!(r.rcv_rtt(), None);
    r.on_rcv_rtt_sample(Duration::from_millis(40));
    assert_eq!(r.rcv_rtt(), Some(Duration::from_millis(40)), "the first sample is the estimate");
    r.on_rcv_rtt_sample(Duration::from_millis(120));
    assert_eq!(r.rcv_rtt(), Some(Duration::from_millis(50)), "40 + (120 − 40)/8");
    r.on_rcv_rtt_sample(Duration::from_millis(120));
    assert_eq!(r.rcv_rtt(), Some(Duration::from_micros(58_750)), "50 + (120 − 50)/8");
    r.on_rcv_rtt_sample(Duration::from_millis(30));
    assert_eq!(r.rcv_rtt(), Some(Duration::from_millis(30)), "a lower sample replaces it");
}
