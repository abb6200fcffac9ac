//! A link whose capacity follows a trace (Mahimahi delivery opportunities or rate steps) delivers
//! what the trace allows, second by second: exactly for a flow that always keeps it busy, and
//! within 5% for TCP flows that saturate it.

use ccarena_link::RateTrace;
use ccarena_sim::spec::{FlowSpec, Spec, TraceSpec};
use ccarena_sim::testkit::{cbr_flow, mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{assert_conservation, run, tcp};

/// Per-second capacity of the test traces, Mbps: each a multiple of 3 Mbps, so that a second
/// holds a whole number of 1500-byte opportunities (3 Mbps = 250 a second), changing by at most a factor of 2 from one second to the next (a sharper drop makes TCP time out, which is TCP, not the link).
/// The bottleneck queue for the TCP test, packets.
const QUEUE: u64 = 60;
const RATES_MBPS: [u64; 8] = [12, 9, 18, 12, 21, 15, 9, 15];

/// A Mahimahi trace with `RATES_MBPS[k]` in second k: its opportunities spread evenly over the
/// second on the millisecond grid (several in one ms above 12 Mbps).
fn mahimahi_ms() -> Vec<u64> {
    let mut out = Vec::new();
    for (k, &r) in RATES_MBPS.iter().enumerate() {
        let n = r * 1_000_000 / 12_000;
        out.extend((0..n).map(|j| 1000 * k as u64 + j * 1000 / n));
    }
    out
}

/// The same capacities as rate steps, the last row marking the end.
fn steps() -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = RATES_MBPS.iter().enumerate().map(|(k, &r)| (secs(k as u64), mbps(r))).collect();
    out.push((secs(RATES_MBPS.len() as u64), mbps(RATES_MBPS[0])));
    out
}

/// A one-pair dumbbell (bottleneck 10 ms, `queue` packets) whose forward bottleneck follows
/// `trace`, with `flows`, run for the trace's length, sampled every second.
fn spec_with(trace: TraceSpec, queue: u64, flows: impl FnOnce(&Dumbbell) -> Vec<FlowSpec>) -> (Dumbbell, Spec) {
    let d = Dumbbell::new(2, mbps(12), ms(10), queue);
    let mut spec = d.spec(3, secs(RATES_MBPS.len() as u64), secs(1), flows(&d));
    let b = d.bottleneck_link();
    spec.links[b].rate_bps = trace.rate_trace().unwrap().mean_rate_bps();
    spec.links[b].trace = Some(trace);
    (d, spec)
}

/// Bytes delivered to the receivers of all flows in each second k = 1, 2, …, from the samples'
/// goodput (payload bits per second) scaled to wire bytes by `wire_per_payload`.
fn delivered_per_second(res: &Results, wire_per_payload: f64) -> Vec<f64> {
    let (t, g) = (res.samples.f64("time_s"), res.samples.f64("goodput_bps"));
    let mut out = vec![0.0; RATES_MBPS.len()];
    for i in 0..t.len() {
        let k = t[i].round() as usize;
        if (1..=out.len()).contains(&k) {
            out[k - 1] += g[i] / 8.0 * wire_per_payload;
        }
    }
    out
}

/// The trace's capacity in each second as the receivers see it: the window shifted by the
/// bottleneck's delay and a 1500-byte packet's serialization on the 1 Gbps access link.
fn capacity_per_second(trace: &TraceSpec) -> Vec<f64> {
    let t: RateTrace = trace.rate_trace().unwrap();
    let shift = ms(10) + 12_000;
    (0..RATES_MBPS.len() as u64).map(|k| t.capacity_bytes((secs(k)).saturating_sub(shift), secs(k + 1) - shift) as f64).collect()
}

