//! Applications on hosts: bulk TCP transfers (a transport sender and receiver pair), UDP
//! constant-bit-rate sources, and bulk UDT transfers (UDT's own sender and receiver).

use ccarena_cc::{new_controller, Duration, SimTime};
use ccarena_transport::{EcnMode, RcvBufAutotuning, Receiver, ReceiverConfig, RecoveryMode, SackCompression, Sender, SenderConfig, SenderEcn};

use ccarena_cc::udt::Udt;
use ccarena_transport::udt::{ToSender, UdtReceiver, UdtReceiverConfig, UdtSender, UdtSenderConfig};

use ccarena_cc::coupled::{new_coupled_controller, Coupling};
use ccarena_transport::mptcp::{
    DssAck, DssData, MptcpConfig, MptcpReceiver, MptcpSender, DSS_ACK_OPTION_BYTES, DSS_DATA_OPTION_BYTES,
};

use ccarena_transport::quic::{AckFrame, QuicConfig, QuicPacket, QuicReceiver, QuicSender, DATA_OVERHEAD_BYTES};

use ccarena_link::Histogram;
use ccarena_rng::{SplitMix64, StreamKind};
use crate::packet::Payload;
use crate::pool::BoxPool;
use crate::spec::{CbrFlowSpec, FlowSpec, QuicSpec, SpecError, TcpFlowSpec, UdtFlowSpec};

/// Bytes a bulk flow with no byte count offers: effectively unlimited.
pub const UNLIMITED_BYTES: u64 = u64::MAX / 4;

/// What the engine keeps about a bulk transfer of either transport (TCP or UDT): its hosts, its
/// wire sizes, its lazy timers and what it delivered.
#[derive(Debug)]
pub struct Transfer {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Header bytes per data packet on the wire (TCP: IP + TCP; UDT: IP + UDP + UDT).
    pub header_bytes: u32,
    /// Bytes of an ACK on the wire (TCP: without SACK blocks; UDT: a full ACK).
    pub ack_bytes: u32,
    /// Bytes to send, or `None` for unlimited.
    pub bytes: Option<u64>,
    /// Earliest pending sender-timer event in the heap.
    pub sender_timer_at: SimTime,
    /// Earliest pending receiver-timer event in the heap.
    pub receiver_timer_at: SimTime,
    /// In-order payload bytes delivered to the receiving application.
    pub delivered_bytes: u64,
    /// RTT samples, ns (TCP: the sender's; UDT: the receiver's ACK → ACK2 times).
    pub rtt: Histogram,
    /// When the last byte of a finite transfer was acknowledged.
    pub completed_at: Option<SimTime>,
}

impl Transfer {
    fn new(src: usize, dst: usize, header_bytes: u32, ack_bytes: u32, bytes: Option<u64>) -> Transfer {
        Transfer {
            src: src as u32,
            dst: dst as u32,
            header_bytes,
            ack_bytes,
            bytes,
            sender_timer_at: SimTime::NEVER,
            receiver_timer_at: SimTime::NEVER,
            delivered_bytes: 0,
            rtt: Histogram::default(),
            completed_at: None,
        }
    }

    /// Bytes the application offers: the transfer's size, or effectively unlimited.
    pub fn app_bytes(&self) -> u64 {
        self.bytes.unwrap_or(UNLIMITED_BYTES)
    }
}

