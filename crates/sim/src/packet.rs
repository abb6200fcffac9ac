//! Packets: small plain `Copy` structs with header fields and no payload bytes.

use ccarena_cc::SimTime;
use ccarena_transport::udt::{ToReceiver, ToSender};
use ccarena_transport::{AckSegment, DataSegment};

/// What a packet carries.
#[derive(Clone, Copy, Debug)]
pub enum Payload {
    /// A TCP data segment, sender to receiver.
    Data(DataSegment),
    /// A TCP acknowledgment, receiver to sender.
    Ack(AckSegment),
    /// A UDP datagram with its sequence number in the flow.
    Datagram {
        /// Datagram index within its flow, from 0.
        seq: u64,
    },
    /// A UDT data packet or ACK2, sender to receiver.
    UdtToReceiver(ToReceiver),
    /// A UDT ACK or NAK, receiver to sender.
    UdtToSender(ToSender),
}

/// A packet in the network.
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Index of the flow it belongs to.
    pub flow: u32,
    /// Destination host index.
    pub dst: u32,
    /// Size on the wire, bytes (payload + headers).
    pub size_bytes: u32,
    /// When it entered the queue it is in now (for sojourn time).
    pub enqueued_at: SimTime,
    /// Headers.
    pub payload: Payload,
}
