//! The packet and byte counters that the transports counting in packets (QUIC and UDT) share,
//! so callers can read them without knowing which transport's stats they hold.

use crate::quic::{QuicReceiverStats, QuicSenderStats};
use crate::udt::{UdtReceiverStats, UdtSenderStats};

/// A sender's totals, retransmissions included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketCounters {
    /// Payload bytes sent, retransmissions included (bytes).
    pub bytes_sent: u64,
    /// Payload bytes sent again after being lost (bytes).
    pub bytes_retransmitted: u64,
    /// Packets sent, retransmissions included (packets; QUIC's count its PING probes too).
    pub packets_sent: u64,
    /// Packets carrying retransmitted payload (packets).
    pub packets_retransmitted: u64,
}

/// A receiver's totals, duplicates included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceivedPacketCounters {
    /// Packets received, duplicates included (packets).
    pub packets_received: u64,
    /// Payload bytes received that had arrived before (bytes).
    pub duplicate_bytes: u64,
}

impl UdtSenderStats {
    /// The sent and retransmitted totals (bytes and packets).
    pub fn packet_counters(&self) -> PacketCounters {
        PacketCounters {
            bytes_sent: self.bytes_sent,
            bytes_retransmitted: self.bytes_retransmitted,
            packets_sent: self.packets_sent,
            packets_retransmitted: self.packets_retransmitted,
        }
    }
}

impl QuicSenderStats {
    /// The sent and retransmitted totals (bytes and packets).
    pub fn packet_counters(&self) -> PacketCounters {
        PacketCounters {
            bytes_sent: self.bytes_sent,
            bytes_retransmitted: self.bytes_retransmitted,
            packets_sent: self.packets_sent,
            packets_retransmitted: self.packets_retransmitted,
        }
    }
}

impl UdtReceiverStats {
    /// The received (packets) and duplicate (bytes) totals.
    pub fn packet_counters(&self) -> ReceivedPacketCounters {
        ReceivedPacketCounters { packets_received: self.packets_received, duplicate_bytes: self.duplicate_bytes }
    }
}

impl QuicReceiverStats {
    /// The received (packets) and duplicate (bytes) totals.
    pub fn packet_counters(&self) -> ReceivedPacketCounters {
        ReceivedPacketCounters { packets_received: self.packets_received, duplicate_bytes: self.duplicate_bytes }
    }
}
