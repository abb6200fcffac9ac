//! A scenario flow's receiving side (the `udp` backend's sink): one UDP socket that takes one
//! stream (STREAM_OFFER, docs/udp-wire.md) from a scenario sender (`scenario_send`), runs the transport's [`Receiver`] over it
//! and counts the bytes delivered in order, sampled at `t0 + k·interval` on `CLOCK_MONOTONIC` —
//! the goodput the kernel backend's generator counts at a TCP receiver. Nothing is written.
//!
//! The same defences as the file receiver (`file_recv`; both in `service`): no state before an
//! offer carries a valid cookie; HELLOs and offers draw from a token bucket; a foreign version gets one rate-limited
//! VERSION_MISMATCH; everything that does not decode, belongs to no connection or repeats a packet
//! number is dropped and counted. Memory is bounded whatever arrives: one connection (a second
//! offer is refused as busy), no payload kept, DATA beyond the stream, beyond the window
//! ([`MAX_WINDOW_BYTES`] when the flow has no receive buffer) or opening more than
//! [`MAX_OOO_RANGES`] out-of-order ranges dropped.
//!
//! ECN: the offer says which feedback the sender wants (`wire::EcnFeedback`: classic RFC 3168
//! ECE, DCTCP's, or Accurate ECN's ACE and byte counters, RFC 9768); the receiver reads each
//! DATA's codepoint from its IP header as it arrived (`IP_RECVTOS`/`IPV6_RECVTCLASS`,
//! [`crate::batch`]) and echoes the CE marks in its ACKs. Without it the receiver's ECN is off.
//!
//! A stream offered with QUIC settings (docs/udp-wire.md) runs the QUIC transport's
//! [`QuicReceiver`] (RFC 9000 §13.2's ACKs, ECN counts and flow-control credit; the connection
//! window is this sink's `rwnd_bytes`): QUIC_DATA in, QUIC_ACK out. The same bounds hold:
//! QUIC_DATA beyond the stream, beyond the connection or stream credit (or [`MAX_WINDOW_BYTES`]
//! past the delivered bytes when unlimited), or opening more than [`MAX_OOO_RANGES`] stream
//! ranges is dropped unacknowledged (its sender sends it again); the packet numbers it tracks
//! are at most 32 ranges (the receiver's own cap); settings out of range (a `max_ack_delay` of
//! 2^14 ms or more, RFC 9000 §18.2) are refused.
//!
//! A stream offered with flavor `udt` ([`crate::udt`]) runs the UDT transport's
//! [`UdtReceiver`](ccarena_transport::udt::UdtReceiver) instead: UDT_DATA and UDT_ACK2 in, UDT_ACK and UDT_NAK out; a UDT_DATA packet
//! beyond the stream or more than the flow window ahead of the first missing packet is dropped.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ccarena_cc::SimTime;
use ccarena_transport::quic::QuicReceiver;
use ccarena_transport::udt::Ack2Packet;
use ccarena_transport::{Ecn, EcnMode, Receiver, ReceiverConfig};

use crate::clock::{mono_ns, Schedule, KEEPALIVE};
use crate::error::TransferError;
use crate::guard::ReplayWindow;
use crate::rx::{data_segment, quic_packet, udt_data_packet, Rx, MAX_OOO_RANGES};
use crate::service::{read_datagrams, Counters, Service, ServiceSocket};
use crate::tx::quic_config;
use crate::udt::{FLOW_WINDOW_PACKETS, UDT_FLAVOR};
use crate::wire::{self, encode, kind_of, EcnFeedback, Frame, Header, QuicOffer, RejectCode, UNBOUNDED_STREAM};

/// Largest window above the cumulative ACK a sink accepts DATA in when the flow has no receive
/// buffer (`rwnd_bytes` unset: the window is not advertised), bytes. Only the bound on what
/// a hostile sender can make the sink track; no payload is kept.
pub const MAX_WINDOW_BYTES: u64 = 1 << 32;

