//! TCP-NV (Brakmo; Linux tcp_nv) in the simulator: it decreases as soon as the rate the path
//! delivers no longer needs the window (cwnd > rate·minRTT + pad), so alone on a deep buffer it
//! fills the link with about `pad` packets queued and no loss at all — slow start included —
//! where Reno fills the buffer and loses packets.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{mean_goodput_bps, run, tcp};

fn bottleneck_queue(res: &Results, d: &Dumbbell, from: f64, to: f64) -> f64 {
    let (t, l, b) = (res.queues.f64("time_s"), res.queues.f64("link"), res.queues.f64("backlog_packets"));
    let rows: Vec<usize> =
        (0..t.len()).filter(|&i| l[i] as usize == d.bottleneck_link() && t[i] > from && t[i] <= to).collect();
    rows.iter().map(|&i| b[i]).sum::<f64>() / rows.len() as f64
}

#[test]
fn alone_on_a_deep_buffer_it_keeps_a_short_queue_and_loses_nothing() {
    // 100 Mbps, 40 ms RTT (BDP 333 packets), a 1000-packet buffer.
    let d = Dumbbell::new(1, mbps(100), ms(20), 1000);
    let run_one = |flavor: &str| run(d.spec(3, secs(40), ms(100), vec![tcp(tcp_flow(flavor, d.left(0), d.right(0), flavor))]));
    let nv = run_one("nv");
    let queue = bottleneck_queue(&nv, &d, 10.0, 40.0);
    let drops = nv.links.f64("packets_dropped_queue")[d.bottleneck_link()];
    let util = mean_goodput_bps(&nv, 0, 10.0, 40.0) / (100e6 * 1448.0 / 1500.0);
    eprintln!("nv: queue {queue:.1} packets, drops {drops}, goodput {:.1}%", 100.0 * util);
    assert!(queue <= 25.0, "about pad = 10 packets queued: {queue:.1}");
    assert_eq!(drops, 0.0, "the rate rule ends slow start before the buffer overflows");
    assert!(util > 0.95, "{util:.3}");

    let reno = run_one("reno");
    let r_queue = bottleneck_queue(&reno, &d, 10.0, 40.0);
    let r_drops = reno.links.f64("packets_dropped_queue")[d.bottleneck_link()];
    eprintln!("reno: queue {r_queue:.1} packets, drops {r_drops}");
    assert!(r_queue > 10.0 * queue && r_drops > 0.0);
}
