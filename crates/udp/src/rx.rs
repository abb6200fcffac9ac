//! The receiving half of a connection, TCP-like ([`Receiver`]), UDT's ([`UdtReceiver`]) or
//! QUIC's ([`QuicReceiver`], scenario sinks only), and the feedback frames it answers with (ACK;
//! UDT_ACK and UDT_NAK; QUIC_ACK: docs/udp-wire.md), and the transport's view of an arriving
//! data frame. Shared by the file receiver's connections (`file_recv_conn`) and the scenario sink
//! (`scenario_sink`).

use std::time::Duration;

use ccarena_cc::SimTime;
use ccarena_transport::quic::{QuicPacket, QuicReceiver};
use ccarena_transport::udt::{DataPacket, ToSender, UdtReceiver, UdtReceiverConfig};
use ccarena_transport::{DataSegment, Ecn, Receiver};

use crate::udt::{FLOW_WINDOW_PACKETS, INITIAL_RTT, SYN};
use crate::wire::{self, AckFrame, Frame, QuicAckFrame, UdtAckFrame, MAX_NAK_RANGES, MAX_QUIC_ACK_RANGES, MAX_SACK_RANGES};

/// Most out-of-order ranges a TCP-like receiving half holds above a hole: DATA that would open
/// another is dropped, so the transport's reassembly list stays small whatever a sender does.
pub const MAX_OOO_RANGES: usize = 1024;

/// The transport's receiving half: TCP-like, or UDT's.
#[derive(Debug)]
pub(crate) enum Rx {
    /// ccarena's TCP-like receiver.
    Tcp(Box<Receiver>),
    /// UDT's receiver.
    Udt(Box<UdtReceiver>),
    /// The QUIC transport's receiver.
    Quic(Box<QuicReceiver>),
}

/// UDT's receiver settings: UDT4's defaults, as the sender's ([`crate::udt`]).
pub(crate) fn udt_receiver_config() -> UdtReceiverConfig {
    let d = |x: Duration| ccarena_cc::Duration(x.as_nanos() as u64);
    UdtReceiverConfig { syn_interval: d(SYN), max_flow_window_packets: FLOW_WINDOW_PACKETS, initial_rtt: d(INITIAL_RTT) }
}

/// The transport's data segment from a DATA frame's fields (`len` payload bytes; the flags' CWR
/// and retransmit bits) and `ecn`, the ECN field of the IP header it arrived in (RFC 3168 §5:
/// what the receiver feeds back is what the network delivered, CE included; the frame's ECT
/// flag, what the sender set, is not used).
pub(crate) fn data_segment(offset: u64, len: u32, ts_val_ns: u64, flags: u8, ecn: Ecn) -> DataSegment {
    DataSegment {
        seq: offset,
        len,
        ts_val: SimTime(ts_val_ns),
        ecn,
        cwr: flags & wire::FLAG_CWR != 0,
        retransmit: flags & wire::FLAG_RETRANSMIT != 0,
    }
}

/// UDT's data packet from a UDT_DATA frame's fields (`len` payload bytes).
pub(crate) fn udt_data_packet(seq: u64, offset: u64, timestamp_ns: u64, flags: u8, len: usize) -> DataPacket {
    DataPacket { seq, offset, len: len as u32, timestamp: SimTime(timestamp_ns), retransmit: flags & wire::FLAG_RETRANSMIT != 0 }
}

/// The QUIC transport's packet from a QUIC_DATA frame's fields (`len` payload bytes, the
/// retransmit flag) and `ecn`, the IP header's ECN field as it arrived (RFC 9000 §13.4.1: the
/// counts are of what the network delivered).
pub(crate) fn quic_packet(pn: u64, offset: u64, len: u32, flags: u8, ecn: Ecn) -> QuicPacket {
    QuicPacket { pn, offset, len, sent_at: SimTime::ZERO, ecn, retransmit: flags & wire::FLAG_RETRANSMIT != 0 }
}

impl Rx {
    /// A UDT receiver whose timers start at `now`.
    pub(crate) fn udt(now: SimTime) -> Rx {
        Rx::Udt(Box::new(UdtReceiver::new(udt_receiver_config(), now)))
    }

    /// Fire the timers due at `t` (delayed ACK; UDT's ACK and NAK timers).
    pub(crate) fn handle_timeout(&mut self, t: SimTime) {
        match self {
            Rx::Tcp(r) => r.handle_timeout(t),
            Rx::Udt(r) => r.handle_timeout(t),
            Rx::Quic(r) => r.handle_timeout(t),
        }
    }

