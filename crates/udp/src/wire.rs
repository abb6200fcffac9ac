//! The wire format, version 1 (docs/udp-wire.md): one packet per UDP datagram, a fixed header and
//! one frame. Big-endian throughout.
//!
//! Decoding never panics and never allocates more than [`MAX_HELD_RANGES`] ranges: every length
//! is checked against what is left of the datagram, every count against its cap, and a datagram
//! with bytes left over after its frame is rejected.

use std::fmt;

use ccarena_transport::segment::{ACCECN_OPTION_MODULUS, ACE_MODULUS};
use ccarena_transport::{AccEcnFeedback, AccEcnOption, EcnMode};

/// First two bytes of every packet: `"CU"` (ccarena UDP).
pub const MAGIC: [u8; 2] = *b"CU";
/// The wire version this crate speaks.
pub const VERSION: u8 = 1;
/// Header bytes: magic (2), version (1), packet type (1), connection id (8), packet number (8).
pub const HEADER_BYTES: usize = 20;
/// Largest datagram either end sends or accepts, bytes: a 1500-byte Ethernet MTU less the IPv4
/// (20) and UDP (8) headers.
pub const MAX_DATAGRAM_BYTES: usize = 1472;
/// A HELLO is padded to at least this many bytes so that the RETRY it elicits is smaller than it
/// (no amplification by a spoofed source; RFC 9000 §8.1 does the same with 1200-byte Initials).
pub const MIN_HELLO_BYTES: usize = 1200;
/// Bytes of a stateless cookie (two 64-bit keyed hashes).
pub const COOKIE_BYTES: usize = 16;
/// Most ranges an ACCEPT lists as already held by the receiver.
pub const MAX_HELD_RANGES: usize = 64;
/// Longest file name, bytes (one path component, as in most Linux file systems).
pub const MAX_NAME_BYTES: usize = 255;
/// Longest flavor name or human-readable message, bytes.
pub const MAX_TEXT_BYTES: usize = 200;
/// Bytes a DATA frame adds after the header: offset (8), TSval (8), flags (1).
pub const DATA_FRAME_BYTES: usize = 17;
/// Largest payload a DATA packet carries, bytes.
pub const MAX_PAYLOAD_BYTES: usize = MAX_DATAGRAM_BYTES - HEADER_BYTES - DATA_FRAME_BYTES;
/// Bytes a UDT_DATA frame adds after the header: packet sequence number (8), offset (8), time
/// stamp (8), flags (1).
pub const UDT_DATA_FRAME_BYTES: usize = 25;
/// Largest payload a UDT_DATA packet carries, bytes.
pub const MAX_UDT_PAYLOAD_BYTES: usize = MAX_DATAGRAM_BYTES - HEADER_BYTES - UDT_DATA_FRAME_BYTES;
/// Most loss ranges one UDT_NAK carries (the UDT transport's
/// [`ccarena_transport::udt::packet::MAX_NAK_RANGES`]).
pub const MAX_NAK_RANGES: usize = ccarena_transport::udt::packet::MAX_NAK_RANGES;
/// Bytes a QUIC_DATA frame adds after the header: packet number (8), stream offset (8), flags (1).
pub const QUIC_DATA_FRAME_BYTES: usize = 17;
/// Largest stream payload a QUIC_DATA packet carries, bytes.
pub const MAX_QUIC_PAYLOAD_BYTES: usize = MAX_DATAGRAM_BYTES - HEADER_BYTES - QUIC_DATA_FRAME_BYTES;
/// Most ranges a QUIC_ACK carries (the QUIC transport's
/// [`ccarena_transport::quic::MAX_ACK_RANGES`]).
pub const MAX_QUIC_ACK_RANGES: usize = ccarena_transport::quic::MAX_ACK_RANGES;
/// Packet numbers and stream offsets of QUIC stay below 2^62 (RFC 9000 §12.3, §19.8: the
/// variable-length integer's range); QUIC_DATA and QUIC_ACK beyond it are refused.
pub const QUIC_MAX_VALUE: u64 = (1 << 62) - 1;
/// QUIC_ACK flag: ECN counts (ECT(0), ECT(1), CE, 8 bytes each) follow the ranges (an ACK_ECN
/// frame, RFC 9000 §19.3.2).
pub const FLAG_QUIC_ECN: u8 = 0x01;
/// QUIC_ACK flag: the credit rose since the previous ACK (a MAX_DATA or MAX_STREAM_DATA frame
/// would go with this ACK, RFC 9000 §19.9–§19.10; informational).
pub const FLAG_QUIC_CREDIT_UPDATE: u8 = 0x02;
/// STREAM_OFFER's transport byte for QUIC (RFC 9000 / RFC 9002 semantics in this wire's frames).
pub const TRANSPORT_QUIC: u8 = 1;
/// STREAM_OFFER's QUIC settings flag: pace when the controller sets no rate (RFC 9002 §7.7).
pub const FLAG_QUIC_PACING: u8 = 0x01;
/// STREAM_OFFER's stream length for a stream without a set length (it ends with CLOSE).
pub const UNBOUNDED_STREAM: u64 = u64::MAX;
/// Most SACK ranges an ACK carries (the transport's [`ccarena_transport::MAX_SACK_BLOCKS`]).
pub const MAX_SACK_RANGES: usize = ccarena_transport::MAX_SACK_BLOCKS;

/// DATA flag: a retransmission.
pub const FLAG_RETRANSMIT: u8 = 0x01;
/// DATA flag: the sender sent the packet ECN-capable (ECT(0) or ECT(1) in its IP header; RFC
/// 3168 §5, RFC 9331 §4.1). Informational: the receiver takes the codepoint from the IP header
/// as it arrived (a queue may have made it CE), never from this flag.
pub const FLAG_ECT: u8 = 0x02;
/// DATA flag: Congestion Window Reduced (RFC 3168 §6.1.2).
pub const FLAG_CWR: u8 = 0x04;
/// ACK flag: ECN-Echo (RFC 3168 §6.1.3; RFC 8257 §3.2 for a DCTCP-style receiver).
pub const FLAG_ECE: u8 = 0x01;
/// ACK flag: the ACK carries Accurate ECN feedback (RFC 9768 §3.2): an ACE byte after the SACK
/// ranges.
pub const FLAG_ACCECN: u8 = 0x02;
/// ACK flag (only with [`FLAG_ACCECN`]): the AccECN option's three byte counters follow the ACE
/// byte (RFC 9768 §3.2.3: EE0B, ECEB, EE1B, 24 bits each, in Order 0).
pub const FLAG_ACCECN_OPTION: u8 = 0x04;
/// Bytes the AccECN fields add to an ACK: ACE (1) and, with the option, three 24-bit counters.
pub const ACCECN_ACK_BYTES: usize = 1 + 3 * 3;

/// Which ECN feedback a stream's sender asks the sink's receiver for (STREAM_OFFER's optional
/// last byte): how the sink's receiver echoes the CE marks it reads from arriving IP headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EcnFeedback {
    /// RFC 3168 §6.1.3: ECE from a CE mark until a DATA with CWR (an ECT(0) sender).
    Classic = 1,
    /// RFC 8257 §3.2: ECE mirrors each segment's CE, an immediate ACK when it changes (DCTCP).
    Dctcp = 2,
    /// RFC 9768: the ACE field and the AccECN option's byte counters in every ACK (an L4S
    /// sender: ECT(1), RFC 9331 §4.1).
    AccEcn = 3,
}

impl EcnFeedback {
    fn from_u8(v: u8) -> Option<EcnFeedback> {
        match v {
            1 => Some(EcnFeedback::Classic),
            2 => Some(EcnFeedback::Dctcp),
            3 => Some(EcnFeedback::AccEcn),
            _ => None,
        }
    }

    /// The transport receiver's mode that gives this feedback.
    pub fn receiver_mode(self) -> EcnMode {
        match self {
            EcnFeedback::Classic => EcnMode::Classic,
            EcnFeedback::Dctcp => EcnMode::Dctcp,
            EcnFeedback::AccEcn => EcnMode::AccEcn,
        }
    }

