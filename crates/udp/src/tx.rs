//! The sending half a file transfer (`file_send`) or a scenario flow (`scenario_send`) drives,
//! made from a [`TxSetup`] either driver fills: the TCP-like [`Sender`] (any TCP flavor of the
//! catalogue) or UDT's own [`UdtSender`] (Gu & Grossman, Computer Networks 2007;
//! draft-gg-udt-03), behind one interface so each driver's loop — handshake, timers, feedback,
//! progress, record — is the same for both.
//!
//! A scenario flow may also run the QUIC transport's [`QuicSender`] (RFC 9002's loss detection
//! and congestion control with any TCP flavor's controller, `ccarena_transport::quic`), chosen by
//! [`TxSetup::quic`]; the file transfer does not.
//!
//! What differs is what goes on the wire (DATA and ACK; UDT_DATA, UDT_ACK, UDT_ACK2 and
//! UDT_NAK; or QUIC_DATA and QUIC_ACK: docs/udp-wire.md) and what the transport's counters are
//! called.

use std::time::Duration;

use ccarena_cc::{catalogue, new_controller, Params, SimTime};
use ccarena_transport::quic::{AckFrame as QuicAck, EcnCounts, PnRange, QuicConfig, QuicSender, MAX_ACK_RANGES};
use ccarena_transport::udt::{Ack2Packet, DataPacket, ToReceiver, UdtSender};
use ccarena_transport::rtt::RtoRule;
use ccarena_transport::{AckSegment, Ecn, PacketCounters, RecoveryMode, SackBlock, Sender, SenderConfig, SenderEcn, MAX_SACK_BLOCKS};

use crate::error::TransferError;
use crate::udt::{ack_packet, nak_packet, udt_sender_setup, INITIAL_RTT, UDT_FLAVOR};
use crate::wire::{self, EcnFeedback, Frame, QuicAckFrame, QuicOffer};

/// What the sending half is made from, whichever driver asks (a file transfer or a scenario
/// flow, each with its own options): the flavor, its parameters, and the TCP-like sender's
/// settings (RFC 6298's RTO bounds and clock granularity G, RFC 6928's initial window, RFC
/// 5681's duplicate-ACK threshold), which UDT does not use.
#[derive(Clone, Debug)]
pub(crate) struct TxSetup<'a> {
    /// Congestion-control flavor: any TCP flavor of the catalogue, or `udt` (UDT's transport).
    pub(crate) flavor: &'a str,
    /// The flavor's parameters.
    pub(crate) params: Params,
    /// Loss-recovery mode; `None`: the flavor's default.
    pub(crate) recovery: Option<&'a str>,
    /// Payload bytes per data packet.
    pub(crate) mss_bytes: u32,
    /// Initial window, segments.
    pub(crate) initial_cwnd_packets: u32,
    /// RTO floor.
    pub(crate) min_rto: ccarena_cc::Duration,
    /// RTO before the first RTT sample.
    pub(crate) initial_rto: ccarena_cc::Duration,
    /// RTO ceiling.
    pub(crate) max_rto: ccarena_cc::Duration,
    /// RFC 6298's clock granularity G.
    pub(crate) clock_granularity: ccarena_cc::Duration,
    /// Duplicate ACKs that trigger fast retransmit.
    pub(crate) dupthresh: u32,
    /// Cap on unacknowledged data, bytes (a socket send buffer); `None`: unlimited.
    pub(crate) sndbuf_bytes: Option<u64>,
    /// How much late wake-up time the pacer may make up back-to-back (`ccarena_transport::pacing`).
    pub(crate) pacing_burst: Duration,
    /// The TCP-like sender's RTO rule (RFC 6298's, or Linux's: `ccarena_transport::rtt`).
    pub(crate) rto_rule: RtoRule,
    /// The ECN feedback the receiver gives (`None`: no ECN): the sender's ECN follows it
    /// ([`sender_ecn`]). UDT runs without.
    pub(crate) ecn: Option<EcnFeedback>,
    /// Run the QUIC transport with these settings (a TCP flavor's controller; the RTO,
    /// recovery and dupthresh fields unused); `None`: the TCP-like one, or UDT.
    pub(crate) quic: Option<QuicOffer>,
}

