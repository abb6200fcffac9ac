//! Ethernet/IPv4/TCP-or-UDP header bytes synthesized from a simulated packet's fields, as a
//! capture on the sending interface would show them (no payload bytes: the simulator has none).
//!
//! Addresses: node `i` has IPv4 address 10.0.0.0 + i + 1 ([`host_ipv4`]) and the locally
//! administered MAC 02:00:ii:ii:ii:ii ([`node_mac`]); a frame on a link goes from the link's
//! sending node's MAC to its receiving node's. Ports: the tuple the engine hashes for ECMP
//! (`crate::routing::FlowKeys`): source port 49152 + flow index, destination port 5201, the ACK
//! direction reversed; an MPTCP subflow `s` > 0 has its own source port ([`flow_ports`]), and an
//! MPTCP flow whose spec gives `source_ports` has those as its subflows' source ports.
//!
//! What each packet becomes:
//! - TCP data segment: sequence number = the segment's byte offset mod 2^32 (ISN 0), ACK flag
//!   with acknowledgment number 0 (the receiver sends no data), CWR from the segment, the IP ECN
//!   field from the segment (RFC 3168 §5: CE once a queue marked it), the timestamp option (RFC
//!   7323 §3: TSval = the segment's send time in µs mod 2^32, TSecr 0). An MPTCP subflow's
//!   segment adds a DSS option with its mapping (RFC 8684 §3.3: 8-byte data sequence number,
//!   subflow sequence number, data-level length, no checksum).
//! - TCP ACK: sequence number 0, acknowledgment number = the cumulative ACK mod 2^32, ECE, or
//!   AccECN's ACE field in the AE, CWR and ECE flags (RFC 9768 §3.2.2), the window field = the
//!   receive window capped at 65,535 (no SYN in the capture, so no window scale), the timestamp
//!   option (TSval = the receiver's clock when the echoed segment arrived, TSecr = the echoed
//!   TSval, both in µs), the SACK option (RFC 2018 §3) with as many blocks as fit in 40 bytes of
//!   options, then the AccECN option (kind 172, RFC 9768 §3.2.3) if it still fits. An MPTCP
//!   subflow's ACK adds a DSS option with the 8-byte DATA_ACK before the SACK blocks.
//! - UDP CBR datagram: UDP with an 8-byte big-endian datagram index.
//! - UDT: UDP with the 16-byte UDT header (draft-gg-udt-03 §2: data packets with their sequence
//!   number mod 2^31; ACK, NAK and ACK2 control packets with their control information).
//! - QUIC: UDP with a short header (RFC 9000 §17.3.1: first byte 0x43, 8-byte destination
//!   connection ID, 4-byte packet number; header protection is not applied). ACK-only packets
//!   carry packet number 0: the simulator numbers only the sender's packets.
//!
//! Lengths: a TCP packet's IP total length is its synthesized headers plus the segment's payload
//! (so a reader's segment length is the segment's); a UDP packet's is the simulator's wire size
//! (`Packet::size_bytes`), or its synthesized headers if larger. The frame's original length is
//! that plus the 14-byte Ethernet header; only the headers are captured.

use ccarena_cc::SimTime;
use ccarena_transport::mptcp::{DssAck, DssData};
use ccarena_transport::udt::{ToReceiver, ToSender};
use ccarena_transport::{AckSegment, DataSegment, Ecn};

use crate::packet::{Packet, Payload};
use crate::spec::FlowSpec;

/// Ethernet header bytes (no VLAN tag, no FCS).
pub const ETHERNET_HEADER_BYTES: usize = 14;
/// IPv4 header bytes (no options).
pub const IPV4_HEADER_BYTES: usize = 20;
/// TCP header bytes without options.
pub const TCP_HEADER_BYTES: usize = 20;
/// Most option bytes a TCP header holds (data offset 15 words).
pub const TCP_OPTION_SPACE_BYTES: usize = 40;
/// UDP header bytes.
pub const UDP_HEADER_BYTES: usize = 8;
/// First source port of the flows' tuples (the dynamic range, RFC 6335 §6).
pub const FIRST_SOURCE_PORT: u16 = 49_152;
/// Destination port of every flow.
pub const DESTINATION_PORT: u16 = 5201;
/// Longest frame this module writes, bytes: Ethernet, IPv4 and TCP with full options.
pub const MAX_FRAME_BYTES: usize = ETHERNET_HEADER_BYTES + IPV4_HEADER_BYTES + TCP_HEADER_BYTES + TCP_OPTION_SPACE_BYTES;

