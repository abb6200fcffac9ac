//! A run split over threads (`ccarena_sim::parallel`) gives the single-threaded run's results bit
//! for bit, whatever the number of threads (issue 35, item 3): on a fat-tree with every kind of
//! flow and queue discipline, on a fat-tree with ECMP, loss and multipath flows, on an ECMP
//! dumbbell with loss, and on a data-center mix of short flows that start and finish throughout
//! the run; and a fault in one part ends the run instead of hanging it.

use ccarena_cc::SimTime;
use ccarena_rng::{SplitMix64, StreamKind};
use ccarena_sim::parallel::{lookahead_ns, partition, SplitRun};
use ccarena_sim::spec::{FlowSpec, Spec};
use ccarena_sim::spec::Discipline;
use ccarena_sim::testkit::{cbr_flow, make_discipline, make_red, mbps, mptcp_flow, ms, quic_flow, red_packets, tcp_flow, udt_flow, FatTree, TwoPaths};
use ccarena_sim::{Results, Simulation};

use crate::common::assert_identical;

/// The results of `spec` on one thread, as `Simulation` runs it.
fn single(spec: &Spec) -> Results {
    let mut sim = Simulation::new(spec.clone()).expect("valid spec");
    sim.run();
    sim.results()
}

/// The results of `spec` split over `threads` threads, advanced in chunks of `chunk_ns` (as the
/// front end advances a run to show progress), and the number of parts it was split into.
fn split(spec: &Spec, threads: usize, chunk_ns: u64) -> (Results, usize) {
    let mut run = SplitRun::new(spec.clone(), threads).expect("valid spec");
    let parts = run.parts();
    while !run.finished() {
        let t = SimTime(run.now().as_nanos() + chunk_ns);
        run.run_until(t);
    }
    (run.finish().results(), parts)
}

/// `spec` gives identical results on 1 thread and split over 2, 3 and 4 (each split really
/// cutting the network), advanced in chunks that are not multiples of the windows; returns
/// the single-threaded results and the number of parts of each split.
fn assert_same_on_any_thread_count(spec: &Spec) -> (Results, Vec<usize>) {
    let reference = single(spec);
    let mut parts = Vec::new();
    for threads in [2, 3, 4] {
        let (res, p) = split(spec, threads, ms(7) + 1);
        assert!((2..=threads).contains(&p), "{threads} threads: {p} parts");
        assert_identical(&reference, &res);
        parts.push(p);
    }
    (reference, parts)
}

/// A k = 4 fat-tree (16 hosts, 1 Gbit/s, 20 µs links, ECMP) with a permutation of CUBIC, Reno,
/// BBR and Vegas over TCP, QUIC, UDT and a UDP CBR source, lossy core links with CoDel, FQ-CoDel,
/// PIE, DualPI2 and RED queues (their drops and marks decided as the links serialize, whichever
/// thread runs them), and a flow that stops early.
#[test]
fn a_fat_tree_with_every_kind_of_flow_is_identical_on_any_thread_count() {
    let ft = FatTree::new(4, mbps(1000), 20_000, 64);
    let n = ft.hosts();
    let flavors = ["cubic", "reno", "bbr", "vegas"];
    let flows: Vec<FlowSpec> = (0..n)
        .map(|i| {
            let (src, dst) = (ft.host(i), ft.host((i + n / 2 + 1) % n));
            let name = format!("f{i}");
            match i % 8 {
                5 => FlowSpec::Tcp(quic_flow(&name, src, dst, "cubic")),
                6 => FlowSpec::Udt(udt_flow(&name, src, dst)),
                7 => FlowSpec::UdpCbr(cbr_flow(&name, src, dst, mbps(50), 1200)),
                _ => {
                    let mut f = tcp_flow(&name, src, dst, flavors[i % 4]);
                    if i == 3 {
                        f.stop_ns = Some(ms(80));
                    }
                    FlowSpec::Tcp(f)
                }
            }
        })
        .collect();
    let mut spec = ft.spec(11, ms(60), ms(5), flows);
    let disciplines = [Discipline::Codel, Discipline::FqCodel, Discipline::Pie, Discipline::DualPi2];
    for (i, l) in spec.links.iter_mut().filter(|l| l.from >= n + 8 && l.to >= n + 8).enumerate() {
        l.wire.loss = 0.001; // aggregation ↔ core
        match i % 5 {
            4 => make_red(&mut l.queue, red_packets(10, 40)),
            d => make_discipline(&mut l.queue, disciplines[d], true),
        }
    }
    let parts = partition(&spec, 2);
    assert_eq!(lookahead_ns(&spec, &parts), Some(20_000));
    let (res, parts) = assert_same_on_any_thread_count(&spec);
    assert_eq!(parts, [2, 3, 4]);
    assert!(res.flows.f64("bytes_delivered").iter().all(|b| *b > 0.0), "every flow delivered data");
}

