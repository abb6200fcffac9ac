//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use ccarena_sim::spec::{FlowSpec, Spec};
use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::{Column, Results, Simulation};

/// Run a spec to its end and return its tables.
pub fn run(spec: Spec) -> Results {
    let mut sim = Simulation::new(spec).expect("valid spec");
    sim.run();
    sim.results()
}

/// Mean goodput (bits/s) of `flow` over samples with `from_s < time_s <= to_s`.
pub fn mean_goodput_bps(res: &Results, flow: usize, from_s: f64, to_s: f64) -> f64 {
    let t = res.samples.f64("time_s");
    let f = res.samples.f64("flow");
    let g = res.samples.f64("goodput_bps");
    let vals: Vec<f64> = (0..t.len())
        .filter(|&i| f[i] as usize == flow && t[i] > from_s + 1e-9 && t[i] <= to_s + 1e-9)
        .map(|i| g[i])
        .collect();
    assert!(!vals.is_empty(), "no samples for flow {flow} in ({from_s}, {to_s}]");
    vals.iter().sum::<f64>() / vals.len() as f64
}

/// Jain's fairness index (Σx)² / (n Σx²) (Jain, Chiu, Hawe 1984).
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    s * s / (xs.len() as f64 * s2)
}

/// Every link conserves packets: in + duplicated = delivered + dropped + lost + lost to the link
/// being down + queued + in flight.
pub fn assert_conservation(res: &Results) {
    let l = &res.links;
    for i in 0..l.rows() {
        let inn = l.f64("packets_in")[i] + l.f64("packets_duplicated")[i];
        let out = l.f64("packets_delivered")[i]
            + l.f64("packets_dropped_queue")[i]
            + l.f64("packets_lost_wire")[i]
            + l.f64("down_drops_packets")[i]
            + l.f64("packets_queued_end")[i]
            + l.f64("packets_in_flight_end")[i];
        assert_eq!(inn, out, "link {i} does not conserve packets");
    }
}

/// Wrap a TCP flow spec.
pub fn tcp(f: ccarena_sim::spec::TcpFlowSpec) -> FlowSpec {
    FlowSpec::Tcp(f)
}

/// Bit-for-bit equality of two result sets (NaN equals NaN: determinism means identical bits).
pub fn assert_identical(a: &Results, b: &Results) {
    for (name, ta, tb) in [
        ("flows", &a.flows, &b.flows),
        ("samples", &a.samples, &b.samples),
        ("queues", &a.queues, &b.queues),
        ("links", &a.links, &b.links),
        ("subflows", &a.subflows, &b.subflows),
    ] {
        assert_eq!(ta.columns.len(), tb.columns.len(), "{name}: column count");
        for ((na, ca), (nb, cb)) in ta.columns.iter().zip(&tb.columns) {
            assert_eq!(na, nb);
            match (ca, cb) {
                (Column::F64(x), Column::F64(y)) => {
                    let bx: Vec<u64> = x.iter().map(|v| v.to_bits()).collect();
                    let by: Vec<u64> = y.iter().map(|v| v.to_bits()).collect();
                    assert!(bx == by, "{name}.{na} differs");
                }
                (Column::Str(x), Column::Str(y)) => assert_eq!(x, y, "{name}.{na} differs"),
                _ => panic!("{name}.{na}: column types differ"),
            }
        }
    }
}

/// A low-priority flavor (TCP-LP family) alone on the fill-the-link path uses most of it (≥ 80%).
pub fn low_priority_alone_uses_most_of_the_link(flavor: &str) {
    // The fill-the-link path: 100 Mbps, 40 ms RTT, one-BDP buffer.
    let d = Dumbbell::new(1, mbps(100), ms(20), 333);
    let res = run(d.spec(1, secs(30), ms(100), vec![tcp(tcp_flow(flavor, d.left(0), d.right(0), flavor))]));
    let util = mean_goodput_bps(&res, 0, 10.0, 30.0) / (100e6 * 1448.0 / 1500.0);
    eprintln!("{flavor} alone: {:.1}% of the link", 100.0 * util);
    assert!(util >= 0.80, "{util:.3}");
}

/// A low-priority flavor next to a Reno flow yields: its share is under 10% at 1 and 3 BDP of buffer.
pub fn low_priority_yields_to_reno(flavor: &str) {
    // 20 Mbps, 40 ms RTT (BDP 67 packets), buffers of 1 and 3 BDP; both flows start together.
    for buffer in [67, 200] {
        let d = Dumbbell::new(2, mbps(20), ms(20), buffer);
        let flows = vec![tcp(tcp_flow(flavor, d.left(0), d.right(0), flavor)), tcp(tcp_flow("reno", d.left(1), d.right(1), "reno"))];
        let res = run(d.spec(3, secs(60), ms(100), flows));
        let low = mean_goodput_bps(&res, 0, 20.0, 60.0);
        let reno = mean_goodput_bps(&res, 1, 20.0, 60.0);
        let share = low / (low + reno);
        eprintln!("{flavor} vs reno, buffer {buffer}: {flavor} share {:.1}%", 100.0 * share);
        assert!(share < 0.10, "buffer {buffer}: share {share:.3}");
        assert!(low + reno > 0.9 * 20e6 * 1448.0 / 1500.0, "the pair fills the link");
    }
}
