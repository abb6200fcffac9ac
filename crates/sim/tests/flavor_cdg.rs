//! CAIA Delay-Gradient (Hayes and Armitage, IFIP Networking 2011) in the simulator: it backs off
//! on a positive RTT gradient — a queue that is growing — before the buffer overflows, so on a
//! deep buffer it keeps the queue short and loses far fewer packets than Reno while still using
//! the link (the paper's §5).

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{mean_goodput_bps, run, tcp};

/// Mean backlog of the bottleneck over samples in `(from, to]`, and drops in that interval.
fn bottleneck(res: &Results, d: &Dumbbell, from: f64, to: f64) -> (f64, f64) {
    let (t, l) = (res.queues.f64("time_s"), res.queues.f64("link"));
    let (b, dr) = (res.queues.f64("backlog_packets"), res.queues.f64("drops"));
    let rows: Vec<usize> =
        (0..t.len()).filter(|&i| l[i] as usize == d.bottleneck_link() && t[i] > from && t[i] <= to).collect();
    let mean = rows.iter().map(|&i| b[i]).sum::<f64>() / rows.len() as f64;
    (mean, dr[rows[rows.len() - 1]] - dr[rows[0]])
}

#[test]
fn it_backs_off_before_losses_on_a_deep_buffer() {
    // 10 Mbps, 20 ms RTT (BDP 17 packets), a 100-packet (6 BDP) buffer, 60 s.
    let d = Dumbbell::new(1, mbps(10), ms(10), 100);
    let run_one = |flavor: &str| run(d.spec(3, secs(60), ms(100), vec![tcp(tcp_flow(flavor, d.left(0), d.right(0), flavor))]));
    let (cdg, reno) = (run_one("cdg"), run_one("reno"));
    let total = |r: &Results| r.links.f64("packets_dropped_queue")[d.bottleneck_link()];
    let (c_queue, c_late_drops) = bottleneck(&cdg, &d, 5.0, 60.0);
    let (r_queue, r_late_drops) = bottleneck(&reno, &d, 5.0, 60.0);
    let util = mean_goodput_bps(&cdg, 0, 5.0, 60.0) / (10e6 * 1448.0 / 1500.0);
    eprintln!(
        "cdg: queue {c_queue:.1}, drops {} ({c_late_drops} after 5 s), goodput {:.1}%; reno: queue {r_queue:.1}, drops {} ({r_late_drops} after 5 s)",
        total(&cdg), 100.0 * util, total(&reno)
    );
    assert!(total(&cdg) * 4.0 <= total(&reno), "far fewer losses than Reno");
    assert_eq!(c_late_drops, 0.0, "after slow start, no loss at all");
    assert!(r_late_drops > 0.0);
    assert!(c_queue * 3.0 < r_queue, "a short queue");
    assert!(util > 0.9, "while using the link: {util:.3}");
}
