//! Scenario UDT flows on real sockets: the UDT transport's sans-IO [`UdtSender`]
//! (`ccarena_transport::udt`, the code the simulator runs; Gu & Grossman, Computer Networks 2007;
//! draft-gg-udt-03) driven over a UDP socket, as [`crate::stream::send_stream`] drives the
//! TCP-like sender, to a [`crate::sink::Sink`] that runs the [`ccarena_transport::udt::UdtReceiver`].
//!
//! The handshake is the stream's (STREAM_OFFER with flavor `udt`, docs/udp-wire.md); UDT's data,
//! ACK, ACK2 and NAK packets travel as the UDT_DATA, UDT_ACK, UDT_ACK2 and UDT_NAK frames. Times
//! and samples follow [`crate::stream`]: the first byte leaves at `t0 + start`, samples at
//! `t0 + k·interval`, totals at the run's end and again after draining.

use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::Duration;

use ccarena_cc::udt::Udt;
use ccarena_cc::{Params, SimTime};
use ccarena_transport::udt::{Ack2Packet, AckPacket, DataPacket, LossRange, NakPacket, ToReceiver, UdtSender, UdtSenderConfig};

use crate::error::TransferError;
use crate::net::{Datagrams, Socket};
use crate::send::{handshake, Link, KEEPALIVE};
use crate::stream::{mono_ns, Schedule, SenderSample, StreamOptions, StreamRecord, StreamTotals};
use crate::wire::{self, Frame, UdtAckFrame, UNBOUNDED_STREAM};

/// The flavor name that selects UDT ([`crate::stream::send_stream`] hands such a flow here).
pub const UDT_FLAVOR: &str = "udt";
/// SYN, the rate-control and ACK interval: UDT4's and the draft's 10 ms (draft-gg-udt-03 §4).
pub const SYN: Duration = Duration::from_millis(10);
/// The maximum flow window, packets: UDT4's default receiver buffer (the simulator's default).
pub const FLOW_WINDOW_PACKETS: u32 = 25_600;
/// RTT assumed before the first measurement (UDT4: 10·SYN).
pub const INITIAL_RTT: Duration = Duration::from_millis(100);
/// Floor of the EXP period (draft-gg-udt-03 §4: "e.g., 0.5 second").
pub const MIN_EXP: Duration = Duration::from_millis(500);
/// How often the driver asks its caller whether to go on, at most, ns.
const CHECK_EVERY_NS: u64 = 100_000_000;

fn cc_dur(d: Duration) -> ccarena_cc::Duration {
    ccarena_cc::Duration(d.as_nanos() as u64)
}

fn secs(d: ccarena_cc::Duration) -> f64 {
    d.as_nanos() as f64 / 1e9
}

/// UDT's state as the stream's sample (UDT has no ssthresh, RTO or CA state: none, 0, 0).
fn sample(s: &UdtSender, time_s: f64, offered_bytes: u64) -> SenderSample {
    let cw = s.cwnd();
    SenderSample {
        time_s,
        sent_bytes: s.stats().bytes_sent,
        acked_bytes: s.snd_una_offset(),
        offered_bytes,
        cwnd_bytes: cw.cwnd_bytes,
        ssthresh_bytes: None,
        srtt_s: Some(secs(s.rtt())),
        rttvar_s: Some(secs(s.rtt_var())),
        rto_s: secs(s.exp_period()),
        inflight_bytes: s.unacked_bytes(),
        pacing_rate_bps: cw.pacing_rate_bps.filter(|r| *r > 0),
        retransmits: s.stats().packets_retransmitted,
        ca_state: 0,
    }
}

fn totals(s: &UdtSender, offered_bytes: u64, min_rtt_us: Option<u64>) -> StreamTotals {
    let st = s.stats();
    StreamTotals {
        bytes_sent: st.bytes_sent,
        bytes_retrans: st.bytes_retransmitted,
        bytes_acked: s.snd_una_offset(),
        data_segs_out: st.packets_sent,
        total_retrans: st.packets_retransmitted,
        total_rto: st.exp_timeouts,
        fast_recoveries: 0,
        spurious_rtos: 0,
        min_rtt_us,
        offered_bytes,
    }
}

/// UDT's ACK from a UDT_ACK frame.
pub(crate) fn ack_packet(a: &UdtAckFrame) -> AckPacket {
    AckPacket {
        ack_seq: a.ack_seq,
        ack_no: a.ack_no,
        rtt: ccarena_cc::Duration(a.rtt_ns),
        rtt_var: ccarena_cc::Duration(a.rtt_var_ns),
        buffer_available_packets: a.buffer_available_packets,
        arrival_rate_pps: a.arrival_rate_pps,
        link_capacity_pps: a.link_capacity_pps,
    }
}

