//! Two flows of the same flavor on a 10 Mbps / 20 ms dumbbell with a BDP buffer share fairly:
//! Jain's index of their goodputs over the last 60 s of 120 s ≥ 0.95.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{jain, mean_goodput_bps, run, tcp};

#[test]
fn same_flavor_pairs_share_fairly() {
    // RTT = 2 × (10 ms bottleneck) = 20 ms; BDP = 10 Mbps × 20 ms ≈ 17 packets.
    let d = Dumbbell::new(2, mbps(10), ms(10), 17);
    for flavor in ["reno", "newreno", "cubic"] {
        let a = tcp_flow("a", d.left(0), d.right(0), flavor);
        let mut b = tcp_flow("b", d.left(1), d.right(1), flavor);
        b.start_ns = secs(5); // the late flow must converge, not start in lockstep
        let res = run(d.spec(5, secs(120), ms(100), vec![tcp(a), tcp(b)]));
        let g = [mean_goodput_bps(&res, 0, 60.0, 120.0), mean_goodput_bps(&res, 1, 60.0, 120.0)];
        let j = jain(&g);
        eprintln!("{flavor}: {:.2} / {:.2} Mbps, Jain {j:.3}", g[0] / 1e6, g[1] / 1e6);
        assert!(j >= 0.95, "{flavor}: Jain {j:.3}");
        assert!(g[0] + g[1] > 0.9 * 10e6 * 1448.0 / 1500.0, "{flavor}: the pair must also fill the link");
    }
}
