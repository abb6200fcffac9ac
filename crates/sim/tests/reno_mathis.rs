//! One Reno flow under random loss follows the Mathis et al. (1997) throughput,
//! MSS/RTT · √(3/(2p)), within ±30% (capped by the link rate).

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

const MSS_BYTES: f64 = 1448.0;
const RATE_BPS: u64 = mbps(10);

fn mathis_bps(rtt_s: f64, p: f64) -> f64 {
    MSS_BYTES * 8.0 / rtt_s * (3.0 / (2.0 * p)).sqrt()
}

#[test]
fn reno_goodput_follows_mathis_within_30_percent() {
    // 50 ms RTT: 25 ms one way on the bottleneck, zero-delay access links. Buffer of one BDP
    // (10 Mbps × 50 ms = 41.7 full-size packets).
    let rtt_s = 0.050;
    let duration_s = 200;
    for (i, p) in [0.001, 0.005, 0.01, 0.02].into_iter().enumerate() {
        let mut d = Dumbbell::new(1, RATE_BPS, ms(25), 42);
        d.bottleneck_loss = p;
        let res = run(d.spec(100 + i as u64, secs(duration_s), ms(500), vec![tcp(tcp_flow("reno", d.left(0), d.right(0), "reno"))]));
        assert_conservation(&res);
        // The mean RTT the flow saw (queueing included) is the RTT of the Mathis formula.
        let rtt_mean = res.flows.f64("rtt_mean_s")[0];
        assert!(rtt_mean >= rtt_s && rtt_mean < 2.0 * rtt_s + 0.01, "rtt {rtt_mean}");
        let payload_capacity = RATE_BPS as f64 * MSS_BYTES / 1500.0;
        let expect = mathis_bps(rtt_mean, p).min(payload_capacity);
        let got = mean_goodput_bps(&res, 0, 10.0, duration_s as f64);
        let ratio = got / expect;
        eprintln!("p = {p}: goodput {:.3} Mbps, Mathis {:.3} Mbps (rtt {:.1} ms), ratio {ratio:.2}", got / 1e6, expect / 1e6, rtt_mean * 1e3);
        assert!((0.7..=1.3).contains(&ratio), "p = {p}: goodput/Mathis = {ratio:.2}");
    }
}
