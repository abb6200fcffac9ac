//! Window limits real hosts have (issue 19 item 7): a flow's receive window (`rwnd_bytes`, RFC
//! 9293 §3.8.6) and send buffer (`sndbuf_bytes`). On a path whose bandwidth-delay product
//! exceeds the limit, the flow is window-limited: it keeps one window per round trip in flight,
//! so its goodput is window/RTT, whatever the congestion controller would allow.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{mean_goodput_bps, run, tcp};

/// 100 Mbps, 40 ms base RTT: BDP 500 kB, four times the 125 kB limits tested.
const RATE_BPS: u64 = mbps(100);
const LIMIT_BYTES: u64 = 125_000;

/// One `flavor` flow on the 100 Mbps / 40 ms path with the given limits; returns its mean
/// goodput after 5 s, the largest in-flight sample, and the mean smoothed RTT.
fn window_limited(flavor: &str, rwnd: Option<u64>, sndbuf: Option<u64>) -> (f64, f64, f64) {
    let d = Dumbbell::new(1, RATE_BPS, ms(20), 1000);
    let mut f = tcp_flow(flavor, d.left(0), d.right(0), flavor);
    f.rwnd_bytes = rwnd;
    f.sndbuf_bytes = sndbuf;
    let res = run(d.spec(1, secs(20), ms(100), vec![tcp(f)]));
    let goodput = mean_goodput_bps(&res, 0, 5.0, 20.0);
    let (t, inflight, srtt) = (res.samples.f64("time_s"), res.samples.f64("inflight_bytes"), res.samples.f64("srtt_s"));
    let max_inflight = inflight.iter().cloned().fold(0.0, f64::max);
    let late: Vec<f64> = (0..t.len()).filter(|&i| t[i] > 5.0).map(|i| srtt[i]).collect();
    (goodput, max_inflight, late.iter().sum::<f64>() / late.len() as f64)
}

fn assert_window_rate(what: &str, flavor: &str, rwnd: Option<u64>, sndbuf: Option<u64>) {
    let (goodput, max_inflight, srtt) = window_limited(flavor, rwnd, sndbuf);
    let expected = LIMIT_BYTES as f64 * 8.0 / srtt;
    eprintln!(
        "{what} {LIMIT_BYTES} B, {flavor}: goodput {:.2} Mbps, window/RTT {:.2} Mbps (srtt {:.2} ms), max in flight {max_inflight} B",
        goodput / 1e6,
        expected / 1e6,
        srtt * 1e3
    );
    assert!((goodput / expected - 1.0).abs() < 0.05, "{what}: goodput {goodput:.0} vs window/RTT {expected:.0}");
    // Far below the link: the limit, not the network, sets the rate.
    assert!(goodput < 0.3 * RATE_BPS as f64);
    assert!(max_inflight <= LIMIT_BYTES as f64, "in flight {max_inflight} > {LIMIT_BYTES}");
    // The base RTT (no queue builds: the window is a quarter of the BDP).
    assert!((0.040..0.042).contains(&srtt), "srtt {srtt}");
}

#[test]
fn receive_window_limited_flow_gets_rwnd_per_rtt() {
    for flavor in ["reno", "cubic"] {
        assert_window_rate("rwnd", flavor, Some(LIMIT_BYTES), None);
    }
}

#[test]
fn send_buffer_limited_flow_gets_sndbuf_per_rtt() {
    assert_window_rate("sndbuf", "cubic", None, Some(LIMIT_BYTES));
}

#[test]
fn a_window_above_the_bdp_does_not_limit() {
    // 2 MB ≫ BDP: the flow fills the link as an unlimited one does.
    let (limited, _, _) = window_limited("cubic", Some(2_000_000), Some(2_000_000));
    let (unlimited, _, _) = window_limited("cubic", None, None);
    eprintln!("cubic with a 2 MB window {:.2} Mbps, unlimited {:.2} Mbps", limited / 1e6, unlimited / 1e6);
    assert!(limited > 0.9 * RATE_BPS as f64 * 1448.0 / 1500.0);
    assert!((limited / unlimited - 1.0).abs() < 0.03);
}
