//! Scheduled link changes (`events`): a rate, delay, loss or queue-limit change applies at its
//! instant and to the packets after it, the pipe stays FIFO, runs stay deterministic and every
//! link conserves packets.

use ccarena_sim::spec::{FlowSpec, Spec};
use ccarena_sim::testkit::{cbr_flow, link_event, mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::{Results, Simulation};
use crate::common::{assert_conservation, assert_identical, mean_goodput_bps, run, tcp};

/// Values of samples column `name` of `flow` with `from_s < time_s <= to_s`.
fn flow_col(res: &Results, flow: usize, name: &str, from_s: f64, to_s: f64) -> Vec<f64> {
    let s = &res.samples;
    let (t, f, v) = (s.f64("time_s"), s.f64("flow"), s.f64(name));
    (0..t.len()).filter(|&i| f[i] as usize == flow && t[i] > from_s + 1e-9 && t[i] <= to_s + 1e-9).map(|i| v[i]).collect()
}

/// Values of queues column `name` of `link` with `from_s < time_s <= to_s`.
fn queue_col(res: &Results, link: usize, name: &str, from_s: f64, to_s: f64) -> Vec<f64> {
    let q = &res.queues;
    let (t, l, v) = (q.f64("time_s"), q.f64("link"), q.f64(name));
    (0..t.len()).filter(|&i| l[i] as usize == link && t[i] > from_s + 1e-9 && t[i] <= to_s + 1e-9).map(|i| v[i]).collect()
}

fn min(xs: &[f64]) -> f64 {
    xs.iter().cloned().fold(f64::INFINITY, f64::min)
}

fn max(xs: &[f64]) -> f64 {
    xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
}

/// An 8 Mbps CBR flow (1000 B payload, 1028 B on the wire) over a 10 Mbps / 10 ms bottleneck
/// whose rate drops to 4 Mbps at 10 s and returns to 10 Mbps at 20 s.
fn rate_change_spec() -> (Dumbbell, Spec) {
    let d = Dumbbell::new(1, mbps(10), ms(10), 50);
    let flows = vec![FlowSpec::UdpCbr(cbr_flow("cbr", d.left(0), d.right(0), mbps(8), 1000))];
    let mut spec = d.spec(5, secs(30), ms(100), flows);
    let b = d.bottleneck_link();
    spec.events = vec![
        link_event(secs(20), b, |c| c.rate_bps = Some(mbps(10))),
        link_event(secs(10), b, |c| c.rate_bps = Some(mbps(4))),
    ];
    (d, spec)
}

#[test]
fn a_rate_drop_cuts_the_delivered_rate_from_its_instant() {
    let (d, spec) = rate_change_spec();
    let res = run(spec.clone());
    assert_conservation(&res);
    let before = mean_goodput_bps(&res, 0, 2.0, 10.0);
    let during = mean_goodput_bps(&res, 0, 10.5, 20.0);
    let after = mean_goodput_bps(&res, 0, 21.0, 30.0);
    let cap_4 = 4e6 * 1000.0 / 1028.0;
    eprintln!("CBR 8 Mbps: {:.3} Mbps before, {:.3} at 4 Mbps (capacity {:.3}), {:.3} after", before / 1e6, during / 1e6, cap_4 / 1e6, after / 1e6);
    assert!((before - 8e6).abs() < 0.01 * 8e6, "before {before}");
    assert!((during - cap_4).abs() < 0.01 * cap_4, "during {during}");
    assert!((after - 8e6).abs() < 0.01 * 8e6, "after {after}");
    // The queue fills to its limit and drops only while the link is slower than the flow.
    let b = d.bottleneck_link();
    let drops = |t: f64| queue_col(&res, b, "drops", t - 0.05, t + 0.05)[0];
    assert_eq!(drops(10.0), 0.0);
    assert!(drops(20.0) > 0.0);
    assert_eq!(drops(20.5), drops(30.0), "no drops once the rate is back");
    // Utilization is busy time over the run: 8.224/10 for 20 s, 1 for 10 s (less the queue
    // fill), about 0.88 in all; a rate-weighted reading would not reach it.
    let util = res.links.f64("utilization")[b];
    let want = (8.224 / 10.0 * 20.0 + 10.0) / 30.0;
    eprintln!("utilization {util:.4}, expected about {want:.4}");
    assert!((util - want).abs() < 0.01, "utilization {util}");
    // The links table keeps the initial rate.
    assert_eq!(res.links.f64("rate_bps")[b], 10e6);
}

#[test]
fn runs_with_events_are_deterministic_and_a_no_op_event_changes_nothing() {
    let (_, spec) = rate_change_spec();
    assert_identical(&run(spec.clone()), &run(spec.clone()));
    // The events' order in the list does not matter when their times differ.
    let mut reversed = spec.clone();
    reversed.events.reverse();
    assert_identical(&run(spec), &run(reversed));
    // Setting a link to the values it has changes no packet's fate or timing.
    let d = Dumbbell::new(2, mbps(10), ms(20), 40);
    let flows = vec![tcp(tcp_flow("cubic", d.left(0), d.right(0), "cubic")), tcp(tcp_flow("reno", d.left(1), d.right(1), "reno"))];
    let plain = d.spec(9, secs(20), ms(100), flows);
    let mut noop = plain.clone();
    noop.events = (1..20)
        .map(|s| link_event(secs(s) + 123_457 * s, s as usize % 2, |c| {
            c.rate_bps = Some(mbps(10));
            c.delay_ns = Some(ms(20));
            c.loss = Some(0.0);
            c.limit_packets = Some(40);
        }))
        .collect();
    assert_identical(&run(plain), &run(noop));
}

#[test]
fn a_delay_change_raises_the_rtt_by_twice_the_step_without_reordering() {
    // DCTCP with marking at K = 5 packets keeps the queue short and loses nothing, so any
    // retransmission would come from reordering (three duplicate ACKs).
    let d = Dumbbell::new(1, mbps(10), ms(10), 200);
    let mut spec = d.spec(1, secs(30), ms(100), vec![tcp(tcp_flow("dctcp", d.left(0), d.right(0), "dctcp"))]);
    spec.links[0].queue.ecn_threshold_packets = Some(5);
    spec.links[1].queue.ecn_threshold_packets = Some(5);
    // Both directions of the bottleneck: 10 → 50 ms at 10 s, back to 10 ms at 20 s (when
    // packets sent under 50 ms are still in the pipe and later ones would overtake them).
    for link in [0, 1] {
        spec.events.push(link_event(secs(10), link, |c| c.delay_ns = Some(ms(50))));
        spec.events.push(link_event(secs(20), link, |c| c.delay_ns = Some(ms(10))));
    }
    let res = run(spec);
    assert_conservation(&res);
    let srtt_before = min(&flow_col(&res, 0, "srtt_s", 5.0, 10.0));
    let srtt_during = min(&flow_col(&res, 0, "srtt_s", 12.0, 20.0));
    let srtt_after = min(&flow_col(&res, 0, "srtt_s", 25.0, 30.0));
    let f = &res.flows;
    let (retx, dup, spurious) = (f.f64("packets_retransmitted")[0], f.f64("duplicate_bytes_received")[0], f.f64("spurious_rtos")[0]);
    eprintln!(
        "delay 10 → 50 → 10 ms: min srtt {:.1} → {:.1} → {:.1} ms; {retx} retransmissions, {dup} duplicate bytes, {spurious} spurious RTOs",
        srtt_before * 1e3,
        srtt_during * 1e3,
        srtt_after * 1e3
    );
    let rise = srtt_during - srtt_before;
    assert!((rise - 0.080).abs() < 0.008, "RTT rose by {:.1} ms", rise * 1e3);
    assert!((srtt_after - srtt_before).abs() < 0.008, "RTT back to {:.1} ms", srtt_after * 1e3);
    assert_eq!((retx, dup, spurious), (0.0, 0.0, 0.0), "no reordering, no retransmission");
    assert_eq!(res.links.f64("packets_dropped_queue")[0], 0.0);
    assert_eq!(res.links.f64("delay_ns")[0], ms(10) as f64, "the links table keeps the initial delay");
}

#[test]
fn a_growing_queue_limit_is_tracked_by_the_max_backlog() {
    // Seed 003's schedule: the bottleneck buffer grows by 10 packets every 30 s from 10.
    let d = Dumbbell::new(2, mbps(10), ms(20), 10);
    let flows = vec![tcp(tcp_flow("reno0", d.left(0), d.right(0), "reno")), tcp(tcp_flow("reno1", d.left(1), d.right(1), "reno"))];
    let mut spec = d.spec(3, secs(120), ms(10), flows);
    for k in 1..4u64 {
        spec.events.push(link_event(secs(30 * k), d.bottleneck_link(), |c| c.limit_packets = Some(10 + 10 * k)));
    }
    let res = run(spec);
    assert_conservation(&res);
    let b = d.bottleneck_link();
    for k in 0..4u64 {
        let (from, to) = (30.0 * k as f64, 30.0 * (k + 1) as f64);
        let limit = (10 + 10 * k) as f64;
        let backlog = queue_col(&res, b, "backlog_packets", from, to);
        let drops = queue_col(&res, b, "drops", from, to);
        let peak = max(&backlog);
        eprintln!("limit {limit}: max backlog {peak}, {} drops in the window", drops.last().unwrap() - drops[0]);
        assert!(peak <= limit, "backlog {peak} above the limit {limit}");
        assert!(peak >= limit - 1.0, "backlog peaked at {peak}, limit {limit}");
        assert!(drops.last().unwrap() > &drops[0], "losses at the limit");
    }
}

#[test]
fn losses_start_at_the_loss_change() {
    let d = Dumbbell::new(1, mbps(10), ms(10), 100);
    let flows = vec![FlowSpec::UdpCbr(cbr_flow("cbr", d.left(0), d.right(0), mbps(5), 1000))];
    let mut spec = d.spec(2, secs(20), ms(100), flows);
    spec.events = vec![link_event(secs(10), d.bottleneck_link(), |c| c.loss = Some(0.05))];
    let mut sim = Simulation::new(spec).expect("valid spec");
    sim.run_until(ccarena_cc::SimTime(secs(10)));
    let lost_before = sim.results().links.f64("packets_lost_wire")[0];
    sim.run();
    let res = sim.results();
    assert_conservation(&res);
    let lost = res.links.f64("packets_lost_wire")[0] - lost_before;
    // 625 datagrams/s for 10 s at 5%: 312.5 expected, sd ≈ 17.2.
    eprintln!("losses: {lost_before} before the change, {lost} after (expected 312.5)");
    assert_eq!(lost_before, 0.0);
    assert!((lost - 312.5).abs() < 5.0 * 17.2, "{lost} losses");
}

#[test]
fn events_are_validated_with_field_paths() {
    let d = Dumbbell::new(1, mbps(10), ms(10), 100);
    let spec = d.spec(1, secs(1), ms(100), vec![]);
    let check = |e: ccarena_sim::spec::EventSpec, want: &str| {
        let mut s = spec.clone();
        s.events = vec![link_event(0, 0, |c| c.rate_bps = Some(1)), e];
        assert_eq!(s.validate().unwrap_err().to_string(), want);
    };
    check(link_event(5, 99, |c| c.rate_bps = Some(1)), &format!("events[1].link: link index 99 out of range (0..{})", spec.links.len()));
    check(link_event(5, 0, |_| {}), "events[1].set: changes nothing: give at least one non-null value");
    check(link_event(5, 0, |c| c.rate_bps = Some(0)), "events[1].set.rate_bps: must be positive");
    check(link_event(5, 0, |c| c.loss = Some(1.5)), "events[1].set.loss: 1.5 is not a probability in [0, 1]");
    check(link_event(5, 0, |c| c.limit_bytes = Some(15_000)), "events[1].set.limit_bytes: link 0's queue is limited in packets; set limit_packets");
    let mut bytes = spec.clone();
    bytes.links[0].queue.limit_packets = None;
    bytes.links[0].queue.limit_bytes = Some(150_000);
    bytes.events = vec![link_event(5, 0, |c| c.limit_packets = Some(10))];
    assert_eq!(bytes.validate().unwrap_err().to_string(), "events[0].set.limit_packets: link 0's queue is limited in bytes; set limit_bytes");
    // JSON: `events` is required and every key of `set` must be present.
    let mut v = serde_json::to_value(&spec).unwrap();
    v.as_object_mut().unwrap().remove("events");
    assert!(Simulation::from_json(&v.to_string()).unwrap_err().to_string().contains("missing field `events`"));
    v["events"] = serde_json::json!([{"time_ns": 5, "link": 0, "set": {"rate_bps": 1000000, "delay_ns": null, "loss": null, "limit_packets": null}}]);
    assert!(Simulation::from_json(&v.to_string()).unwrap_err().to_string().contains("missing field `limit_bytes`"));
    v["events"][0]["set"]["limit_bytes"] = serde_json::Value::Null;
    Simulation::from_json(&v.to_string()).expect("complete event");
}
