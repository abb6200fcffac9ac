//! Multipath TCP in the simulator (issue 32): what it is known for, on short runs.
//!
//! - The data-center result of Raiciu et al., "Improving Datacenter Performance and Robustness
//!   with Multipath TCP" (SIGCOMM 2011, §4): on a fat-tree with ECMP, a permutation of
//!   single-path TCP flows collides on core links and reaches far less than the bisection, and
//!   MPTCP with 8 subflows reaches most of it.
//! - RFC 6356 §2's goal 2 ("do no harm"): at a shared bottleneck, a coupled (LIA) connection of
//!   two subflows takes about one TCP flow's share; uncoupled subflows take about two.
//! - A subflow whose path fails does not take the connection with it (RFC 8684 §3.3.6: data is
//!   reinjected on the others).
//! - Every link conserves packets and a run is bit-identical under its seed.

use ccarena_sim::spec::{FlowSpec, Spec};
use ccarena_sim::testkit::{link_event, mbps, ms, mptcp_flow, secs, tcp_flow, Dumbbell, FatTree};
use ccarena_sim::{Results, Simulation};
use crate::common::{assert_conservation, assert_identical, mean_goodput_bps, run};

/// A permutation of the `n` hosts with no fixed point (a random derangement drawn from `seed`
/// by a small LCG, so the test needs no RNG crate).
fn derangement(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = move |bound: usize| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % bound
    };
    loop {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, next(i + 1));
        }
        if p.iter().enumerate().all(|(i, &v)| i != v) {
            return p;
        }
    }
}

/// The k = 4 fat-tree at 1 Gbit/s (10 µs per link, 100-packet queues) with one flow from every
/// host to its image under a derangement: each an MPTCP-LIA connection of `subflows` subflows,
/// or single-path Reno when `subflows` is 0; a 10 ms minimum RTO.
fn permutation(subflows: u8, seed: u64) -> Spec {
    let t = FatTree::new(4, mbps(1000), 10_000, 100);
    let dst = derangement(t.hosts(), seed);
    let flows = (0..t.hosts())
        .map(|i| {
            let name = format!("f{i}");
            let mut f = match subflows {
                0 => tcp_flow(&name, t.host(i), t.host(dst[i]), "reno"),
                n => mptcp_flow(&name, t.host(i), t.host(dst[i]), "reno", n, "lia"),
            };
            f.min_rto_ns = ms(10); // a data center's (Linux's 200 ms dwarfs a 100 µs RTT)
            FlowSpec::Tcp(f)
        })
        .collect();
    t.spec(seed, ms(800), ms(50), flows)
}

/// Mean goodput of every flow over (from_s, to_s] as a fraction of the 1 Gbit/s each host's
/// link allows (the optimum of a permutation on a full-bisection fat-tree).
fn fraction_of_optimal(res: &Results, from_s: f64, to_s: f64) -> f64 {
    let n = res.flows.rows();
    (0..n).map(|f| mean_goodput_bps(res, f, from_s, to_s)).sum::<f64>() / (n as f64 * 1e9)
}

#[test]
fn on_a_fat_tree_permutation_mptcp_with_8_subflows_beats_single_path_tcp_by_a_clear_margin() {
    let tcp = run(permutation(0, 3));
    let mptcp = run(permutation(8, 3));
    assert_conservation(&mptcp);
    let (tcp_frac, mptcp_frac) = (fraction_of_optimal(&tcp, 0.3, 0.8), fraction_of_optimal(&mptcp, 0.3, 0.8));
    eprintln!("fraction of optimal: single-path TCP {tcp_frac:.3}, MPTCP-LIA × 8 {mptcp_frac:.3}");
    // Raiciu et al. (§4, the FatTree permutation): single-path TCP with ECMP about half of the
    // optimum, MPTCP with 8 subflows about 90%. Measured here: 0.432 and 0.849.
    assert!(mptcp_frac > 0.75, "MPTCP reaches most of the bisection: {mptcp_frac:.3}");
    assert!(mptcp_frac > tcp_frac * 1.4, "a clear margin over TCP: {mptcp_frac:.3} vs {tcp_frac:.3}");
}

/// Two pairs over one 20 Mbit/s, 20 ms bottleneck: an MPTCP connection of two subflows
/// (`coupling`) from pair 0, one Reno flow from pair 1. Returns the connection's goodput over
/// the Reno flow's over the last 40 s of 60, as the mean of three seeds. The links forward with
/// jitter (a packet's serialization time at most): without it, a DropTail dumbbell of equal RTTs
/// is deterministic and its phase effects (Floyd & Jacobson, "On Traffic Phase Effects in
/// Packet-Switched Gateways", 1992) pick the losers (single-path Reno against Reno: 1.03 with
/// jitter-free links, but LIA 1.51 and uncoupled 1.35, the same at every seed).
fn shared_bottleneck_ratio(coupling: &str) -> f64 {
    let d = Dumbbell::new(2, mbps(20), ms(10), 100);
    let ratios: Vec<f64> = [1, 2, 3]
        .iter()
        .map(|&seed| {
            let flows = vec![
                FlowSpec::Tcp(mptcp_flow("mptcp", d.left(0), d.right(0), "reno", 2, coupling)),
                FlowSpec::Tcp(tcp_flow("tcp", d.left(1), d.right(1), "reno")),
            ];
            let mut spec = d.spec(seed, secs(60), ms(500), flows);
            spec.link_jitter = Some(1.0);
            let res = run(spec);
            assert_conservation(&res);
            mean_goodput_bps(&res, 0, 20.0, 60.0) / mean_goodput_bps(&res, 1, 20.0, 60.0)
        })
        .collect();
    eprintln!("{coupling}: MPTCP/TCP goodput per seed {ratios:.2?}");
    ratios.iter().sum::<f64>() / ratios.len() as f64
}

