//! RED (Floyd & Jacobson 1993, gentle variant of Floyd 2000) end to end: on a bottleneck shared
//! by several TCP flows the average queue settles between min_th and max_th (§1: "keep the
//! average queue size low while allowing occasional bursts"), RED drops early, ECN-capable flows
//! are marked instead of dropped, and thresholds work in bytes as in packets. The drop
//! probability curve and the spacing of drops are unit-tested in `src/red.rs`.

mod common;

use ccarena_sim::spec::{FlowSpec, Spec};
use ccarena_sim::testkit::{make_red, mbps, ms, red_bytes, red_packets, secs, tcp_flow, Dumbbell};
use ccarena_sim::{Results, Simulation};
use common::{assert_conservation, mean_goodput_bps, run, tcp};

const MIN_TH: u64 = 5;
const MAX_TH: u64 = 15;
const FLOWS: usize = 8;

/// `FLOWS` flows (alternately Reno and CUBIC) on a 10 Mbps / 20 ms dumbbell whose forward
/// bottleneck queue (100-packet hard limit) is RED with min_th 5, max_th 15 packets; 60 s,
/// sampled every 100 ms. `ecn` turns ECN on in the queue and the flows.
fn red_dumbbell(ecn: bool, bytes: bool) -> (Dumbbell, Spec) {
    let d = Dumbbell::new(FLOWS, mbps(10), ms(20), 100);
    let flows: Vec<FlowSpec> = (0..FLOWS)
        .map(|i| {
            let flavor = if i % 2 == 0 { "reno" } else { "cubic" };
            let mut f = tcp_flow(&format!("{flavor}{i}"), d.left(i), d.right(i), flavor);
            f.ecn = ecn;
            // Staggered starts so the flows do not slow-start in lockstep.
            f.start_ns = ms(100) * i as u64;
            tcp(f)
        })
        .collect();
    let mut spec = d.spec(7, secs(60), ms(100), flows);
    let mut red = if bytes { red_bytes(MIN_TH * 1500, MAX_TH * 1500) } else { red_packets(MIN_TH, MAX_TH) };
    red.ecn = ecn;
    let q = &mut spec.links[d.bottleneck_link()].queue;
    if bytes {
        q.limit_packets = None;
        q.limit_bytes = Some(100 * 1500);
    }
    make_red(q, red);
    (d, spec)
}

/// Column `name` of the queues table for `link`, over samples with `time_s > from_s`.
fn queue_col(res: &Results, link: usize, name: &str, from_s: f64) -> Vec<f64> {
    let q = &res.queues;
    let (t, l, v) = (q.f64("time_s"), q.f64("link"), q.f64(name));
    (0..t.len()).filter(|&i| l[i] as usize == link && t[i] > from_s).map(|i| v[i]).collect()
}

/// Fraction of `xs` within [lo, hi].
fn fraction_within(xs: &[f64], lo: f64, hi: f64) -> f64 {
    xs.iter().filter(|&&x| x >= lo && x <= hi).count() as f64 / xs.len() as f64
}

fn last(res: &Results, link: usize, name: &str) -> f64 {
    *queue_col(res, link, name, 0.0).last().expect("samples")
}

#[test]
fn average_queue_stays_between_the_thresholds_with_early_drops() {
    let (d, spec) = red_dumbbell(false, false);
    let res = run(spec);
    assert_conservation(&res);
    let b = d.bottleneck_link();
    let avg = queue_col(&res, b, "red_avg", 10.0);
    let within = fraction_within(&avg, MIN_TH as f64, MAX_TH as f64);
    let mean_avg = avg.iter().sum::<f64>() / avg.len() as f64;
    let (drops, early) = (last(&res, b, "drops"), last(&res, b, "early_drops"));
    let goodput: f64 = (0..FLOWS).map(|f| mean_goodput_bps(&res, f, 10.0, 60.0)).sum();
    let backlog = queue_col(&res, b, "backlog_packets", 10.0);
    let max_backlog = backlog.iter().cloned().fold(0.0, f64::max);
    eprintln!(
        "RED packets: avg in [{MIN_TH}, {MAX_TH}] {:.1}% of samples after 10 s (mean {mean_avg:.2}), {early} early of {drops} drops, max backlog {max_backlog}, goodput {:.2} Mbps",
        100.0 * within,
        goodput / 1e6
    );
    assert!(within >= 0.90, "average within the thresholds in {:.1}% of samples", 100.0 * within);
    assert!(early > 100.0, "early drops {early}");
    assert_eq!(last(&res, b, "marks"), 0.0, "no ECN, no marks");
    // Most drops are early ones: the hard limit (100 packets) is far above max_th.
    assert!(early >= 0.9 * drops, "{early} early of {drops}");
    assert!(max_backlog < 100.0, "the queue never reached the hard limit");
    assert!(goodput > 0.9 * 10e6 * 1448.0 / 1500.0, "the link stays busy: {:.2} Mbps", goodput / 1e6);
    // DropTail links report NaN averages and no early drops.
    let access = b + 2;
    assert!(queue_col(&res, access, "red_avg", 0.0).iter().all(|v| v.is_nan()));
    assert_eq!(last(&res, access, "early_drops"), 0.0);
    // The links table's drops are the queues table's (early ones included).
    assert_eq!(res.links.f64("packets_dropped_queue")[b], drops);
}

