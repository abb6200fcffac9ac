//! The active queue managements of `ccarena-link` end to end, each where its defining behaviour
//! shows: several TCP flows holding a standing queue on a 10 Mbps / 20 ms dumbbell with a deep
//! (1000-packet) buffer. CoDel (RFC 8289) holds the sojourn time near its 5 ms target; FQ-CoDel
//! (RFC 8290) keeps a sparse flow's delay low beside bulk flows and shares the link by DRR
//! whatever the RTTs; PIE (RFC 8033) holds the delay near 15 ms; Adaptive RED (Floyd, Gummadi,
//! Shenker 2001) moves max_p until the average sits in its target band; ECN-capable flows are
//! marked, not dropped. Each test also runs DropTail (or the non-adaptive queue) on the same
//! scenario, so a discipline that stopped working fails it. The control law's drop spacing is
//! unit-tested in `ccarena_link::qdisc::codel`.

use ccarena_link::Aqm;
use ccarena_sim::spec::{Discipline, FlowSpec, Spec};
use ccarena_sim::testkit::{cbr_flow, make_discipline, make_red, mbps, ms, red_packets, secs, tcp_flow, Dumbbell};
use ccarena_sim::{Results, Simulation};
use crate::common::{assert_conservation, jain, mean_goodput_bps, run, tcp};

const RATE: u64 = mbps(10);
const BUFFER_PACKETS: u64 = 1000;
const DURATION_S: u64 = 30;
const WARMUP_S: f64 = 10.0;

/// `flavors.len()` bulk TCP flows (left i → right i) on the dumbbell, access delays
/// `access_ms[i]` (both sides), starts staggered by 100 ms; the bottleneck queue is `d`.
fn dumbbell(flavors: &[&str], access_ms: &[u64], d: Discipline, ecn: bool) -> (Dumbbell, Spec) {
    let mut db = Dumbbell::new(flavors.len(), RATE, ms(20), BUFFER_PACKETS);
    db.access_delay_ns = access_ms.iter().map(|&a| ms(a)).collect();
    let flows: Vec<FlowSpec> = flavors
        .iter()
        .enumerate()
        .map(|(i, flavor)| {
            let mut f = tcp_flow(&format!("{flavor}{i}"), db.left(i), db.right(i), flavor);
            f.start_ns = ms(100) * i as u64;
            f.ecn = f.ecn || ecn;
            tcp(f)
        })
        .collect();
    let mut spec = db.spec(3, secs(DURATION_S), ms(100), flows);
    make_discipline(&mut spec.links[db.bottleneck_link()].queue, d, ecn);
    (db, spec)
}

