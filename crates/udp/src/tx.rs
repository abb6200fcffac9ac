//! The sending half a file transfer ([`crate::send::send_file`]) or a scenario stream
//! ([`crate::stream::send_stream`]) drives: the TCP-like [`Sender`] (any TCP flavor of the
//! catalogue) or UDT's own [`UdtSender`] (Gu & Grossman, Computer Networks 2007;
//! draft-gg-udt-03), behind one interface so each driver's loop — handshake, timers, feedback,
//! progress, record — is the same for both.
//!
//! What differs is what goes on the wire (DATA and ACK, or UDT_DATA, UDT_ACK, UDT_ACK2 and
//! UDT_NAK: docs/udp-wire.md) and what the transport's counters are called.

use std::time::Duration;

use ccarena_cc::{Params, SimTime};
use ccarena_transport::udt::{Ack2Packet, DataPacket, ToReceiver, UdtSender};
use ccarena_transport::{Sender, SenderConfig};

use crate::error::TransferError;
use crate::send::{ack_segment, controller_setup, SendOptions};
use crate::stream::StreamOptions;
use crate::udt::{ack_packet, nak_packet, udt_sender_setup, INITIAL_RTT, UDT_FLAVOR};
use crate::wire::{self, Frame};

/// A data packet to send: stream bytes `[offset, offset + len)` and the fields of its frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DataOut {
    /// Stream offset of the first byte.
    pub(crate) offset: u64,
    /// Payload bytes.
    pub(crate) len: u32,
    kind: DataKind,
}

#[derive(Clone, Copy, Debug)]
enum DataKind {
    /// DATA: time stamp (ns, sender's clock) and flags.
    Tcp { ts_val_ns: u64, flags: u8 },
    /// UDT_DATA: packet sequence number, time stamp (ns), flags.
    Udt { seq: u64, timestamp_ns: u64, flags: u8 },
}

