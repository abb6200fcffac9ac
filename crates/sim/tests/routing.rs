//! Routes computed by the engine (`routing`): ECMP spreads flows evenly over equal-cost paths and
//! keeps each flow on one path (no reordering), spraying reorders, static overrides replace the
//! computed sets and bad ones are rejected by field, and a link going down reroutes flows and
//! counts its lost packets.

use crate::common;

use ccarena_sim::spec::{FlowSpec, LinkSpec, NodeKind, NodeSpec, RouteSpec, RoutingMode, RoutingSpec, Spec};
use ccarena_sim::testkit::{cbr_flow, link_event, mbps, ms, secs, tcp_flow, FatTree};
use ccarena_sim::{Results, Simulation};
use crate::common::{assert_conservation, tcp};

/// `n` flows, each from a host to a host in another pod, spread over every (source, destination
/// pod, destination host) combination of a k = 4 fat-tree.
fn cross_pod_pairs(t: &FatTree, n: usize) -> Vec<(usize, usize)> {
    let (hosts, per_pod) = (t.hosts(), t.hosts() / t.k);
    (0..n)
        .map(|f| {
            let src = f % hosts;
            let dst_pod = (t.pod_of(src) + 1 + (f / hosts) % (t.k - 1)) % t.k;
            let dst = dst_pod * per_pod + (f / (hosts * (t.k - 1))) % per_pod;
            (t.host(src), t.host(dst))
        })
        .collect()
}

fn cbr_flows(pairs: &[(usize, usize)], rate_bps: u64, stop_ns: Option<u64>) -> Vec<FlowSpec> {
    pairs
        .iter()
        .enumerate()
        .map(|(i, &(s, d))| {
            let mut f = cbr_flow(&format!("f{i}"), s, d, rate_bps, 1000);
            f.stop_ns = stop_ns;
            FlowSpec::UdpCbr(f)
        })
        .collect()
}

/// The core switch each flow's data path crosses.
fn cores_used(t: &FatTree, spec: &Spec, sim: &Simulation) -> Vec<usize> {
    let cores = t.core(0)..t.core(t.k * t.k / 4);
    sim.flow_paths()
        .iter()
        .map(|(data, _)| {
            let hops: Vec<usize> = data.iter().map(|&l| spec.links[l].to).filter(|v| cores.contains(v)).collect();
            assert_eq!(hops.len(), 1, "a cross-pod path crosses exactly one core switch: {data:?}");
            hops[0] - t.core(0)
        })
        .collect()
}

#[test]
fn ecmp_spreads_1000_flows_evenly_over_the_core_and_is_seeded() {
    let t = FatTree::new(4, mbps(100), 10_000, 100);
    let flows = cbr_flows(&cross_pod_pairs(&t, 1000), mbps(1), None);
    let spec = t.spec(7, ms(1), ms(1), flows);
    let sim = Simulation::new(spec.clone()).expect("valid");
    let cores = cores_used(&t, &spec, &sim);
    let mut counts = [0f64; 4];
    for &c in &cores {
        counts[c] += 1.0;
    }
    let expected = 1000.0 / 4.0;
    let chi2: f64 = counts.iter().map(|c| (c - expected).powi(2) / expected).sum();
    eprintln!("flows per core switch {counts:?}, chi-square {chi2:.2} (99.9% critical value, 3 d.o.f.: 16.27)");
    assert!(chi2 < 16.27, "chi-square {chi2:.2} for {counts:?}");

    let again = Simulation::new(spec.clone()).expect("valid");
    assert_eq!(sim.flow_paths(), again.flow_paths(), "same seed, same paths");
    let mut other = spec.clone();
    other.seed = 8;
    let other_cores = cores_used(&t, &other, &Simulation::new(other.clone()).expect("valid"));
    let moved = cores.iter().zip(&other_cores).filter(|(a, b)| a != b).count();
    // Independent assignments differ for about 3/4 of the flows.
    assert!(moved > 500, "another seed moves {moved} of 1000 flows");
}

#[test]
fn flow_paths_are_the_paths_packets_take() {
    let t = FatTree::new(4, mbps(100), 10_000, 10_000);
    let pairs = cross_pod_pairs(&t, 200);
    let spec = t.spec(3, ms(200), ms(50), cbr_flows(&pairs, mbps(1), Some(ms(100))));
    let mut sim = Simulation::new(spec.clone()).expect("valid");
    let paths = sim.flow_paths();
    sim.run();
    let res = sim.results();
    let sent = res.flows.f64("packets_sent");
    assert_eq!(res.flows.f64("packets_received"), sent, "every datagram arrives");
    let mut expected = vec![0.0; spec.links.len()];
    for (f, (data, ack)) in paths.iter().enumerate() {
        assert!(!ack.is_empty() && ack.len() == data.len(), "symmetric hop counts");
        for &l in data {
            expected[l] += sent[f];
        }
    }
    assert_eq!(res.links.f64("packets_in"), &expected[..], "each link carries exactly the flows routed over it");
}

