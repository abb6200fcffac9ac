//! Every flavor, alone on a clean 100 Mbps / 40 ms path with a one-BDP buffer, keeps the link
//! full: goodput ≥ 95% of the link over the last 20 s of 30 s.

mod common;

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use common::{mean_goodput_bps, run, tcp};

#[test]
fn each_flavor_fills_a_clean_link() {
    let rate = mbps(100);
    // RTT 40 ms (20 ms each way on the bottleneck); BDP = 100 Mbps × 40 ms = 333 packets of 1500 B.
    let d = Dumbbell::new(1, rate, ms(20), 333);
    for f in ccarena_cc::catalogue().iter().filter(|f| f.transport == "tcp") {
        let res = run(d.spec(1, secs(30), ms(100), vec![tcp(tcp_flow(f.name, d.left(0), d.right(0), f.name))]));
        let got = mean_goodput_bps(&res, 0, 10.0, 30.0);
        // Goodput counts payload only: a full link carries 1448 payload bytes per 1500 on the wire.
        let payload_capacity = rate as f64 * 1448.0 / 1500.0;
        eprintln!("{}: {:.2} Mbps of {:.2} payload capacity", f.name, got / 1e6, payload_capacity / 1e6);
        assert!(got >= 0.95 * payload_capacity, "{} reached only {:.1}% of the link", f.name, 100.0 * got / payload_capacity);
    }
}
