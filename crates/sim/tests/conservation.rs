//! Every packet sent is delivered, dropped (where and why), or still queued/in flight at the end.

use ccarena_sim::spec::FlowSpec;
use ccarena_sim::testkit::{cbr_flow, mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, run, tcp};

#[test]
fn every_link_conserves_packets_mid_transfer_with_loss_and_overflow() {
    let mut d = Dumbbell::new(3, mbps(10), ms(15), 20);
    d.bottleneck_loss = 0.02;
    let flows = vec![
        tcp(tcp_flow("cubic", d.left(0), d.right(0), "cubic")),
        tcp(tcp_flow("reno", d.left(1), d.right(1), "reno")),
        FlowSpec::UdpCbr(cbr_flow("cbr", d.left(2), d.right(2), mbps(4), 200)),
    ];
    // Stop at an odd instant so packets are queued and in flight.
    let res = run(d.spec(11, secs(7) + 1_234_567, ms(100), flows));
    assert_conservation(&res);
    let l = &res.links;
    let b = d.bottleneck_link();
    assert!(l.f64("packets_dropped_queue")[b] > 0.0, "the small queue must overflow");
    assert!(l.f64("packets_lost_wire")[b] > 0.0, "random loss must occur");
    assert!(l.f64("packets_in_flight_end")[b] > 0.0, "packets must be in flight at the end");
}

#[test]
fn tcp_bytes_delivered_never_exceed_bytes_sent_and_finite_flows_complete() {
    let d = Dumbbell::new(1, mbps(10), ms(10), 30);
    let mut f = tcp_flow("file", d.left(0), d.right(0), "newreno");
    f.bytes = Some(2_000_000);
    let res = run(d.spec(1, secs(10), ms(100), vec![tcp(f)]));
    let fl = &res.flows;
    assert_eq!(fl.f64("bytes_delivered")[0], 2_000_000.0);
    assert!(fl.f64("bytes_sent")[0] >= 2_000_000.0);
    let fct = fl.f64("completion_time_s")[0];
    // 2 MB at 10 Mbps is 1.6 s of payload time (plus slow start): between 1.6 and 4 s.
    assert!(fct > 1.6 && fct < 4.0, "completion time {fct}");
    assert_conservation(&res);
}
