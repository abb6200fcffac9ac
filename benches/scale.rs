//! Engine benchmark at scale (issue 16, item 7): CUBIC bulk flows on a dumbbell at 1 to 10,000
//! flows, and permutation traffic on k = 8 and k = 16 fat-trees, 1 simulated second each; and
//! the k = 4 fat-tree's permutation as single-path Reno and as MPTCP-LIA with 8 subflows
//! (issue 32: what a multipath flow costs per packet-hop).
//!
//! `cargo bench -p ccarena-sim --bench scale` runs each scenario in its own process (so peak RSS
//! is per scenario) and prints, per scenario: packet-hops (link departures, summed over links) per
//! wall-second, nanoseconds per packet-hop, events per packet-hop, the engine's build and run
//! seconds, the spec's JSON size and peak RSS. `... --bench scale -- NAME` runs one scenario in
//! this process; `SCALE_DURATION_MS=200` shortens the simulated time (for callgrind). The
//! fat-trees carry about a billion packet-hops per simulated second at k = 8 (128 flows at
//! 10 Gbps over 6 hops, ACKs included), so their full second takes minutes (k = 8) to tens of
//! minutes (k = 16); `SCALE_DURATION_MS=50` gives their per-hop figures in seconds. Each line
//! also prints a hash of every result table (two builds with the same hash computed
//! bit-identical results) and the largest event queue seen.
//! A dumbbell's line also gives wall nanoseconds per bottleneck packet (link 0's departures, the
//! issue 35 figure); `benches/cachegrind_scale.py` runs the dumbbells under valgrind's cache
//! simulator for instructions, D1 and last-level misses per bottleneck packet, by phase.
//! `SCALE_THREADS=N` runs the scenario split over N threads (`ccarena_sim::parallel`, issue 35
//! item 3) and prints the parts, the lookahead, packet-hops per wall-second and the result hash,
//! which is the one-thread run's.
//! Release build only; no assertions: the figures are for people (and the note).
//!
//! Build time is `Simulation::from_json` on the serialized spec (parse, validate, build), as the
//! bindings do it. Routes are computed by the engine (`routing = ecmp`: shortest paths, the next
//! hop among equal-cost ones by a hash of each flow's 5-tuple), as the front end asks for them, so
//! the spec holds no route table.

use std::process::Command;
use std::time::Instant;

use ccarena_sim::spec::{FlowSpec, LinkSpec, NodeKind, NodeSpec, RoutingMode, RoutingSpec, Spec, SPEC_FORMAT};
use ccarena_sim::testkit::{droptail_queue, fingerprint, mbps, ms, mptcp_flow, proc_status_kib, secs, tcp_flow};
use ccarena_sim::Simulation;
use ccarena_link::WireSpec;

/// The scenarios: dumbbells by flow count, fat-trees by k.
#[derive(Clone, Copy)]
enum Scenario {
    Dumbbell(usize),
    FatTree(usize),
    /// One host pair with this many flows that start only at the end of the run: what an idle
    /// flow costs in memory.
    Idle(usize),
    /// The k-ary fat-tree's permutation as Reno flows, each single-path (0) or an MPTCP-LIA
    /// connection of this many subflows (issue 32: a multipath flow's per-packet cost).
    FatTreeReno(usize, u8),
    /// The k-ary fat-tree's permutation with this many single-path Reno flows per host pair:
    /// as many TCP connections on the wire as MPTCP's subflows in `FatTreeReno(k, n)`.
    FatTreeRenoParallel(usize, usize),
}

const SCENARIOS: &[(&str, Scenario)] = &[
    ("dumbbell-1", Scenario::Dumbbell(1)),
    ("dumbbell-10", Scenario::Dumbbell(10)),
    ("dumbbell-100", Scenario::Dumbbell(100)),
    ("dumbbell-1000", Scenario::Dumbbell(1000)),
    ("dumbbell-10000", Scenario::Dumbbell(10_000)),
    ("fattree-k8", Scenario::FatTree(8)),
    ("fattree-k16", Scenario::FatTree(16)),
    ("idle-10000", Scenario::Idle(10_000)),
    ("fattree-k4-reno", Scenario::FatTreeReno(4, 0)),
    ("fattree-k4-mptcp2", Scenario::FatTreeReno(4, 2)),
    ("fattree-k4-reno-x2", Scenario::FatTreeRenoParallel(4, 2)),
    ("fattree-k4-mptcp4", Scenario::FatTreeReno(4, 4)),
    ("fattree-k4-reno-x4", Scenario::FatTreeRenoParallel(4, 4)),
    ("fattree-k4-mptcp8", Scenario::FatTreeReno(4, 8)),
    ("fattree-k4-reno-x8", Scenario::FatTreeRenoParallel(4, 8)),
];

