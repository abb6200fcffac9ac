//! ccarena's congestion controllers inside a production QUIC stack: quinn's sans-IO core
//! (`quinn-proto`, RFC 9000/9001/9002) with rustls, on std UDP sockets.
//!
//! - [`controller`]: any catalogue flavor behind quinn's controller interface.
//! - [`stack`]: which code runs ([`QuicImpl`]: ccarena's controller in quinn, or quinn's own
//!   NewReno/CUBIC/BBR), and the TLS configurations from one certificate generated per run.
//! - [`driver`]: a blocking single-threaded sender and sink over a UDP socket, sampling the
//!   connection on a time grid.
//! - [`record`]: what a run returns (per-sample rows, RTT percentiles, totals).

#![warn(missing_docs)]

pub mod controller;
pub mod driver;
mod io;
pub mod observe;
pub mod record;
pub mod stack;

pub use controller::{CcarenaController, CcarenaControllerFactory};
pub use driver::{send, sink, SendOptions, SinkOptions};
pub use record::{RttSummary, SendRecord, SenderSample, SinkRecord, SinkSample};
pub use stack::{QuicImpl, RunCertificate, StackError};
