//! Sans-IO reliable transport for ccarena.
//!
//! A [`Sender`] and a [`Receiver`] are state machines that never read a clock and never touch a
//! socket or a simulator: the caller passes the current time and each arriving segment or ACK in,
//! and asks what to send now (`poll_transmit`/`poll_ack`) and when to call back
//! (`poll_timeout`/`handle_timeout`), in the style of quinn-proto and smoltcp. The simulator drives
//! them with simulated time; a UDP driver can drive the same code with a real clock.

pub mod segment;

pub use segment::{AckSegment, DataSegment, SackBlock, MAX_SACK_BLOCKS};
