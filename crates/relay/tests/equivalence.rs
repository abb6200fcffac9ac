//! One link model: the simulator's link (`ccarena_sim::link::Link`) and the relay's
//! (`ccarena_relay::LinkModel`) fed one arrival trace (times, sizes, flows, ECN capability) with
//! the same discipline, limit, rate, delay, wire loss and random streams decide the same fate for
//! every packet: dropped by the queue, marked CE, lost on the wire, or delivered at the same
//! nanosecond. Run for every discipline the relay runs (DropTail with DCTCP's threshold, RED
//! with ECN, Adaptive RED in bytes, PIE with ECN), on a trace that overloads the link in bursts.

use ccarena_cc::{Duration, SimTime};
use ccarena_link::qdisc::pie::PieConfig;
use ccarena_link::qdisc::red::RedConfig;
use ccarena_link::qdisc::Limit;
use ccarena_link::{Qdisc, QdiscConfig, SplitMix64};
use ccarena_relay::link::{FrameInfo, Offered};
use ccarena_relay::{Fate, LinkModel, LinkParams, Loss, QueueLimit};
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
    ect: bool,
}

/// 20 000 arrivals: on/off bursts at up to twice the link rate from 8 flows, sizes 64–1500
/// bytes, half the flows ECN-capable, idle gaps so RED's idle aging and PIE's decay run too.
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
            Arrival { t_ns: t, size, flow, ect: flow & 1 == 0 }
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Dropped,
    Lost,
    Delivered { at_ns: u64, ce: bool },
}

fn sim_outcomes(cfg: &QdiscConfig, limit: Limit, arrivals: &[Arrival]) -> Vec<Outcome> {
    let qdisc = Qdisc::new(cfg, limit, SplitMix64::new(22));
    let mut link = Link::new(0, 1, RATE_BPS, Duration(DELAY_NS), LOSS, qdisc, SplitMix64::new(11));
    let mut out = vec![Outcome::Lost; arrivals.len()];
    let mut arrived = Vec::new();
    let mut drain = |link: &mut Link, until_ns: u64, out: &mut Vec<Outcome>| {
        while let Some(t) = link.next_arrival().filter(|t| t.as_nanos() <= until_ns) {
            arrived.clear();
            link.take_arrivals(t, &mut arrived);
            for p in &arrived {
                let Payload::Data(seg) = p.payload else { unreachable!() };
                out[seg.seq as usize] = Outcome::Delivered { at_ns: t.as_nanos(), ce: seg.ce };
            }
        }
    };
    for (i, a) in arrivals.iter().enumerate() {
        drain(&mut link, a.t_ns, &mut out);
        let seg = DataSegment { seq: i as u64, len: 0, ts_val: SimTime::ZERO, ect: a.ect, ce: false, cwr: false, retransmit: false };
        let pkt = Packet { flow: a.flow, dst: 1, size_bytes: a.size as u32, enqueued_at: SimTime::ZERO, payload: Payload::Data(seg) };
        if !link.enqueue(SimTime(a.t_ns), pkt) {
            out[i] = Outcome::Dropped;
        }
    }
    drain(&mut link, u64::MAX, &mut out);
    out
}

fn relay_outcomes(cfg: &QdiscConfig, limit: QueueLimit, arrivals: &[Arrival]) -> Vec<Outcome> {
    let params = LinkParams { rate_bps: Some(RATE_BPS), limit, delay_ns: DELAY_NS };
    let mut link = LinkModel::with_queue(params, cfg, SplitMix64::new(22), Loss::new(LOSS, SplitMix64::new(11)));
    arrivals
        .iter()
        .map(|a| {
            let Offered { fate, ce } = link.offer_frame(a.t_ns, FrameInfo { ip_bytes: a.size, packets: 1, flow_hash: u64::from(a.flow), ect: a.ect });
            match fate {
                Fate::Dropped => Outcome::Dropped,
                Fate::LostOnWire => Outcome::Lost,
                Fate::Deliver { due_ns } => Outcome::Delivered { at_ns: due_ns, ce },
            }
        })
        .collect()
}

fn red(in_bytes: bool, adaptive: bool) -> RedConfig {
    let (min_th, max_th) = if in_bytes { (7_500, 22_500) } else { (5, 15) };
    RedConfig { min_th, max_th, in_bytes, max_p: 0.1, w_q: 0.02, gentle: true, ecn: !adaptive, idle_packet_bytes: 1500, wait: false, adaptive }
}

#[test]
fn simulator_and_relay_decide_the_same_fates() {
    let arrivals = trace();
    let cases = [
        ("droptail K=10", QdiscConfig::DropTail { ecn_threshold_packets: Some(10), ecn_threshold_bytes: None }, 40),
        ("red ecn", QdiscConfig::Red(red(false, false)), 40),
        ("adaptive red bytes", QdiscConfig::Red(red(true, true)), 40),
        ("pie ecn", QdiscConfig::Pie(PieConfig { ecn: true, ..PieConfig::default() }), 200),
    ];
    for (name, cfg, limit) in cases {
        let sim = sim_outcomes(&cfg, Limit::Packets(limit), &arrivals);
        let relay = relay_outcomes(&cfg, QueueLimit::Packets(limit), &arrivals);
        let count = |o: &[Outcome], f: fn(&Outcome) -> bool| o.iter().filter(|x| f(x)).count();
        let (drops, lost, marks) = (
            count(&sim, |o| *o == Outcome::Dropped),
            count(&sim, |o| *o == Outcome::Lost),
            count(&sim, |o| matches!(o, Outcome::Delivered { ce: true, .. })),
        );
        eprintln!("{name}: {drops} dropped, {marks} marked, {lost} lost on the wire of {}", arrivals.len());
        // The trace must exercise every decision for the comparison to mean something.
        assert!(drops > 100 && lost > 50, "{name}: {drops} drops, {lost} lost");
        if !matches!(&cfg, QdiscConfig::Red(r) if r.adaptive) {
            assert!(marks > 10, "{name}: {marks} marks");
        }
        if let Some(i) = (0..arrivals.len()).find(|&i| sim[i] != relay[i]) {
            panic!("{name}: packet {i} ({:?}): simulator {:?}, relay {:?}", arrivals[i], sim[i], relay[i]);
        }
    }
}
