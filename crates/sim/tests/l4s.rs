//! L4S end to end on the simulator (RFC 9330–9332): TCP Prague (ECT(1), Accurate ECN) beside
//! CUBIC through the DualPI2 coupled AQM, the same pair through one FIFO with step marking, and
//! Prague's reduced RTT dependence against Reno's. Every run lasts 30 s and is measured after a
//! 10 s warm-up, with two flows, so the behaviour each test names has room to show.
//!
//! A flow's queueing delay is its RTT above its own minimum: for Prague, the L4S queue's sojourn
//! (plus serialization jitter); for CUBIC and Reno, the Classic queue's.

use ccarena_sim::spec::{Discipline, FlowSpec, QueueSpec, Spec};
use ccarena_sim::testkit::{make_discipline, mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

const DURATION_S: u64 = 30;
const WARMUP_S: f64 = 10.0;

/// Bulk flows of `flavors` (left i → right i, ECN on, starts 100 ms apart) across a 100 Mbit/s
/// bottleneck of one-way delay `bottleneck_us`, whose queue `queue` sets up, with access delays
/// `access_us[i]` each way on both sides: flow i's base RTT is 2·(bottleneck + 2·access i).
fn dumbbell(flavors: &[&str], bottleneck_us: u64, access_us: &[u64], seed: u64, queue: impl FnOnce(&mut QueueSpec)) -> Spec {
    let mut db = Dumbbell::new(flavors.len(), mbps(100), bottleneck_us * 1000, 2000);
    db.access_delay_ns = access_us.iter().map(|&a| a * 1000).collect();
    let flows: Vec<FlowSpec> = flavors
        .iter()
        .enumerate()
        .map(|(i, flavor)| {
            let mut f = tcp_flow(&format!("{flavor}{i}"), db.left(i), db.right(i), flavor);
            f.start_ns = ms(100) * i as u64;
            f.ecn = true;
            tcp(f)
        })
        .collect();
    let mut spec = db.spec(seed, secs(DURATION_S), ms(100), flows);
    queue(&mut spec.links[db.bottleneck_link()].queue);
    spec
}

fn dualpi2(q: &mut QueueSpec) {
    make_discipline(q, Discipline::DualPi2, true);
}

/// Flow `i`'s queueing delay, ms: (RTT p99 − RTT min, RTT mean − RTT min).
fn queueing_ms(res: &Results, i: usize) -> (f64, f64) {
    let f = &res.flows;
    let min = f.f64("rtt_min_s")[i];
    (1e3 * (f.f64("rtt_p99_s")[i] - min), 1e3 * (f.f64("rtt_mean_s")[i] - min))
}

fn goodput_mbps(res: &Results, i: usize) -> f64 {
    mean_goodput_bps(res, i, WARMUP_S, DURATION_S as f64) / 1e6
}

/// Prague and CUBIC through DualPI2 at 100 Mbit/s, 20 ms base RTT (three seeds): the coupling
/// (k = 2, RFC 9332 §2.1) keeps their rates within a factor of 2; Prague's packets wait about a
/// millisecond at most (the L4S queue's 1 ms step), CUBIC's near PI2's 15 ms target.
#[test]
fn dualpi2_shares_the_link_and_keeps_l4s_queueing_near_a_millisecond() {
    let mut ratios = Vec::new();
    for seed in [7, 8, 9] {
        let res = run(dumbbell(&["prague", "cubic"], 8_000, &[1_000, 1_000], seed, dualpi2));
        assert_conservation(&res);
        let (prague, cubic) = (goodput_mbps(&res, 0), goodput_mbps(&res, 1));
        let (prague_p99_ms, _) = queueing_ms(&res, 0);
        let (_, cubic_mean_ms) = queueing_ms(&res, 1);
        eprintln!("seed {seed}: prague {prague:.1} Mbit/s (queueing p99 {prague_p99_ms:.2} ms), cubic {cubic:.1} Mbit/s (mean {cubic_mean_ms:.1} ms)");
        assert!(prague + cubic > 90.0, "the link stays full: {:.1} Mbit/s", prague + cubic);
        assert!(prague_p99_ms < 2.0, "seed {seed}: Prague's queueing p99 {prague_p99_ms:.2} ms");
        assert!((7.5..=22.5).contains(&cubic_mean_ms), "seed {seed}: CUBIC's mean queueing {cubic_mean_ms:.1} ms, target 15 ms");
        assert!(res.flows.f64("ce_packets")[0] > 1000.0, "Prague's packets are marked");
        assert_eq!(res.flows.f64("packets_retransmitted")[0], 0.0, "L4S packets are marked, not dropped");
        ratios.push(prague.max(cubic) / prague.min(cubic));
    }
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    assert!(mean <= 2.0, "rate ratios {ratios:.2?}: mean {mean:.2} exceeds 2");
    assert!(ratios.iter().all(|&r| r < 2.5), "rate ratios {ratios:.2?}");
}

/// The same pair through one FIFO that marks every ECN-capable packet once 9 packets (~1 ms)
/// wait: CUBIC halves on every mark (RFC 3168), Prague takes off α/2, and CUBIC starves — why
/// L4S traffic needs its own queue (RFC 9330 §5.2).
#[test]
fn a_single_step_marking_fifo_starves_cubic() {
    let res = run(dumbbell(&["prague", "cubic"], 8_000, &[1_000, 1_000], 7, |q| q.ecn_threshold_packets = Some(9)));
    assert_conservation(&res);
    let (prague, cubic) = (goodput_mbps(&res, 0), goodput_mbps(&res, 1));
    eprintln!("step FIFO: prague {prague:.1} Mbit/s, cubic {cubic:.1} Mbit/s");
    assert!(prague + cubic > 90.0);
    assert!(cubic < 0.1 * prague, "CUBIC {cubic:.1} Mbit/s beside Prague's {prague:.1}");
}

/// How strongly a pair's rate ratio follows its RTT ratio: ln(rate short / rate long) over
/// ln(mean RTT long / mean RTT short) (mean RTTs, queueing included): 1 for a rate inversely
/// proportional to RTT, 0 for none.
fn rtt_dependence(res: &Results) -> f64 {
    let rtt = res.flows.f64("rtt_mean_s");
    (goodput_mbps(res, 0) / goodput_mbps(res, 1)).ln() / (rtt[1] / rtt[0]).ln()
}

/// Two flows of a flavor at 5 ms and 50 ms base RTT through DualPI2. Prague's reduced RTT
/// dependence (its reference RTT of 25 ms, draft-briscoe-iccrg-prague-congestion-control
/// §2.4.4) makes its rates follow the RTTs less than Reno's do, and much less than Prague's own
/// without it (`rtt_ref_ms = 0`).
#[test]
fn prague_depends_on_rtt_less_than_reno() {
    let pair = |flavor: &str, rtt_ref_ms: Option<f64>| {
        let mut spec = dumbbell(&[flavor, flavor], 2_000, &[250, 11_500], 7, dualpi2);
        for f in spec.flows.iter_mut() {
            if let (FlowSpec::Tcp(t), Some(r)) = (f, rtt_ref_ms) {
                t.params.insert("rtt_ref_ms".into(), r);
            }
        }
        let res = run(spec);
        assert_conservation(&res);
        let d = rtt_dependence(&res);
        eprintln!("{flavor} (rtt_ref_ms {rtt_ref_ms:?}): {:.1} and {:.1} Mbit/s, RTT dependence {d:.2}", goodput_mbps(&res, 0), goodput_mbps(&res, 1));
        d
    };
    let prague = pair("prague", None);
    let reno = pair("reno", None);
    let prague_without = pair("prague", Some(0.0));
    assert!(prague < reno - 0.15, "Prague's RTT dependence {prague:.2} vs Reno's {reno:.2}");
    assert!(prague < 0.6 * prague_without, "with the reference RTT {prague:.2}, without {prague_without:.2}");
}