#[test]
fn with_ecn_flows_are_marked_instead_of_dropped() {
    let (d, spec) = red_dumbbell(true, false);
    let res = run(spec);
    assert_conservation(&res);
    let b = d.bottleneck_link();
    let (drops, early, marks) = (last(&res, b, "drops"), last(&res, b, "early_drops"), last(&res, b, "marks"));
    // Counters at 10 s (the 100th sample): the start-up, where slow start outruns the slowly
    // rising average and overflows the hard limit, is over.
    let at_10s = |name: &str| queue_col(&res, b, name, 0.0)[99];
    let (marks_after, early_after, drops_after) = (marks - at_10s("marks"), early - at_10s("early_drops"), drops - at_10s("drops"));
    let avg = queue_col(&res, b, "red_avg", 10.0);
    let within = fraction_within(&avg, MIN_TH as f64, MAX_TH as f64);
    eprintln!(
        "RED + ECN: whole run {marks} marks, {early} early drops, {drops} drops; after 10 s {marks_after} marks, {early_after} early drops, {drops_after} drops; avg within thresholds {:.1}%",
        100.0 * within
    );
    assert!(marks_after > 1000.0, "marks after 10 s: {marks_after}");
    assert_eq!((early_after, drops_after), (0.0, 0.0), "marking alone controls the queue after start-up");
    // Over the whole run only non-ECT packets (retransmissions after start-up overflow) are
    // dropped early.
    assert!(early < 0.05 * marks, "{early} early drops against {marks} marks");
    assert!(within >= 0.90, "average within the thresholds in {:.1}% of samples", 100.0 * within);
}

#[test]
fn byte_thresholds_keep_the_average_in_bytes_between_them() {
    let (d, spec) = red_dumbbell(false, true);
    let res = run(spec);
    assert_conservation(&res);
    let b = d.bottleneck_link();
    let avg = queue_col(&res, b, "red_avg", 10.0);
    let (lo, hi) = ((MIN_TH * 1500) as f64, (MAX_TH * 1500) as f64);
    let within = fraction_within(&avg, lo, hi);
    let mean_avg = avg.iter().sum::<f64>() / avg.len() as f64;
    let early = last(&res, b, "early_drops");
    // Every forward packet is 1500 B (ACKs take the other direction), so thresholds of 5·1500
    // and 15·1500 bytes should behave as 5 and 15 packets.
    let (_, packet_spec) = red_dumbbell(false, false);
    let packet_early = last(&run(packet_spec), b, "early_drops");
    eprintln!(
        "RED bytes: avg in [{lo}, {hi}] B {:.1}% of samples (mean {mean_avg:.0} B), {early} early drops ({packet_early} with packet thresholds)",
        100.0 * within
    );
    assert!(within >= 0.90, "average within the thresholds in {:.1}% of samples", 100.0 * within);
    assert!(early > 100.0);
    assert!((early - packet_early).abs() <= 0.02 * packet_early, "{early} vs {packet_early}");
    // The average is in bytes: a packet-unit reading (≤ 15) would be far below min_th in bytes.
    assert!(mean_avg > lo);
    let max_bytes = queue_col(&res, b, "backlog_bytes", 0.0).iter().cloned().fold(0.0, f64::max);
    assert!(max_bytes <= (100 * 1500) as f64);
}

#[test]
fn red_runs_are_deterministic_and_leave_other_links_random_streams_alone() {
    let (_, spec) = red_dumbbell(false, false);
    let a = run(spec.clone());
    let b = run(spec);
    common::assert_identical(&a, &b);
    // Wire loss on the forward bottleneck draws from the link's own stream: turning its queue
    // from DropTail into RED changes the traffic but not the loss stream's identity, so a CBR
    // flow on an otherwise idle path sees the same losses either way.
    let mut d = Dumbbell::new(1, mbps(10), ms(10), 100);
    d.bottleneck_loss = 0.05;
    let flows = vec![FlowSpec::UdpCbr(ccarena_sim::testkit::cbr_flow("cbr", d.left(0), d.right(0), mbps(1), 1000))];
    let droptail = d.spec(3, secs(5), ms(100), flows);
    let mut red = droptail.clone();
    make_red(&mut red.links[0].queue, red_packets(MIN_TH, MAX_TH));
    let (x, y) = (run(droptail), run(red));
    assert_eq!(x.links.f64("packets_lost_wire")[0], y.links.f64("packets_lost_wire")[0]);
    assert!(x.links.f64("packets_lost_wire")[0] > 0.0);
}

fn red(s: &mut Spec) -> &mut ccarena_sim::spec::RedSpec {
    s.links[0].queue.red.as_mut().expect("RED on link 0")
}

