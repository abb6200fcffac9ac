//! Linux's receive-buffer autotuning of an MPTCP connection in explicit time
//! (`MptcpReceiver::set_rcvbuf_autotuning`; Linux 6.18's net/mptcp/protocol.c,
//! `mptcp_rcv_space_adjust` and `mptcp_rcvbuf_grow`): the shared window starts at the SYN-ACK's
//! and is capped by each subflow's `rcv_ssthresh`; the connection measures its delivery once per
//! period, the largest subflow receiver RTT read at its previous measurement; the subflows'
//! buffers follow the connection's.
//!
//! The starting numbers are this machine's kernel's (Linux 6.18.44, default tcp_rmem, MSS 1448,
//! window scale 1024; `ss -tinM` at an MPTCP receiver): every sender's window at most 80,896
//! bytes and every subflow's `rcv_space` 14,480 bytes until the connection's first measurement.

use std::iter::from_fn;

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::mptcp::{DssAck, DssData, MptcpReceiver, Scheduler};
use ccarena_transport::RcvBufAutotuning;

use crate::mptcp_net::config;
use crate::support::{linux_receiver_cfg, linux_seg, LINUX_MSS};

const M: u64 = LINUX_MSS as u64;
const LINUX: RcvBufAutotuning = RcvBufAutotuning::LINUX;
/// The first window clamp, as advertised: 131,072 × 160/256 less one MSS, in 1 KB units.
const FIRST_CLAMP: u64 = 80_896;

fn at_ms(v: u64) -> SimTime {
    SimTime(v * 1_000_000)
}

/// A Linux MPTCP receiver of `n` subflows, established at 0, autotuning on.
fn receiver(n: u8) -> MptcpReceiver {
    let mut cfg = config(n, Scheduler::MinRtt);
    cfg.receiver = linux_receiver_cfg();
    let mut rx = MptcpReceiver::new(cfg);
    rx.set_rcvbuf_autotuning(LINUX, SimTime::ZERO);
    rx.set_quickack(16, Some(Duration::from_millis(200)));
    rx
}

/// Subflow `subflow`'s segment `n` (its own sequence space) carrying connection segment `d`.
fn seg(subflow: u8, n: u64, d: u64) -> DssData {
    DssData { subflow, seg: linux_seg(n), dsn: d * M }
}

fn acks(rx: &mut MptcpReceiver, now: SimTime) -> Vec<DssAck> {
    from_fn(|| rx.poll_ack(now)).collect()
}

#[test]
fn the_shared_window_starts_at_the_syn_acks_and_stops_at_the_first_clamp_without_a_measurement() {
    let mut rx = receiver(2);
    // No RTT sample: the connection never measures, as before Linux's first one.
    let mut windows = Vec::new();
    for d in 0..200 {
        let now = at_ms(1 + d);
        let delivered = rx.on_segment(now, &seg((d % 2) as u8, d / 2, d));
        assert_eq!(delivered, M);
        windows.extend(acks(&mut rx, now).iter().map(|a| a.data_rwnd_bytes));
    }
    // The SYN-ACK offered 65,160; each segment raises its subflow's rcv_ssthresh by two MSS.
    assert_eq!(windows[0], 68_608, "65,160 + 2·1448, in 1 KB units");
    assert!(windows.windows(2).all(|w| w[1] + M >= w[0]), "the right edge never moves left: {windows:?}");
    assert_eq!(*windows.iter().max().unwrap(), FIRST_CLAMP);
    assert_eq!(*windows.last().unwrap(), FIRST_CLAMP);
    assert_eq!(rx.rcvbuf_bytes(), Some(LINUX.initial_rcvbuf_bytes));
    assert_eq!(rx.subflow(1).rcv_ssthresh_bytes(), Some(80_472), "the clamp: 81,920 less one MSS");
}