/// The QUIC settings both ends of a stream use, from the flow's payload size, initial window
/// (packets), the offer's QUIC settings, the connection window `rwnd_bytes` (the sink's receive
/// window, `None`: unlimited), the send buffer and the ECN feedback
/// (RFC 9000 §13.4: ECN counts are reported when the stream uses ECN).
pub(crate) fn quic_config(
    mss_bytes: u32,
    initial_cwnd_packets: u32,
    q: &QuicOffer,
    rwnd_bytes: Option<u64>,
    sndbuf_bytes: Option<u64>,
    ecn: Option<EcnFeedback>,
) -> QuicConfig {
    QuicConfig {
        max_payload_bytes: mss_bytes,
        initial_cwnd_bytes: initial_cwnd_packets as u64 * mss_bytes as u64,
        initial_rtt: ccarena_cc::Duration(q.initial_rtt_ns),
        max_ack_delay: ccarena_cc::Duration(q.max_ack_delay_ns),
        ack_eliciting_threshold: q.ack_eliciting_threshold,
        reordering_threshold: q.reordering_threshold,
        max_data_bytes: rwnd_bytes,
        max_stream_data_bytes: (q.max_stream_data_bytes != u64::MAX).then_some(q.max_stream_data_bytes),
        sndbuf_bytes,
        ecn: sender_ecn(ecn),
        pacing: q.pacing,
    }
}

/// The QUIC transport's ACK frame from a QUIC_ACK frame (which `wire::decode` checked: 1 to
/// [`MAX_ACK_RANGES`] descending ranges).
pub(crate) fn quic_ack(a: &QuicAckFrame) -> QuicAck {
    let mut ranges = [PnRange::default(); MAX_ACK_RANGES];
    for (x, &(smallest, largest)) in ranges.iter_mut().zip(&a.ranges[..(a.range_count as usize).min(MAX_ACK_RANGES)]) {
        *x = PnRange { smallest, largest };
    }
    QuicAck {
        largest: a.largest,
        ack_delay: ccarena_cc::Duration(a.ack_delay_ns),
        ranges,
        range_count: a.range_count,
        ecn: a.ecn.map(|(ect0, ect1, ce)| EcnCounts { ect0, ect1, ce }),
        largest_received_at: SimTime(a.largest_received_at_ns),
        max_data: a.max_data,
        max_stream_data: a.max_stream_data,
        credit_update: a.credit_update,
    }
}

/// How the TCP-like sender uses ECN with a receiver giving `feedback` (`None`: no ECN), as the
/// transport maps feedback to sending (`EcnMode::sender_ecn`).
pub(crate) fn sender_ecn(feedback: Option<EcnFeedback>) -> SenderEcn {
    feedback.map_or(SenderEcn::Off, |f| f.receiver_mode().sender_ecn())
}

/// A controller of `flavor` with `params`, and the loss-recovery mode (`None`: the flavor's
/// default), for DATA payloads of `mss_bytes`.
///
/// # Errors
/// [`TransferError::Config`]: an unknown flavor or parameter, a UDT flavor (its own transport),
/// an unknown recovery mode, an MSS outside 64 to [`wire::MAX_PAYLOAD_BYTES`].
pub(crate) fn controller_setup(
    flavor: &str,
    params: &Params,
    recovery: Option<&str>,
    mss_bytes: u32,
) -> Result<(Box<dyn ccarena_cc::CongestionControl>, RecoveryMode), TransferError> {
    let config = |message: String| TransferError::Config { message };
    let cc = new_controller(flavor, params).map_err(|e| config(format!("--flavor: {e}")))?;
    let info = catalogue().iter().find(|c| c.name == flavor).expect("the registry built it");
    if info.transport != "tcp" {
        return Err(config(format!(
            "--flavor: '{flavor}' runs on UDT's own transport, not the TCP-like one"
        )));
    }
    let recovery: RecoveryMode =
        recovery.unwrap_or(info.default_recovery).parse().map_err(|e| config(format!("--recovery: {e}")))?;
    if !(64..=wire::MAX_PAYLOAD_BYTES as u32).contains(&mss_bytes) {
        return Err(config(format!("mss_bytes: {mss_bytes} is outside 64..={}", wire::MAX_PAYLOAD_BYTES)));
    }
    Ok((cc, recovery))
}