const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const TCP_ACK: u8 = 0x10;
const TCP_ECE: u8 = 0x40;
const TCP_CWR: u8 = 0x80;
const OPT_NOP: u8 = 1;
const OPT_SACK: u8 = 5;
const OPT_TIMESTAMP: u8 = 8;
const OPT_MPTCP: u8 = 30;
const OPT_ACCECN0: u8 = 172;
/// DSS is MPTCP option subtype 2 (RFC 8684 §3.3), in the high nibble.
const DSS_SUBTYPE: u8 = 0x20;
const DSS_DATA_ACK_PRESENT: u8 = 0x01;
const DSS_DATA_ACK_8_BYTES: u8 = 0x02;
const DSS_MAPPING_PRESENT: u8 = 0x04;
const DSS_DSN_8_BYTES: u8 = 0x08;
/// QUIC short header first byte: fixed bit set, spin 0, key phase 0, 4-byte packet number.
const QUIC_SHORT_HEADER_4_BYTE_PN: u8 = 0x43;
/// UDT control packet types (draft-gg-udt-03 §2.2).
const UDT_ACK: u16 = 0x2;
const UDT_NAK: u16 = 0x3;
const UDT_ACK2: u16 = 0x6;

/// The IPv4 address of node `node`: 10.0.0.0 + node + 1 (node 0 is 10.0.0.1), big-endian bytes.
pub fn host_ipv4(node: u32) -> [u8; 4] {
    let n = node.wrapping_add(1) & 0x00ff_ffff;
    [10, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

/// The MAC address of node `node`: locally administered unicast 02:00 then the index.
pub fn node_mac(node: u32) -> [u8; 6] {
    let b = node.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// (source port, destination port) of the data direction of flow `index` of `flow_count`, on
/// MPTCP subflow `subflow` (0 for single-path flows): source port 49152 + (index + subflow ×
/// flow_count) mod 16384, destination port 5201. Distinct for every flow and subflow while
/// there are fewer than 16,384 of them in all.
pub fn flow_ports(index: usize, flow_count: usize, subflow: u8) -> (u16, u16) {
    let span = usize::from(u16::MAX - FIRST_SOURCE_PORT) + 1;
    let slot = (index + usize::from(subflow) * flow_count.max(1)) % span;
    (FIRST_SOURCE_PORT + slot as u16, DESTINATION_PORT)
}

/// The addressing of one flow: its hosts and the data direction's ports (subflow 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowAddress {
    /// Index of the flow in the spec.
    pub index: u32,
    /// The sending host (node index).
    pub src_host: u32,
    /// The receiving host (node index).
    pub dst_host: u32,
    /// Flows in the run: the stride between an MPTCP flow's subflow source ports.
    pub flow_count: u32,
    /// An MPTCP flow's explicit source port per subflow (the spec's `mptcp.source_ports`, which
    /// validation keeps in 1..=65535); None: [`flow_ports`].
    pub source_ports: Option<Box<[u16]>>,
}

impl FlowAddress {
    /// The addressing of every flow of a run, in spec order.
    pub fn of_flows(flows: &[FlowSpec]) -> Vec<FlowAddress> {
        flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let (src, dst) = f.endpoints();
                let source_ports = match f {
                    FlowSpec::Tcp(t) => t.mptcp.as_ref().and_then(|m| m.source_ports.as_ref()).map(|ports| ports.iter().map(|&p| p as u16).collect()),
                    _ => None,
                };
                FlowAddress { index: i as u32, src_host: src as u32, dst_host: dst as u32, flow_count: flows.len() as u32, source_ports }
            })
            .collect()
    }

    /// (source node, destination node, source port, destination port) of a packet of this flow
    /// headed to `dst` on `subflow`.
    fn tuple(&self, dst: u32, subflow: u8) -> (u32, u32, u16, u16) {
        let (sport, dport) = match &self.source_ports {
            Some(ports) => (ports[usize::from(subflow)], DESTINATION_PORT),
            None => flow_ports(self.index as usize, self.flow_count as usize, subflow),
        };
        if dst == self.dst_host {
            (self.src_host, self.dst_host, sport, dport)
        } else {
            (self.dst_host, self.src_host, dport, sport)
        }
    }
}

