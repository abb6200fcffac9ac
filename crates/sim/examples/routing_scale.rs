//! Spec size and build time of a k = 16 fat-tree (1,024 hosts, 320 switches) with a 1,024-flow
//! permutation: routes computed by the engine (`routing`) against the old all-pairs static table.
//!
//! `cargo run --release -p ccarena-sim --example routing_scale [k]`. Figures for people, no
//! assertions.

use std::time::Instant;

use ccarena_sim::spec::{FlowSpec, RouteSpec};
use ccarena_sim::testkit::{cbr_flow, mbps, ms, FatTree};
use ccarena_sim::Simulation;

fn main() {
    let k: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(16);
    let t = FatTree::new(k, mbps(10_000), 1_000, 100);
    let n = t.hosts();
    // A permutation: host i sends to host (i + n/2) mod n, always in another pod.
    let flows = (0..n).map(|i| FlowSpec::UdpCbr(cbr_flow(&format!("f{i}"), t.host(i), t.host((i + n / 2) % n), mbps(100), 1000))).collect();
    let spec = t.spec(1, ms(10), ms(1), flows);

    let json = spec.to_json();
    let t0 = Instant::now();
    let sim = Simulation::from_json(&json).expect("valid");
    let build = t0.elapsed().as_secs_f64();
    println!(
        "k={k}: {} nodes, {} links, {} flows",
        spec.nodes.len(),
        spec.links.len(),
        spec.flows.len()
    );
    println!(
        "computed routing : spec {:>10} bytes, parse+validate+build {:.3} s, table {:.1} MB",
        json.len(),
        build,
        sim.routes().heap_bytes() as f64 / 1e6
    );

    // The old form: every (node, host) pair's next hop written out (the lowest-index next hop,
    // as networkx's shortest paths gave one).
    let mut legacy = spec.clone();
    legacy.routing = None;
    for node in 0..spec.nodes.len() {
        for dst in (0..n).map(|i| t.host(i)) {
            let entry = sim.routes().entry(node as u32, dst as u32);
            if let Some(&l) = sim.routes().links(&entry).first() {
                legacy.routes.push(RouteSpec { node, dst, link: l as usize });
            }
        }
    }
    let json = legacy.to_json();
    let t0 = Instant::now();
    let old = Simulation::from_json(&json).expect("valid");
    let build = t0.elapsed().as_secs_f64();
    println!(
        "all-pairs table  : spec {:>10} bytes, parse+validate+build {:.3} s, table {:.1} MB ({} routes)",
        json.len(),
        build,
        old.routes().heap_bytes() as f64 / 1e6,
        legacy.routes.len()
    );
}