/// UDT's NAK from a UDT_NAK frame's ranges.
pub(crate) fn nak_packet(ranges: &[(u64, u64)]) -> NakPacket {
    let mut nak = NakPacket::default();
    for (x, &(start, end)) in nak.ranges.iter_mut().zip(ranges) {
        *x = LossRange { start, end };
    }
    nak.count = ranges.len().min(nak.ranges.len()) as u8;
    nak
}

/// The UDT sender's settings (UDT4's defaults: [`SYN`], [`FLOW_WINDOW_PACKETS`],
/// [`INITIAL_RTT`], [`MIN_EXP`]) for packets of `mss_bytes`, and its controller with `params`.
///
/// # Errors
/// [`TransferError::Config`]: an MSS outside 1 to [`wire::MAX_UDT_PAYLOAD_BYTES`], a bad parameter.
pub(crate) fn udt_sender_setup(mss_bytes: u32, params: &Params) -> Result<(UdtSenderConfig, Udt), TransferError> {
    let config = |message: String| TransferError::Config { message };
    if mss_bytes == 0 || mss_bytes as usize > wire::MAX_UDT_PAYLOAD_BYTES {
        return Err(config(format!(
            "mss: {mss_bytes} bytes; a UDT_DATA packet carries 1 to {}",
            wire::MAX_UDT_PAYLOAD_BYTES
        )));
    }
    let cc = Udt::new(params).map_err(|e| config(format!("params: {e}")))?;
    let cfg = UdtSenderConfig {
        mss_bytes,
        syn_interval: cc_dur(SYN),
        max_flow_window_packets: FLOW_WINDOW_PACKETS,
        initial_rtt: cc_dur(INITIAL_RTT),
        min_exp: cc_dur(MIN_EXP),
    };
    cfg.validate().map_err(|e| config(format!("{}: {}", e.field, e.reason)))?;
    Ok((cfg, cc))
}

