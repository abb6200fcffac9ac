//! TCP Veno (Fu and Liew, JSAC 2003) in the simulator: on a path with random (non-congestive)
//! loss and a small queue, Veno's backlog estimate tells most losses apart from congestion, cuts
//! only to 4/5 for them, and so gets clearly more throughput than Reno (the paper's §IV reports
//! up to 80% more on wireless-like loss).

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{mean_goodput_bps, run, tcp};

#[test]
fn with_random_loss_and_a_small_queue_veno_beats_reno() {
    for loss in [0.005, 0.01] {
        // 20 Mbps, 40 ms RTT (BDP 67 packets), a 20-packet buffer, random loss on the forward link.
        let mut d = Dumbbell::new(1, mbps(20), ms(20), 20);
        d.bottleneck_loss = loss;
        let goodput = |flavor: &str| {
            let mut f = tcp_flow(flavor, d.left(0), d.right(0), flavor);
            f.recovery = "prr".into(); // same loss recovery for both: only the controller differs
            let res = run(d.spec(7, secs(60), ms(100), vec![tcp(f)]));
            mean_goodput_bps(&res, 0, 5.0, 60.0)
        };
        let (veno, reno) = (goodput("veno"), goodput("reno"));
        eprintln!("loss {loss}: veno {:.2} Mbps, reno {:.2} Mbps, ratio {:.2}", veno / 1e6, reno / 1e6, veno / reno);
        assert!(veno > 1.3 * reno, "loss {loss}: veno {veno:.0} vs reno {reno:.0}");
    }
}
