//! Linux's recovery profile under persistent reordering: a permutation of CUBIC flows on a k = 4
//! fat-tree with per-packet spraying (each flow's packets take different equal-cost paths, so
//! they arrive reordered). D-SACK (RFC 2883) tells the sender its retransmissions were spurious:
//! it widens RACK's reordering window (RFC 8985 §6.2 step 4) and undoes the window reduction
//! (RFC 3708, RFC 4015), so the flows get close to what a reordering-tolerant sender (SACK with
//! a duplicate-ACK threshold of 50) gets.

use crate::common;

use ccarena_sim::spec::{RoutingMode, RoutingSpec};
use ccarena_sim::testkit::{mbps, ms, tcp_flow, FatTree};
use crate::common::{assert_conservation, run, tcp};

/// Aggregate goodput of a 16-flow permutation (host i sends to host i + 4, in the next pod)
/// over (0.1 s, 0.4 s], as a fraction of full bisection (16 Gbit/s).
fn permutation_share(recovery: &str, dupthresh: u32) -> f64 {
    let t = FatTree::new(4, mbps(1000), 10_000, 100);
    let n = t.hosts();
    let flows = (0..n)
        .map(|i| {
            let mut f = tcp_flow(&format!("p{i}"), t.host(i), t.host((i + 4) % n), "cubic");
            f.recovery = recovery.to_string();
            f.dupthresh = dupthresh;
            tcp(f)
        })
        .collect();
    let mut spec = t.spec(5, ms(400), ms(50), flows);
    spec.routing = Some(RoutingSpec { mode: RoutingMode::Spray });
    let res = run(spec);
    assert_conservation(&res);
    let total: f64 = (0..n).map(|f| common::mean_goodput_bps(&res, f, 0.1, 0.4)).sum();
    total / (n as f64 * mbps(1000) as f64)
}

#[test]
fn linux_recovery_tolerates_spraying_reordering() {
    let linux = permutation_share("linux", 3);
    let tolerant = permutation_share("sack", 50);
    eprintln!("share of full bisection: linux {linux:.3}, sack dupthresh 50 {tolerant:.3}");
    assert!(tolerant > 0.8, "the reordering-tolerant reference fills the fabric ({tolerant:.3})");
    assert!(linux > 0.8 * tolerant, "linux {linux:.3} vs tolerant {tolerant:.3}");
}
