//! Scalable TCP (Kelly 2003): after a congestion event the window is regained in the same number
//! of RTTs whatever the rate — log(1/0.875)/log(1.01) ≈ 13.4 RTTs plus the reaction time — where
//! Reno's recovery time grows with the window.
//!
//! The congestion signal here is an ECN mark at a queue threshold of one BDP (the buffer is deep
//! enough never to drop): every congestion event is then one clean window reduction. With drops
//! instead, the slow-start overshoot (cwnd ≈ 2× what the path holds) leaves Scalable TCP's
//! ssthresh (0.875·cwnd) far above the path's capacity, and the transport spends seconds — at
//! 1 Gbps, minutes — repairing lost retransmissions in that first recovery before the MIMD
//! cycles start; the property under test is the same either way, the ECN run just gets there.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{mean_goodput_bps, run, tcp};

const MSS: f64 = 1448.0;

/// One flow alone on a `rate` bottleneck, RTT 20 ms, ECN marking at one BDP, for `duration_s`.
fn scalable_run(rate: u64, flavor: &str, duration_s: u64) -> Results {
    let bdp_packets = (rate as f64 * 0.020 / 8.0 / 1500.0) as u64;
    let mut d = Dumbbell::new(1, rate, ms(10), 10 * bdp_packets);
    d.access_rate_bps = 10 * rate;
    let mut f = tcp_flow("f", d.left(0), d.right(0), flavor);
    f.ecn = true;
    let mut spec = d.spec(1, secs(duration_s), ms(2), vec![tcp(f)]);
    spec.links[d.bottleneck_link()].queue.ecn_threshold_packets = Some(bdp_packets);
    run(spec)
}

/// For every congestion event after `from_s` (a sample where cwnd fell by more than 5%), the RTTs
/// from the event until cwnd is back at its value just before it (to 0.2%): elapsed time over the mean
/// smoothed RTT meanwhile.
fn recovery_rtts(res: &Results, from_s: f64) -> Vec<f64> {
    let t = res.samples.f64("time_s");
    let cwnd = res.samples.f64("cwnd_bytes");
    let srtt = res.samples.f64("srtt_s");
    let mut out = Vec::new();
    for i in 1..t.len() {
        if t[i] <= from_s || cwnd[i] >= 0.95 * cwnd[i - 1] {
            continue;
        }
        // Back to the window before the event (within 0.2%: the next event comes at the same
        // window, give or take a few bytes; 0.2% is 0.2 RTT of Scalable growth).
        let before = cwnd[i - 1] * 0.998;
        if let Some(j) = (i..t.len()).find(|&j| cwnd[j] >= before) {
            let mean_srtt = srtt[i..=j].iter().sum::<f64>() / (j - i + 1) as f64;
            out.push((t[j] - t[i - 1]) / mean_srtt);
        }
    }
    out
}

#[test]
fn recovery_takes_the_same_number_of_rtts_at_100_mbps_and_1_gbps() {
    let mut means = Vec::new();
    for rate in [mbps(100), mbps(1000)] {
        let res = scalable_run(rate, "scalable", 10);
        let rtts = recovery_rtts(&res, 2.0);
        let mean = rtts.iter().sum::<f64>() / rtts.len() as f64;
        let window = res.samples.f64("cwnd_bytes").iter().cloned().fold(0.0, f64::max) / MSS;
        let goodput = mean_goodput_bps(&res, 0, 2.0, 10.0);
        eprintln!(
            "scalable at {} Mbps: {} events, {mean:.2} RTTs to regain the window (max cwnd {window:.0} packets), goodput {:.1} Mbps",
            rate / 1_000_000,
            rtts.len(),
            goodput / 1e6
        );
        assert!(rtts.len() >= 10, "too few congestion events: {rtts:?}");
        // log(1/0.875)/log(1.01) = 13.42 RTTs of growth, plus about one RTT before the reduction
        // shows and the 2 ms sampling.
        assert!(
            (13.0..16.0).contains(&mean),
            "{mean:.2} RTTs at {} Mbps: {rtts:?}",
            rate / 1_000_000
        );
        assert!(rtts.iter().all(|r| (mean - r).abs() < 1.0), "{rtts:?}");
        assert!(goodput > 0.9 * rate as f64 * MSS / 1500.0);
        means.push(mean);
    }
    let ratio = means[1] / means[0];
    assert!((ratio - 1.0).abs() < 0.05, "1 Gbps / 100 Mbps recovery time ratio {ratio:.3}");
}

#[test]
fn reno_recovery_grows_with_the_window_where_scalable_does_not() {
    // The contrast that makes the property meaningful: Reno regains half a window at one packet
    // per RTT, so ten times the rate takes ten times the RTTs.
    let slow = recovery_rtts(&scalable_run(mbps(100), "reno", 30), 2.0);
    let fast = recovery_rtts(&scalable_run(mbps(1000), "reno", 30), 2.0);
    eprintln!("reno: {slow:.1?} RTTs at 100 Mbps, {fast:.1?} at 1 Gbps");
    assert!(!slow.is_empty());
    let slow_mean = slow.iter().sum::<f64>() / slow.len() as f64;
    assert!(slow_mean > 2.0 * 14.0, "reno at 100 Mbps: {slow_mean:.1} RTTs");
    // At 1 Gbps a Reno recovery (≈ 1 700 RTTs) does not even fit in the 30 s run.
    assert!(fast.is_empty() || fast.iter().all(|&r| r > 5.0 * slow_mean), "{fast:?}");
}