/// A bulk TCP transfer: the sender lives on `src`, the receiver on `dst`.
#[derive(Debug)]
pub struct TcpFlow {
    /// Hosts, sizes, timers, delivery.
    pub transfer: Transfer,
    /// The transport's sending side.
    pub sender: Sender,
    /// The transport's receiving side.
    pub receiver: Receiver,
    /// What the receiver was built with.
    pub receiver_config: ReceiverConfig,
    /// ACK packets the receiver sent (their boxes come from the engine's shared pool,
    /// `endpoint::AckBoxes`, so a steady run allocates none).
    pub acks_sent: u64,
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
        // An MPTCP connection's buffer is its own (MptcpFlow::new).
        let autotune = f.rcvbuf_autotuning && f.mptcp.is_none();
        let cfg = SenderConfig {
            mss_bytes: f.mss_bytes,
            initial_cwnd_bytes: f.initial_cwnd_packets as u64 * f.mss_bytes as u64,
            min_rto: Duration(f.min_rto_ns),
            initial_rto: Duration(f.initial_rto_ns),
            max_rto: Duration(f.max_rto_ns),
            clock_granularity: Duration(f.clock_granularity_ns),
            recovery,
            dupthresh: f.dupthresh,
            ecn: sender_ecn(f),
            // The handshake (not modelled) would have carried the receiver's window: with
            // autotuning, the 65,160 bytes a Linux SYN-ACK offers.
            initial_rwnd_bytes: if autotune {
                Some(RcvBufAutotuning::LINUX.initial_window(f.mss_bytes))
            } else {
                f.rwnd_bytes
            },
            sndbuf_bytes: f.sndbuf_bytes,
        };
        let rcfg = ReceiverConfig {
            mss_bytes: f.mss_bytes,
            delayed_ack: Duration(f.delayed_ack_ns),
            ack_every_segments: f.ack_every_segments,
            ecn: receiver_ecn_mode(f),
            rcvbuf_bytes: f.rwnd_bytes,
            // Both ends run one stack: Linux's receiver sends D-SACK (tcp_dsack = 1), which
            // only the `linux` profile's sender uses; the textbook modes keep plain SACK.
            dsack: recovery == RecoveryMode::Linux,
        };
        // The transport checks its own invariants; report a violation against the spec's flow.
        let bad = |e: ccarena_transport::ConfigError| SpecError { path: path(e.field), message: e.reason.to_string() };
        cfg.validate().map_err(bad)?;
        rcfg.validate().map_err(bad)?;
        let rto_rule = f.rto_rule().map_err(|e| SpecError { path: path("rto_rule"), message: e.message })?;
        let mut sender = Sender::new(cfg, cc, SimTime(f.sender_start_ns()));
        sender.set_rto_rule(rto_rule);
        let mut receiver = Receiver::new(rcfg);
        if autotune {
            // Before set_quickack: Linux bounds the quick-ACK grant by the initial window.
            receiver.set_rcvbuf_autotuning(RcvBufAutotuning::LINUX);
        }
        // Linux re-enters quick-ACK mode after a gap longer than the receiver's RTO, which is at
        // least min_rto; the receiver keeps no RTT estimate here, so min_rto stands in for it.
        receiver.set_quickack(f.quickack_segments, Some(Duration(f.min_rto_ns)));
        // The Linux receiver's other immediate ACK, for a sub-MSS segment (spec.rs).
        receiver.set_ack_short_segments(f.quickack_segments > 0);
        if f.sack_compression {
            receiver.set_sack_compression(SackCompression::LINUX);
        }
        Ok(TcpFlow {
            transfer: Transfer::new(f.src, f.dst, f.header_bytes, f.ack_bytes, f.bytes),
            sender,
            receiver,
            receiver_config: rcfg,
            acks_sent: 0,
        })
    }
}

/// A Multipath TCP transfer (RFC 8684): the connection's sender lives on `src`, its receiver
/// on `dst`; each subflow is a TCP sender and receiver of the transport's [`MptcpSender`] and
/// [`MptcpReceiver`].
#[derive(Debug)]
pub struct MptcpFlow {
    /// Hosts, sizes, timers, connection-level delivery.
    pub transfer: Transfer,
    /// The connection's sending side.
    pub sender: MptcpSender,
    /// The connection's receiving side.
    pub receiver: MptcpReceiver,
    /// ACK packets the receiver sent, all subflows.
    pub acks_sent: u64,
    /// Boxes of data segments and of ACKs that reached their end, reused for the next ones: a
    /// steady flow allocates none.
    pub data_boxes: BoxPool<DssData>,
    /// See [`MptcpFlow::data_boxes`].
    pub ack_boxes: BoxPool<DssAck>,
}

