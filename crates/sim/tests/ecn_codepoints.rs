//! ECN codepoints end to end in the simulator: which codepoint and which feedback each flavor
//! gets (RFC 3168 ECT(0) with ECE/CWR, DCTCP's echo, L4S ECT(1) with Accurate ECN), and the
//! per-flow CE counts (`ce_packets`, `ce_bytes`) agreeing with the queue's marks.

use ccarena_sim::flow::{receiver_ecn_mode, sender_ecn};
use ccarena_sim::spec::FlowSpec;
use ccarena_sim::testkit::{mbps, ms, secs, tcp_flow, Dumbbell};
use ccarena_sim::{Column, Results, Simulation};
use ccarena_transport::{EcnMode, SenderEcn};
use crate::common::{assert_conservation, run, tcp};

const MSS: u64 = 1448;

#[test]
fn each_flavor_gets_the_codepoint_and_feedback_of_its_kind() {
    let mode = |flavor: &str, ecn: bool| {
        let mut f = tcp_flow("f", 0, 1, flavor);
        f.ecn = ecn;
        (sender_ecn(&f), receiver_ecn_mode(&f))
    };
    assert_eq!(mode("reno", false), (SenderEcn::Off, EcnMode::Off));
    assert_eq!(mode("cubic", true), (SenderEcn::Classic, EcnMode::Classic));
    assert_eq!(mode("dctcp", true), (SenderEcn::Classic, EcnMode::Dctcp));
    assert_eq!(mode("dctcp", false), (SenderEcn::Off, EcnMode::Off));
    assert_eq!(mode("prague", true), (SenderEcn::L4s, EcnMode::AccEcn));
    assert_eq!(mode("prague", false), (SenderEcn::Off, EcnMode::Off));
    assert_eq!(SenderEcn::Classic.codepoint(), ccarena_transport::Ecn::Ect0);
    assert_eq!(SenderEcn::L4s.codepoint(), ccarena_transport::Ecn::Ect1);
}

/// One finite transfer of `segments` full segments of `flavor` (ECN on) through a 50 Mbps,
/// 5 ms bottleneck that marks CE above 10 waiting packets; long enough for it to complete.
fn marked_transfer(flavor: &str, segments: u64) -> Results {
    let d = Dumbbell::new(1, mbps(50), ms(5), 300);
    let mut f = tcp_flow(flavor, d.left(0), d.right(0), flavor);
    f.ecn = true;
    f.bytes = Some(segments * MSS);
    let mut spec = d.spec(3, secs(20), ms(10), vec![tcp(f)]);
    spec.links[d.bottleneck_link()].queue.ecn_threshold_packets = Some(10);
    run(spec)
}

/// Every CE mark a queue made reached the receiver (the transfer completed, nothing dropped),
/// and every marked packet was a full segment.
fn assert_ce_counts_match_the_marks(res: &Results, flavor: &str) {
    assert_conservation(res);
    assert!(res.flows.f64("completion_time_s")[0].is_finite(), "{flavor}: the transfer completed");
    let marked: f64 = res.links.f64("packets_marked").iter().sum();
    let ce_packets = res.flows.f64("ce_packets")[0];
    let ce_bytes = res.flows.f64("ce_bytes")[0];
    assert!(marked > 0.0, "{flavor}: the queue marked");
    assert_eq!(res.links.f64("packets_dropped_queue").iter().sum::<f64>(), 0.0, "{flavor}: no drops");
    assert_eq!(ce_packets, marked, "{flavor}");
    assert_eq!(ce_bytes, ce_packets * MSS as f64, "{flavor}");
}

#[test]
fn classic_dctcp_and_l4s_receivers_count_every_mark() {
    for flavor in ["reno", "dctcp", "prague"] {
        let res = marked_transfer(flavor, 3000);
        assert_ce_counts_match_the_marks(&res, flavor);
    }
}

