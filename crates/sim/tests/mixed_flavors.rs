//! Four flavors of different families (cubic, reno, vegas, bbr) share one 100 Mbps bottleneck:
//! the run completes, every flow's samples are complete, and bytes and packets are conserved.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, run, tcp};

#[test]
fn four_families_share_a_bottleneck_with_complete_samples_and_conserved_bytes() {
    let flavors = ["cubic", "reno", "vegas", "bbr"];
    // RTT 40 ms; BDP ≈ 333 packets; a one-BDP buffer.
    let d = Dumbbell::new(4, mbps(100), ms(20), 333);
    let flows = flavors
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut flow = tcp_flow(f, d.left(i), d.right(i), f);
            flow.start_ns = secs(i as u64);
            tcp(flow)
        })
        .collect();
    let duration_s = 30;
    let res = run(d.spec(9, secs(duration_s), ms(100), flows));
    assert_conservation(&res);

    let s = &res.samples;
    let (t, flow, goodput, cwnd) = (s.f64("time_s"), s.f64("flow"), s.f64("goodput_bps"), s.f64("cwnd_bytes"));
    for (i, name) in flavors.iter().enumerate() {
        let rows: Vec<usize> = (0..s.rows()).filter(|&r| flow[r] as usize == i).collect();
        // One row per 100 ms from the flow's start (i s) to the end, none missing.
        let expected = (duration_s - i as u64) * 10 + usize::from(i > 0) as u64;
        assert_eq!(rows.len() as u64, expected, "{name}: sample rows");
        for w in rows.windows(2) {
            assert!((t[w[1]] - t[w[0]] - 0.1).abs() < 1e-9, "{name}: a sample is missing");
        }
        assert!(rows.iter().all(|&r| goodput[r].is_finite() && cwnd[r].is_finite() && cwnd[r] > 0.0), "{name}");
    }

    let f = &res.flows;
    let mut delivered_total = 0.0;
    for (i, name) in flavors.iter().enumerate() {
        let sent = f.f64("bytes_sent")[i];
        let retx = f.f64("bytes_retransmitted")[i];
        let delivered = f.f64("bytes_delivered")[i];
        // Delivered bytes were sent once as new data: new = sent − retransmitted ≥ delivered.
        assert!(delivered > 0.0 && delivered <= sent - retx, "{name}: delivered {delivered}, new {}", sent - retx);
        // The last sample's cumulative delivered bytes equal the flow's total.
        let last = (0..s.rows()).rfind(|&r| flow[r] as usize == i).unwrap();
        assert_eq!(s.f64("delivered_bytes")[last], delivered, "{name}");
        delivered_total += delivered;
    }
    // Together they fill the link: payload capacity × time the link could be busy (≥ 85%).
    let capacity = 100e6 / 8.0 * 1448.0 / 1500.0 * duration_s as f64;
    assert!(delivered_total > 0.85 * capacity, "total {delivered_total} of {capacity}");
}