/// The transport's ACK from an ACK frame.
pub(crate) fn ack_segment(a: &wire::AckFrame) -> AckSegment {
    let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
    for (s, &(start, end)) in sack.iter_mut().zip(&a.sack[..a.sack_count as usize]) {
        *s = SackBlock { start, end };
    }
    AckSegment {
        ack: a.ack,
        sack,
        sack_count: a.sack_count,
        ts_ecr: SimTime(a.ts_ecr_ns),
        ts_recv: SimTime(a.ts_recv_ns),
        ece: a.flags & wire::FLAG_ECE != 0,
        accecn: a.accecn,
        rwnd_bytes: a.rwnd_bytes,
    }
}

/// A data packet to send: stream bytes `[offset, offset + len)`, the fields of its frame and
/// the ECN codepoint its IP header carries.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DataOut {
    /// Stream offset of the first byte.
    pub(crate) offset: u64,
    /// Payload bytes.
    pub(crate) len: u32,
    /// The IP ECN field the transport chose (new data ECT(0) or ECT(1) with ECN on;
    /// retransmissions and UDT Not-ECT).
    pub(crate) ecn: Ecn,
    kind: DataKind,
}

#[derive(Clone, Copy, Debug)]
enum DataKind {
    /// DATA: time stamp (ns, sender's clock) and flags.
    Tcp { ts_val_ns: u64, flags: u8 },
    /// UDT_DATA: packet sequence number, time stamp (ns), flags.
    Udt { seq: u64, timestamp_ns: u64, flags: u8 },
    /// QUIC_DATA: packet number, flags.
    Quic { pn: u64, flags: u8 },
}

impl DataOut {
    /// The frame carrying `payload` (the packet's `len` bytes).
    pub(crate) fn frame<'a>(&self, payload: &'a [u8]) -> Frame<'a> {
        match self.kind {
            DataKind::Tcp { ts_val_ns, flags } => Frame::Data { offset: self.offset, ts_val_ns, flags, payload },
            DataKind::Udt { seq, timestamp_ns, flags } => {
                Frame::UdtData { seq, offset: self.offset, timestamp_ns, flags, payload }
            }
            DataKind::Quic { pn, flags } => Frame::QuicData { pn, offset: self.offset, flags, payload },
        }
    }
}

/// What the sending half wants sent next.
pub(crate) enum Outgoing {
    /// A data packet (the caller reads its bytes from the file).
    Data(DataOut),
    /// A control frame without payload (UDT's ACK2).
    Control(Frame<'static>),
}

/// The transport's counters, named as the transfer's record names them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TxTotals {
    pub(crate) bytes_sent: u64,
    pub(crate) bytes_retransmitted: u64,
    pub(crate) segments_sent: u64,
    pub(crate) retransmissions: u64,
    /// Retransmission timeouts (UDT: EXP timeouts).
    pub(crate) rto_count: u64,
    /// Fast recoveries (UDT: none, it recovers from NAKs without a recovery phase).
    pub(crate) fast_recoveries: u64,
}

impl TxTotals {
    /// The totals of a transport that counts packets (UDT, QUIC): a data packet is the record's
    /// segment.
    fn from_packets(c: PacketCounters, rto_count: u64, fast_recoveries: u64) -> Self {
        TxTotals {
            bytes_sent: c.bytes_sent,
            bytes_retransmitted: c.bytes_retransmitted,
            segments_sent: c.packets_sent,
            retransmissions: c.packets_retransmitted,
            rto_count,
            fast_recoveries,
        }
    }
}

