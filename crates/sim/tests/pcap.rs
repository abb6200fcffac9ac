//! Packet capture (`crate::pcap`): a lossy, ECN-marking two-flow dumbbell captured on its
//! bottleneck holds one record per packet that started serialization there, in time order, with
//! the CE marks the queue made and the retransmissions the wire loss caused; a size limit stops
//! the file growing and counts what it left out; every kind of packet the engine carries turns
//! into a frame a reader parses.

use crate::common;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use ccarena_sim::pcap::CaptureStats;
use ccarena_sim::spec::{FlowSpec, PcapSpec, Spec};
use ccarena_sim::testkit::{cbr_flow, mbps, ms, mptcp_flow, quic_flow, secs, tcp_flow, udt_flow, Dumbbell};
use ccarena_sim::Simulation;
use crate::common::tcp;
use pcap_file::pcap::PcapReader;
use pcap_file::TsResolution;

/// A fresh directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ccarena-pcap-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The lossy two-flow dumbbell: 10 Mbit/s, 1% wire loss and a CE threshold of 15 packets on the
/// bottleneck; a DCTCP flow (ECN) and a CUBIC flow (not ECN-capable).
fn lossy_dumbbell(max_bytes: u64) -> Spec {
    let mut d = Dumbbell::new(2, mbps(10), ms(10), 60);
    d.bottleneck_loss = 0.01;
    let flows = vec![tcp(tcp_flow("dctcp", d.left(0), d.right(0), "dctcp")), tcp(tcp_flow("cubic", d.left(1), d.right(1), "cubic"))];
    let mut spec = d.spec(7, secs(4), ms(100), flows);
    spec.links[d.bottleneck_link()].queue.ecn_threshold_packets = Some(15);
    let reverse = spec.links.iter().position(|l| l.name == "r1->r0").expect("the reverse bottleneck");
    spec.pcap = Some(PcapSpec { links: vec![d.bottleneck_link(), reverse], max_bytes });
    spec
}

/// Run `spec` capturing into `dir`; the simulation (for its link counters) and the captures.
fn run_captured(spec: Spec, dir: &Path) -> (Simulation, Vec<(usize, String, CaptureStats)>) {
    let mut sim = Simulation::new(spec).expect("valid spec");
    sim.start_capture(dir).expect("capture files created");
    sim.run();
    let stats = sim.finish_capture();
    (sim, stats)
}

/// One record: (timestamp ns, original length, captured bytes).
fn records(path: &Path) -> Vec<(u64, u32, Vec<u8>)> {
    let mut reader = PcapReader::new(File::open(path).expect("file")).expect("a pcap file");
    assert_eq!(reader.header().ts_resolution, TsResolution::NanoSecond);
    let mut out = Vec::new();
    while let Some(p) = reader.next_packet() {
        let p = p.expect("a whole record");
        out.push((p.timestamp.as_nanos() as u64, p.orig_len, p.data.into_owned()));
    }
    out
}

/// The fields of a captured TCP frame: (source port, sequence number, ECN bits, payload bytes).
fn tcp_fields(frame: &[u8]) -> Option<(u16, u32, u8, u32)> {
    let ip = &frame[14..];
    if ip[9] != 6 {
        return None;
    }
    let total = u32::from(u16::from_be_bytes([ip[2], ip[3]]));
    let tcp = &ip[20..];
    let header = u32::from(tcp[12] >> 4) * 4;
    Some((u16::from_be_bytes([tcp[0], tcp[1]]), u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]), ip[1] & 3, total - 20 - header))
}