const DUMBBELL_RATE_BPS: u64 = mbps(1000);
const DUMBBELL_ACCESS_BPS: u64 = mbps(10_000);
const DUMBBELL_DELAY_NS: u64 = ms(20);
const FAT_TREE_RATE_BPS: u64 = mbps(10_000);
/// Per-link propagation delay in the fat-tree, ns.
const FAT_TREE_DELAY_NS: u64 = 1_000;
const FAT_TREE_QUEUE_PACKETS: u64 = 100;
const MTU_BYTES: u64 = 1500;
/// Flows start spread evenly over this first part of the run (no synchronized slow starts).
const START_SPREAD_NS: u64 = ms(100);
const SAMPLE_INTERVAL_NS: u64 = ms(100);

fn duration_ns() -> u64 {
    std::env::var("SCALE_DURATION_MS").ok().and_then(|v| v.parse().ok()).map(ms).unwrap_or(secs(1))
}


fn cubic(i: usize, n: usize, src: usize, dst: usize) -> FlowSpec {
    let mut f = tcp_flow(&format!("cubic{i}"), src, dst, "cubic");
    f.start_ns = START_SPREAD_NS * i as u64 / n as u64;
    FlowSpec::Tcp(f)
}

fn link(nodes: &[NodeSpec], from: usize, to: usize, rate_bps: u64, delay_ns: u64, queue_packets: u64) -> LinkSpec {
    LinkSpec {
        name: format!("{}->{}", nodes[from].name, nodes[to].name),
        from,
        to,
        rate_bps,
        delay_ns,
        wire: WireSpec::with_loss(0.0),
        queue: droptail_queue(queue_packets),
        sample: None,
        trace: None,
    }
}

/// The dumbbell of `testkit::Dumbbell` (left hosts, r0, r1, right hosts; link 0 the forward
/// bottleneck) with `n` CUBIC flows left i → right i, a BDP bottleneck buffer, 10,000-packet
/// access queues. The access links' queues are not sampled, as a scenario's are not
/// (`output.queues = "auto"`, the front end's default): at 10,000 flows their rows were more than
/// half the run's memory and a sixth of its wall time, which no user run pays.
fn dumbbell(n: usize) -> Spec {
    let rtt_ns = 2 * DUMBBELL_DELAY_NS;
    let bdp_packets = (DUMBBELL_RATE_BPS as u128 * rtt_ns as u128 / 8 / 1_000_000_000 / MTU_BYTES as u128) as u64;
    let (r0, r1) = (n, n + 1);
    let right = |i: usize| n + 2 + i;
    let mut nodes: Vec<NodeSpec> = (0..n).map(|i| NodeSpec { name: format!("left{i}"), kind: NodeKind::Host }).collect();
    nodes.push(NodeSpec { name: "r0".into(), kind: NodeKind::Router });
    nodes.push(NodeSpec { name: "r1".into(), kind: NodeKind::Router });
    nodes.extend((0..n).map(|i| NodeSpec { name: format!("right{i}"), kind: NodeKind::Host }));
    let mut links = vec![
        link(&nodes, r0, r1, DUMBBELL_RATE_BPS, DUMBBELL_DELAY_NS, bdp_packets),
        link(&nodes, r1, r0, DUMBBELL_RATE_BPS, DUMBBELL_DELAY_NS, bdp_packets),
    ];
    for i in 0..n {
        let (l, r) = (i, right(i));
        for (from, to) in [(l, r0), (r0, l), (r, r1), (r1, r)] {
            links.push(LinkSpec { sample: Some(false), ..link(&nodes, from, to, DUMBBELL_ACCESS_BPS, 0, 10_000) });
        }
    }
    let flows = (0..n).map(|i| cubic(i, n, i, right(i))).collect();
    spec(nodes, links, flows)
}

fn spec(nodes: Vec<NodeSpec>, links: Vec<LinkSpec>, flows: Vec<FlowSpec>) -> Spec {
    Spec {
        format: SPEC_FORMAT,
        seed: 1,
        duration_ns: duration_ns(),
        sample_interval_ns: SAMPLE_INTERVAL_NS,
        nodes,
        links,
        routing: Some(RoutingSpec { mode: RoutingMode::Ecmp }),
        routes: Vec::new(),
        flows,
        events: Vec::new(),
        link_jitter: None,
        pcap: None,
    }
}