/// A timestamp in microseconds mod 2^32 (the TSval clock here, and UDT's time stamp).
fn micros32(t: SimTime) -> u32 {
    (t.as_nanos() / 1_000) as u32
}

/// Write the frame of `pkt` crossing the link from node `from` to node `to` at `at` into `buf`
/// (cleared first; at most [`MAX_FRAME_BYTES`]) and return its original length on the wire,
/// bytes (Ethernet header included).
pub fn write_frame(buf: &mut Vec<u8>, pkt: &Packet, from: u32, to: u32, at: SimTime, flow: &FlowAddress) -> u32 {
    buf.clear();
    buf.extend_from_slice(&node_mac(to));
    buf.extend_from_slice(&node_mac(from));
    buf.extend_from_slice(&0x0800u16.to_be_bytes());
    let (src, dst, sport, dport) = flow.tuple(pkt.dst, pkt.payload.subflow());
    let ip_start = buf.len();
    buf.extend_from_slice(&[0u8; IPV4_HEADER_BYTES]);
    let (proto, payload_bytes) = match &pkt.payload {
        Payload::Data(seg) => (IPPROTO_TCP, tcp_data(buf, sport, dport, seg, None)),
        Payload::MptcpData(d) => (IPPROTO_TCP, tcp_data(buf, sport, dport, &d.seg, Some(d))),
        Payload::Ack(a) => (IPPROTO_TCP, tcp_ack(buf, sport, dport, a, None)),
        Payload::MptcpAck(a) => (IPPROTO_TCP, tcp_ack(buf, sport, dport, &a.ack, Some(a))),
        Payload::Datagram { seq } => (IPPROTO_UDP, udp(buf, sport, dport, &seq.to_be_bytes(), pkt.size_bytes)),
        Payload::UdtToReceiver(p) => (IPPROTO_UDP, udp(buf, sport, dport, &udt_to_receiver(p, at, flow.index), pkt.size_bytes)),
        Payload::UdtToSender(p) => {
            let header = udt_to_sender(p, at, flow.index);
            (IPPROTO_UDP, udp(buf, sport, dport, &header, pkt.size_bytes))
        }
        Payload::QuicData(q) => (IPPROTO_UDP, udp(buf, sport, dport, &quic_short_header(flow.index, true, q.pn), pkt.size_bytes)),
        // An ACK-only packet's own packet number is not modelled: 0.
        Payload::QuicAck(_) => (IPPROTO_UDP, udp(buf, sport, dport, &quic_short_header(flow.index, false, 0), pkt.size_bytes)),
    };
    let ip_total = (buf.len() - ip_start) as u32 + payload_bytes;
    let ip_total = ip_total.min(u32::from(u16::MAX));
    let ecn = pkt.payload.ecn();
    ipv4_header(&mut buf[ip_start..ip_start + IPV4_HEADER_BYTES], ecn, ip_total as u16, proto, src, dst);
    ETHERNET_HEADER_BYTES as u32 + ip_total
}

