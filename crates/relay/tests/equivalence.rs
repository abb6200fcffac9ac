//! One link model: the simulator's link (`ccarena_sim::link::Link`) and the relay's
//! (`ccarena_relay::EmulatedPath`) fed one arrival trace (times, sizes, flows, ECN capability) with
//! the same discipline, limit, rate, delay, wire loss and random streams decide the same fate for
//! every packet: dropped by the queue, marked CE, lost on the wire, or delivered at the same
//! nanosecond. Run for every discipline the relay runs, on a trace that overloads the link in
//! bursts: those that decide at arrival (DropTail with DCTCP's threshold, for every ECT packet or
//! only ECT(1) ones, RED with ECN, Adaptive
//! RED in bytes, PIE with ECN) through the relay's arrival path ([`EmulatedPath::offer_frame`]), and
//! those that decide at dequeue (CoDel and FQ-CoDel with ECN, FQ-CoDel with an L4S CE threshold,
//! FQ, DualPI2 with L4S and Classic
//! arrivals mixed) through its holding path
//! ([`EmulatedPath::hold_frame`], [`EmulatedPath::take_departure`]). The simulator does not say which
//! of its undelivered packets the wire lost and which the discipline dropped at dequeue, so both
//! count as one outcome per packet, and the totals of each are compared apart. With duplication
//! and reordering on the wire (`ccarena_link::impair`) both deliver the same packets at the same
//! instants, the same ones twice, and count the same.

use ccarena_cc::{Duration, SimTime};
use ccarena_link::qdisc::codel::{CeThreshold, CodelConfig};
use ccarena_link::qdisc::dualpi2::DualPi2Config;
use ccarena_link::qdisc::fq::FqConfig;
use ccarena_link::qdisc::pie::PieConfig;
use ccarena_link::qdisc::red::RedConfig;
use ccarena_link::qdisc::{EcnSelector, Limit};
use ccarena_link::{Qdisc, QdiscConfig, SplitMix64, StreamKind, WireImpairments};
use ccarena_relay::emulated_path::{FrameInfo, Offered};
use ccarena_relay::{Fate, EmulatedPath, LinkParams, Loss, QueueLimit};
use ccarena_sim::link::Link;
use ccarena_sim::packet::{Packet, Payload};
use ccarena_transport::DataSegment;

const RATE_BPS: u64 = 10_000_000;
const DELAY_NS: u64 = 5_000_000;
const LOSS: f64 = 0.01;

#[derive(Clone, Copy, Debug)]
struct Arrival {
    t_ns: u64,
    size: u64,
    flow: u32,
    /// ECN-capable: ECT(0), or ECT(1) when `l4s`.
    ect: bool,
    /// ECT(1), the L4S identifier (RFC 9331 §5.1): DualPI2's L4S queue.
    l4s: bool,
}

