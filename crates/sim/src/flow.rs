//! Applications on hosts: bulk TCP transfers (a transport sender and receiver pair) and UDP
//! constant-bit-rate sources.

use ccarena_cc::{new_controller, Duration, SimTime};
use ccarena_transport::{Receiver, ReceiverConfig, RecoveryMode, Sender, SenderConfig};

use crate::histogram::Histogram;
use crate::spec::{CbrFlowSpec, SpecError, TcpFlowSpec};

/// Bytes a bulk flow with no byte count offers: effectively unlimited.
pub const UNLIMITED_BYTES: u64 = u64::MAX / 4;

/// A bulk TCP transfer: the sender lives on `src`, the receiver on `dst`.
#[derive(Debug)]
pub struct TcpFlow {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// The transport's sending side.
    pub sender: Sender,
    /// The transport's receiving side.
    pub receiver: Receiver,
    /// Header bytes per data segment on the wire.
    pub header_bytes: u32,
    /// ACK bytes on the wire without SACK blocks.
    pub ack_bytes: u32,
    /// Bytes to send, or `None` for unlimited.
    pub bytes: Option<u64>,
    /// Earliest pending sender-timer event in the heap.
    pub sender_timer_at: SimTime,
    /// Earliest pending receiver-timer event in the heap.
    pub receiver_timer_at: SimTime,
    /// In-order payload bytes delivered to the receiving application.
    pub delivered_bytes: u64,
    /// ACK packets the receiver sent.
    pub acks_sent: u64,
    /// RTT samples, ns.
    pub rtt: Histogram,
    /// When the last byte of a finite transfer was acknowledged.
    pub completed_at: Option<SimTime>,
}

impl TcpFlow {
    /// Build from a validated spec.
    ///
    /// # Errors
    /// A [`SpecError`] if the flavor or recovery mode is unknown (validation normally catches it).
    pub fn new(index: usize, f: &TcpFlowSpec) -> Result<TcpFlow, SpecError> {
        let path = |field: &str| format!("flows[{index}].{field}");
        let cc = new_controller(&f.flavor, &f.cc_params())
            .map_err(|e| SpecError { path: path("flavor"), message: e.to_string() })?;
        let recovery: RecoveryMode = f
            .recovery
            .parse()
            .map_err(|e: <RecoveryMode as std::str::FromStr>::Err| SpecError { path: path("recovery"), message: e.to_string() })?;
        let cfg = SenderConfig {
            mss_bytes: f.mss_bytes,
            initial_cwnd_bytes: f.initial_cwnd_packets as u64 * f.mss_bytes as u64,
            min_rto: Duration(f.min_rto_ns),
            initial_rto: Duration(f.initial_rto_ns),
            max_rto: Duration(f.max_rto_ns),
            clock_granularity: Duration(f.clock_granularity_ns),
            recovery,
            dupthresh: f.dupthresh,
            ecn: f.ecn,
        };
        let rcfg = ReceiverConfig {
            mss_bytes: f.mss_bytes,
            delayed_ack: Duration(f.delayed_ack_ns),
            ack_every_segments: f.ack_every_segments,
            ecn: f.ecn,
        };
        // The transport checks its own invariants; report a violation against the spec's flow.
        let bad = |e: ccarena_transport::ConfigError| SpecError { path: path(e.field), message: e.reason.to_string() };
        cfg.validate().map_err(bad)?;
        rcfg.validate().map_err(bad)?;
        Ok(TcpFlow {
            src: f.src as u32,
            dst: f.dst as u32,
            sender: Sender::new(cfg, cc, SimTime(f.start_ns)),
            receiver: Receiver::new(rcfg),
            header_bytes: f.header_bytes,
            ack_bytes: f.ack_bytes,
            bytes: f.bytes,
            sender_timer_at: SimTime::NEVER,
            receiver_timer_at: SimTime::NEVER,
            delivered_bytes: 0,
            acks_sent: 0,
            rtt: Histogram::default(),
            completed_at: None,
        })
    }
}

/// A UDP constant-bit-rate source and its sink.
#[derive(Debug)]
pub struct CbrFlow {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Time between datagrams: packet_bytes·8 / rate_bps.
    pub interval: Duration,
    /// Payload per datagram, bytes.
    pub packet_bytes: u32,
    /// Header bytes per datagram on the wire.
    pub header_bytes: u32,
    /// No datagram at or after this time.
    pub stop: SimTime,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams received.
    pub received: u64,
}

impl CbrFlow {
    /// Build from a validated spec.
    pub fn new(f: &CbrFlowSpec) -> CbrFlow {
        CbrFlow {
            src: f.src as u32,
            dst: f.dst as u32,
            interval: Duration::transmission(f.packet_bytes as u64, f.rate_bps),
            packet_bytes: f.packet_bytes,
            header_bytes: f.header_bytes,
            stop: f.stop_ns.map(SimTime).unwrap_or(SimTime::NEVER),
            sent: 0,
            received: 0,
        }
    }
}

/// A flow of either kind.
#[derive(Debug)]
pub enum Flow {
    /// Bulk TCP.
    Tcp(Box<TcpFlow>),
    /// UDP CBR.
    Cbr(CbrFlow),
}