impl MptcpFlow {
    /// Give back what the finished connection no longer needs: its header boxes and its
    /// senders' storage for data in flight ([`MptcpSender::release_storage`]). Changes no
    /// result; a run of many short connections stops holding each one's largest window.
    pub fn release_storage(&mut self) {
        self.data_boxes.release();
        self.ack_boxes.release();
        self.sender.release_storage();
    }

    /// Build from a validated spec whose `mptcp` is set: the TCP settings are every subflow's
    /// (its MSS less the DSS option), the flow's `rwnd_bytes` and `sndbuf_bytes` the
    /// connection's shared buffers.
    ///
    /// # Errors
    /// A [`SpecError`] if a field is out of range (validation normally catches it).
    pub fn new(index: usize, f: &TcpFlowSpec) -> Result<MptcpFlow, SpecError> {
        let path = |field: &str| format!("flows[{index}].{field}");
        let m = f.mptcp.as_ref().expect("an MPTCP flow");
        let coupling = m.coupling().map_err(|e| SpecError { path: path("mptcp.coupling"), message: e })?;
        let scheduler = m.scheduler().map_err(|e| SpecError { path: path("mptcp.scheduler"), message: e })?;
        let tcp = TcpFlow::new(index, f)?;
        let mut sender = *tcp.sender.config();
        sender.mss_bytes -= DSS_DATA_OPTION_BYTES;
        sender.initial_cwnd_bytes = f.initial_cwnd_packets as u64 * sender.mss_bytes as u64;
        let mut receiver = tcp.receiver_config;
        receiver.mss_bytes = sender.mss_bytes;
        let cfg = MptcpConfig {
            sender,
            receiver,
            subflows: m.subflows,
            coupling,
            scheduler,
            join_delay: Duration(m.join_delay_ns),
            rcvbuf_bytes: f.rwnd_bytes,
            sndbuf_bytes: f.sndbuf_bytes,
            stale_loss_count: MPTCP_STALE_LOSS_COUNT,
            opportunistic: m.opportunistic,
        };
        let bad = |e: ccarena_transport::ConfigError| SpecError { path: path(e.field), message: e.reason.to_string() };
        cfg.validate().map_err(bad)?;
        let controller = || match coupling {
            Coupling::Uncoupled => new_controller(&f.flavor, &f.cc_params()),
            c => new_coupled_controller(c, &ccarena_cc::Params::default()),
        };
        let ccs = (0..m.subflows)
            .map(|_| controller().map_err(|e| SpecError { path: path("mptcp.coupling"), message: e.to_string() }))
            .collect::<Result<Vec<_>, _>>()?;
        let start = SimTime(f.sender_start_ns());
        // The linux host's timer and ACK rules on every subflow, as on a single-path flow
        // (TcpFlow::new; spec fields `rto_rule`, `quickack_segments`).
        let mut sender = MptcpSender::new(cfg, ccs, start);
        sender.set_rto_rule(f.rto_rule().map_err(|e| SpecError { path: path("rto_rule"), message: e.message })?);
        let mut receiver = MptcpReceiver::new(cfg);
        if f.rcvbuf_autotuning {
            // Linux's connection-level autotuning; the connection is established as its sender
            // starts (the handshake is not modelled). Before set_quickack, as for TCP.
            receiver.set_rcvbuf_autotuning(RcvBufAutotuning::LINUX, start);
            sender.set_initial_rwnd(RcvBufAutotuning::LINUX.initial_window(f.mss_bytes));
        }
        receiver.set_quickack(f.quickack_segments, Some(Duration(f.min_rto_ns)));
        Ok(MptcpFlow {
            transfer: Transfer::new(f.src, f.dst, f.header_bytes + DSS_DATA_OPTION_BYTES, f.ack_bytes + DSS_ACK_OPTION_BYTES, f.bytes),
            sender,
            receiver,
            acks_sent: 0,
            data_boxes: BoxPool::default(),
            ack_boxes: BoxPool::default(),
        })
    }
}