/// The sending half of a file transfer or a scenario stream.
pub(crate) enum Tx {
    /// ccarena's TCP-like transport.
    Tcp(Box<Sender>),
    /// UDT's transport.
    Udt(Box<UdtSender>),
    /// The QUIC transport.
    Quic(Box<QuicSender>),
}

impl Tx {
    /// The sender `setup` asks for (flavor `udt`: UDT's transport with UDT4's settings and
    /// `setup.params` as its controller's, the TCP fields unused; any other: the TCP-like one
    /// with that flavor and settings) at `now`, for a receiver advertising `rwnd_bytes`
    /// (`u64::MAX`: unlimited). Returns it with the loss-recovery mode's name (`nak` for UDT).
    ///
    /// # Errors
    /// [`TransferError::Config`]: an unknown flavor, parameter or recovery mode, an MSS out of
    /// range, settings [`SenderConfig::validate`] refuses.
    pub(crate) fn new(setup: &TxSetup<'_>, rwnd_bytes: u64, now: SimTime) -> Result<(Tx, String), TransferError> {
        if setup.flavor == UDT_FLAVOR {
            if setup.ecn.is_some() {
                return Err(TransferError::Config { message: "ecn: UDT runs without ECN".into() });
            }
            if setup.quic.is_some() {
                return Err(TransferError::Config { message: "--flavor: UDT is its own transport, not QUIC's".into() });
            }
            let (cfg, cc) = udt_sender_setup(setup.mss_bytes, &setup.params)?;
            return Ok((Tx::Udt(Box::new(UdtSender::new(cfg, cc, now))), "nak".into()));
        }
        let (cc, recovery) = controller_setup(setup.flavor, &setup.params, setup.recovery, setup.mss_bytes)?;
        if let Some(q) = &setup.quic {
            if setup.mss_bytes as usize > wire::MAX_QUIC_PAYLOAD_BYTES {
                return Err(TransferError::Config {
                    message: format!("mss_bytes: a QUIC_DATA packet carries at most {}", wire::MAX_QUIC_PAYLOAD_BYTES),
                });
            }
            let rwnd = (rwnd_bytes != u64::MAX).then_some(rwnd_bytes);
            let cfg = quic_config(setup.mss_bytes, setup.initial_cwnd_packets, q, rwnd, setup.sndbuf_bytes, setup.ecn);
            cfg.validate().map_err(|e| TransferError::Config { message: e.to_string() })?;
            let mut sender = QuicSender::new(cfg, cc, now);
            sender.set_pacing_burst(ccarena_cc::Duration(setup.pacing_burst.as_nanos() as u64));
            return Ok((Tx::Quic(Box::new(sender)), "rfc9002".into()));
        }
        let cfg = SenderConfig {
            mss_bytes: setup.mss_bytes,
            initial_cwnd_bytes: setup.initial_cwnd_packets as u64 * setup.mss_bytes as u64,
            min_rto: setup.min_rto,
            initial_rto: setup.initial_rto,
            max_rto: setup.max_rto,
            clock_granularity: setup.clock_granularity,
            recovery,
            dupthresh: setup.dupthresh,
            ecn: sender_ecn(setup.ecn),
            initial_rwnd_bytes: (rwnd_bytes != u64::MAX).then_some(rwnd_bytes),
            sndbuf_bytes: setup.sndbuf_bytes,
        };
        cfg.validate().map_err(|e| TransferError::Config { message: e.to_string() })?;
        let mut sender = Sender::new(cfg, cc, now);
        sender.set_rto_rule(setup.rto_rule);
        // A user's rate limit is not the transport's pacing cap: the file sender's loop keeps it
        // with a token bucket (crate::limit), which sends in batches where a pacer would wake
        // the loop once per packet.
        sender.set_pacing_burst(ccarena_cc::Duration(setup.pacing_burst.as_nanos() as u64));
        Ok((Tx::Tcp(Box::new(sender)), recovery.to_string()))
    }

