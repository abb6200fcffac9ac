//! What travels between sender and receiver: plain, `Copy` header structs with no payload bytes.

use ccarena_cc::SimTime;

/// Most SACK blocks an ACK carries (RFC 2018 §3: three when timestamps are in use).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A data segment: bytes `[seq, seq + len)` of the stream. Sequence numbers are 64-bit byte offsets
/// from the start of the stream, so they never wrap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSegment {
    /// First byte's offset in the stream.
    pub seq: u64,
    /// Payload length, bytes.
    pub len: u32,
    /// Sender's timestamp at transmission (RFC 7323 TSval, in the sender's clock).
    pub ts_val: SimTime,
    /// ECN-capable transport (ECT(0)) codepoint set (RFC 3168).
    pub ect: bool,
    /// Congestion Experienced: set by a queue that marks instead of dropping.
    pub ce: bool,
    /// Congestion Window Reduced flag (RFC 3168 §6.1.2).
    pub cwr: bool,
    /// This is a retransmission (for counting; receivers do not look at it).
    pub retransmit: bool,
}

impl DataSegment {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
}

/// A SACK block `[start, end)` (RFC 2018).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    /// First byte received.
    pub start: u64,
    /// One past the last byte received.
    pub end: u64,
}

/// An acknowledgment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSegment {
    /// Cumulative ACK: every byte below this offset has been received in order.
    pub ack: u64,
    /// SACK blocks; the first `sack_count` are valid, the first one covers the segment that
    /// triggered this ACK (RFC 2018 §4).
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    /// How many entries of `sack` are valid.
    pub sack_count: u8,
    /// Echo of a TSval per RFC 7323 §4.3 (the earliest unacknowledged segment's, for delayed ACKs).
    pub ts_ecr: SimTime,
    /// Receiver's clock when the echoed segment arrived (for one-way delay; LEDBAT, TCP-LP).
    pub ts_recv: SimTime,
    /// ECN-Echo (RFC 3168 §6.1.3; per RFC 8257 §3.2 for DCTCP receivers).
    pub ece: bool,
    /// Receive window (RFC 9293 §3.8.6), bytes above `ack` the receiver can take;
    /// `u64::MAX` when the receiver's buffer is unlimited.
    pub rwnd_bytes: u64,
}

impl AckSegment {
    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_count as usize]
    }
}