/// A QUIC stream's max_ack_delay must stay below 2^14 ms (RFC 9000 §18.2: larger values are
/// invalid), ns.
pub const MAX_QUIC_ACK_DELAY_NS: u64 = (1 << 14) * 1_000_000;

/// A sink's settings: the flow's receiver settings (as the simulator builds its receiver) and
/// the run's times.
#[derive(Clone, Debug)]
pub struct SinkOptions {
    /// Receive buffer advertised as the window, bytes (RFC 9293 §3.8.6); `None`: unlimited.
    pub rwnd_bytes: Option<u64>,
    /// Delayed-ACK timer, ns (RFC 5681 §4.2).
    pub delayed_ack_ns: u64,
    /// ACK at least every this many full segments.
    pub ack_every_segments: u32,
    /// Send D-SACK (RFC 2883), as Linux's receiver does (the simulator's does for `linux`
    /// recovery only).
    pub dsack: bool,
    /// The run's `t0`, CLOCK_MONOTONIC ns.
    pub t0_mono_ns: u64,
    /// The flow starts this long after `t0`, ns (samples start at the first instant after it).
    pub start_ns: u64,
    /// The run's length after `t0`, ns.
    pub duration_ns: u64,
    /// Sample interval, ns.
    pub interval_ns: u64,
    /// After the run's end: how long to wait for the sender's CLOSE.
    pub grace: Duration,
    /// A connection silent this long ends.
    pub idle_timeout: Duration,
    /// Linux's quick-ACK mode: the first this many in-order segments each ACKed at once, again
    /// after `quickack_idle_ns` without in-order data, and a sub-MSS segment ACKed at once
    /// (`Receiver::set_quickack`, the simulator's `quickack_segments`); 0: the RFC 5681 receiver.
    pub quickack_segments: u32,
    /// The gap that restarts quick-ACK mode, ns (Linux compares with the receiver's RTO; the
    /// simulator uses the flow's `min_rto_ns`, and so does the udp backend).
    pub quickack_idle_ns: u64,
    /// Handshake packets answered per second.
    pub handshakes_per_s: f64,
    /// Burst of handshake packets answered at once.
    pub handshake_burst: f64,
}

impl Default for SinkOptions {
    /// Linux's receiver (delayed ACK 40 ms or every 2nd segment, D-SACK, no receive-buffer cap);
    /// a 10 s run from now, 100 ms samples, 3 s of grace.
    fn default() -> SinkOptions {
        SinkOptions {
            rwnd_bytes: None,
            delayed_ack_ns: 40_000_000,
            ack_every_segments: 2,
            dsack: true,
            t0_mono_ns: mono_ns(),
            start_ns: 0,
            duration_ns: 10_000_000_000,
            interval_ns: 100_000_000,
            grace: Duration::from_secs(3),
            idle_timeout: Duration::from_secs(10),
            quickack_segments: 0,
            quickack_idle_ns: 200_000_000,
            handshakes_per_s: 200.0,
            handshake_burst: 50.0,
        }
    }
}

/// What a sink measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SinkRecord {
    /// `(seconds since t0, bytes delivered in order)` at every instant of the grid.
    pub samples: Vec<(f64, u64)>,
    /// Bytes delivered in order when the sink stopped.
    pub received_bytes: u64,
    /// Bytes delivered in order at the run's end.
    pub at_end_bytes: u64,
    /// DATA packets that reached the transport (duplicates included: `tcpi_data_segs_in`).
    pub data_segs_in: u64,
    /// Payload bytes that arrived twice.
    pub duplicate_bytes: u64,
    /// DATA packets that arrived above a hole.
    pub out_of_order_segments: u64,
    /// DATA packets that reached the transport with each IP ECN codepoint, indexed by its bits
    /// (RFC 3168 §5): `[Not-ECT, ECT(1), ECT(0), CE]`.
    pub packets_by_ecn: [u64; 4],
    /// Payload bytes of the DATA that arrived CE-marked (duplicates included, as the simulator's
    /// receiver counts them).
    pub ce_bytes: u64,
    /// The ECN feedback the stream's sender asked for (`None`: no ECN).
    pub ecn_feedback: Option<EcnFeedback>,
    /// A sender connected.
    pub connected: bool,
    /// The sender closed the stream (rather than the sink timing out).
    pub closed_by_sender: bool,
    /// What the socket saw and dropped.
    pub counters: Counters,
}

