//! LEDBAT (RFC 6817) in the simulator: alone it holds the bottleneck's queueing delay near TARGET
//! (§2.4.2), and it yields to a Reno flow, whose queue pushes the delay beyond TARGET (§2.3).

use ccarena_sim::spec::TcpFlowSpec;
use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::Results;
use crate::common::{mean_goodput_bps, run, tcp};

fn ledbat(d: &Dumbbell, i: usize, target_ms: Option<f64>) -> TcpFlowSpec {
    let mut f = tcp_flow("ledbat", d.left(i), d.right(i), "ledbat");
    if let Some(t) = target_ms {
        f.params.insert("target".into(), t);
    }
    f
}

/// Mean sojourn time (ms) of packets leaving the bottleneck over samples in `(from, to]`.
fn queueing_delay_ms(res: &Results, d: &Dumbbell, from: f64, to: f64) -> f64 {
    let (t, l, s) = (res.queues.f64("time_s"), res.queues.f64("link"), res.queues.f64("sojourn_mean_s"));
    let v: Vec<f64> = (0..t.len())
        .filter(|&i| l[i] as usize == d.bottleneck_link() && t[i] > from && t[i] <= to && !s[i].is_nan())
        .map(|i| s[i] * 1e3)
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn alone_the_queueing_delay_settles_near_target() {
    // TARGET = 25 ms on 100 Mbps, 40 ms RTT, a 1000-packet (120 ms) buffer.
    let d = Dumbbell::new(1, mbps(100), ms(20), 1000);
    let res = run(d.spec(3, secs(40), ms(100), vec![tcp(ledbat(&d, 0, Some(25.0)))]));
    let delay = queueing_delay_ms(&res, &d, 20.0, 40.0);
    let util = mean_goodput_bps(&res, 0, 20.0, 40.0) / (100e6 * 1448.0 / 1500.0);
    eprintln!("TARGET 25 ms: queueing delay {delay:.1} ms, goodput {:.1}%", 100.0 * util);
    assert!((delay - 25.0).abs() <= 5.0, "{delay:.1} ms");
    assert!(util > 0.95);

    // The RFC's TARGET = 100 ms on 10 Mbps, 40 ms RTT, a 400-packet (480 ms) buffer: GAIN = 1 ramps
    // no faster than Reno, so it takes a few tens of seconds to get there.
    let d = Dumbbell::new(1, mbps(10), ms(20), 400);
    let res = run(d.spec(3, secs(60), ms(100), vec![tcp(ledbat(&d, 0, None))]));
    let delay = queueing_delay_ms(&res, &d, 30.0, 60.0);
    eprintln!("TARGET 100 ms: queueing delay {delay:.1} ms");
    assert!((delay - 100.0).abs() <= 10.0, "{delay:.1} ms");
}

#[test]
fn it_yields_to_reno() {
    // LEDBAT starts first (it knows the true base delay); Reno joins at 5 s.
    for (rate, buffer, target) in [(mbps(100), 1000, Some(25.0)), (mbps(10), 400, None)] {
        let d = Dumbbell::new(2, rate, ms(20), buffer);
        let mut reno = tcp_flow("reno", d.left(1), d.right(1), "reno");
        reno.start_ns = secs(5);
        let res = run(d.spec(3, secs(60), ms(100), vec![tcp(ledbat(&d, 0, target)), tcp(reno)]));
        let l = mean_goodput_bps(&res, 0, 20.0, 60.0);
        let r = mean_goodput_bps(&res, 1, 20.0, 60.0);
        let share = l / (l + r);
        eprintln!("{} Mbps, TARGET {:?} ms: ledbat share {:.1}%", rate / 1_000_000, target.unwrap_or(100.0), 100.0 * share);
        assert!(share < 0.10, "share {share:.3}");
    }
}
