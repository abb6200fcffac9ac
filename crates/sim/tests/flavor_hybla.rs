//! TCP Hybla (Caini & Firrincieli 2004): a flow on a 600 ms path (a GEO satellite hop) under
//! random loss reaches the rate a Reno flow with the 25 ms reference RTT reaches under the same
//! loss — Hybla's window is ρ = RTT/RTT_0 = 24 times Reno's — where Reno on the 600 ms path gets
//! a small fraction of it. 100 Mbps bottleneck, one-way delay 12.5 ms or 300 ms, random loss
//! 10⁻³ and 3·10⁻⁴ on the forward link.

use ccarena_sim::testkit::{mbps, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

fn goodput(flavor: &str, one_way_us: u64, p: f64) -> f64 {
    let mut d = Dumbbell::new(1, mbps(100), one_way_us * 1_000, 5000);
    d.bottleneck_loss = p;
    let res = run(d.spec(
        7,
        secs(120),
        500_000_000,
        vec![tcp(tcp_flow("f", d.left(0), d.right(0), flavor))],
    ));
    assert_conservation(&res);
    mean_goodput_bps(&res, 0, 20.0, 120.0)
}

#[test]
fn long_rtt_flow_gets_the_reference_rtt_rate() {
    for p in [1e-3, 3e-4] {
        let reno_25ms = goodput("reno", 12_500, p);
        let reno_600ms = goodput("reno", 300_000, p);
        let hybla_600ms = goodput("hybla", 300_000, p);
        eprintln!(
            "loss {p}: reno at 25 ms {:.2} Mbps, reno at 600 ms {:.2} Mbps, hybla at 600 ms {:.2} Mbps",
            reno_25ms / 1e6,
            reno_600ms / 1e6,
            hybla_600ms / 1e6
        );
        assert!(
            (hybla_600ms / reno_25ms - 1.0).abs() < 0.25,
            "loss {p}: hybla at 600 ms {:.2} Mbps vs reno at 25 ms {:.2} Mbps",
            hybla_600ms / 1e6,
            reno_25ms / 1e6
        );
        assert!(
            hybla_600ms > 8.0 * reno_600ms,
            "loss {p}: hybla only {:.1}× reno at 600 ms",
            hybla_600ms / reno_600ms
        );
    }
}