/// ECMP with random loss on every link of a k = 4 fat-tree: single-path CUBIC and Reno flows
/// across the halves the split cuts, and MPTCP-LIA connections of 4 subflows within each half
/// (an MPTCP connection's hosts are kept in one part).
#[test]
fn ecmp_with_loss_and_multipath_flows_is_identical_on_any_thread_count() {
    let ft = FatTree::new(4, mbps(1000), 20_000, 64);
    let n = ft.hosts();
    let mut flows: Vec<FlowSpec> =
        (0..n).map(|i| FlowSpec::Tcp(tcp_flow(&format!("tcp{i}"), ft.host(i), ft.host((i + n / 2) % n), ["cubic", "reno"][i % 2]))).collect();
    // Hosts 4j and 4j + 2 share a pod, so each connection stays within a part of any split.
    for j in 0..n / 4 {
        flows.push(FlowSpec::Tcp(mptcp_flow(&format!("mptcp{j}"), ft.host(4 * j), ft.host(4 * j + 2), "reno", 4, "lia")));
    }
    let mut spec = ft.spec(5, ms(60), ms(5), flows);
    for l in &mut spec.links {
        l.wire.loss = 0.002;
    }
    let (res, _) = assert_same_on_any_thread_count(&spec);
    assert!(res.subflows.f64("goodput_bps").len() > 100, "the subflow table has rows");
}

/// Two ECMP paths of different RTTs between two hosts, 0.5 % loss on every link: CUBIC, Reno,
/// BBR and QUIC flows both ways, hashed onto both paths (each host and one router per part).
#[test]
fn an_ecmp_dumbbell_with_loss_is_identical_on_any_thread_count() {
    let tp = TwoPaths { rate_bps: mbps(100), rtt_ns: [ms(8), ms(12)], queue_packets: 100 };
    let flavors = ["cubic", "reno", "bbr"];
    let mut flows: Vec<FlowSpec> = (0..6)
        .map(|i| {
            let (src, dst) = if i % 2 == 0 { (0, 1) } else { (1, 0) };
            FlowSpec::Tcp(tcp_flow(&format!("tcp{i}"), src, dst, flavors[i % 3]))
        })
        .collect();
    flows.push(FlowSpec::Tcp(quic_flow("quic", 0, 1, "cubic")));
    let mut spec = tp.spec(8, ms(600), flows);
    for l in &mut spec.links {
        l.wire.loss = 0.005;
    }
    assert_eq!(lookahead_ns(&spec, &partition(&spec, 2)), Some(ms(2)));
    let (res, _) = assert_same_on_any_thread_count(&spec);
    assert!(res.flows.f64("packets_lost").iter().sum::<f64>() > 50.0, "the links lost packets");
}

/// Data-center traffic: 200 finite flows of 10 to 310 kB between random hosts of a k = 4
/// fat-tree (DCTCP, CUBIC and Reno over ECN-marking queues), starting throughout the first 40 ms
/// of 60, most of them finished before the end.
#[test]
fn a_data_center_mix_of_short_flows_is_identical_on_any_thread_count() {
    let ft = FatTree::new(4, mbps(1000), 5_000, 100);
    let n = ft.hosts();
    let mut rng = SplitMix64::stream(9, StreamKind::Application, 0);
    let flows: Vec<FlowSpec> = (0..200)
        .map(|i| {
            let src = (rng.next_u64() % n as u64) as usize;
            let dst = (src + 1 + (rng.next_u64() % (n as u64 - 1)) as usize) % n;
            let mut f = tcp_flow(&format!("dc{i}"), ft.host(src), ft.host(dst), ["cubic", "dctcp", "reno"][i % 3]);
            f.start_ns = rng.next_u64() % ms(40);
            f.bytes = Some(10_000 + rng.next_u64() % 300_000);
            FlowSpec::Tcp(f)
        })
        .collect();
    let mut spec = ft.spec(3, ms(60), ms(5), flows);
    for l in &mut spec.links {
        l.queue.ecn_threshold_packets = Some(20);
    }
    let (res, _) = assert_same_on_any_thread_count(&spec);
    let completed = res.flows.f64("completion_time_s").iter().filter(|t| t.is_finite()).count();
    assert!(completed > 100, "only {completed} of 200 flows completed");
}

/// A part that fails (an engine fault, here injected) ends the whole split run with its panic,
/// instead of leaving the other threads waiting for it at the window's barrier.
#[test]
fn a_fault_in_one_part_ends_the_split_run_with_its_panic() {
    let ft = FatTree::new(4, mbps(1000), 20_000, 64);
    let n = ft.hosts();
    let flows = (0..n).map(|i| FlowSpec::Tcp(tcp_flow(&format!("f{i}"), ft.host(i), ft.host((i + n / 2) % n), "cubic"))).collect();
    let mut run = SplitRun::new(ft.spec(1, ms(20), ms(5), flows), 2).expect("valid spec");
    assert_eq!(run.parts(), 2);
    run.fail_part_at_for_tests(1, SimTime(ms(5)));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.run()));
    let panic = outcome.expect_err("the fault ends the run");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("fault injected by the test suite"), "{message}");
}

