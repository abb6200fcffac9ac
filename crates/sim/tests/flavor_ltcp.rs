//! LTCP (Bhandarkar, Jain, Reddy 2005):
//!
//! - it fills a large-BDP link far faster than Reno (500 Mbps, 100 ms, a buffer of 0.2 BDP):
//!   at K layers the window grows by K packets per RTT, and a loss costs only 1/(2K) of it;
//! - in the simulator, too, the growth per RTT is the number of layers at the current window
//!   (K = 1 below 50 packets, layer K + 1 added at W_K + 15·K) and each loss keeps
//!   1 − 1/(2K) of the window, so the decrease is smaller at a larger window (100 Mbps / 40 ms
//!   with K ≈ 6–9, against 500 Mbps / 100 ms with K ≈ 26);
//! - the congestion event that ends slow start halves the window (slow start adds no layers), so
//!   a flow whose slow start overshot the path comes back under it at once instead of cutting
//!   1/(2K) of an overshot window per recovery while losing a fifth of its packets (issue 19).

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

const MSS: f64 = 1448.0;

/// Layers at a window of `w` packets with the default parameters (W_L = 50, δ = 15): the largest
/// K with W_K = 50 + 15·(K(K − 1)/2 − 1) ≤ w, 1 below 50.
fn layers(w: f64) -> f64 {
    let mut k = 1.0;
    while 50.0 + 15.0 * ((k + 1.0) * k / 2.0 - 1.0) <= w {
        k += 1.0;
    }
    k
}

#[test]
fn fills_a_large_bdp_link_much_faster_than_reno() {
    let d = Dumbbell::new(1, mbps(500), ms(50), 833);
    let capacity = 500e6 * MSS / 1500.0;
    let mut got = Vec::new();
    for f in ["ltcp", "reno"] {
        let res =
            run(d.spec(7, secs(30), ms(500), vec![tcp(tcp_flow("f", d.left(0), d.right(0), f))]));
        assert_conservation(&res);
        let (early, late) =
            (mean_goodput_bps(&res, 0, 0.0, 10.0), mean_goodput_bps(&res, 0, 10.0, 30.0));
        eprintln!("{f}: {:.0} Mbps over 0–10 s, {:.0} Mbps over 10–30 s", early / 1e6, late / 1e6);
        got.push((early, late));
    }
    let ((l_early, l_late), (r_early, r_late)) = (got[0], got[1]);
    assert!(
        l_late > 0.95 * capacity,
        "ltcp: {:.0}% of the link over 10–30 s",
        100.0 * l_late / capacity
    );
    assert!(
        r_late < 0.3 * capacity,
        "reno should still be far from full: {:.0}%",
        100.0 * r_late / capacity
    );
    assert!(l_early > 5.0 * r_early);
}

fn check_layers(res: &Results, label: &str) -> Vec<f64> {
    let t = res.samples.f64("time_s");
    let cwnd: Vec<f64> = res.samples.f64("cwnd_bytes").iter().map(|c| c / MSS).collect();
    let ss = res.samples.f64("ssthresh_bytes");
    let srtt = res.samples.f64("srtt_s");
    let state = res.samples.f64("ca_state");
    // Growth per RTT over Open stretches, against K(cwnd).
    let mut ratios = Vec::new();
    for k in 1..t.len() - 1 {
        if t[k] > 3.0 && state[k - 1] == 0.0 && state[k] == 0.0 && state[k + 1] == 0.0 {
            let per_rtt = (cwnd[k + 1] - cwnd[k - 1]) / (t[k + 1] - t[k - 1]) * srtt[k];
            ratios.push(per_rtt / layers(cwnd[k]));
        }
    }
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let (p10, median, p90) = (ratios[n / 10], ratios[n / 2], ratios[n * 9 / 10]);
    // Decrease at each loss, against 1 − 1/(2K).
    let mut kept = Vec::new();
    for i in (1..t.len()).filter(|&i| t[i] > 3.0 && state[i] == 3.0 && state[i - 1] != 3.0) {
        let (w, k) = (cwnd[i - 1], layers(cwnd[i - 1]));
        let r = ss[i] / MSS / w;
        assert!(
            (r - (1.0 - 1.0 / (2.0 * k))).abs() < 0.01,
            "{label}: kept {r:.3} at {w:.0} packets (K = {k})"
        );
        kept.push(1.0 - r);
    }
    eprintln!(
        "{label}: growth per RTT / K: p10 {p10:.2}, median {median:.2}, p90 {p90:.2} ({n} samples); decrease at {} losses {kept:.3?}",
        kept.len()
    );
    assert!(
        (0.9..1.1).contains(&median) && p10 > 0.8 && p90 < 1.2,
        "{label}: growth is not K per RTT"
    );
    assert!(kept.len() >= 3, "{label}: too few losses");
    kept
}

