//! A UDP CBR flow below the link rate keeps its rate next to bulk TCP; above it, it loses the
//! excess at the queue. Its packets have the configured size on the wire.

use ccarena_sim::spec::FlowSpec;
use ccarena_sim::testkit::{cbr_flow, mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, mean_goodput_bps, run, tcp};

#[test]
fn cbr_below_link_rate_keeps_its_rate_next_to_tcp() {
    let d = Dumbbell::new(2, mbps(10), ms(10), 50);
    let flows = vec![
        tcp(tcp_flow("tcp", d.left(0), d.right(0), "cubic")),
        FlowSpec::UdpCbr(cbr_flow("cbr", d.left(1), d.right(1), mbps(2), 200)),
    ];
    let res = run(d.spec(1, secs(20), ms(100), flows));
    assert_conservation(&res);
    let cbr = mean_goodput_bps(&res, 1, 5.0, 20.0);
    let tcp_bps = mean_goodput_bps(&res, 0, 5.0, 20.0);
    assert!((cbr - 2e6).abs() / 2e6 < 0.05, "cbr goodput {cbr}");
    assert!(tcp_bps > 5e6, "tcp should take most of the rest, got {tcp_bps}");
    // Losses at the queue may hit the CBR flow too, but only a small fraction.
    let f = &res.flows;
    assert!(f.f64("packets_lost")[1] / f.f64("packets_sent")[1] < 0.05);
    // Size on the wire: 200 B payload + 28 B of IP/UDP headers.
    let l = &res.links;
    let access = (0..l.rows()).find(|&i| matches!(&l.get("name").unwrap(), ccarena_sim::Column::Str(n) if n[i] == "left1->r0")).unwrap();
    assert_eq!(l.f64("bytes_in")[access] / l.f64("packets_in")[access], 228.0);
}

#[test]
fn cbr_above_link_rate_loses_the_excess_at_the_queue() {
    let d = Dumbbell::new(1, mbps(10), ms(10), 50);
    // 15 Mbps of 1000 B payload: 1028 B on the wire, so the link carries 10e6·1000/1028 of payload.
    let flows = vec![FlowSpec::UdpCbr(cbr_flow("cbr", d.left(0), d.right(0), mbps(15), 1000))];
    let res = run(d.spec(1, secs(10), ms(100), flows));
    assert_conservation(&res);
    let got = mean_goodput_bps(&res, 0, 2.0, 10.0);
    let cap = 10e6 * 1000.0 / 1028.0;
    assert!((got - cap).abs() / cap < 0.02, "goodput {got} vs capacity {cap}");
    let drops = res.links.f64("packets_dropped_queue")[d.bottleneck_link()];
    let sent = res.flows.f64("packets_sent")[0];
    // Offered on the wire: 15 Mbps × 1028/1000 = 15.42 Mbps; the link carries 10, so ≈ 35% is dropped.
    let frac = drops / sent;
    assert!((0.30..0.40).contains(&frac), "dropped fraction {frac}");
}
