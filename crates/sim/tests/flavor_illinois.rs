//! TCP-Illinois (Liu, Başar, Srikant 2006):
//!
//! - it fills a large-BDP link far faster than Reno: with little queueing delay its increase is
//!   α_max = 10 packets per RTT, and on a shallow buffer its losses cost little (500 Mbps,
//!   100 ms, a buffer of 0.2 BDP);
//! - its backoff grows with the queueing delay at the loss: under random loss on a 100 Mbps /
//!   40 ms path with a one-BDP buffer (maximum queueing delay d_m = 40 ms), a loss with an empty
//!   queue costs β_min = 1/8 of the window, one with a longer queue more, along
//!   β = 1/8 … 1/2 between d_2 = 0.1·d_m and d_3 = 0.8·d_m (the formula-level checks of α and β
//!   are the unit tests in `crates/cc/src/illinois.rs`).

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

#[test]
fn fills_a_large_bdp_link_much_faster_than_reno() {
    // 500 Mbps × 100 ms = 4 167 packets; buffer 833 packets.
    let d = Dumbbell::new(1, mbps(500), ms(50), 833);
    let capacity = 500e6 * 1448.0 / 1500.0;
    let mut got = Vec::new();
    for f in ["illinois", "reno"] {
        let res =
            run(d.spec(7, secs(30), ms(500), vec![tcp(tcp_flow("f", d.left(0), d.right(0), f))]));
        assert_conservation(&res);
        let (early, late) =
            (mean_goodput_bps(&res, 0, 0.0, 10.0), mean_goodput_bps(&res, 0, 10.0, 30.0));
        eprintln!("{f}: {:.0} Mbps over 0–10 s, {:.0} Mbps over 10–30 s", early / 1e6, late / 1e6);
        got.push((early, late));
    }
    let ((ill_early, ill_late), (reno_early, reno_late)) = (got[0], got[1]);
    assert!(
        ill_late > 0.9 * capacity,
        "illinois: {:.0}% of the link over 10–30 s",
        100.0 * ill_late / capacity
    );
    assert!(
        reno_late < 0.3 * capacity,
        "reno should still be far from full: {:.0}%",
        100.0 * reno_late / capacity
    );
    assert!(ill_early > 4.0 * reno_early);
}

#[test]
fn backoff_grows_with_the_queueing_delay_at_the_loss() {
    let mut d = Dumbbell::new(1, mbps(100), ms(20), 333);
    d.bottleneck_loss = 1e-4;
    let res = run(d.spec(
        3,
        secs(60),
        ms(5),
        vec![tcp(tcp_flow("f", d.left(0), d.right(0), "illinois"))],
    ));
    assert_conservation(&res);
    let t = res.samples.f64("time_s");
    let cwnd = res.samples.f64("cwnd_bytes");
    let ss = res.samples.f64("ssthresh_bytes");
    let srtt = res.samples.f64("srtt_s");
    let state = res.samples.f64("ca_state");
    // β(d_a) for d_m = 40 ms (the full one-BDP buffer, seen in the first slow start).
    let (d2, d3) = (0.1 * 0.040, 0.8 * 0.040);
    let beta = |q: f64| {
        if q <= d2 {
            0.125
        } else if q >= d3 {
            0.5
        } else {
            0.125 + 0.375 * (q - d2) / (d3 - d2)
        }
    };
    let (mut low, mut high) = (0, 0);
    let events: Vec<usize> =
        (1..t.len()).filter(|&i| t[i] > 3.0 && state[i] == 3.0 && state[i - 1] != 3.0).collect();
    for (n, &i) in events.iter().enumerate() {
        // The smoothed RTT stands for the last round's average RTT; right after another loss it
        // still remembers the queue before that one, so such events are not compared.
        if n > 0 && t[i] - t[events[n - 1]] < 0.15 {
            continue;
        }
        let queueing = srtt[i - 1] - 0.040;
        let kept = ss[i] / cwnd[i - 1];
        eprintln!(
            "loss at {:.2} s, queueing delay {:.1} ms: kept {kept:.3} of cwnd, 1 − β(d) = {:.3}",
            t[i],
            queueing * 1e3,
            1.0 - beta(queueing)
        );
        assert!((kept - (1.0 - beta(queueing))).abs() < 0.03, "at {:.2} s", t[i]);
        if queueing < d2 {
            low += 1;
            assert!(kept > 0.85);
        }
        if queueing > 0.012 {
            high += 1;
            assert!(kept < 0.8);
        }
    }
    assert!(low >= 3 && high >= 3, "{low} losses with an empty queue, {high} with a long one");
}