#[test]
fn without_ecn_nothing_is_marked_and_the_counts_are_zero() {
    let d = Dumbbell::new(1, mbps(50), ms(5), 300);
    let mut f = tcp_flow("reno", d.left(0), d.right(0), "reno");
    f.bytes = Some(2000 * MSS);
    let mut spec = d.spec(3, secs(20), ms(10), vec![tcp(f)]);
    spec.links[d.bottleneck_link()].queue.ecn_threshold_packets = Some(10);
    let res = run(spec);
    assert_eq!(res.links.f64("packets_marked").iter().sum::<f64>(), 0.0, "Not-ECT data is never marked");
    assert_eq!((res.flows.f64("ce_packets")[0], res.flows.f64("ce_bytes")[0]), (0.0, 0.0));
}

/// The per-flow columns come last, after every column the flows table had before.
#[test]
fn the_ce_columns_follow_the_existing_flow_columns() {
    let res = marked_transfer("dctcp", 200);
    let names: Vec<&str> = res.flows.columns.iter().map(|(n, _)| *n).collect();
    let at = names.iter().position(|n| *n == "rtt_samples").expect("rtt_samples");
    // Then come the Multipath TCP columns (issue 32).
    assert_eq!(&names[at + 1..at + 3], ["ce_packets", "ce_bytes"]);
}

/// Every value of every table except the `ce_*` columns this change added, hashed (the bits of
/// each f64, NaN included).
fn digest(res: &Results) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    for table in [&res.flows, &res.samples, &res.queues, &res.links] {
        for (name, column) in &table.columns {
            // The columns added since (the flows' CE counts, DualPI2's per-class columns, the
            // AQM probabilities and the flows' MPTCP columns) were not in the digest taken
            // before.
            let added = ["ce_", "l4s_", "classic_", "aqm_prob_", "subflows", "coupling", "bytes_reinjected", "reorder_delay_"];
            if added.iter().any(|p| name.starts_with(p)) {
                continue;
            }
            name.hash(&mut h);
            match column {
                Column::F64(v) => v.iter().for_each(|x| x.to_bits().hash(&mut h)),
                Column::Str(v) => v.hash(&mut h),
            }
        }
    }
    h.finish()
}

/// DCTCP (its exact echo) and CUBIC with classic ECN (ECE/CWR) sharing a step-marking 20 Mbps
/// bottleneck with a Reno flow without ECN, for 4 s.
fn classic_ecn_mix() -> Results {
    let d = Dumbbell::new(3, mbps(20), ms(10), 100);
    let mut cubic = tcp_flow("cubic", d.left(1), d.right(1), "cubic");
    cubic.ecn = true;
    let flows = vec![
        FlowSpec::Tcp(tcp_flow("dctcp", d.left(0), d.right(0), "dctcp")),
        FlowSpec::Tcp(cubic),
        FlowSpec::Tcp(tcp_flow("reno", d.left(2), d.right(2), "reno")),
    ];
    let mut spec = d.spec(11, secs(4), ms(10), flows);
    spec.links[d.bottleneck_link()].queue.ecn_threshold_packets = Some(15);
    let mut sim = Simulation::new(spec).expect("valid spec");
    sim.run();
    sim.results()
}

/// Codepoints and AccECN changed nothing for classic and DCTCP flows: this mix gives, bit for
/// bit, the tables it gave before (the digest printed by the same scenario on the tree before
/// the change, commit 8b16a1a), less the columns added since.
#[test]
fn classic_and_dctcp_runs_are_bit_identical_to_before() {
    let res = classic_ecn_mix();
    assert_eq!(res.links.f64("packets_marked").iter().sum::<f64>(), 441.0);
    assert_eq!(digest(&res), 0xcf36_eebb_4d33_5e81);
    // The new columns agree with the marks: every marked packet was a DCTCP or CUBIC data segment.
    let ce: f64 = res.flows.f64("ce_packets").iter().sum();
    assert!(ce > 0.0 && ce <= 441.0, "{ce} CE-marked packets received of 441 marked");
    assert_eq!(res.flows.f64("ce_packets")[2], 0.0, "the Reno flow without ECN is never marked");
}
