//! CoDel's and FQ-CoDel's CE threshold (Linux's `ce_threshold`, tc-codel(8) and tc-fq_codel(8);
//! `ccarena_link::qdisc::codel::CeThreshold`) on the simulator: DCTCP, whose window follows the
//! fraction of marked packets (RFC 8257 §3.3), through a 1 ms sojourn threshold holds the queue
//! near that threshold, where CoDel's own law (5 ms target, RFC 8289 §4.3), marking at the
//! square-root pace of its control law, lets DCTCP's queue stand at several milliseconds.
//!
//! Every run: two DCTCP flows (ECT(0): the threshold's default selector `"all"` marks them), 100
//! Mbit/s, base RTT 20 ms, 6 s, ECN on at the queue; the bottleneck's sojourn is read from its
//! 10 ms samples after the first second.

use ccarena_link::qdisc::codel::CeThreshold;
use ccarena_link::qdisc::EcnSelector;
use ccarena_sim::spec::{Discipline, FlowSpec, Spec};
use ccarena_sim::testkit::{make_discipline, mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

const DURATION_S: u64 = 6;
const WARMUP_S: f64 = 1.0;

/// Two DCTCP flows, 50 ms apart, through a 100 Mbit/s bottleneck (one-way 8 ms, 1 ms access
/// links: base RTT 20 ms) whose queue is `discipline` (CoDel or FQ-CoDel, 5 ms / 100 ms, ECN)
/// with a CE threshold of `threshold_ns` if any.
fn dctcp_pair(discipline: Discipline, threshold_ns: Option<u64>) -> Spec {
    let mut db = Dumbbell::new(2, mbps(100), ms(8), 1000);
    db.access_delay_ns = vec![ms(1); 2];
    let flows: Vec<FlowSpec> = (0..2)
        .map(|i| {
            let mut f = tcp_flow(&format!("dctcp{i}"), db.left(i), db.right(i), "dctcp");
            f.start_ns = ms(50) * i as u64;
            tcp(f)
        })
        .collect();
    let mut spec = db.spec(1, secs(DURATION_S), ms(10), flows);
    let queue = &mut spec.links[db.bottleneck_link()].queue;
    make_discipline(queue, discipline, true);
    let threshold = threshold_ns.map(|sojourn_ns| CeThreshold { sojourn_ns, selector: EcnSelector::All });
    if let Some(c) = queue.codel.as_mut() {
        c.ce_threshold = threshold;
    }
    if let Some(f) = queue.fq_codel.as_mut() {
        f.ce_threshold_ns = threshold_ns;
    }
    spec
}

/// After a 1 s warm-up (slow start's overshoot, which CoDel's 100 ms interval lets build, is not
/// the steady state): the bottleneck's sojourn p99 and mean over its 10 ms samples' means (ms),
/// and the flows' summed goodput (Mbit/s).
fn measure(discipline: Discipline, threshold_ns: Option<u64>) -> (f64, f64, f64) {
    let spec = dctcp_pair(discipline, threshold_ns);
    let link = Dumbbell::new(2, mbps(100), ms(8), 1000).bottleneck_link() as f64;
    let res = run(spec);
    assert_conservation(&res);
    let q = &res.queues;
    let mut sojourn_ms: Vec<f64> = (0..q.rows())
        .filter(|&r| q.f64("link")[r] == link && q.f64("time_s")[r] > WARMUP_S && !q.f64("sojourn_mean_s")[r].is_nan())
        .map(|r| 1e3 * q.f64("sojourn_mean_s")[r])
        .collect();
    sojourn_ms.sort_by(f64::total_cmp);
    let p99 = sojourn_ms[(sojourn_ms.len() * 99).div_ceil(100) - 1];
    let mean = sojourn_ms.iter().sum::<f64>() / sojourn_ms.len() as f64;
    let goodput = (0..2).map(|i| mean_goodput_bps(&res, i, WARMUP_S, DURATION_S as f64)).sum::<f64>() / 1e6;
    (p99, mean, goodput)
}

/// With a 1 ms threshold the sojourn p99 stays within a millisecond of the threshold and the
/// link stays full; without it, CoDel's law alone lets the queue stand near its 5 ms target.
#[test]
fn dctcp_holds_the_queue_at_the_ce_threshold_not_at_codels_target() {
    for discipline in [Discipline::Codel, Discipline::FqCodel] {
        let (with_p99, with_mean, with_mbps) = measure(discipline, Some(ms(1)));
        let (without_p99, without_mean, without_mbps) = measure(discipline, None);
        eprintln!(
            "{discipline:?}: sojourn p99 {with_p99:.2} ms (mean {with_mean:.2}) at {with_mbps:.1} Mbit/s with a 1 ms threshold, \
             p99 {without_p99:.2} ms (mean {without_mean:.2}) at {without_mbps:.1} without"
        );
        assert!((0.5..=2.0).contains(&with_p99), "{discipline:?}: sojourn p99 {with_p99:.2} ms with the threshold");
        assert!(without_mean > 3.0, "{discipline:?}: sojourn mean {without_mean:.2} ms without it");
        assert!(with_mbps > 90.0, "{discipline:?}: the link is not full with the threshold: {with_mbps:.1} Mbit/s");
    }
}
