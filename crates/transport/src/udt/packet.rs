//! What travels between a UDT sender and receiver (draft-gg-udt-03 §2): plain `Copy` headers, no
//! payload bytes. Sequence numbers count packets from 0 and never wrap (the draft's are 31-bit and
//! wrap; a simulated run never sends 2³¹ packets).

use ccarena_cc::{Duration, SimTime};

/// The sender sends packets 16n and 16n + 1 back to back as a packet pair, and the receiver
/// measures the link capacity from their arrival interval (draft-gg-udt-03 §6.1 step 5, §6.2
/// step 4; Gu 2009 §2.2: "UDT sends out a packet pair every 16 packets").
pub const PROBE_INTERVAL_PACKETS: u64 = 16;

/// A data packet: stream bytes `[offset, offset + len)` in packet `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataPacket {
    /// Packet sequence number, from 0.
    pub seq: u64,
    /// Offset of the first payload byte in the stream.
    pub offset: u64,
    /// Payload bytes.
    pub len: u32,
    /// The sender's clock when the packet left (the header's time stamp).
    pub timestamp: SimTime,
    /// A retransmission (for counting; the receiver does not look at it).
    pub retransmit: bool,
}

impl DataPacket {
    /// Offset one past the last payload byte.
    pub fn end(&self) -> u64 {
        self.offset + self.len as u64
    }
}

/// A full ACK (draft-gg-udt-03 §2.2, control type 0x2), sent every SYN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckPacket {
    /// ACK sequence number (the ACK2 that answers it carries the same).
    pub ack_seq: u64,
    /// Every packet below this sequence number has been received.
    pub ack_no: u64,
    /// The receiver's RTT estimate (from ACK/ACK2 pairs).
    pub rtt: Duration,
    /// The receiver's RTT variance estimate.
    pub rtt_var: Duration,
    /// Available receiver buffer, packets: the flow window.
    pub buffer_available_packets: u32,
    /// Packet arrival speed AS, packets/s; 0 when the receiver has no valid estimate.
    pub arrival_rate_pps: u32,
    /// Estimated link capacity B (packet pair), packets/s; 0 when unknown.
    pub link_capacity_pps: u32,
}

/// ACK2, the acknowledgment of an ACK (draft-gg-udt-03 §2.2, type 0x6), for the receiver's RTT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack2Packet {
    /// The ACK sequence number being acknowledged.
    pub ack_seq: u64,
}

/// Lost packets `[start, end)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LossRange {
    /// First lost packet.
    pub start: u64,
    /// One past the last lost packet.
    pub end: u64,
}

/// Loss ranges one NAK carries here; more are split over several NAK packets (the draft's NAK
/// has a variable-length list; a fixed array keeps packets `Copy` and small).
pub const MAX_NAK_RANGES: usize = 4;

/// A NAK, negative acknowledgment (draft-gg-udt-03 §2.2, type 0x3): packets reported lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NakPacket {
    /// Loss ranges; the first `count` are valid.
    pub ranges: [LossRange; MAX_NAK_RANGES],
    /// How many entries of `ranges` are valid.
    pub count: u8,
}

impl NakPacket {
    /// The valid loss ranges.
    pub fn ranges(&self) -> &[LossRange] {
        &self.ranges[..self.count as usize]
    }

    /// Bytes of loss information on the wire (draft-gg-udt-03 §6.4 compression): 4 for a single
    /// sequence number, 8 for a range (its first and last).
    pub fn loss_info_bytes(&self) -> u32 {
        self.ranges().iter().map(|r| if r.end - r.start == 1 { 4 } else { 8 }).sum()
    }

    /// NAK packets carrying `ranges`, [`MAX_NAK_RANGES`] at a time.
    pub fn pack(ranges: &[LossRange]) -> impl Iterator<Item = NakPacket> + '_ {
        ranges.chunks(MAX_NAK_RANGES).map(|chunk| {
            let mut nak = NakPacket::default();
            nak.ranges[..chunk.len()].copy_from_slice(chunk);
            nak.count = chunk.len() as u8;
            nak
        })
    }
}

/// What the sender sends to the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToReceiver {
    /// Data.
    Data(DataPacket),
    /// ACK2.
    Ack2(Ack2Packet),
}

/// What the receiver sends to the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToSender {
    /// A full ACK.
    Ack(AckPacket),
    /// A NAK.
    Nak(NakPacket),
}