/// The one stream a sink takes.
struct Stream {
    peer: SocketAddr,
    conn_id: u64,
    stream_bytes: u64,
    replay: ReplayWindow,
    pn_out: u64,
    rx: Rx,
    epoch: Instant,
    last_heard: Instant,
    last_sent: Instant,
    data_segs_in: u64,
    packets_by_ecn: [u64; 4],
    ecn: Option<EcnFeedback>,
    /// QUIC_DATA that arrived above a hole (the QUIC receiver does not count them).
    quic_out_of_order: u64,
    closed: bool,
}

/// A bound sink.
pub struct Sink {
    port: ServiceSocket,
    opts: SinkOptions,
    stream: Option<Stream>,
}

impl Service for Sink {
    fn socket(&mut self) -> &mut ServiceSocket {
        &mut self.port
    }
}

impl Sink {
    /// Bind `addr` (`HOST:PORT`).
    ///
    /// # Errors
    /// [`TransferError::BadAddress`], [`TransferError::PortInUse`], [`TransferError::Bind`], or
    /// [`TransferError::Config`] for a receiver setting out of range.
    pub fn bind(addr: &str, opts: SinkOptions) -> Result<Sink, TransferError> {
        receiver_config(&opts, 1000).validate().map_err(|e| TransferError::Config { message: format!("{}: {}", e.field, e.reason) })?;
        let port = ServiceSocket::bind(addr, opts.handshakes_per_s, opts.handshake_burst, None)?;
        Ok(Sink { port, opts, stream: None })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.port.local_addr()
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.port.counters
    }

    /// A stream was accepted.
    pub fn connected(&self) -> bool {
        self.stream.is_some()
    }