    /// The feedback a receiver in `mode` gives (`None`: [`EcnMode::Off`]; AccECN with or without
    /// the option are both [`EcnFeedback::AccEcn`], the option's presence being per ACK).
    pub fn of_mode(mode: EcnMode) -> Option<EcnFeedback> {
        match mode {
            EcnMode::Off => None,
            EcnMode::Classic => Some(EcnFeedback::Classic),
            EcnMode::Dctcp => Some(EcnFeedback::Dctcp),
            EcnMode::AccEcn | EcnMode::AccEcnAceOnly => Some(EcnFeedback::AccEcn),
        }
    }
}

/// Packet type codes (the header's fourth byte).
pub mod kind {
    /// Client → server: first contact, padded, asks for a cookie.
    pub const HELLO: u8 = 0x01;
    /// Server → client: the stateless cookie.
    pub const RETRY: u8 = 0x02;
    /// Client → server: the cookie and the file offered.
    pub const OFFER: u8 = 0x03;
    /// Server → client: the transfer is accepted; what the receiver already holds.
    pub const ACCEPT: u8 = 0x04;
    /// Server → client: the offer is refused, with a reason.
    pub const REJECT: u8 = 0x05;
    /// Client → server: the cookie and a synthetic stream offered to a sink (scenario flows).
    pub const STREAM_OFFER: u8 = 0x06;
    /// Client → server: stream bytes.
    pub const DATA: u8 = 0x10;
    /// Server → client: cumulative ACK, SACK ranges, timestamps.
    pub const ACK: u8 = 0x11;
    /// Client → server: a UDT data packet (its sequence number, stream offset, time stamp).
    pub const UDT_DATA: u8 = 0x12;
    /// Server → client: a UDT full ACK (draft-gg-udt-03 §2.2 type 0x2).
    pub const UDT_ACK: u8 = 0x13;
    /// Client → server: a UDT ACK2, the acknowledgment of an ACK (type 0x6).
    pub const UDT_ACK2: u8 = 0x14;
    /// Server → client: a UDT NAK, packets reported lost (type 0x3).
    pub const UDT_NAK: u8 = 0x15;
    /// Client → server: a QUIC packet with one STREAM frame (its packet number, stream offset,
    /// the stream bytes).
    pub const QUIC_DATA: u8 = 0x16;
    /// Server → client: a QUIC ACK frame with ECN counts and the flow-control credit.
    pub const QUIC_ACK: u8 = 0x17;
    /// Server → client: every byte arrived; the SHA-256 verdict.
    pub const DONE: u8 = 0x20;
    /// Either way: the connection ends (after DONE, or an abort).
    pub const CLOSE: u8 = 0x21;
    /// Either way: keepalive; carries nothing.
    pub const PING: u8 = 0x22;
    /// Any version → any version: the versions the sender of this packet speaks. Decoded whatever
    /// the header's version, so every version can tell a peer it does not understand it.
    pub const VERSION_MISMATCH: u8 = 0xFF;
}

/// Why an offer was refused (REJECT's code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RejectCode {
    /// The file exists and the receiver was not started with `--force`.
    Exists = 1,
    /// The name is not one plain file name (a path, `..`, a leading dot, a control character).
    BadName = 2,
    /// The receiver is at its connection limit or the name is being received already.
    Busy = 3,
    /// The receiver cannot write the file (permissions, disk full, an I/O error).
    Io = 4,
    /// The file is larger than the receiver accepts.
    TooLarge = 5,
    /// The name exists and is not a regular file (a directory, a symlink, a device).
    NotRegular = 6,
    /// The offer's parameters are out of range (MSS).
    BadOffer = 7,
    /// Any code this version does not know.
    Other = 255,
}

impl RejectCode {
    fn from_u8(v: u8) -> RejectCode {
        match v {
            1 => RejectCode::Exists,
            2 => RejectCode::BadName,
            3 => RejectCode::Busy,
            4 => RejectCode::Io,
            5 => RejectCode::TooLarge,
            6 => RejectCode::NotRegular,
            7 => RejectCode::BadOffer,
            _ => RejectCode::Other,
        }
    }
}

/// DONE's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum DoneStatus {
    /// The file's SHA-256 matched the offer's; it is in place.
    Ok = 0,
    /// The SHA-256 of what arrived differs from the offer's; the partial file was removed.
    HashMismatch = 1,
    /// The receiver failed to write or rename the file.
    Io = 2,
    /// Any status this version does not know.
    Other = 255,
}

impl DoneStatus {
    fn from_u8(v: u8) -> DoneStatus {
        match v {
            0 => DoneStatus::Ok,
            1 => DoneStatus::HashMismatch,
            2 => DoneStatus::Io,
            _ => DoneStatus::Other,
        }
    }
}

/// The fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Wire version of the sender of the packet.
    pub version: u8,
    /// Packet type ([`kind`]).
    pub kind: u8,
    /// Connection id, chosen at random by the client for each transfer.
    pub conn_id: u64,
    /// Packet number: per direction, starting at 0, +1 per packet (anti-replay).
    pub pn: u64,
}

/// An OFFER: the file the client wants to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer<'a> {
    /// The cookie from RETRY.
    pub cookie: [u8; COOKIE_BYTES],
    /// File size, bytes.
    pub file_bytes: u64,
    /// SHA-256 of the whole file.
    pub sha256: [u8; 32],
    /// Payload bytes per full DATA packet (the transport's MSS).
    pub mss_bytes: u16,
    /// The file's name (one component; the receiver checks it).
    pub name: &'a str,
    /// The sender's congestion-control flavor (informational).
    pub flavor: &'a str,
}

/// An ACK: the transport's [`ccarena_transport::AckSegment`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFrame {
    /// Cumulative ACK (stream offset).
    pub ack: u64,
    /// Receive window above `ack`, bytes (`u64::MAX`: unlimited).
    pub rwnd_bytes: u64,
    /// Echoed TSval, ns of the data sender's clock.
    pub ts_ecr_ns: u64,
    /// When the echoed segment arrived, ns of the receiver's clock.
    pub ts_recv_ns: u64,
    /// [`FLAG_ECE`] (the AccECN flags on the wire follow `accecn`, not this field).
    pub flags: u8,
    /// SACK ranges `[start, end)`; the first `sack_count` are valid.
    pub sack: [(u64, u64); MAX_SACK_RANGES],
    /// Valid entries of `sack`.
    pub sack_count: u8,
    /// Accurate ECN feedback (RFC 9768 §3.2) from a sink asked for it ([`EcnFeedback::AccEcn`]):
    /// ACE (below 8) and, when present, the option's byte counters (each below 2^24).
    pub accecn: Option<AccEcnFeedback>,
}

/// A UDT full ACK on the wire: the UDT transport's [`ccarena_transport::udt::AckPacket`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdtAckFrame {
    /// ACK sequence number (the ACK2 answering it echoes it).
    pub ack_seq: u64,
    /// Every packet below this sequence number arrived.
    pub ack_no: u64,
    /// The receiver's RTT estimate, ns.
    pub rtt_ns: u64,
    /// The receiver's RTT variance estimate, ns.
    pub rtt_var_ns: u64,
    /// Available receiver buffer, packets (the flow window).
    pub buffer_available_packets: u32,
    /// Packet arrival speed, packets/s (0: no estimate).
    pub arrival_rate_pps: u32,
    /// Link capacity from packet pairs, packets/s (0: unknown).
    pub link_capacity_pps: u32,
}

/// A STREAM_OFFER's QUIC settings: the stream runs the QUIC transport
/// ([`ccarena_transport::quic`]) with these, the connection's flow-control window being the
/// sink's receive window (ACCEPT's `rwnd_bytes`). Each is the QUIC setting of the same name
/// ([`ccarena_transport::quic::QuicConfig`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuicOffer {
    /// Ack-eliciting packets received before an ACK is sent at once (RFC 9000 §13.2.2: 2).
    pub ack_eliciting_threshold: u32,
    /// Packet-number gap that makes the receiver ACK at once (RFC 9000 §13.2.1: 1; 0 never).
    pub reordering_threshold: u32,
    /// The receiver's max_ack_delay (RFC 9000 §18.2), ns.
    pub max_ack_delay_ns: u64,
    /// The sender's RTT before its first sample (RFC 9002 §6.2.2), ns.
    pub initial_rtt_ns: u64,
    /// The stream's flow-control window (MAX_STREAM_DATA, RFC 9000 §4.1), bytes; `u64::MAX`:
    /// unlimited.
    pub max_stream_data_bytes: u64,
    /// The sender paces when its controller sets no rate (RFC 9002 §7.7).
    pub pacing: bool,
}

