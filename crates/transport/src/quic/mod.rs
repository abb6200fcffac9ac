//! QUIC's loss detection and congestion control (RFC 9002) over its packet and ACK formats
//! (RFC 9000), as sans-IO endpoints: one bidirectional stream carrying a bulk transfer, in the
//! same style as the TCP [`crate::Sender`] and [`crate::Receiver`].
//!
//! What QUIC changes around a congestion controller, and what this module models:
//!
//! - Packet numbers are never reused (RFC 9000 §12.3): a retransmission is new stream frames in a
//!   new packet, so every ACK gives an unambiguous RTT sample (no Karn's rule).
//! - ACK frames carry up to [`MAX_ACK_RANGES`] ranges and the receiver's ACK delay, which the RTT
//!   estimator subtracts (RFC 9002 §5.3).
//! - The receiver acknowledges every second ack-eliciting packet or after `max_ack_delay`, at once
//!   on a gap or a CE mark (RFC 9000 §13.2.1–§13.2.2); the ACK-frequency extension
//!   (draft-ietf-quic-ack-frequency) changes the threshold and the reordering rule.
//! - Loss is declared by packet threshold (3) and time threshold (9/8 of the RTT) (RFC 9002 §6.1);
//!   a probe timeout (PTO, §6.2) replaces TCP's RTO and tail loss probe and does not collapse the
//!   window; persistent congestion (§7.6) does.
//! - The window reacts once per recovery period, which starts at the congestion event and ends
//!   when a packet sent after it is acknowledged (§7.3.2); the controller's `ssthresh` hook gives
//!   the new window. Every catalogue flavor plugs in through [`ccarena_cc::CongestionControl`].
//! - Pacing (§7.7) at the controller's rate, or at 1.25·cwnd/smoothed_rtt when it sets none.
//! - Flow control (RFC 9000 §4): connection (MAX_DATA) and stream (MAX_STREAM_DATA) credit, each
//!   bounding the stream offset the sender may send, like TCP's receive window.
//!
//! - [`packet`]: the packets and their sizes on the wire.
//! - [`sender`]: the data sender, [`QuicSender`].
//! - [`receiver`]: the data receiver, [`QuicReceiver`].
//! - [`rtt`]: the RTT estimator of RFC 9002 §5.
//!
//! Not modelled: the handshake (both ends start established, with 1-RTT keys), the Initial and
//! Handshake packet number spaces, 0-RTT, key updates, connection migration, stream and
//! connection limits on stream count, anti-amplification, packet coalescing, and the ACK-of-ACK
//! that lets a receiver forget old ranges (it keeps the newest [`MAX_ACK_RANGES`] instead).

pub mod packet;
pub mod receiver;
pub mod rtt;
pub mod sender;

pub use packet::{
    AckFrame, EcnCounts, PnRange, QuicPacket, ACK_PACKET_BASE_BYTES, DATA_OVERHEAD_BYTES, MAX_ACK_RANGES,
};
pub use receiver::{QuicReceiver, QuicReceiverStats};
pub use rtt::QuicRtt;
pub use sender::{QuicAckOutcome, QuicSender, QuicSenderStats};

use ccarena_cc::Duration;

use crate::sender::{ConfigError, SenderEcn};

/// kPacketThreshold (RFC 9002 §6.1.1, §A.2).
pub const PACKET_THRESHOLD: u64 = 3;
/// kTimeThreshold as a fraction: 9/8 (RFC 9002 §6.1.2, §A.2).
pub const TIME_THRESHOLD: (u64, u64) = (9, 8);
/// kGranularity (RFC 9002 §6.1.2, §A.2): 1 ms.
pub const GRANULARITY: Duration = Duration(1_000_000);
/// kInitialRtt (RFC 9002 §6.2.2, §A.2): 333 ms.
pub const INITIAL_RTT: Duration = Duration(333_000_000);
/// kPersistentCongestionThreshold (RFC 9002 §7.6.1, §B.1).
pub const PERSISTENT_CONGESTION_THRESHOLD: u64 = 3;
/// max_ack_delay's default (RFC 9000 §18.2): 25 ms.
pub const DEFAULT_MAX_ACK_DELAY: Duration = Duration(25_000_000);
/// The pacing gain N when the controller sets no pacing rate (RFC 9002 §7.7: "a value for N that
/// is small, but at least 1 (for example, 1.25)"), in quarters.
pub const PACING_GAIN_QUARTERS: u64 = 5;