    /// Bytes delivered in order so far.
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered()
    }

    /// Out-of-order ranges the stream's TCP-like receiver holds now (bounded by
    /// [`MAX_OOO_RANGES`]); 0 for a UDT stream, whose loss list the flow window bounds.
    pub fn out_of_order_ranges(&self) -> usize {
        self.stream.as_ref().map_or(0, |s| match &s.rx {
            Rx::Tcp(r) => r.out_of_order_ranges().count(),
            Rx::Udt(_) => 0,
            Rx::Quic(r) => r.out_of_order_ranges(),
        })
    }

    /// The cookie a RETRY to `peer` for `conn_id` carries now (for tests and fuzzing, which must
    /// get past the handshake).
    pub fn cookie_for(&self, peer: SocketAddr, conn_id: u64) -> [u8; wire::COOKIE_BYTES] {
        self.port.cookie_for(peer, conn_id)
    }

    /// Count what arrives until the run's end, then until the sender's CLOSE (or `grace` after
    /// the end, or the stream going silent for `idle_timeout`). `keep_going` is asked about every
    /// 100 ms; false stops at once (the record so far is returned).
    ///
    /// # Errors
    /// An I/O error of the socket.
    pub fn run(&mut self, keep_going: &mut dyn FnMut() -> bool) -> Result<SinkRecord, TransferError> {
        crate::net::fine_timers();
        let o = &self.opts;
        let mut sched = Schedule::new(o.t0_mono_ns, o.interval_ns, o.duration_ns, o.start_ns);
        let end_at = sched.end_ns();
        let hard_end = end_at + o.grace.as_nanos() as u64;
        let idle = o.idle_timeout;
        let mut samples = Vec::new();
        let mut at_end: Option<u64> = None;
        let mut next_check = 0u64;
        let mut rbatch = self.port.sock.new_recv_batch();
        loop {
            let t = mono_ns();
            if sched.due(t) {
                samples.push((sched.take(), self.delivered()));
                continue;
            }
            if t >= end_at && at_end.is_none() {
                at_end = Some(self.delivered());
            }
            let done = self.stream.as_ref().is_none_or(|s| s.closed);
            if (t >= end_at && done) || t >= hard_end {
                break;
            }
            if let Some(s) = self.stream.as_mut().filter(|s| !s.closed) {
                let now = Instant::now();
                let st = SimTime(now.saturating_duration_since(s.epoch).as_nanos() as u64);
                s.rx.handle_timeout(st);
                flush(s, &mut self.port, st);
                if now.duration_since(s.last_heard) >= idle {
                    s.closed = true;
                } else if now.duration_since(s.last_sent) >= KEEPALIVE {
                    send(s, &mut self.port, &Frame::Ping);
                }
            }
            if t >= next_check {
                next_check = t + 100_000_000;
                if !keep_going() {
                    break;
                }
            }
            let mut deadline = sched.next_ns().min(next_check).min(if t < end_at { end_at } else { hard_end });
            if let Some(s) = self.stream.as_ref().filter(|s| !s.closed) {
                let since = |i: Instant| Instant::now().saturating_duration_since(i).as_nanos() as u64;
                deadline = deadline.min(t + (KEEPALIVE.as_nanos() as u64).saturating_sub(since(s.last_sent)));
                if let Some(w) = s.rx.poll_timeout() {
                    deadline = deadline.min(t + w.as_nanos().saturating_sub(since(s.epoch)));
                }
            }
            let timeout = Duration::from_nanos(deadline.saturating_sub(mono_ns()));
            read_datagrams(self, &mut rbatch, timeout, |sink, data, from| sink.on_datagram(data, from))?;
        }
        let s = self.stream.as_ref();
        let st = s.map(|s| s.rx.disorder());
        Ok(SinkRecord {
            samples,
            received_bytes: self.delivered(),
            at_end_bytes: at_end.unwrap_or_else(|| self.delivered()),
            data_segs_in: s.map_or(0, |s| s.data_segs_in),
            packets_by_ecn: s.map_or([0; 4], |s| s.packets_by_ecn),
            ce_bytes: s.map_or(0, |s| match &s.rx {
                Rx::Tcp(r) => r.stats().ce_bytes,
                Rx::Udt(_) => 0,
                Rx::Quic(r) => r.stats().ce_bytes,
            }),
            ecn_feedback: s.and_then(|s| s.ecn),
            duplicate_bytes: st.map_or(0, |st| st.0),
            out_of_order_segments: st.map_or(0, |st| st.1) + s.map_or(0, |s| s.quic_out_of_order),
            connected: s.is_some(),
            closed_by_sender: s.is_some_and(|s| s.closed && s.last_heard.elapsed() < idle),
            counters: self.port.counters,
        })
    }

    /// Bytes delivered in order so far.
    fn delivered(&self) -> u64 {
        self.stream.as_ref().map_or(0, |s| s.rx.delivered())
    }

    /// Handle one datagram from `from` that arrived with the IP ECN field `ecn` (public for the
    /// fuzz target over the sink's state machine, which has no IP header to read).
    pub fn on_datagram_with_ecn(&mut self, data: &[u8], from: SocketAddr, ecn: Ecn) {
        self.port.arrival_ecn = ecn;
        self.on_datagram(data, from);
        self.port.arrival_ecn = Ecn::NotEct;
    }

    /// Handle one datagram from `from` (public for the fuzz target over the sink's state
    /// machine); its IP ECN field is the one the socket read with it (Not-ECT when called
    /// directly: see [`Sink::on_datagram_with_ecn`]).
    pub fn on_datagram(&mut self, data: &[u8], from: SocketAddr) {
        let now = Instant::now();
        let Some((h, frame)) = self.port.decode(data, from, now) else { return };
        let ours = self.stream.as_ref().is_some_and(|s| s.peer == from && s.conn_id == h.conn_id);
        match frame {
            Frame::Hello => self.port.hello(from, h.conn_id, now),
            Frame::StreamOffer { cookie, stream_bytes, mss_bytes, flavor, ecn, quic } => {
                if ours {
                    // Its ACCEPT was lost: say it again.
                    let s = self.stream.as_mut().expect("ours");
                    if s.replay.accept(h.pn) {
                        let accept = accept_frame(s.stream_bytes, self.opts.rwnd_bytes);
                        send(s, &mut self.port, &accept);
                    }
                    return;
                }
                if !self.port.admit_offer(from, h.conn_id, &cookie, now) {
                    return;
                }
                let refusal = if self.stream.is_some() {
                    self.port.counters.connection_limit += 1;
                    Some((RejectCode::Busy, "this sink takes one stream"))
                } else if !(64..=wire::MAX_PAYLOAD_BYTES as u16).contains(&mss_bytes)
                    || (flavor == UDT_FLAVOR && mss_bytes as usize > wire::MAX_UDT_PAYLOAD_BYTES)
                {
                    Some((RejectCode::BadOffer, "MSS out of range"))
                } else if flavor == UDT_FLAVOR && ecn.is_some() {
                    Some((RejectCode::BadOffer, "UDT runs without ECN"))
                } else if flavor == UDT_FLAVOR && quic.is_some() {
                    Some((RejectCode::BadOffer, "UDT is its own transport, not QUIC's"))
                } else if quic.is_some_and(|q| !self.quic_settings_ok(&q, mss_bytes)) {
                    Some((RejectCode::BadOffer, "QUIC settings out of range"))
                } else {
                    None
                };
                if let Some((code, message)) = refusal {
                    self.port.refuse(from, h.conn_id, code, message);
                    return;
                }
                let mut replay = ReplayWindow::default();
                replay.accept(h.pn);
                let mut s = Stream {
                    peer: from,
                    conn_id: h.conn_id,
                    stream_bytes,
                    replay,
                    pn_out: 0,
                    rx: if flavor == UDT_FLAVOR {
                        Rx::udt(SimTime(0))
                    } else if let Some(q) = quic {
                        Rx::Quic(Box::new(QuicReceiver::new(self.quic_receiver_config(&q, mss_bytes, ecn))))
                    } else {
                        let mut cfg = receiver_config(&self.opts, mss_bytes as u32);
                        cfg.ecn = ecn.map_or(EcnMode::Off, EcnFeedback::receiver_mode);
                        let mut receiver = Receiver::new(cfg);
                        let o = &self.opts;
                        receiver.set_quickack(o.quickack_segments, Some(ccarena_cc::Duration(o.quickack_idle_ns)));
                        receiver.set_ack_short_segments(o.quickack_segments > 0);
                        Rx::Tcp(Box::new(receiver))
                    },
                    epoch: now,
                    last_heard: now,
                    last_sent: now,
                    data_segs_in: 0,
                    packets_by_ecn: [0; 4],
                    ecn,
                    quic_out_of_order: 0,
                    closed: false,
                };
                send(&mut s, &mut self.port, &accept_frame(stream_bytes, self.opts.rwnd_bytes));
                self.stream = Some(s);
            }
            // A file sent to a sink.
            Frame::Offer(o) => self.port.refuse_other_service(from, h.conn_id, &o.cookie, now, "this is a stream sink; it takes no files"),
            Frame::Data { offset, ts_val_ns, flags, payload } => {
                let window = self.opts.rwnd_bytes.unwrap_or(MAX_WINDOW_BYTES);
                let counters = &mut self.port.counters;
                let Some(s) = heard(&mut self.stream, counters, ours, h.pn, now, false) else { return };
                let Rx::Tcp(rx) = &mut s.rx else {
                    counters.out_of_bounds += 1; // TCP-like DATA on a UDT stream
                    return;
                };
                let len = payload.len() as u64;
                let end = offset + len; // decode checked it does not overflow
                let rcv_nxt = rx.rcv_nxt();
                let beyond_stream = s.stream_bytes != UNBOUNDED_STREAM && end > s.stream_bytes;
                let beyond_window = end > rcv_nxt.saturating_add(window);
                let too_scattered = offset > rcv_nxt && rx.out_of_order_ranges().count() >= MAX_OOO_RANGES;
                if beyond_stream || beyond_window || too_scattered {
                    counters.out_of_bounds += 1;
                    return;
                }
                s.data_segs_in += 1;
                let ecn = self.port.arrival_ecn;
                s.packets_by_ecn[ecn.bits() as usize] += 1;
                let seg = data_segment(offset, len as u32, ts_val_ns, flags, ecn);
                let st = SimTime(now.saturating_duration_since(s.epoch).as_nanos() as u64);
                let _ = rx.on_segment(st, &seg);
                flush(s, &mut self.port, st);
            }
            Frame::QuicData { pn, offset, flags, payload } => {
                let window = self.opts.rwnd_bytes.unwrap_or(MAX_WINDOW_BYTES);
                let counters = &mut self.port.counters;
                let Some(s) = heard(&mut self.stream, counters, ours, h.pn, now, false) else { return };
                let Rx::Quic(rx) = &mut s.rx else {
                    counters.out_of_bounds += 1; // QUIC packets on a TCP-like or UDT stream
                    return;
                };
                let len = payload.len() as u64;
                let end = offset + len; // decode checked it does not overflow
                let delivered = rx.delivered_bytes();
                // RFC 9000 §4.1: data beyond the credit advertised is a flow-control error; the
                // credit is at most what was delivered plus the windows.
                let stream_window = rx.config().max_stream_data_bytes.unwrap_or(u64::MAX);
                let credit = delivered.saturating_add(window.min(stream_window));
                let carries = len > 0;
                let beyond_stream = carries && s.stream_bytes != UNBOUNDED_STREAM && end > s.stream_bytes;
                let beyond_credit = carries && end > credit;
                let above_hole = carries && offset > delivered;
                let too_scattered = above_hole && rx.out_of_order_ranges() >= MAX_OOO_RANGES;
                if beyond_stream || beyond_credit || too_scattered {
                    counters.out_of_bounds += 1;
                    return;
                }
                s.data_segs_in += 1;
                s.quic_out_of_order += u64::from(above_hole);
                let ecn = self.port.arrival_ecn;
                s.packets_by_ecn[ecn.bits() as usize] += 1;
                let st = SimTime(now.saturating_duration_since(s.epoch).as_nanos() as u64);
                let _ = rx.on_packet(st, &quic_packet(pn, offset, len as u32, flags, ecn));
                flush(s, &mut self.port, st);
            }
            Frame::UdtData { .. } | Frame::UdtAck2 { .. } => {
                let counters = &mut self.port.counters;
                let Some(s) = heard(&mut self.stream, counters, ours, h.pn, now, false) else { return };
                let st = SimTime(now.saturating_duration_since(s.epoch).as_nanos() as u64);
                // When it arrived, not when it was read (the kernel's stamp, batch::Datagram).
                let arrived = SimTime(st.as_nanos().saturating_sub(self.port.arrival_age_ns));
                let Rx::Udt(rx) = &mut s.rx else {
                    self.port.counters.out_of_bounds += 1; // UDT packets on a TCP-like stream
                    return;
                };
                match frame {
                    Frame::UdtData { seq, offset, timestamp_ns, flags, payload } => {
                        let end = offset + payload.len() as u64; // decode checked it does not overflow
                        let beyond_stream = s.stream_bytes != UNBOUNDED_STREAM && end > s.stream_bytes;
                        let beyond_window = seq >= rx.rcv_nxt().saturating_add(FLOW_WINDOW_PACKETS as u64);
                        if beyond_stream || beyond_window {
                            self.port.counters.out_of_bounds += 1;
                            return;
                        }
                        s.data_segs_in += 1;
                        let _ = rx.on_data(arrived, &udt_data_packet(seq, offset, timestamp_ns, flags, payload.len()));
                    }
                    Frame::UdtAck2 { ack_seq } => {
                        let _ = rx.on_ack2(st, &Ack2Packet { ack_seq });
                    }
                    _ => unreachable!("matched above"),
                }
                flush(s, &mut self.port, st);
            }
            Frame::Ping | Frame::Close { .. } => {
                let counters = &mut self.port.counters;
                let Some(s) = heard(&mut self.stream, counters, ours, h.pn, now, true) else { return };
                if matches!(frame, Frame::Close { .. }) {
                    s.closed = true;
                }
            }
            // Server-to-client packets sent to a server.
            _ => self.port.counters.malformed += 1,
        }
    }
}