#[test]
fn a_lossy_dumbbell_capture_matches_the_link_counters() {
    let dir = scratch("lossy");
    let (mut sim, stats) = run_captured(lossy_dumbbell(100 << 20), &dir);
    assert_eq!(stats.len(), 2);
    assert_eq!(stats[0].1, "r0_to_r1.pcap");
    for (link, file, st) in &stats {
        let c = sim.links()[*link].counters();
        let recs = records(&dir.join(file));
        assert_eq!(st.error, None);
        assert_eq!(st.packets_over_limit, 0);
        assert_eq!(st.packets_written, c.departures, "one record per packet that started serialization on link {link}");
        assert_eq!(recs.len() as u64, c.departures);
        assert_eq!(std::fs::metadata(dir.join(file)).unwrap().len(), st.bytes_written);
        assert!(recs.windows(2).all(|w| w[0].0 <= w[1].0), "records in time order");
        assert!(recs.last().unwrap().0 <= secs(4));
        // Original lengths: the frame on the wire; the bytes the link serialized, within the
        // 2 bytes of NOP padding a real SACK option takes and the engine does not count.
        let orig: u64 = recs.iter().map(|r| u64::from(r.1) - 14).sum();
        assert!(orig >= c.bytes_transmitted && orig - c.bytes_transmitted <= 2 * c.departures, "{orig} vs {}", c.bytes_transmitted);
    }
    // Forward bottleneck: every CE mark the queue made is on a packet in the file, but those still
    // queued at the end.
    let c = sim.links()[0].counters();
    let recs = records(&dir.join(&stats[0].1));
    let fields: Vec<_> = recs.iter().filter_map(|r| tcp_fields(&r.2)).collect();
    let ce = fields.iter().filter(|f| f.2 == 3).count() as u64;
    assert!(c.packets_marked > 0 && ce <= c.packets_marked && ce + sim.links()[0].queued_packets() >= c.packets_marked, "{ce} CE vs {} marked", c.packets_marked);
    // The CUBIC flow is Not-ECT; DCTCP's segments ECT(0) or CE, but its retransmissions
    // (Not-ECT, RFC 3168 §6.1.5).
    let dctcp_port = 49_152;
    let data = || fields.iter().filter(|f| f.3 > 0);
    assert!(data().filter(|f| f.2 != 0).all(|f| f.0 == dctcp_port));
    let (dctcp, dctcp_ect) = (data().filter(|f| f.0 == dctcp_port).count(), data().filter(|f| f.0 == dctcp_port && f.2 != 0).count());
    assert!(dctcp_ect * 100 >= dctcp * 95, "{dctcp_ect} of {dctcp} DCTCP segments ECN-capable");
    // A data segment lost on the bottleneck's wire was captured, then captured again when
    // retransmitted: repeated sequence numbers, at most one per retransmission.
    let mut seen: HashMap<(u16, u32), u32> = HashMap::new();
    for f in fields.iter().filter(|f| f.3 > 0) {
        *seen.entry((f.0, f.1)).or_default() += 1;
    }
    let repeats: u64 = seen.values().map(|&n| u64::from(n - 1)).sum();
    let retransmitted: f64 = sim.results().flows.f64("packets_retransmitted").iter().sum();
    assert!(c.packets_lost_wire > 0 && repeats > 0, "{repeats} repeats, {} lost on the wire", c.packets_lost_wire);
    assert!(repeats as f64 <= retransmitted, "{repeats} repeats, {retransmitted} retransmitted");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_stops_at_its_size_limit() {
    let dir = scratch("limit");
    let (sim, stats) = run_captured(lossy_dumbbell(20_000), &dir);
    for (link, file, st) in &stats {
        let c = sim.links()[*link].counters();
        let size = std::fs::metadata(dir.join(file)).unwrap().len();
        assert!(size <= 20_000 && size == st.bytes_written, "{size}");
        assert!(st.packets_over_limit > 0);
        assert_eq!(st.packets_written + st.packets_over_limit, c.departures);
        assert_eq!(records(&dir.join(file)).len() as u64, st.packets_written);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// TCP, MPTCP, QUIC, UDT and UDP CBR flows on one bottleneck: every frame parses, its IP header
/// checksum holds, its lengths agree, and the run's results do not depend on the capture.
#[test]
fn every_packet_kind_becomes_a_frame() {
    let dir = scratch("kinds");
    let mut d = Dumbbell::new(5, mbps(20), ms(5), 80);
    d.bottleneck_loss = 0.005;
    let flows = vec![
        tcp(tcp_flow("reno", d.left(0), d.right(0), "reno")),
        tcp(mptcp_flow("mptcp", d.left(1), d.right(1), "reno", 2, "lia")),
        tcp(quic_flow("quic", d.left(2), d.right(2), "cubic")),
        FlowSpec::Udt(udt_flow("udt", d.left(3), d.right(3))),
        FlowSpec::UdpCbr(cbr_flow("cbr", d.left(4), d.right(4), mbps(1), 500)),
    ];
    let plain = d.spec(3, secs(2), ms(100), flows);
    let mut spec = plain.clone();
    let links: Vec<usize> = (0..spec.links.len()).collect();
    spec.pcap = Some(PcapSpec { links, max_bytes: 100 << 20 });
    let (mut sim, stats) = run_captured(spec, &dir);
    assert_eq!(stats.len(), plain.links.len());
    let mut protocols = HashMap::new();
    for (_, file, st) in &stats {
        for (_, orig, frame) in records(&dir.join(file)) {
            let ip = &frame[14..34];
            assert_eq!(ccarena_sim::pcap::frame::internet_checksum(ip), 0);
            let total = u32::from(u16::from_be_bytes([ip[2], ip[3]]));
            assert_eq!(orig, 14 + total);
            assert!(frame.len() as u32 <= orig);
            let sport = u16::from_be_bytes([frame[34], frame[35]]);
            *protocols.entry((ip[9], sport.max(u16::from_be_bytes([frame[36], frame[37]])))).or_insert(0u64) += 1;
        }
        assert_eq!(st.packets_over_limit, 0);
    }
    // TCP for reno and both MPTCP subflows (source ports 49152, 49153 and 49153 + 5), UDP for the
    // others.
    for key in [(6, 49_152), (6, 49_153), (6, 49_158), (17, 49_154), (17, 49_155), (17, 49_156)] {
        assert!(protocols.get(&key).is_some_and(|&n| n > 0), "{key:?} missing from {protocols:?}");
    }
    let captured = sim.results();
    let uncaptured = common::run(plain);
    common::assert_identical(&captured, &uncaptured);
    let _ = std::fs::remove_dir_all(&dir);
}
