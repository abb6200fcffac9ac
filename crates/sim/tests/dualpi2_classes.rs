//! DualPI2's per-class columns in the `links` table and its probabilities in the `queues`
//! samples (docs/engine-spec.md, "Tables"): a Prague (L4S, ECT(1)) and a CUBIC (Classic, ECT(0))
//! flow through one DualPI2 bottleneck (RFC 9332) fill both classes, the L4S queue's sojourn
//! far below the Classic one's; any other discipline leaves every such column NaN.

use ccarena_sim::spec::{Discipline, FlowSpec, Spec};
use ccarena_sim::testkit::{make_discipline, mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{run, tcp};

/// Prague and CUBIC (ECN on) across a 20 Mbit/s, 10 ms bottleneck whose queue is `discipline`,
/// for 8 s.
fn prague_and_cubic(discipline: Discipline) -> (Spec, usize) {
    let db = Dumbbell::new(2, mbps(20), ms(10), 1000);
    let flows: Vec<FlowSpec> = ["prague", "cubic"]
        .iter()
        .enumerate()
        .map(|(i, flavor)| {
            let mut f = tcp_flow(flavor, db.left(i), db.right(i), flavor);
            f.ecn = true;
            tcp(f)
        })
        .collect();
    let mut spec = db.spec(3, secs(8), ms(100), flows);
    make_discipline(&mut spec.links[db.bottleneck_link()].queue, discipline, true);
    (spec, db.bottleneck_link())
}

fn link_value(res: &Results, column: &str, link: usize) -> f64 {
    res.links.f64(column)[link]
}

const CLASS_FIELDS: [&str; 14] = [
    "packets_departed",
    "packets_marked",
    "packets_dropped",
    "sojourn_mean_s",
    "sojourn_min_s",
    "sojourn_p5_s",
    "sojourn_p10_s",
    "sojourn_p25_s",
    "sojourn_p50_s",
    "sojourn_p75_s",
    "sojourn_p90_s",
    "sojourn_p95_s",
    "sojourn_p99_s",
    "sojourn_max_s",
];

#[test]
fn dualpi2_reports_each_class() {
    let (spec, b) = prague_and_cubic(Discipline::DualPi2);
    let res = run(spec);
    for class in ["l4s", "classic"] {
        for field in CLASS_FIELDS {
            let v = link_value(&res, &format!("{class}_{field}"), b);
            assert!(v.is_finite(), "{class}_{field} = {v}");
        }
        // The quantiles rise from the minimum to the maximum.
        let q: Vec<f64> = CLASS_FIELDS[4..].iter().map(|f| link_value(&res, &format!("{class}_{f}"), b)).collect();
        assert!(q.windows(2).all(|w| w[0] <= w[1]), "{class}: {q:?}");
    }
    let (l_p99, c_p99) = (link_value(&res, "l4s_sojourn_p99_s", b), link_value(&res, "classic_sojourn_p99_s", b));
    let (l_mean, c_mean) = (link_value(&res, "l4s_sojourn_mean_s", b), link_value(&res, "classic_sojourn_mean_s", b));
    eprintln!("L4S sojourn mean {l_mean:.5} p99 {l_p99:.5}; Classic mean {c_mean:.5} p99 {c_p99:.5}");
    assert!(l_p99 < c_p99 && l_mean < c_mean / 2.0, "L4S {l_mean}/{l_p99} vs Classic {c_mean}/{c_p99}");
    // Prague's packets are marked (its step at 1 ms), and the classes' counts add up to the
    // queue's: every mark and every drop is in one class.
    assert!(link_value(&res, "l4s_packets_marked", b) > 0.0);
    let marked = link_value(&res, "l4s_packets_marked", b) + link_value(&res, "classic_packets_marked", b);
    assert_eq!(marked, link_value(&res, "packets_marked", b));
    let dropped = link_value(&res, "l4s_packets_dropped", b) + link_value(&res, "classic_packets_dropped", b);
    assert_eq!(dropped, link_value(&res, "packets_dropped_queue", b));
    // The access links' DropTail queues have no classes.
    assert!(link_value(&res, "l4s_sojourn_mean_s", 2).is_nan());

    // The samples carry p_C = p'² and p_CL = min(2p', 1) on the bottleneck, NaN elsewhere.
    let q = &res.queues;
    let (link, p_c, p_l) = (q.f64("link"), q.f64("aqm_prob_classic"), q.f64("aqm_prob_l4s"));
    let mut positive = 0;
    for i in 0..q.rows() {
        if link[i] as usize != b {
            assert!(p_c[i].is_nan() && p_l[i].is_nan());
            continue;
        }
        let p_base = p_c[i].sqrt();
        assert!((p_l[i] - (2.0 * p_base).min(1.0)).abs() < 1e-12, "p_C {} p_CL {}", p_c[i], p_l[i]);
        positive += usize::from(p_c[i] > 0.0);
    }
    assert!(positive > 0, "CUBIC's standing Classic queue raises p'");
}

#[test]
fn other_disciplines_leave_the_class_columns_nan() {
    for discipline in [Discipline::Droptail, Discipline::Pie] {
        let (spec, b) = prague_and_cubic(discipline);
        let res = run(spec);
        for class in ["l4s", "classic"] {
            for field in CLASS_FIELDS {
                assert!(link_value(&res, &format!("{class}_{field}"), b).is_nan(), "{discipline:?} {class}_{field}");
            }
        }
        let q = &res.queues;
        assert!(q.f64("aqm_prob_l4s").iter().all(|p| p.is_nan()));
        let on_b: Vec<f64> = (0..q.rows()).filter(|&i| q.f64("link")[i] as usize == b).map(|i| q.f64("aqm_prob_classic")[i]).collect();
        match discipline {
            // PIE's drop probability, in [0, 1], somewhere above 0 under CUBIC.
            Discipline::Pie => assert!(on_b.iter().all(|p| (0.0..=1.0).contains(p)) && on_b.iter().any(|&p| p > 0.0), "{on_b:?}"),
            _ => assert!(on_b.iter().all(|p| p.is_nan())),
        }
    }
}