impl DataOut {
    /// The frame carrying `payload` (the packet's `len` bytes).
    pub(crate) fn frame<'a>(&self, payload: &'a [u8]) -> Frame<'a> {
        match self.kind {
            DataKind::Tcp { ts_val_ns, flags } => Frame::Data { offset: self.offset, ts_val_ns, flags, payload },
            DataKind::Udt { seq, timestamp_ns, flags } => {
                Frame::UdtData { seq, offset: self.offset, timestamp_ns, flags, payload }
            }
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

/// The sending half of a file transfer or a scenario stream.
pub(crate) enum Tx {
    /// ccarena's TCP-like transport.
    Tcp(Box<Sender>),
    /// UDT's transport.
    Udt(Box<UdtSender>),
}

impl Tx {
    /// The sender `opts` ask for (flavor `udt`: UDT's transport; any other: the TCP-like one with
    /// that flavor) at `now`, for a receiver advertising `rwnd_bytes` (`u64::MAX`: unlimited).
    /// Returns it with the loss-recovery mode's name (`nak` for UDT).
    ///
    /// # Errors
    /// [`TransferError::Config`]: an unknown flavor or recovery mode, an MSS out of range; for
    /// UDT, a recovery mode or a rate limit (UDT's rate control has neither).
    pub(crate) fn for_file(opts: &SendOptions, rwnd_bytes: u64, now: SimTime) -> Result<(Tx, String), TransferError> {
        let config = |message: String| TransferError::Config { message };
        if opts.flavor == UDT_FLAVOR {
            if opts.recovery.is_some() {
                return Err(config("--recovery: UDT recovers from its receiver's NAKs; it takes no recovery mode".into()));
            }
            if opts.max_rate_bps.is_some() {
                return Err(config("--limit-rate: UDT's rate control takes no rate limit".into()));
            }
            let (cfg, cc) = udt_sender_setup(opts.mss_bytes, &Params::default())?;
            return Ok((Tx::Udt(Box::new(UdtSender::new(cfg, cc, now))), "nak".into()));
        }
        let (cc, recovery) = controller_setup(&opts.flavor, &Params::default(), opts.recovery.as_deref(), opts.mss_bytes)?;
        let mss = opts.mss_bytes;
        let cfg = SenderConfig {
            mss_bytes: mss,
            initial_cwnd_bytes: 10 * mss as u64,
            min_rto: ccarena_cc::Duration(opts.min_rto.as_nanos() as u64),
            initial_rto: ccarena_cc::Duration::from_secs(1),
            max_rto: ccarena_cc::Duration::from_secs(60),
            clock_granularity: ccarena_cc::Duration::from_millis(1),
            recovery,
            dupthresh: 3,
            ecn: false,
            initial_rwnd_bytes: (rwnd_bytes != u64::MAX).then_some(rwnd_bytes),
            sndbuf_bytes: None,
        };
        cfg.validate().map_err(|e| config(e.to_string()))?;
        let mut sender = Sender::new(cfg, cc, now);
        // `opts.max_rate_bps` is not the transport's pacing cap: the file sender's loop keeps it
        // with a token bucket (crate::limit), which sends in batches where a pacer would wake
        // the loop once per packet.
        sender.set_pacing_burst(ccarena_cc::Duration(opts.pacing_burst.as_nanos() as u64));
        Ok((Tx::Tcp(Box::new(sender)), recovery.to_string()))
    }

    /// The sender of a scenario flow with `opts`' transport settings (flavor `udt`: UDT's
    /// transport with `opts.params` as its controller's and UDT4's own settings, the TCP fields
    /// unused; any other: the TCP-like one as the simulator builds it from the same settings) at
    /// `now`, for a sink advertising `rwnd_bytes` (`u64::MAX`: unlimited). Returns it with the
    /// loss-recovery mode's name (`nak` for UDT).
    ///
    /// # Errors
    /// [`TransferError::Config`]: an unknown flavor, parameter or recovery mode, an MSS out of
    /// range, settings [`SenderConfig::validate`] refuses.
    pub(crate) fn for_stream(opts: &StreamOptions, rwnd_bytes: u64, now: SimTime) -> Result<(Tx, String), TransferError> {
        let params = Params::from_pairs(opts.params.clone());
        if opts.flavor == UDT_FLAVOR {
            let (cfg, cc) = udt_sender_setup(opts.mss_bytes, &params)?;
            return Ok((Tx::Udt(Box::new(UdtSender::new(cfg, cc, now))), "nak".into()));
        }
        let (cc, recovery) = controller_setup(&opts.flavor, &params, opts.recovery.as_deref(), opts.mss_bytes)?;
        let cfg = SenderConfig {
            mss_bytes: opts.mss_bytes,
            initial_cwnd_bytes: opts.initial_cwnd_packets as u64 * opts.mss_bytes as u64,
            min_rto: ccarena_cc::Duration(opts.min_rto_ns),
            initial_rto: ccarena_cc::Duration(opts.initial_rto_ns),
            max_rto: ccarena_cc::Duration(opts.max_rto_ns),
            clock_granularity: ccarena_cc::Duration(opts.clock_granularity_ns),
            recovery,
            dupthresh: opts.dupthresh,
            ecn: false,
            initial_rwnd_bytes: (rwnd_bytes != u64::MAX).then_some(rwnd_bytes),
            sndbuf_bytes: opts.sndbuf_bytes,
        };
        cfg.validate().map_err(|e| TransferError::Config { message: format!("{}: {}", e.field, e.reason) })?;
        let mut sender = Sender::new(cfg, cc, now);
        sender.set_pacing_burst(ccarena_cc::Duration(opts.pacing_burst.as_nanos() as u64));
        Ok((Tx::Tcp(Box::new(sender)), recovery.to_string()))
    }

    /// The application offers `bytes` more stream bytes.
    pub(crate) fn app_write(&mut self, bytes: u64) {
        match self {
            Tx::Tcp(s) => s.app_write(bytes),
            Tx::Udt(s) => s.app_write(bytes),
        }
    }

    /// The application offers nothing beyond what was already sent once; that is still delivered.
    pub(crate) fn app_stop(&mut self) {
        match self {
            Tx::Tcp(s) => s.app_stop(),
            Tx::Udt(s) => s.app_stop(),
        }
    }

    /// Stream bytes the application has offered so far, bytes.
    pub(crate) fn bytes_offered(&self) -> u64 {
        match self {
            Tx::Tcp(s) => s.bytes_offered(),
            Tx::Udt(s) => s.bytes_offered(),
        }
    }

    /// Stream bytes sent at least once (retransmissions not counted), bytes.
    pub(crate) fn new_bytes_sent(&self) -> u64 {
        match self {
            Tx::Tcp(s) => s.snd_nxt(),
            Tx::Udt(s) => s.stats().bytes_sent - s.stats().bytes_retransmitted,
        }
    }

    /// Fire the timers due at `t`.
    pub(crate) fn handle_timeout(&mut self, t: SimTime) {
        match self {
            Tx::Tcp(s) => s.handle_timeout(t),
            Tx::Udt(s) => s.handle_timeout(t),
        }
    }

    /// The next packet to send at `t` (call until `None`).
    pub(crate) fn poll_transmit(&mut self, t: SimTime) -> Option<Outgoing> {
        match self {
            Tx::Tcp(s) => s.poll_transmit(t).map(|seg| {
                let flags = (u8::from(seg.retransmit) * wire::FLAG_RETRANSMIT)
                    | (u8::from(seg.ect) * wire::FLAG_ECT)
                    | (u8::from(seg.cwr) * wire::FLAG_CWR);
                let kind = DataKind::Tcp { ts_val_ns: seg.ts_val.as_nanos(), flags };
                Outgoing::Data(DataOut { offset: seg.seq, len: seg.len, kind })
            }),
            Tx::Udt(s) => s.poll_transmit(t).map(|out| match out {
                ToReceiver::Data(DataPacket { seq, offset, len, timestamp, retransmit }) => {
                    let flags = u8::from(retransmit) * wire::FLAG_RETRANSMIT;
                    let kind = DataKind::Udt { seq, timestamp_ns: timestamp.as_nanos(), flags };
                    Outgoing::Data(DataOut { offset, len, kind })
                }
                ToReceiver::Ack2(Ack2Packet { ack_seq }) => Outgoing::Control(Frame::UdtAck2 { ack_seq }),
            }),
        }
    }

    /// When [`Tx::handle_timeout`] or [`Tx::poll_transmit`] must run next.
    pub(crate) fn poll_timeout(&self) -> Option<SimTime> {
        match self {
            Tx::Tcp(s) => s.poll_timeout(),
            Tx::Udt(s) => s.poll_timeout(),
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
            _ => None,
        }
    }

    /// Every offered byte is acknowledged.
    pub(crate) fn is_complete(&self) -> bool {
        match self {
            Tx::Tcp(s) => s.is_complete(),
            Tx::Udt(s) => s.is_complete(),
        }
    }

    /// Stream bytes acknowledged in order.
    pub(crate) fn acked_bytes(&self) -> u64 {
        match self {
            Tx::Tcp(s) => s.snd_una(),
            Tx::Udt(s) => s.snd_una_offset(),
        }
    }

    /// The congestion window, bytes.
    pub(crate) fn cwnd_bytes(&self) -> u64 {
        match self {
            Tx::Tcp(s) => s.cwnd().cwnd_bytes,
            Tx::Udt(s) => s.cwnd().cwnd_bytes,
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
            Tx::Udt(s) => {
                let st = s.stats();
                TxTotals {
                    bytes_sent: st.bytes_sent,
                    bytes_retransmitted: st.bytes_retransmitted,
                    segments_sent: st.packets_sent,
                    retransmissions: st.packets_retransmitted,
                    rto_count: st.exp_timeouts,
                    fast_recoveries: 0,
                }
            }
        }
    }
}