#[test]
fn growth_is_k_per_rtt_and_decrease_is_one_over_2k() {
    let d = Dumbbell::new(1, mbps(100), ms(20), 333);
    let small =
        run(d.spec(1, secs(20), ms(10), vec![tcp(tcp_flow("f", d.left(0), d.right(0), "ltcp"))]));
    let d = Dumbbell::new(1, mbps(500), ms(50), 833);
    let large =
        run(d.spec(1, secs(20), ms(10), vec![tcp(tcp_flow("f", d.left(0), d.right(0), "ltcp"))]));
    let small_dec = check_layers(&small, "100 Mbps / 40 ms");
    let large_dec = check_layers(&large, "500 Mbps / 100 ms");
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!(
        mean(&small_dec) > 2.0 * mean(&large_dec),
        "a larger window (more layers) must back off less"
    );
}

#[test]
fn the_first_flow_backs_off_after_slow_start_and_its_loss_rate_stays_low() {
    // A scaled-down seed 001: 100 Mbps, 100 ms RTT, one BDP of drop-tail buffer (833 packets),
    // three flows entering 20 s apart. Before the fix the first flow's slow start overshot to
    // ~2 440 packets (the path holds 1 666), each recovery then cut 1/(2K) ≈ 1/44 of it, and the
    // flow lost ~8% of everything it sent, most of it in the first 20 s.
    let d = Dumbbell::new(3, mbps(100), ms(50), 833);
    let flows = (0..3)
        .map(|i| {
            let mut f = tcp_flow(&format!("f{i}"), d.left(i), d.right(i), "ltcp");
            f.start_ns = secs(20 * i as u64);
            tcp(f)
        })
        .collect();
    let res = run(d.spec(1, secs(60), ms(500), flows));
    assert_conservation(&res);
    let sent = res.flows.f64("packets_sent");
    let retx = res.flows.f64("packets_retransmitted");
    let loss = retx[0] / sent[0];
    let t = res.samples.f64("time_s");
    let flow = res.samples.f64("flow");
    let cwnd = res.samples.f64("cwnd_bytes");
    let first: Vec<f64> =
        (0..t.len()).filter(|&i| flow[i] == 0.0 && t[i] <= 20.0).map(|i| cwnd[i] / MSS).collect();
    let peak = first.iter().cloned().fold(0.0, f64::max);
    let settled = first[first.len() - 1];
    let total: f64 = (0..3).map(|i| mean_goodput_bps(&res, i, 45.0, 60.0)).sum();
    eprintln!(
        "first flow: {:.2}% of its packets retransmitted, cwnd peak {peak:.0} then {settled:.0} \
         packets at 20 s; the three flows {:.1} Mbps over 45–60 s",
        100.0 * loss,
        total / 1e6
    );
    assert!(loss < 0.02, "the first flow retransmitted {:.1}% of its packets", 100.0 * loss);
    // The path holds 1 666 packets: after slow start the window is back within it.
    assert!(settled < 1_700.0, "cwnd {settled:.0} packets at 20 s (peak {peak:.0})");
    assert!(total > 0.9 * 100e6 * MSS / 1500.0);
}
