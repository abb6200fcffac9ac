//! Sans-IO reliable transport for ccarena.
//!
//! A [`Sender`] and a [`Receiver`] are state machines that never read a clock and never touch a
//! socket or a simulator: the caller passes the current time and each arriving segment or ACK in,
//! and asks what to send now (`poll_transmit`/`poll_ack`) and when to call back
//! (`poll_timeout`/`handle_timeout`), in the style of quinn-proto and smoltcp. The simulator drives
//! them with simulated time; a UDP driver can drive the same code with a real clock.
//!
//! Modules, one thing each:
//!
//! - [`segment`]: what travels between the two ends (plain `Copy` headers, no payload).
//! - [`sender`]: the sending side and its recovery state machine.
//! - [`receiver`]: reassembly, ACK policy, SACK blocks, timestamp and ECN echo (classic, DCTCP,
//!   Accurate ECN).
//! - [`accecn`]: the sender's decoding of Accurate ECN feedback (RFC 9768).
//! - [`counters`]: the packet and byte totals QUIC's and UDT's stats share.
//! - [`rtt`]: RFC 6298 RTT estimator and RTO.
//! - [`recovery`]: the loss-recovery modes and their window arithmetic (PRR, NewReno).
//! - `rack` (private): RACK time-based loss detection state (RFC 8985 §6).
//! - [`rate`]: delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation).
//! - [`pacing`]: spacing transmissions at the controller's pacing rate.
//! - `window` (private): flow control — the peer's receive window and the send buffer.
//! - `scoreboard` (private): outstanding segments and SACK state, O(1) pipe.
//! - [`udt`]: UDT (draft-gg-udt-03), a separate reliable transport over datagrams with its own
//!   packets, NAKs and rate-based congestion control, in the same sans-IO style.
//!
//! Sequence numbers are `u64` byte offsets from 0 and never wrap. Not implemented: connection
//! setup and teardown, zero-window probing (the receiving application reads at once), Nagle, limited transmit
//! (RFC 3042), F-RTO (RFC 5682), D-SACK outside the `linux` recovery mode (the receiver sends it
//! when configured to; only `linux` reads it), detection of lost
//! retransmissions without SACK (they wait for the RTO), cwnd restart after idle (RFC 5681 §4.1),
//! receiver reneging, ECN and AccECN negotiation (both ends are configured alike: [`SenderEcn`]
//! and [`EcnMode`]) with AccECN's fallbacks and its mangling and zeroing tests (RFC 9768
//! §3.2.2.3–§3.2.2.4).

#![warn(missing_docs)]

pub mod accecn;
pub mod counters;
pub mod mptcp;
pub mod ecn_choice;
pub mod pacing;
pub mod quic;
mod rack;
pub mod rate;
pub mod receiver;
pub mod recovery;
pub mod rtt;
mod scoreboard;
pub mod segment;
pub mod sender;
pub mod udt;
mod window;

pub use counters::{PacketCounters, ReceivedPacketCounters};
pub use ecn_choice::flow_ecn_mode;
pub use receiver::{EcnMode, RcvBufAutotuning, Receiver, ReceiverConfig, ReceiverStats, SackCompression};
pub use recovery::{ParseRecoveryModeError, RecoveryMode, ALL_RECOVERY_MODES};
pub use segment::{AccEcnFeedback, AccEcnOption, AckSegment, DataSegment, Ecn, SackBlock, MAX_SACK_BLOCKS};
pub use sender::{AckOutcome, ConfigError, Sender, SenderConfig, SenderEcn, SenderStats};