    /// The handshake measured `rtt` before any data: the TCP-like sender's first RTT sample
    /// (`Sender::on_handshake_rtt`, as Linux takes the SYN-ACK's, and the simulator's flows with
    /// `handshake_rtt`). QUIC and UDT keep their own start (no sample: the simulator gives them
    /// none either).
    pub(crate) fn on_handshake_rtt(&mut self, rtt: ccarena_cc::Duration, now: SimTime) {
        if let Tx::Tcp(s) = self {
            s.on_handshake_rtt(rtt, now);
        }
    }

    /// The application offers `bytes` more stream bytes.
    pub(crate) fn app_write(&mut self, bytes: u64) {
        match self {
            Tx::Tcp(s) => s.app_write(bytes),
            Tx::Udt(s) => s.app_write(bytes),
            Tx::Quic(s) => s.app_write(bytes),
        }
    }

    /// The application offers nothing beyond what was already sent once; that is still delivered.
    pub(crate) fn app_stop(&mut self) {
        match self {
            Tx::Tcp(s) => s.app_stop(),
            Tx::Udt(s) => s.app_stop(),
            Tx::Quic(s) => s.app_stop(),
        }
    }

    /// Stream bytes the application has offered so far, bytes.
    pub(crate) fn bytes_offered(&self) -> u64 {
        match self {
            Tx::Tcp(s) => s.bytes_offered(),
            Tx::Udt(s) => s.bytes_offered(),
            Tx::Quic(s) => s.bytes_offered(),
        }
    }

    /// Stream bytes sent at least once (retransmissions not counted), bytes.
    pub(crate) fn new_bytes_sent(&self) -> u64 {
        match self {
            Tx::Tcp(s) => s.snd_nxt(),
            Tx::Udt(s) => s.stats().bytes_sent - s.stats().bytes_retransmitted,
            Tx::Quic(s) => s.next_stream_offset(),
        }
    }

    /// Fire the timers due at `t`.
    pub(crate) fn handle_timeout(&mut self, t: SimTime) {
        match self {
            Tx::Tcp(s) => s.handle_timeout(t),
            Tx::Udt(s) => s.handle_timeout(t),
            Tx::Quic(s) => s.handle_timeout(t),
        }
    }

    /// The next packet to send at `t` (call until `None`).
    pub(crate) fn poll_transmit(&mut self, t: SimTime) -> Option<Outgoing> {
        match self {
            Tx::Tcp(s) => s.poll_transmit(t).map(|seg| {
                let flags = (u8::from(seg.retransmit) * wire::FLAG_RETRANSMIT)
                    | (u8::from(seg.ecn.is_ect()) * wire::FLAG_ECT)
                    | (u8::from(seg.cwr) * wire::FLAG_CWR);
                let kind = DataKind::Tcp { ts_val_ns: seg.ts_val.as_nanos(), flags };
                Outgoing::Data(DataOut { offset: seg.seq, len: seg.len, ecn: seg.ecn, kind })
            }),
            Tx::Udt(s) => s.poll_transmit(t).map(|out| match out {
                ToReceiver::Data(DataPacket { seq, offset, len, timestamp, retransmit }) => {
                    let flags = u8::from(retransmit) * wire::FLAG_RETRANSMIT;
                    let kind = DataKind::Udt { seq, timestamp_ns: timestamp.as_nanos(), flags };
                    Outgoing::Data(DataOut { offset, len, ecn: Ecn::NotEct, kind })
                }
                ToReceiver::Ack2(Ack2Packet { ack_seq }) => Outgoing::Control(Frame::UdtAck2 { ack_seq }),
            }),
            Tx::Quic(s) => s.poll_transmit(t).map(|p| {
                let flags = (u8::from(p.retransmit) * wire::FLAG_RETRANSMIT) | (u8::from(p.ecn.is_ect()) * wire::FLAG_ECT);
                Outgoing::Data(DataOut { offset: p.offset, len: p.len, ecn: p.ecn, kind: DataKind::Quic { pn: p.pn, flags } })
            }),
        }
    }