/// A bulk transfer over QUIC (RFC 9000, RFC 9002) with the flow's congestion controller: the
/// sender lives on `src`, the receiver on `dst`.
#[derive(Debug)]
pub struct QuicFlow {
    /// Hosts, sizes, timers, delivery. `header_bytes` is QUIC's per-packet overhead
    /// ([`DATA_OVERHEAD_BYTES`]); an ACK packet's size comes from its frame.
    pub transfer: Transfer,
    /// The data sender.
    pub sender: QuicSender,
    /// The data receiver.
    pub receiver: QuicReceiver,
    /// ACK packets the receiver sent.
    pub acks_sent: u64,
    /// Boxes of packets and ACKs that reached their end, reused for the next ones: a steady flow
    /// allocates none.
    pub data_boxes: BoxPool<QuicPacket>,
    /// See [`QuicFlow::data_boxes`].
    pub ack_boxes: BoxPool<AckFrame>,
}

impl QuicFlow {
    /// Give back what the finished connection no longer needs: its packet and ACK-frame boxes
    /// and its sender's emptied lists ([`QuicSender::release_storage`]). Changes no result.
    pub fn release_storage(&mut self) {
        self.data_boxes.release();
        self.ack_boxes.release();
        self.sender.release_storage();
    }

    /// Build from a validated spec whose `quic` is set: the flow's controller, ECN choice,
    /// initial window (in packets of the QUIC payload), connection window (`rwnd_bytes`) and
    /// the QUIC settings.
    ///
    /// # Errors
    /// A [`SpecError`] if the flavor or a field is invalid (validation normally catches it).
    pub fn new(index: usize, f: &TcpFlowSpec) -> Result<QuicFlow, SpecError> {
        let path = |field: &str| format!("flows[{index}].{field}");
        let q = f.quic.as_ref().expect("a QUIC flow");
        let cc = new_controller(&f.flavor, &f.cc_params())
            .map_err(|e| SpecError { path: path("flavor"), message: e.to_string() })?;
        let payload = QuicSpec::payload_bytes(f);
        let cfg = QuicConfig {
            max_payload_bytes: payload,
            initial_cwnd_bytes: f.initial_cwnd_packets as u64 * payload as u64,
            initial_rtt: Duration(q.initial_rtt_ns),
            max_ack_delay: Duration(q.max_ack_delay_ns),
            ack_eliciting_threshold: q.ack_eliciting_threshold,
            reordering_threshold: q.reordering_threshold,
            max_data_bytes: f.rwnd_bytes,
            max_stream_data_bytes: q.max_stream_data_bytes,
            sndbuf_bytes: f.sndbuf_bytes,
            ecn: sender_ecn(f),
            pacing: q.pacing,
        };
        cfg.validate().map_err(|e| SpecError { path: path(e.field), message: e.reason.to_string() })?;
        let start = SimTime(f.sender_start_ns());
        Ok(QuicFlow {
            transfer: Transfer::new(f.src, f.dst, DATA_OVERHEAD_BYTES, ccarena_transport::quic::ACK_PACKET_BASE_BYTES, f.bytes),
            sender: QuicSender::new(cfg, cc, start),
            receiver: QuicReceiver::new(cfg),
            acks_sent: 0,
            data_boxes: BoxPool::default(),
            ack_boxes: BoxPool::default(),
        })
    }
}