/// Many TCP flows across pods of a k = 4 fat-tree with queues that never overflow, so a
/// receiver's out-of-order segment can only come from reordering in the network.
fn reorder_run(mode: RoutingMode) -> (u64, Results) {
    let t = FatTree::new(4, mbps(1000), 10_000, 1_000_000);
    let flows = cross_pod_pairs(&t, 48)
        .iter()
        .enumerate()
        .map(|(i, &(s, d))| {
            let mut f = tcp_flow(&format!("t{i}"), s, d, "cubic");
            f.bytes = Some(2_000_000);
            tcp(f)
        })
        .collect();
    let mut spec = t.spec(11, ms(300), ms(50), flows);
    spec.routing = Some(RoutingSpec { mode });
    let mut sim = Simulation::new(spec).expect("valid");
    sim.run();
    let ooo = sim
        .flows()
        .iter()
        .map(|f| match f {
            ccarena_sim::flow::Flow::Tcp(t) => t.receiver.stats().out_of_order_segments,
            _ => unreachable!(),
        })
        .sum();
    (ooo, sim.results())
}

#[test]
fn hash_mode_never_reorders_a_flow_and_spraying_does() {
    let (ooo, res) = reorder_run(RoutingMode::Ecmp);
    assert_conservation(&res);
    let drops: f64 = res.links.f64("packets_dropped_queue").iter().sum();
    assert_eq!(drops, 0.0, "no loss, so a hole at a receiver is reordering");
    assert!(res.flows.f64("completion_time_s").iter().all(|c| c.is_finite()), "every transfer completes");
    assert_eq!(ooo, 0, "ECMP keeps each flow on one path");

    let (ooo_spray, res) = reorder_run(RoutingMode::Spray);
    assert_conservation(&res);
    assert_eq!(res.links.f64("packets_dropped_queue").iter().sum::<f64>(), 0.0);
    eprintln!("out-of-order segments: ECMP {ooo}, spray {ooo_spray}");
    assert!(ooo_spray > 100, "spraying reorders ({ooo_spray} out-of-order segments)");
}

#[test]
fn a_link_down_reroutes_drops_what_it_carries_and_up_restores_it() {
    let t = FatTree::new(4, mbps(100), 100_000, 1000);
    let pairs = cross_pod_pairs(&t, 64);
    let flows: Vec<FlowSpec> = pairs
        .iter()
        .enumerate()
        .map(|(i, &(s, d))| {
            let mut f = tcp_flow(&format!("t{i}"), s, d, "cubic");
            f.bytes = Some(3_000_000);
            tcp(f)
        })
        .collect();
    let mut spec = t.spec(5, secs(20), ms(100), flows);
    // The cable between pod 0's first aggregation switch and core 0, both directions.
    let (agg, core) = (t.agg(0, 0), t.core(0));
    let up = spec.links.iter().position(|l| l.from == agg && l.to == core).unwrap();
    let down = spec.links.iter().position(|l| l.from == core && l.to == agg).unwrap();
    for l in [up, down] {
        spec.events.push(link_event(ms(500), l, |c| c.up = Some(false)));
        spec.events.push(link_event(ms(1500), l, |c| c.up = Some(true)));
    }
    let mut sim = Simulation::new(spec.clone()).expect("valid");
    let before = sim.flow_paths();
    let crossing = before.iter().filter(|(d, a)| d.contains(&up) || a.contains(&up) || d.contains(&down) || a.contains(&down)).count();
    assert!(crossing >= 4, "{crossing} flows cross the cable");

    sim.run_until(ccarena_cc::SimTime(ms(1000)));
    let during = sim.flow_paths();
    for (f, (d, a)) in during.iter().enumerate() {
        assert!(![up, down].iter().any(|l| d.contains(l) || a.contains(l)), "flow {f} still routed over the down cable");
        assert_eq!(spec.links[*d.last().unwrap()].to, spec.flows[f].endpoints().1, "flow {f} rerouted to its destination");
    }
    let mid = sim.results();
    let dropped = mid.links.f64("down_drops_packets")[up] + mid.links.f64("down_drops_packets")[down];
    assert!(dropped > 0.0, "packets queued or on the wire were lost with the cable");
    let carried_before_up = mid.links.f64("packets_in")[up];
    assert_conservation(&mid);

    sim.run();
    assert_eq!(sim.flow_paths(), before, "the same routes once the cable is back");
    let res = sim.results();
    assert_conservation(&res);
    assert!(res.links.f64("packets_in")[up] > carried_before_up, "the cable carries again after it comes up");
    assert_eq!(res.links.f64("down_drops_packets")[up] + res.links.f64("down_drops_packets")[down], dropped, "no loss while up");
    assert!(res.flows.f64("completion_time_s").iter().all(|c| c.is_finite()), "every transfer completes");
    assert_eq!(res.links.f64("no_route_drops_packets").iter().sum::<f64>(), 0.0, "every node kept a route");
}