    /// When [`Tx::handle_timeout`] or [`Tx::poll_transmit`] must run next.
    pub(crate) fn poll_timeout(&self) -> Option<SimTime> {
        match self {
            Tx::Tcp(s) => s.poll_timeout(),
            Tx::Udt(s) => s.poll_timeout(),
            Tx::Quic(s) => s.poll_timeout(),
        }
    }

    /// Feedback from the receiver at `t` (ACK; UDT_ACK or UDT_NAK; other frames are not the
    /// transport's). Returns an RTT sample: the TCP-like sender's measurement, or the RTT the UDT
    /// receiver reports in its ACK (its ACK/ACK2 estimate, once it has measured one).
    pub(crate) fn on_frame(&mut self, t: SimTime, frame: &Frame<'_>) -> Option<Duration> {
        match (self, frame) {
            (Tx::Tcp(s), Frame::Ack(a)) => s.on_ack(t, &ack_segment(a)).rtt.map(|r| Duration::from_nanos(r.as_nanos())),
            (Tx::Udt(s), Frame::UdtAck(a)) => {
                s.on_ack(t, &ack_packet(a));
                let measured = a.rtt_ns > 0 && a.rtt_ns != INITIAL_RTT.as_nanos() as u64;
                measured.then(|| Duration::from_nanos(a.rtt_ns))
            }
            (Tx::Udt(s), Frame::UdtNak { ranges, count }) => {
                s.on_nak(t, &nak_packet(&ranges[..*count as usize]));
                None
            }
            (Tx::Quic(s), Frame::QuicAck(a)) => s.on_ack(t, &quic_ack(a)).rtt.map(|r| Duration::from_nanos(r.as_nanos())),
            _ => None,
        }
    }

    /// Every offered byte is acknowledged.
    pub(crate) fn is_complete(&self) -> bool {
        match self {
            Tx::Tcp(s) => s.is_complete(),
            Tx::Udt(s) => s.is_complete(),
            Tx::Quic(s) => s.is_complete(),
        }
    }

    /// Stream bytes acknowledged in order.
    pub(crate) fn acked_bytes(&self) -> u64 {
        match self {
            Tx::Tcp(s) => s.snd_una(),
            Tx::Udt(s) => s.snd_una_offset(),
            // Every stream byte acknowledged (QUIC acknowledges packets, not a cumulative offset).
            Tx::Quic(s) => s.stream_bytes_acked(),
        }
    }

    /// The congestion window, bytes.
    pub(crate) fn cwnd_bytes(&self) -> u64 {
        match self {
            Tx::Tcp(s) => s.cwnd().cwnd_bytes,
            Tx::Udt(s) => s.cwnd().cwnd_bytes,
            Tx::Quic(s) => s.cwnd().cwnd_bytes,
        }
    }

    /// The counters so far.
    pub(crate) fn totals(&self) -> TxTotals {
        match self {
            Tx::Tcp(s) => {
                let st = s.stats();
                TxTotals {
                    bytes_sent: st.bytes_sent,
                    bytes_retransmitted: st.bytes_retransmitted,
                    segments_sent: st.segments_sent,
                    retransmissions: st.segments_retransmitted,
                    rto_count: st.rto_count,
                    fast_recoveries: st.fast_recoveries,
                }
            }
            Tx::Udt(s) => TxTotals::from_packets(s.stats().packet_counters(), s.stats().exp_timeouts, 0),
            // Probe timeouts count as timeouts and loss-started congestion events as fast
            // recoveries, as the simulator's QUIC flow row counts them.
            Tx::Quic(s) => {
                let st = s.stats();
                TxTotals::from_packets(st.packet_counters(), st.pto_count, st.loss_congestion_events)
            }
        }
    }
}