/// A k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge and k/2 aggregation
/// switches, (k/2)² core switches, k/2 hosts per edge switch; every link `FAT_TREE_RATE_BPS`.
/// Traffic: host h sends to host (h + hosts/2) mod hosts (a permutation across pods).
fn fat_tree(k: usize) -> Spec {
    fat_tree_with(k, 1, |i, n, src, dst| cubic(i, n, src, dst))
}

/// [`fat_tree`] with Reno flows, single-path (`subflows` 0) or MPTCP-LIA connections.
fn fat_tree_reno(k: usize, subflows: u8) -> Spec {
    fat_tree_with(k, 1, |i, n, src, dst| {
        let mut f = match subflows {
            0 => tcp_flow(&format!("reno{i}"), src, dst, "reno"),
            s => mptcp_flow(&format!("mptcp{i}"), src, dst, "reno", s, "lia"),
        };
        f.start_ns = START_SPREAD_NS * i as u64 / n as u64;
        FlowSpec::Tcp(f)
    })
}

/// [`fat_tree`] with `per_pair` single-path Reno flows between each host pair.
fn fat_tree_reno_parallel(k: usize, per_pair: usize) -> Spec {
    fat_tree_with(k, per_pair, |i, n, src, dst| {
        let mut f = tcp_flow(&format!("reno{i}"), src, dst, "reno");
        f.start_ns = START_SPREAD_NS * i as u64 / n as u64;
        FlowSpec::Tcp(f)
    })
}

/// The fat-tree of [`fat_tree`] with flow `i` of `n` from `src` to `dst` made by `flow`.
/// `per_pair` flows between each host pair; `flow(i, n, src, dst)` builds flow `i` of `n`.
fn fat_tree_with(k: usize, per_pair: usize, flow: impl Fn(usize, usize, usize, usize) -> FlowSpec) -> Spec {
    let half = k / 2;
    let n_hosts = k * k * k / 4;
    let mut nodes: Vec<NodeSpec> = Vec::new();
    let mut node = |name: String, kind: NodeKind| {
        nodes.push(NodeSpec { name, kind });
        nodes.len() - 1
    };
    let hosts: Vec<usize> = (0..n_hosts).map(|h| node(format!("h{h}"), NodeKind::Host)).collect();
    let edge: Vec<usize> = (0..k * half).map(|e| node(format!("edge{e}"), NodeKind::Router)).collect();
    let agg: Vec<usize> = (0..k * half).map(|a| node(format!("agg{a}"), NodeKind::Router)).collect();
    let core: Vec<usize> = (0..half * half).map(|c| node(format!("core{c}"), NodeKind::Router)).collect();
    let mut links = Vec::new();
    let mut connect = |a: usize, b: usize| {
        for (from, to) in [(a, b), (b, a)] {
            links.push(link(&nodes, from, to, FAT_TREE_RATE_BPS, FAT_TREE_DELAY_NS, FAT_TREE_QUEUE_PACKETS));
        }
    };
    for (h, &host) in hosts.iter().enumerate() {
        connect(host, edge[h / half]);
    }
    for pod in 0..k {
        for e in 0..half {
            for a in 0..half {
                connect(edge[pod * half + e], agg[pod * half + a]);
            }
        }
        for a in 0..half {
            for c in 0..half {
                connect(agg[pod * half + a], core[a * half + c]);
            }
        }
    }
    let n = n_hosts * per_pair;
    let flows = (0..n).map(|i| {
        let h = i / per_pair;
        flow(i, n, hosts[h], hosts[(h + n_hosts / 2) % n_hosts])
    }).collect();
    spec(nodes, links, flows)
}


/// Bytes of memory per idle flow: the resident memory the flows' specs and the built
/// simulation add over an empty process, divided by the flows.
fn idle_flow_bytes(n: usize) -> f64 {
    let before = proc_status_kib("VmRSS");
    let mut spec = dumbbell(1);
    let end = spec.duration_ns;
    spec.flows = (0..n)
        .map(|i| {
            let mut f = tcp_flow(&format!("idle{i}"), 0, 3, "cubic");
            f.start_ns = end;
            FlowSpec::Tcp(f)
        })
        .collect();
    let sim = Simulation::new(spec).expect("valid spec");
    let bytes = (proc_status_kib("VmRSS") - before) as f64 * 1024.0 / n as f64;
    drop(sim);
    bytes
}