/// Bytes a STREAM_OFFER's QUIC settings take after the transport byte.
pub const QUIC_OFFER_BYTES: usize = 4 + 4 + 8 + 8 + 8 + 1;

/// A QUIC_ACK: the QUIC transport's [`ccarena_transport::quic::AckFrame`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuicAckFrame {
    /// Largest packet number acknowledged (`ranges[0].1`).
    pub largest: u64,
    /// ACK delay: from the largest acknowledged packet's arrival to this ACK, ns (RFC 9000
    /// §19.3, unscaled).
    pub ack_delay_ns: u64,
    /// When the largest acknowledged packet arrived, ns of the receiver's clock.
    pub largest_received_at_ns: u64,
    /// MAX_DATA: the connection's credit, an absolute stream offset (`u64::MAX`: unlimited).
    pub max_data: u64,
    /// MAX_STREAM_DATA for the one stream (`u64::MAX`: unlimited).
    pub max_stream_data: u64,
    /// The credit rose since the previous ACK.
    pub credit_update: bool,
    /// Acknowledged packet numbers `(smallest, largest)`, both included, largest first,
    /// disjoint and not adjacent; the first `range_count` are valid (1 to
    /// [`MAX_QUIC_ACK_RANGES`]).
    pub ranges: [(u64, u64); MAX_QUIC_ACK_RANGES],
    /// Valid entries of `ranges`.
    pub range_count: u8,
    /// ECN counts `(ECT(0), ECT(1), CE)`, cumulative (RFC 9000 §19.3.2).
    pub ecn: Option<(u64, u64, u64)>,
}

/// The frame a packet carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// [`kind::HELLO`] (the padding is not kept).
    Hello,
    /// [`kind::RETRY`].
    Retry {
        /// The cookie to echo in OFFER.
        cookie: [u8; COOKIE_BYTES],
    },
    /// [`kind::OFFER`].
    Offer(Offer<'a>),
    /// [`kind::STREAM_OFFER`]: a stream of bytes with no file behind it, for a sink that counts
    /// what arrives (`scenario_sink`). A file receiver refuses it and a sink refuses OFFER, so
    /// neither end mistakes the other's purpose.
    StreamOffer {
        /// The cookie from RETRY.
        cookie: [u8; COOKIE_BYTES],
        /// Bytes the stream carries; [`UNBOUNDED_STREAM`]: until the sender closes.
        stream_bytes: u64,
        /// Payload bytes per full DATA packet (the transport's MSS).
        mss_bytes: u16,
        /// The sender's congestion-control flavor (informational).
        flavor: &'a str,
        /// The ECN feedback the sender asks for (an optional byte; absent: none, the
        /// stream is Not-ECT). A sink of before this field drops an offer that has it.
        ecn: Option<EcnFeedback>,
        /// The stream runs QUIC with these settings (a transport byte and the settings after
        /// the ECN byte, which is then 0 without ECN); `None`: the TCP-like transport, or UDT
        /// with flavor `udt`.
        quic: Option<QuicOffer>,
    },
    /// [`kind::ACCEPT`].
    Accept {
        /// Bytes the transport stream carries (the file less what is held).
        stream_bytes: u64,
        /// The receiver's initial window, bytes.
        rwnd_bytes: u64,
        /// File ranges `[start, end)` the receiver already holds, sorted, disjoint.
        held: Vec<(u64, u64)>,
    },
    /// [`kind::REJECT`].
    Reject {
        /// Why.
        code: RejectCode,
        /// For people.
        message: &'a str,
    },
    /// [`kind::DATA`].
    Data {
        /// Stream offset of the first payload byte.
        offset: u64,
        /// Sender's TSval, ns of its clock.
        ts_val_ns: u64,
        /// [`FLAG_RETRANSMIT`], [`FLAG_ECT`], [`FLAG_CWR`].
        flags: u8,
        /// The bytes (1 to [`MAX_PAYLOAD_BYTES`]).
        payload: &'a [u8],
    },
    /// [`kind::ACK`].
    Ack(AckFrame),
    /// [`kind::UDT_DATA`].
    UdtData {
        /// Packet sequence number, from 0 (a retransmission keeps its number).
        seq: u64,
        /// Stream offset of the first payload byte.
        offset: u64,
        /// The sender's time stamp, ns of its clock.
        timestamp_ns: u64,
        /// [`FLAG_RETRANSMIT`].
        flags: u8,
        /// The bytes (1 to [`MAX_UDT_PAYLOAD_BYTES`]).
        payload: &'a [u8],
    },
    /// [`kind::UDT_ACK`].
    UdtAck(UdtAckFrame),
    /// [`kind::UDT_ACK2`].
    UdtAck2 {
        /// The ACK sequence number acknowledged.
        ack_seq: u64,
    },
    /// [`kind::UDT_NAK`]: loss ranges `[start, end)` of packet sequence numbers, 1 to
    /// [`MAX_NAK_RANGES`], each non-empty.
    UdtNak {
        /// The ranges; the first `count` are valid.
        ranges: [(u64, u64); MAX_NAK_RANGES],
        /// Valid entries of `ranges`.
        count: u8,
    },
    /// [`kind::QUIC_DATA`]: a QUIC packet; `payload` empty for a PING probe.
    QuicData {
        /// Packet number (never reused, RFC 9000 §12.3), below 2^62.
        pn: u64,
        /// Stream offset of the first payload byte; offset + length at most 2^62 − 1.
        offset: u64,
        /// [`FLAG_RETRANSMIT`], [`FLAG_ECT`] (informational, as DATA's).
        flags: u8,
        /// The stream bytes (0 to [`MAX_QUIC_PAYLOAD_BYTES`]).
        payload: &'a [u8],
    },
    /// [`kind::QUIC_ACK`] (boxed: its 32 ranges would make every frame large).
    QuicAck(Box<QuicAckFrame>),
    /// [`kind::DONE`].
    Done {
        /// The verdict.
        status: DoneStatus,
        /// For people.
        message: &'a str,
    },
    /// [`kind::CLOSE`].
    Close {
        /// 0: normal end; anything else: an abort.
        code: u8,
        /// For people.
        message: &'a str,
    },
    /// [`kind::PING`].
    Ping,
    /// [`kind::VERSION_MISMATCH`].
    VersionMismatch {
        /// Versions the packet's sender speaks (1 to 8 of them).
        supported: Vec<u8>,
    },
}

/// Why a datagram was not a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Not ours: the magic is wrong (or the datagram is shorter than it).
    BadMagic,
    /// Ours, but another version (and not a VERSION_MISMATCH packet).
    UnknownVersion(u8),
    /// A packet type this version does not define.
    UnknownType(u8),
    /// The datagram ends inside a field.
    Truncated,
    /// A field's value is out of range (a count over its cap, a range backwards, unknown flags,
    /// bytes left over, a datagram over the size limit, text not UTF-8).
    Invalid(&'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::BadMagic => write!(f, "not a ccarena packet"),
            DecodeError::UnknownVersion(v) => write!(f, "wire version {v} (this end speaks {VERSION})"),
            DecodeError::UnknownType(t) => write!(f, "unknown packet type {t:#04x}"),
            DecodeError::Truncated => write!(f, "truncated packet"),
            DecodeError::Invalid(why) => write!(f, "invalid packet: {why}"),
        }
    }
}

