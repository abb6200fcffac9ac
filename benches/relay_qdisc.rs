//! The relay's CPU per frame through each queue discipline, without sockets.
//!
//! `cargo bench -p ccarena-relay --bench relay_qdisc` drives one direction's frame path in
//! process, as `crates/relay/src/direction.rs` does for every received frame: read the frame's
//! weight, ECN field and flow ([`frame_size`], [`ecn::inspect`]); then either decide its fate at
//! arrival and copy it to the delay line (DropTail, RED, PIE: [`EmulatedPath::offer_frame`]), or
//! copy it into a pooled buffer, hold it in the discipline and move what the transmitter takes
//! to the delay line, setting CE where marked (CoDel, FQ-CoDel, FQ, DualPI2: [`EmulatedPath::hold_frame`],
//! [`EmulatedPath::take_departure`], [`ecn::set_ce`]); finally pop the frames as they fall due (the
//! send itself, a syscall, is left out). The link is 1 Gbit/s with 1 ms of delay and a
//! 5000-packet queue; the trace is 2 million real IPv4/TCP frames (1500 bytes; ECT(0) from even
//! flows, ECT(1) from odd ones, which DualPI2 queues as L4S) from 64 flows at the link rate on
//! average, alternating overload and underload, so the queue is busy and the AQM works.
//!
//! Prints wall ns per frame, with the drops and marks to show the discipline was exercised.
//! Release build only; no assertions: the figures are for people.

use std::time::Instant;

use ccarena_link::qdisc::codel::CodelConfig;
use ccarena_link::qdisc::dualpi2::DualPi2Config;
use ccarena_link::qdisc::fq::FqConfig;
use ccarena_link::qdisc::pie::PieConfig;
use ccarena_link::{QdiscConfig, SplitMix64};
use ccarena_relay::ecn;
use ccarena_relay::frame::frame_size;
use ccarena_relay::emulated_path::{Departure, FrameInfo, Offered};
use ccarena_relay::sys::VNET_HDR_LEN;
use ccarena_relay::{DelayLine, Fate, EmulatedPath, LinkParams, Loss, QueueLimit};

const FRAMES: usize = 2_000_000;
const RATE_BPS: u64 = 1_000_000_000;
const FLOWS: u16 = 64;
/// The queue's limit, packets (60 ms at the rate: the 1.3 × phases build a standing queue the
/// AQMs act on before the limit does).
const LIMIT: u64 = 5000;

/// A virtio header and an Ethernet/IPv4/TCP frame of 1500 IP bytes from flow `flow`, ECT(0) from
/// an even flow and ECT(1) from an odd one, with a valid header checksum.
fn frame(flow: u16) -> Vec<u8> {
    let mut v = vec![0u8; VNET_HDR_LEN];
    v.extend_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00]);
    let tos = if flow % 2 == 0 { 0x02 } else { 0x01 };
    let mut ip = [0x45, tos, 0x05, 0xdc, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 1, 2];
    let mut sum = 0u32;
    for w in ip.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    v.extend_from_slice(&ip);
    let mut tcp = [0u8; 20];
    tcp[0..2].copy_from_slice(&(40_000 + flow).to_be_bytes());
    tcp[2..4].copy_from_slice(&5201u16.to_be_bytes());
    tcp[12] = 5 << 4;
    v.extend_from_slice(&tcp);
    v.resize(VNET_HDR_LEN + 14 + 1500, 0xab);
    v
}

/// (arrival ns, flow) of every frame: the rate on average, alternating 200 ms at 1.3 × and
/// 200 ms at 0.7 ×.
fn trace() -> Vec<(u64, u16)> {
    let mut r = SplitMix64::new(5);
    let tx_ns = 1500 * 8 * 1_000_000_000 / RATE_BPS;
    let mut t = 0u64;
    (0..FRAMES)
        .map(|_| {
            let fast = (t / 200_000_000).is_multiple_of(2);
            let mean_gap = if fast { tx_ns * 10 / 13 } else { tx_ns * 10 / 7 };
            t += r.next_u64() % (2 * mean_gap + 1);
            (t, (r.next_u64() % u64::from(FLOWS)) as u16)
        })
        .collect()
}

fn pop_due(line: &mut DelayLine, now_ns: u64, sent: &mut u64) {
    while line.head_due_ns().is_some_and(|d| d <= now_ns) {
        *sent += 1;
        line.pop();
    }
}

