//! UDT (Gu and Grossman, Computer Networks 51(7), 2007; draft-gg-udt-03) in the simulator:
//!
//! - on a clean 1 Gbps / 100 ms path UDT's DAIMD fills the link (the paper's efficiency claim for
//!   high bandwidth-delay products), and its increases shrink by decades as it nears the capacity;
//! - with 0.1 % random loss on that path UDT's goodput is many times Reno's (Reno is held near
//!   the Mathis et al. bound, ~5 Mbps), and its sending rate sits at the fixed point of its own
//!   increase and decrease rules (~110 Mbps), not near the link rate;
//! - two UDT flows share a bottleneck fairly (the paper's intra-protocol fairness);
//! - a finite transfer over a lossy path delivers every byte exactly once, links conserve
//!   packets, and runs are deterministic.
//!
//! The sans-IO endpoints are tested through lossy, reordering channels in
//! `crates/transport/tests/udt.rs`; the controller's formulas in `crates/cc/src/udt.rs`.

use ccarena_sim::spec::{FlowSpec, Spec};
use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, udt_flow, Dumbbell};
use ccarena_sim::{Column, Results};
use crate::common::{assert_conservation, assert_identical, jain, mean_goodput_bps, run, tcp};

/// UDT packets: 1456 payload bytes per 1500 on the wire.
const UDT_PAYLOAD_SHARE: f64 = 1456.0 / 1500.0;

/// The long fat pipe: 1 Gbps, 100 ms RTT (50 ms each way on the bottleneck), one-BDP buffer
/// (1 Gbps × 100 ms = 8 333 packets of 1500 B).
fn long_fat_pipe(pairs: usize, loss: f64) -> Dumbbell {
    let mut d = Dumbbell::new(pairs, mbps(1000), ms(50), 8_333);
    d.bottleneck_loss = loss;
    d
}

fn udt(d: &Dumbbell, i: usize) -> FlowSpec {
    FlowSpec::Udt(udt_flow(&format!("udt{i}"), d.left(i), d.right(i)))
}

/// Sending rate (pacing rate) samples of `flow` in (from_s, to_s].
fn rates(res: &Results, flow: usize, from_s: f64, to_s: f64) -> Vec<f64> {
    let s = &res.samples;
    (0..s.rows())
        .filter(|&i| {
            s.f64("flow")[i] as usize == flow && s.f64("time_s")[i] > from_s && s.f64("time_s")[i] <= to_s
        })
        .map(|i| s.f64("pacing_rate_bps")[i])
        .collect()
}

#[test]
fn udt_fills_a_clean_long_fat_pipe_with_decreasing_increases() {
    let d = long_fat_pipe(1, 0.0);
    let res = run(d.spec(1, secs(30), ms(1000), vec![udt(&d, 0)]));
    assert_conservation(&res);
    let capacity = 1e9 * UDT_PAYLOAD_SHARE;
    let got = mean_goodput_bps(&res, 0, 20.0, 30.0);
    eprintln!(
        "clean 1 Gbps / 100 ms: UDT {:.1} Mbps ({:.1}% of payload capacity)",
        got / 1e6,
        100.0 * got / capacity
    );
    assert!(got >= 0.9 * capacity, "UDT reached only {:.1}% of the link", 100.0 * got / capacity);
    // DAIMD: after the slow-start overshoot the rate climbs by about 1 packet per SYN (≈116
    // Mbps/s) while more than 100 Mbps is spare, then ten times slower, then a hundred times.
    let r = rates(&res, 0, 0.0, 30.0);
    let steps: Vec<f64> = r.windows(2).map(|w| w[1] - w[0]).collect();
    let per_second = |spare_lo: f64, spare_hi: f64| -> Vec<f64> {
        r.windows(2)
            .zip(&steps)
            .filter(|(w, _)| {
                let spare = 1e9 - w[0] / UDT_PAYLOAD_SHARE;
                w[1] < 1e9 * UDT_PAYLOAD_SHARE && spare > spare_lo && spare < spare_hi
            })
            .map(|(_, s)| *s)
            .collect()
    };
    // inc packets per SYN: the rate grows by inc/SYN packets/s every SYN, 100 times a second.
    let step = |inc: f64| inc / 0.01 * 100.0 * 1456.0 * 8.0;
    let fast = per_second(200e6, 900e6);
    let mid = per_second(20e6, 90e6);
    assert!(!fast.is_empty() && !mid.is_empty(), "rates {r:?}");
    for s in &fast {
        assert!((s / step(1.0) - 1.0).abs() < 0.1, "spare > 100 Mbps: +{:.1} Mbps/s", s / 1e6);
    }
    for s in &mid {
        assert!((s / step(0.1) - 1.0).abs() < 0.1, "spare 10–100 Mbps: +{:.2} Mbps/s", s / 1e6);
    }
}

