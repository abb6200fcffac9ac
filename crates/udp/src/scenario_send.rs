//! A scenario flow's sending side (the `udp` backend): a synthetic stream (`bytes` = N, or
//! unbounded until a stop time) sent with the transport's TCP-like sender or UDT's (`tx`) over a
//! `session` to a scenario sink (`scenario_sink::Sink`), sampled at
//! `t0 + k·interval` on `CLOCK_MONOTONIC` — the quantities the kernel backend's traffic generator
//! reads from `TCP_INFO`, so a run on real sockets fills the same tables as the simulator and
//! Linux TCP.
//!
//! Times follow the scenario's flow: the handshake (STREAM_OFFER, docs/udp-wire.md) happens as
//! soon as the sender starts, before `t0`, so the flow's first byte leaves at `t0 + start_ns` as
//! in the simulator, which does not model a handshake; the application writes its bytes at the
//! start (all of them, or `u64::MAX / 4` for an unbounded flow, as the simulator does) and stops
//! at `t0 + stop_ns` (what was sent is still delivered). At the run's end (`t0 + duration_ns`)
//! the totals are read (`at_end`), the application stops, and the sender drains what it has in
//! flight for up to [`StreamOptions::drain`] before it reads them again (`drained`) and closes.
//!
//! ECN ([`StreamOptions::ecn`]): as the simulator's flow, an L4S flavor (`prague`, or `dctcp`
//! with `ect1 = 1`: [`ccarena_cc::is_l4s_flow`]) sends new data ECT(1) and asks the sink for
//! Accurate ECN feedback (RFC 9331 §4.1, RFC 9768); a flavor that needs ECN (DCTCP) sends ECT(0)
//! and asks for DCTCP's echo (RFC 8257 §3.2); any other sends ECT(0) with RFC 3168's feedback.
//! The codepoint goes in each datagram's IP header ([`crate::batch`]), the request in the
//! STREAM_OFFER (docs/udp-wire.md).
//!
//! QUIC ([`StreamOptions::quic`]): the flow runs the QUIC transport's sender
//! ([`ccarena_transport::quic::QuicSender`], RFC 9002, the simulator's code) with the flavor's
//! controller, its settings in the STREAM_OFFER so the sink runs the matching receiver; the
//! connection's flow-control window is the sink's receive window (ACCEPT). Its samples and totals
//! fill the same fields: RTT from its RFC 9002 estimator, `rto_s` the PTO, `total_rto` probe
//! timeouts, `fast_recoveries` loss-started congestion events; with ECN the sink reports ECN
//! counts (RFC 9000 §13.4), and `ecn_reductions` counts the congestion events they started.

use std::time::Duration;

use ccarena_cc::{CaState, Params, SimTime};
use ccarena_transport::rtt::RtoRule;

use crate::clock::{mono_ns, Schedule, KEEPALIVE};
use crate::error::TransferError;
use crate::session::{connect, handshake, Session};
use crate::tx::{Outgoing, Tx, TxSetup};
use crate::wire::{self, EcnFeedback, Frame, QuicOffer, UNBOUNDED_STREAM};

/// How often the driver asks its caller whether to go on (a Python signal check), at most.
const CHECK_EVERY_NS: u64 = 100_000_000;

