//! QUIC (RFC 9000, RFC 9002) in the simulator beside TCP with the same controller: the goodput
//! of CUBIC over QUIC tracks CUBIC over TCP under random loss; reordering, where QUIC's packet
//! threshold and TCP's RACK part ways, costs QUIC spurious losses that RACK's time window avoids
//! (RFC 9002 §6.1.1, RFC 8985 §6.2); every flavor of the catalogue fills a clean link over QUIC;
//! QUIC and TCP share a bottleneck evenly unpaced, and QUIC's pacing wins it the larger share;
//! the connection window and the send buffer bound QUIC as they bound TCP; ECN marks reach the
//! QUIC sender through the ACK frame's counts; every byte arrives once over a lossy,
//! duplicating, reordering link; runs are deterministic.

use ccarena_sim::spec::{Discipline, Spec, TcpFlowSpec};
use ccarena_sim::testkit::{make_discipline, mbps, ms, quic_flow, secs, tcp_flow, Dumbbell};
use ccarena_transport::quic::DATA_OVERHEAD_BYTES;
use crate::common::{assert_conservation, assert_identical, jain, mean_goodput_bps, run, tcp};

/// Stream bytes a QUIC packet of the default 1500-byte wire size carries.
const QUIC_PAYLOAD_BYTES: f64 = (1500 - DATA_OVERHEAD_BYTES) as f64;

/// `flavor` over TCP (`quic` false) or QUIC from left host `i` to right host `i` of `d`.
fn flow(d: &Dumbbell, i: usize, flavor: &str, quic: bool) -> TcpFlowSpec {
    let name = format!("{}{i}", if quic { "quic" } else { "tcp" });
    if quic {
        quic_flow(&name, d.left(i), d.right(i), flavor)
    } else {
        tcp_flow(&name, d.left(i), d.right(i), flavor)
    }
}

/// Two flows of `flavor` over one transport on a 20 Mbit/s, 20 ms RTT dumbbell with a one-BDP
/// buffer and random loss `p` on the forward bottleneck, for `duration_s`.
fn lossy_pair(flavor: &str, quic: bool, p: f64, seed: u64, duration_s: u64) -> Spec {
    let mut d = Dumbbell::new(2, mbps(20), ms(10), 34);
    d.bottleneck_loss = p;
    let flows = (0..2).map(|i| tcp(flow(&d, i, flavor, quic))).collect();
    d.spec(seed, secs(duration_s), ms(100), flows)
}

/// Sum of the two flows' mean goodput over `(from_s, to_s]`, bit/s.
fn pair_goodput_bps(spec: Spec, from_s: f64, to_s: f64) -> f64 {
    let res = run(spec);
    assert_conservation(&res);
    (0..2).map(|i| mean_goodput_bps(&res, i, from_s, to_s)).sum()
}

#[test]
fn quic_cubic_tracks_tcp_cubic_under_random_loss() {
    // RFC 9002 keeps TCP's congestion response (§7: "similar to TCP NewReno"; the controller is
    // CUBIC's in both), so under random loss the two differ only in how the loss is detected
    // and repaired and in header bytes: the same Mathis-like √p law with a ratio near 1.
    let duration_s = 60;
    for (i, p) in [0.0, 0.01, 0.03].into_iter().enumerate() {
        let seed = 40 + i as u64;
        let tcp_bps = pair_goodput_bps(lossy_pair("cubic", false, p, seed, duration_s), 5.0, duration_s as f64);
        let quic_bps = pair_goodput_bps(lossy_pair("cubic", true, p, seed, duration_s), 5.0, duration_s as f64);
        let ratio = quic_bps / tcp_bps;
        eprintln!("p = {p}: TCP CUBIC {:.2} Mbit/s, QUIC CUBIC {:.2} Mbit/s, QUIC/TCP {ratio:.3}", tcp_bps / 1e6, quic_bps / 1e6);
        assert!((0.8..=1.25).contains(&ratio), "p = {p}: QUIC/TCP goodput {ratio:.3} outside [0.8, 1.25]");
    }
}

