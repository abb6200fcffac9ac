//! The relay's pcap writer (`ccarena_relay::capture`) without namespaces: what a reader gets back
//! from the file — headers only, original lengths, nanosecond timestamps — and the size limit.

use std::path::PathBuf;
use std::time::Duration;

use ccarena_relay::capture::{snap_bytes, LinkCapture, FILE_HEADER_BYTES, RECORD_HEADER_BYTES, UDP_PAYLOAD_SNAP_BYTES};
use pcap_file::pcap::PcapReader;
use pcap_file::{DataLink, TsResolution};

/// A scratch file of this test process, removed when dropped (runs leave no
/// `ccarena-relay-capture-*` files behind).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `ccarena-relay-capture-{pid}-{name}` in the system's temporary directory.
fn scratch(name: &str) -> Scratch {
    Scratch(std::env::temp_dir().join(format!("ccarena-relay-capture-{}-{name}", std::process::id())))
}

/// An Ethernet/IPv4 frame: `ip_options` bytes of IP options, then TCP with `tcp_options` bytes of
/// options or UDP, then `payload` bytes.
fn ipv4(tcp: bool, ip_options: usize, tcp_options: usize, payload: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ihl = (20 + ip_options) / 4;
    let l4 = if tcp { 20 + tcp_options } else { 8 };
    let total = (20 + ip_options + l4 + payload) as u16;
    let mut ip = vec![0x40 | ihl as u8, 0x02, 0, 0, 0, 0, 0x40, 0, 64, if tcp { 6 } else { 17 }, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend(std::iter::repeat_n(1u8, ip_options)); // NOPs
    if tcp {
        let mut h = vec![0u8; 20];
        h[12] = (((20 + tcp_options) / 4) << 4) as u8;
        h[13] = 0x10;
        f.extend_from_slice(&h);
        f.extend(std::iter::repeat_n(1u8, tcp_options));
    } else {
        f.extend_from_slice(&[0xc0, 0x00, 0x14, 0x51, 0, (8 + payload) as u8, 0, 0]);
    }
    f.extend(std::iter::repeat_n(0xabu8, payload));
    f
}

#[test]
fn records_keep_the_headers_the_length_and_the_nanosecond_instant() {
    let path = scratch("headers.pcap");
    let data = ipv4(true, 0, 12, 1448); // a full-size segment with the timestamp option
    let ack = ipv4(true, 0, 32, 0); // an ACK with SACK blocks
    let optioned = ipv4(true, 8, 0, 100); // IP options
    let quic = ipv4(false, 0, 0, 1200);
    let arp = vec![0xffu8; 42];
    let mut c = LinkCapture::create(&path, 1 << 20).unwrap();
    let frames = [(0, &data), (1_500_000_123, &ack), (2_000_000_000, &optioned), (3_000_000_001, &quic), (4_000_000_000, &arp)];
    for (t, f) in frames {
        c.record(t, f);
    }
    let stats = c.finish();
    assert_eq!((stats.packets_written, stats.packets_over_limit, stats.error), (5, 0, None));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(stats.bytes_written, bytes.len() as u64);
    let mut reader = PcapReader::new(&bytes[..]).unwrap();
    let h = reader.header();
    assert_eq!((h.datalink, h.ts_resolution), (DataLink::ETHERNET, TsResolution::NanoSecond));
    let expect_kept = [14 + 20 + 32, 14 + 20 + 52, 14 + 28 + 20, 14 + 20 + 8 + UDP_PAYLOAD_SNAP_BYTES, 42];
    for ((t, f), kept) in frames.into_iter().zip(expect_kept) {
        let p = reader.next_packet().unwrap().unwrap();
        assert_eq!(p.timestamp, Duration::from_nanos(t));
        assert_eq!((p.orig_len as usize, p.data.len()), (f.len(), kept));
        assert_eq!(&p.data[..], &f[..kept]);
        assert_eq!(snap_bytes(f), kept);
    }
    assert!(reader.next_packet().is_none());
}

#[test]
fn the_file_stops_at_its_size_limit_and_counts_what_it_left_out() {
    let path = scratch("limit.pcap");
    let ack = ipv4(true, 0, 12, 0); // 66 bytes kept
    let record = RECORD_HEADER_BYTES + 66;
    // Room for three records and part of a fourth.
    let max_bytes = FILE_HEADER_BYTES + 3 * record + record / 2;
    let mut c = LinkCapture::create(&path, max_bytes).unwrap();
    for i in 0..10 {
        c.record(i * 1000, &ack);
    }
    let stats = c.finish();
    assert_eq!((stats.packets_written, stats.packets_over_limit), (3, 7));
    assert_eq!(stats.bytes_written, FILE_HEADER_BYTES + 3 * record);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), stats.bytes_written);
}

#[test]
fn chunks_larger_than_one_hand_over_all_reach_the_file() {
    // 3 MB of records: several chunks go through the writer thread, in order.
    let path = scratch("chunks.pcap");
    let data = ipv4(true, 0, 12, 1448);
    let n = 40_000u64;
    let mut c = LinkCapture::create(&path, u64::MAX).unwrap();
    for i in 0..n {
        c.record(i, &data);
    }
    let stats = c.finish();
    assert_eq!(stats.packets_written, n);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len() as u64, stats.bytes_written);
    let mut reader = PcapReader::new(&bytes[..]).unwrap();
    let mut i = 0u64;
    while let Some(p) = reader.next_packet() {
        assert_eq!(p.unwrap().timestamp, Duration::from_nanos(i));
        i += 1;
    }
    assert_eq!(i, n);
}