#[test]
fn a_host_cut_off_by_a_down_link_counts_no_route_drops() {
    // Core 0 loses its only way into pod 0 except the long detour; take both of h0's access
    // directions down: packets in flight towards h0 reach its edge switch with no route.
    let t = FatTree::new(4, mbps(100), 100_000, 1000);
    let flows = vec![FlowSpec::UdpCbr(cbr_flow("to-h0", t.host(8), t.host(0), mbps(10), 1000))];
    let mut spec = t.spec(1, ms(300), ms(50), flows);
    let access = spec.links.iter().position(|l| l.from == t.host(0)).unwrap();
    let into = spec.links.iter().position(|l| l.to == t.host(0)).unwrap();
    for l in [access, into] {
        spec.events.push(link_event(ms(100), l, |c| c.up = Some(false)));
    }
    let mut sim = Simulation::new(spec).expect("valid");
    sim.run();
    let res = sim.results();
    assert_conservation(&res);
    assert!(res.links.f64("no_route_drops_packets").iter().sum::<f64>() > 0.0, "packets already past h8's edge find no route");
    // The source's own edge switch has no route either: nothing crosses the core after the cut.
    let received = res.flows.f64("packets_received")[0];
    let sent = res.flows.f64("packets_sent")[0];
    assert!(received < sent * 0.5, "received {received} of {sent}");
}

#[test]
fn static_overrides_replace_the_computed_set() {
    let t = FatTree::new(4, mbps(100), 10_000, 100);
    // Pod 0's first edge switch sends everything for h8 up through its second aggregation switch.
    let edge0 = t.hosts();
    let (agg1, h8) = (t.agg(0, 1), t.host(8));
    let flows = (0..20).map(|i| FlowSpec::UdpCbr(cbr_flow(&format!("f{i}"), t.host(i % 2), h8, mbps(1), 1000))).collect();
    let mut spec = t.spec(2, ms(1), ms(1), flows);
    let via = spec.links.iter().position(|l| l.from == edge0 && l.to == agg1).unwrap();
    let computed = Simulation::new(spec.clone()).expect("valid").flow_paths();
    assert!(computed.iter().any(|(d, _)| !d.contains(&via)), "without the override ECMP uses both uplinks");
    spec.routes.push(RouteSpec { node: edge0, dst: h8, link: via });
    let paths = Simulation::new(spec).expect("valid").flow_paths();
    assert!(paths.iter().all(|(d, _)| d[1] == via), "every flow to h8 leaves edge0 on the override");
}

#[test]
fn bad_overrides_and_unreachable_destinations_are_rejected_by_field() {
    let t = FatTree::new(4, mbps(100), 10_000, 100);
    let (edge0, agg0, h8) = (t.hosts(), t.agg(0, 0), t.host(8));
    let flows = vec![FlowSpec::UdpCbr(cbr_flow("f", t.host(0), h8, mbps(1), 1000))];
    let base = t.spec(2, ms(1), ms(1), flows);
    let link = |from: usize, to: usize| base.links.iter().position(|l| l.from == from && l.to == to).unwrap();

    // agg0 sends h8's traffic back down to edge0, which may send it up to agg0 again.
    let mut looping = base.clone();
    looping.routes.push(RouteSpec { node: agg0, dst: h8, link: link(agg0, edge0) });
    let e = Simulation::new(looping).unwrap_err();
    assert_eq!(e.path, "routes[0]", "{e}");
    assert!(e.message.contains("loop (edge0 → agg0 → edge0)"), "{e}");

    // edge0 hands h8's traffic to host h1, which does not forward.
    let mut dead = base.clone();
    dead.routes.push(RouteSpec { node: agg0, dst: h8, link: link(agg0, t.core(0)) });
    dead.routes.push(RouteSpec { node: edge0, dst: h8, link: link(edge0, t.host(1)) });
    let e = Simulation::new(dead).unwrap_err();
    assert_eq!(e.path, "routes[1]", "{e}");
    assert!(e.message.contains("dead-end at host 'h1'"), "{e}");

    // A link that does not leave the override's node.
    let mut wrong = base.clone();
    wrong.routes.push(RouteSpec { node: agg0, dst: h8, link: link(edge0, agg0) });
    assert_eq!(Simulation::new(wrong).unwrap_err().path, "routes[0].link");

    // h8 cut off from the rest: its only cable is missing.
    let mut cut = base.clone();
    cut.links.retain(|l| l.from != h8 && l.to != h8);
    let e = Simulation::new(cut).unwrap_err();
    assert_eq!(e.to_string(), "flows[0].dst: no route from 'h0' to 'h8'");
}