/// A 20 Mbit/s, 20 ms RTT dumbbell whose forward bottleneck holds back `reorder` of its packets
/// by 4 ms (about 7 packets' serialization at 20 Mbit/s): more than QUIC's packet threshold of 3,
/// less than RACK's reordering window of min_rtt/4 = 5 ms.
fn reordering(flavor: &str, quic: bool, reorder: f64) -> Spec {
    let d = Dumbbell::new(2, mbps(20), ms(10), 200);
    let flows = (0..2).map(|i| tcp(flow(&d, i, flavor, quic))).collect();
    let mut s = d.spec(7, secs(30), ms(100), flows);
    let b = d.bottleneck_link();
    s.links[b].wire.reorder = reorder;
    s.links[b].wire.reorder_delay_ns = Some(ms(4));
    s
}

#[test]
fn reordering_costs_quic_spurious_losses_that_rack_avoids() {
    // RFC 9002 §6.1.1: a packet threshold declares a packet lost once 3 later ones are
    // acknowledged, so reordering deeper than 3 packets is taken for loss (and the window cut);
    // RFC 8985 (TCP RACK, the `linux` recovery) waits a time window instead, here longer than
    // the reordering delay, and adapts it on D-SACK.
    let tcp_res = run(reordering("cubic", false, 0.02));
    let quic_res = run(reordering("cubic", true, 0.02));
    assert_conservation(&tcp_res);
    assert_conservation(&quic_res);
    let sum = |r: &ccarena_sim::Results, c: &str| r.flows.f64(c).iter().sum::<f64>();
    let (tcp_events, quic_events) = (sum(&tcp_res, "fast_recoveries"), sum(&quic_res, "fast_recoveries"));
    let (tcp_dup, quic_dup) = (sum(&tcp_res, "duplicate_bytes_received"), sum(&quic_res, "duplicate_bytes_received"));
    let goodput = |r: &ccarena_sim::Results| (0..2).map(|i| mean_goodput_bps(r, i, 5.0, 30.0)).sum::<f64>();
    let (tcp_bps, quic_bps) = (goodput(&tcp_res), goodput(&quic_res));
    eprintln!(
        "2% reordered by 4 ms: congestion events TCP/RACK {tcp_events}, QUIC {quic_events}; duplicate bytes TCP {tcp_dup}, \
         QUIC {quic_dup}; goodput TCP {:.2} Mbit/s, QUIC {:.2} Mbit/s",
        tcp_bps / 1e6,
        quic_bps / 1e6
    );
    assert!(quic_events > 3.0 * tcp_events.max(1.0), "QUIC's packet threshold fires on reordering: {quic_events} vs {tcp_events}");
    assert!(quic_dup > tcp_dup, "QUIC resends data that was only late: {quic_dup} vs {tcp_dup} duplicate bytes");
    assert!(quic_bps < tcp_bps, "spurious window cuts cost QUIC goodput: {quic_bps} vs {tcp_bps}");
}

/// Flavors whose source backs off before a one-BDP buffer fills (as in `flavors_fill_link.rs`,
/// where the reasons are given), with the share of the link they must still reach over QUIC.
const EARLY_BACKOFF: &[(&str, f64)] = &[("lp", 0.78), ("hstcp-lp", 0.75), ("cdg", 0.85)];