#[test]
fn the_connection_measures_once_per_largest_subflow_rtt_read_at_its_last_measurement() {
    let mut rx = receiver(2);
    rx.on_rcv_rtt_sample(0, Duration::from_millis(10));
    rx.on_rcv_rtt_sample(1, Duration::from_millis(50));
    // One connection segment per ms on subflow 0 from 1 ms: the period is subflow 1's 50 ms,
    // counted from the connection's establishment (0), not from the first data.
    let mut d = 0;
    for t in 1..50 {
        let _ = rx.on_segment(at_ms(t), &seg(0, d, d));
        d += 1;
    }
    assert_eq!(rx.rcvbuf_bytes(), Some(LINUX.initial_rcvbuf_bytes), "no measurement before 50 ms");
    let _ = rx.on_segment(at_ms(50), &seg(0, d, d));
    d += 1;
    let first = LINUX.grown_rcvbuf(50 * M, 10 * M, 0);
    assert_eq!(rx.rcvbuf_bytes(), Some(first), "50 segments in the first period, 10 MSS before");
    // Subflow 1's RTT drops to 10 ms, but the next measurement waits for the 50 ms the last
    // one read. Twelve segments per ms: measured at 60 ms, 120 segments would already have grown
    // the buffer (to 2,112,922 bytes).
    rx.on_rcv_rtt_sample(1, Duration::from_millis(10));
    for t in 51..100 {
        for _ in 0..12 {
            let _ = rx.on_segment(at_ms(t), &seg(0, d, d));
            d += 1;
        }
    }
    assert_eq!(rx.rcvbuf_bytes(), Some(first), "no measurement before 100 ms");
    for _ in 0..12 {
        let _ = rx.on_segment(at_ms(100), &seg(0, d, d));
        d += 1;
    }
    let second = LINUX.grown_rcvbuf(600 * M, 50 * M, 0);
    assert!(second > first);
    assert_eq!(rx.rcvbuf_bytes(), Some(second));
    // Now the period is 10 ms: 20 segments in it, fewer than ever, leave the buffer as it is.
    for t in 101..=110 {
        for _ in 0..2 {
            let _ = rx.on_segment(at_ms(t), &seg(0, d, d));
            d += 1;
        }
    }
    assert_eq!(rx.rcvbuf_bytes(), Some(second), "fewer than ever: no growth");
}

#[test]
fn the_subflows_follow_the_connections_buffer() {
    let mut rx = receiver(2);
    rx.on_rcv_rtt_sample(0, Duration::from_millis(10));
    rx.on_rcv_rtt_sample(1, Duration::from_millis(10));
    // Subflow 1 reaches the first clamp; subflow 0 carries 40 segments in the first 10 ms.
    let mut d = 0;
    for n in 0..20 {
        let _ = rx.on_segment(at_ms(1), &seg(1, n, d));
        d += 1;
    }
    assert_eq!(rx.subflow(1).rcv_ssthresh_bytes(), Some(80_472));
    for n in 0..40 {
        let _ = rx.on_segment(at_ms(2 + n / 5), &seg(0, n, d));
        d += 1;
    }
    let _ = acks(&mut rx, at_ms(10));
    let _ = rx.on_segment(at_ms(10), &seg(0, 40, d));
    d += 1;
    let grown = LINUX.grown_rcvbuf(61 * M, 10 * M, 0);
    assert_eq!(rx.rcvbuf_bytes(), Some(grown));
    assert_eq!(rx.subflow(1).rcvbuf_bytes(), Some(grown), "Linux's tcp_rcvbuf_grow on every subflow");
    // Subflow 1's rcv_ssthresh now grows past the first clamp, and its ACKs open the window.
    for n in 20..40 {
        let _ = rx.on_segment(at_ms(11), &seg(1, n, d));
        d += 1;
    }
    assert_eq!(rx.subflow(1).rcv_ssthresh_bytes(), Some(80_472 + 20 * 2 * M));
    let w = acks(&mut rx, at_ms(11)).iter().map(|a| a.data_rwnd_bytes).max().unwrap();
    assert!(w > FIRST_CLAMP, "{w}");
}