#[test]
fn hosts_with_two_links_do_not_forward() {
    // a — r0 — b and a — r1 — c: b reaches c only if host a forwards, which it does not.
    let template = FatTree::new(2, mbps(10), 1000, 10).spec(1, ms(10), ms(1), Vec::new());
    let mut spec = template.clone();
    let names = [("a", NodeKind::Host), ("b", NodeKind::Host), ("c", NodeKind::Host), ("r0", NodeKind::Router), ("r1", NodeKind::Router)];
    spec.nodes = names.iter().map(|&(n, kind)| NodeSpec { name: n.into(), kind }).collect();
    spec.links.clear();
    for (x, y) in [(0, 3), (0, 4), (1, 3), (2, 4)] {
        for (from, to) in [(x, y), (y, x)] {
            spec.links.push(LinkSpec { name: format!("{from}->{to}"), from, to, ..template.links[0].clone() });
        }
    }
    spec.flows = vec![FlowSpec::UdpCbr(cbr_flow("a-c", 0, 2, mbps(1), 1000))];
    let sim = Simulation::new(spec.clone()).expect("a reaches c over its own second cable");
    assert_eq!(sim.flow_paths()[0].0.len(), 2);
    spec.flows.push(FlowSpec::UdpCbr(cbr_flow("b-c", 1, 2, mbps(1), 1000)));
    let e = Simulation::new(spec).unwrap_err();
    assert_eq!(e.to_string(), "flows[1].dst: no route from 'b' to 'c'");
}

#[test]
fn computed_routes_on_a_dumbbell_run_bit_identical_to_its_static_table() {
    let d = ccarena_sim::testkit::Dumbbell::new(3, mbps(10), ms(10), 30);
    let flows = vec![
        tcp(tcp_flow("cubic", d.left(0), d.right(0), "cubic")),
        tcp(tcp_flow("reno", d.right(1), d.left(1), "reno")),
        FlowSpec::UdpCbr(cbr_flow("cbr", d.left(2), d.right(2), mbps(2), 500)),
    ];
    let table = d.spec(9, secs(5), ms(100), flows);
    let mut computed = table.clone();
    computed.routes.clear();
    computed.routing = Some(RoutingSpec { mode: RoutingMode::Ecmp });
    let mut spray = computed.clone();
    spray.routing = Some(RoutingSpec { mode: RoutingMode::Spray });
    let reference = common::run(table);
    // One shortest path per pair: neither the hash nor the spraying draws ever choose.
    common::assert_identical(&reference, &common::run(computed));
    common::assert_identical(&reference, &common::run(spray));
}

#[test]
fn a_static_table_keeps_routing_onto_a_down_link_and_loses_those_packets() {
    let d = ccarena_sim::testkit::Dumbbell::new(1, mbps(10), ms(10), 50);
    let mut spec = d.spec(2, secs(3), ms(100), vec![FlowSpec::UdpCbr(cbr_flow("cbr", d.left(0), d.right(0), mbps(4), 1000))]);
    let b = d.bottleneck_link();
    spec.events = vec![link_event(secs(1), b, |c| c.up = Some(false)), link_event(secs(2), b, |c| c.up = Some(true))];
    let res = common::run(spec);
    assert_conservation(&res);
    let (sent, received) = (res.flows.f64("packets_sent")[0], res.flows.f64("packets_received")[0]);
    let lost = res.links.f64("down_drops_packets")[b];
    // 4 Mbps of 1028-byte packets: ~486 per second; one second of them meets the down link.
    eprintln!("sent {sent}, received {received}, lost to the down link {lost}");
    assert!((lost - sent / 3.0).abs() < 5.0, "one third of the packets: {lost} of {sent}");
    let pending: f64 = ["packets_queued_end", "packets_in_flight_end"].iter().map(|c| res.links.f64(c).iter().sum::<f64>()).sum();
    assert_eq!(received + lost + pending, sent, "every other packet arrives (or is on its way at the end)");
}
