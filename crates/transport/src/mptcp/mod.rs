//! Multipath TCP (RFC 8684) as a sans-IO pair: a connection-level sender over N subflow
//! [`Sender`](crate::Sender)s and a connection-level receiver over N subflow
//! [`Receiver`](crate::Receiver)s.
//!
//! - [`MptcpSender`] (module `sender`): the data sequence, the packet scheduler
//!   ([`Scheduler`]), DATA_ACK and the connection window, reinjection after a subflow's RTO,
//!   stale subflows, and the view of its subflows lent to coupled controllers.
//! - [`MptcpReceiver`] (module `receiver`): data-level reassembly across subflows, DATA_ACK,
//!   the shared receive window, and the data-level reordering delay ([`ReorderStats`]).
//! - `dss_map` (private): each subflow's subflow-sequence → DSN mappings.
//!
//! The wire options are not modelled byte for byte: a data segment carries its mapping as
//! [`DssData::dsn`], an ACK its DATA_ACK and window ([`DssAck`]). Not modelled: the handshake
//! and MP_JOIN exchange (a subflow simply starts at its join time), DATA_FIN, MP_PRIO backup
//! subflows, path managers (ADD_ADDR), DSS checksums and fallback to TCP.

mod dss_map;
mod receiver;
mod sender;

use ccarena_cc::coupled::Coupling;
use ccarena_cc::Duration;

use crate::receiver::ReceiverConfig;
use crate::segment::{AckSegment, DataSegment};
use crate::sender::{ConfigError, SenderConfig};

pub use receiver::MptcpReceiver;
pub use sender::MptcpSender;

/// Bytes of the DSS option (RFC 8684 §3.3) in each MPTCP data segment: 4 of kind, length,
/// subtype and flags, an 8-byte DATA_ACK, an 8-byte data sequence number, the 4-byte subflow
/// sequence number and the 2-byte data-level length, padded to 28 (no DSS checksum: Linux's
/// default). It comes out of the MSS, so a segment stays within the path's MTU.
pub const DSS_DATA_OPTION_BYTES: u32 = 28;

/// Bytes of the DSS option in an MPTCP ACK: the 4-byte header and an 8-byte DATA_ACK.
pub const DSS_ACK_OPTION_BYTES: u32 = 12;

/// Most subflows one connection opens.
pub const MAX_SUBFLOWS: usize = 32;

/// How the connection picks the subflow for the next data (Linux's `net.mptcp.scheduler`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheduler {
    /// Lowest smoothed RTT first among the subflows with room in their window (Linux's
    /// `default` scheduler).
    MinRtt,
    /// Each subflow with room in turn.
    RoundRobin,
}

impl std::str::FromStr for Scheduler {
    type Err = String;
    fn from_str(s: &str) -> Result<Scheduler, String> {
        match s {
            "minrtt" => Ok(Scheduler::MinRtt),
            "roundrobin" => Ok(Scheduler::RoundRobin),
            _ => Err(format!("unknown scheduler '{s}': use minrtt or roundrobin")),
        }
    }
}

/// An MPTCP connection's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MptcpConfig {
    /// Every subflow's sender settings (its MSS, IW, RTO bounds, recovery, ECN). The subflow
    /// senders' `initial_rwnd_bytes` and `sndbuf_bytes` are ignored: the connection's windows
    /// below govern.
    pub sender: SenderConfig,
    /// Every subflow's receiver settings; its `rcvbuf_bytes` is ignored (the connection's
    /// shared buffer below governs).
    pub receiver: ReceiverConfig,
    /// Subflows to open, 1..=[`MAX_SUBFLOWS`]; subflow 0 is the initial one.
    pub subflows: u8,
    /// How the subflows' windows are coupled.
    pub coupling: Coupling,
    /// Which subflow gets the next data.
    pub scheduler: Scheduler,
    /// Subflows 1.. start this long after subflow 0 (the MP_JOIN handshakes, RFC 8684 §3.2).
    pub join_delay: Duration,
    /// The connection-level receive buffer shared by every subflow, bytes (RFC 8684 §3.3.5:
    /// the window is relative to the DATA_ACK); `None` = unlimited.
    pub rcvbuf_bytes: Option<u64>,
    /// The connection-level send buffer, bytes; `None` = unlimited.
    pub sndbuf_bytes: Option<u64>,
    /// Consecutive RTOs after which a subflow is considered failed (Linux's
    /// `net.mptcp.stale_loss_cnt`, 4): the scheduler skips it until an ACK revives it.
    pub stale_loss_count: u32,
    /// Opportunistic retransmission and penalisation of slow subflows (Raiciu et al., "How Hard
    /// Can It Be? Designing and Implementing a Deployable Multipath TCP", NSDI 2012, §4.2): when
    /// a subflow has room in its window but the connection window (or send buffer) holds new
    /// data back, it resends the segment at the DATA_ACK that another subflow carries, and that
    /// slower subflow's cwnd is halved, at most once per its smoothed RTT. Off by default: Linux
    /// has it only in the out-of-tree multipath-tcp.org kernel (v0.86–v0.96,
    /// `mptcp_rcv_buf_optimization`), not in upstream `net/mptcp`. See the `sender` module.
    pub opportunistic: bool,
}