impl Sink {
    /// The QUIC receiver's settings for an offer's: its ACK thresholds and delay, stream window
    /// and payload size, this sink's receive window as the connection window (RFC 9000 §4.1),
    /// ECN counts when the stream uses ECN (RFC 9000 §13.4).
    fn quic_receiver_config(&self, q: &QuicOffer, mss_bytes: u16, ecn: Option<EcnFeedback>) -> ccarena_transport::quic::QuicConfig {
        quic_config(mss_bytes as u32, 10, q, self.opts.rwnd_bytes, None, ecn)
    }

    /// An offer's QUIC settings are ones the receiver takes: [`QuicConfig::validate`]'s
    /// ranges and a max_ack_delay below [`MAX_QUIC_ACK_DELAY_NS`].
    ///
    /// [`QuicConfig::validate`]: ccarena_transport::quic::QuicConfig::validate
    fn quic_settings_ok(&self, q: &QuicOffer, mss_bytes: u16) -> bool {
        q.max_ack_delay_ns < MAX_QUIC_ACK_DELAY_NS && self.quic_receiver_config(q, mss_bytes, None).validate().is_ok()
    }
}

fn receiver_config(o: &SinkOptions, mss_bytes: u32) -> ReceiverConfig {
    ReceiverConfig {
        mss_bytes,
        delayed_ack: ccarena_cc::Duration(o.delayed_ack_ns),
        ack_every_segments: o.ack_every_segments,
        ecn: EcnMode::Off,
        rcvbuf_bytes: o.rwnd_bytes,
        dsack: o.dsack,
    }
}

