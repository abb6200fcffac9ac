//! Queue-discipline benchmark: the per-packet cost of each discipline in the simulator.
//!
//! `cargo bench -p ccarena-sim --bench qdisc` prints, per discipline:
//! - **link**: one simulator link (10 Mbps, 5 ms) fed a synthetic overload trace of 2 million
//!   packets from 64 flows (bursts at up to twice the rate, mixed sizes, half ECN-capable —
//!   ECT(0) and ECT(1) in equal parts, so DualPI2 fills both its queues):
//!   wall ns per offered packet for enqueue, dequeue, serialization and the pipe — the
//!   discipline's own cost plus the link's;
//! - **sim**: a whole run, 8 CUBIC flows on a 100 Mbps / 20 ms dumbbell with a 1000-packet
//!   bottleneck queue of that discipline for 20 simulated s: wall ns per bottleneck packet
//!   (TCP, events and routing included) and the mean sojourn time it kept.
//!
//! The L4S variants (issue 31) change the traffic as well as the queue: `dualpi2+l4s` is
//! DualPI2 with three quarters of the link trace's packets ECT(1) (the rest Not-ECT) and, in the
//! run, 4 Prague flows beside 4 CUBIC flows with ECN; `codel+ce` is CoDel with ECN and a 1 ms CE
//! threshold on every ECT packet (Linux's `ce_threshold`) under 8 DCTCP flows; `fq_codel+ce` is
//! FQ-CoDel with a 1 ms threshold on ECT(1) only (`ce_threshold_selector`) under the Prague and
//! CUBIC mix. The link trace of the `+ce` variants is the L4S one too.
//!
//! Release build only; no assertions: the figures are for people.

use std::time::Instant;

use ccarena_cc::{Duration, SimTime};
use ccarena_link::qdisc::codel::CeThreshold;
use ccarena_link::qdisc::{EcnSelector, Limit};
use ccarena_link::SplitMix64;
use ccarena_sim::link::Link;
use ccarena_sim::packet::{Packet, Payload};
use ccarena_sim::spec::{Discipline, FlowSpec, QueueSpec};
use ccarena_sim::testkit::{make_discipline, make_red, mbps, ms, red_packets, secs, tcp_flow, Dumbbell};
use ccarena_sim::Simulation;
use ccarena_transport::DataSegment;

const PACKETS: usize = 2_000_000;

/// The queue spec of a 1000-packet queue of `name`.
fn queue(name: &str) -> QueueSpec {
    let mut spec = Dumbbell::new(1, mbps(10), ms(5), 1000).spec(1, secs(1), ms(100), vec![]);
    let q = &mut spec.links[0].queue;
    match name {
        "droptail" => {}
        "droptail+K" => q.ecn_threshold_packets = Some(20),
        "red" => make_red(q, red_packets(50, 150)),
        "ared" => {
            let mut r = red_packets(50, 150);
            r.adaptive = true;
            make_red(q, r)
        }
        "codel" => make_discipline(q, Discipline::Codel, true),
        "fq_codel" => make_discipline(q, Discipline::FqCodel, true),
        "pie" => make_discipline(q, Discipline::Pie, true),
        "fq" => make_discipline(q, Discipline::Fq, false),
        "dualpi2" | "dualpi2+l4s" => make_discipline(q, Discipline::DualPi2, false),
        "codel+ce" => {
            make_discipline(q, Discipline::Codel, true);
            q.codel.as_mut().expect("codel").ce_threshold = Some(CeThreshold { sojourn_ns: ms(1), selector: EcnSelector::All });
        }
        "fq_codel+ce" => {
            make_discipline(q, Discipline::FqCodel, true);
            let f = q.fq_codel.as_mut().expect("fq_codel");
            (f.ce_threshold_ns, f.ce_threshold_selector) = (Some(ms(1)), Some(EcnSelector::L4s));
        }
        _ => unreachable!(),
    }
    q.clone()
}

/// True for the L4S variants (their traffic mix differs, see the module's doc).
fn l4s_variant(name: &str) -> bool {
    name.ends_with("+l4s") || name.ends_with("+ce")
}

/// The codepoint of `flow`'s packets: even flows ECN-capable, a quarter ECT(0) and a quarter
/// ECT(1) (DualPI2's L4S queue; every other discipline reads only "ECN-capable"); with `l4s`,
/// three quarters ECT(1) and a quarter Not-ECT.
fn ecn_of(flow: u32, l4s: bool) -> ccarena_transport::Ecn {
    match (flow & 3, l4s) {
        (1, true) => ccarena_transport::Ecn::NotEct,
        (_, true) => ccarena_transport::Ecn::Ect1,
        (0, false) => ccarena_transport::Ecn::Ect0,
        (2, false) => ccarena_transport::Ecn::Ect1,
        _ => ccarena_transport::Ecn::NotEct,
    }
}

