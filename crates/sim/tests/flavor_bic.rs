//! BIC (Xu, Harfoush, Rhee, INFOCOM 2004), one flow on a 100 Mbps / 40 ms path with a one-BDP
//! buffer. Between two losses the window, read from cwnd samples every 10 ms:
//!
//! - far below W_max grows additively by S_max = 16 packets per RTT;
//! - nearer W_max grows by half the remaining distance per RTT (binary search), so the
//!   increments shrink as it nears W_max and the window dwells there;
//! - past W_max grows by its distance beyond W_max per RTT (max probing), so the increments grow
//!   again — exponentially — until they reach S_max.
//!
//! A single flow sees both: with fast convergence a loss below the previous W_max lowers W_max
//! under the window the path holds, so every other cycle crosses W_max and probes past it.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

const MSS: f64 = 1448.0;
const S_MAX: f64 = 16.0;

#[test]
fn binary_search_toward_w_max_then_max_probing_past_it() {
    let d = Dumbbell::new(1, mbps(100), ms(20), 333);
    let res =
        run(d.spec(1, secs(25), ms(10), vec![tcp(tcp_flow("b", d.left(0), d.right(0), "bic"))]));
    assert_conservation(&res);
    assert!(mean_goodput_bps(&res, 0, 5.0, 25.0) > 0.95 * 100e6 * MSS / 1500.0);
    let t = res.samples.f64("time_s");
    let cwnd: Vec<f64> = res.samples.f64("cwnd_bytes").iter().map(|c| c / MSS).collect();
    let srtt = res.samples.f64("srtt_s");
    let state = res.samples.f64("ca_state");
    const OPEN: f64 = 0.0;
    const RECOVERY: f64 = 3.0;
    let events: Vec<usize> = (1..t.len())
        .filter(|&i| t[i] > 3.0 && state[i] == RECOVERY && state[i - 1] != RECOVERY)
        .collect();
    assert!(events.len() >= 8, "{} congestion events", events.len());

    // Growth rate at sample k, packets per RTT (central difference).
    let rate = |k: usize| (cwnd[k + 1] - cwnd[k - 1]) / (t[k + 1] - t[k - 1]) * srtt[k];
    let (mut additive, mut search, mut probe) = (Vec::new(), Vec::new(), Vec::new());
    let (mut probing_cycles, mut plateaus) = (0, 0);
    for w in events.windows(2) {
        // The congestion-avoidance stretch of the cycle: Open, after the recovery.
        let Some(start) = (w[0]..w[1]).find(|&k| state[k] == OPEN) else { continue };
        let (lo, hi) = (start + 2, w[1] - 2);
        if hi <= lo + 10 {
            continue;
        }
        // W_max is where the window dwells: the slowest growth of the cycle. (A cycle whose W_max
        // is above what the path holds ends in a loss before it gets there: no plateau.)
        let p = (lo..hi).min_by(|&a, &b| rate(a).total_cmp(&rate(b))).unwrap();
        let w_max = cwnd[p];
        if rate(p) > 0.05 {
            continue;
        }
        plateaus += 1;
        for (k, c) in cwnd.iter().enumerate().take(hi).skip(lo) {
            let dist = w_max - c;
            if k < p && dist > 2.0 * S_MAX + 8.0 {
                additive.push(rate(k) / S_MAX);
            } else if k < p && (1.0..2.0 * S_MAX - 8.0).contains(&dist) {
                search.push(rate(k) / (dist / 2.0));
            } else if k > p && (1.0..S_MAX - 4.0).contains(&-dist) {
                probe.push(rate(k) / -dist);
            }
        }
        if cwnd[lo..hi].iter().any(|&c| c > w_max + S_MAX) {
            probing_cycles += 1;
        }
    }
    let summary = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        (s.len(), s[s.len() / 10], s[s.len() / 2], s[s.len() * 9 / 10])
    };
    let (a, s, p) = (summary(&additive), summary(&search), summary(&probe));
    eprintln!("growth / rule, (samples, p10, median, p90):");
    eprintln!("  additive: growth / S_max {a:.2?}");
    eprintln!("  binary search: growth / ((W_max − cwnd)/2) {s:.2?}");
    eprintln!("  max probing: growth / (cwnd − W_max) {p:.2?}");
    eprintln!(
        "{plateaus} cycles dwelt at W_max, {probing_cycles} probed past it by more than S_max"
    );
    assert!(plateaus >= 5 && probing_cycles >= 3);
    for (name, (n, p10, median, p90)) in [("additive", a), ("binary search", s), ("max probing", p)]
    {
        assert!(n >= 30, "{name}: only {n} samples");
        assert!((0.9..1.1).contains(&median), "{name}: median ratio {median:.2}");
        assert!(p10 > 0.85 && p90 < 1.15, "{name}: ratios spread from {p10:.2} to {p90:.2}");
    }
}