fn accept_frame(stream_bytes: u64, rwnd_bytes: Option<u64>) -> Frame<'static> {
    Frame::Accept { stream_bytes, rwnd_bytes: rwnd_bytes.unwrap_or(u64::MAX), held: Vec::new() }
}

/// Send `frame` on stream `s` through `port`.
fn send(s: &mut Stream, port: &mut ServiceSocket, frame: &Frame<'_>) {
    let h = Header { version: wire::VERSION, kind: kind_of(frame), conn_id: s.conn_id, pn: s.pn_out };
    s.pn_out += 1;
    encode(&h, frame, &mut port.buf);
    s.last_sent = Instant::now();
    // A send error (a vanished route) is the sender's to notice: it retransmits.
    let _ = port.sock.send_to(&port.buf, s.peer);
}

/// Send what the receiver has to send: ACKs (TCP-like), or UDT's ACKs and NAKs.
fn flush(s: &mut Stream, port: &mut ServiceSocket, t: SimTime) {
    while let Some(frame) = s.rx.poll_frame(t) {
        send(s, port, &frame);
    }
}

/// The stream a packet numbered `pn` belongs to (`ours`: from its peer and connection), heard
/// at `now`: `None` when it is not ours (counted: `unknown_connection`), a replay (counted:
/// `replayed`), or — unless `even_closed` — the stream is closed (not counted).
fn heard<'s>(stream: &'s mut Option<Stream>, counters: &mut Counters, ours: bool, pn: u64, now: Instant, even_closed: bool) -> Option<&'s mut Stream> {
    let Some(s) = stream.as_mut().filter(|_| ours) else {
        counters.unknown_connection += 1;
        return None;
    };
    if s.closed && !even_closed {
        return None;
    }
    if !s.replay.accept(pn) {
        counters.replayed += 1;
        return None;
    }
    s.last_heard = now;
    Some(s)
}