/// The flavors of the run's 8 flows: CUBIC without ECN, or for the L4S variants 4 Prague and 4
/// CUBIC with ECN (`codel+ce`: 8 DCTCP).
fn flavors(name: &str) -> (Vec<&'static str>, bool) {
    match name {
        "codel+ce" => (vec!["dctcp"; 8], true),
        n if l4s_variant(n) => (["prague", "cubic"].repeat(4), true),
        _ => (vec!["cubic"; 8], false),
    }
}

/// Wall ns per packet through one link.
fn link_ns_per_packet(q: &QueueSpec, l4s: bool) -> (f64, u64, u64) {
    let cfg = q.qdisc_config();
    let qdisc = ccarena_link::Qdisc::new(&cfg, Limit::Packets(q.limit_packets.unwrap_or(1000)), SplitMix64::new(2));
    let mut link = Link::new(0, 1, mbps(10), Duration(ms(5)), 0.0, qdisc, SplitMix64::new(1));
    let mut r = SplitMix64::new(7);
    let mut out = Vec::with_capacity(64);
    let mut t = 0u64;
    let start = Instant::now();
    for i in 0..PACKETS {
        // On/off: 10 000 packets at ~2× the rate, then 10 000 at ~0.6×.
        let gap = if (i / 10_000) % 2 == 0 { 600_000 } else { 2_000_000 };
        t += r.next_u64() % gap;
        let flow = (r.next_u64() % 64) as u32;
        let size = if r.next_u64() & 3 == 0 { 64 } else { 1500 };
        let seg = DataSegment { seq: i as u64, len: 0, ts_val: SimTime::ZERO, ecn: ecn_of(flow, l4s), cwr: false, retransmit: false };
        link.enqueue(SimTime(t), Packet { flow, dst: 1, size_bytes: size, payload: Payload::Data(seg) });
        if let Some(a) = link.next_arrival().filter(|a| a.as_nanos() <= t) {
            out.clear();
            link.take_arrivals(a.max(SimTime(t)), &mut out);
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / PACKETS as f64;
    let c = link.counters();
    (ns, c.packets_dropped_queue, c.packets_marked)
}

/// Wall ns per bottleneck packet and the mean sojourn (ms) of a whole dumbbell run.
fn sim_ns_per_packet(q: &QueueSpec, name: &str) -> (f64, f64) {
    let d = Dumbbell::new(8, mbps(100), ms(20), 1000);
    let (flavors, ecn) = flavors(name);
    let flows = flavors
        .iter()
        .enumerate()
        .map(|(i, flavor)| {
            let mut f = tcp_flow(&format!("{flavor}{i}"), d.left(i), d.right(i), flavor);
            f.ecn |= ecn;
            FlowSpec::Tcp(f)
        })
        .collect();
    let mut spec = d.spec(1, secs(20), ms(100), flows);
    spec.links[d.bottleneck_link()].queue = q.clone();
    let mut sim = Simulation::new(spec).expect("valid spec");
    let start = Instant::now();
    sim.run();
    let wall = start.elapsed().as_nanos() as f64;
    let c = sim.links()[d.bottleneck_link()].counters();
    (wall / c.departures as f64, c.sojourn_total_ns as f64 / c.departures as f64 / 1e6)
}

fn main() {
    println!("per-packet cost of each queue discipline (release; wall time)");
    println!("{:<12} {:>13} {:>9} {:>9}   {:>18} {:>13}", "discipline", "link ns/pkt", "drops", "marks", "sim ns/bottl. pkt", "sojourn ms");
    let names = ["droptail", "droptail+K", "red", "ared", "codel", "fq_codel", "pie", "fq", "dualpi2", "dualpi2+l4s", "codel+ce", "fq_codel+ce"];
    // `cargo bench ... -- codel` runs the disciplines whose name contains an argument.
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    for name in names.into_iter().filter(|n| only.is_empty() || only.iter().any(|o| n.contains(o.as_str()))) {
        let q = queue(name);
        let (link_ns, drops, marks) = link_ns_per_packet(&q, l4s_variant(name));
        let (sim_ns, sojourn) = sim_ns_per_packet(&q, name);
        println!("{name:<12} {link_ns:>13.1} {drops:>9} {marks:>9}   {sim_ns:>18.1} {sojourn:>13.2}");
    }
}