    /// Acknowledge what arrived at `t` now rather than when the ACK timer would (the last bytes
    /// of a transfer: the sender's RTT and completion time see them).
    pub(crate) fn ack_now(&mut self, t: SimTime) {
        match self {
            Rx::Tcp(r) => r.handle_timeout(SimTime::NEVER),
            // UDT's ACK timer runs every SYN: one SYN on, it is due.
            Rx::Udt(r) => r.handle_timeout(t + ccarena_cc::Duration(SYN.as_nanos() as u64)),
            Rx::Quic(r) => r.handle_timeout(SimTime::NEVER),
        }
    }

    /// When [`Rx::handle_timeout`] must run next.
    pub(crate) fn poll_timeout(&self) -> Option<SimTime> {
        match self {
            Rx::Tcp(r) => r.poll_timeout(),
            Rx::Udt(r) => r.poll_timeout(),
            Rx::Quic(r) => r.poll_timeout(),
        }
    }

    /// Bytes delivered in order.
    pub(crate) fn delivered(&self) -> u64 {
        match self {
            Rx::Tcp(r) => r.rcv_nxt(),
            Rx::Udt(r) => r.delivered_bytes(),
            Rx::Quic(r) => r.delivered_bytes(),
        }
    }

    /// (duplicate bytes, out-of-order segments or packets).
    pub(crate) fn disorder(&self) -> (u64, u64) {
        match self {
            Rx::Tcp(r) => (r.stats().duplicate_bytes, r.stats().out_of_order_segments),
            Rx::Udt(r) => (r.stats().duplicate_bytes, r.stats().out_of_order_packets),
            // The QUIC receiver does not count them; the sink does (`scenario_sink`).
            Rx::Quic(r) => (r.stats().duplicate_bytes, 0),
        }
    }

    /// The next feedback frame to send at `t` (call until `None`).
    pub(crate) fn poll_frame(&mut self, t: SimTime) -> Option<Frame<'static>> {
        match self {
            Rx::Tcp(r) => r.poll_ack(t).map(|a| {
                let mut sack = [(0, 0); MAX_SACK_RANGES];
                for (x, b) in sack.iter_mut().zip(a.sack_blocks()) {
                    *x = (b.start, b.end);
                }
                Frame::Ack(AckFrame {
                    ack: a.ack,
                    rwnd_bytes: a.rwnd_bytes,
                    ts_ecr_ns: a.ts_ecr.as_nanos(),
                    ts_recv_ns: a.ts_recv.as_nanos(),
                    flags: u8::from(a.ece) * wire::FLAG_ECE,
                    sack,
                    sack_count: a.sack_count,
                    accecn: a.accecn,
                })
            }),
            Rx::Udt(r) => r.poll_transmit(t).map(|p| match p {
                ToSender::Ack(a) => Frame::UdtAck(UdtAckFrame {
                    ack_seq: a.ack_seq,
                    ack_no: a.ack_no,
                    rtt_ns: a.rtt.as_nanos(),
                    rtt_var_ns: a.rtt_var.as_nanos(),
                    buffer_available_packets: a.buffer_available_packets,
                    arrival_rate_pps: a.arrival_rate_pps,
                    link_capacity_pps: a.link_capacity_pps,
                }),
                ToSender::Nak(n) => {
                    let mut ranges = [(0, 0); MAX_NAK_RANGES];
                    for (x, r) in ranges.iter_mut().zip(n.ranges()) {
                        *x = (r.start, r.end);
                    }
                    Frame::UdtNak { ranges, count: n.count }
                }
            }),
            Rx::Quic(r) => r.poll_ack(t).map(|a| {
                let mut ranges = [(0, 0); MAX_QUIC_ACK_RANGES];
                for (x, p) in ranges.iter_mut().zip(a.ranges()) {
                    *x = (p.smallest, p.largest);
                }
                Frame::QuicAck(Box::new(QuicAckFrame {
                    largest: a.largest,
                    ack_delay_ns: a.ack_delay.as_nanos(),
                    largest_received_at_ns: a.largest_received_at.as_nanos(),
                    max_data: a.max_data,
                    max_stream_data: a.max_stream_data,
                    credit_update: a.credit_update,
                    ranges,
                    range_count: a.range_count,
                    ecn: a.ecn.map(|e| (e.ect0, e.ect1, e.ce)),
                }))
            }),
        }
    }
}