/// How both ends of a QUIC connection are set up (the simulator runs one stack at both ends, so
/// the transport parameters each end would send the other are one struct).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuicConfig {
    /// Stream bytes per full packet (the max_datagram_size less [`DATA_OVERHEAD_BYTES`]'s QUIC
    /// part). At least 1.
    pub max_payload_bytes: u32,
    /// Initial congestion window, bytes (RFC 9002 §7.2: 10 packets, within
    /// [2, 14720 B / max_datagram_size] packets; the scenario's `initial_cwnd` gives it).
    pub initial_cwnd_bytes: u64,
    /// RTT assumed before the first sample (RFC 9002 §6.2.2: 333 ms).
    pub initial_rtt: Duration,
    /// The receiver's max_ack_delay transport parameter (RFC 9000 §18.2: 25 ms), which the sender
    /// adds to its PTO and uses to bound the ACK delay it subtracts from RTT samples.
    pub max_ack_delay: Duration,
    /// Ack-eliciting packets received before an ACK is sent at once (RFC 9000 §13.2.2: 2; the
    /// ACK-frequency extension's Ack-Eliciting Threshold + 1). At least 1.
    pub ack_eliciting_threshold: u32,
    /// Send an ACK at once when a packet arrives out of order (RFC 9000 §13.2.1) if a gap of at
    /// least this many packets is seen: 1 is RFC 9000's rule; 0 never (the ACK-frequency
    /// extension's Reordering Threshold of 0, draft-ietf-quic-ack-frequency §6.2).
    pub reordering_threshold: u32,
    /// The receiver's connection flow-control window (initial_max_data and each MAX_DATA it
    /// sends: what it has delivered plus this), bytes. `None`: unlimited.
    pub max_data_bytes: Option<u64>,
    /// The receiver's stream flow-control window (MAX_STREAM_DATA), bytes. `None`: unlimited.
    pub max_stream_data_bytes: Option<u64>,
    /// The sender's buffer, bytes: new stream data ends at most this far past the acknowledged
    /// prefix of the stream (a bulk application keeps the buffer full, as TCP's `sndbuf_bytes`).
    /// `None`: unlimited.
    pub sndbuf_bytes: Option<u64>,
    /// How the connection uses ECN (RFC 9000 §13.4; RFC 9002 §7.1): the codepoint on its packets
    /// ([`SenderEcn::codepoint`]) and whether the ACK's ECN counts are read.
    pub ecn: SenderEcn,
    /// Pace at 1.25·cwnd/smoothed_rtt when the controller sets no pacing rate (RFC 9002 §7.7);
    /// `false` sends whatever the window allows at once, as TCP without pacing does.
    pub pacing: bool,
}

impl QuicConfig {
    /// RFC 9002's and RFC 9000's defaults for stream payloads of `max_payload_bytes` with an
    /// initial window of 10 packets, no flow-control limit, no ECN, paced.
    pub fn new(max_payload_bytes: u32) -> QuicConfig {
        QuicConfig {
            max_payload_bytes,
            initial_cwnd_bytes: 10 * max_payload_bytes as u64,
            initial_rtt: INITIAL_RTT,
            max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            ack_eliciting_threshold: 2,
            reordering_threshold: 1,
            max_data_bytes: None,
            max_stream_data_bytes: None,
            sndbuf_bytes: None,
            ecn: SenderEcn::Off,
            pacing: true,
        }
    }

    /// The window below which persistent congestion and losses never take cwnd
    /// (kMinimumWindow, RFC 9002 §7.2: 2 packets).
    pub fn minimum_window_bytes(&self) -> u64 {
        2 * self.max_payload_bytes as u64
    }

    /// Check the fields' invariants.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first field out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field: &'static str, reason: &'static str| Err(ConfigError { field, reason });
        if self.max_payload_bytes == 0 {
            return bad("mss_bytes", "must leave at least 1 byte of stream data per QUIC packet");
        }
        if self.initial_cwnd_bytes < self.max_payload_bytes as u64 {
            return bad("initial_cwnd_packets", "must be at least 1 packet");
        }
        if self.initial_rtt == Duration::ZERO {
            return bad("quic.initial_rtt_ns", "must be positive");
        }
        if self.ack_eliciting_threshold == 0 {
            return bad("quic.ack_eliciting_threshold", "must be at least 1");
        }
        if self.max_data_bytes == Some(0) {
            return bad("rwnd_bytes", "a QUIC connection window must be positive");
        }
        if self.sndbuf_bytes.is_some_and(|b| b < self.max_payload_bytes as u64) {
            return bad("sndbuf_bytes", "must be at least one packet's stream bytes");
        }
        if self.max_stream_data_bytes == Some(0) {
            return bad("quic.max_stream_data_bytes", "must be positive");
        }
        Ok(())
    }
}