fn traces() -> [(&'static str, TraceSpec); 2] {
    [
        ("mahimahi", TraceSpec { opportunities_ms: Some(mahimahi_ms()), steps: None, looped: false }),
        ("steps", TraceSpec { opportunities_ms: None, steps: Some(steps()), looped: false }),
    ]
}

#[test]
fn a_link_kept_busy_delivers_exactly_the_traces_capacity_each_second() {
    for (kind, trace) in traces() {
        // Two UDP flows of 1500-byte packets at 20 Mbps each: more than the trace's peak.
        let (_, spec) = spec_with(trace.clone(), 2000, |d| {
            (0..2).map(|i| FlowSpec::UdpCbr(cbr_flow(&format!("cbr{i}"), d.left(i), d.right(i), mbps(20), 1472))).collect()
        });
        let res = run(spec);
        assert_conservation(&res);
        let got = delivered_per_second(&res, 1500.0 / 1472.0);
        let want = capacity_per_second(&trace);
        for k in 1..got.len() {
            let err = (got[k] - want[k]).abs() / want[k];
            eprintln!("{kind} ({k}, {}] s: capacity {:.3} Mbps, delivered {:.3} Mbps ({:+.3}%)", k + 1, want[k] * 8e-6, got[k] * 8e-6, 100.0 * (got[k] / want[k] - 1.0));
            // Within one packet (a packet straddles the second's edge).
            assert!(got[k] - want[k] <= 1500.0 + 1e-6 && want[k] - got[k] <= 1500.0 + 1e-6, "{kind} second {k}: {err}");
        }
    }
}

#[test]
fn saturating_tcp_flows_follow_the_traces_capacity_within_five_percent() {
    for (kind, trace) in traces() {
        // Two CUBIC flows behind a queue of about 1.5 BDP at the peak rate (21 Mbps × 22 ms ≈
        // 38 packets): it does not run dry when the rate doubles. (With a much deeper queue, the
        // per-second goodput swings as loss recovery releases held data in bursts.)
        let (_, spec) = spec_with(trace.clone(), QUEUE, |d| (0..2).map(|i| tcp(tcp_flow(&format!("cubic{i}"), d.left(i), d.right(i), "cubic"))).collect());
        let res = run(spec);
        assert_conservation(&res);
        let got = delivered_per_second(&res, 1500.0 / 1448.0);
        let want = capacity_per_second(&trace);
        for k in 1..got.len() {
            let ratio = got[k] / want[k];
            eprintln!("{kind} ({k}, {}] s: capacity {:.3} Mbps, TCP goodput (wire bytes) {:.3} Mbps ({:+.2}%)", k + 1, want[k] * 8e-6, got[k] * 8e-6, 100.0 * (ratio - 1.0));
            assert!((ratio - 1.0).abs() <= 0.05, "{kind} second {k}: {:.3} of the capacity", ratio);
        }
    }
}

#[test]
fn a_trace_that_ends_stops_the_link_and_a_looped_one_repeats() {
    // One second at 12 Mbps, then (not looped) nothing: the CBR flow's packets pile up and drop.
    let once = TraceSpec { opportunities_ms: Some((1..=1000).collect()), steps: None, looped: false };
    let (d, spec) = spec_with(once, 100, |d| vec![FlowSpec::UdpCbr(cbr_flow("cbr", d.left(0), d.right(0), mbps(20), 1472))]);
    let res = run(spec);
    assert_conservation(&res);
    let got = delivered_per_second(&res, 1500.0 / 1472.0);
    assert!((got[0] - 1000.0 * 1500.0).abs() <= 1500.0 * 11.0, "first second {}", got[0]);
    assert!(got[2..].iter().all(|&g| g == 0.0), "nothing after the end: {got:?}");
    let b = d.bottleneck_link();
    assert_eq!(res.links.f64("packets_delivered")[b], 1000.0);
    // Looped with a 1 s period: 1000 opportunities every second.
    let looped = TraceSpec { opportunities_ms: Some((1..=1000).collect()), steps: None, looped: true };
    let (_, spec) = spec_with(looped, 100, |d| vec![FlowSpec::UdpCbr(cbr_flow("cbr", d.left(0), d.right(0), mbps(20), 1472))]);
    let got = delivered_per_second(&run(spec), 1500.0 / 1472.0);
    assert!(got[1..].iter().all(|&g| (g - 1.5e6).abs() <= 1500.0), "{got:?}");
}

#[test]
fn a_rate_change_on_a_trace_link_is_refused() {
    let (d, mut spec) = spec_with(traces()[0].1.clone(), 100, |_| vec![]);
    spec.events.push(ccarena_sim::testkit::link_event(secs(1), d.bottleneck_link(), |c| c.rate_bps = Some(mbps(1))));
    let e = spec.validate().unwrap_err();
    assert_eq!(e.path, "events[0].set.rate_bps");
    let mut bad = spec.clone();
    bad.events.clear();
    bad.links[0].trace = Some(TraceSpec { opportunities_ms: Some(vec![3, 2]), steps: None, looped: true });
    assert_eq!(bad.validate().unwrap_err().path, "links[0].trace.opportunities_ms");
    bad.links[0].trace = Some(TraceSpec { opportunities_ms: None, steps: None, looped: true });
    assert_eq!(bad.validate().unwrap_err().path, "links[0].trace");
}