/// RTOs in a row after which a subflow is considered failed and the scheduler leaves it (Linux's
/// `net.mptcp.stale_loss_cnt` default).
pub const MPTCP_STALE_LOSS_COUNT: u32 = 4;

/// How the flow's receiver echoes CE (docs/engine-spec.md): the transport's one rule
/// ([`ccarena_transport::flow_ecn_mode`]: Accurate ECN for L4S flows, DCTCP's echo for the other
/// flavors that need ECN, RFC 3168's for the rest). A bad `ect1` reads as no ECN here: the
/// controller refuses it when the flow is built.
pub fn receiver_ecn_mode(f: &TcpFlowSpec) -> EcnMode {
    ccarena_transport::flow_ecn_mode(&f.flavor, &f.cc_params(), f.ecn).unwrap_or(EcnMode::Off)
}

/// How the flow's sender uses ECN, matching [`receiver_ecn_mode`] ([`EcnMode::sender_ecn`]).
pub fn sender_ecn(f: &TcpFlowSpec) -> SenderEcn {
    receiver_ecn_mode(f).sender_ecn()
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

/// A bulk UDT transfer: the UDT sender lives on `src`, the receiver on `dst`.
#[derive(Debug)]
pub struct UdtFlow {
    /// Hosts, sizes, timers, delivery.
    pub transfer: Transfer,
    /// UDT's sending side (with its `udt` controller).
    pub sender: UdtSender,
    /// UDT's receiving side.
    pub receiver: UdtReceiver,
    /// Boxes of ACKs and NAKs that reached the sender, reused by the receiver's next ones (one
    /// ACK per SYN interval: a box allocated for each was a third of an allocation per data
    /// packet; see [`MptcpFlow::data_boxes`]).
    pub ack_boxes: BoxPool<ToSender>,
}

impl UdtFlow {
    /// Build flow `index` of a run with seed `run_seed` from a validated spec. The controller's
    /// DecRandom generator gets the flow's own stream mixed into its `seed` parameter, so two
    /// flows never draw the same sequence.
    ///
    /// # Errors
    /// A [`SpecError`] if the controller parameters or the transport configuration are invalid
    /// (validation normally catches it).
    pub fn new(index: usize, f: &UdtFlowSpec, run_seed: u64) -> Result<UdtFlow, SpecError> {
        let path = |field: &str| format!("flows[{index}].{field}");
        let mut cc = Udt::new(&f.cc_params()).map_err(|e| SpecError { path: path("params"), message: e.to_string() })?;
        cc.mix_seed(SplitMix64::stream(run_seed, StreamKind::Application, index as u64).next_u64());
        let scfg = UdtSenderConfig {
            mss_bytes: f.mss_bytes,
            syn_interval: Duration(f.syn_interval_ns),
            max_flow_window_packets: f.flow_window_packets,
            initial_rtt: Duration(f.initial_rtt_ns),
            min_exp: Duration(f.min_exp_ns),
        };
        let rcfg = UdtReceiverConfig {
            syn_interval: Duration(f.syn_interval_ns),
            max_flow_window_packets: f.flow_window_packets,
            initial_rtt: Duration(f.initial_rtt_ns),
        };
        let bad = |e: ccarena_transport::ConfigError| SpecError { path: path(e.field), message: e.reason.to_string() };
        scfg.validate().map_err(bad)?;
        rcfg.validate().map_err(bad)?;
        let start = SimTime(f.start_ns);
        Ok(UdtFlow {
            transfer: Transfer::new(f.src, f.dst, f.header_bytes, f.ack_bytes, f.bytes),
            sender: UdtSender::new(scfg, cc, start),
            receiver: UdtReceiver::new(rcfg, start),
            ack_boxes: BoxPool::default(),
        })
    }
}

/// A flow of any kind.
#[derive(Debug)]
pub enum Flow {
    /// Bulk TCP.
    Tcp(Box<TcpFlow>),
    /// UDP CBR.
    Cbr(CbrFlow),
    /// Bulk UDT.
    Udt(Box<UdtFlow>),
    /// Bulk Multipath TCP.
    Mptcp(Box<MptcpFlow>),
    /// Bulk QUIC.
    Quic(Box<QuicFlow>),
    /// A TCP or UDT transfer that has not started: its endpoints (about 2 KB) are built when it
    /// starts ([`Flow::start`]), so a run with many flows waiting to start (data-center
    /// workloads) holds only their specs. `run_seed` is the run's seed, which UDT's needs.
    Idle {
        /// The run's seed.
        run_seed: u64,
    },
}

impl Flow {
    /// A spare box of `like`'s kind from this flow's pools, if one is kept (`crate::pool`;
    /// [`crate::Simulation::import`]): for the part of a split run that boxes such headers.
    pub fn spare_box(&mut self, like: &Payload) -> Option<Payload> {
        match (self, like) {
            (Flow::Quic(q), Payload::QuicData(_)) => q.data_boxes.take_kept().map(Payload::QuicData),
            (Flow::Quic(q), Payload::QuicAck(_)) => q.ack_boxes.take_kept().map(Payload::QuicAck),
            (Flow::Udt(u), Payload::UdtToSender(_)) => u.ack_boxes.take_kept().map(Payload::UdtToSender),
            (Flow::Mptcp(m), Payload::MptcpData(_)) => m.data_boxes.take_kept().map(Payload::MptcpData),
            (Flow::Mptcp(m), Payload::MptcpAck(_)) => m.ack_boxes.take_kept().map(Payload::MptcpAck),
            _ => None,
        }
    }

    /// Keep a spare box another part gave ([`Flow::spare_box`]) in the pool of its kind; a
    /// payload without a box, or of another flow kind, is dropped.
    pub fn accept_box(&mut self, spare: Payload) {
        match (self, spare) {
            (Flow::Quic(q), Payload::QuicData(b)) => q.data_boxes.put(b),
            (Flow::Quic(q), Payload::QuicAck(b)) => q.ack_boxes.put(b),
            (Flow::Udt(u), Payload::UdtToSender(b)) => u.ack_boxes.put(b),
            (Flow::Mptcp(m), Payload::MptcpData(b)) => m.data_boxes.put(b),
            (Flow::Mptcp(m), Payload::MptcpAck(b)) => m.ack_boxes.put(b),
            _ => {}
        }
    }

    /// This flow's pools of header boxes (`crate::pool`): (boxes held now, boxes allocated so
    /// far); (0, 0) for a flow without pools.
    pub fn box_pools(&self) -> (usize, u64) {
        fn add<T>((held, made): (usize, u64), pool: &BoxPool<T>) -> (usize, u64) {
            (held + pool.len(), made + pool.allocated())
        }
        match self {
            Flow::Mptcp(m) => add(add((0, 0), &m.data_boxes), &m.ack_boxes),
            Flow::Quic(q) => add(add((0, 0), &q.data_boxes), &q.ack_boxes),
            Flow::Udt(u) => add((0, 0), &u.ack_boxes),
            Flow::Tcp(_) | Flow::Cbr(_) | Flow::Idle { .. } => (0, 0),
        }
    }

    /// Replace this flow's receiving end (and what the receiver counts: in-order bytes
    /// delivered, ACKs sent, UDT's RTT samples, which its receiver takes) by `other`'s, the copy
    /// of the same flow that the receiving host's thread ran (`crate::parallel`), leaving
    /// `other` with this one's.
    pub fn take_receiver_side(&mut self, other: &mut Flow) {
        fn transfer(a: &mut Transfer, b: &mut Transfer) {
            std::mem::swap(&mut a.delivered_bytes, &mut b.delivered_bytes);
            std::mem::swap(&mut a.receiver_timer_at, &mut b.receiver_timer_at);
        }
        match (self, other) {
            (Flow::Tcp(a), Flow::Tcp(b)) => {
                std::mem::swap(&mut a.receiver, &mut b.receiver);
                std::mem::swap(&mut a.acks_sent, &mut b.acks_sent);
                transfer(&mut a.transfer, &mut b.transfer);
            }
            (Flow::Udt(a), Flow::Udt(b)) => {
                std::mem::swap(&mut a.receiver, &mut b.receiver);
                transfer(&mut a.transfer, &mut b.transfer);
                std::mem::swap(&mut a.transfer.rtt, &mut b.transfer.rtt);
            }
            (Flow::Mptcp(a), Flow::Mptcp(b)) => {
                std::mem::swap(&mut a.receiver, &mut b.receiver);
                std::mem::swap(&mut a.acks_sent, &mut b.acks_sent);
                transfer(&mut a.transfer, &mut b.transfer);
            }
            (Flow::Quic(a), Flow::Quic(b)) => {
                std::mem::swap(&mut a.receiver, &mut b.receiver);
                std::mem::swap(&mut a.acks_sent, &mut b.acks_sent);
                transfer(&mut a.transfer, &mut b.transfer);
            }
            (Flow::Cbr(a), Flow::Cbr(b)) => std::mem::swap(&mut a.received, &mut b.received),
            (Flow::Idle { .. }, Flow::Idle { .. }) => {}
            (a, b) => unreachable!("two copies of one flow differ in kind: {} and {}", a.kind_name(), b.kind_name()),
        }
    }

    /// The variant's name, for messages.
    fn kind_name(&self) -> &'static str {
        match self {
            Flow::Tcp(_) => "tcp",
            Flow::Cbr(_) => "cbr",
            Flow::Udt(_) => "udt",
            Flow::Mptcp(_) => "mptcp",
            Flow::Quic(_) => "quic",
            Flow::Idle { .. } => "idle",
        }
    }

    /// Flow `index` of a run with seed `run_seed`, built from its spec with its state at its start.
    ///
    /// # Errors
    /// A [`SpecError`] if the transport rejects the spec's values (validation normally catches it).
    pub fn build(index: usize, spec: &FlowSpec, run_seed: u64) -> Result<Flow, SpecError> {
        Ok(match spec {
            FlowSpec::Tcp(t) if t.mptcp.is_some() => Flow::Mptcp(Box::new(MptcpFlow::new(index, t)?)),
            FlowSpec::Tcp(t) if t.quic.is_some() => Flow::Quic(Box::new(QuicFlow::new(index, t)?)),
            FlowSpec::Tcp(t) => Flow::Tcp(Box::new(TcpFlow::new(index, t)?)),
            FlowSpec::UdpCbr(c) => Flow::Cbr(CbrFlow::new(c)),
            FlowSpec::Udt(u) => Flow::Udt(Box::new(UdtFlow::new(index, u, run_seed)?)),
        })
    }

    /// What the engine holds for flow `index` before it starts: [`Flow::Idle`] for a transfer
    /// (built once here so a bad spec is still reported when the simulation is built), the CBR
    /// source itself (a few words) for CBR.
    ///
    /// # Errors
    /// As [`Flow::build`].
    pub fn idle(index: usize, spec: &FlowSpec, run_seed: u64) -> Result<Flow, SpecError> {
        match Flow::build(index, spec, run_seed)? {
            Flow::Cbr(c) => Ok(Flow::Cbr(c)),
            _ => Ok(Flow::Idle { run_seed }),
        }
    }

    /// Build an idle transfer's endpoints at its start; other flows are left as they are. The
    /// endpoints do not depend on when they are built, so the run is the same as if they had
    /// been built with the simulation.
    pub fn start(&mut self, index: usize, spec: &FlowSpec) {
        if let Flow::Idle { run_seed } = *self {
            *self = Flow::build(index, spec, run_seed).expect("checked when the simulation was built");
        }
    }
}