/// 20 000 arrivals: on/off bursts at up to twice the link rate from 8 flows, sizes 64–1500
/// bytes, half the flows ECN-capable (flows 0 and 4 ECT(0), 2 and 6 ECT(1)), idle gaps so RED's
/// idle aging and PIE's decay run too.
fn trace() -> Vec<Arrival> {
    let mut r = SplitMix64::new(2024);
    let mut t = 0;
    (0..20_000)
        .map(|i| {
            let phase = (i / 2000) % 3;
            let mean_gap = match phase {
                0 => 600_000u64,
                1 => 1_500_000,
                _ => 3_000_000,
            };
            t += r.next_u64() % (2 * mean_gap / 3 + 1) + if r.next_u64() < u64::MAX / 200 { 300_000_000 } else { 0 };
            let flow = (r.next_u64() % 8) as u32;
            let size = if r.next_u64() & 3 == 0 { 64 + r.next_u64() % 1437 } else { 1500 };
            Arrival { t_ns: t, size, flow, ect: flow & 1 == 0, l4s: flow & 3 == 2 }
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Refused by the discipline on arrival.
    Dropped,
    /// Lost on the wire, or (a discipline that decides at dequeue) dropped inside the queue.
    Lost,
    Delivered { at_ns: u64, ce: bool, copies: u64 },
}

/// Per-packet outcomes and the totals: (lost on the wire, dropped by the discipline, marked,
/// duplicated, reordered).
type Run = (Vec<Outcome>, [u64; 5]);

fn sim_outcomes(cfg: &QdiscConfig, limit: Limit, arrivals: &[Arrival], imp: &WireImpairments) -> Run {
    let qdisc = Qdisc::new(cfg, limit, SplitMix64::new(22));
    let mut link = Link::new(0, 1, RATE_BPS, Duration(DELAY_NS), LOSS, qdisc, SplitMix64::new(11)).with_impairments(imp.clone());
    let mut out = vec![Outcome::Lost; arrivals.len()];
    let mut arrived = Vec::new();
    let mut drain = |link: &mut Link, until_ns: u64, out: &mut Vec<Outcome>| {
        while let Some(t) = link.next_arrival().filter(|t| t.as_nanos() <= until_ns) {
            arrived.clear();
            link.take_arrivals(t, &mut arrived);
            for p in &arrived {
                let Payload::Data(seg) = p.payload else { unreachable!() };
                let slot = &mut out[seg.seq as usize];
                match slot {
                    // The copy, right behind it.
                    Outcome::Delivered { at_ns, copies, .. } if *at_ns == t.as_nanos() => *copies += 1,
                    _ => *slot = Outcome::Delivered { at_ns: t.as_nanos(), ce: seg.ecn.is_ce(), copies: 1 },
                }
            }
        }
    };
    for (i, a) in arrivals.iter().enumerate() {
        drain(&mut link, a.t_ns, &mut out);
        let seg = DataSegment { seq: i as u64, len: 0, ts_val: SimTime::ZERO, ecn: codepoint(a), cwr: false, retransmit: false };
        let pkt = Packet { flow: a.flow, dst: 1, size_bytes: a.size as u32, payload: Payload::Data(seg) };
        if !link.enqueue(SimTime(a.t_ns), pkt) {
            out[i] = Outcome::Dropped;
        }
    }
    drain(&mut link, u64::MAX, &mut out);
    let c = link.counters();
    (out, [c.packets_lost_wire, c.packets_dropped_queue, c.packets_marked, c.packets_duplicated, c.packets_reordered])
}

/// The simulator's codepoint for `a`.
fn codepoint(a: &Arrival) -> ccarena_transport::Ecn {
    match (a.ect, a.l4s) {
        (true, true) => ccarena_transport::Ecn::Ect1,
        (true, false) => ccarena_transport::Ecn::Ect0,
        _ => ccarena_transport::Ecn::NotEct,
    }
}

fn info(a: &Arrival) -> FrameInfo {
    FrameInfo { ip_bytes: a.size, packets: 1, flow_hash: u64::from(a.flow), ect: a.ect, l4s: a.l4s }
}

fn outcome(fate: Fate, ce: bool, copies: u64) -> Outcome {
    match fate {
        Fate::Dropped => Outcome::Dropped,
        Fate::LostOnWire => Outcome::Lost,
        Fate::Deliver { due_ns } => Outcome::Delivered { at_ns: due_ns, ce, copies },
    }
}

fn relay_outcomes(cfg: &QdiscConfig, limit: QueueLimit, arrivals: &[Arrival], imp: &WireImpairments) -> Run {
    let params = LinkParams { rate_bps: Some(RATE_BPS), limit, delay_ns: DELAY_NS };
    // The body a held frame carries is its index in the trace.
    let mut link: EmulatedPath<usize> =
        EmulatedPath::holding(params, cfg, SplitMix64::new(22), Loss::new(LOSS, SplitMix64::new(11))).with_impairments(imp.clone());
    let mut out = vec![Outcome::Lost; arrivals.len()];
    if link.holds_frames() {
        let collect = |link: &mut EmulatedPath<usize>, out: &mut Vec<Outcome>| {
            while let Some(d) = link.take_departure() {
                out[d.body] = outcome(d.fate, d.ce, d.impair.copies());
            }
        };
        for (i, a) in arrivals.iter().enumerate() {
            if !link.hold_frame(a.t_ns, info(a), i) {
                out[i] = Outcome::Dropped;
            }
            collect(&mut link, &mut out);
        }
        link.advance_to(u64::MAX / 2);
        collect(&mut link, &mut out);
        assert_eq!(link.backlog_packets(), 0);
    } else {
        for (i, a) in arrivals.iter().enumerate() {
            let Offered { fate, ce, impair } = link.offer_frame(a.t_ns, info(a));
            out[i] = outcome(fate, ce, impair.copies());
        }
        link.sample(u64::MAX / 2);
    }
    let c = link.counters();
    (out, [c.lost_wire, c.drops, c.marks, c.duplicated, c.reordered])
}

fn red(in_bytes: bool, adaptive: bool) -> RedConfig {
    let (min_th, max_th) = if in_bytes { (7_500, 22_500) } else { (5, 15) };
    RedConfig { min_th, max_th, in_bytes, max_p: 0.1, w_q: 0.02, gentle: true, ecn: !adaptive, idle_packet_bytes: 1500, wait: false, adaptive }
}

#[test]
fn simulator_and_relay_decide_the_same_fates() {
    let arrivals = trace();
    // RFC 8289's defaults: the trace's bursts build standing queues of tens of ms on 10 Mbit/s.
    let codel = CodelConfig { target_ns: 5_000_000, interval_ns: 100_000_000, ecn: true, mtu_bytes: 1500, ce_threshold: None };
    let fq = FqConfig { flows: 1024, quantum_bytes: 1500 };
    let cases = [
        ("droptail K=10", QdiscConfig::DropTail { ecn_threshold_packets: Some(10), ecn_threshold_bytes: None, ecn_threshold_selector: EcnSelector::All }, 40),
        // The L4S step: only the ECT(1) flows are marked (RFC 9331 §5.1).
        ("droptail K=10 l4s", QdiscConfig::DropTail { ecn_threshold_packets: Some(10), ecn_threshold_bytes: None, ecn_threshold_selector: EcnSelector::L4s }, 40),
        ("red ecn", QdiscConfig::Red(red(false, false)), 40),
        ("adaptive red bytes", QdiscConfig::Red(red(true, true)), 40),
        ("pie ecn", QdiscConfig::Pie(PieConfig { ecn: true, ..PieConfig::default() }), 200),
        ("codel ecn", QdiscConfig::Codel(codel), 1000),
        ("codel", QdiscConfig::Codel(CodelConfig { ecn: false, ..codel }), 1000),
        ("fq_codel ecn", QdiscConfig::FqCodel(fq, codel), 1000),
        // Linux's ce_threshold 1ms with ce_threshold_selector on ECT(1), beside CoDel's law.
        ("fq_codel ce_threshold l4s", QdiscConfig::FqCodel(fq, CodelConfig { ce_threshold: Some(CeThreshold { sojourn_ns: 1_000_000, selector: EcnSelector::L4s }), ..codel }), 1000),
        // Few queues for 8 flows: flows collide, as they do in a real hash table.
        ("fq_codel 4 queues, 300-byte quantum", QdiscConfig::FqCodel(FqConfig { flows: 4, quantum_bytes: 300 }, codel), 1000),
        ("fq", QdiscConfig::Fq(fq), 40),
        // RFC 9332's defaults: the bursts push the Classic delay past its 15 ms target.
        ("dualpi2", QdiscConfig::DualPi2(DualPi2Config::default()), 200),
    ];
    for (name, cfg, limit) in cases {
        let none = WireImpairments::none();
        let (sim, sim_totals) = sim_outcomes(&cfg, Limit::Packets(limit), &arrivals, &none);
        let (relay, relay_totals) = relay_outcomes(&cfg, QueueLimit::Packets(limit), &arrivals, &none);
        let count = |o: &[Outcome], f: fn(&Outcome) -> bool| o.iter().filter(|x| f(x)).count();
        let (drops, lost, marks) = (
            count(&sim, |o| *o == Outcome::Dropped),
            count(&sim, |o| *o == Outcome::Lost),
            count(&sim, |o| matches!(o, Outcome::Delivered { ce: true, .. })),
        );
        let [lost_wire, dropped, marked, duplicated, reordered] = sim_totals;
        assert_eq!((duplicated, reordered), (0, 0));
        eprintln!("{name}: {drops} refused, {dropped} dropped in all, {marks} marked, {lost_wire} lost on the wire of {}", arrivals.len());
        // The trace must exercise every decision for the comparison to mean something.
        assert!(dropped > 100 && lost > 50 && lost_wire > 50, "{name}: {dropped} drops, {lost} lost");
        let marking = match &cfg {
            QdiscConfig::Red(r) => !r.adaptive,
            QdiscConfig::Codel(c) | QdiscConfig::FqCodel(_, c) => c.ecn,
            QdiscConfig::Fq(_) => false,
            _ => true,
        };
        if marking {
            // A marked packet may still be lost on the wire.
            assert!(marks > 10 && marked as usize >= marks, "{name}: {marks} marks");
        }
        if matches!(&cfg, QdiscConfig::Codel(_) | QdiscConfig::FqCodel(..) | QdiscConfig::DualPi2(_)) {
            // CoDel's (PI2's) own drops at dequeue, not only the hard limit's.
            assert!(dropped as usize > drops + 20, "{name}: {dropped} drops, {drops} at arrival");
        }
        assert_eq!(sim_totals, relay_totals, "{name}: (lost on the wire, dropped, marked, duplicated, reordered)");
        if let Some(i) = (0..arrivals.len()).find(|&i| sim[i] != relay[i]) {
            panic!("{name}: packet {i} ({:?}): simulator {:?}, relay {:?}", arrivals[i], sim[i], relay[i]);
        }
    }
}

/// Duplication and reordering on top of loss: the same packets delivered at the same instants,
/// the same ones twice, the same counts, through both of the relay's paths (a discipline that
/// decides at arrival and one that holds frames).
#[test]
fn simulator_and_relay_duplicate_and_reorder_the_same_packets() {
    let arrivals = trace();
    let imp = WireImpairments::new(0.02, 0.05, 3_000_000, SplitMix64::stream(9, StreamKind::LinkDuplicate, 0), SplitMix64::stream(9, StreamKind::LinkReorder, 0));
    let codel = CodelConfig { target_ns: 5_000_000, interval_ns: 100_000_000, ecn: true, mtu_bytes: 1500, ce_threshold: None };
    let cases = [
        ("droptail", QdiscConfig::DropTail { ecn_threshold_packets: None, ecn_threshold_bytes: None, ecn_threshold_selector: EcnSelector::All }, 40),
        ("fq_codel ecn", QdiscConfig::FqCodel(FqConfig { flows: 1024, quantum_bytes: 1500 }, codel), 1000),
    ];
    for (name, cfg, limit) in cases {
        let (sim, sim_totals) = sim_outcomes(&cfg, Limit::Packets(limit), &arrivals, &imp);
        let (relay, relay_totals) = relay_outcomes(&cfg, QueueLimit::Packets(limit), &arrivals, &imp);
        let [_, _, _, duplicated, reordered] = sim_totals;
        eprintln!("{name}: {duplicated} duplicated, {reordered} reordered of {}", arrivals.len());
        assert!(duplicated > 200 && reordered > 500, "{name}: {duplicated} duplicated, {reordered} reordered");
        let twice = sim.iter().filter(|o| matches!(o, Outcome::Delivered { copies: 2, .. })).count() as u64;
        assert_eq!(twice, duplicated, "{name}: every duplicate delivered twice");
        assert_eq!(sim_totals, relay_totals, "{name}: (lost on the wire, dropped, marked, duplicated, reordered)");
        if let Some(i) = (0..arrivals.len()).find(|&i| sim[i] != relay[i]) {
            panic!("{name}: packet {i} ({:?}): simulator {:?}, relay {:?}", arrivals[i], sim[i], relay[i]);
        }
    }
}
