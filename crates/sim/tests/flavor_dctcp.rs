//! DCTCP (RFC 8257) end to end: with CE marking at a queue threshold K, the bottleneck queue stays
//! near K while the link stays full (RFC 8257 §1, §3; Alizadeh et al., SIGCOMM 2010 §3–4: "high
//! burst tolerance, low latency and high throughput" with a queue of about K packets).

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

/// Mean, min and max waiting packets at the forward bottleneck (link 0) over samples in
/// (from, to] (sampled every 10 ms).
fn backlog_stats(res: &Results, from_s: f64, to_s: f64) -> (f64, f64, f64) {
    let t = res.queues.f64("time_s");
    let l = res.queues.f64("link");
    let b = res.queues.f64("backlog_packets");
    let v: Vec<f64> = (0..t.len()).filter(|&i| l[i] == 0.0 && t[i] > from_s && t[i] <= to_s).map(|i| b[i]).collect();
    (v.iter().sum::<f64>() / v.len() as f64, v.iter().cloned().fold(f64::MAX, f64::min), v.iter().cloned().fold(0.0, f64::max))
}

/// A datacenter-like path: 100 Mbps, `one_way_ns` each way on the bottleneck, a 200-packet
/// buffer; CE marking at `k` packets if given.
fn path_with(one_way_ns: u64, k: Option<u64>) -> (Dumbbell, impl Fn(Vec<ccarena_sim::spec::FlowSpec>) -> ccarena_sim::spec::Spec) {
    let d = Dumbbell::new(1, mbps(100), one_way_ns, 200);
    let d2 = d.clone();
    let make = move |flows| {
        let mut spec = d2.spec(1, secs(6), ms(10), flows);
        spec.links[d2.bottleneck_link()].queue.ecn_threshold_packets = k;
        spec
    };
    (d, make)
}

/// 0.25 ms each way: base RTT ≈ 0.5 ms plus serialization, a BDP of about 5 packets.
fn path(k: Option<u64>) -> (Dumbbell, impl Fn(Vec<ccarena_sim::spec::FlowSpec>) -> ccarena_sim::spec::Spec) {
    path_with(250_000, k)
}

const K: u64 = 20;

#[test]
fn queue_stays_near_k_and_the_link_stays_full() {
    let (d, make) = path(Some(K));
    let flow = tcp_flow("dctcp", d.left(0), d.right(0), "dctcp");
    assert!(flow.ecn, "the catalogue turns ECN on for dctcp");
    let res = run(make(vec![tcp(flow)]));
    assert_conservation(&res);
    let payload_capacity = 100e6 * 1448.0 / 1500.0;
    let got = mean_goodput_bps(&res, 0, 1.0, 6.0);
    let (mean_q, min_q, max_q) = backlog_stats(&res, 1.0, 6.0);
    let links = &res.links;
    let marked = links.f64("packets_marked")[0];
    let dropped = links.f64("packets_dropped_queue")[0];
    let marks_col = res.queues.f64("marks");
    eprintln!(
        "dctcp K={K}: goodput {:.2} Mbps ({:.1}%), backlog mean {mean_q:.1} min {min_q} max {max_q} pkts, {marked} marked, {dropped} dropped",
        got / 1e6,
        100.0 * got / payload_capacity
    );
    assert!(got >= 0.95 * payload_capacity, "goodput {:.1}% of the link", 100.0 * got / payload_capacity);
    assert!(mean_q > 0.75 * K as f64 && mean_q < 1.25 * K as f64, "mean backlog {mean_q:.1} pkts not near K = {K}");
    // α-scaled cuts are small (α ≈ the marked fraction), so the queue oscillates a few packets
    // around K and never drains; a halving sender (RFC 3168) swings it from K down to near 0.
    assert!(min_q >= 0.5 * K as f64, "backlog fell to {min_q} pkts");
    assert!(max_q < 1.5 * K as f64, "max backlog {max_q} pkts");
    assert!(marked > 100.0, "the queue marks");
    assert_eq!(dropped, 0.0, "marking, not dropping, controls the queue");
    let link_col = res.queues.f64("link");
    let last_marks = (0..marks_col.len()).rev().find(|&i| link_col[i] == 0.0).map(|i| marks_col[i]).unwrap();
    assert_eq!(last_marks, marked, "the queues table's cumulative marks end at the link total");
    assert_eq!(res.flows.f64("packets_retransmitted")[0], 0.0);
}

