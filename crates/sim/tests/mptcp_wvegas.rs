//! wVegas, the delay-based coupled controller for Multipath TCP (Cao, Xu, Fu, "Delay-based
//! Congestion Control for Multipath TCP", IEEE ICNP 2012; crates/cc/src/wvegas.rs), in the
//! simulator: what its source claims for it, on short runs.
//!
//! - At a bottleneck its subflows share, the connection holds as many packets queued as one
//!   Vegas flow and so takes about one Vegas flow's share (§III-B; RFC 6356 §2's goal 2).
//! - On two disjoint paths, one with a deep standing queue of cross traffic, it moves its
//!   traffic to the other (§III-C: queueing delay balances the load).
//! - Being delay-based, it keeps the bottleneck's queue short where LIA fills it.

use ccarena_sim::spec::{
    FlowSpec, LinkSpec, NodeKind, NodeSpec, RoutingMode, RoutingSpec, Spec, WireSpec, SPEC_FORMAT,
};
use ccarena_sim::testkit::{droptail_queue, mbps, ms, mptcp_flow, secs, tcp_flow, Dumbbell};
use ccarena_sim::{Results, Simulation};
use crate::common::{assert_conservation, mean_goodput_bps, run};

/// Mean of column `name` of the subflows table for `subflow` of flow 0 over `(from_s, to_s]`.
fn subflow_mean(res: &Results, subflow: usize, name: &str, from_s: f64, to_s: f64) -> f64 {
    let s = &res.subflows;
    let (t, f, k, v) = (s.f64("time_s"), s.f64("flow"), s.f64("subflow"), s.f64(name));
    let vals: Vec<f64> = (0..t.len())
        .filter(|&i| f[i] == 0.0 && k[i] as usize == subflow && t[i] > from_s + 1e-9 && t[i] <= to_s + 1e-9)
        .map(|i| v[i])
        .collect();
    assert!(!vals.is_empty(), "no samples of subflow {subflow}");
    vals.iter().sum::<f64>() / vals.len() as f64
}

/// Mean sojourn time of `link`'s queue after `from_s`, ms.
fn mean_sojourn_ms(res: &Results, link: usize, from_s: f64) -> f64 {
    let q = &res.queues;
    let (t, l, v) = (q.f64("time_s"), q.f64("link"), q.f64("sojourn_mean_s"));
    let vals: Vec<f64> =
        (0..t.len()).filter(|&i| l[i] as usize == link && t[i] > from_s && !v[i].is_nan()).map(|i| v[i]).collect();
    1e3 * vals.iter().sum::<f64>() / vals.len() as f64
}

#[test]
fn at_a_shared_bottleneck_wvegas_takes_about_one_vegas_flows_share() {
    // 20 Mbit/s, 10 ms, 100 packets; a 2-subflow wVegas connection and one Vegas flow.
    let d = Dumbbell::new(2, mbps(20), ms(10), 100);
    let ratio = |coupling: &str| {
        let flows = vec![
            FlowSpec::Tcp(mptcp_flow("mptcp", d.left(0), d.right(0), "vegas", 2, coupling)),
            FlowSpec::Tcp(tcp_flow("vegas", d.left(1), d.right(1), "vegas")),
        ];
        let mut spec = d.spec(1, secs(20), ms(500), flows);
        spec.link_jitter = Some(1.0);
        let res = run(spec);
        assert_conservation(&res);
        mean_goodput_bps(&res, 0, 5.0, 20.0) / mean_goodput_bps(&res, 1, 5.0, 20.0)
    };
    let (wvegas, uncoupled) = (ratio("wvegas"), ratio("uncoupled"));
    eprintln!("MPTCP/Vegas goodput: wvegas {wvegas:.2}, uncoupled Vegas subflows {uncoupled:.2}");
    // Measured (seed 1): wVegas 0.74, uncoupled 3.43 (a subflow that starts behind the other's
    // queue takes it for BaseRTT and never sees its own queue: Vegas's known weakness).
    assert!((0.6..1.5).contains(&wvegas), "wVegas ≈ one Vegas share: {wvegas:.2}");
    assert!(uncoupled > wvegas * 1.3, "uncoupled takes more: {uncoupled:.2} vs {wvegas:.2}");
}

