//! H-TCP (Leith & Shorten, PFLDnet 2004) on a 100 Mbps / 40 ms path:
//!
//! - the backoff β adapts to the buffer: RTT_min/RTT_max clamped to [0.5, 0.8] — 0.8 with a
//!   shallow buffer (0.1 BDP: RTT_min/RTT_max = 0.91, clamped), 2/3 with half a BDP, 0.5 with a
//!   deep one (2 BDP: 1/3, clamped);
//! - the increase grows with the time since the last congestion event: Reno-like for the first
//!   second (Δ_L), then 1 + 10(Δ − 1) + ((Δ − 1)/2)² packets per RTT.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

const MSS: f64 = 1448.0;
/// 100 Mbps × 40 ms in 1500-byte packets.
const BDP_PACKETS: f64 = 333.0;

fn htcp_run(buffer_bdp: f64) -> Results {
    let d = Dumbbell::new(1, mbps(100), ms(20), (buffer_bdp * BDP_PACKETS) as u64);
    let res =
        run(d.spec(1, secs(30), ms(2), vec![tcp(tcp_flow("h", d.left(0), d.right(0), "htcp"))]));
    assert_conservation(&res);
    res
}

/// Congestion events after `from_s`, by the samples where the flow enters fast recovery: (sample
/// index, cwnd in the sample before, ssthresh set at the event).
fn events(res: &Results, from_s: f64) -> Vec<(usize, f64, f64)> {
    let t = res.samples.f64("time_s");
    let cwnd = res.samples.f64("cwnd_bytes");
    let ss = res.samples.f64("ssthresh_bytes");
    let state = res.samples.f64("ca_state");
    const RECOVERY: f64 = 3.0;
    (1..t.len())
        .filter(|&i| t[i] > from_s && state[i] == RECOVERY && state[i - 1] != RECOVERY)
        .map(|i| (i, cwnd[i - 1], ss[i]))
        .collect()
}

#[test]
fn backoff_follows_rtt_min_over_rtt_max_clamped() {
    // (buffer in BDPs, expected β): shallow → 40/44 clamped to 0.8; half a BDP → 40/60;
    // deep → 40/120 clamped to 0.5.
    for (buffer, expect) in [(0.1, 0.8), (0.5, 2.0 / 3.0), (2.0, 0.5)] {
        let res = htcp_run(buffer);
        let ev = events(&res, 3.0);
        let betas: Vec<f64> = ev.iter().map(|&(_, before, ss)| ss / before).collect();
        let goodput = mean_goodput_bps(&res, 0, 5.0, 30.0);
        eprintln!(
            "buffer {buffer} BDP: β measured {betas:.3?}, expected {expect:.3}; goodput {:.1} Mbps",
            goodput / 1e6
        );
        assert!(betas.len() >= 3, "buffer {buffer}: too few congestion events");
        // ssthresh is β·cwnd at the event; the sample before it can be up to 2 ms of growth
        // short, hence the tolerance.
        for b in &betas {
            assert!((b - expect).abs() < 0.02, "buffer {buffer}: β = {b:.3}, expected {expect:.3}");
        }
    }
}

#[test]
fn increase_grows_with_the_time_since_the_last_congestion_event() {
    // Deep buffer (β = 0.5, so α = α^H): cycles of about 4 s. Growth over [0.2 s, 1 s] after an
    // event is Reno-like (1 packet per RTT); over [2 s, 3 s] α^H rises from 11 to 22 packets per
    // RTT.
    let res = htcp_run(2.0);
    let t = res.samples.f64("time_s");
    let cwnd = res.samples.f64("cwnd_bytes");
    let srtt = res.samples.f64("srtt_s");
    let ev = events(&res, 3.0);
    assert!(ev.len() >= 4);
    let at = |s: f64| (0..t.len()).find(|&i| t[i] >= s).unwrap();
    for w in ev.windows(2) {
        let (i0, _, _) = w[0];
        let t0 = t[i0];
        if t[w[1].0] < t0 + 3.0 {
            continue;
        }
        let per_rtt = |a: f64, b: f64| {
            let (ia, ib) = (at(t0 + a), at(t0 + b));
            let mean_rtt = srtt[ia..=ib].iter().sum::<f64>() / (ib - ia + 1) as f64;
            (cwnd[ib] - cwnd[ia]) / MSS / ((t[ib] - t[ia]) / mean_rtt)
        };
        let (early, late) = (per_rtt(0.2, 1.0), per_rtt(2.0, 3.0));
        eprintln!(
            "event at {t0:.2} s: {early:.2} packets/RTT in [0.2, 1] s, {late:.2} in [2, 3] s"
        );
        assert!((0.5..1.5).contains(&early), "Reno-like for the first second: {early:.2}");
        // Mean of α^H(Δ) over Δ in [2, 3] s: 1 + 10·1.5 + (7/3)/4 = 16.58.
        assert!((late - 16.58).abs() < 0.15 * 16.58, "α^H over [2, 3] s ≈ 16.6: {late:.2}");
    }
}