/// Flows one way only, split: every ACK (TCP, QUIC, UDT) is boxed in the receivers' part and
/// its box reaches the senders' part, which never sends one. The parts keep a bounded number of
/// boxes for reuse however long the run (unbounded, they held one box per ACK the run carried:
/// 26 MB in 40 ms of a k = 8 fat-tree), and the results are still the single thread's.
#[test]
fn a_split_run_keeps_few_header_boxes_when_acks_go_one_way() {
    let tp = TwoPaths { rate_bps: mbps(100), rtt_ns: [ms(8), ms(12)], queue_packets: 100 };
    let mut flows: Vec<FlowSpec> = (0..4).map(|i| FlowSpec::Tcp(tcp_flow(&format!("tcp{i}"), 0, 1, "cubic"))).collect();
    flows.push(FlowSpec::Tcp(quic_flow("quic", 0, 1, "cubic")));
    flows.push(FlowSpec::Udt(udt_flow("udt", 0, 1)));
    let spec = tp.spec(3, ms(2000), flows);
    let mut run = SplitRun::new(spec.clone(), 2).expect("valid spec");
    assert_eq!(run.parts(), 2);
    let mut most = 0;
    while !run.finished() {
        run.run_until(SimTime(run.now().as_nanos() + ms(100)));
        most = most.max(run.pooled_boxes());
    }
    let res = run.finish().results();
    // At least one ACK per two data packets (delayed ACKs; UDT's fewer), every one boxed.
    let received: f64 = res.flows.f64("packets_received").iter().sum();
    assert!(received > 20_000.0, "{received} packets received");
    // What the receivers' part keeps: about the ACKs in flight at once, a few hundred here.
    assert!((most as f64) < received / 40.0, "{most} boxes pooled for {received} packets received");
    assert_identical(&single(&spec), &res);
}

/// Flows one way only, split: each TCP ACK, QUIC ACK frame and UDT ACK is boxed in the
/// receivers' part and read in the senders' part, each QUIC packet the other way; the part
/// where a header ends hands a spare box back for each. In steady state neither part allocates
/// a box (without the exchange the receivers' part allocated one per TCP ACK; with QUIC's and
/// UDT's pools limited instead, one part allocated a box per QUIC packet and ACK frame and per
/// UDT ACK, thousands here).
#[test]
fn a_split_run_allocates_no_header_boxes_in_steady_state() {
    let tp = TwoPaths { rate_bps: mbps(100), rtt_ns: [ms(8), ms(12)], queue_packets: 100 };
    let mut flows: Vec<FlowSpec> = (0..4).map(|i| FlowSpec::Tcp(tcp_flow(&format!("tcp{i}"), 0, 1, "cubic"))).collect();
    flows.push(FlowSpec::Tcp(quic_flow("quic", 0, 1, "cubic")));
    flows.push(FlowSpec::Udt(udt_flow("udt", 0, 1)));
    let mut run = SplitRun::new(tp.spec(3, ms(4000), flows), 2).expect("valid spec");
    assert_eq!(run.parts(), 2);
    run.run_until(SimTime(ms(1000)));
    let before = run.header_boxes_allocated();
    // Counted before the end: a finished run's parts are put back together.
    run.run_until(SimTime(ms(3900)));
    let allocated = run.header_boxes_allocated() - before;
    run.run();
    let res = run.finish().results();
    let received: f64 = res.flows.f64("packets_received").iter().sum();
    assert!(received > 40_000.0, "{received} packets received");
    assert!(allocated < 100, "{allocated} header boxes allocated from 1 s to 3.9 s ({received} packets received in all)");
}

/// A split run says how many parts it ran in, also once put back together, and what CPU its
/// threads used (the calling thread only waits); a run that cannot be split (it captures
/// packets) says 1 and leaves the CPU to the calling thread's own accounting.
#[test]
fn a_split_run_reports_its_parts_and_its_threads_cpu() {
    let ft = FatTree::new(4, mbps(1000), 20_000, 64);
    let n = ft.hosts();
    let flows: Vec<FlowSpec> = (0..n).map(|i| FlowSpec::Tcp(tcp_flow(&format!("f{i}"), ft.host(i), ft.host((i + n / 2) % n), "cubic"))).collect();
    let spec = ft.spec(1, ms(100), ms(10), flows);
    let mut run = SplitRun::new(spec.clone(), 2).expect("valid spec");
    run.run();
    assert_eq!((run.parts(), run.split_into()), (1, 2));
    assert!(run.worker_cpu_s() > 0.0, "worker CPU {} s", run.worker_cpu_s());
    let mut captured = spec;
    captured.pcap = Some(ccarena_sim::spec::PcapSpec { links: vec![0], max_bytes: 1 << 20 });
    let mut single = SplitRun::new(captured, 2).expect("valid spec");
    single.run();
    assert_eq!((single.split_into(), single.worker_cpu_s()), (1, 0.0));
}