/// A bounds-checked reader over a datagram.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError::Truncated);
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.bytes(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A 24-bit big-endian counter (an AccECN option field, RFC 9768 §3.2.3).
    fn u24(&mut self) -> Result<u32, DecodeError> {
        let b = self.bytes(3)?;
        Ok(u32::from_be_bytes([0, b[0], b[1], b[2]]))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.bytes(8)?);
        Ok(u64::from_be_bytes(a))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    /// A length-prefixed (u8 or u16) UTF-8 string of at most `max` bytes.
    fn text(&mut self, wide: bool, max: usize) -> Result<&'a str, DecodeError> {
        let n = if wide { self.u16()? as usize } else { self.u8()? as usize };
        if n > max {
            return Err(DecodeError::Invalid("text longer than its limit"));
        }
        std::str::from_utf8(self.bytes(n)?).map_err(|_| DecodeError::Invalid("text is not UTF-8"))
    }

    fn range(&mut self) -> Result<(u64, u64), DecodeError> {
        let (s, e) = (self.u64()?, self.u64()?);
        if s > e {
            return Err(DecodeError::Invalid("range ends before it starts"));
        }
        Ok((s, e))
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }

    fn finish(&self) -> Result<(), DecodeError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::Invalid("bytes left over after the frame"))
        }
    }
}

/// Decode one datagram.
///
/// # Errors
/// [`DecodeError`] saying what is wrong; never panics, whatever `buf` holds.
pub fn decode(buf: &[u8]) -> Result<(Header, Frame<'_>), DecodeError> {
    if buf.len() < 2 || buf[..2] != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    if buf.len() > MAX_DATAGRAM_BYTES {
        return Err(DecodeError::Invalid("datagram over the size limit"));
    }
    let mut r = Reader { buf: &buf[2..] };
    let version = r.u8()?;
    let k = r.u8()?;
    let conn_id = r.u64()?;
    let pn = r.u64()?;
    let header = Header { version, kind: k, conn_id, pn };
    if k == kind::VERSION_MISMATCH {
        let n = r.u8()? as usize;
        if n == 0 || n > 8 {
            return Err(DecodeError::Invalid("version list length out of range"));
        }
        let supported = r.bytes(n)?.to_vec();
        r.finish()?;
        return Ok((header, Frame::VersionMismatch { supported }));
    }
    if version != VERSION {
        return Err(DecodeError::UnknownVersion(version));
    }
    let frame = match k {
        kind::HELLO => {
            if buf.len() < MIN_HELLO_BYTES {
                return Err(DecodeError::Invalid("HELLO shorter than the anti-amplification minimum"));
            }
            r.rest();
            Frame::Hello
        }
        kind::RETRY => Frame::Retry { cookie: r.array()? },
        kind::OFFER => {
            let cookie = r.array()?;
            let file_bytes = r.u64()?;
            let sha256 = r.array()?;
            let mss_bytes = r.u16()?;
            let name = r.text(true, MAX_NAME_BYTES)?;
            let flavor = r.text(false, MAX_TEXT_BYTES)?;
            Frame::Offer(Offer { cookie, file_bytes, sha256, mss_bytes, name, flavor })
        }
        kind::STREAM_OFFER => {
            let cookie = r.array()?;
            let stream_bytes = r.u64()?;
            let mss_bytes = r.u16()?;
            let flavor = r.text(false, MAX_TEXT_BYTES)?;
            let ecn_byte = |v: u8| EcnFeedback::from_u8(v).ok_or(DecodeError::Invalid("unknown ECN feedback"));
            let (ecn, quic) = match r.buf.len() {
                0 => (None, None),
                1 => (Some(ecn_byte(r.u8()?)?), None),
                _ => {
                    // The ECN byte (0: none) and the transport with its settings.
                    let ecn = match r.u8()? {
                        0 => None,
                        v => Some(ecn_byte(v)?),
                    };
                    if r.u8()? != TRANSPORT_QUIC {
                        return Err(DecodeError::Invalid("unknown transport"));
                    }
                    (ecn, Some(quic_offer(&mut r)?))
                }
            };
            Frame::StreamOffer { cookie, stream_bytes, mss_bytes, flavor, ecn, quic }
        }
        kind::ACCEPT => {
            let stream_bytes = r.u64()?;
            let rwnd_bytes = r.u64()?;
            let n = r.u16()? as usize;
            if n > MAX_HELD_RANGES {
                return Err(DecodeError::Invalid("more held ranges than allowed"));
            }
            // The count is checked against the cap and against the bytes present before
            // anything is allocated.
            if r.buf.len() < n * 16 {
                return Err(DecodeError::Truncated);
            }
            let mut held = Vec::with_capacity(n);
            for _ in 0..n {
                let (s, e) = r.range()?;
                if held.last().is_some_and(|&(_, pe)| s <= pe) {
                    return Err(DecodeError::Invalid("held ranges not sorted and disjoint"));
                }
                held.push((s, e));
            }
            Frame::Accept { stream_bytes, rwnd_bytes, held }
        }
        kind::REJECT => {
            let code = RejectCode::from_u8(r.u8()?);
            Frame::Reject { code, message: r.text(false, MAX_TEXT_BYTES)? }
        }
        kind::DATA => {
            let offset = r.u64()?;
            let ts_val_ns = r.u64()?;
            let flags = r.u8()?;
            if flags & !(FLAG_RETRANSMIT | FLAG_ECT | FLAG_CWR) != 0 {
                return Err(DecodeError::Invalid("unknown DATA flags"));
            }
            let payload = r.rest();
            if payload.is_empty() {
                return Err(DecodeError::Invalid("DATA without payload"));
            }
            if offset.checked_add(payload.len() as u64).is_none() {
                return Err(DecodeError::Invalid("DATA beyond the largest stream offset"));
            }
            Frame::Data { offset, ts_val_ns, flags, payload }
        }
        kind::ACK => {
            let ack = r.u64()?;
            let rwnd_bytes = r.u64()?;
            let ts_ecr_ns = r.u64()?;
            let ts_recv_ns = r.u64()?;
            let flags = r.u8()?;
            if flags & !(FLAG_ECE | FLAG_ACCECN | FLAG_ACCECN_OPTION) != 0 {
                return Err(DecodeError::Invalid("unknown ACK flags"));
            }
            if flags & FLAG_ACCECN_OPTION != 0 && flags & FLAG_ACCECN == 0 {
                return Err(DecodeError::Invalid("AccECN option without AccECN"));
            }
            let n = r.u8()?;
            if n as usize > MAX_SACK_RANGES {
                return Err(DecodeError::Invalid("more SACK ranges than allowed"));
            }
            let mut sack = [(0, 0); MAX_SACK_RANGES];
            for s in sack.iter_mut().take(n as usize) {
                *s = r.range()?;
            }
            let accecn = if flags & FLAG_ACCECN != 0 {
                let ace = r.u8()?;
                if u64::from(ace) >= ACE_MODULUS {
                    return Err(DecodeError::Invalid("ACE beyond 3 bits"));
                }
                let option = if flags & FLAG_ACCECN_OPTION != 0 {
                    Some(AccEcnOption { e0b: r.u24()?, ceb: r.u24()?, e1b: r.u24()? })
                } else {
                    None
                };
                Some(AccEcnFeedback { ace, option })
            } else {
                None
            };
            let flags = flags & FLAG_ECE;
            Frame::Ack(AckFrame { ack, rwnd_bytes, ts_ecr_ns, ts_recv_ns, flags, sack, sack_count: n, accecn })
        }
        kind::UDT_DATA => {
            let seq = r.u64()?;
            let offset = r.u64()?;
            let timestamp_ns = r.u64()?;
            let flags = r.u8()?;
            if flags & !FLAG_RETRANSMIT != 0 {
                return Err(DecodeError::Invalid("unknown UDT_DATA flags"));
            }
            let payload = r.rest();
            if payload.is_empty() {
                return Err(DecodeError::Invalid("UDT_DATA without payload"));
            }
            if offset.checked_add(payload.len() as u64).is_none() || seq == u64::MAX {
                return Err(DecodeError::Invalid("UDT_DATA beyond the largest offset or sequence number"));
            }
            Frame::UdtData { seq, offset, timestamp_ns, flags, payload }
        }
        kind::UDT_ACK => Frame::UdtAck(UdtAckFrame {
            ack_seq: r.u64()?,
            ack_no: r.u64()?,
            rtt_ns: r.u64()?,
            rtt_var_ns: r.u64()?,
            buffer_available_packets: r.u32()?,
            arrival_rate_pps: r.u32()?,
            link_capacity_pps: r.u32()?,
        }),
        kind::UDT_ACK2 => Frame::UdtAck2 { ack_seq: r.u64()? },
        kind::UDT_NAK => {
            let n = r.u8()?;
            if n == 0 || n as usize > MAX_NAK_RANGES {
                return Err(DecodeError::Invalid("NAK range count out of range"));
            }
            let mut ranges = [(0, 0); MAX_NAK_RANGES];
            for x in ranges.iter_mut().take(n as usize) {
                *x = r.range()?;
                if x.0 == x.1 {
                    return Err(DecodeError::Invalid("empty NAK range"));
                }
            }
            Frame::UdtNak { ranges, count: n }
        }
        kind::QUIC_DATA => {
            let pn = r.u64()?;
            let offset = r.u64()?;
            let flags = r.u8()?;
            if flags & !(FLAG_RETRANSMIT | FLAG_ECT) != 0 {
                return Err(DecodeError::Invalid("unknown QUIC_DATA flags"));
            }
            let payload = r.rest();
            if pn > QUIC_MAX_VALUE || offset.checked_add(payload.len() as u64).is_none_or(|e| e > QUIC_MAX_VALUE) {
                return Err(DecodeError::Invalid("QUIC_DATA beyond 2^62"));
            }
            Frame::QuicData { pn, offset, flags, payload }
        }
        kind::QUIC_ACK => Frame::QuicAck(Box::new(quic_ack(&mut r)?)),
        kind::DONE => {
            let status = DoneStatus::from_u8(r.u8()?);
            Frame::Done { status, message: r.text(false, MAX_TEXT_BYTES)? }
        }
        kind::CLOSE => {
            let code = r.u8()?;
            Frame::Close { code, message: r.text(false, MAX_TEXT_BYTES)? }
        }
        kind::PING => Frame::Ping,
        other => return Err(DecodeError::UnknownType(other)),
    };
    r.finish()?;
    Ok((header, frame))
}

