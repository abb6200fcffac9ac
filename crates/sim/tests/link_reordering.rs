//! A bottleneck that reorders and duplicates packets (`ccarena_link::impair`): held-back
//! packets make the receiver send duplicate ACKs and SACKs past a hole, so the senders' loss
//! detection (3 duplicate ACKs, RACK) fires without any loss; duplicated segments reach the
//! receiver twice. Every transfer still completes with every byte delivered, and the links
//! conserve packets with the copies counted.

use ccarena_sim::spec::Spec;
use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use crate::common::{assert_conservation, run, tcp};

const BYTES: u64 = 3_000_000;

/// Two 3 MB transfers of `flavor` with Linux recovery over a 20 Mbit/s, 10 ms dumbbell whose
/// forward bottleneck holds back `reorder` of its packets by 4 ms and duplicates `duplicate`.
fn spec(flavor: &str, reorder: f64, duplicate: f64) -> Spec {
    let d = Dumbbell::new(2, mbps(20), ms(10), 200);
    let flows = (0..2)
        .map(|i| {
            let mut f = tcp_flow(&format!("f{i}"), d.left(i), d.right(i), flavor);
            f.bytes = Some(BYTES);
            tcp(f)
        })
        .collect();
    let mut s = d.spec(3, secs(20), ms(100), flows);
    let b = d.bottleneck_link();
    s.links[b].wire.reorder = reorder;
    s.links[b].wire.reorder_delay_ns = Some(ms(4));
    s.links[b].wire.duplicate = duplicate;
    s
}

#[test]
fn reordering_triggers_recovery_but_every_transfer_completes() {
    for flavor in ["reno", "cubic"] {
        let clean = run(spec(flavor, 0.0, 0.0));
        let res = run(spec(flavor, 0.03, 0.02));
        assert_conservation(&res);
        let b = Dumbbell::new(2, mbps(20), ms(10), 200).bottleneck_link();
        let (dup, reo) = (res.links.f64("packets_duplicated")[b], res.links.f64("packets_reordered")[b]);
        let clean_links = (clean.links.f64("packets_duplicated")[b], clean.links.f64("packets_reordered")[b]);
        assert_eq!(clean_links, (0.0, 0.0));
        let f = &res.flows;
        let recoveries: f64 = f.f64("fast_recoveries").iter().sum();
        let clean_recoveries: f64 = clean.flows.f64("fast_recoveries").iter().sum();
        let dup_bytes: f64 = f.f64("duplicate_bytes_received").iter().sum();
        eprintln!(
            "{flavor}: {dup} duplicated, {reo} reordered; fast recoveries {recoveries} (clean {clean_recoveries}); \
             duplicate bytes received {dup_bytes}; completion {:?} s (clean {:?} s)",
            f.f64("completion_time_s"),
            clean.flows.f64("completion_time_s")
        );
        assert!(dup > 20.0 && reo > 20.0, "the bottleneck duplicated {dup} and reordered {reo}");
        assert!(recoveries > clean_recoveries, "{flavor}: reordering set off recovery ({recoveries} vs {clean_recoveries})");
        assert!(dup_bytes > 0.0, "{flavor}: duplicated segments arrived twice");
        for i in 0..2 {
            assert_eq!(f.f64("bytes_delivered")[i], BYTES as f64, "{flavor} flow {i} delivered every byte");
            assert!(f.f64("completion_time_s")[i].is_finite(), "{flavor} flow {i} completed");
        }
    }
}
