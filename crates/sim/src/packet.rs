//! Packets: small structs with header fields and no payload bytes.
//!
//! A packet is moved several times per hop (into a queue, out of it, into a link's pipe, out
//! of it), so it is kept small: 48 bytes. The bulky headers (a TCP ACK with its SACK blocks, a
//! UDT ACK or NAK) are boxed; a data segment, the bulk of the traffic, is inline.

use ccarena_transport::mptcp::{DssAck, DssData};
use ccarena_transport::quic::{AckFrame, QuicPacket};
use ccarena_transport::udt::{ToReceiver, ToSender};
use ccarena_transport::{AckSegment, DataSegment, Ecn};

/// What a packet carries.
#[derive(Clone, Debug)]
pub enum Payload {
    /// A TCP data segment, sender to receiver.
    Data(DataSegment),
    /// A TCP acknowledgment, receiver to sender (boxed: with its three SACK blocks it is 88
    /// bytes, and ACKs are a third of the packets at most).
    Ack(Box<AckSegment>),
    /// A UDP datagram with its sequence number in the flow.
    Datagram {
        /// Datagram index within its flow, from 0.
        seq: u64,
    },
    /// A UDT data packet or ACK2, sender to receiver.
    UdtToReceiver(ToReceiver),
    /// A UDT ACK or NAK, receiver to sender (boxed, and the box reused, as MPTCP's: a NAK's
    /// loss ranges are 72 bytes).
    UdtToSender(Box<ToSender>),
    /// An MPTCP subflow's data segment with its DSS mapping (boxed, and the box reused, to keep
    /// every packet at 48 bytes).
    MptcpData(Box<DssData>),
    /// An MPTCP subflow's ACK with the DATA_ACK.
    MptcpAck(Box<DssAck>),
    /// A QUIC packet with stream data, sender to receiver (boxed and reused, as MPTCP's).
    QuicData(Box<QuicPacket>),
    /// A QUIC packet with an ACK frame and flow-control credit, receiver to sender.
    QuicAck(Box<AckFrame>),
}

impl Payload {
    /// The MPTCP subflow the packet travels on; 0 for every single-path packet. Each subflow
    /// has its own 5-tuple, so ECMP hashes each separately.
    #[inline]
    pub fn subflow(&self) -> u8 {
        match self {
            Payload::MptcpData(d) => d.subflow,
            Payload::MptcpAck(a) => a.subflow,
            _ => 0,
        }
    }

    /// The header travels in a box of its flow's pool (or, a TCP ACK's, of the run's;
    /// `crate::pool`).
    #[inline]
    pub fn is_boxed(&self) -> bool {
        !matches!(self, Payload::Data(_) | Payload::Datagram { .. } | Payload::UdtToReceiver(_))
    }

    /// Carry this header on in `local`, a box of the same kind from this thread's pool, and
    /// return the box it came in (holding `local`'s old contents): a header that crossed into
    /// another part of a split run (`crate::parallel`) travels on in a box that part's cache
    /// holds, and the box it came in goes home. `local` of another kind is returned as it is.
    pub fn move_into(&mut self, local: Payload) -> Payload {
        fn swap<T>(theirs: &mut Box<T>, mut mine: Box<T>) -> Box<T> {
            std::mem::swap(&mut **theirs, &mut *mine);
            std::mem::swap(theirs, &mut mine);
            mine
        }
        match (self, local) {
            (Payload::Ack(t), Payload::Ack(m)) => Payload::Ack(swap(t, m)),
            (Payload::UdtToSender(t), Payload::UdtToSender(m)) => Payload::UdtToSender(swap(t, m)),
            (Payload::MptcpData(t), Payload::MptcpData(m)) => Payload::MptcpData(swap(t, m)),
            (Payload::MptcpAck(t), Payload::MptcpAck(m)) => Payload::MptcpAck(swap(t, m)),
            (Payload::QuicData(t), Payload::QuicData(m)) => Payload::QuicData(swap(t, m)),
            (Payload::QuicAck(t), Payload::QuicAck(m)) => Payload::QuicAck(swap(t, m)),
            (_, other) => other,
        }
    }

    /// The IP ECN field of a packet that can carry one: TCP data segments (single-path or an
    /// MPTCP subflow's) and QUIC packets with stream data. ACKs and datagrams are Not-ECT
    /// (RFC 3168 §6.1.4; a QUIC ACK-only packet is sent Not-ECT here, RFC 9000 §13.4.1 leaves it
    /// to the sender).
    #[inline]
    pub fn ecn(&self) -> Ecn {
        match self {
            Payload::Data(seg) => seg.ecn,
            Payload::MptcpData(d) => d.seg.ecn,
            Payload::QuicData(q) => q.ecn,
            _ => Ecn::NotEct,
        }
    }

    /// [`Payload::ecn`], to change (a queue marking CE); `None` for a packet with no ECN field.
    #[inline]
    pub fn ecn_mut(&mut self) -> Option<&mut Ecn> {
        match self {
            Payload::Data(seg) => Some(&mut seg.ecn),
            Payload::MptcpData(d) => Some(&mut d.seg.ecn),
            Payload::QuicData(q) => Some(&mut q.ecn),
            _ => None,
        }
    }
}

/// A packet in the network. Not `Copy` (its payload may own a box): a link that duplicates a
/// packet clones it.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Index of the flow it belongs to.
    pub flow: u32,
    /// Destination host index.
    pub dst: u32,
    /// Size on the wire, bytes (payload + headers).
    pub size_bytes: u32,
    /// Headers.
    pub payload: Payload,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size every queue, pipe and hand-over moves: a field or variant that grows it past
    /// 48 bytes costs every hop (issue 16 item 7).
    #[test]
    fn a_packet_is_at_most_48_bytes() {
        assert!(std::mem::size_of::<Packet>() <= 48, "Packet is {} bytes", std::mem::size_of::<Packet>());
        assert_eq!(std::mem::size_of::<Option<Packet>>(), std::mem::size_of::<Packet>());
    }
}
