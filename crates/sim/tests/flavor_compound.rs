//! Compound TCP (Tan, Song, Zhang, Sridharan, INFOCOM 2006) in the simulator: on an empty
//! large-BDP path its delay window dwnd grows binomially and fills the pipe long before Reno's one
//! segment per RTT could; once a queue builds, dwnd shrinks and holds the backlog near γ = 30
//! packets instead of growing the queue to the buffer limit. (dwnd's own arithmetic is checked at
//! unit level in `ccarena_cc::compound`.)

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{mean_goodput_bps, run, tcp};

fn bottleneck(res: &Results, d: &Dumbbell, from: f64, to: f64) -> (f64, f64) {
    let (t, l) = (res.queues.f64("time_s"), res.queues.f64("link"));
    let (b, dr) = (res.queues.f64("backlog_packets"), res.queues.f64("drops"));
    let rows: Vec<usize> =
        (0..t.len()).filter(|&i| l[i] as usize == d.bottleneck_link() && t[i] > from && t[i] <= to).collect();
    let mean = rows.iter().map(|&i| b[i]).sum::<f64>() / rows.len() as f64;
    (mean, dr[rows[rows.len() - 1]] - dr[rows[0]])
}

#[test]
fn on_a_large_bdp_path_it_fills_the_pipe_and_holds_the_backlog_near_gamma() {
    // 500 Mbps, 60 ms RTT: BDP = 2500 packets; a 250-packet (0.1 BDP) buffer, so the first slow
    // start ends in loss and both flows continue from about half the BDP.
    let d = Dumbbell::new(1, mbps(500), ms(30), 250);
    let run_one = |flavor: &str| {
        let mut f = tcp_flow(flavor, d.left(0), d.right(0), flavor);
        f.recovery = "prr".into();
        run(d.spec(7, secs(30), ms(100), vec![tcp(f)]))
    };
    let capacity = 500e6 * 1448.0 / 1500.0;
    let ctcp = run_one("compound");
    let reno = run_one("reno");
    let (c, r) = (mean_goodput_bps(&ctcp, 0, 10.0, 30.0), mean_goodput_bps(&reno, 0, 10.0, 30.0));
    let (queue, drops) = bottleneck(&ctcp, &d, 10.0, 30.0);
    eprintln!("compound {:.1}% of the link, reno {:.1}%; compound queue {queue:.1} packets, drops {drops}", 100.0 * c / capacity, 100.0 * r / capacity);
    assert!(c > 0.95 * capacity, "compound fills the pipe: {:.3}", c / capacity);
    assert!(c > 2.0 * r, "far faster than Reno: {:.2}×", c / r);
    assert!(queue < 100.0, "dwnd gives way as the queue builds: backlog {queue:.1} (γ = 30)");
    assert_eq!(drops, 0.0, "without overflowing the 250-packet buffer");
}