/// Column `name` of the queues table for `link`, over samples after `from_s`, NaNs left out.
fn queue_col(res: &Results, link: usize, name: &str, from_s: f64) -> Vec<f64> {
    let q = &res.queues;
    let (t, l, v) = (q.f64("time_s"), q.f64("link"), q.f64(name));
    (0..t.len()).filter(|&i| l[i] as usize == link && t[i] > from_s && !v[i].is_nan()).map(|i| v[i]).collect()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Mean sojourn time at the bottleneck after the warm-up, ms.
fn mean_sojourn_ms(res: &Results, link: usize) -> f64 {
    1e3 * mean(&queue_col(res, link, "sojourn_mean_s", WARMUP_S))
}

fn last(res: &Results, link: usize, name: &str) -> f64 {
    *queue_col(res, link, name, 0.0).last().expect("samples")
}

const FOUR_CUBIC: [&str; 4] = ["cubic"; 4];

#[test]
fn codel_holds_the_sojourn_time_near_its_target() {
    let (db, spec) = dumbbell(&FOUR_CUBIC, &[0; 4], Discipline::Codel, false);
    let res = run(spec);
    assert_conservation(&res);
    let b = db.bottleneck_link();
    let sojourn = mean_sojourn_ms(&res, b);
    let goodput: f64 = (0..4).map(|f| mean_goodput_bps(&res, f, WARMUP_S, DURATION_S as f64)).sum();
    let (drops, early) = (last(&res, b, "drops"), last(&res, b, "early_drops"));
    let (_, tail) = dumbbell(&FOUR_CUBIC, &[0; 4], Discipline::Droptail, false);
    let droptail = mean_sojourn_ms(&run(tail), b);
    eprintln!("CoDel: mean sojourn {sojourn:.2} ms (DropTail {droptail:.1} ms), {early} CoDel drops of {drops}, goodput {:.2} Mbps", goodput / 1e6);
    assert!((2.0..=12.0).contains(&sojourn), "CoDel mean sojourn {sojourn:.2} ms, target 5 ms");
    assert!(droptail > 100.0, "DropTail's standing queue {droptail:.1} ms: the scenario must build one");
    assert_eq!(drops, early, "every drop is CoDel's, none at the 1000-packet limit");
    assert!(goodput > 0.85 * RATE as f64, "goodput {goodput}");
}

#[test]
fn pie_holds_the_queueing_delay_near_its_target() {
    let (db, spec) = dumbbell(&FOUR_CUBIC, &[0; 4], Discipline::Pie, false);
    let mut sim = Simulation::new(spec).expect("valid");
    sim.run();
    let b = db.bottleneck_link();
    let Some(Aqm::Pie(pie)) = sim.links()[b].qdisc().aqm() else { panic!("the bottleneck runs PIE") };
    let p = pie.drop_prob();
    let res = sim.results();
    assert_conservation(&res);
    let sojourn = mean_sojourn_ms(&res, b);
    let early = last(&res, b, "early_drops");
    eprintln!("PIE: mean sojourn {sojourn:.2} ms (target 15 ms), {early} PIE drops, drop probability at the end {p:.4}");
    assert!((8.0..=25.0).contains(&sojourn), "PIE mean sojourn {sojourn:.2} ms, target 15 ms");
    assert!(early > 0.0 && p > 0.0);
}

/// Two bulk `bulk` flows with RTTs of 40 ms and 120 ms and a sparse flow (a window-limited TCP
/// flow sending 2 packets per RTT, far below its share), through a queue of `limit` packets.
fn fq_scenario(d: Discipline, limit: u64, bulk: &str) -> (Dumbbell, Spec) {
    let (db, mut spec) = dumbbell(&[bulk, bulk, "reno"], &[0, 20, 0], d, false);
    if let FlowSpec::Tcp(f) = &mut spec.flows[2] {
        f.rwnd_bytes = Some(2 * 1448);
    }
    spec.links[db.bottleneck_link()].queue.limit_packets = Some(limit);
    (db, spec)
}

fn rtt_ms(res: &Results, flow: usize, column: &str) -> f64 {
    1e3 * res.flows.f64(column)[flow]
}

#[test]
fn fq_codel_keeps_a_sparse_flow_fast_and_shares_by_drr() {
    let (_, spec) = fq_scenario(Discipline::FqCodel, BUFFER_PACKETS, "cubic");
    let res = run(spec);
    let bulk: Vec<f64> = (0..2).map(|f| mean_goodput_bps(&res, f, WARMUP_S, DURATION_S as f64)).collect();
    let fair = jain(&bulk);
    let (sparse, sparse_min) = (rtt_ms(&res, 2, "rtt_p95_s"), rtt_ms(&res, 2, "rtt_min_s"));
    // The same flows through CoDel alone (one FIFO): the sparse flow waits behind the bulk ones
    // and the short-RTT flow takes more.
    let codel = run(fq_scenario(Discipline::Codel, BUFFER_PACKETS, "cubic").1);
    let codel_bulk: Vec<f64> = (0..2).map(|f| mean_goodput_bps(&codel, f, WARMUP_S, DURATION_S as f64)).collect();
    let codel_sparse = rtt_ms(&codel, 2, "rtt_p95_s");
    eprintln!(
        "FQ-CoDel: sparse flow RTT p95 {sparse:.2} ms, min {sparse_min:.2} (CoDel p95 {codel_sparse:.2}), bulk {:.2}/{:.2} Mbps Jain {fair:.4} (CoDel {:.2}/{:.2} Jain {:.4})",
        bulk[0] / 1e6,
        bulk[1] / 1e6,
        codel_bulk[0] / 1e6,
        codel_bulk[1] / 1e6,
        jain(&codel_bulk)
    );
    // A new-list packet waits for little more than the packet on the wire (1.2 ms each).
    assert!(sparse < sparse_min + 4.0, "sparse flow's RTT p95 {sparse:.2} ms, min {sparse_min:.2} ms");
    assert!(codel_sparse > sparse + 3.0, "CoDel alone {codel_sparse:.2} ms vs FQ-CoDel {sparse:.2} ms");
    assert!(fair > 0.99, "Jain {fair:.4} of {bulk:?}");
    assert!(jain(&codel_bulk) < fair, "one FIFO should be less fair: {codel_bulk:?}");
}

/// Two UDP flows overloading the link unequally: 12 Mbps of 1500-byte packets and 6 Mbps of
/// 500-byte payloads on 10 Mbps. Deficit round robin in bytes gives each half the link (max-min
/// fair: both want more than 5 Mbps); DropTail gives each what its arrivals win at the tail.
fn cbr_shares(d: Discipline) -> [f64; 2] {
    let mut db = Dumbbell::new(2, RATE, ms(20), 100);
    db.access_delay_ns = vec![0, 0];
    let flows = vec![
        FlowSpec::UdpCbr(cbr_flow("big", db.left(0), db.right(0), mbps(12), 1500)),
        FlowSpec::UdpCbr(cbr_flow("small", db.left(1), db.right(1), mbps(6), 500)),
    ];
    let mut spec = db.spec(5, secs(10), ms(100), flows);
    make_discipline(&mut spec.links[db.bottleneck_link()].queue, d, false);
    let res = run(spec);
    assert_conservation(&res);
    // Wire bytes: payload + 28 bytes of IPv4 and UDP headers.
    let received = res.flows.f64("packets_received");
    [received[0] * 1528.0 * 8.0 / 10.0, received[1] * 528.0 * 8.0 / 10.0]
}

#[test]
fn fq_shares_by_deficit_round_robin_in_bytes() {
    let fq = cbr_shares(Discipline::Fq);
    let tail = cbr_shares(Discipline::Droptail);
    eprintln!("FQ: {:.2}/{:.2} Mbps Jain {:.4}; DropTail {:.2}/{:.2} Jain {:.4}", fq[0] / 1e6, fq[1] / 1e6, jain(&fq), tail[0] / 1e6, tail[1] / 1e6, jain(&tail));
    assert!((fq[0] / fq[1] - 1.0).abs() < 0.01, "FQ shares {fq:?}");
    assert!(fq[0] + fq[1] > 0.95 * RATE as f64, "FQ shares {fq:?}");
    assert!(tail[0] / tail[1] > 1.2, "DropTail shares {tail:?}: the scenario must be unfair without DRR");
}

/// Eight flows on a RED queue (min_th 5, max_th 15 packets) starting with max_p 0.01: too gentle
/// for eight flows, so plain RED's average sits above the band; Adaptive RED raises max_p until
/// the average is in [min_th + 0.4·(max_th − min_th), min_th + 0.6·(max_th − min_th)] = [9, 11].
#[test]
fn adaptive_red_moves_max_p_until_the_average_is_in_its_band() {
    let run_red = |adaptive: bool| {
        let (db, mut spec) = dumbbell(&["reno", "cubic"].repeat(4), &[0; 8], Discipline::Droptail, false);
        let mut red = red_packets(5, 15);
        red.max_p = 0.01;
        red.adaptive = adaptive;
        let q = &mut spec.links[db.bottleneck_link()].queue;
        q.limit_packets = Some(100);
        make_red(q, red);
        let mut sim = Simulation::new(spec).expect("valid");
        sim.run();
        let Some(Aqm::Red(red)) = sim.links()[db.bottleneck_link()].qdisc().aqm() else { panic!("the bottleneck runs RED") };
        let max_p = red.max_p();
        let res = sim.results();
        (mean(&queue_col(&res, db.bottleneck_link(), "red_avg", WARMUP_S)), max_p)
    };
    let (avg, max_p) = run_red(true);
    let (plain_avg, plain_max_p) = run_red(false);
    eprintln!("Adaptive RED: mean avg {avg:.2} packets, max_p {max_p:.4}; plain RED: mean avg {plain_avg:.2}, max_p {plain_max_p}");
    assert_eq!(plain_max_p, 0.01);
    assert!(plain_avg > 11.0, "plain RED's average {plain_avg:.2} should sit above the band");
    assert!(max_p > 0.02, "max_p {max_p}");
    assert!((8.0..=12.0).contains(&avg), "Adaptive RED's mean average {avg:.2}, band [9, 11]");
}

/// ECN-enabled CUBIC and Reno flows (RFC 3168: a mark halves the window as a loss would) through
/// CoDel, FQ-CoDel and PIE with `ecn = true`: the AQM marks instead of dropping (PIE while its
/// probability is at most 10%), and the queue stays short. Without ECN the same AQMs drop.
/// (DCTCP is left out: its gentle response is tuned to step marking on the instantaneous queue,
/// which DropTail's threshold gives it; a probabilistic AQM drives PIE's probability past 10%.)
#[test]
fn ecn_capable_flows_are_marked_not_dropped() {
    for d in [Discipline::Codel, Discipline::FqCodel, Discipline::Pie] {
        let (db, spec) = dumbbell(&["reno", "cubic", "reno", "cubic"], &[0; 4], d, true);
        let res = run(spec);
        assert_conservation(&res);
        let b = db.bottleneck_link();
        // After the warm-up: PIE drops ECT packets too while its probability is above 10%
        // (RFC 8033 §5.1), as it is when four flows leave slow start together.
        let after = |name: &str| last(&res, b, name) - queue_col(&res, b, name, 0.0)[(WARMUP_S * 10.0) as usize];
        let (marks, drops) = (after("marks"), after("early_drops"));
        let sojourn = mean_sojourn_ms(&res, b);
        let (_, plain) = dumbbell(&["cubic"; 4], &[0; 4], d, false);
        let plain_drops = last(&run(plain), b, "early_drops");
        eprintln!("{d:?} with ECN: {marks} marks, {drops} AQM drops, mean sojourn {sojourn:.2} ms; without ECN {plain_drops} AQM drops");
        assert!(marks > 100.0, "{d:?}: {marks} marks");
        assert!(drops <= marks / 100.0, "{d:?}: {drops} drops beside {marks} marks");
        assert!(plain_drops > 100.0, "{d:?} without ECN: {plain_drops} drops");
        assert!(sojourn < 30.0, "{d:?}: mean sojourn {sojourn:.2} ms");
    }
}

#[test]
fn discipline_parameters_are_validated_with_field_paths() {
    let check = |d: Discipline, f: &dyn Fn(&mut Spec), want: &str| {
        let (_, mut spec) = dumbbell(&["cubic"], &[0], d, false);
        f(&mut spec);
        assert_eq!(spec.validate().unwrap_err().to_string(), want);
    };
    check(Discipline::Codel, &|s| s.links[0].queue.codel = None, "links[0].queue.codel: required with discipline \"codel\"");
    check(Discipline::Codel, &|s| s.links[0].queue.codel.as_mut().unwrap().target_ns = ms(200), "links[0].queue.codel.target_ns: must be shorter than the interval (100 ms)");
    check(Discipline::FqCodel, &|s| s.links[0].queue.fq_codel.as_mut().unwrap().flows = 0, "links[0].queue.fq_codel.flows: 0 is not in [1, 65536]");
    check(Discipline::Fq, &|s| s.links[0].queue.fq.as_mut().unwrap().quantum_bytes = 0, "links[0].queue.fq.quantum_bytes: must be positive");
    check(Discipline::Pie, &|s| s.links[0].queue.pie.as_mut().unwrap().beta = -1.0, "links[0].queue.pie.beta: -1 is not a positive number");
    check(Discipline::Pie, &|s| s.links[0].queue.ecn_threshold_packets = Some(5), "links[0].queue.ecn_threshold_packets: must be null with discipline \"pie\" (it marks with pie.ecn = true)");
    check(
        Discipline::Droptail,
        &|s| s.links[0].queue.fq = Some(ccarena_sim::spec::FqConfig { flows: 4, quantum_bytes: 1500 }),
        "links[0].queue.fq: only a queue with discipline \"fq\" takes FQ parameters; set it to null",
    );
    // Today's specs (no parameter objects at all) still parse: the objects default to null.
    let (_, spec) = dumbbell(&["cubic"], &[0], Discipline::Droptail, false);
    let json = spec.to_json().replace(",\"codel\":null", "").replace(",\"fq_codel\":null", "").replace(",\"pie\":null", "").replace(",\"fq\":null", "");
    assert!(!json.contains("codel"), "{json}");
    assert_eq!(Spec::from_json(&json).expect("parses"), spec);
}