/// Fill a 20-byte IPv4 header (RFC 791 §3.1; DSCP 0, the ECN field of RFC 3168 §5, DF set,
/// identification 0, TTL 64) with its header checksum.
fn ipv4_header(h: &mut [u8], ecn: Ecn, total_len: u16, proto: u8, src: u32, dst: u32) {
    h[0] = 0x45;
    h[1] = ecn.bits();
    h[2..4].copy_from_slice(&total_len.to_be_bytes());
    h[4..6].copy_from_slice(&[0, 0]);
    h[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
    h[8] = 64;
    h[9] = proto;
    h[10..12].copy_from_slice(&[0, 0]);
    h[12..16].copy_from_slice(&host_ipv4(src));
    h[16..20].copy_from_slice(&host_ipv4(dst));
    let sum = internet_checksum(h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
}

/// The Internet checksum of `bytes` (RFC 1071: one's complement of the one's complement sum of
/// the 16-bit words).
pub fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// TCP options being laid out in the 40-byte option space, each padded to a 4-byte boundary
/// with leading NOPs.
struct Options {
    bytes: [u8; TCP_OPTION_SPACE_BYTES],
    len: usize,
}

impl Options {
    fn new() -> Options {
        Options { bytes: [0; TCP_OPTION_SPACE_BYTES], len: 0 }
    }

    /// Bytes an option of `len` bytes takes once padded.
    fn padded(len: usize) -> usize {
        len.div_ceil(4) * 4
    }

    /// Room left, bytes.
    fn room(&self) -> usize {
        TCP_OPTION_SPACE_BYTES - self.len
    }

    /// Append `option` (kind, length and data) after NOPs that align its end; false, and nothing
    /// appended, if it does not fit.
    fn push(&mut self, option: &[u8]) -> bool {
        let padded = Options::padded(option.len());
        if padded > self.room() {
            return false;
        }
        for _ in option.len()..padded {
            self.bytes[self.len] = OPT_NOP;
            self.len += 1;
        }
        self.bytes[self.len..self.len + option.len()].copy_from_slice(option);
        self.len += option.len();
        true
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The timestamp option (RFC 7323 §3): kind 8, length 10, TSval, TSecr.
fn timestamp_option(ts_val: u32, ts_ecr: u32) -> [u8; 10] {
    let mut o = [0u8; 10];
    o[0] = OPT_TIMESTAMP;
    o[1] = 10;
    o[2..6].copy_from_slice(&ts_val.to_be_bytes());
    o[6..10].copy_from_slice(&ts_ecr.to_be_bytes());
    o
}

/// Append a TCP header with `flags` (the low byte: CWR..FIN), `ae` (RFC 9768's AE bit, once
/// NS), the window and options; its checksum is left 0 (no payload to sum).
#[allow(clippy::too_many_arguments)]
fn tcp_header(buf: &mut Vec<u8>, sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, ae: bool, window: u16, options: &Options) {
    let words = (TCP_HEADER_BYTES + options.len) / 4;
    buf.extend_from_slice(&sport.to_be_bytes());
    buf.extend_from_slice(&dport.to_be_bytes());
    buf.extend_from_slice(&seq.to_be_bytes());
    buf.extend_from_slice(&ack.to_be_bytes());
    buf.push(((words as u8) << 4) | u8::from(ae));
    buf.push(flags);
    buf.extend_from_slice(&window.to_be_bytes());
    buf.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    buf.extend_from_slice(options.as_slice());
}

/// A data segment's TCP header (with the DSS mapping of an MPTCP subflow's segment); returns
/// the payload length.
fn tcp_data(buf: &mut Vec<u8>, sport: u16, dport: u16, seg: &DataSegment, dss: Option<&DssData>) -> u32 {
    let mut options = Options::new();
    options.push(&timestamp_option(micros32(seg.ts_val), 0));
    if let Some(d) = dss {
        let mut o = [0u8; 18];
        o[0] = OPT_MPTCP;
        o[1] = 18;
        o[2] = DSS_SUBTYPE;
        o[3] = DSS_MAPPING_PRESENT | DSS_DSN_8_BYTES;
        o[4..12].copy_from_slice(&d.dsn.to_be_bytes());
        o[12..16].copy_from_slice(&(seg.seq as u32).to_be_bytes());
        o[16..18].copy_from_slice(&(seg.len.min(u32::from(u16::MAX)) as u16).to_be_bytes());
        options.push(&o);
    }
    let flags = TCP_ACK | if seg.cwr { TCP_CWR } else { 0 };
    tcp_header(buf, sport, dport, seg.seq as u32, 0, flags, false, u16::MAX, &options);
    seg.len
}

/// An ACK's TCP header (with the DATA_ACK of an MPTCP subflow's ACK); returns 0 (no payload).
fn tcp_ack(buf: &mut Vec<u8>, sport: u16, dport: u16, a: &AckSegment, dss: Option<&DssAck>) -> u32 {
    let mut options = Options::new();
    options.push(&timestamp_option(micros32(a.ts_recv), micros32(a.ts_ecr)));
    if let Some(d) = dss {
        let mut o = [0u8; 12];
        o[0] = OPT_MPTCP;
        o[1] = 12;
        o[2] = DSS_SUBTYPE;
        o[3] = DSS_DATA_ACK_PRESENT | DSS_DATA_ACK_8_BYTES;
        o[4..12].copy_from_slice(&d.data_ack.to_be_bytes());
        options.push(&o);
    }
    let blocks = a.sack_blocks();
    if !blocks.is_empty() {
        // As many blocks as fit, the first (the most recent) kept (RFC 2018 §4).
        let fit = ((options.room().saturating_sub(2 + 2)) / 8).min(blocks.len());
        if fit > 0 {
            let mut o = [0u8; 2 + 8 * ccarena_transport::MAX_SACK_BLOCKS];
            o[0] = OPT_SACK;
            o[1] = (2 + 8 * fit) as u8;
            for (i, b) in blocks[..fit].iter().enumerate() {
                o[2 + 8 * i..6 + 8 * i].copy_from_slice(&(b.start as u32).to_be_bytes());
                o[6 + 8 * i..10 + 8 * i].copy_from_slice(&(b.end as u32).to_be_bytes());
            }
            options.push(&o[..2 + 8 * fit]);
        }
    }
    let (mut flags, mut ae) = (TCP_ACK, false);
    match a.accecn {
        Some(fb) => {
            // ACE = AE·4 + CWR·2 + ECE (RFC 9768 §3.2.2).
            ae = fb.ace & 0b100 != 0;
            flags |= if fb.ace & 0b010 != 0 { TCP_CWR } else { 0 } | if fb.ace & 0b001 != 0 { TCP_ECE } else { 0 };
            if let Some(opt) = fb.option {
                // AccECN0 (kind 172): EE0B, ECEB, EE1B, 24 bits each (RFC 9768 §3.2.3.1).
                let mut o = [0u8; 11];
                o[0] = OPT_ACCECN0;
                o[1] = 11;
                o[2..5].copy_from_slice(&opt.e0b.to_be_bytes()[1..]);
                o[5..8].copy_from_slice(&opt.ceb.to_be_bytes()[1..]);
                o[8..11].copy_from_slice(&opt.e1b.to_be_bytes()[1..]);
                options.push(&o);
            }
        }
        None if a.ece => flags |= TCP_ECE,
        None => {}
    }
    let window = a.rwnd_bytes.min(u64::from(u16::MAX)) as u16;
    tcp_header(buf, sport, dport, 0, a.ack as u32, flags, ae, window, &options);
    0
}

/// Append a UDP header and `app_header` (the captured part of the payload); returns the payload
/// bytes not captured, so that the IP total length is `size_bytes` (or the headers, if larger).
fn udp(buf: &mut Vec<u8>, sport: u16, dport: u16, app_header: &[u8], size_bytes: u32) -> u32 {
    let headers = (IPV4_HEADER_BYTES + UDP_HEADER_BYTES + app_header.len()) as u32;
    let total = size_bytes.max(headers).min(u32::from(u16::MAX));
    let udp_len = (total as usize - IPV4_HEADER_BYTES) as u16;
    buf.extend_from_slice(&sport.to_be_bytes());
    buf.extend_from_slice(&dport.to_be_bytes());
    buf.extend_from_slice(&udp_len.to_be_bytes());
    buf.extend_from_slice(&[0, 0]); // checksum: none (allowed over IPv4, RFC 768)
    buf.extend_from_slice(app_header);
    total - headers
}

/// Append the 16-byte UDT header words: `first` and `second`, the time stamp, the destination
/// socket ID (the flow index).
fn udt_words(out: &mut Vec<u8>, first: u32, second: u32, at: SimTime, flow: u32) {
    out.extend_from_slice(&first.to_be_bytes());
    out.extend_from_slice(&second.to_be_bytes());
    out.extend_from_slice(&micros32(at).to_be_bytes());
    out.extend_from_slice(&flow.to_be_bytes());
}

/// The first word of a UDT control packet of `kind` (draft-gg-udt-03 §2.2: flag bit 1, type).
fn udt_control(kind: u16) -> u32 {
    0x8000_0000 | (u32::from(kind) << 16)
}

/// The UDT header of a packet to the receiver: a data packet (sequence number, message number
/// 1 as the only packet of its message, the sender's time stamp) or an ACK2.
fn udt_to_receiver(p: &ToReceiver, at: SimTime, flow: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    match p {
        ToReceiver::Data(d) => udt_words(&mut out, d.seq as u32 & 0x7fff_ffff, 0xc000_0001, d.timestamp, flow),
        ToReceiver::Ack2(a) => udt_words(&mut out, udt_control(UDT_ACK2), a.ack_seq as u32, at, flow),
    }
    out
}

/// The UDT header and control information of a packet to the sender: a full ACK (ACK number,
/// RTT and variance in µs, available buffer, arrival speed, capacity) or a NAK (its loss list,
/// a range as its first number with the top bit set and its last).
fn udt_to_sender(p: &ToSender, at: SimTime, flow: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(40);
    match p {
        ToSender::Ack(a) => {
            udt_words(&mut out, udt_control(UDT_ACK), a.ack_seq as u32, at, flow);
            for word in [
                a.ack_no as u32 & 0x7fff_ffff,
                (a.rtt.as_nanos() / 1_000) as u32,
                (a.rtt_var.as_nanos() / 1_000) as u32,
                a.buffer_available_packets,
                a.arrival_rate_pps,
                a.link_capacity_pps,
            ] {
                out.extend_from_slice(&word.to_be_bytes());
            }
        }
        ToSender::Nak(n) => {
            udt_words(&mut out, udt_control(UDT_NAK), 0, at, flow);
            for r in n.ranges() {
                let first = r.start as u32 & 0x7fff_ffff;
                if r.end - r.start == 1 {
                    out.extend_from_slice(&first.to_be_bytes());
                } else {
                    out.extend_from_slice(&(first | 0x8000_0000).to_be_bytes());
                    out.extend_from_slice(&((r.end - 1) as u32 & 0x7fff_ffff).to_be_bytes());
                }
            }
        }
    }
    out
}

/// A QUIC short header (RFC 9000 §17.3.1): first byte, the 8-byte destination connection ID
/// (the flow index, with the top bit set toward the sender so each direction has its own), the
/// 4-byte packet number.
fn quic_short_header(flow: u32, to_receiver: bool, pn: u64) -> [u8; 13] {
    let mut h = [0u8; 13];
    h[0] = QUIC_SHORT_HEADER_4_BYTE_PN;
    let cid = u64::from(flow) | if to_receiver { 0 } else { 1 << 63 };
    h[1..9].copy_from_slice(&cid.to_be_bytes());
    h[9..13].copy_from_slice(&(pn as u32).to_be_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccarena_transport::{AccEcnFeedback, AccEcnOption, SackBlock, MAX_SACK_BLOCKS};

    fn flow() -> FlowAddress {
        FlowAddress { index: 1, src_host: 0, dst_host: 3, flow_count: 2, source_ports: None }
    }

    fn data_packet(seq: u64, ecn: Ecn, cwr: bool) -> Packet {
        Packet {
            flow: 1,
            dst: 3,
            size_bytes: 1500,
            payload: Payload::Data(DataSegment { seq, len: 1448, ts_val: SimTime(2_500_000), ecn, cwr, retransmit: false }),
        }
    }

    fn ack_packet(ack: u64, blocks: &[(u64, u64)], ece: bool) -> Packet {
        let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        for (i, &(start, end)) in blocks.iter().enumerate() {
            sack[i] = SackBlock { start, end };
        }
        Packet {
            flow: 1,
            dst: 0,
            size_bytes: 52 + 8 * blocks.len() as u32 + 4,
            payload: Payload::Ack(Box::new(AckSegment {
                ack,
                sack,
                sack_count: blocks.len() as u8,
                ts_ecr: SimTime(2_500_000),
                ts_recv: SimTime(7_000_000),
                ece,
                accecn: None,
                rwnd_bytes: 1 << 20,
            })),
        }
    }

    fn be32(b: &[u8]) -> u32 {
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Addresses, MACs, the IP header with its checksum, the TCP header and the options of a
    /// CE-marked data segment with CWR, at a sequence number past 2^32.
    #[test]
    fn a_data_segment_with_ecn() {
        let mut buf = Vec::new();
        let seq = (1u64 << 32) + 1000;
        let orig = write_frame(&mut buf, &data_packet(seq, Ecn::Ce, true), 5, 6, SimTime(3_000_000), &flow());
        // Ethernet 14 + IP 20 + TCP 20 + NOP NOP TS 12 = 66 bytes captured.
        assert_eq!(buf.len(), 66);
        assert_eq!(orig, 14 + 20 + 32 + 1448);
        assert_eq!(&buf[0..6], &[2, 0, 0, 0, 0, 6]);
        assert_eq!(&buf[6..12], &[2, 0, 0, 0, 0, 5]);
        assert_eq!(&buf[12..14], &[0x08, 0x00]);
        let ip = &buf[14..34];
        assert_eq!(ip[0], 0x45);
        assert_eq!(ip[1], 0b11, "CE");
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 20 + 32 + 1448);
        assert_eq!(ip[9], 6);
        assert_eq!(&ip[12..16], &[10, 0, 0, 1]);
        assert_eq!(&ip[16..20], &[10, 0, 0, 4]);
        assert_eq!(internet_checksum(ip), 0, "a header with its checksum sums to 0");
        let tcp = &buf[34..];
        assert_eq!(u16::from_be_bytes([tcp[0], tcp[1]]), 49_153);
        assert_eq!(u16::from_be_bytes([tcp[2], tcp[3]]), 5201);
        assert_eq!(be32(&tcp[4..]), 1000, "sequence number mod 2^32");
        assert_eq!(be32(&tcp[8..]), 0);
        assert_eq!(tcp[12] >> 4, 8, "data offset 8 words");
        assert_eq!(tcp[13], TCP_ACK | TCP_CWR);
        assert_eq!(&tcp[20..24], &[1, 1, 8, 10]);
        assert_eq!(be32(&tcp[24..]), 2_500, "TSval in µs");
        assert_eq!(be32(&tcp[28..]), 0);
    }

    /// An ACK with ECE and two SACK blocks goes from the receiver's address and port to the
    /// sender's; the window is capped; TSecr echoes the data segment's TSval.
    #[test]
    fn an_ack_with_sack_blocks() {
        let mut buf = Vec::new();
        let orig = write_frame(&mut buf, &ack_packet(5000, &[(8000, 9448), ((1 << 32) + 20, (1 << 32) + 40)], true), 6, 5, SimTime::ZERO, &flow());
        // TCP 20 + TS 12 + SACK (NOP NOP, 2 + 16) 20 = 52.
        assert_eq!(buf.len(), 14 + 20 + 52);
        assert_eq!(orig, 14 + 20 + 52);
        let ip = &buf[14..34];
        assert_eq!(ip[1], 0, "ACKs are Not-ECT");
        assert_eq!(&ip[12..16], &[10, 0, 0, 4]);
        assert_eq!(&ip[16..20], &[10, 0, 0, 1]);
        assert_eq!(internet_checksum(ip), 0);
        let tcp = &buf[34..];
        assert_eq!(u16::from_be_bytes([tcp[0], tcp[1]]), 5201);
        assert_eq!(u16::from_be_bytes([tcp[2], tcp[3]]), 49_153);
        assert_eq!(be32(&tcp[8..]), 5000);
        assert_eq!(tcp[12] >> 4, 13);
        assert_eq!(tcp[12] & 1, 0, "no AE");
        assert_eq!(tcp[13], TCP_ACK | TCP_ECE);
        assert_eq!(u16::from_be_bytes([tcp[14], tcp[15]]), 65_535);
        assert_eq!(be32(&tcp[24..]), 7_000);
        assert_eq!(be32(&tcp[28..]), 2_500);
        assert_eq!(&tcp[32..36], &[1, 1, 5, 18]);
        assert_eq!([be32(&tcp[36..]), be32(&tcp[40..]), be32(&tcp[44..]), be32(&tcp[48..])], [8000, 9448, 20, 40]);
    }

    /// Three SACK blocks fill the option space with the timestamps; AccECN's ACE goes in AE,
    /// CWR and ECE, and its option is left out when it does not fit and included when it does.
    #[test]
    fn option_space_and_accecn() {
        let mut buf = Vec::new();
        let mut pkt = ack_packet(1, &[(10, 20), (30, 40), (50, 60)], false);
        if let Payload::Ack(a) = &mut pkt.payload {
            a.accecn = Some(AccEcnFeedback { ace: 0b101, option: Some(AccEcnOption { e0b: 0x0102_0304, ceb: 7, e1b: 1 }) });
        }
        write_frame(&mut buf, &pkt, 6, 5, SimTime::ZERO, &flow());
        assert_eq!(buf.len(), 14 + 20 + 60, "a full header: 40 option bytes");
        let tcp = &buf[34..];
        assert_eq!(tcp[12], (15 << 4) | 1, "AE set");
        assert_eq!(tcp[13], TCP_ACK | TCP_ECE, "ACE 5 = AE, ECE");
        assert_eq!(tcp[35], 26, "three SACK blocks");
        let mut pkt = ack_packet(1, &[(10, 20)], false);
        if let Payload::Ack(a) = &mut pkt.payload {
            a.accecn = Some(AccEcnFeedback { ace: 0b010, option: Some(AccEcnOption { e0b: 0x0102_0304, ceb: 7, e1b: 1 }) });
        }
        write_frame(&mut buf, &pkt, 6, 5, SimTime::ZERO, &flow());
        let tcp = &buf[34..];
        assert_eq!(tcp[13], TCP_ACK | TCP_CWR);
        // TS 12, SACK 12, then NOP and the 11-byte AccECN0 option.
        assert_eq!(&tcp[44..49], &[OPT_NOP, OPT_ACCECN0, 11, 0x02, 0x03]);
        assert_eq!(&tcp[49..55], &[0x04, 0, 0, 7, 0, 0]);
        assert_eq!(tcp[55], 1);
    }

    /// A UDP datagram: ports, UDP length and IP total length from the wire size, the datagram
    /// index captured.
    #[test]
    fn a_udp_datagram() {
        let mut buf = Vec::new();
        let pkt = Packet { flow: 1, dst: 3, size_bytes: 228, payload: Payload::Datagram { seq: 77 } };
        let orig = write_frame(&mut buf, &pkt, 0, 9, SimTime::ZERO, &flow());
        assert_eq!(orig, 14 + 228);
        assert_eq!(buf.len(), 14 + 20 + 8 + 8);
        let ip = &buf[14..34];
        assert_eq!(ip[9], 17);
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 228);
        assert_eq!(internet_checksum(ip), 0);
        let udp = &buf[34..];
        assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), 49_153);
        assert_eq!(u16::from_be_bytes([udp[4], udp[5]]), 208);
        assert_eq!(u64::from_be_bytes(udp[8..16].try_into().unwrap()), 77);
    }

    /// An MPTCP subflow's data segment carries its DSS mapping and its own source port.
    #[test]
    fn an_mptcp_segment_has_a_dss_mapping() {
        let seg = DataSegment { seq: 3000, len: 1400, ts_val: SimTime::ZERO, ecn: Ecn::NotEct, cwr: false, retransmit: false };
        let pkt = Packet { flow: 1, dst: 3, size_bytes: 1472, payload: Payload::MptcpData(Box::new(DssData { subflow: 2, seg, dsn: 1 << 40 })) };
        let mut buf = Vec::new();
        write_frame(&mut buf, &pkt, 0, 3, SimTime::ZERO, &flow());
        let tcp = &buf[34..];
        assert_eq!(u16::from_be_bytes([tcp[0], tcp[1]]), 49_152 + 1 + 2 * 2);
        // TS 12, then NOP NOP and DSS (18).
        assert_eq!(&tcp[32..36], &[OPT_NOP, OPT_NOP, OPT_MPTCP, 18]);
        assert_eq!(tcp[36], DSS_SUBTYPE);
        assert_eq!(tcp[37], DSS_MAPPING_PRESENT | DSS_DSN_8_BYTES);
        assert_eq!(u64::from_be_bytes(tcp[38..46].try_into().unwrap()), 1 << 40);
        assert_eq!(be32(&tcp[46..]), 3000);
        assert_eq!(u16::from_be_bytes([tcp[50], tcp[51]]), 1400);
    }

    #[test]
    fn addresses_and_ports() {
        assert_eq!(host_ipv4(0), [10, 0, 0, 1]);
        assert_eq!(host_ipv4(300), [10, 0, 1, 45]);
        assert_eq!(flow_ports(0, 10, 0), (49_152, 5201));
        assert_eq!(flow_ports(3, 10, 1), (49_165, 5201));
        assert_eq!(flow_ports(16_384, 20_000, 0), (49_152, 5201), "wraps in the dynamic range");
    }
}