#[test]
fn udt_gets_many_times_renos_goodput_under_random_loss() {
    // 0.1 % random loss on the forward bottleneck; 20 s; goodput over the last 15 s.
    let d = long_fat_pipe(1, 0.001);
    let (from, to) = (5.0, 20.0);
    let u = run(d.spec(7, secs(20), ms(500), vec![udt(&d, 0)]));
    assert_conservation(&u);
    let r = run(d.spec(7, secs(20), ms(500), vec![tcp(tcp_flow("reno", d.left(0), d.right(0), "reno"))]));
    let gu = mean_goodput_bps(&u, 0, from, to);
    let gr = mean_goodput_bps(&r, 0, from, to);
    let rate = rates(&u, 0, from, to);
    let mean_rate = rate.iter().sum::<f64>() / rate.len() as f64;
    eprintln!(
        "1 Gbps / 100 ms / 0.1% loss: UDT {:.1} Mbps (sending rate {:.1} Mbps, {:.1}% of the link), Reno {:.2} Mbps, ratio {:.1}",
        gu / 1e6,
        mean_rate / 1e6,
        100.0 * gu / 1e9 / UDT_PAYLOAD_SHARE,
        gr / 1e6,
        gu / gr
    );
    assert!(gu >= 5.0 * gr, "UDT {:.1} Mbps vs Reno {:.2} Mbps", gu / 1e6, gr / 1e6);
    // Where DAIMD settles: the rate C (packets/s) grows by inc/SYN every SYN (inc = 1 packet
    // while more than 100 Mbps is spare) and loses 1/9 at each loss report, which come at p·C per
    // second: dC/dt = inc/SYN² − p·C²/9 = 0 at C* = √(9·inc/(p·SYN²)) ≈ 9 487 packets/s, 110
    // Mbps of payload — far below the link, whatever its capacity. (Reports within one congestion
    // period decrease less, ACKs held back while a loss is repaired increase less; the two
    // roughly cancel.)
    let c_star = (9.0 * 1.0 / (0.001 * 0.01 * 0.01f64)).sqrt() * 1456.0 * 8.0;
    assert!(
        (0.7..=1.3).contains(&(mean_rate / c_star)),
        "sending rate {:.1} Mbps vs C* {:.1} Mbps",
        mean_rate / 1e6,
        c_star / 1e6
    );
    // UDT repairs every loss: the receiver got every byte it acknowledged, no timeouts needed.
    let fl = &u.flows;
    assert!(fl.f64("packets_retransmitted")[0] > 0.0);
    assert_eq!(fl.f64("rto_count")[0], 0.0, "NAKs, not EXP timeouts, repair random loss");
}

