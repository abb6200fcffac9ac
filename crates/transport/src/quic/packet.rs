//! What a QUIC connection's two ends exchange, as plain headers with no payload bytes: a 1-RTT
//! packet carrying one STREAM frame (sender to receiver), and a packet carrying an ACK frame with
//! the flow-control credit (receiver to sender).
//!
//! Sizes on the wire follow RFC 9000 with the common encodings: a short header of 1 flag byte, an
//! 8-byte connection ID and a 2-byte packet number (§17.3.1), a 16-byte AEAD tag (RFC 9001 §5.3,
//! AES-GCM), a STREAM frame header with stream ID, offset and length (§19.8) and an ACK frame of
//! type, largest acknowledged, delay, range count and first range, plus a gap and a length per
//! further range (§19.3), each a variable-length integer (§16) of the sizes below.

use ccarena_cc::{Duration, SimTime};

use crate::segment::Ecn;

/// IPv4 (20) and UDP (8) headers.
pub const IP_UDP_HEADER_BYTES: u32 = 28;
/// Short header (RFC 9000 §17.3.1): flags 1, destination connection ID 8, packet number 2.
pub const SHORT_HEADER_BYTES: u32 = 11;
/// AEAD authentication tag (RFC 9001 §5.3: AES-128-GCM's 16 bytes).
pub const AEAD_TAG_BYTES: u32 = 16;
/// STREAM frame header (RFC 9000 §19.8): type 1, stream ID 1, offset 4, length 2.
pub const STREAM_FRAME_HEADER_BYTES: u32 = 8;
/// Every header and trailer a packet carrying stream data adds to its stream bytes on the wire.
pub const DATA_OVERHEAD_BYTES: u32 = IP_UDP_HEADER_BYTES + SHORT_HEADER_BYTES + AEAD_TAG_BYTES + STREAM_FRAME_HEADER_BYTES;
/// ACK frame with one range (RFC 9000 §19.3): type 1, largest acknowledged 4, ACK delay 2, range
/// count 1, first range 2.
pub const ACK_FRAME_BASE_BYTES: u32 = 10;
/// Each further ACK range: gap 2 and length 2.
pub const ACK_RANGE_BYTES: u32 = 4;
/// The ECN counts of an ACK_ECN frame (RFC 9000 §19.3.2): ECT(0), ECT(1) and CE, 2 bytes each.
pub const ECN_COUNTS_BYTES: u32 = 6;
/// A MAX_DATA or MAX_STREAM_DATA frame (RFC 9000 §19.9, §19.10): type 1 (+ stream ID 1), 4-byte
/// maximum; counted when the ACK's packet raises the credit.
pub const MAX_DATA_FRAME_BYTES: u32 = 6;
/// Bytes of a packet that carries an ACK frame of one range and nothing else.
pub const ACK_PACKET_BASE_BYTES: u32 = IP_UDP_HEADER_BYTES + SHORT_HEADER_BYTES + AEAD_TAG_BYTES + ACK_FRAME_BASE_BYTES;

/// Most ranges an ACK frame carries; older ranges are left out (RFC 9000 §13.2.4 lets a receiver
/// limit them), so the sender may declare a packet acknowledged only in a dropped range lost.
pub const MAX_ACK_RANGES: usize = 32;

/// A 1-RTT packet from the data sender: packet number `pn` (never reused, RFC 9000 §12.3) with one
/// STREAM frame of bytes `[offset, offset + len)` of the connection's one stream. A probe with no
/// new or lost data to carry sends a PING (`len` 0), still ack-eliciting (RFC 9002 §6.2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuicPacket {
    /// Packet number.
    pub pn: u64,
    /// Stream offset of the first byte carried.
    pub offset: u64,
    /// Stream bytes carried (0 for a PING).
    pub len: u32,
    /// When the sender sent it (the sender's clock; only the sender reads it, through its own
    /// record of the packet).
    pub sent_at: SimTime,
    /// The IP ECN field: what the sender set, turned into CE by a queue that marked it.
    pub ecn: Ecn,
    /// The packet carries stream data an earlier packet carried: data declared lost, or the
    /// oldest unacknowledged data a probe sends again (RFC 9002 §6.2.4). For counting; the
    /// receiver does not look at it.
    pub retransmit: bool,
}

