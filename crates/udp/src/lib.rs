//! ccarena's reliable transport on real UDP sockets.
//!
//! The same sans-IO [`ccarena_transport::Sender`] and [`ccarena_transport::Receiver`] the
//! simulator runs, with every TCP flavor of the catalogue, driven over a UDP socket on the
//! monotonic clock: scenario flows for the `udp` backend ([`send_stream`], [`Sink`]) and a file transfer ([`send_file`], [`Receiver`]) with a stateless-cookie
//! handshake, SHA-256 verification and resume. The wire format is in `docs/udp-wire.md`.
//!
//! Modules, one thing each:
//!
//! - [`wire`]: packet encoding and decoding (never panics).
//! - [`guard`]: stateless cookies, the handshake rate limit, the anti-replay window.
//! - [`ranges`]: held/missing byte ranges and the stream ↔ file map (resume).
//! - [`batch`]: many datagrams per system call (`sendmmsg` with UDP GSO, `recvmmsg` with GRO).
//! - [`net`]: the non-blocking, batching socket with `ppoll` waits; the loss/duplicate/reorder shim.
//! - [`limit`]: a user's bandwidth limit (`--limit-rate`): a token bucket sent from in batches.
//! - [`send`]: the sending side (handshake, transport loop, record).
//! - `tx`: the sending half a file transfer or a scenario stream drives, TCP-like or UDT.
//! - [`udt`]: UDT4's settings, and UDT's ACK and NAK from their wire frames.
//! - [`conn`]: one incoming transfer on the receiver.
//! - [`serve`]: the receiving service (socket, handshake, connection table).
//! - [`stream`]: a scenario flow's sender (a synthetic stream, sampled on the run's grid).
//! - `rx`: the receiving half of a connection, TCP-like or UDT, and its feedback frames.
//! - [`sink`]: a scenario flow's receiver (counts what arrives, writes nothing).
//! - [`store`]: where received files go, safely.
//! - [`record`]: the per-transfer record (goodput, retransmissions, RTT percentiles, cwnd).
//! - [`sha256`]: SHA-256 (FIPS 180-4).
//! - [`error`]: what can go wrong, one line each.
//!
//! Not yet: ECN on real sockets,
//! D-SACK (the receiver does not know the sender's recovery mode), authentication or encryption
//! (an on-path attacker who sees the connection id can inject packets).

#![warn(missing_docs)]

pub mod batch;
pub mod conn;
pub mod error;
pub mod guard;
pub mod limit;
pub mod net;
pub mod ranges;
pub mod record;
mod rx;
pub mod send;
pub mod serve;
pub mod sha256;
pub mod sink;
pub mod store;
pub mod stream;
mod tx;
pub mod udt;
pub mod wire;

pub use conn::{Counters, ReceivedRecord};
pub use error::TransferError;
pub use net::Impairment;
pub use record::{RttSummary, TransferRecord};
pub use send::{send_file, Progress, SendOptions};
pub use serve::{Event, Receiver, ReceiverOptions};
pub use sink::{Sink, SinkOptions, SinkRecord};
pub use stream::{send_stream, StreamOptions, StreamRecord};
