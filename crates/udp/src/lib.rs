//! ccarena's reliable transport on real UDP sockets.
//!
//! The same sans-IO [`ccarena_transport::Sender`] and [`ccarena_transport::Receiver`] the
//! simulator runs, with every TCP flavor of the catalogue, driven over a UDP socket on the
//! monotonic clock: scenario flows for the `udp` backend ([`send_stream`], [`Sink`]; also with the
//! QUIC transport's RFC 9002 sender and RFC 9000 receiver, in this crate's frames, not QUIC's wire
//! format) and a file transfer ([`send_file`], [`Receiver`]) with a stateless-cookie
//! handshake, SHA-256 verification and resume. The wire format is in `docs/udp-wire.md`.
//!
//! Modules, one thing each; the file transfer's are `file_*`, the `udp` backend's scenario flows'
//! `scenario_*`, and what both share is named for what it is:
//!
//! - [`wire`]: packet encoding and decoding (never panics).
//! - [`guard`]: stateless cookies, the handshake rate limit, the anti-replay window.
//! - [`ranges`]: held/missing byte ranges and the stream ↔ file map (resume).
//! - [`batch`]: many datagrams per system call (`sendmmsg` with UDP GSO, `recvmmsg` with GRO),
//!   each with its IP ECN field (sent with `IP_TOS`/`IPV6_TCLASS`, read with
//!   `IP_RECVTOS`/`IPV6_RECVTCLASS`).
//! - [`net`]: the non-blocking, batching socket with `ppoll` waits; the loss/duplicate/reorder shim.
//! - [`clock`]: `CLOCK_MONOTONIC`, the sample grid, the keepalive period.
//! - [`limit`]: a user's bandwidth limit (`--limit-rate`): a token bucket sent from in batches.
//! - [`udt`]: UDT4's settings, and UDT's ACK and NAK from their wire frames.
//! - `session`: the connection as a sender sees it: connect, handshake, send, receive, close.
//! - `tx`: the sending half either sender drives, TCP-like, UDT or QUIC (scenario flows), set up
//!   from one `TxSetup`.
//! - `rx`: the receiving half of a connection, TCP-like, UDT or QUIC, and its feedback frames.
//! - [`service`]: what both receiving services share: the socket's stateless front door
//!   (version replies, cookies, rate limit, refusals), the [`Counters`], the read loop.
//! - [`file_send`]: the file transfer's sender (`ccarena send`).
//! - [`file_recv`]: the file transfer's receiving service (`ccarena recv`: socket, connection
//!   table), and [`file_recv_conn`]: one incoming transfer on it.
//! - [`scenario_send`]: a scenario flow's sender (a synthetic stream, sampled on the run's grid).
//! - [`scenario_sink`]: a scenario flow's receiver (counts what arrives, writes nothing).
//! - [`store`]: where received files go, safely.
//! - [`record`]: the per-transfer record (goodput, retransmissions, RTT percentiles, cwnd).
//! - [`sha256`]: SHA-256 (FIPS 180-4).
//! - [`error`]: what can go wrong, one line each.
//!
//! ECN (RFC 3168, RFC 9331's ECT(1), RFC 9768's Accurate ECN): a scenario flow's datagrams carry
//! the codepoint its transport sets in their IP header, the sink reads what arrived (CE from a
//! marking queue such as the relay's DualPI2) and feeds it back in its ACKs (ECE, or AccECN's
//! ACE and byte counters); file transfers run Not-ECT.
//!
//! Not yet: D-SACK (the receiver does not know the sender's recovery mode), authentication or encryption
//! (an on-path attacker who sees the connection id can inject packets).

#![warn(missing_docs)]

pub mod batch;
pub mod clock;
pub mod error;
pub mod file_recv;
pub mod file_recv_conn;
pub mod file_send;
pub mod guard;
pub mod limit;
pub mod net;
pub mod ranges;
pub mod record;
mod rx;
pub mod scenario_send;
pub mod scenario_sink;
mod session;
pub mod service;
pub mod sha256;
pub mod store;
mod tx;
pub mod udt;
pub mod wire;

pub use error::TransferError;
pub use file_recv::{Event, Receiver, ReceiverOptions};
pub use file_recv_conn::ReceivedRecord;
pub use file_send::{send_file, Progress, SendOptions};
pub use net::Impairment;
pub use record::{RttSummary, TransferRecord};
pub use rx::MAX_OOO_RANGES;
pub use scenario_send::{send_stream, StreamOptions, StreamRecord};
pub use scenario_sink::{Sink, SinkOptions, SinkRecord};
pub use service::Counters;