/// A STREAM_OFFER's QUIC settings, after its transport byte.
fn quic_offer(r: &mut Reader<'_>) -> Result<QuicOffer, DecodeError> {
    let offer = QuicOffer {
        ack_eliciting_threshold: r.u32()?,
        reordering_threshold: r.u32()?,
        max_ack_delay_ns: r.u64()?,
        initial_rtt_ns: r.u64()?,
        max_stream_data_bytes: r.u64()?,
        pacing: match r.u8()? {
            0 => false,
            FLAG_QUIC_PACING => true,
            _ => return Err(DecodeError::Invalid("unknown QUIC settings flags")),
        },
    };
    Ok(offer)
}

/// A QUIC_ACK's body: at most [`MAX_QUIC_ACK_RANGES`] ranges, each `smallest ≤ largest`,
/// descending with a gap between each and the next (RFC 9000 §19.3.1), the first ending at
/// `largest`, all below 2^62.
fn quic_ack(r: &mut Reader<'_>) -> Result<QuicAckFrame, DecodeError> {
    let largest = r.u64()?;
    let ack_delay_ns = r.u64()?;
    let largest_received_at_ns = r.u64()?;
    let max_data = r.u64()?;
    let max_stream_data = r.u64()?;
    let flags = r.u8()?;
    if flags & !(FLAG_QUIC_ECN | FLAG_QUIC_CREDIT_UPDATE) != 0 {
        return Err(DecodeError::Invalid("unknown QUIC_ACK flags"));
    }
    let n = r.u8()?;
    if n == 0 || n as usize > MAX_QUIC_ACK_RANGES {
        return Err(DecodeError::Invalid("QUIC_ACK range count out of range"));
    }
    if largest > QUIC_MAX_VALUE {
        return Err(DecodeError::Invalid("QUIC_ACK beyond 2^62"));
    }
    let mut ranges = [(0, 0); MAX_QUIC_ACK_RANGES];
    // The next range ends below this (exclusive), leaving a gap: the previous smallest − 1.
    let mut below: Option<u64> = None;
    for (i, x) in ranges.iter_mut().take(n as usize).enumerate() {
        let (smallest, top) = (r.u64()?, r.u64()?);
        if smallest > top {
            return Err(DecodeError::Invalid("QUIC_ACK range ends before it starts"));
        }
        if i == 0 && top != largest {
            return Err(DecodeError::Invalid("QUIC_ACK's first range does not end at its largest"));
        }
        if below.is_some_and(|b| top >= b) {
            return Err(DecodeError::Invalid("QUIC_ACK ranges not descending with gaps"));
        }
        *x = (smallest, top);
        below = Some(smallest.saturating_sub(1));
    }
    let ecn = if flags & FLAG_QUIC_ECN != 0 { Some((r.u64()?, r.u64()?, r.u64()?)) } else { None };
    Ok(QuicAckFrame {
        largest,
        ack_delay_ns,
        largest_received_at_ns,
        max_data,
        max_stream_data,
        credit_update: flags & FLAG_QUIC_CREDIT_UPDATE != 0,
        ranges,
        range_count: n,
        ecn,
    })
}

/// `text` cut to at most `max` bytes at a character boundary.
fn clip(text: &str, max: usize) -> &str {
    let mut n = text.len().min(max);
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    &text[..n]
}

/// Encode `frame` under `header` into `out` (cleared first). Texts longer than their limit are
/// cut; held ranges beyond [`MAX_HELD_RANGES`] and SACK ranges beyond `sack_count` are not
/// written. The caller keeps DATA payloads within [`MAX_PAYLOAD_BYTES`].
pub fn encode(header: &Header, frame: &Frame<'_>, out: &mut Vec<u8>) {
    out.clear();
    encode_append(header, frame, out);
}

