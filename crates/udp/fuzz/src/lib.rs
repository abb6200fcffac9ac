//! Shared by the structure-aware fuzz targets of ccarena-udp's two listening services (the file
//! receiver, `receiver_state`, and the scenario sink, `sink_state`): a fuzz input read as a script
//! of packets from three peers, each built with a well-formed header so it gets past the
//! decoder and reaches the state machine.

use std::net::SocketAddr;

use ccarena_transport::Ecn;
use ccarena_udp::wire::{self, encode, kind_of, EcnFeedback, Frame, Header, Offer, QuicOffer, UNBOUNDED_STREAM, COOKIE_BYTES};

/// The fuzz input, consumed from the front.
pub struct Script<'a>(pub &'a [u8]);

impl Script<'_> {
    /// The next byte; `None` at the end.
    pub fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }

    /// The next `bytes` bytes as a big-endian number; `None` at the end.
    pub fn u64(&mut self, bytes: usize) -> Option<u64> {
        let mut v = 0u64;
        for _ in 0..bytes {
            v = (v << 8) | self.byte()? as u64;
        }
        Some(v)
    }

    /// Up to `n` bytes (fewer at the end).
    pub fn take(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}

/// Which service the offers are made to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// The file receiver: OFFERs of the names in [`FILE_NAMES`] (some it must refuse).
    FileReceiver,
    /// The scenario sink: STREAM_OFFERs (bounded or not), and file OFFERs it must refuse.
    Sink,
}

/// Names the file receiver is offered: three plain ones and three it must refuse.
pub const FILE_NAMES: [&str; 6] = ["a.bin", "b.bin", "../up", ".hidden", "a/b", "c.bin"];

/// Names of files the receiver may create (resume sidecars and partial files derive from them).
pub const ALLOWED_NAMES: [&str; 3] = ["a.bin", "b.bin", "c.bin"];

/// The three peers, two of them on one host.
pub fn peers() -> [SocketAddr; 3] {
    ["192.0.2.1:1000".parse().unwrap(), "192.0.2.2:1000".parse().unwrap(), "192.0.2.1:1001".parse().unwrap()]
}

/// The next datagram of the script into `buf`, the peer that sends it and the IP ECN field it
/// arrives with; `None` when the script ends. One op byte: its high nibble picks the peer, bit 3
/// replays the peer's previous packet number, the low three bits the frame (HELLO, an offer with
/// a valid cookie from `cookie` — a stream offer asking for any ECN feedback or none, TCP-like,
/// UDT or QUIC (with any ACK thresholds, a stream window, and an ACK delay sometimes out of
/// range) —, DATA or QUIC_DATA (any packet number, PING probes included) with its ECT/CWR flags
/// and any codepoint, CE included, UDT_DATA, PING, CLOSE, UDT_ACK2, or raw bytes); the frame's
/// fields follow in the script. `pns` holds each peer's next packet number.
/// Only DATA arrives with a codepoint other than Not-ECT.
pub fn next_datagram(
    s: &mut Script,
    service: Service,
    pns: &mut [u64; 3],
    cookie: &dyn Fn(SocketAddr, u64) -> [u8; COOKIE_BYTES],
    buf: &mut Vec<u8>,
) -> Option<(SocketAddr, Ecn)> {
    let op = s.byte()?;
    let who = (op >> 4) as usize % 3;
    let peer = peers()[who];
    let conn_id = who as u64 + 1;
    let pn = pns[who];
    pns[who] += 1;
    let frame_pn = if op & 0x08 != 0 { pn.saturating_sub(1) } else { pn };
    let h = |f: &Frame<'_>| Header { version: wire::VERSION, kind: kind_of(f), conn_id, pn: frame_pn };
    match op & 0x07 {
        0 => {
            let f = Frame::Hello;
            encode(&h(&f), &f, buf);
        }
        1 => {
            let size = s.u64(3)?;
            let mss = s.u64(2)? as u16;
            let n = s.byte()?;
            let cookie = cookie(peer, conn_id);
            let flavor = if n & 0x80 != 0 { "udt" } else { "cubic" };
            let ecn = [None, Some(EcnFeedback::Classic), Some(EcnFeedback::Dctcp), Some(EcnFeedback::AccEcn)][(n >> 2) as usize & 3];
            let quic = if n & 0x40 != 0 {
                let q = s.u64(3)?;
                Some(QuicOffer {
                    ack_eliciting_threshold: (q & 0x7) as u32,
                    reordering_threshold: ((q >> 3) & 0x7) as u32,
                    max_ack_delay_ns: ((q >> 6) & 0xff) << 26, // up to about 17 s: some refused
                    initial_rtt_ns: 1 + ((q >> 14) & 0xff) * 1_000_000,
                    max_stream_data_bytes: if q & (1 << 22) != 0 { 64 * 1024 } else { u64::MAX },
                    pacing: q & (1 << 23) != 0,
                })
            } else {
                None
            };
            let file = |name| Frame::Offer(Offer { cookie, file_bytes: size, sha256: [0; 32], mss_bytes: mss, name, flavor });
            let f = match (service, n & 0x03) {
                (Service::FileReceiver, _) => file(FILE_NAMES[n as usize % FILE_NAMES.len()]),
                (Service::Sink, 0) => file("a.bin"),
                (Service::Sink, 1) => Frame::StreamOffer { cookie, stream_bytes: UNBOUNDED_STREAM, mss_bytes: mss, flavor, ecn, quic },
                (Service::Sink, _) => Frame::StreamOffer { cookie, stream_bytes: size, mss_bytes: mss, flavor, ecn, quic },
            };
            encode(&h(&f), &f, buf);
        }
        2 => {
            let offset = s.u64(3)?;
            let len = (s.u64(2)? as usize % wire::MAX_PAYLOAD_BYTES) + 1;
            let payload = vec![op; len];
            let marks = s.byte()?;
            let flags = marks & (wire::FLAG_ECT | wire::FLAG_CWR);
            if marks & 0x01 != 0 {
                // QUIC_DATA: a packet number from the script; a zero-length PING probe now and then.
                let pn = s.u64(3)?;
                let payload = if marks & 0x08 != 0 { &payload[..0] } else { &payload[..] };
                let f = Frame::QuicData { pn, offset, flags: flags & wire::FLAG_ECT, payload };
                encode(&h(&f), &f, buf);
                return Some((peer, Ecn::from_bits(marks >> 4)));
            }
            let f = Frame::Data { offset, ts_val_ns: 0, flags, payload: &payload };
            encode(&h(&f), &f, buf);
            return Some((peer, Ecn::from_bits(marks >> 4)));
        }
        3 => {
            let seq = s.u64(3)?;
            let offset = s.u64(3)?;
            let len = (s.u64(2)? as usize % wire::MAX_UDT_PAYLOAD_BYTES) + 1;
            let payload = vec![op; len];
            let f = Frame::UdtData { seq, offset, timestamp_ns: 0, flags: op & 0x01, payload: &payload };
            encode(&h(&f), &f, buf);
        }
        4 => {
            let f = Frame::Ping;
            encode(&h(&f), &f, buf);
        }
        5 => {
            let f = Frame::Close { code: 1, message: "x" };
            encode(&h(&f), &f, buf);
        }
        6 => {
            let f = Frame::UdtAck2 { ack_seq: s.u64(2)? };
            encode(&h(&f), &f, buf);
        }
        _ => {
            let n = s.byte()?;
            *buf = s.take(n as usize).to_vec();
        }
    }
    Some((peer, Ecn::NotEct))
}