/// A scenario flow's sender: the flow's transport settings (the scenario's `TcpFlowSpec`, as the
/// simulator builds its sender from them) and its times.
#[derive(Clone, Debug)]
pub struct StreamOptions {
    /// Congestion-control flavor (any TCP flavor of the catalogue).
    pub flavor: String,
    /// The flavor's parameters, `(name, value)`.
    pub params: Vec<(String, f64)>,
    /// Loss-recovery mode; `None`: the flavor's default.
    pub recovery: Option<String>,
    /// Payload bytes per DATA packet (64 to [`wire::MAX_PAYLOAD_BYTES`]).
    pub mss_bytes: u32,
    /// Initial window, segments (RFC 6928).
    pub initial_cwnd_packets: u32,
    /// RTO floor, initial value and ceiling, ns (RFC 6298 §2).
    pub min_rto_ns: u64,
    /// Initial RTO, ns.
    pub initial_rto_ns: u64,
    /// RTO ceiling, ns.
    pub max_rto_ns: u64,
    /// RFC 6298's clock granularity G, ns.
    pub clock_granularity_ns: u64,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681 §3.2).
    pub dupthresh: u32,
    /// Cap on unacknowledged data, bytes (a socket send buffer); `None`: unlimited.
    pub sndbuf_bytes: Option<u64>,
    /// Bytes to send; `None`: unbounded until the stop time.
    pub bytes: Option<u64>,
    /// The run's `t0`, CLOCK_MONOTONIC ns.
    pub t0_mono_ns: u64,
    /// The flow starts this long after `t0`, ns.
    pub start_ns: u64,
    /// The application stops writing this long after `t0`, ns; `None`: at the run's end.
    pub stop_ns: Option<u64>,
    /// The run's length after `t0`, ns.
    pub duration_ns: u64,
    /// Sample interval, ns.
    pub interval_ns: u64,
    /// How long the handshake may take.
    pub handshake_timeout: Duration,
    /// How long the sink may stay silent.
    pub idle_timeout: Duration,
    /// After the run's end: how long in-flight data may take to be acknowledged.
    pub drain: Duration,
    /// How much late wake-up time the pacer may make up back-to-back (`ccarena_transport::pacing`).
    pub pacing_burst: Duration,
    /// The flow uses ECN (the scenario flow's `ecn`): which codepoint and feedback follow from
    /// the flavor ([`stream_ecn_feedback`]).
    pub ecn: bool,
    /// Run the flow as QUIC with these settings (the scenario flow's `quic`; the RTO, recovery
    /// and dupthresh fields are then unused, `mss_bytes` is the stream bytes per packet, at most
    /// [`wire::MAX_QUIC_PAYLOAD_BYTES`]); `None`: the TCP-like transport.
    pub quic: Option<QuicOffer>,
    /// The RTO rule (the scenario flow's `rto_rule`: RFC 6298's, or Linux's for `host = "linux"`).
    pub rto_rule: RtoRule,
    /// Take the handshake's round trip (STREAM_OFFER → ACCEPT, when the offer went out once) as
    /// the first RTT sample, as Linux takes the SYN → SYN-ACK one (the scenario flow's
    /// `handshake_rtt`).
    pub handshake_rtt: bool,
}

/// The ECN feedback a stream of `flavor` with `params` asks its sink for: `None` without `ecn`;
/// with it, the transport's one rule ([`ccarena_transport::flow_ecn_mode`], the simulator's
/// choice too), so one scenario runs alike on both.
///
/// # Errors
/// [`TransferError::Config`]: a parameter the flavor refuses (DCTCP's `ect1` not 0 or 1).
pub fn stream_ecn_feedback(flavor: &str, params: &Params, ecn: bool) -> Result<Option<EcnFeedback>, TransferError> {
    let mode = ccarena_transport::flow_ecn_mode(flavor, params, ecn).map_err(|e| TransferError::Config { message: format!("--flavor: {e}") })?;
    Ok(EcnFeedback::of_mode(mode))
}

impl Default for StreamOptions {
    /// Linux's defaults (as the scenario's): MSS the largest payload, IW 10, RTO in
    /// [200 ms, 120 s] from 1 s, G = 1 ms, dupthresh 3; one 10 s unbounded flow from `t0` = now.
    fn default() -> StreamOptions {
        StreamOptions {
            flavor: "cubic".into(),
            params: Vec::new(),
            recovery: None,
            mss_bytes: wire::MAX_PAYLOAD_BYTES as u32,
            initial_cwnd_packets: 10,
            min_rto_ns: 200_000_000,
            initial_rto_ns: 1_000_000_000,
            max_rto_ns: 120_000_000_000,
            clock_granularity_ns: 1_000_000,
            dupthresh: 3,
            sndbuf_bytes: None,
            bytes: None,
            t0_mono_ns: mono_ns(),
            start_ns: 0,
            stop_ns: None,
            duration_ns: 10_000_000_000,
            interval_ns: 100_000_000,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
            drain: Duration::from_secs(2),
            pacing_burst: Duration::from_millis(1),
            ecn: false,
            quic: None,
            rto_rule: RtoRule::Rfc6298,
            handshake_rtt: false,
        }
    }
}

impl StreamOptions {
    /// The sending half's set-up: the flow's flavor and TCP settings, in the transport's units.
    ///
    /// # Errors
    /// As [`stream_ecn_feedback`].
    fn tx_setup(&self) -> Result<TxSetup<'_>, TransferError> {
        let params = Params::from_pairs(self.params.clone());
        let ecn = stream_ecn_feedback(&self.flavor, &params, self.ecn)?;
        Ok(TxSetup {
            flavor: &self.flavor,
            params,
            recovery: self.recovery.as_deref(),
            mss_bytes: self.mss_bytes,
            initial_cwnd_packets: self.initial_cwnd_packets,
            min_rto: ccarena_cc::Duration(self.min_rto_ns),
            initial_rto: ccarena_cc::Duration(self.initial_rto_ns),
            max_rto: ccarena_cc::Duration(self.max_rto_ns),
            clock_granularity: ccarena_cc::Duration(self.clock_granularity_ns),
            dupthresh: self.dupthresh,
            sndbuf_bytes: self.sndbuf_bytes,
            pacing_burst: self.pacing_burst,
            rto_rule: self.rto_rule,
            ecn,
            quic: self.quic,
        })
    }
}

