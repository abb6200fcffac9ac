//! One trace-driven link model: the simulator's link and the relay's, with the same capacity
//! trace (Mahimahi delivery opportunities, or rate steps with outages), discipline, limit,
//! delay, wire loss and random streams, fed one arrival sequence, decide the same fate for every
//! packet and deliver it at the same nanosecond.

use ccarena_cc::{Duration, SimTime};
use ccarena_link::qdisc::codel::CodelConfig;
use ccarena_link::qdisc::red::RedConfig;
use ccarena_link::qdisc::Limit;
use ccarena_link::{Qdisc, QdiscConfig, RateTrace, SplitMix64, TraceTransmitter};
use ccarena_relay::emulated_path::FrameInfo;
use ccarena_relay::{Fate, EmulatedPath, LinkParams, Loss, QueueLimit};
use ccarena_sim::link::Link;
use ccarena_sim::packet::{Packet, Payload};
use ccarena_transport::DataSegment;

/// The rate both links quote (the discipline's idle estimate), bits per second.
const RATE_BPS: u64 = 10_000_000;
const DELAY_NS: u64 = 5_000_000;
const LOSS: f64 = 0.01;

/// 20 000 arrivals of 64–1500 bytes, in phases of about 18, 6 and 10 Mbit/s, with idle gaps.
fn arrivals() -> Vec<(u64, u64)> {
    let mut r = SplitMix64::new(7);
    let mut t = 0;
    (0..20_000)
        .map(|i| {
            let mean_gap = [500_000u64, 1_500_000, 900_000][(i / 1500) % 3];
            t += r.next_u64() % (2 * mean_gap + 1) + if r.next_u64() < u64::MAX / 300 { 200_000_000 } else { 0 };
            let size = if r.next_u64() & 3 == 0 { 64 + r.next_u64() % 1437 } else { 1500 };
            (t, size)
        })
        .collect()
}

/// Mahimahi: 0, 1 or 2 opportunities in each millisecond for 3 s (about 12 Mbit/s), looped.
fn mahimahi() -> RateTrace {
    let mut r = SplitMix64::new(5);
    let times: Vec<u64> = (1..=3000).flat_map(|ms| std::iter::repeat_n(ms, (r.next_u64() % 3) as usize)).collect();
    RateTrace::opportunities_ms(&times, true).unwrap()
}

/// Rate steps of 50 ms between 0 (an outage) and 24 Mbit/s for 2 s, looped.
fn steps() -> RateTrace {
    let mut r = SplitMix64::new(6);
    let mut rows: Vec<(u64, u64)> = (0..40).map(|k| (k * 50_000_000, (r.next_u64() % 5) * 6_000_000)).collect();
    rows.push((2_000_000_000, 0));
    RateTrace::steps(&rows, true).unwrap()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Dropped,
    Lost,
    Delivered(u64),
}

fn sim_outcomes(trace: &RateTrace, cfg: &QdiscConfig, arrivals: &[(u64, u64)]) -> Vec<Outcome> {
    let qdisc = Qdisc::new(cfg, Limit::Packets(40), SplitMix64::new(22));
    let mut link = Link::new(0, 1, RATE_BPS, Duration(DELAY_NS), LOSS, qdisc, SplitMix64::new(11)).with_trace(TraceTransmitter::new(trace.clone(), 0));
    let mut out = vec![Outcome::Lost; arrivals.len()];
    let mut arrived = Vec::new();
    let mut drain = |link: &mut Link, until_ns: u64, out: &mut Vec<Outcome>| {
        while let Some(t) = link.next_arrival().filter(|t| t.as_nanos() <= until_ns) {
            arrived.clear();
            link.take_arrivals(t, &mut arrived);
            for p in &arrived {
                let Payload::Data(seg) = p.payload else { unreachable!() };
                out[seg.seq as usize] = Outcome::Delivered(t.as_nanos());
            }
        }
    };
    for (i, &(t, size)) in arrivals.iter().enumerate() {
        drain(&mut link, t, &mut out);
        let seg = DataSegment { seq: i as u64, len: 0, ts_val: SimTime::ZERO, ecn: ccarena_transport::Ecn::NotEct, cwr: false, retransmit: false };
        let pkt = Packet { flow: 0, dst: 1, size_bytes: size as u32, payload: Payload::Data(seg) };
        if !link.enqueue(SimTime(t), pkt) {
            out[i] = Outcome::Dropped;
        }
    }
    drain(&mut link, u64::MAX - 1, &mut out);
    out
}

