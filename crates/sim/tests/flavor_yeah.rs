//! YeAH-TCP (Baiocchi, Castellani, Vacirca, PFLDnet 2007) in the simulator: alone on a deep
//! buffer it alternates between fast mode (Scalable increase while its queue estimate Q is small)
//! and slow mode, where precautionary decongestion removes its own queue once Q exceeds
//! Q_max = 80 packets — without a loss. Scalable TCP, its fast-mode rule alone, fills the buffer.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{mean_goodput_bps, run, tcp};

/// (mean, min, max) backlog in packets and drops of the bottleneck over samples in `(from, to]`.
fn bottleneck(res: &Results, d: &Dumbbell, from: f64, to: f64) -> (f64, f64, f64, f64) {
    let (t, l) = (res.queues.f64("time_s"), res.queues.f64("link"));
    let (b, dr) = (res.queues.f64("backlog_packets"), res.queues.f64("drops"));
    let rows: Vec<usize> =
        (0..t.len()).filter(|&i| l[i] as usize == d.bottleneck_link() && t[i] > from && t[i] <= to).collect();
    let mean = rows.iter().map(|&i| b[i]).sum::<f64>() / rows.len() as f64;
    let min = rows.iter().map(|&i| b[i]).fold(f64::INFINITY, f64::min);
    let max = rows.iter().map(|&i| b[i]).fold(0.0, f64::max);
    (mean, min, max, dr[rows[rows.len() - 1]] - dr[rows[0]])
}

#[test]
fn decongestion_keeps_its_queue_near_q_max_where_scalable_fills_the_buffer() {
    // 100 Mbps, 40 ms RTT (BDP 333 packets), a 1000-packet buffer. After the first slow start
    // (which ends in losses for both), look at 2–12 s.
    let d = Dumbbell::new(1, mbps(100), ms(20), 1000);
    let run_one = |flavor: &str| run(d.spec(3, secs(12), ms(100), vec![tcp(tcp_flow(flavor, d.left(0), d.right(0), flavor))]));
    let yeah = run_one("yeah");
    let (mean, min, max, drops) = bottleneck(&yeah, &d, 2.0, 12.0);
    let util = mean_goodput_bps(&yeah, 0, 2.0, 12.0) / (100e6 * 1448.0 / 1500.0);
    eprintln!("yeah: queue mean {mean:.1} min {min} max {max}, drops {drops}, goodput {:.1}%", 100.0 * util);
    assert_eq!(drops, 0.0, "no loss: the queue never reaches the buffer");
    assert!(max <= 150.0, "decongestion caps the queue near Q_max = 80: max {max}");
    assert!(min <= 10.0, "a decongestion empties the queue (then fast mode again): min {min}");
    assert!(util > 0.95, "and the link stays full: {util:.3}");

    let scalable = run_one("scalable");
    let (s_mean, _, _, s_drops) = bottleneck(&scalable, &d, 2.0, 12.0);
    eprintln!("scalable: queue mean {s_mean:.1}, drops {s_drops}");
    assert!(s_mean > 5.0 * mean && s_drops > 0.0);
}
