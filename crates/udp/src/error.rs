//! What can go wrong in a transfer, each as one line a person can act on.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::wire::RejectCode;

/// Why a transfer or a receiver failed. `Display` is one line naming the problem.
#[derive(Debug)]
pub enum TransferError {
    /// The file to send cannot be opened or read.
    MissingFile {
        /// The path given.
        path: PathBuf,
        /// The OS's reason.
        reason: String,
    },
    /// `HOST:PORT` does not parse or resolve.
    BadAddress {
        /// What was given.
        addr: String,
        /// Why.
        reason: String,
    },
    /// Nothing listens at the address (ICMP port unreachable).
    Refused {
        /// The peer.
        addr: SocketAddr,
    },
    /// The handshake went unanswered.
    NoAnswer {
        /// The peer.
        addr: SocketAddr,
        /// How long we waited, seconds.
        secs: f64,
    },
    /// The receiver's port is taken.
    PortInUse {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The receiver cannot bind (other than a taken port).
    Bind {
        /// The address asked for.
        addr: String,
        /// The OS's reason.
        reason: String,
    },
    /// The receiver's directory is missing, not a directory, or not writable.
    BadDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// The peer speaks another wire version.
    VersionMismatch {
        /// The peer.
        addr: SocketAddr,
        /// Its version.
        theirs: u8,
    },
    /// The receiver refused the offer.
    Rejected {
        /// Why, as a code.
        code: RejectCode,
        /// The receiver's message.
        message: String,
    },
    /// The peer ended the connection.
    PeerClosed {
        /// Its message.
        message: String,
    },
    /// Nothing arrived from the peer for too long.
    PeerSilent {
        /// The idle time, seconds.
        secs: f64,
    },
    /// The receiver's SHA-256 or its write of the file failed.
    Verify {
        /// The receiver's message.
        message: String,
    },
    /// The caller stopped the transfer (Ctrl-C or a byte limit).
    Interrupted {
        /// Stream bytes acknowledged when it stopped.
        acked_bytes: u64,
    },
    /// A flavor, recovery mode or option is not valid.
    Config {
        /// What is wrong.
        message: String,
    },
    /// An unexpected I/O error.
    Io {
        /// What was being done.
        context: String,
        /// The error.
        error: std::io::Error,
    },
}

impl fmt::Display for TransferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use TransferError::*;
        match self {
            MissingFile { path, reason } => write!(f, "cannot read {}: {reason}", path.display()),
            BadAddress { addr, reason } => write!(f, "bad address '{addr}': {reason}"),
            Refused { addr } => write!(f, "no ccarena receiver at {addr} (connection refused)"),
            NoAnswer { addr, secs } => write!(f, "no answer from {addr} after {secs:.0} s (host unreachable or no receiver)"),
            PortInUse { addr } => write!(f, "port in use: {addr} (another program is bound to it)"),
            Bind { addr, reason } => write!(f, "cannot listen on {addr}: {reason}"),
            BadDir { dir, reason } => write!(f, "directory {}: {reason}", dir.display()),
            VersionMismatch { addr, theirs } => write!(
                f,
                "the peer at {addr} speaks ccarena-udp wire version {theirs}, this program speaks {}",
                crate::wire::VERSION
            ),
            Rejected { message, .. } => write!(f, "the receiver refused the file: {message}"),
            PeerClosed { message } => write!(f, "the peer closed the connection: {message}"),
            PeerSilent { secs } => write!(f, "the peer stopped answering ({secs:.0} s without a packet)"),
            Verify { message } => write!(f, "the transfer failed verification: {message}"),
            Interrupted { acked_bytes } => write!(f, "interrupted after {acked_bytes} bytes were acknowledged"),
            Config { message } => write!(f, "{message}"),
            Io { context, error } => write!(f, "{context}: {error}"),
        }
    }
}

impl std::error::Error for TransferError {}