impl MptcpConfig {
    /// Check the values.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first field out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, reason| Err(ConfigError { field, reason });
        self.sender.validate()?;
        self.receiver.validate()?;
        if self.subflows == 0 || self.subflows as usize > MAX_SUBFLOWS {
            return err("subflows", "must be 1..=32");
        }
        if self.rcvbuf_bytes == Some(0) {
            return err("rcvbuf_bytes", "must be positive (or None for unlimited)");
        }
        if self.sndbuf_bytes == Some(0) {
            return err("sndbuf_bytes", "must be positive (or None for unlimited)");
        }
        if self.stale_loss_count == 0 {
            return err("stale_loss_count", "must be at least 1");
        }
        Ok(())
    }
}

/// A data segment of a subflow with its DSS mapping (RFC 8684 §3.3.1): subflow bytes
/// `[seg.seq, seg.end())` carry connection bytes `[dsn, dsn + seg.len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DssData {
    /// The subflow it travels on.
    pub subflow: u8,
    /// The subflow-level segment.
    pub seg: DataSegment,
    /// Data sequence number of its first byte (64-bit, never wraps).
    pub dsn: u64,
}

/// A subflow ACK with the connection-level DATA_ACK and window (RFC 8684 §3.3.2, §3.3.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DssAck {
    /// The subflow it travels on.
    pub subflow: u8,
    /// The subflow-level ACK.
    pub ack: AckSegment,
    /// Every connection byte below this has reached the receiving application in order.
    pub data_ack: u64,
    /// The connection-level receive window above `data_ack`, bytes (`u64::MAX`: unlimited).
    pub data_rwnd_bytes: u64,
}

/// Per-subflow facts the connection reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubflowStats {
    /// Connection bytes first sent on this subflow (not reinjections).
    pub bytes_scheduled: u64,
    /// Connection bytes reinjected onto this subflow after another one timed out.
    pub bytes_reinjected: u64,
    /// The subflow is stale (failed): [`MptcpConfig::stale_loss_count`] RTOs in a row.
    pub stale: bool,
    /// The subflow has started (joined).
    pub joined: bool,
    /// Opportunistic retransmissions sent on this subflow: segments of connection data at the
    /// DATA_ACK that another subflow carried, resent here because the connection window held
    /// new data back ([`MptcpConfig::opportunistic`]; NSDI 2012 §4.2). Segments, not bytes.
    pub opportunistic_retransmits: u64,
    /// Connection bytes in those retransmissions.
    pub opportunistic_bytes: u64,
    /// Times this subflow's cwnd was halved for holding up the connection window
    /// ([`MptcpConfig::opportunistic`]; NSDI 2012 §4.2 "penalizing slow subflows").
    pub penalisations: u64,
}

/// How long connection bytes waited for earlier bytes of another subflow (head-of-line
/// blocking at the data level).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReorderStats {
    /// Segments that waited in the connection's reassembly buffer.
    pub segments_delayed: u64,
    /// Sum of their waits, ns.
    pub total_delay_ns: u64,
    /// Longest wait, ns.
    pub max_delay_ns: u64,
}