fn outcome(fate: Fate) -> Outcome {
    match fate {
        Fate::Dropped => Outcome::Dropped,
        Fate::LostOnWire => Outcome::Lost,
        Fate::Deliver { due_ns } => Outcome::Delivered(due_ns),
    }
}

fn relay_outcomes(trace: &RateTrace, cfg: &QdiscConfig, arrivals: &[(u64, u64)]) -> Vec<Outcome> {
    let params = LinkParams { rate_bps: Some(RATE_BPS), limit: QueueLimit::Packets(40), delay_ns: DELAY_NS };
    // The body a held frame carries (CoDel decides at dequeue) is its index in the arrivals.
    let mut link: EmulatedPath<usize> = EmulatedPath::holding(params, cfg, SplitMix64::new(22), Loss::new(LOSS, SplitMix64::new(11))).with_trace(trace.clone());
    link.set_trace_origin(0);
    let info = |size| FrameInfo { ip_bytes: size, packets: 1, flow_hash: 0, ect: false, l4s: false };
    if !link.holds_frames() {
        return arrivals.iter().map(|&(t, size)| outcome(link.offer_frame(t, info(size)).fate)).collect::<Vec<Outcome>>();
    }
    // Dropped at dequeue (CoDel) or lost on the wire: the simulator says only "not delivered".
    let mut out = vec![Outcome::Lost; arrivals.len()];
    let collect = |link: &mut EmulatedPath<usize>, out: &mut Vec<Outcome>| {
        while let Some(d) = link.take_departure() {
            out[d.body] = outcome(d.fate);
        }
    };
    for (i, &(t, size)) in arrivals.iter().enumerate() {
        if !link.hold_frame(t, info(size), i) {
            out[i] = Outcome::Dropped;
        }
        collect(&mut link, &mut out);
    }
    link.advance_to(u64::MAX / 2);
    collect(&mut link, &mut out);
    out
}

#[test]
fn simulator_and_relay_run_a_trace_link_identically() {
    let arrivals = arrivals();
    let red = RedConfig { min_th: 5, max_th: 15, in_bytes: false, max_p: 0.1, w_q: 0.02, gentle: true, ecn: false, idle_packet_bytes: 1500, wait: false, adaptive: false };
    let droptail = QdiscConfig::DropTail { ecn_threshold_packets: None, ecn_threshold_bytes: None, ecn_threshold_selector: ccarena_link::qdisc::EcnSelector::All };
    for (kind, trace) in [("mahimahi", mahimahi()), ("steps", steps())] {
        let codel = QdiscConfig::Codel(CodelConfig { target_ns: 5_000_000, interval_ns: 100_000_000, ecn: false, mtu_bytes: 1500, ce_threshold: None });
        for (name, cfg) in [("droptail", droptail.clone()), ("red", QdiscConfig::Red(red.clone())), ("codel", codel)] {
            let sim = sim_outcomes(&trace, &cfg, &arrivals);
            let relay = relay_outcomes(&trace, &cfg, &arrivals);
            let drops = sim.iter().filter(|o| **o == Outcome::Dropped).count();
            let delivered = sim.iter().filter(|o| matches!(o, Outcome::Delivered(_))).count();
            eprintln!("{kind} {name}: {drops} dropped, {delivered} delivered of {}", arrivals.len());
            // The arrivals must overload the trace at times for the comparison to mean something.
            assert!(drops > 100 && delivered > 10_000, "{kind} {name}: {drops} drops, {delivered} delivered");
            if let Some(i) = (0..arrivals.len()).find(|&i| sim[i] != relay[i]) {
                panic!("{kind} {name}: packet {i} ({:?}): simulator {:?}, relay {:?}", arrivals[i], sim[i], relay[i]);
            }
        }
    }
}