#[test]
fn red_spec_is_validated_with_field_paths() {
    let (_, spec) = red_dumbbell(false, false);
    let check = |f: &dyn Fn(&mut Spec), want: &str| {
        let mut s = spec.clone();
        f(&mut s);
        assert_eq!(s.validate().unwrap_err().to_string(), want);
    };
    check(&|s| red(s).max_th_packets = Some(5), "links[0].queue.red.max_th_packets: must be greater than min_th_packets (5)");
    check(&|s| red(s).min_th_bytes = Some(1), "links[0].queue.red: set exactly one pair of thresholds: min_th_packets and max_th_packets, or min_th_bytes and max_th_bytes");
    check(&|s| red(s).max_th_packets = None, "links[0].queue.red: set exactly one pair of thresholds: min_th_packets and max_th_packets, or min_th_bytes and max_th_bytes");
    check(&|s| red(s).max_p = 0.0, "links[0].queue.red.max_p: 0 is not in (0, 1]");
    check(&|s| red(s).max_p = 1.5, "links[0].queue.red.max_p: 1.5 is not in (0, 1]");
    check(&|s| red(s).w_q = f64::NAN, "links[0].queue.red.w_q: NaN is not in (0, 1]");
    check(&|s| red(s).idle_packet_bytes = 0, "links[0].queue.red.idle_packet_bytes: must be positive");
    check(&|s| s.links[0].queue.red = None, "links[0].queue.red: required with discipline \"red\"");
    check(
        &|s| s.links[0].queue.ecn_threshold_packets = Some(3),
        "links[0].queue.ecn_threshold_packets: must be null with discipline \"red\" (RED marks with red.ecn = true)",
    );
    check(
        &|s| s.links[1].queue.red = Some(red_packets(1, 2)),
        "links[1].queue.red: only a queue with discipline \"red\" takes RED parameters; set it to null",
    );
    // min_th = 0 and w_q = max_p = 1 are allowed.
    let mut ok = spec.clone();
    red(&mut ok).min_th_packets = Some(0);
    red(&mut ok).max_p = 1.0;
    red(&mut ok).w_q = 1.0;
    ok.validate().expect("valid");
}

#[test]
fn red_json_requires_every_key_and_droptail_may_omit_red() {
    let (_, spec) = red_dumbbell(false, false);
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["links"][0]["queue"]["discipline"], "red");
    assert_eq!(json["links"][0]["queue"]["red"]["min_th_bytes"], serde_json::Value::Null);
    Simulation::from_json(&json.to_string()).expect("round trip");
    // DropTail queues are written with `"red": null` (a serialized spec names every field), and
    // a spec without the key is accepted too.
    assert_eq!(json["links"][1]["queue"].get("red"), Some(&serde_json::Value::Null));
    let mut v = json.clone();
    v["links"][1]["queue"].as_object_mut().unwrap().remove("red");
    Simulation::from_json(&v.to_string()).expect("no red key on a droptail queue");
    for key in ["min_th_bytes", "max_p", "idle_packet_bytes"] {
        let mut v = json.clone();
        v["links"][0]["queue"]["red"].as_object_mut().unwrap().remove(key);
        let e = Simulation::from_json(&v.to_string()).unwrap_err().to_string();
        assert!(e.contains(&format!("missing field `{key}`")), "{key}: {e}");
    }
    let mut v = json.clone();
    v["links"][0]["queue"]["red"]["maxp"] = 0.1.into();
    assert!(Simulation::from_json(&v.to_string()).unwrap_err().to_string().contains("unknown field `maxp`"));
}

#[test]
fn red_max_th_must_not_exceed_the_queue_limit_in_its_unit() {
    // Thresholds in packets against a 100-packet limit, at spec time and after a limit change.
    let (_, spec) = red_dumbbell(false, false);
    let mut s = spec.clone();
    red(&mut s).max_th_packets = Some(101);
    assert_eq!(
        s.validate().unwrap_err().to_string(),
        "links[0].queue.red.max_th_packets: 101 exceeds the queue limit (100); RED needs max_th ≤ limit"
    );
    red(&mut s).max_th_packets = Some(100);
    s.validate().expect("max_th = limit is allowed");
    let mut s = spec.clone();
    s.events.push(ccarena_sim::testkit::link_event(secs(1), 0, |c| c.limit_packets = Some(MAX_TH - 1)));
    assert_eq!(
        s.validate().unwrap_err().to_string(),
        "events[0].set.limit_packets: 14 is below the RED queue's max_th (15); RED needs max_th ≤ limit"
    );
    // Thresholds in bytes: compared with a limit in bytes, not with one in packets.
    let (_, bytes) = red_dumbbell(false, true);
    let mut s = bytes.clone();
    let limit = s.links[0].queue.limit_bytes.expect("limit in bytes");
    red(&mut s).max_th_bytes = Some(limit + 1);
    assert_eq!(
        s.validate().unwrap_err().to_string(),
        format!("links[0].queue.red.max_th_bytes: {} exceeds the queue limit ({limit}); RED needs max_th ≤ limit", limit + 1)
    );
    s.links[0].queue.limit_bytes = None;
    s.links[0].queue.limit_packets = Some(100);
    s.validate().expect("byte thresholds are not compared with a packet limit");
}
