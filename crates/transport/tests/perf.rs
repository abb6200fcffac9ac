//! Throughput smoke check of the transport alone (no harness checks, FIFO links), with windows
//! up to ~10^5 segments. Ignored by default; run with
//! `cargo test --release -p ccarena-transport --test all -- perf:: --ignored --nocapture`.

use ccarena_cc::{new_controller, Duration, Params, SimTime};
use ccarena_transport::*;
use std::collections::VecDeque;
fn run(mode: RecoveryMode, rate: u64, one_way_ms: u64, qlim: usize, loss: f64, secs: u64) {
    let mss = 1448u32;
    let scfg = SenderConfig {
        mss_bytes: mss,
        initial_cwnd_bytes: 10 * mss as u64,
        min_rto: Duration::from_millis(200),
        initial_rto: Duration::from_secs(1),
        max_rto: Duration::from_secs(60),
        clock_granularity: Duration::from_millis(1),
        recovery: mode,
        dupthresh: 3,
        ecn: ccarena_transport::SenderEcn::Off,
        initial_rwnd_bytes: None,
        sndbuf_bytes: None,
    };
    let mut s = Sender::new(
        scfg,
        new_controller("reno", &Params::default()).unwrap(),
        SimTime::ZERO,
    );
    let mut r = Receiver::new(ReceiverConfig {
        mss_bytes: mss,
        delayed_ack: Duration::from_millis(40),
        ack_every_segments: 2,
        ecn: ccarena_transport::EcnMode::Off,
        rcvbuf_bytes: None,
        dsack: true,
    });
    let delay = Duration::from_millis(one_way_ms);
    let mut fwd: VecDeque<(SimTime, DataSegment)> = VecDeque::new();
    let mut rev: VecDeque<(SimTime, AckSegment)> = VecDeque::new();
    let mut busy = SimTime::ZERO;
    let mut queue: VecDeque<SimTime> = VecDeque::new();
    let mut x: u64 = 88172645463325252;
    let mut now = SimTime::ZERO;
    s.app_write(u64::MAX / 4);
    let end = SimTime(secs * 1_000_000_000);
    let t0 = std::time::Instant::now();
    let (mut nseg, mut nack) = (0u64, 0u64);
    let mut maxw = 0u64;
    loop {
        while let Some(seg) = s.poll_transmit(now) {
            nseg += 1;
            while queue.front().is_some_and(|d| *d <= now) {
                queue.pop_front();
            }
            if queue.len() > qlim {
                continue;
            }
            let dep = now.max(busy) + Duration::transmission(seg.len as u64 + 52, rate);
            busy = dep;
            queue.push_back(dep);
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (x % 1_000_000) as f64 / 1e6 < loss {
                continue;
            }
            fwd.push_back((dep + delay, seg));
        }
        maxw = maxw.max(s.cwnd().cwnd_bytes / mss as u64);
        let t = [
            fwd.front().map(|e| e.0),
            rev.front().map(|e| e.0),
            s.poll_timeout(),
            r.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
        if t > end {
            break;
        }
        now = now.max(t);
        while fwd.front().is_some_and(|e| e.0 <= now) {
            let (_, seg) = fwd.pop_front().unwrap();
            let _ = r.on_segment(now, &seg);
            if let Some(a) = r.poll_ack(now) {
                rev.push_back((now + delay, a));
            }
        }
        while rev.front().is_some_and(|e| e.0 <= now) {
            let (_, a) = rev.pop_front().unwrap();
            let _ = s.on_ack(now, &a);
            nack += 1;
            while let Some(seg) = s.poll_transmit(now) {
                nseg += 1;
                while queue.front().is_some_and(|d| *d <= now) {
                    queue.pop_front();
                }
                if queue.len() > qlim {
                    continue;
                }
                let dep = now.max(busy) + Duration::transmission(seg.len as u64 + 52, rate);
                busy = dep;
                queue.push_back(dep);
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if (x % 1_000_000) as f64 / 1e6 < loss {
                    continue;
                }
                fwd.push_back((dep + delay, seg));
            }
        }
        r.handle_timeout(now);
        if let Some(a) = r.poll_ack(now) {
            rev.push_back((now + delay, a));
        }
        s.handle_timeout(now);
    }
    let el = t0.elapsed().as_secs_f64();
    let st = s.stats();
    eprintln!("{mode:8} rate {:5} Mbps rtt {:3} ms loss {loss:6}: segs {nseg:8} acks {nack:8} max_cwnd {maxw:6} rto {:4} fr {:5} goodput {:7.1} Mbps | {:5.2} M pkt/s (segs+acks) wall {el:.2}s",
        rate/1_000_000, 2*one_way_ms, st.rto_count, st.fast_recoveries, s.snd_una() as f64 * 8.0 / secs as f64 / 1e6, (nseg + nack) as f64 / el / 1e6);
}
#[test]
#[ignore = "timing report, run in release"]
fn perf() {
    for mode in [RecoveryMode::Prr, RecoveryMode::Sack, RecoveryMode::NewReno] {
        run(mode, 1_000_000_000, 25, 4000, 0.0, 10);
        run(mode, 1_000_000_000, 25, 4000, 0.0001, 10);
        run(mode, 10_000_000_000, 50, 100_000, 0.00001, 5);
    }
}
