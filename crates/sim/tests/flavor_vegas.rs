//! TCP Vegas (Brakmo and Peterson, JSAC 1995) in the simulator: alone it holds between α and β of
//! its packets in the bottleneck queue (§3.2); against loss-based flows that fill the buffer it
//! keeps backing off and gets a small share (the paper's §5 and every later study of Vegas).

use ccarena_sim::spec::TcpFlowSpec;
use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{mean_goodput_bps, run, tcp};

fn flow(name: &str, d: &Dumbbell, i: usize, flavor: &str, params: &[(&str, f64)]) -> TcpFlowSpec {
    let mut f = tcp_flow(name, d.left(i), d.right(i), flavor);
    f.params.extend(params.iter().map(|(k, v)| (k.to_string(), *v)));
    f
}

/// Mean backlog (packets) and drops of the bottleneck queue over samples in `(from, to]`.
fn bottleneck(res: &Results, d: &Dumbbell, from: f64, to: f64) -> (f64, f64) {
    let (t, l) = (res.queues.f64("time_s"), res.queues.f64("link"));
    let (b, dr) = (res.queues.f64("backlog_packets"), res.queues.f64("drops"));
    let rows: Vec<usize> =
        (0..t.len()).filter(|&i| l[i] as usize == d.bottleneck_link() && t[i] > from && t[i] <= to).collect();
    let mean = rows.iter().map(|&i| b[i]).sum::<f64>() / rows.len() as f64;
    (mean, dr[rows[rows.len() - 1]] - dr[rows[0]])
}

#[test]
fn alone_it_keeps_between_alpha_and_beta_packets_queued() {
    // 100 Mbps, 40 ms RTT, one-BDP buffer (333 packets).
    let d = Dumbbell::new(1, mbps(100), ms(20), 333);
    for (alpha, beta) in [(2.0, 4.0), (6.0, 8.0)] {
        let res = run(d.spec(1, secs(30), ms(100), vec![tcp(flow("v", &d, 0, "vegas", &[("alpha", alpha), ("beta", beta)]))]));
        let (queue, drops) = bottleneck(&res, &d, 10.0, 30.0);
        let goodput = mean_goodput_bps(&res, 0, 10.0, 30.0) / (100e6 * 1448.0 / 1500.0);
        eprintln!("α {alpha} β {beta}: mean queue {queue:.2} packets, drops {drops}, goodput {:.1}%", 100.0 * goodput);
        assert!(queue >= alpha - 0.5 && queue <= beta + 0.5, "α {alpha} β {beta}: queue {queue:.2}");
        assert_eq!(drops, 0.0);
        assert!(goodput > 0.95, "and the link stays full: {goodput:.3}");
    }
}

#[test]
fn against_reno_and_cubic_it_gets_a_small_share() {
    // 20 Mbps, 40 ms RTT: BDP = 67 packets; buffers of one and two BDPs. Both start together.
    for other in ["reno", "cubic"] {
        for buffer in [67, 134] {
            let d = Dumbbell::new(2, mbps(20), ms(20), buffer);
            let res = run(d.spec(3, secs(60), ms(100), vec![tcp(flow("vegas", &d, 0, "vegas", &[])), tcp(flow(other, &d, 1, other, &[]))]));
            let v = mean_goodput_bps(&res, 0, 20.0, 60.0);
            let o = mean_goodput_bps(&res, 1, 20.0, 60.0);
            let share = v / (v + o);
            eprintln!("vegas vs {other}, buffer {buffer}: vegas share {:.1}%", 100.0 * share);
            assert!(share < 0.20, "vegas vs {other}, buffer {buffer}: share {share:.3}");
            assert!(v + o > 0.9 * 20e6 * 1448.0 / 1500.0, "the pair fills the link");
        }
    }
}