/// One sender sample, at `t0 + time_s`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderSample {
    /// Seconds since `t0`.
    pub time_s: f64,
    /// Payload bytes sent, retransmissions included (`tcpi_bytes_sent`).
    pub sent_bytes: u64,
    /// Bytes cumulatively acknowledged (`tcpi_bytes_acked`).
    pub acked_bytes: u64,
    /// Bytes the application has offered.
    pub offered_bytes: u64,
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes; `None` while infinite.
    pub ssthresh_bytes: Option<u64>,
    /// Smoothed RTT, seconds (RFC 6298); `None` before the first sample.
    pub srtt_s: Option<f64>,
    /// RTT variation, seconds.
    pub rttvar_s: Option<f64>,
    /// Retransmission timeout, seconds.
    pub rto_s: f64,
    /// Bytes in flight (sent, not acknowledged, SACKed or marked lost).
    pub inflight_bytes: u64,
    /// Pacing rate, bit/s; `None`: unpaced.
    pub pacing_rate_bps: Option<u64>,
    /// Segments retransmitted so far (`tcpi_total_retrans`).
    pub retransmits: u64,
    /// Linux's `tcp_ca_state` number: 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss.
    pub ca_state: u8,
}

/// Counters of a stream's sender at one instant (named as `TCP_INFO` names them, so the kernel
/// backend's table code reads them unchanged).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StreamTotals {
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes retransmitted.
    pub bytes_retrans: u64,
    /// Bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// DATA packets sent, retransmissions included.
    pub data_segs_out: u64,
    /// Segments retransmitted.
    pub total_retrans: u64,
    /// Retransmission timeouts.
    pub total_rto: u64,
    /// Fast recoveries entered.
    pub fast_recoveries: u64,
    /// RTOs found spurious (Eifel, RFC 3522).
    pub spurious_rtos: u64,
    /// Smallest RTT sample, µs (`tcpi_min_rtt`); `None` before the first.
    pub min_rtt_us: Option<u64>,
    /// Bytes the application offered.
    pub offered_bytes: u64,
    /// Window reductions in answer to ECN feedback (ECE, or AccECN's CE counts).
    pub ecn_reductions: u64,
    /// CE-marked packets the sink fed back by Accurate ECN (RFC 9768 §3.2.1's s.cep less its
    /// initial value) or, for QUIC, by its ACKs' ECN counts (RFC 9000 §13.4.1); 0 without.
    pub accecn_ce_packets: u64,
    /// CE-marked payload bytes the sink fed back by Accurate ECN; 0 without it.
    pub accecn_ce_bytes: u64,
}

/// What a stream's sender measured.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamRecord {
    /// One sample per instant of the grid at or after the flow's start.
    pub samples: Vec<SenderSample>,
    /// Totals at the run's end.
    pub at_end: StreamTotals,
    /// Totals after draining (or at the drain deadline).
    pub drained: StreamTotals,
    /// A finite flow's completion time (start to its last byte acknowledged), seconds.
    pub completion_time_s: Option<f64>,
    /// The MSS used, bytes.
    pub mss_bytes: u32,
    /// The recovery mode used.
    pub recovery: String,
}

fn ca_code(s: CaState) -> u8 {
    match s {
        CaState::Open => 0,
        CaState::Disorder => 1,
        CaState::Cwr => 2,
        CaState::Recovery => 3,
        CaState::Loss => 4,
    }
}

fn secs(d: ccarena_cc::Duration) -> f64 {
    d.as_nanos() as f64 / 1e9
}