fn run_one(name: &str) {
    let &(_, scenario) = SCENARIOS.iter().find(|s| s.0 == name).expect("known scenario");
    let spec = match scenario {
        Scenario::Dumbbell(n) => dumbbell(n),
        Scenario::FatTree(k) => fat_tree(k),
        Scenario::FatTreeReno(k, subflows) => fat_tree_reno(k, subflows),
        Scenario::FatTreeRenoParallel(k, per_pair) => fat_tree_reno_parallel(k, per_pair),
        Scenario::Idle(n) => {
            println!("{name:<15} memory per idle flow {:.0} bytes (spec and engine state, {n} flows)", idle_flow_bytes(n));
            return;
        }
    };
    if let Some(threads) = std::env::var("SCALE_THREADS").ok().and_then(|v| v.parse::<usize>().ok()) {
        let part = ccarena_sim::parallel::partition(&spec, threads);
        let look = ccarena_sim::parallel::lookahead_ns(&spec, &part);
        let mut split = ccarena_sim::parallel::SplitRun::new(spec, threads).expect("valid spec");
        let parts = split.parts();
        let t1 = Instant::now();
        while !split.finished() {
            let t = split.now() + ccarena_cc::Duration(ms(10));
            split.run_until(t);
        }
        let run = t1.elapsed().as_secs_f64();
        let mut sim = split.finish();
        let res = sim.results();
        let hops: f64 = sim.links().iter().map(|l| l.counters().departures as f64).sum();
        let delivered: f64 = res.flows.f64("bytes_delivered").iter().sum();
        let events = sim.events_processed();
        let fingerprint = fingerprint(&res);
        println!(
            "{name:<15} threads {threads} (parts {parts}, lookahead {look:?} ns) hops/s {:>10.0}  ns/hop {:>6.0}  run {run:7.2} s  ({hops:.0} hops, {events} events, goodput {:.1} Mbps, results {fingerprint:016x})",
            hops / run,
            run * 1e9 / hops,
            delivered * 8.0 / (duration_ns() as f64 / 1e9) / 1e6,
        );
        return;
    }
    let json = serde_json::to_string(&spec).expect("serializable spec");
    drop(spec);
    let t0 = Instant::now();
    let mut sim = Simulation::from_json(&json).expect("valid spec");
    let build = t0.elapsed().as_secs_f64();
    let json_bytes = json.len();
    drop(json);
    let t1 = Instant::now();
    let mut max_pending = 0;
    while !sim.finished() {
        let t = sim.now() + ccarena_cc::Duration(ms(10));
        sim.run_until(t);
        max_pending = max_pending.max(sim.pending_events());
    }
    let run = t1.elapsed().as_secs_f64();
    let res = sim.results();
    let hops: f64 = sim.links().iter().map(|l| l.counters().departures as f64).sum();
    // Link 0 is a dumbbell's forward bottleneck: the figure is wall time per packet
    // that crosses it (a fat-tree has no one bottleneck, so its line leaves this out).
    let bottleneck = match scenario {
        Scenario::Dumbbell(_) => {
            let pkts = sim.links()[0].counters().departures;
            format!("  ns/bottleneck-pkt {:>6.0}  bottleneck {pkts} pkts", run * 1e9 / pkts as f64)
        }
        _ => String::new(),
    };
    let dur_s = sim.end().as_secs_f64();
    let fingerprint = fingerprint(&res);
    let goodput: f64 = res.flows.f64("bytes_delivered").iter().sum::<f64>() * 8.0 / dur_s;
    println!(
        "{name:<15} hops/s {:>10.0}  ns/hop {:>6.0}{bottleneck}  events/hop {:>5.2}  build {build:6.2} s  run {run:7.2} s  spec {:>8.1} MB  peak RSS {:>8} KiB  ({hops:.0} hops, {} events, goodput {:.1} Mbps, results {fingerprint:016x}, heap ≤ {max_pending})",
        hops / run,
        run * 1e9 / hops,
        sim.events_processed() as f64 / hops,
        json_bytes as f64 / 1e6,
        proc_status_kib("VmHWM"),
        sim.events_processed(),
        goodput / 1e6,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if let Some(name) = args.first() {
        run_one(name);
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    println!(
        "ccarena engine benchmark at scale: CUBIC, {} simulated ms, 100 ms samples",
        duration_ns() / 1_000_000
    );
    for (name, _) in SCENARIOS {
        let status = Command::new(&exe).arg(name).status().expect("spawn scenario");
        assert!(status.success(), "scenario {name} failed");
    }
}
