//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use ccarena_sim::spec::{FlowSpec, Spec};
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

/// Every link conserves packets: in = delivered + dropped + lost + queued + in flight.
pub fn assert_conservation(res: &Results) {
    let l = &res.links;
    for i in 0..l.rows() {
        let inn = l.f64("packets_in")[i];
        let out = l.f64("packets_delivered")[i]
            + l.f64("packets_dropped_queue")[i]
            + l.f64("packets_lost_wire")[i]
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