#[test]
fn two_udt_flows_share_a_long_fat_pipe_fairly() {
    let d = long_fat_pipe(2, 0.0);
    let a = udt(&d, 0);
    let FlowSpec::Udt(mut b) = udt(&d, 1) else { unreachable!() };
    b.start_ns = secs(2); // the late flow must converge, not start in lockstep
    let res = run(d.spec(3, secs(30), ms(500), vec![a, FlowSpec::Udt(b)]));
    assert_conservation(&res);
    let g = [mean_goodput_bps(&res, 0, 15.0, 30.0), mean_goodput_bps(&res, 1, 15.0, 30.0)];
    let j = jain(&g);
    eprintln!("two UDT flows: {:.1} / {:.1} Mbps, Jain {j:.3}", g[0] / 1e6, g[1] / 1e6);
    assert!(j >= 0.9, "Jain {j:.3}");
    assert!(g[0] + g[1] >= 0.8 * 1e9 * UDT_PAYLOAD_SHARE, "the pair must also use the link");
}

/// A 20 MB UDT transfer over a 100 Mbps / 40 ms path with 1 % forward loss.
fn lossy_transfer_spec(duration_ns: u64) -> Spec {
    let mut d = Dumbbell::new(1, mbps(100), ms(20), 333);
    d.bottleneck_loss = 0.01;
    let mut f = udt_flow("file", d.left(0), d.right(0));
    f.bytes = Some(20_000_000);
    d.spec(11, duration_ns, ms(100), vec![FlowSpec::Udt(f)])
}

#[test]
fn finite_transfer_delivers_every_byte_once_and_runs_are_deterministic() {
    let res = run(lossy_transfer_spec(secs(60)));
    let fl = &res.flows;
    let text = |name: &str| match fl.get(name) {
        Some(Column::Str(v)) => v[0].clone(),
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!((text("kind"), text("flavor"), text("recovery")), ("udt".into(), "udt".into(), "nak".into()));
    assert_eq!(fl.f64("bytes_delivered")[0], 20_000_000.0);
    assert_eq!(fl.f64("bytes_sent")[0], 20_000_000.0 + fl.f64("bytes_retransmitted")[0]);
    assert!(fl.f64("bytes_retransmitted")[0] > 0.0, "1% loss must cost retransmissions");
    let fct = fl.f64("completion_time_s")[0];
    // 20 MB at 97 Mbps of payload is 1.65 s; slow start and losses add some.
    assert!(fct > 1.6 && fct < 20.0, "completion time {fct}");
    assert!(fl.f64("rtt_samples")[0] > 10.0 && fl.f64("rtt_min_s")[0] >= 0.040);
    assert_conservation(&res);
    // Stopped mid-transfer at an odd instant: packets are queued and in flight, and every link
    // still conserves them.
    let mid = run(lossy_transfer_spec(secs(1) + 234_567));
    assert_conservation(&mid);
    assert!(mid.links.f64("packets_in_flight_end")[0] > 0.0);
    // Same spec, same bits.
    assert_identical(&run(lossy_transfer_spec(secs(3))), &run(lossy_transfer_spec(secs(3))));
}

#[test]
fn spec_round_trips_and_udt_flavor_is_refused_on_tcp() {
    let d = Dumbbell::new(1, mbps(10), ms(10), 20);
    let spec = d.spec(1, secs(1), ms(100), vec![udt(&d, 0)]);
    let json = serde_json::to_string(&spec).unwrap();
    assert!(json.contains("\"kind\":\"udt\""));
    assert_eq!(Spec::from_json(&json).unwrap(), spec);
    // Unknown controller parameter.
    let FlowSpec::Udt(mut f) = udt(&d, 0) else { unreachable!() };
    f.params.insert("gamma".into(), 1.0);
    let err = d.spec(1, secs(1), ms(100), vec![FlowSpec::Udt(f)]).validate().unwrap_err();
    assert_eq!(err.path, "flows[0].params");
    // The udt controller is not a TCP flavor.
    let err = d
        .spec(1, secs(1), ms(100), vec![tcp(tcp_flow("x", d.left(0), d.right(0), "udt"))])
        .validate()
        .unwrap_err();
    assert_eq!(err.path, "flows[0].flavor");
    assert!(err.message.contains("kind \"udt\""), "{}", err.message);
}