/// Wall ns per frame through `queue`, and (frames sent on, the link's drops, its marks).
fn run(queue: &QdiscConfig, frames: &[Vec<u8>], arrivals: &[(u64, u16)]) -> (f64, u64, u64, u64) {
    let params = LinkParams { rate_bps: Some(RATE_BPS), limit: QueueLimit::Packets(LIMIT), delay_ns: 1_000_000 };
    let mut link: EmulatedPath<Vec<u8>> = EmulatedPath::holding(params, queue, SplitMix64::new(1), Loss::new(0.0, SplitMix64::new(2)));
    let mut line = DelayLine::new(1 << 20, 64 << 20, 1 << 30);
    line.prepare(100_000);
    let mut pool: Vec<Vec<u8>> = (0..LIMIT as usize + 100).map(|_| Vec::with_capacity(1600)).collect();
    let mut scratch = Vec::with_capacity(1600);
    let mut sent = 0u64;
    let start = Instant::now();
    for &(t, flow) in arrivals {
        let f = &frames[usize::from(flow)];
        pop_due(&mut line, t, &mut sent);
        let size = frame_size(f);
        let ip = ecn::inspect(f);
        let info = FrameInfo { ip_bytes: size.ip_bytes, packets: size.packets, flow_hash: ip.flow_hash, ect: ip.ect, l4s: ip.l4s };
        if link.holds_frames() {
            let mut body = pool.pop().unwrap_or_else(|| Vec::with_capacity(1600));
            body.extend_from_slice(f);
            link.hold_frame(t, info, body);
            while let Some(Departure { fate, ce, mut body, .. }) = link.take_departure() {
                if let Fate::Deliver { due_ns } = fate {
                    if ce {
                        ecn::set_ce(&mut body);
                    }
                    line.push(due_ns, &body).expect("room on the line");
                }
                body.clear();
                pool.push(body);
            }
        } else {
            let Offered { fate, ce, .. } = link.offer_frame(t, info);
            if let Fate::Deliver { due_ns } = fate {
                let bytes = if ce {
                    scratch.clear();
                    scratch.extend_from_slice(f);
                    ecn::set_ce(&mut scratch);
                    &scratch[..]
                } else {
                    &f[..]
                };
                line.push(due_ns, bytes).expect("room on the line");
            }
        }
    }
    let elapsed = start.elapsed().as_nanos() as f64;
    let c = *link.counters();
    (elapsed / arrivals.len() as f64, sent, c.drops, c.marks)
}

fn main() {
    let frames: Vec<Vec<u8>> = (0..FLOWS).map(frame).collect();
    let arrivals = trace();
    let codel = CodelConfig { target_ns: 5_000_000, interval_ns: 100_000_000, ecn: true, mtu_bytes: 1500, ce_threshold: None };
    let fq = FqConfig { flows: 1024, quantum_bytes: 1514 };
    let cases = [
        ("droptail", QdiscConfig::DropTail { ecn_threshold_packets: None, ecn_threshold_bytes: None, ecn_threshold_selector: ccarena_link::qdisc::EcnSelector::All }),
        ("droptail+K", QdiscConfig::DropTail { ecn_threshold_packets: Some(400), ecn_threshold_bytes: None, ecn_threshold_selector: ccarena_link::qdisc::EcnSelector::All }),
        ("pie ecn", QdiscConfig::Pie(PieConfig { ecn: true, ..PieConfig::default() })),
        ("codel ecn", QdiscConfig::Codel(codel)),
        ("codel", QdiscConfig::Codel(CodelConfig { ecn: false, ..codel })),
        ("fq_codel ecn", QdiscConfig::FqCodel(fq, codel)),
        ("fq_codel", QdiscConfig::FqCodel(fq, CodelConfig { ecn: false, ..codel })),
        ("fq", QdiscConfig::Fq(fq)),
        ("dualpi2", QdiscConfig::DualPi2(DualPi2Config::default())),
    ];
    println!("{FRAMES} frames of 1500 B at 1 Gbit/s (1.3 × / 0.7 × phases) from {FLOWS} flows, {LIMIT}-packet queue");
    for (name, q) in cases {
        let mut best = f64::INFINITY;
        let mut last = (0, 0, 0);
        for _ in 0..3 {
            let (ns, sent, drops, marks) = run(&q, &frames, &arrivals);
            best = best.min(ns);
            last = (sent, drops, marks);
        }
        println!("{name:>14}: {best:6.1} ns/frame  ({} sent, {} dropped, {} marked)", last.0, last.1, last.2);
    }
}