#[test]
fn at_a_shared_bottleneck_coupled_subflows_take_about_one_tcp_share_and_uncoupled_about_two() {
    let uncoupled = shared_bottleneck_ratio("uncoupled");
    // Uncoupled, two Reno subflows take two shares of three (measured 1.80, 2.15, 2.18).
    assert!(uncoupled > 1.6, "uncoupled ≈ two shares: {uncoupled:.2}");
    // RFC 6356 §2 goal 2: no more than a single TCP flow on the best of its paths (here both
    // subflows share one path). Measured (seeds 1–3): LIA 1.24/1.02/1.36, OLIA 0.89/0.81/0.85,
    // BALIA 0.88/1.03/1.36; Reno against Reno 0.92/1.19/0.91.
    for coupling in ["lia", "olia", "balia"] {
        let ratio = shared_bottleneck_ratio(coupling);
        assert!((0.6..1.45).contains(&ratio), "{coupling} ≈ one TCP share: {ratio:.2}");
        assert!(uncoupled > ratio * 1.3, "{coupling} gives way: {uncoupled:.2} vs {ratio:.2}");
    }
}

/// A k = 4 fat-tree with one finite MPTCP transfer of 4 subflows across pods, and a link of
/// subflow 1's data path that no other subflow uses, as the run routes it at time 0: the first
/// seed (from 1) whose ECMP hashes give subflow 1 such a link.
fn one_transfer_and_a_link_only_subflow_1_uses() -> (Spec, usize) {
    const BYTES: u64 = 60_000_000;
    let t = FatTree::new(4, mbps(100), 10_000, 100);
    let mut f = mptcp_flow("f", t.host(0), t.host(12), "reno", 4, "lia");
    // Long enough for subflow 1 to time out 4 times in a row (0.2 + 0.4 + 0.8 + 1.6 s of
    // backed-off RTOs) before the others finish.
    f.bytes = Some(BYTES);
    (1..100)
        .find_map(|seed| {
            let spec = t.spec(seed, secs(12), ms(50), vec![FlowSpec::Tcp(f.clone())]);
            let sim = Simulation::new(spec.clone()).expect("valid");
            let paths: Vec<Vec<usize>> = (0..4).map(|s| sim.subflow_path_pair(0, s).0).collect();
            let only = paths[1].iter().copied().find(|l| paths.iter().enumerate().all(|(s, p)| s == 1 || !p.contains(l)));
            only.map(|l| (spec, l))
        })
        .expect("some seed places subflow 1 on a link of its own")
}

#[test]
fn a_subflow_whose_path_turns_into_a_black_hole_goes_stale_and_the_transfer_completes() {
    let (mut spec, link) = one_transfer_and_a_link_only_subflow_1_uses();
    // A gray failure: the link silently drops everything, and routing does not know.
    spec.events = vec![link_event(ms(300), link, |c| c.loss = Some(1.0))];
    let res = run(spec);
    assert_conservation(&res);
    let done = res.flows.f64("completion_time_s")[0];
    assert!(done.is_finite(), "the connection completes without subflow 1");
    assert_eq!(res.flows.f64("bytes_delivered")[0], 60_000_000.0);
    assert!(res.flows.f64("bytes_reinjected")[0] > 0.0, "subflow 1's data went out on the others");
    let s = &res.subflows;
    let stale_1 = (0..s.rows()).any(|i| s.f64("subflow")[i] == 1.0 && s.f64("stale")[i] == 1.0);
    assert!(stale_1, "subflow 1 is marked stale after its RTOs");
    eprintln!("completed in {done:.2} s, reinjected {} B", res.flows.f64("bytes_reinjected")[0]);
}

#[test]
fn a_link_down_under_a_subflow_reroutes_it_and_the_transfer_completes() {
    let (mut spec, link) = one_transfer_and_a_link_only_subflow_1_uses();
    spec.events = vec![link_event(ms(300), link, |c| c.up = Some(false))];
    let res = run(spec);
    assert_conservation(&res);
    assert!(res.flows.f64("completion_time_s")[0].is_finite());
    assert_eq!(res.flows.f64("bytes_delivered")[0], 60_000_000.0);
    assert!(res.links.f64("down_drops_packets")[link] + res.links.f64("packets_delivered")[link] > 0.0, "subflow 1 used the link before it went down");
}

#[test]
fn a_multipath_run_is_bit_identical_under_its_seed_and_conserves_packets() {
    let spec = permutation(4, 11);
    let short = Spec { duration_ns: ms(200), ..spec };
    let a = run(short.clone());
    let b = run(short);
    assert_conservation(&a);
    assert_identical(&a, &b);
    assert!(a.subflows.rows() > 0);
}

#[test]
fn each_subflow_reports_its_own_path_and_row() {
    let (spec, _) = one_transfer_and_a_link_only_subflow_1_uses();
    let sim = Simulation::new(spec).expect("valid");
    let paths = sim.subflow_paths();
    assert_eq!(paths.len(), 1);
    assert_eq!(paths[0].len(), 4, "one path per subflow");
    let distinct: std::collections::BTreeSet<&Vec<usize>> = paths[0].iter().map(|(d, _)| d).collect();
    assert!(distinct.len() >= 2, "ECMP places the subflows on different paths: {paths:?}");
}