impl QuicPacket {
    /// One past the last stream byte carried.
    pub fn end(&self) -> u64 {
        self.offset + self.len as u64
    }
}

/// A range of packet numbers `[smallest, largest]`, both included (as RFC 9000 §19.3.1 writes
/// ACK ranges).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PnRange {
    /// Smallest packet number in the range.
    pub smallest: u64,
    /// Largest packet number in the range.
    pub largest: u64,
}

/// The ECN counts of an ACK_ECN frame (RFC 9000 §19.3.2): packets received with each codepoint
/// in the packet number space, cumulative since the connection started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnCounts {
    /// Packets received ECT(0).
    pub ect0: u64,
    /// Packets received ECT(1).
    pub ect1: u64,
    /// Packets received CE.
    pub ce: u64,
}

/// A packet from the data receiver: an ACK frame (RFC 9000 §19.3) and the flow-control credit
/// (MAX_DATA and MAX_STREAM_DATA, §19.9–§19.10). Not ack-eliciting (§13.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFrame {
    /// Largest packet number acknowledged (`ranges[0].largest`).
    pub largest: u64,
    /// Time from the largest acknowledged packet's arrival to this ACK's sending (§19.3; the
    /// `ack_delay_exponent` scaling is not modelled: the full nanoseconds are carried).
    pub ack_delay: Duration,
    /// Acknowledged ranges, largest first, disjoint and not adjacent; `range_count` are valid.
    pub ranges: [PnRange; MAX_ACK_RANGES],
    /// How many of `ranges` are valid (at least 1).
    pub range_count: u8,
    /// ECN counts, when the connection uses ECN (an ACK_ECN frame).
    pub ecn: Option<EcnCounts>,
    /// When the largest acknowledged packet arrived, in the receiver's clock
    /// (draft-smith-quic-receive-ts: a receive timestamp for the largest acknowledged packet),
    /// so delay-based controllers (LEDBAT, TCP-LP) get their one-way delay as TCP's timestamps
    /// give it.
    pub largest_received_at: SimTime,
    /// MAX_DATA: the connection's flow-control limit, an absolute stream offset; `u64::MAX` when
    /// unlimited.
    pub max_data: u64,
    /// MAX_STREAM_DATA for the one stream; `u64::MAX` when unlimited.
    pub max_stream_data: u64,
    /// This packet carries a MAX_DATA or MAX_STREAM_DATA frame that raises the credit (for its
    /// size on the wire).
    pub credit_update: bool,
}

impl AckFrame {
    /// A frame acknowledging nothing (no valid range), to be filled in
    /// ([`crate::quic::QuicReceiver::poll_ack_into`]).
    pub const EMPTY: AckFrame = AckFrame {
        largest: 0,
        ack_delay: Duration::ZERO,
        ranges: [PnRange { smallest: 0, largest: 0 }; MAX_ACK_RANGES],
        range_count: 0,
        ecn: None,
        largest_received_at: SimTime::ZERO,
        max_data: u64::MAX,
        max_stream_data: u64::MAX,
        credit_update: false,
    };

    /// The valid ranges, largest first.
    pub fn ranges(&self) -> &[PnRange] {
        &self.ranges[..self.range_count as usize]
    }

    /// Bytes of the packet carrying this frame on the wire.
    pub fn wire_bytes(&self) -> u32 {
        ACK_PACKET_BASE_BYTES
            + ACK_RANGE_BYTES * (self.range_count as u32).saturating_sub(1)
            + if self.ecn.is_some() { ECN_COUNTS_BYTES } else { 0 }
            + if self.credit_update { MAX_DATA_FRAME_BYTES } else { 0 }
    }
}
