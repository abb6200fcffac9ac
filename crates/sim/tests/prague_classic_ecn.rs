//! TCP Prague's fall-back on detection of a classic ECN AQM (`classic_ecn_detection = 1`;
//! Briscoe & Ahmed, "TCP Prague Fall-back on Detection of a Classic ECN AQM",
//! arXiv:1911.00710; RFC 9331 §4.3) on the simulator: Prague beside CUBIC through one classic
//! ECN AQM (CoDel, PIE) with and without the detection, and the same pair through DualPI2,
//! where the detection must leave Prague's rate and its L4S queueing delay as they were.
//!
//! Every run: 100 Mbit/s, base RTT 30 ms, 20 s, measured after a 5 s warm-up. For the band the
//! fall-back is held to: Reno beside CUBIC in these same runs measures a rate ratio of 1.06
//! (CoDel) and 0.58–1.12 (PIE, seeds 1–4). The fall-back makes Prague halve per round trip of
//! marks and grow by 1 MSS per RTT, Reno's response, while CUBIC backs off only to 0.7 of its
//! window, so Prague is expected at or a little under CUBIC's rate, as Reno is.

use ccarena_sim::spec::{Discipline, FlowSpec, Spec};
use ccarena_sim::testkit::{make_discipline, mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

const DURATION_S: u64 = 20;
const WARMUP_S: f64 = 5.0;

/// Prague (flow 0) and CUBIC (flow 1), ECN on, starts 100 ms apart, across a 100 Mbit/s
/// bottleneck of one-way delay 13 ms whose queue is `discipline` with ECN, with 1 ms access
/// links each way: base RTT 30 ms. Prague runs with `classic_ecn_detection = 1` when
/// `detection`.
fn prague_and_cubic(discipline: Discipline, detection: bool, seed: u64) -> Spec {
    let db = Dumbbell::new(2, mbps(100), ms(13), 1000);
    let flows: Vec<FlowSpec> = ["prague", "cubic"]
        .iter()
        .enumerate()
        .map(|(i, flavor)| {
            let mut f = tcp_flow(&format!("{flavor}{i}"), db.left(i), db.right(i), flavor);
            f.start_ns = ms(100) * i as u64;
            f.ecn = true;
            if i == 0 && detection {
                f.params.insert("classic_ecn_detection".into(), 1.0);
            }
            tcp(f)
        })
        .collect();
    let mut spec = db.spec(seed, secs(DURATION_S), ms(100), flows);
    make_discipline(&mut spec.links[db.bottleneck_link()].queue, discipline, true);
    spec
}

/// One run: (Prague's goodput, CUBIC's goodput) in Mbit/s after the warm-up, and Prague's
/// queueing delay p99 (RTT p99 − RTT min) in ms.
fn measure(discipline: Discipline, detection: bool, seed: u64) -> (f64, f64, f64) {
    let res: Results = run(prague_and_cubic(discipline, detection, seed));
    assert_conservation(&res);
    let goodput = |i| mean_goodput_bps(&res, i, WARMUP_S, DURATION_S as f64) / 1e6;
    let f = &res.flows;
    let queueing_p99_ms = 1e3 * (f.f64("rtt_p99_s")[0] - f.f64("rtt_min_s")[0]);
    (goodput(0), goodput(1), queueing_p99_ms)
}

/// Prague/CUBIC rate ratios through `discipline` for `seeds`, without and with the detection.
fn ratios(discipline: Discipline, seeds: &[u64]) -> Vec<(f64, f64)> {
    seeds
        .iter()
        .map(|&seed| {
            let (p0, c0, _) = measure(discipline, false, seed);
            let (p1, c1, _) = measure(discipline, true, seed);
            eprintln!("{discipline:?} seed {seed}: without detection prague {p0:.1} cubic {c0:.1} Mbit/s, with prague {p1:.1} cubic {c1:.1}");
            assert!(p0 + c0 > 90.0 && p1 + c1 > 90.0, "the link stays full");
            (p0 / c0, p1 / c1)
        })
        .collect()
}

/// CoDel with ECN (target 5 ms, interval 100 ms; no randomness, so one seed): without the
/// detection Prague, taking α/2 where CUBIC halves, gets 9.4 times CUBIC's rate; with it the
/// score turns classic within a few round trips and the ratio comes to 0.83.
#[test]
fn through_codel_the_detection_brings_prague_to_a_fair_share() {
    let r = ratios(Discipline::Codel, &[1]);
    let (without, with) = r[0];
    assert!(without > 5.0, "without the detection Prague takes far more: ratio {without:.2}");
    assert!((0.5..=1.25).contains(&with), "with the detection: ratio {with:.2}");
}

/// PIE with ECN (target 15 ms; random marking, three seeds): without the detection the ratio
/// is 2.2–3.6, with it 0.61–1.03.
#[test]
fn through_pie_the_detection_brings_prague_to_a_fair_share() {
    let r = ratios(Discipline::Pie, &[1, 2, 3]);
    for &(without, with) in &r {
        assert!(without > 2.0, "without the detection Prague takes far more: ratios {r:.2?}");
        assert!((0.5..=1.25).contains(&with), "with the detection: ratios {r:.2?}");
    }
}

/// Through DualPI2 Prague's packets wait in the shallow L4S queue: the score stays L4S (after
/// the start-up transient, see `ccarena_cc::classic_ecn_detection`) and Prague's rate
/// and queueing p99 are those without the detection (measured identical at 100 Mbit/s; at
/// 50 Mbit/s CUBIC's slow start shakes the L4S queue enough to turn the score classic for about
/// 1.5 s, and the rates differ by up to 8%).
#[test]
fn through_dualpi2_the_detection_changes_nothing() {
    for seed in [1, 2] {
        let (p0, c0, q0) = measure(Discipline::DualPi2, false, seed);
        let (p1, c1, q1) = measure(Discipline::DualPi2, true, seed);
        eprintln!("DualPi2 seed {seed}: prague {p0:.1} → {p1:.1} Mbit/s, cubic {c0:.1} → {c1:.1}, prague queueing p99 {q0:.2} → {q1:.2} ms");
        assert!((p1 / p0 - 1.0).abs() < 0.05, "seed {seed}: Prague's rate {p0:.1} → {p1:.1} Mbit/s");
        assert!(q1 < 1.0 && (q1 - q0).abs() < 0.25, "seed {seed}: Prague's queueing p99 {q0:.2} → {q1:.2} ms");
    }
}
