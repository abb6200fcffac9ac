//! What travels between sender and receiver: plain, `Copy` header structs with no payload bytes.

use ccarena_cc::SimTime;

/// The IP header's two-bit ECN field (RFC 3168 §5), as the sender set it or a queue changed it.
///
/// Not-ECT: not ECN-capable. ECT(0) and ECT(1): ECN-capable; ECT(1) is also the L4S identifier
/// (RFC 9331 §5.1) that a scalable sender sets. CE: Congestion Experienced, set by a queue that
/// marks an ECN-capable packet instead of dropping it (RFC 3168 §5); a CE packet stays
/// ECN-capable and, for a dual-queue AQM, stays L4S-classified (RFC 9331 §5.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// `00`: not ECN-capable.
    #[default]
    NotEct,
    /// `01`: ECN-capable, the L4S identifier (RFC 9331 §5.1).
    Ect1,
    /// `10`: ECN-capable, classic (RFC 3168 §5).
    Ect0,
    /// `11`: Congestion Experienced.
    Ce,
}

impl Ecn {
    /// The two bits as they sit in the IP header (RFC 3168 §5: Not-ECT 0, ECT(1) 1, ECT(0) 2,
    /// CE 3).
    pub const fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }

    /// The codepoint of the low two bits of `bits` (the rest are ignored: a TOS or traffic
    /// class byte may be passed whole).
    pub const fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// ECN-capable: ECT(0), ECT(1), or already CE (a queue may mark it again, which changes
    /// nothing, instead of dropping it; RFC 3168 §5).
    pub const fn is_ect(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }

    /// Congestion Experienced.
    pub const fn is_ce(self) -> bool {
        matches!(self, Ecn::Ce)
    }

    /// Carries the L4S identifier: ECT(1) or CE (RFC 9331 §5.1: a CE packet was probably sent
    /// ECT(1), since L4S queues mark far more often than classic ones, so it is treated as L4S).
    pub const fn is_l4s(self) -> bool {
        matches!(self, Ecn::Ect1 | Ecn::Ce)
    }

    /// The codepoint after a queue marks the packet: ECT(0), ECT(1) and CE become CE; Not-ECT
    /// stays Not-ECT (a queue drops a Not-ECT packet instead, RFC 3168 §5).
    #[must_use]
    pub const fn marked(self) -> Ecn {
        match self {
            Ecn::NotEct => Ecn::NotEct,
            _ => Ecn::Ce,
        }
    }
}

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
    /// The IP ECN field: what the sender set (Not-ECT, ECT(0) or ECT(1)), turned into CE by a
    /// queue that marked it.
    pub ecn: Ecn,
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

/// Modulus of the ACE field: it carries the receiver's CE packet counter mod 8 (RFC 9768 §3.2.2,
/// Appendix A.1's `DIVACE`).
pub const ACE_MODULUS: u64 = 8;

/// Modulus of the AccECN option's byte counter fields: 24 bits each (RFC 9768 §3.2.3,
/// Appendix A.1's `DIVOPT`).
pub const ACCECN_OPTION_MODULUS: u64 = 1 << 24;

/// What an ACK carries of Accurate ECN feedback (RFC 9768 §3.2): the ACE field, which takes over
/// the header's ECE, CWR and AE flags, and optionally the AccECN option's byte counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccEcnFeedback {
    /// The 3-bit ACE field: the receiver's CE packet counter r.cep mod 8 (RFC 9768 §3.2.2.2).
    /// Always below [`ACE_MODULUS`].
    pub ace: u8,
    /// The AccECN option, when the ACK carries one (RFC 9768 §3.2.3; an ACK may go without,
    /// e.g. for lack of option space or because a middlebox strips it).
    pub option: Option<AccEcnOption>,
}

/// The AccECN option's three byte counters (RFC 9768 §3.2.3.1): payload bytes the receiver has
/// received in packets of each codepoint, each mod 2^24 (below [`ACCECN_OPTION_MODULUS`]).
/// The receiver starts r.e0b and r.e1b at 1 and r.ceb at 0 (RFC 9768 §3.2.1), so the fields are
/// these counters' values, not bytes since the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccEcnOption {
    /// EE0B: r.e0b mod 2^24, bytes received ECT(0).
    pub e0b: u32,
    /// ECEB: r.ceb mod 2^24, bytes received CE.
    pub ceb: u32,
    /// EE1B: r.e1b mod 2^24, bytes received ECT(1).
    pub e1b: u32,
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
    /// ECN-Echo (RFC 3168 §6.1.3; per RFC 8257 §3.2 for DCTCP receivers). Always false from an
    /// AccECN receiver, whose feedback is in `accecn`.
    pub ece: bool,
    /// Accurate ECN feedback (RFC 9768 §3.2), from a receiver in [`crate::EcnMode::AccEcn`] or
    /// [`crate::EcnMode::AccEcnAceOnly`]; `None` from the others.
    pub accecn: Option<AccEcnFeedback>,
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