#[test]
fn every_flavor_fills_a_clean_link_over_quic() {
    // The catalogue's controllers plug into QUIC's recovery unchanged: alone on a clean
    // 100 Mbit/s, 40 ms path with a one-BDP buffer, each keeps the link busy.
    let rate = mbps(100);
    let d = Dumbbell::new(1, rate, ms(20), 333);
    let payload_capacity = rate as f64 * QUIC_PAYLOAD_BYTES / 1500.0;
    let mut failures = Vec::new();
    for f in ccarena_cc::catalogue().iter().filter(|f| f.transport == "tcp") {
        let res = run(d.spec(1, secs(30), ms(100), vec![tcp(quic_flow(f.name, d.left(0), d.right(0), f.name))]));
        let share = mean_goodput_bps(&res, 0, 10.0, 30.0) / payload_capacity;
        let required = EARLY_BACKOFF.iter().find(|(n, _)| *n == f.name).map_or(0.93, |&(_, s)| s);
        eprintln!("{:<10} over QUIC: {:5.1}% of payload capacity (required {:.0}%)", f.name, 100.0 * share, 100.0 * required);
        if share < required {
            failures.push(format!("{} reached {:.1}% (< {:.0}%)", f.name, 100.0 * share, 100.0 * required));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("; "));
}

/// One QUIC CUBIC (paced as RFC 9002 §7.7 recommends, or not) and one TCP CUBIC (unpaced, as
/// Linux's CUBIC without the fq qdisc) over a 20 Mbit/s, 40 ms RTT bottleneck with a one-BDP
/// DropTail buffer, for 120 s: the two flows' mean goodput over the last 100 s and their
/// congestion events.
fn quic_beside_tcp(pacing: bool) -> ([f64; 2], [f64; 2]) {
    let d = Dumbbell::new(2, mbps(20), ms(20), 67);
    let mut quic = flow(&d, 0, "cubic", true);
    quic.quic.as_mut().expect("a QUIC flow").pacing = pacing;
    let res = run(d.spec(11, secs(120), ms(100), vec![tcp(quic), tcp(flow(&d, 1, "cubic", false))]));
    assert_conservation(&res);
    assert_eq!(res.flows.get("kind"), Some(&ccarena_sim::Column::Str(vec!["quic".into(), "tcp".into()])));
    let events = res.flows.f64("fast_recoveries");
    ([mean_goodput_bps(&res, 0, 20.0, 120.0), mean_goodput_bps(&res, 1, 20.0, 120.0)], [events[0], events[1]])
}

#[test]
fn quic_and_tcp_cubic_share_a_bottleneck_evenly_unless_pacing_sets_them_apart() {
    // The same controller on both transports: unpaced, they split the link evenly. QUIC's
    // pacing spreads its window over the RTT while TCP's unpaced bursts meet a full DropTail
    // queue, so TCP takes the drops — about twice QUIC's congestion events — and QUIC the
    // larger share (the effect Wei, Cao & Low, PFLDnet 2006, measured between paced and
    // unpaced TCP).
    let (g, events) = quic_beside_tcp(false);
    let j = jain(&g);
    eprintln!("unpaced QUIC CUBIC {:.2} Mbit/s, TCP CUBIC {:.2} Mbit/s, Jain {j:.3}, congestion events {events:?}", g[0] / 1e6, g[1] / 1e6);
    assert!(j >= 0.97, "unpaced: Jain's index {j:.3} between QUIC and TCP CUBIC");
    let (g, events) = quic_beside_tcp(true);
    eprintln!("paced QUIC CUBIC {:.2} Mbit/s, TCP CUBIC {:.2} Mbit/s, Jain {:.3}, congestion events {events:?}", g[0] / 1e6, g[1] / 1e6, jain(&g));
    assert!(g[0] > 1.3 * g[1], "paced QUIC takes the larger share: {g:?}");
    assert!(events[1] > 1.5 * events[0], "the unpaced TCP flow takes the drops: {events:?}");
}

#[test]
fn the_connection_window_and_the_send_buffer_bound_quic_as_they_bound_tcp() {
    // 64 KB of flow-control credit (RFC 9000 §4.1), or of send buffer, over a 100 ms RTT: at
    // most 64 KB per RTT, 5.2 Mbit/s, on a 50 Mbit/s link, for QUIC as for TCP.
    let d = Dumbbell::new(1, mbps(50), ms(50), 1000);
    let window = 64 * 1024;
    let limit_bps = window as f64 * 8.0 / 0.100;
    for quic in [false, true] {
        for buffer in ["rwnd", "sndbuf"] {
            let mut f = flow(&d, 0, "cubic", quic);
            if buffer == "rwnd" {
                f.rwnd_bytes = Some(window);
            } else {
                f.sndbuf_bytes = Some(window);
            }
            let res = run(d.spec(3, secs(20), ms(100), vec![tcp(f)]));
            let got = mean_goodput_bps(&res, 0, 5.0, 20.0);
            eprintln!("{} with a 64 KB {buffer}: {:.2} Mbit/s (limit {:.2})", if quic { "QUIC" } else { "TCP" }, got / 1e6, limit_bps / 1e6);
            assert!(got <= limit_bps * 1.02 && got >= limit_bps * 0.85, "{buffer}: goodput {got} vs limit {limit_bps}");
        }
    }
}

#[test]
fn ce_marks_reach_the_quic_sender_through_the_ack_frame() {
    // Two QUIC CUBIC flows with ECN through a CoDel bottleneck that marks instead of dropping:
    // the receiver counts CE in its ACK_ECN frames (RFC 9000 §13.4.1) and the sender reduces
    // on the count's increase (RFC 9002 §7.1), so the queue marks and hardly drops.
    let mut d = Dumbbell::new(2, mbps(20), ms(10), 200);
    d.bottleneck_queue_packets = 200;
    let flows = (0..2)
        .map(|i| {
            let mut f = flow(&d, i, "cubic", true);
            f.ecn = true;
            tcp(f)
        })
        .collect();
    let mut s = d.spec(5, secs(30), ms(100), flows);
    make_discipline(&mut s.links[d.bottleneck_link()].queue, Discipline::Codel, true);
    let res = run(s);
    assert_conservation(&res);
    let b = d.bottleneck_link();
    let (marked, dropped) = (res.links.f64("packets_marked")[b], res.links.f64("packets_dropped_queue")[b]);
    let ce: f64 = res.flows.f64("ce_packets").iter().sum();
    let events: f64 = res.flows.f64("fast_recoveries").iter().sum();
    let g: f64 = (0..2).map(|i| mean_goodput_bps(&res, i, 5.0, 30.0)).sum();
    eprintln!("CoDel marked {marked}, dropped {dropped}; receivers counted {ce} CE; loss events {events}; goodput {:.2} Mbit/s", g / 1e6);
    assert!(marked > 50.0, "CoDel marked {marked}");
    assert_eq!(ce, marked, "every CE mark reaches a receiver's count");
    assert!(dropped < marked / 10.0, "ECN replaces drops: {dropped} dropped vs {marked} marked");
    assert!(g > 0.85 * 20e6 * QUIC_PAYLOAD_BYTES / 1500.0, "the link stays busy: {g}");
}

#[test]
fn every_byte_arrives_once_over_a_lossy_duplicating_reordering_link() {
    let d = Dumbbell::new(3, mbps(20), ms(10), 60);
    let bytes = 4_000_000;
    let flavors = ["reno", "cubic", "bbr"];
    let flows = flavors
        .iter()
        .enumerate()
        .map(|(i, fl)| {
            let mut f = flow(&d, i, fl, true);
            f.bytes = Some(bytes);
            tcp(f)
        })
        .collect();
    let mut s = d.spec(9, secs(60), ms(100), flows);
    let b = d.bottleneck_link();
    s.links[b].wire.loss = 0.02;
    s.links[b].wire.duplicate = 0.01;
    s.links[b].wire.reorder = 0.02;
    s.links[b].wire.reorder_delay_ns = Some(ms(3));
    let res = run(s);
    assert_conservation(&res);
    let f = &res.flows;
    for (i, fl) in flavors.iter().enumerate() {
        eprintln!(
            "{fl}: delivered {} in {:.2} s, {} PTOs, {} duplicate bytes",
            f.f64("bytes_delivered")[i],
            f.f64("completion_time_s")[i],
            f.f64("rto_count")[i],
            f.f64("duplicate_bytes_received")[i]
        );
        assert_eq!(f.f64("bytes_delivered")[i], bytes as f64, "{fl} delivered every byte once");
        assert!(f.f64("completion_time_s")[i].is_finite(), "{fl} completed");
        assert!(f.f64("bytes_retransmitted")[i] > 0.0, "{fl} repaired losses");
    }
}

#[test]
fn quic_runs_are_deterministic() {
    let spec = || lossy_pair("bbr", true, 0.01, 21, 10);
    assert_identical(&run(spec()), &run(spec()));
}
