//! An MPTCP flow's explicit subflow source ports (`mptcp.source_ports`, issue 32: "explicit extra
//! source addresses or ports ... so ECMP hashing spreads them"): each subflow's packets carry its
//! given port, ECMP places each subflow by the tuple with that port, so changing the ports moves
//! the subflows between equal-cost paths, deterministically; the spec refuses a list that does
//! not give one distinct port in 1..=65535 per subflow, naming the field.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};

use ccarena_sim::spec::{FlowSpec, PcapSpec, Spec};
use ccarena_sim::testkit::{mbps, ms, mptcp_flow, secs, TwoPaths};
use ccarena_sim::Simulation;
use crate::common::assert_conservation;
use pcap_file::pcap::PcapReader;

const SEED: u64 = 11;

/// Host 0 → host 1 over two disjoint equal-cost paths of 20 Mbit/s and 10 ms RTT, through router
/// 2 (links 0–3) and router 3 (links 4–7), with hash ECMP; link `4·k` is host 0's link into the
/// `k`-th path. One MPTCP connection of 2 uncoupled Reno subflows sends 2 MB with the given
/// subflow source ports (None: the engine's own), both of host 0's outgoing links captured.
fn two_paths(ports: Option<Vec<u32>>) -> Spec {
    let mut f = mptcp_flow("f", 0, 1, "reno", 2, "uncoupled");
    f.bytes = Some(2_000_000);
    f.mptcp.as_mut().unwrap().source_ports = ports;
    let paths = TwoPaths { rate_bps: mbps(20), rtt_ns: [ms(10), ms(10)], queue_packets: 100 };
    let mut spec = paths.spec(SEED, secs(3), vec![FlowSpec::Tcp(f)]);
    spec.pcap = Some(PcapSpec { links: vec![0, 4], max_bytes: 1 << 30 });
    spec
}

/// The path (0: through router 2, 1: through router 3) each subflow's data takes, as routed.
fn data_paths(ports: &[u32]) -> Vec<usize> {
    let sim = Simulation::new(two_paths(Some(ports.to_vec()))).expect("valid");
    (0..ports.len() as u8).map(|s| sim.subflow_path_pair(0, s).0[0] / 4).collect()
}

/// The first port pair from 40000 up, by the order of the search, whose subflows' data paths are `want`.
fn ports_giving(want: &[usize]) -> Vec<u32> {
    (40_000..40_200u32)
        .flat_map(|a| (40_000..40_200u32).filter(move |&b| b != a).map(move |b| vec![a, b]))
        .find(|p| data_paths(p) == want)
        .expect("some port pair hashes so")
}

/// A fresh directory for this test's captures.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ccarena-source-ports-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The TCP source ports of the frames in a capture file.
fn source_ports(path: &Path) -> BTreeSet<u16> {
    let mut reader = PcapReader::new(File::open(path).expect("file")).expect("a pcap file");
    let mut out = BTreeSet::new();
    while let Some(p) = reader.next_packet() {
        let frame = p.expect("a whole record").data.into_owned();
        let ip = &frame[14..];
        assert_eq!(ip[9], 6, "TCP only");
        out.insert(u16::from_be_bytes([ip[20], ip[21]]));
    }
    out
}

/// Run `ports` to its end: (packets into host 0's link into path 0, into path 1; the source ports
/// captured on each of those links; bytes delivered).
fn run(ports: &[u32], name: &str) -> ([f64; 2], [BTreeSet<u16>; 2], f64) {
    let dir = scratch(name);
    let mut sim = Simulation::new(two_paths(Some(ports.to_vec()))).expect("valid");
    sim.start_capture(&dir).expect("capture files created");
    sim.run();
    let files = sim.finish_capture();
    let res = sim.results();
    assert_conservation(&res);
    let packets = res.links.f64("packets_in");
    let file = |link: usize| dir.join(&files.iter().find(|(l, _, _)| *l == link).expect("captured").1);
    let captured = [source_ports(&file(0)), source_ports(&file(4))];
    let _ = std::fs::remove_dir_all(&dir);
    ([packets[0], packets[4]], captured, res.flows.f64("bytes_delivered")[0])
}

#[test]
fn the_given_ports_are_the_subflows_source_ports_and_steer_their_ecmp_paths() {
    let together = ports_giving(&[0, 0]);
    let apart = ports_giving(&[0, 1]);
    // Deterministic: the same ports give the same paths in another simulation.
    assert_eq!(data_paths(&together), vec![0, 0]);
    assert_eq!(data_paths(&apart), vec![0, 1]);
    let port = |p: u32| p as u16;

    let (packets, captured, delivered) = run(&together, "together");
    assert_eq!(delivered, 2e6, "the transfer completes");
    assert!(packets[0] > 0.0 && packets[1] == 0.0, "both subflows on path 0: {packets:?}");
    assert_eq!(captured[0], BTreeSet::from([port(together[0]), port(together[1])]), "both given ports on path 0's link");
    assert!(captured[1].is_empty());

    let (packets, captured, delivered) = run(&apart, "apart");
    assert_eq!(delivered, 2e6, "the transfer completes");
    assert!(packets[0] > 0.0 && packets[1] > 0.0, "one subflow on each path: {packets:?}");
    assert_eq!(captured[0], BTreeSet::from([port(apart[0])]), "subflow 0's port, and only it, on path 0");
    assert_eq!(captured[1], BTreeSet::from([port(apart[1])]), "subflow 1's port, and only it, on path 1");
}

#[test]
fn the_spec_refuses_source_ports_that_are_not_one_distinct_port_per_subflow() {
    for (ports, says) in [
        (vec![40_001], "gives 1 ports for 2 subflows"),
        (vec![40_001, 40_002, 40_003], "gives 3 ports for 2 subflows"),
        (vec![0, 40_002], "0 is not a TCP port"),
        (vec![40_001, 65_536], "65536 is not a TCP port"),
        (vec![40_001, 40_001], "port 40001 is given twice"),
    ] {
        let e = Simulation::new(two_paths(Some(ports.clone()))).expect_err("refused");
        let text = e.to_string();
        assert!(text.starts_with("flows[0].mptcp.source_ports: "), "{ports:?}: {text}");
        assert!(text.contains(says), "{ports:?}: {text}");
    }
    Simulation::new(two_paths(Some(vec![1, 65_535]))).expect("the ends of the range are ports");
    Simulation::new(two_paths(None)).expect("no ports: the engine's own");
}