/// Send one scenario UDT flow to the sink at `peer` (`HOST:PORT`) from `bind` (`HOST`; `None`:
/// any address), following `opts`' times (its `params` are the `udt` controller's; `mss_bytes`
/// at most [`wire::MAX_UDT_PAYLOAD_BYTES`]; the TCP fields are not used). `keep_going` is asked
/// about every 100 ms (false: stop at once with [`TransferError::Interrupted`]).
///
/// # Errors
/// [`TransferError`]: bad parameters or MSS ([`TransferError::Config`]), a bad address, a sink
/// that does not answer or refuses, a foreign wire version, a sink silent for `idle_timeout`, an
/// interruption.
pub fn send_udt_stream(
    bind: Option<&str>,
    peer: &str,
    opts: &StreamOptions,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<StreamRecord, TransferError> {
    let mss = opts.mss_bytes;
    let (cfg, cc) = udt_sender_setup(mss, &Params::from_pairs(opts.params.clone()))?;
    crate::net::fine_timers();

    let bad_addr = |reason: String| TransferError::BadAddress { addr: peer.to_string(), reason };
    let peer_addr: SocketAddr = peer
        .to_socket_addrs()
        .map_err(|e| bad_addr(e.to_string()))?
        .next()
        .ok_or_else(|| bad_addr("resolves to no address".into()))?;
    let local = match bind {
        Some(host) => format!("{host}:0"),
        None if peer_addr.is_ipv4() => "0.0.0.0:0".into(),
        None => "[::]:0".into(),
    };
    let io = |context: &str, error| TransferError::Io { context: context.to_string(), error };
    let udp = UdpSocket::bind(local.as_str()).map_err(|e| io("bind", e))?;
    udp.connect(peer_addr).map_err(|e| io("connect", e))?;
    let sock: Box<dyn Datagrams> = Box::new(Socket::new(udp).map_err(|e| io("socket", e))?);
    let mut link = Link::new(sock, peer_addr);
    let stream_bytes = opts.bytes.unwrap_or(UNBOUNDED_STREAM);
    let acc = handshake(
        &mut link,
        &|cookie| Frame::StreamOffer { cookie, stream_bytes, mss_bytes: mss as u16, flavor: UDT_FLAVOR },
        opts.handshake_timeout,
        keep_going,
    )?;
    if acc.stream_bytes != stream_bytes || !acc.held.is_empty() {
        return Err(TransferError::PeerClosed { message: "the sink accepted another stream than offered".into() });
    }

    let epoch = mono_ns();
    let sim = |t: u64| SimTime(t.saturating_sub(epoch));
    let mut sender = UdtSender::new(cfg, cc, sim(epoch));
    let mut sched = Schedule::new(opts.t0_mono_ns, opts.interval_ns, opts.duration_ns, opts.start_ns);
    let start_at = opts.t0_mono_ns + opts.start_ns;
    let stop_at = opts.t0_mono_ns + opts.stop_ns.unwrap_or(opts.duration_ns);
    let end_at = sched.end_ns();
    let payload = vec![0u8; mss as usize];
    let (mut started, mut stopped) = (false, false);
    let mut completion_ns: Option<u64> = None;
    let mut samples = Vec::new();
    let mut at_end: Option<StreamTotals> = None;
    let mut drain_until = u64::MAX;
    let mut next_check = 0u64;
    // UDT's RTT is the receiver's ACK/ACK2 estimate; its floor is the smallest reported.
    let mut min_rtt_us: Option<u64> = None;
    // What the application offered: the stream's bytes, or (unbounded) the new bytes sent.
    let offered = |s: &UdtSender| {
        let new_sent = s.stats().bytes_sent - s.stats().bytes_retransmitted;
        if opts.bytes.is_some() || s.bytes_offered() < u64::MAX / 8 { s.bytes_offered() } else { new_sent }
    };
    loop {
        let t = mono_ns();
        if sched.due(t) {
            samples.push(sample(&sender, sched.take(), offered(&sender)));
            continue;
        }
        if !started && t >= start_at {
            started = true;
            sender.app_write(opts.bytes.unwrap_or(u64::MAX / 4));
        }
        if started && !stopped && (t >= stop_at || t >= end_at) {
            stopped = true;
            sender.app_stop();
        }
        if at_end.is_none() && t >= end_at {
            at_end = Some(totals(&sender, offered(&sender), min_rtt_us));
            drain_until = t + opts.drain.as_nanos() as u64;
        }
        sender.handle_timeout(sim(t));
        while let Some(out) = sender.poll_transmit(sim(mono_ns())) {
            match out {
                ToReceiver::Data(DataPacket { seq, offset, len, timestamp, retransmit }) => {
                    let flags = u8::from(retransmit) * wire::FLAG_RETRANSMIT;
                    let frame = Frame::UdtData { seq, offset, timestamp_ns: timestamp.as_nanos(), flags, payload: &payload[..len as usize] };
                    link.send(&frame)?;
                }
                ToReceiver::Ack2(Ack2Packet { ack_seq }) => link.send(&Frame::UdtAck2 { ack_seq })?,
            }
        }
        if started && opts.bytes.is_some() && completion_ns.is_none() && sender.is_complete() {
            completion_ns = Some(t - start_at);
        }
        if at_end.is_some() && (sender.is_complete() || t >= drain_until) {
            break;
        }
        if link.last_heard.elapsed() >= opts.idle_timeout {
            return Err(TransferError::PeerSilent { secs: opts.idle_timeout.as_secs_f64() });
        }
        if link.last_sent.elapsed() >= KEEPALIVE {
            link.send(&Frame::Ping)?;
        }
        if t >= next_check {
            next_check = t + CHECK_EVERY_NS;
            if !keep_going() {
                let _ = link.send(&Frame::Close { code: 1, message: "interrupted by the sender" });
                return Err(TransferError::Interrupted { acked_bytes: sender.snd_una_offset() });
            }
        }
        let mut deadline = sched.next_ns().min(next_check).min(if at_end.is_some() { drain_until } else { end_at });
        if !started {
            deadline = deadline.min(start_at);
        } else if !stopped {
            deadline = deadline.min(stop_at);
        }
        if let Some(w) = sender.poll_timeout() {
            deadline = deadline.min(epoch + w.as_nanos());
        }
        let keepalive_ns = link.last_sent.elapsed().as_nanos() as u64;
        deadline = deadline.min(t + (KEEPALIVE.as_nanos() as u64).saturating_sub(keepalive_ns));
        let wait = Duration::from_nanos(deadline.saturating_sub(mono_ns()));
        link.receive(wait, |_, frame| {
            match frame {
                Frame::UdtAck(a) => {
                    if a.rtt_ns > 0 {
                        let us = a.rtt_ns / 1000;
                        min_rtt_us = Some(min_rtt_us.map_or(us, |m| m.min(us)));
                    }
                    sender.on_ack(sim(mono_ns()), &ack_packet(&a));
                }
                Frame::UdtNak { ranges, count } => sender.on_nak(sim(mono_ns()), &nak_packet(&ranges[..count as usize])),
                Frame::Close { message, .. } => {
                    return Err(TransferError::PeerClosed { message: message.to_string() })
                }
                Frame::Reject { code, message } => {
                    return Err(TransferError::Rejected { code, message: message.to_string() })
                }
                _ => {}
            }
            Ok(())
        })?;
    }
    let drained = totals(&sender, offered(&sender), min_rtt_us);
    let _ = link.send(&Frame::Close { code: 0, message: "" });
    Ok(StreamRecord {
        samples,
        at_end: at_end.unwrap_or(drained),
        drained,
        completion_time_s: completion_ns.map(|n| n as f64 / 1e9),
        mss_bytes: mss,
        recovery: "nak".into(),
    })
}