#[test]
fn without_marking_it_is_reno_and_fills_the_buffer() {
    // The same path with no marking: DCTCP has no signal but loss, so (like Reno) it fills the
    // 200-packet buffer: what marking at K buys is the difference.
    let (d, make) = path(None);
    let res = run(make(vec![tcp(tcp_flow("dctcp", d.left(0), d.right(0), "dctcp"))]));
    let (mean_q, _, _) = backlog_stats(&res, 1.0, 6.0);
    let got = mean_goodput_bps(&res, 0, 1.0, 6.0);
    eprintln!("dctcp without marking: backlog mean {mean_q:.1} pkts, goodput {:.2} Mbps", got / 1e6);
    assert!(mean_q > 4.0 * K as f64, "mean backlog {mean_q:.1} pkts");
    assert_eq!(res.links.f64("packets_marked")[0], 0.0);
}

#[test]
fn full_throughput_with_a_k_far_below_the_bdp_where_classic_ecn_halving_is_not() {
    // Alizadeh et al. §3.3 (K > C·RTT/7 suffices for DCTCP) against a classic-ECN sender that
    // halves on every marked window: with RTT ≈ 2 ms (a BDP of about 17 packets) and K = 5 the
    // halved window falls under the BDP and the link idles; DCTCP's α-scaled cut keeps it full.
    let k_small = 5;
    let (d, make) = path_with(1_000_000, Some(k_small));
    let mut reno = tcp_flow("reno", d.left(0), d.right(0), "reno");
    reno.ecn = true;
    let reno_res = run(make(vec![tcp(reno)]));
    let dctcp_res = run(make(vec![tcp(tcp_flow("dctcp", d.left(0), d.right(0), "dctcp"))]));
    let reno_g = mean_goodput_bps(&reno_res, 0, 1.0, 6.0);
    let dctcp_g = mean_goodput_bps(&dctcp_res, 0, 1.0, 6.0);
    eprintln!("K={k_small}, RTT ≈ 2 ms: reno+ECN {:.2} Mbps, dctcp {:.2} Mbps", reno_g / 1e6, dctcp_g / 1e6);
    let payload_capacity = 100e6 * 1448.0 / 1500.0;
    assert!(dctcp_g >= 0.95 * payload_capacity, "dctcp {:.2} Mbps", dctcp_g / 1e6);
    assert!(reno_g < 0.90 * payload_capacity, "reno+ECN {:.2} Mbps", reno_g / 1e6);
}

#[test]
fn ecn_threshold_fields_are_optional_and_validated() {
    let d = Dumbbell::new(1, mbps(100), 250_000, 200);
    let spec = d.spec(1, secs(1), ms(10), vec![tcp(tcp_flow("dctcp", d.left(0), d.right(0), "dctcp"))]);
    // Absent in JSON = null = no marking.
    let mut v: serde_json::Value = serde_json::to_value(&spec).unwrap();
    let q = v["links"][0]["queue"].as_object_mut().unwrap();
    q.remove("ecn_threshold_packets");
    q.remove("ecn_threshold_bytes");
    let parsed = ccarena_sim::Spec::from_json(&v.to_string()).expect("thresholds may be omitted");
    assert_eq!(parsed.links[0].queue.ecn_threshold_packets, None);
    // At most one, and not above the limit in the same unit.
    let mut bad = spec.clone();
    bad.links[0].queue.ecn_threshold_packets = Some(201);
    assert_eq!(bad.validate().unwrap_err().to_string(), "links[0].queue.ecn_threshold_packets: must not exceed the queue limit");
    let mut bad = spec.clone();
    bad.links[0].queue.ecn_threshold_packets = Some(20);
    bad.links[0].queue.ecn_threshold_bytes = Some(30_000);
    assert_eq!(bad.validate().unwrap_err().to_string(), "links[0].queue: set at most one of ecn_threshold_packets and ecn_threshold_bytes");
}