/// The sender's state at `time_s` (UDT has no ssthresh or CA state: none and 0; its RTT is the
/// receiver's ACK/ACK2 estimate, its RTO the EXP period).
fn sample(tx: &Tx, time_s: f64, offered_bytes: u64) -> SenderSample {
    match tx {
        Tx::Tcp(s) => {
            let cw = s.cwnd();
            SenderSample {
                time_s,
                sent_bytes: s.stats().bytes_sent,
                acked_bytes: s.snd_una(),
                offered_bytes,
                cwnd_bytes: cw.cwnd_bytes,
                ssthresh_bytes: (cw.ssthresh_bytes != u64::MAX).then_some(cw.ssthresh_bytes),
                srtt_s: s.srtt().map(secs),
                rttvar_s: s.srtt().and(s.rttvar()).map(secs),
                rto_s: secs(s.rto()),
                inflight_bytes: s.in_flight_bytes(),
                pacing_rate_bps: cw.pacing_rate_bps.filter(|r| *r > 0),
                retransmits: s.stats().segments_retransmitted,
                ca_state: ca_code(s.ca_state()),
            }
        }
        Tx::Quic(s) => {
            let cw = s.cwnd();
            SenderSample {
                time_s,
                sent_bytes: s.stats().bytes_sent,
                acked_bytes: s.stream_bytes_acked(),
                offered_bytes,
                cwnd_bytes: cw.cwnd_bytes,
                ssthresh_bytes: (cw.ssthresh_bytes != u64::MAX).then_some(cw.ssthresh_bytes),
                srtt_s: s.srtt().map(secs),
                rttvar_s: s.rttvar().map(secs),
                rto_s: secs(s.pto()),
                inflight_bytes: s.in_flight_bytes(),
                pacing_rate_bps: s.pacing_rate_bps(),
                retransmits: s.stats().packets_retransmitted,
                ca_state: ca_code(s.ca_state()),
            }
        }
        Tx::Udt(s) => {
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
    }
}

/// The sender's counters now. `reported_min_rtt` is the smallest RTT the peer reported (UDT's
/// RTT is measured by its receiver); the TCP-like sender measures its own.
fn totals(tx: &Tx, offered_bytes: u64, reported_min_rtt: Option<Duration>) -> StreamTotals {
    let t = tx.totals();
    let (spurious_rtos, min_rtt) = match tx {
        Tx::Tcp(s) => (s.stats().spurious_rtos, s.min_rtt().map(|d| Duration::from_nanos(d.as_nanos()))),
        Tx::Udt(_) => (0, reported_min_rtt),
        Tx::Quic(s) => (0, s.min_rtt().map(|d| Duration::from_nanos(d.as_nanos()))),
    };
    let ecn = match tx {
        Tx::Tcp(s) => (s.stats().ecn_reductions, s.stats().accecn_ce_packets, s.stats().accecn_ce_bytes),
        Tx::Udt(_) => (0, 0, 0),
        // QUIC's ECN counts are packets (RFC 9000 §13.4.1): the CE packets fed back, no bytes.
        Tx::Quic(s) => (s.stats().ecn_congestion_events, s.stats().ce_packets_reported, 0),
    };
    StreamTotals {
        bytes_sent: t.bytes_sent,
        bytes_retrans: t.bytes_retransmitted,
        bytes_acked: tx.acked_bytes(),
        data_segs_out: t.segments_sent,
        total_retrans: t.retransmissions,
        total_rto: t.rto_count,
        fast_recoveries: t.fast_recoveries,
        spurious_rtos,
        min_rtt_us: min_rtt.map(|d| d.as_micros() as u64),
        offered_bytes,
        ecn_reductions: ecn.0,
        accecn_ce_packets: ecn.1,
        accecn_ce_bytes: ecn.2,
    }
}

/// Send one scenario flow to the sink at `peer` (`HOST:PORT`) from `bind` (`HOST`, any port;
/// `None`: any address), following `opts`' times: the TCP-like transport with `opts`' flavor,
/// or UDT's own with flavor `udt` ([`crate::udt`]; the TCP fields unused, `mss_bytes` at most
/// [`wire::MAX_UDT_PAYLOAD_BYTES`]). `keep_going` is asked about every 100 ms (false: stop at
/// once with [`TransferError::Interrupted`], after telling the sink).
///
/// # Errors
/// [`TransferError`]: a bad flavor, parameter, recovery or MSS ([`TransferError::Config`],
/// before any I/O), a bad address, a sink that does not answer or refuses, a foreign wire
/// version, a sink silent for `idle_timeout`, an interruption.
pub fn send_stream(
    bind: Option<&str>,
    peer: &str,
    opts: &StreamOptions,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<StreamRecord, TransferError> {
    let setup = opts.tx_setup()?;
    Tx::new(&setup, u64::MAX, SimTime::ZERO)?; // the settings checked before any I/O
    let ecn = setup.ecn;
    crate::net::fine_timers();
    let (sock, peer_addr) = connect(bind, peer)?;
    let mut session = Session::new(Box::new(sock), peer_addr);
    let stream_bytes = opts.bytes.unwrap_or(UNBOUNDED_STREAM);
    let mss = opts.mss_bytes;
    let acc = handshake(
        &mut session,
        &|cookie| Frame::StreamOffer { cookie, stream_bytes, mss_bytes: mss as u16, flavor: &opts.flavor, ecn, quic: opts.quic },
        opts.handshake_timeout,
        keep_going,
    )?;
    if acc.stream_bytes != stream_bytes || !acc.held.is_empty() {
        return Err(TransferError::PeerClosed { message: "the sink accepted another stream than offered".into() });
    }

    let epoch = mono_ns();
    let sim = |t: u64| SimTime(t.saturating_sub(epoch));
    let (mut tx, recovery) = Tx::new(&setup, acc.rwnd_bytes, sim(epoch))?;
    if let Some(rtt) = acc.rtt.filter(|_| opts.handshake_rtt) {
        tx.on_handshake_rtt(ccarena_cc::Duration(rtt.as_nanos() as u64), sim(epoch));
    }
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
    let mut reported_min_rtt: Option<Duration> = None;
    // What the application offered: the stream's bytes, or (unbounded) what was sent once.
    let offered =
        |tx: &Tx| if opts.bytes.is_some() || tx.bytes_offered() < u64::MAX / 8 { tx.bytes_offered() } else { tx.new_bytes_sent() };
    loop {
        let t = mono_ns();
        if sched.due(t) {
            samples.push(sample(&tx, sched.take(), offered(&tx)));
            continue;
        }
        if !started && t >= start_at {
            started = true;
            tx.app_write(opts.bytes.unwrap_or(u64::MAX / 4));
        }
        if started && !stopped && (t >= stop_at || t >= end_at) {
            stopped = true;
            tx.app_stop();
        }
        if at_end.is_none() && t >= end_at {
            at_end = Some(totals(&tx, offered(&tx), reported_min_rtt));
            drain_until = t + opts.drain.as_nanos() as u64;
        }
        tx.handle_timeout(sim(t));
        // The clock is read per packet: a burst takes real time, which pacing and UDT's packet
        // interval count on.
        while let Some(out) = tx.poll_transmit(sim(mono_ns())) {
            match out {
                Outgoing::Data(d) => session.send_with_ecn(&d.frame(&payload[..d.len as usize]), d.ecn)?,
                Outgoing::Control(frame) => session.send(&frame)?,
            }
        }
        if started && completion_ns.is_none() && opts.bytes.is_some_and(|n| tx.acked_bytes() >= n) {
            completion_ns = Some(t - start_at);
        }
        if at_end.is_some() && (tx.is_complete() || t >= drain_until) {
            break;
        }
        if session.last_heard.elapsed() >= opts.idle_timeout {
            return Err(TransferError::PeerSilent { secs: opts.idle_timeout.as_secs_f64() });
        }
        if session.last_sent.elapsed() >= KEEPALIVE {
            session.send(&Frame::Ping)?;
        }
        if t >= next_check {
            next_check = t + CHECK_EVERY_NS;
            if !keep_going() {
                let _ = session.close(1, "interrupted by the sender");
                return Err(TransferError::Interrupted { acked_bytes: tx.acked_bytes() });
            }
        }
        let mut deadline = sched.next_ns().min(next_check).min(if at_end.is_some() { drain_until } else { end_at });
        if !started {
            deadline = deadline.min(start_at);
        } else if !stopped {
            deadline = deadline.min(stop_at);
        }
        if let Some(w) = tx.poll_timeout() {
            deadline = deadline.min(epoch + w.as_nanos());
        }
        let keepalive_ns = session.last_sent.elapsed().as_nanos() as u64;
        deadline = deadline.min(t + (KEEPALIVE.as_nanos() as u64).saturating_sub(keepalive_ns));
        let wait = Duration::from_nanos(deadline.saturating_sub(mono_ns()));
        session.receive(wait, |_, frame| {
            match frame {
                Frame::Close { message, .. } => {
                    return Err(TransferError::PeerClosed { message: message.to_string() })
                }
                Frame::Reject { code, message } => {
                    return Err(TransferError::Rejected { code, message: message.to_string() })
                }
                feedback => {
                    if let Some(rtt) = tx.on_frame(sim(mono_ns()), &feedback) {
                        reported_min_rtt = Some(reported_min_rtt.map_or(rtt, |m| m.min(rtt)));
                    }
                }
            }
            Ok(())
        })?;
    }
    let drained = totals(&tx, offered(&tx), reported_min_rtt);
    let _ = session.close(0, "");
    Ok(StreamRecord {
        samples,
        at_end: at_end.unwrap_or(drained),
        drained,
        completion_time_s: completion_ns.map(|n| n as f64 / 1e9),
        mss_bytes: mss,
        recovery,
    })
}
