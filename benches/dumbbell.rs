//! Engine benchmark: CUBIC on a dumbbell (issue 2's three scenarios), plus a recovery stress case,
//! and the same CUBIC dumbbells over QUIC (`-quic`: RFC 9002 recovery in place of TCP's) for the
//! per-packet cost of each transport side by side.
//!
//! `cargo bench -p ccarena-sim --bench dumbbell` runs each scenario in its own process (so peak
//! RSS is per scenario) and prints wall time, bottleneck packets per wall-second, events per
//! wall-second and peak RSS. `... --bench dumbbell -- NAME` runs one scenario in this process.
//! With `DUMBBELL_HASH=1` each line also gives a hash of every result table (two builds that
//! print the same hash computed bit-identical results); it is off by default because hashing a
//! 100-flow run's samples costs about a tenth of the run's instructions, which callgrind counts.
//! Release build only; no assertions: the figures are for people (and the note).

use std::process::Command;
use std::time::Instant;

use ccarena_sim::spec::FlowSpec;
use ccarena_sim::testkit::{fingerprint, mbps, ms, proc_status_kib, quic_flow, secs, tcp_flow, Dumbbell};
use ccarena_sim::Simulation;

/// (name, pairs, bottleneck rate, access rate, flavor)
const SCENARIOS: &[(&str, usize, u64, u64, &str)] = &[
    ("2-cubic-100mbps", 2, mbps(100), mbps(1000), "cubic"),
    ("100-cubic-100mbps", 100, mbps(100), mbps(1000), "cubic"),
    ("2-cubic-1gbps", 2, mbps(1000), mbps(10_000), "cubic"),
    // Scalable (β = 0.875, no HyStart) overshoots slow start by far on a 1 Gbps access link as
    // fast as the bottleneck: a long SACK recovery that loses tens of thousands of
    // retransmissions. Guards the cost of lost-retransmission handling.
    ("1-scalable-1gbps-overshoot", 1, mbps(1000), mbps(1000), "scalable"),
    ("2-cubic-quic-100mbps", 2, mbps(100), mbps(1000), "cubic"),
    ("100-cubic-quic-100mbps", 100, mbps(100), mbps(1000), "cubic"),
    ("2-cubic-quic-1gbps", 2, mbps(1000), mbps(10_000), "cubic"),
];

const BOTTLENECK_DELAY_NS: u64 = ms(20);
const DURATION_NS: u64 = secs(60);

/// The run's length: 60 simulated s, or `DUMBBELL_DURATION_S` (for callgrind).
fn duration_ns() -> u64 {
    std::env::var("DUMBBELL_DURATION_S").ok().and_then(|v| v.parse().ok()).map(secs).unwrap_or(DURATION_NS)
}
const MTU_BYTES: u64 = 1500;


/// `DUMBBELL_HASH=1`: print a hash of the results.
fn hash_wanted() -> bool {
    std::env::var("DUMBBELL_HASH").is_ok_and(|v| v == "1")
}

fn run_one(name: &str) {
    let &(_, pairs, rate, access, flavor) = SCENARIOS.iter().find(|s| s.0 == name).expect("known scenario");
    // BDP buffer: rate × RTT (2 × 20 ms bottleneck, zero-delay access links).
    let rtt_ns = 2 * BOTTLENECK_DELAY_NS;
    let bdp_packets = (rate as u128 * rtt_ns as u128 / 8 / 1_000_000_000 / MTU_BYTES as u128) as u64;
    let mut d = Dumbbell::new(pairs, rate, BOTTLENECK_DELAY_NS, bdp_packets);
    d.access_rate_bps = access;
    let make = if name.contains("-quic-") { quic_flow } else { tcp_flow };
    let flows = (0..pairs).map(|i| FlowSpec::Tcp(make(&format!("{flavor}{i}"), d.left(i), d.right(i), flavor))).collect();
    let spec = d.spec(1, duration_ns(), ms(100), flows);
    let mut sim = Simulation::new(spec).expect("valid spec");
    let t0 = Instant::now();
    sim.run();
    let wall = t0.elapsed().as_secs_f64();
    let res = sim.results();
    let pkts = res.links.f64("packets_delivered")[d.bottleneck_link()];
    let goodput: f64 = res.flows.f64("bytes_delivered").iter().sum::<f64>() * 8.0 / (duration_ns() as f64 / 1e9);
    println!(
        "{name:<20} wall {wall:7.2} s  bottleneck {:>10.0} pkt/s  events {:>11.0} /s  peak RSS {:>7} KiB  ({} bottleneck pkts, goodput {:.1} Mbps, BDP {} pkts{})",
        pkts / wall,
        sim.events_processed() as f64 / wall,
        proc_status_kib("VmHWM"),
        pkts,
        goodput / 1e6,
        bdp_packets,
        if hash_wanted() { format!(", results {:016x}", fingerprint(&res)) } else { String::new() },
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if let Some(name) = args.first() {
        run_one(name);
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    println!("ccarena engine benchmark: bulk flows on a dumbbell, 100 ms samples, 60 simulated s");
    for (name, ..) in SCENARIOS {
        let status = Command::new(&exe).arg(name).status().expect("spawn scenario");
        assert!(status.success(), "scenario {name} failed");
    }
}