/// As [`encode`], appending the datagram to what `out` holds (a send queue's buffer: the
/// datagram is written where it will be sent from, not copied there).
pub fn encode_append(header: &Header, frame: &Frame<'_>, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.push(header.version);
    out.push(header.kind);
    out.extend_from_slice(&header.conn_id.to_be_bytes());
    out.extend_from_slice(&header.pn.to_be_bytes());
    let text8 = |out: &mut Vec<u8>, t: &str| {
        let t = clip(t, MAX_TEXT_BYTES);
        out.push(t.len() as u8);
        out.extend_from_slice(t.as_bytes());
    };
    match frame {
        Frame::Hello => out.resize(start + MIN_HELLO_BYTES, 0),
        Frame::Retry { cookie } => out.extend_from_slice(cookie),
        Frame::Offer(o) => {
            out.extend_from_slice(&o.cookie);
            out.extend_from_slice(&o.file_bytes.to_be_bytes());
            out.extend_from_slice(&o.sha256);
            out.extend_from_slice(&o.mss_bytes.to_be_bytes());
            let name = clip(o.name, MAX_NAME_BYTES);
            out.extend_from_slice(&(name.len() as u16).to_be_bytes());
            out.extend_from_slice(name.as_bytes());
            text8(out, o.flavor);
        }
        Frame::StreamOffer { cookie, stream_bytes, mss_bytes, flavor, ecn, quic } => {
            out.extend_from_slice(cookie);
            out.extend_from_slice(&stream_bytes.to_be_bytes());
            out.extend_from_slice(&mss_bytes.to_be_bytes());
            text8(out, flavor);
            // Absent without ECN or QUIC: a Not-ECT TCP-like stream's offer is what it was before
            // the fields.
            match (ecn, quic) {
                (None, None) => {}
                (Some(e), None) => out.push(*e as u8),
                (e, Some(q)) => {
                    out.push(e.map_or(0, |e| e as u8));
                    out.push(TRANSPORT_QUIC);
                    out.extend_from_slice(&q.ack_eliciting_threshold.to_be_bytes());
                    out.extend_from_slice(&q.reordering_threshold.to_be_bytes());
                    for v in [q.max_ack_delay_ns, q.initial_rtt_ns, q.max_stream_data_bytes] {
                        out.extend_from_slice(&v.to_be_bytes());
                    }
                    out.push(u8::from(q.pacing) * FLAG_QUIC_PACING);
                }
            }
        }
        Frame::Accept { stream_bytes, rwnd_bytes, held } => {
            out.extend_from_slice(&stream_bytes.to_be_bytes());
            out.extend_from_slice(&rwnd_bytes.to_be_bytes());
            let held = &held[..held.len().min(MAX_HELD_RANGES)];
            out.extend_from_slice(&(held.len() as u16).to_be_bytes());
            for (s, e) in held {
                out.extend_from_slice(&s.to_be_bytes());
                out.extend_from_slice(&e.to_be_bytes());
            }
        }
        Frame::Reject { code, message } => {
            out.push(*code as u8);
            text8(out, message);
        }
        Frame::Data { offset, ts_val_ns, flags, payload } => {
            out.extend_from_slice(&offset.to_be_bytes());
            out.extend_from_slice(&ts_val_ns.to_be_bytes());
            out.push(*flags);
            out.extend_from_slice(payload);
        }
        Frame::Ack(a) => {
            out.extend_from_slice(&a.ack.to_be_bytes());
            out.extend_from_slice(&a.rwnd_bytes.to_be_bytes());
            out.extend_from_slice(&a.ts_ecr_ns.to_be_bytes());
            out.extend_from_slice(&a.ts_recv_ns.to_be_bytes());
            let accecn_flags = a.accecn.map_or(0, |f| FLAG_ACCECN | if f.option.is_some() { FLAG_ACCECN_OPTION } else { 0 });
            out.push((a.flags & FLAG_ECE) | accecn_flags);
            let n = (a.sack_count as usize).min(MAX_SACK_RANGES);
            out.push(n as u8);
            for (s, e) in &a.sack[..n] {
                out.extend_from_slice(&s.to_be_bytes());
                out.extend_from_slice(&e.to_be_bytes());
            }
            if let Some(f) = a.accecn {
                // The fields are the counters modulo their sizes (RFC 9768 §3.2.2.2, §3.2.3.1).
                out.push((u64::from(f.ace) % ACE_MODULUS) as u8);
                if let Some(o) = f.option {
                    for v in [o.e0b, o.ceb, o.e1b] {
                        let v = (u64::from(v) % ACCECN_OPTION_MODULUS) as u32;
                        out.extend_from_slice(&v.to_be_bytes()[1..]);
                    }
                }
            }
        }
        Frame::UdtData { seq, offset, timestamp_ns, flags, payload } => {
            out.extend_from_slice(&seq.to_be_bytes());
            out.extend_from_slice(&offset.to_be_bytes());
            out.extend_from_slice(&timestamp_ns.to_be_bytes());
            out.push(*flags);
            out.extend_from_slice(payload);
        }
        Frame::UdtAck(a) => {
            for v in [a.ack_seq, a.ack_no, a.rtt_ns, a.rtt_var_ns] {
                out.extend_from_slice(&v.to_be_bytes());
            }
            for v in [a.buffer_available_packets, a.arrival_rate_pps, a.link_capacity_pps] {
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
        Frame::UdtAck2 { ack_seq } => out.extend_from_slice(&ack_seq.to_be_bytes()),
        Frame::UdtNak { ranges, count } => {
            let n = (*count as usize).min(MAX_NAK_RANGES);
            out.push(n as u8);
            for (s, e) in &ranges[..n] {
                out.extend_from_slice(&s.to_be_bytes());
                out.extend_from_slice(&e.to_be_bytes());
            }
        }
        Frame::QuicData { pn, offset, flags, payload } => {
            out.extend_from_slice(&pn.to_be_bytes());
            out.extend_from_slice(&offset.to_be_bytes());
            out.push(*flags);
            out.extend_from_slice(payload);
        }
        Frame::QuicAck(a) => {
            for v in [a.largest, a.ack_delay_ns, a.largest_received_at_ns, a.max_data, a.max_stream_data] {
                out.extend_from_slice(&v.to_be_bytes());
            }
            let flags = (u8::from(a.ecn.is_some()) * FLAG_QUIC_ECN) | (u8::from(a.credit_update) * FLAG_QUIC_CREDIT_UPDATE);
            out.push(flags);
            let n = (a.range_count as usize).min(MAX_QUIC_ACK_RANGES);
            out.push(n as u8);
            for (s, e) in &a.ranges[..n] {
                out.extend_from_slice(&s.to_be_bytes());
                out.extend_from_slice(&e.to_be_bytes());
            }
            if let Some((ect0, ect1, ce)) = a.ecn {
                for v in [ect0, ect1, ce] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
        }
        Frame::Done { status, message } => {
            out.push(*status as u8);
            text8(out, message);
        }
        Frame::Close { code, message } => {
            out.push(*code);
            text8(out, message);
        }
        Frame::Ping => {}
        Frame::VersionMismatch { supported } => {
            let s = &supported[..supported.len().min(8)];
            out.push(s.len() as u8);
            out.extend_from_slice(s);
        }
    }
}

/// The packet type code of `frame`.
pub fn kind_of(frame: &Frame<'_>) -> u8 {
    match frame {
        Frame::Hello => kind::HELLO,
        Frame::Retry { .. } => kind::RETRY,
        Frame::Offer(_) => kind::OFFER,
        Frame::StreamOffer { .. } => kind::STREAM_OFFER,
        Frame::Accept { .. } => kind::ACCEPT,
        Frame::Reject { .. } => kind::REJECT,
        Frame::Data { .. } => kind::DATA,
        Frame::Ack(_) => kind::ACK,
        Frame::UdtData { .. } => kind::UDT_DATA,
        Frame::UdtAck(_) => kind::UDT_ACK,
        Frame::UdtAck2 { .. } => kind::UDT_ACK2,
        Frame::UdtNak { .. } => kind::UDT_NAK,
        Frame::QuicData { .. } => kind::QUIC_DATA,
        Frame::QuicAck(_) => kind::QUIC_ACK,
        Frame::Done { .. } => kind::DONE,
        Frame::Close { .. } => kind::CLOSE,
        Frame::Ping => kind::PING,
        Frame::VersionMismatch { .. } => kind::VERSION_MISMATCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(frame: Frame<'_>) {
        let h = Header { version: VERSION, kind: kind_of(&frame), conn_id: 7, pn: 9 };
        let mut buf = Vec::new();
        encode(&h, &frame, &mut buf);
        let (h2, f2) = decode(&buf).expect("decodes");
        assert_eq!(h2, h);
        assert_eq!(f2, frame);
        // Appended behind other datagrams (a send queue's buffer): the same bytes, the ones
        // before untouched.
        let mut queued = vec![0xAA; 5];
        encode_append(&h, &frame, &mut queued);
        assert_eq!((&queued[..5], &queued[5..]), (&[0xAA; 5][..], &buf[..]));
        // Every strict prefix is rejected, never a panic. DATA's (and UDT_DATA's) payload runs to the end of the
        // datagram, so only the prefixes that cut its fixed part can be told apart; a STREAM_OFFER's
        // ECN byte is optional, so the offer without it is the same offer without ECN.
        // A QUIC_DATA's payload may be empty (a PING probe); a STREAM_OFFER's QUIC settings
        // come after the ECN byte and a transport byte.
        let quic_tail = QUIC_OFFER_BYTES + 2;
        let checked = match frame {
            Frame::Data { .. } => HEADER_BYTES + DATA_FRAME_BYTES + 1,
            Frame::UdtData { .. } => HEADER_BYTES + UDT_DATA_FRAME_BYTES + 1,
            Frame::QuicData { .. } => HEADER_BYTES + QUIC_DATA_FRAME_BYTES,
            Frame::StreamOffer { quic: Some(_), .. } => buf.len() - quic_tail,
            Frame::StreamOffer { ecn: Some(_), .. } => buf.len() - 1,
            _ => buf.len(),
        };
        for n in 0..checked {
            assert!(decode(&buf[..n]).is_err(), "prefix of {n} bytes of {frame:?} accepted");
        }
        if let Frame::StreamOffer { cookie, stream_bytes, mss_bytes, flavor, ecn, quic } = frame {
            let without = Frame::StreamOffer { cookie, stream_bytes, mss_bytes, flavor, ecn: None, quic: None };
            if quic.is_some() {
                // Cut after the flavor: the same offer, TCP-like, without ECN; after the ECN
                // byte: that ECN (0 alone is refused); inside the settings: refused.
                assert_eq!(decode(&buf[..checked]).map(|(_, f)| f), Ok(without));
                let ecn_only = Frame::StreamOffer { cookie, stream_bytes, mss_bytes, flavor, ecn, quic: None };
                assert_eq!(decode(&buf[..checked + 1]).map(|(_, f)| f).ok(), ecn.map(|_| ecn_only));
                for n in checked + 2..buf.len() {
                    assert!(decode(&buf[..n]).is_err(), "prefix of {n} bytes of {frame:?} accepted");
                }
            } else if ecn.is_some() {
                assert_eq!(decode(&buf[..buf.len() - 1]).map(|(_, f)| f), Ok(without));
            }
        }
    }

    fn quic_offer() -> QuicOffer {
        QuicOffer {
            ack_eliciting_threshold: 2,
            reordering_threshold: 1,
            max_ack_delay_ns: 25_000_000,
            initial_rtt_ns: 333_000_000,
            max_stream_data_bytes: u64::MAX,
            pacing: true,
        }
    }

    fn quic_ack(ranges: &[(u64, u64)], ecn: Option<(u64, u64, u64)>) -> QuicAckFrame {
        let mut a = QuicAckFrame {
            largest: ranges[0].1,
            ack_delay_ns: 1_000_000,
            largest_received_at_ns: 123,
            max_data: 1 << 30,
            max_stream_data: u64::MAX,
            credit_update: true,
            ranges: [(0, 0); MAX_QUIC_ACK_RANGES],
            range_count: ranges.len() as u8,
            ecn,
        };
        a.ranges[..ranges.len()].copy_from_slice(ranges);
        a
    }

    #[test]
    fn quic_frames_round_trip_and_bad_ranges_are_refused() {
        roundtrip(Frame::QuicData { pn: 7, offset: 7 * 1435, flags: FLAG_RETRANSMIT | FLAG_ECT, payload: &[4, 5] });
        roundtrip(Frame::QuicData { pn: QUIC_MAX_VALUE, offset: 0, flags: 0, payload: &[] });
        roundtrip(Frame::QuicAck(Box::new(quic_ack(&[(10, 12)], None))));
        roundtrip(Frame::QuicAck(Box::new(quic_ack(&[(30, 40), (20, 28), (0, 0)], Some((5, 0, 2))))));
        let full: Vec<(u64, u64)> = (0..MAX_QUIC_ACK_RANGES as u64).rev().map(|i| (3 * i, 3 * i + 1)).collect();
        roundtrip(Frame::QuicAck(Box::new(quic_ack(&full, Some((u64::MAX, 1, u64::MAX))))));
        for e in [None, Some(EcnFeedback::Classic), Some(EcnFeedback::AccEcn)] {
            roundtrip(Frame::StreamOffer { cookie: [4; 16], stream_bytes: 9, mss_bytes: 1435, flavor: "cubic", ecn: e, quic: Some(quic_offer()) });
        }
        let q = QuicOffer { pacing: false, max_stream_data_bytes: 1 << 20, reordering_threshold: 0, ..quic_offer() };
        roundtrip(Frame::StreamOffer { cookie: [4; 16], stream_bytes: UNBOUNDED_STREAM, mss_bytes: 1000, flavor: "bbr", ecn: None, quic: Some(q) });

        let h = Header { version: VERSION, kind: kind::QUIC_ACK, conn_id: 1, pn: 2 };
        let enc = |a: QuicAckFrame| {
            let mut buf = Vec::new();
            encode(&h, &Frame::QuicAck(Box::new(a)), &mut buf);
            decode(&buf).map(|_| ())
        };
        let invalid = |why| Err(DecodeError::Invalid(why));
        // Ascending, overlapping, adjacent (no gap) and backwards ranges are refused.
        let order = "QUIC_ACK ranges not descending with gaps";
        assert_eq!(enc(quic_ack(&[(10, 12), (20, 30)], None)), invalid(order));
        assert_eq!(enc(quic_ack(&[(10, 12), (5, 10)], None)), invalid(order));
        assert_eq!(enc(quic_ack(&[(10, 12), (5, 9)], None)), invalid(order));
        assert!(enc(quic_ack(&[(10, 12), (5, 8)], None)).is_ok());
        assert_eq!(enc(quic_ack(&[(12, 10)], None)), invalid("QUIC_ACK range ends before it starts"));
        let mut a = quic_ack(&[(10, 12)], None);
        a.largest = 13;
        assert_eq!(enc(a), invalid("QUIC_ACK's first range does not end at its largest"));
        let over = 1u64 << 62;
        assert_eq!(enc(quic_ack(&[(over, over)], None)), invalid("QUIC_ACK beyond 2^62"));
        // Range counts 0 and 33 are refused (written by hand: the encoder caps the count).
        let mut buf = Vec::new();
        encode(&h, &Frame::QuicAck(Box::new(quic_ack(&[(10, 12)], None))), &mut buf);
        let count_at = HEADER_BYTES + 41;
        for bad in [0u8, MAX_QUIC_ACK_RANGES as u8 + 1, 255] {
            let mut b = buf.clone();
            b[count_at] = bad;
            assert_eq!(decode(&b).map(|_| ()), invalid("QUIC_ACK range count out of range"));
        }
        let mut b = buf.clone();
        b[count_at - 1] = 0x04;
        assert_eq!(decode(&b).map(|_| ()), invalid("unknown QUIC_ACK flags"));
        // QUIC_DATA beyond 2^62, or with unknown flags.
        let data = |pn, offset, flags, payload: &[u8]| {
            let mut buf = Vec::new();
            let h = Header { version: VERSION, kind: kind::QUIC_DATA, conn_id: 1, pn: 2 };
            encode(&h, &Frame::QuicData { pn, offset, flags, payload }, &mut buf);
            decode(&buf).map(|_| ())
        };
        assert_eq!(data(over, 0, 0, &[1]), invalid("QUIC_DATA beyond 2^62"));
        assert_eq!(data(0, over - 1, 0, &[1]), invalid("QUIC_DATA beyond 2^62"));
        assert!(data(0, over - 2, 0, &[1]).is_ok());
        assert_eq!(data(0, 0, FLAG_CWR, &[1]), invalid("unknown QUIC_DATA flags"));
        // An offer's unknown transport or QUIC settings flags.
        let offer = Frame::StreamOffer { cookie: [0; 16], stream_bytes: 1, mss_bytes: 1000, flavor: "cubic", ecn: None, quic: Some(quic_offer()) };
        encode(&Header { version: VERSION, kind: kind::STREAM_OFFER, conn_id: 0, pn: 0 }, &offer, &mut buf);
        let transport_at = buf.len() - QUIC_OFFER_BYTES - 1;
        let mut b = buf.clone();
        b[transport_at] = 2;
        assert_eq!(decode(&b).map(|_| ()), invalid("unknown transport"));
        let mut b = buf.clone();
        *b.last_mut().unwrap() = 2;
        assert_eq!(decode(&b).map(|_| ()), invalid("unknown QUIC settings flags"));
    }

    #[test]
    fn every_frame_round_trips_and_every_prefix_is_rejected() {
        roundtrip(Frame::Hello);
        roundtrip(Frame::Retry { cookie: [3; 16] });
        roundtrip(Frame::Offer(Offer {
            cookie: [1; 16],
            file_bytes: 1 << 40,
            sha256: [2; 32],
            mss_bytes: 1400,
            name: "data.bin",
            flavor: "cubic",
        }));
        roundtrip(Frame::StreamOffer { cookie: [4; 16], stream_bytes: UNBOUNDED_STREAM, mss_bytes: 1435, flavor: "vegas", ecn: None, quic: None });
        for ecn in [EcnFeedback::Classic, EcnFeedback::Dctcp, EcnFeedback::AccEcn] {
            roundtrip(Frame::StreamOffer { cookie: [4; 16], stream_bytes: 9, mss_bytes: 1435, flavor: "prague", ecn: Some(ecn), quic: None });
        }
        roundtrip(Frame::Accept { stream_bytes: 10, rwnd_bytes: u64::MAX, held: vec![(0, 5), (8, 9)] });
        roundtrip(Frame::Reject { code: RejectCode::Exists, message: "exists" });
        roundtrip(Frame::Data { offset: 100, ts_val_ns: 5, flags: FLAG_CWR, payload: &[1, 2, 3] });
        roundtrip(Frame::Ack(AckFrame {
            ack: 10,
            rwnd_bytes: 99,
            ts_ecr_ns: 1,
            ts_recv_ns: 2,
            flags: FLAG_ECE,
            sack: [(20, 30), (40, 50), (0, 0)],
            sack_count: 2,
            accecn: None,
        }));
        // AccECN: ACE alone, and ACE with the option's counters at their 24-bit extremes.
        let ack = |accecn| AckFrame { ack: 10, rwnd_bytes: 99, ts_ecr_ns: 1, ts_recv_ns: 2, flags: 0, sack: [(20, 30), (0, 0), (0, 0)], sack_count: 1, accecn };
        roundtrip(Frame::Ack(ack(Some(AccEcnFeedback { ace: 7, option: None }))));
        let option = AccEcnOption { e0b: 1, ceb: (1 << 24) - 1, e1b: 0x12_3456 };
        roundtrip(Frame::Ack(ack(Some(AccEcnFeedback { ace: 5, option: Some(option) }))));
        roundtrip(Frame::UdtData { seq: 7, offset: 7 * 1427, timestamp_ns: 9, flags: FLAG_RETRANSMIT, payload: &[4, 5] });
        roundtrip(Frame::UdtAck(UdtAckFrame {
            ack_seq: 3,
            ack_no: 1000,
            rtt_ns: 40_000_000,
            rtt_var_ns: 1_000_000,
            buffer_available_packets: 25_600,
            arrival_rate_pps: 4000,
            link_capacity_pps: 4300,
        }));
        roundtrip(Frame::UdtAck2 { ack_seq: 3 });
        roundtrip(Frame::UdtNak { ranges: [(5, 6), (9, 20), (0, 0), (0, 0)], count: 2 });
        roundtrip(Frame::Done { status: DoneStatus::HashMismatch, message: "bad" });
        roundtrip(Frame::Close { code: 0, message: "" });
        roundtrip(Frame::Ping);
        roundtrip(Frame::VersionMismatch { supported: vec![1] });
    }

    #[test]
    fn accecn_fields_are_laid_out_as_documented_and_checked() {
        let a = AckFrame {
            ack: 0,
            rwnd_bytes: 0,
            ts_ecr_ns: 0,
            ts_recv_ns: 0,
            flags: 0,
            sack: [(0, 0); MAX_SACK_RANGES],
            sack_count: 0,
            accecn: Some(AccEcnFeedback { ace: 6, option: Some(AccEcnOption { e0b: 0x01_0203, ceb: 0x04_0506, e1b: 0x07_0809 }) }),
        };
        let h = Header { version: VERSION, kind: kind::ACK, conn_id: 0, pn: 0 };
        let mut buf = Vec::new();
        encode(&h, &Frame::Ack(a), &mut buf);
        // flags at 20 + 32; SACK count; then ACE and EE0B, ECEB, EE1B (docs/udp-wire.md).
        let flags_at = HEADER_BYTES + 32;
        assert_eq!(buf[flags_at], FLAG_ACCECN | FLAG_ACCECN_OPTION);
        assert_eq!(&buf[flags_at + 2..], &[6, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(buf.len(), HEADER_BYTES + 34 + ACCECN_ACK_BYTES);
        // ACE is 3 bits: 8 is refused.
        let mut bad = buf.clone();
        bad[flags_at + 2] = 8;
        assert_eq!(decode(&bad), Err(DecodeError::Invalid("ACE beyond 3 bits")));
        // The option flag without AccECN is refused; so is an unknown flag bit.
        let mut bad = buf.clone();
        bad[flags_at] = FLAG_ACCECN_OPTION;
        assert!(decode(&bad).is_err());
        bad[flags_at] = 0x08;
        assert_eq!(decode(&bad), Err(DecodeError::Invalid("unknown ACK flags")));
        // Without the option flag the counters are bytes left over.
        let mut bad = buf.clone();
        bad[flags_at] = FLAG_ACCECN;
        assert!(decode(&bad).is_err());
        bad.truncate(flags_at + 3);
        assert!(matches!(decode(&bad), Ok((_, Frame::Ack(AckFrame { accecn: Some(AccEcnFeedback { ace: 6, option: None }), .. })))));
        // A STREAM_OFFER's ECN byte: 1 to 3; anything else, or two bytes, is refused.
        let offer = Frame::StreamOffer { cookie: [0; 16], stream_bytes: 1, mss_bytes: 1000, flavor: "prague", ecn: Some(EcnFeedback::AccEcn), quic: None };
        encode(&Header { version: VERSION, kind: kind::STREAM_OFFER, conn_id: 0, pn: 0 }, &offer, &mut buf);
        assert_eq!(buf.last(), Some(&3));
        for v in [0u8, 4, 255] {
            *buf.last_mut().unwrap() = v;
            assert_eq!(decode(&buf), Err(DecodeError::Invalid("unknown ECN feedback")));
        }
        *buf.last_mut().unwrap() = 1;
        buf.push(1);
        assert!(decode(&buf).is_err());
    }

    #[test]
    fn other_versions_are_named_and_version_mismatch_decodes_from_any_version() {
        let mut buf = Vec::new();
        let h = Header { version: 9, kind: kind::PING, conn_id: 1, pn: 0 };
        encode(&h, &Frame::Ping, &mut buf);
        assert_eq!(decode(&buf), Err(DecodeError::UnknownVersion(9)));
        let h = Header { version: 9, kind: kind::VERSION_MISMATCH, conn_id: 1, pn: 0 };
        encode(&h, &Frame::VersionMismatch { supported: vec![9] }, &mut buf);
        assert!(matches!(decode(&buf), Ok((_, Frame::VersionMismatch { .. }))));
    }

    #[test]
    fn random_and_mutated_bytes_never_panic() {
        // SplitMix64 as the byte source: deterministic, no dependency.
        let mut x = 0x1234_5678u64;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let mut seeds = Vec::new();
        for f in [
            Frame::Accept { stream_bytes: 1, rwnd_bytes: 2, held: vec![(0, 1)] },
            Frame::Data { offset: 1, ts_val_ns: 2, flags: 0, payload: &[9; 40] },
            Frame::Ack(AckFrame {
                ack: 1,
                rwnd_bytes: 1,
                ts_ecr_ns: 0,
                ts_recv_ns: 0,
                flags: 0,
                sack: [(1, 2); 3],
                sack_count: 3,
                accecn: Some(AccEcnFeedback { ace: 3, option: Some(AccEcnOption { e0b: 1, ceb: 2, e1b: 3 }) }),
            }),
            Frame::QuicData { pn: 3, offset: 9, flags: FLAG_ECT, payload: &[9; 40] },
            Frame::QuicAck(Box::new(quic_ack(&[(30, 40), (20, 28), (5, 9)], Some((1, 2, 3))))),
            Frame::StreamOffer { cookie: [1; 16], stream_bytes: 5, mss_bytes: 1000, flavor: "cubic", ecn: None, quic: Some(quic_offer()) },
        ] {
            let mut buf = Vec::new();
            encode(&Header { version: VERSION, kind: kind_of(&f), conn_id: 0, pn: 0 }, &f, &mut buf);
            seeds.push(buf);
        }
        let mut accepted = 0;
        for i in 0..200_000u64 {
            let mut buf = seeds[(i % seeds.len() as u64) as usize].clone();
            let flips = 1 + next() % 4;
            for _ in 0..flips {
                let at = (next() % buf.len() as u64) as usize;
                buf[at] = next() as u8;
            }
            buf.truncate((next() % (buf.len() as u64 + 1)) as usize);
            accepted += usize::from(decode(&buf).is_ok());
            let len = (next() % 64) as usize;
            let mut raw: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if raw.len() >= 3 {
                raw[..3].copy_from_slice(&[b'C', b'U', VERSION]);
            }
            let _ = decode(&raw);
        }
        // The mutations leave some packets valid: the decoder is exercised past the header.
        assert!(accepted > 0);
    }
}
