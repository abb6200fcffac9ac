//! TCP Westwood+ (Mascolo et al. 2001; Grieco & Mascolo 2004) on a lossy 20 Mbps / 100 ms path
//! (random, non-congestion loss on the forward link, a one-BDP buffer): after a loss Westwood+
//! sets ssthresh to its bandwidth estimate × RTT_min instead of halving. A random loss comes
//! while the queue is empty, so the window hardly shrinks, and Westwood+ keeps several times
//! Reno's goodput on the same link.

use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

fn lossy_run(flavor: &str, p: f64) -> Results {
    let mut d = Dumbbell::new(1, mbps(20), ms(50), 167);
    d.bottleneck_loss = p;
    let res =
        run(d.spec(7, secs(60), ms(10), vec![tcp(tcp_flow("f", d.left(0), d.right(0), flavor))]));
    assert_conservation(&res);
    res
}

/// Mean of ssthresh/cwnd over the congestion events after `from_s` (entries into fast recovery;
/// cwnd from the sample before the event).
fn mean_backoff(res: &Results, from_s: f64) -> f64 {
    let t = res.samples.f64("time_s");
    let cwnd = res.samples.f64("cwnd_bytes");
    let ss = res.samples.f64("ssthresh_bytes");
    let state = res.samples.f64("ca_state");
    let r: Vec<f64> = (1..t.len())
        .filter(|&i| t[i] > from_s && state[i] == 3.0 && state[i - 1] != 3.0)
        .map(|i| ss[i] / cwnd[i - 1])
        .collect();
    assert!(r.len() >= 10, "{} congestion events", r.len());
    r.iter().sum::<f64>() / r.len() as f64
}

#[test]
fn keeps_much_higher_goodput_than_reno_under_random_loss() {
    for p in [0.005, 0.01] {
        let ww = lossy_run("westwood", p);
        let reno = lossy_run("reno", p);
        let (g_ww, g_reno) =
            (mean_goodput_bps(&ww, 0, 10.0, 60.0), mean_goodput_bps(&reno, 0, 10.0, 60.0));
        let (b_ww, b_reno) = (mean_backoff(&ww, 10.0), mean_backoff(&reno, 10.0));
        eprintln!(
            "loss {p}: westwood {:.2} Mbps (ssthresh/cwnd at losses {b_ww:.2}), reno {:.2} Mbps ({b_reno:.2})",
            g_ww / 1e6,
            g_reno / 1e6
        );
        assert!(
            g_ww > 2.5 * g_reno,
            "loss {p}: westwood {:.2} Mbps vs reno {:.2}",
            g_ww / 1e6,
            g_reno / 1e6
        );
        // The mechanism: Westwood+ backs off far less than Reno's half at random losses.
        assert!(b_ww > 0.7, "westwood ssthresh/cwnd {b_ww:.2}");
        assert!((b_reno - 0.5).abs() < 0.1, "reno ssthresh/cwnd {b_reno:.2}");
    }
}
