//! FAST TCP (Jin, Wei, Low, INFOCOM 2004) in the simulator: each flow keeps about α of its
//! packets in the bottleneck queue at equilibrium, w(1 − baseRTT/RTT) = α (§4), so n flows queue
//! n·α packets and share the link equally (proportional fairness).

use ccarena_sim::spec::TcpFlowSpec;
use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{jain, mean_goodput_bps, run, tcp};

fn fast(name: &str, d: &Dumbbell, i: usize, alpha: f64) -> TcpFlowSpec {
    let mut f = tcp_flow(name, d.left(i), d.right(i), "fast");
    f.params.insert("alpha".into(), alpha);
    f
}

fn bottleneck(res: &Results, d: &Dumbbell, from: f64, to: f64) -> (f64, f64) {
    let (t, l) = (res.queues.f64("time_s"), res.queues.f64("link"));
    let (b, dr) = (res.queues.f64("backlog_packets"), res.queues.f64("drops"));
    let rows: Vec<usize> =
        (0..t.len()).filter(|&i| l[i] as usize == d.bottleneck_link() && t[i] > from && t[i] <= to).collect();
    let mean = rows.iter().map(|&i| b[i]).sum::<f64>() / rows.len() as f64;
    (mean, dr[rows[rows.len() - 1]] - dr[rows[0]])
}

#[test]
fn a_flow_keeps_alpha_packets_queued() {
    // 100 Mbps, 40 ms RTT (BDP 333 packets), a deep buffer.
    let d = Dumbbell::new(1, mbps(100), ms(20), 1000);
    for alpha in [20.0, 50.0] {
        let res = run(d.spec(3, secs(30), ms(100), vec![tcp(fast("f", &d, 0, alpha))]));
        let (queue, drops) = bottleneck(&res, &d, 10.0, 30.0);
        let util = mean_goodput_bps(&res, 0, 10.0, 30.0) / (100e6 * 1448.0 / 1500.0);
        eprintln!("α {alpha}: queue {queue:.2} packets, drops {drops}, goodput {:.1}%", 100.0 * util);
        assert!((queue - alpha).abs() <= 0.15 * alpha, "α {alpha}: queue {queue:.2}");
        assert_eq!(drops, 0.0);
        assert!(util > 0.95);
    }
}

#[test]
fn three_flows_queue_three_alpha_and_share_fairly() {
    let d = Dumbbell::new(3, mbps(100), ms(20), 1000);
    let alpha = 20.0;
    let flows = (0..3).map(|i| tcp(fast(&format!("f{i}"), &d, i, alpha))).collect();
    let res = run(d.spec(3, secs(40), ms(100), flows));
    let g: Vec<f64> = (0..3).map(|i| mean_goodput_bps(&res, i, 20.0, 40.0)).collect();
    let (queue, drops) = bottleneck(&res, &d, 20.0, 40.0);
    let j = jain(&g);
    eprintln!("3 × FAST α {alpha}: queue {queue:.2}, drops {drops}, goodputs {:?} Mbps, Jain {j:.4}", g.iter().map(|x| (x / 1e4).round() / 100.0).collect::<Vec<_>>());
    assert!((queue - 3.0 * alpha).abs() <= 0.15 * 3.0 * alpha, "queue {queue:.2}");
    assert!(j >= 0.95, "Jain {j:.4}");
    assert!(g.iter().sum::<f64>() > 0.95 * 100e6 * 1448.0 / 1500.0);
}