/// Hosts S (0), D (1) and C (2); routers R0 (3), M1 (4), M2 (5), R1 (6). S reaches D over two
/// equal-cost paths S–R0–M1–R1–D and S–R0–M2–R1–D whose 10 Mbit/s, 10 ms, 200-packet links
/// M1→R1 (link 6) and M2→R1 (link 8) are the bottlenecks; C reaches D through M1 only. Flow 0:
/// a 2-subflow MPTCP connection S→D (`flavor`, `coupling`); flow 1: a Reno flow C→D, whose
/// sawtooth keeps M1→R1's queue deep (the BDP is ~30 packets). ECMP routing: the first seed
/// whose hashes put the subflows on different paths.
fn two_paths_one_congested(flavor: &str, coupling: &str) -> (Spec, usize) {
    let nodes = [("s", true), ("d", true), ("c", true), ("r0", false), ("m1", false), ("m2", false), ("r1", false)]
        .map(|(name, host)| NodeSpec { name: name.into(), kind: if host { NodeKind::Host } else { NodeKind::Router } })
        .to_vec();
    let mut links = Vec::new();
    // (from, to, rate, delay, queue): each cable is two directed links, the first as given.
    let cables = [
        (0, 3, mbps(1000), 0, 1000),
        (3, 4, mbps(1000), 0, 1000),
        (3, 5, mbps(1000), 0, 1000),
        (4, 6, mbps(10), ms(10), 200),
        (5, 6, mbps(10), ms(10), 200),
        (6, 1, mbps(1000), 0, 1000),
        (2, 4, mbps(1000), 0, 1000),
    ];
    for (a, b, rate_bps, delay_ns, queue) in cables {
        for (from, to) in [(a, b), (b, a)] {
            links.push(LinkSpec {
                name: format!("{}->{}", nodes[from].name, nodes[to].name),
                from,
                to,
                rate_bps,
                delay_ns,
                wire: WireSpec::with_loss(0.0),
                queue: droptail_queue(queue),
                sample: None,
                trace: None,
            });
        }
    }
    let flows = vec![FlowSpec::Tcp(mptcp_flow("mptcp", 0, 1, flavor, 2, coupling)), FlowSpec::Tcp(tcp_flow("cross", 2, 1, "reno"))];
    (1..100)
        .find_map(|seed| {
            let spec = Spec {
                format: SPEC_FORMAT,
                seed,
                duration_ns: secs(20),
                sample_interval_ns: ms(500),
                nodes: nodes.clone(),
                links: links.clone(),
                routes: Vec::new(),
                routing: Some(RoutingSpec { mode: RoutingMode::Ecmp }),
                flows: flows.clone(),
                events: Vec::new(),
                link_jitter: Some(1.0),
                pcap: None,
            };
            let sim = Simulation::new(spec.clone()).expect("valid");
            let on_clean = |s| sim.subflow_path_pair(0, s).0.contains(&8);
            match (on_clean(0), on_clean(1)) {
                (false, true) => Some((spec, 1)),
                (true, false) => Some((spec, 0)),
                _ => None,
            }
        })
        .expect("some seed puts the subflows on different paths")
}

#[test]
fn wvegas_moves_its_traffic_off_the_path_with_a_deep_standing_queue() {
    // The share of the connection's goodput on the clean path, and that goodput.
    let clean_share = |flavor: &str, coupling: &str| {
        let (spec, clean) = two_paths_one_congested(flavor, coupling);
        let res = run(spec);
        assert_conservation(&res);
        let good = |s| subflow_mean(&res, s, "goodput_bps", 5.0, 20.0);
        let (on_clean, on_congested) = (good(clean), good(1 - clean));
        eprintln!(
            "{coupling}: {:.2} Mbit/s on the clean path, {:.2} on the congested one (cross Reno {:.2})",
            on_clean / 1e6,
            on_congested / 1e6,
            mean_goodput_bps(&res, 1, 5.0, 20.0) / 1e6
        );
        (on_clean / (on_clean + on_congested), on_clean)
    };
    let (wvegas, wvegas_clean_bps) = clean_share("vegas", "wvegas");
    let (lia, _) = clean_share("reno", "lia");
    eprintln!("share of the traffic on the clean path: wVegas {wvegas:.3}, LIA {lia:.3}");
    // Measured: wVegas 0.954 (7.44 Mbit/s on the clean path's 10, 0.36 on the congested one),
    // LIA 0.855 (9.47 and 1.60); the cross Reno flow 9.29 and 8.02.
    assert!(wvegas > 0.9, "wVegas keeps its traffic on the clean path: {wvegas:.3}");
    assert!(wvegas > lia, "more so than LIA: {wvegas:.3} vs {lia:.3}");
    assert!(wvegas_clean_bps > 6e6, "and uses it: {:.2} Mbit/s", wvegas_clean_bps / 1e6);
}

#[test]
fn wvegas_keeps_the_bottleneck_queue_far_shorter_than_lia() {
    // One 2-subflow connection alone on a 20 Mbit/s, 10 ms, 100-packet dumbbell.
    let d = Dumbbell::new(1, mbps(20), ms(10), 100);
    let measure = |flavor: &str, coupling: &str| {
        let flows = vec![FlowSpec::Tcp(mptcp_flow("mptcp", d.left(0), d.right(0), flavor, 2, coupling))];
        let res = run(d.spec(1, secs(10), ms(100), flows));
        assert_conservation(&res);
        (mean_sojourn_ms(&res, d.bottleneck_link(), 3.0), mean_goodput_bps(&res, 0, 3.0, 10.0) / 1e6)
    };
    let (wvegas_ms, wvegas_mbps) = measure("vegas", "wvegas");
    let (lia_ms, lia_mbps) = measure("reno", "lia");
    eprintln!("mean queueing delay: wVegas {wvegas_ms:.2} ms ({wvegas_mbps:.2} Mbit/s), LIA {lia_ms:.2} ms ({lia_mbps:.2} Mbit/s)");
    // Measured: wVegas 2.44 ms, LIA 44.10 ms, both 18.93 Mbit/s.
    assert!(wvegas_ms * 5.0 < lia_ms, "wVegas {wvegas_ms:.2} ms vs LIA {lia_ms:.2} ms");
    assert!(wvegas_mbps > 18.0, "while it fills the link: {wvegas_mbps:.2} Mbit/s");
}
