//! A blocking, single-threaded driver of quinn's sans-IO [`Endpoint`] and [`Connection`] over a
//! std [`UdpSocket`]: [`send`] (the client: one connection, one unidirectional stream of zeros)
//! and [`sink`] (the server: accepts one connection and counts the stream's bytes).
//!
//! Each loop turn, at one `now`: every datagram waiting on the socket goes to the endpoint and
//! its connection, a due timer fires (`handle_timeout`: loss detection, PTO, pacing, idle),
//! application events are handled (stream writes or reads), endpoint events are exchanged, and
//! every packet quinn has ready is sent (`poll_transmit`). Then the thread sleeps in `ppoll` until
//! a datagram arrives, quinn's next timer (`poll_timeout`) or the next sample time, whichever
//! is first: no spinning while idle. A send that finds the socket buffer full waits for room
//! briefly and otherwise drops the datagram, which quinn then sees as a loss.
//!
//! Sampling: on a grid of `interval` from the run's time zero, the sender records
//! `Connection::stats()` (path RTT, cwnd, losses, congestion events, packets) and the
//! controller's `metrics()` (cwnd, ssthresh, pacing rate); the sink records bytes delivered.
//! Per-ACK RTT samples come from [`crate::observe`].

use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, ReadError, StreamEvent,
    StreamId, Transmit, VarInt, WriteError,
};

use crate::io::{instant_at_monotonic_ns, set_buffers, thread_cpu_s, wait};
use crate::observe::{ObservedFactory, ObservedLog};
use crate::record::{RttSummary, SendRecord, SenderSample, SinkRecord, SinkSample};
use crate::stack::{client_config, controller_factory, transport_config, QuicImpl, RunCertificate, StackError, SERVER_NAME};

/// Bytes of zeros handed to quinn per write call.
const WRITE_CHUNK_BYTES: usize = 64 * 1024;
/// Datagrams read per loop turn before timers and sends get their turn.
const RECV_BATCH: usize = 256;
/// Socket buffers asked for, bytes: a loopback burst of a large window fits.
const SOCKET_BUFFER_BYTES: usize = 8 << 20;
/// How long a send waits for room in a full socket buffer before dropping the datagram.
const SEND_WAIT: Duration = Duration::from_millis(2);
/// The application error code both ends close with (RFC 9000 §20.2: the application's space).
const CLOSE_CODE: u32 = 0;
/// The longest sleep between loop turns (checks for the handshake and idle timeouts).
const MAX_SLEEP: Duration = Duration::from_millis(50);

/// What can end a run early.
#[derive(Debug)]
pub enum DriverError {
    /// The options or the stack's setup were refused.
    Setup(String),
    /// A socket call failed.
    Io(io::Error),
    /// No connection within the handshake timeout.
    Handshake(String),
    /// The connection ended before the stream did (peer gone, idle timeout, TLS failure).
    ConnectionLost(String),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Setup(s) => write!(f, "{s}"),
            DriverError::Io(e) => write!(f, "socket: {e}"),
            DriverError::Handshake(s) => write!(f, "no QUIC connection: {s}"),
            DriverError::ConnectionLost(s) => write!(f, "QUIC connection lost: {s}"),
        }
    }
}

impl std::error::Error for DriverError {}

impl From<io::Error> for DriverError {
    fn from(e: io::Error) -> DriverError {
        DriverError::Io(e)
    }
}

impl From<StackError> for DriverError {
    fn from(e: StackError) -> DriverError {
        DriverError::Setup(e.to_string())
    }
}

/// The sender's settings.
#[derive(Clone, Debug)]
pub struct SendOptions {
    /// Whose controller runs.
    pub which: QuicImpl,
    /// The flavor (ccarena's catalogue name).
    pub flavor: String,
    /// The flavor's parameters (ccarena's controllers only).
    pub params: Vec<(String, f64)>,
    /// The sink, `HOST:PORT`.
    pub peer: String,
    /// Local address to bind (`None`: any address of the peer's family, any port).
    pub bind: Option<String>,
    /// The run's certificate (DER), the only one the sender trusts.
    pub cert_der: Vec<u8>,
    /// Stream bytes to send; `None` sends until `duration`.
    pub bytes: Option<u64>,
    /// Stop (close the connection) this long after the run's time zero, sent or not.
    pub duration: Option<Duration>,
    /// The sampling grid's step.
    pub interval: Duration,
    /// Time zero of the grid (`None`: when `send` starts).
    pub t0: Option<Instant>,
    /// Initial congestion window, bytes (`None`: RFC 9002 §7.2's).
    pub initial_window_bytes: Option<u64>,
    /// quinn's initial MTU (`None`: 1200, then PLPMTUD up to 1452).
    pub initial_mtu: Option<u16>,
    /// Give up when no connection is established within this.
    pub handshake_timeout: Duration,
}

impl SendOptions {
    /// `bytes` stream bytes of `flavor` under `which` to `peer`, trusting `cert_der`; samples
    /// every 100 ms, 5 s handshake timeout.
    pub fn new(which: QuicImpl, flavor: &str, peer: &str, cert_der: &[u8], bytes: u64) -> SendOptions {
        SendOptions {
            which,
            flavor: flavor.to_string(),
            params: Vec::new(),
            peer: peer.to_string(),
            bind: None,
            cert_der: cert_der.to_vec(),
            bytes: Some(bytes),
            duration: None,
            interval: Duration::from_millis(100),
            t0: None,
            initial_window_bytes: None,
            initial_mtu: None,
            handshake_timeout: Duration::from_secs(5),
        }
    }
}

/// The sink's settings.
#[derive(Clone, Debug)]
pub struct SinkOptions {
    /// Address to bind, `HOST:PORT` (port 0: any; the bound address goes to `on_bound`).
    pub bind: String,
    /// The run's certificate and key, served to the sender.
    pub cert: RunCertificate,
    /// The sampling grid's step.
    pub interval: Duration,
    /// Time zero of the grid (`None`: when `sink` starts).
    pub t0: Option<Instant>,
    /// Give up when no connection arrives within this.
    pub handshake_timeout: Duration,
    /// End when nothing arrives for this long once connected.
    pub idle_timeout: Duration,
    /// End at the latest this long after time zero.
    pub max_duration: Option<Duration>,
    /// Socket send and receive buffer asked for, bytes (default 8 MiB). A small one drops
    /// datagrams on loopback bursts: losses for a test of the recovery path.
    pub socket_buffer_bytes: usize,
}

impl SinkOptions {
    /// A sink on `bind` serving `cert`; samples every 100 ms, 10 s handshake timeout, 5 s idle.
    pub fn new(bind: &str, cert: RunCertificate) -> SinkOptions {
        SinkOptions {
            bind: bind.to_string(),
            cert,
            interval: Duration::from_millis(100),
            t0: None,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(5),
            max_duration: None,
            socket_buffer_bytes: SOCKET_BUFFER_BYTES,
        }
    }
}

/// Time zero from a CLOCK_MONOTONIC reading in ns (Python's `time.monotonic_ns()`).
pub fn t0_from_monotonic_ns(t0_ns: u64) -> Instant {
    instant_at_monotonic_ns(t0_ns)
}

fn resolve(addr: &str) -> Result<SocketAddr, DriverError> {
    addr.to_socket_addrs()
        .map_err(|e| DriverError::Setup(format!("address '{addr}': {e}")))?
        .next()
        .ok_or_else(|| DriverError::Setup(format!("address '{addr}' resolves to nothing")))
}

fn bind(addr: &str, buffer_bytes: usize) -> Result<UdpSocket, DriverError> {
    let a = resolve(addr)?;
    let sock = UdpSocket::bind(a).map_err(|e| DriverError::Setup(format!("bind {a}: {e}")))?;
    sock.set_nonblocking(true)?;
    set_buffers(&sock, buffer_bytes);
    Ok(sock)
}

/// Send `buf` to `to`; a full buffer is waited on for [`SEND_WAIT`], then the datagram is dropped
/// (quinn recovers it as a loss). Errors other than a full buffer are returned.
fn send_datagram(sock: &UdpSocket, buf: &[u8], to: SocketAddr) -> io::Result<()> {
    for attempt in 0..2 {
        match sock.send_to(buf, to) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && attempt == 0 => {
                wait(sock, SEND_WAIT, true)?;
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => return Ok(()),
            // ENOBUFS and a peer's ICMP port unreachable: the datagram is lost; quinn copes.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || e.kind() == io::ErrorKind::ConnectionRefused => {
                return Ok(())
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The socket and endpoint one side runs, and its connection once there is one.
struct Side {
    sock: UdpSocket,
    endpoint: Endpoint,
    conn: Option<(ConnectionHandle, Connection)>,
    rbuf: Vec<u8>,
    tbuf: Vec<u8>,
    bytes_received: u64,
    datagrams_received: u64,
    last_datagram: Option<Instant>,
}

impl Side {
    fn new(sock: UdpSocket, endpoint: Endpoint) -> Side {
        Side {
            sock,
            endpoint,
            conn: None,
            rbuf: vec![0u8; 65_536],
            tbuf: Vec::with_capacity(65_536),
            bytes_received: 0,
            datagrams_received: 0,
            last_datagram: None,
        }
    }

    fn transmit(&mut self, t: &Transmit) -> io::Result<()> {
        let r = send_datagram(&self.sock, &self.tbuf[..t.size], t.destination);
        self.tbuf.clear();
        r
    }

    /// Read every waiting datagram (up to [`RECV_BATCH`]) into the endpoint; `accept` says
    /// whether a new connection may be accepted (the sink's first).
    fn receive(&mut self, now: Instant, accept: bool) -> io::Result<()> {
        for _ in 0..RECV_BATCH {
            let (n, from) = match self.sock.recv_from(&mut self.rbuf) {
                Ok(x) => x,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => break,
                // A previous datagram's ICMP port unreachable: nothing to read.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            };
            self.bytes_received += n as u64;
            self.datagrams_received += 1;
            self.last_datagram = Some(now);
            let data = BytesMut::from(&self.rbuf[..n]);
            match self.endpoint.handle(now, from, None, None, data, &mut self.tbuf) {
                Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                    if let Some((h, c)) = self.conn.as_mut() {
                        if *h == ch {
                            c.handle_event(ev);
                        }
                    }
                }
                Some(DatagramEvent::NewConnection(incoming)) => {
                    if accept && self.conn.is_none() {
                        match self.endpoint.accept(incoming, now, &mut self.tbuf, None) {
                            Ok(hc) => self.conn = Some(hc),
                            Err(e) => {
                                if let Some(t) = e.response {
                                    self.transmit(&t)?;
                                }
                            }
                        }
                    } else if accept {
                        let t = self.endpoint.refuse(incoming, &mut self.tbuf);
                        self.transmit(&t)?;
                    } else {
                        self.endpoint.ignore(incoming);
                    }
                }
                Some(DatagramEvent::Response(t)) => self.transmit(&t)?,
                None => {}
            }
            self.tbuf.clear();
        }
        Ok(())
    }

    /// Fire a due timer, exchange endpoint events, send what quinn has ready.
    fn service(&mut self, now: Instant) -> io::Result<()> {
        let Some((ch, conn)) = self.conn.as_mut() else { return Ok(()) };
        if conn.poll_timeout().is_some_and(|t| t <= now) {
            conn.handle_timeout(now);
        }
        while let Some(ev) = conn.poll_endpoint_events() {
            if let Some(cev) = self.endpoint.handle_event(*ch, ev) {
                conn.handle_event(cev);
            }
        }
        while let Some(t) = conn.poll_transmit(now, 1, &mut self.tbuf) {
            let r = send_datagram(&self.sock, &self.tbuf[..t.size], t.destination);
            self.tbuf.clear();
            r?;
        }
        Ok(())
    }

    /// Sleep until a datagram arrives or `deadline` (at most [`MAX_SLEEP`]).
    fn sleep(&self, deadline: Option<Instant>) -> io::Result<()> {
        let timeout = deadline.map_or(MAX_SLEEP, |d| d.saturating_duration_since(Instant::now())).min(MAX_SLEEP);
        if timeout.is_zero() {
            return Ok(());
        }
        wait(&self.sock, timeout, false).map(|_| ())
    }
}

/// The earliest of quinn's next timer and `others`.
fn next_deadline(conn: &mut Connection, others: &[Option<Instant>]) -> Option<Instant> {
    others.iter().copied().chain([conn.poll_timeout()]).flatten().min()
}

/// Run the sender (see the module documentation) and return its record.
///
/// # Errors
/// [`DriverError::Setup`] for a bad flavor, address or certificate; [`DriverError::Handshake`]
/// when no connection is made in time; [`DriverError::ConnectionLost`] when the connection
/// ends before the stream is acknowledged (or the stop time); [`DriverError::Io`] for a
/// socket failure.
pub fn send(opts: &SendOptions) -> Result<SendRecord, DriverError> {
    if opts.bytes.is_none() && opts.duration.is_none() {
        return Err(DriverError::Setup("a QUIC sender needs bytes, a duration or both".into()));
    }
    let cpu0 = thread_cpu_s();
    let factory = controller_factory(opts.which, &opts.flavor, &opts.params, opts.initial_window_bytes)?;
    let (observed, log) = ObservedFactory::new(factory);
    let client = client_config(&opts.cert_der, transport_config(Arc::new(observed), opts.initial_mtu))?;
    let peer = resolve(&opts.peer)?;
    let local = match &opts.bind {
        Some(b) => b.clone(),
        None if peer.is_ipv6() => "[::]:0".to_string(),
        None => "0.0.0.0:0".to_string(),
    };
    let sock = bind(&local, SOCKET_BUFFER_BYTES)?;
    let endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
    let mut side = Side::new(sock, endpoint);

    let start = Instant::now();
    let t0 = opts.t0.unwrap_or(start);
    let stop_at = opts.duration.map(|d| t0 + d);
    let interval = opts.interval.max(Duration::from_millis(1));
    let target = opts.bytes.unwrap_or(u64::MAX);
    let zeros = vec![0u8; WRITE_CHUNK_BYTES];
    let hc = side
        .endpoint
        .connect(start, client, peer, SERVER_NAME)
        .map_err(|e| DriverError::Setup(format!("connect to {peer}: {e}")))?;
    side.conn = Some(hc);

    let mut stream: Option<StreamId> = None;
    let mut written = 0u64;
    let mut fin_sent = false;
    let mut handshake_at: Option<Instant> = None;
    let mut complete_at: Option<Instant> = None;
    let mut closing = false;
    let mut samples = Vec::new();
    let mut next_sample = t0 + interval * (start.saturating_duration_since(t0).as_nanos() / interval.as_nanos()) as u32;
    let end: Instant;
    loop {
        let now = Instant::now();
        side.receive(now, false)?;
        {
            let (_, conn) = side.conn.as_mut().expect("connected");
            if conn.poll_timeout().is_some_and(|t| t <= now) {
                conn.handle_timeout(now);
            }
            while let Some(ev) = conn.poll() {
                match ev {
                    Event::Connected => {
                        handshake_at = Some(now);
                        stream = conn.streams().open(Dir::Uni);
                    }
                    Event::ConnectionLost { reason } => {
                        if complete_at.is_none() && stop_at.is_none_or(|s| now < s) {
                            return Err(if handshake_at.is_none() {
                                DriverError::Handshake(format!("{peer}: {reason}"))
                            } else {
                                DriverError::ConnectionLost(reason.to_string())
                            });
                        }
                        closing = true;
                    }
                    Event::Stream(StreamEvent::Finished { .. }) => complete_at = Some(now),
                    Event::Stream(StreamEvent::Stopped { error_code, .. }) => {
                        return Err(DriverError::ConnectionLost(format!("the sink stopped the stream ({error_code})")));
                    }
                    _ => {}
                }
            }
            if handshake_at.is_none() && now.saturating_duration_since(start) > opts.handshake_timeout {
                return Err(DriverError::Handshake(format!("{peer}: no answer in {:?}", opts.handshake_timeout)));
            }
            let stopping = stop_at.is_some_and(|s| now >= s);
            if let (Some(id), false, false) = (stream, fin_sent, stopping) {
                let mut s = conn.send_stream(id);
                while written < target {
                    let n = (target - written).min(zeros.len() as u64) as usize;
                    match s.write(&zeros[..n]) {
                        Ok(k) => written += k as u64,
                        Err(WriteError::Blocked) => break,
                        Err(e) => return Err(DriverError::ConnectionLost(format!("stream write: {e}"))),
                    }
                }
                if written == target {
                    s.finish().map_err(|e| DriverError::ConnectionLost(format!("stream finish: {e}")))?;
                    fin_sent = true;
                }
            }
            if !closing && (complete_at.is_some() || stopping) {
                conn.close(now, VarInt::from_u32(CLOSE_CODE), Bytes::from_static(b"done"));
                closing = true;
            }
        }
        while now >= next_sample {
            let (_, conn) = side.conn.as_ref().expect("connected");
            samples.push(sender_sample(conn, next_sample.saturating_duration_since(t0), written));
            next_sample += interval;
        }
        side.service(now)?;
        if closing {
            end = now;
            break;
        }
        let (_, conn) = side.conn.as_mut().expect("connected");
        let deadline = next_deadline(conn, &[Some(next_sample), stop_at]);
        side.sleep(deadline)?;
    }
    let (_, conn) = side.conn.as_ref().expect("connected");
    let stats = conn.stats();
    let log: ObservedLog = log.lock().map(|l| l.clone()).unwrap_or_default();
    let completion = complete_at.map(|c| c.saturating_duration_since(start).as_secs_f64());
    Ok(SendRecord {
        implementation: opts.which.name(),
        controller: opts.which.describe(&opts.flavor),
        flavor: opts.flavor.clone(),
        peer: peer.to_string(),
        bytes_target: opts.bytes,
        stream_bytes_written: written,
        completed: complete_at.is_some(),
        completion_time_s: completion,
        handshake_s: handshake_at.map(|h| h.saturating_duration_since(start).as_secs_f64()),
        duration_s: end.saturating_duration_since(start).as_secs_f64(),
        goodput_bps: completion.filter(|c| *c > 0.0).map(|c| written as f64 * 8.0 / c),
        bytes_sent: stats.udp_tx.bytes,
        packets_sent: stats.udp_tx.datagrams,
        lost_packets: stats.path.lost_packets,
        lost_bytes: stats.path.lost_bytes,
        congestion_events: stats.path.congestion_events,
        loss_events: log.loss_events,
        ecn_events: log.ecn_events,
        persistent_congestions: log.persistent_congestions,
        pto_count: None,
        rtt: RttSummary::from_samples(&log.rtt_samples),
        samples,
        sender_cpu_s: thread_cpu_s() - cpu0,
        mtu: stats.path.current_mtu,
    })
}

fn sender_sample(conn: &Connection, t: Duration, written: u64) -> SenderSample {
    let stats = conn.stats();
    let m = conn.congestion_state().metrics();
    SenderSample {
        time_s: t.as_secs_f64(),
        written_bytes: written,
        sent_bytes: stats.udp_tx.bytes,
        sent_packets: stats.udp_tx.datagrams,
        cwnd_bytes: m.congestion_window,
        ssthresh_bytes: m.ssthresh,
        pacing_rate_bps: m.pacing_rate,
        srtt_s: stats.path.rtt.as_secs_f64(),
        min_rtt_s: stats.path.min_rtt.as_secs_f64(),
        lost_packets: stats.path.lost_packets,
        lost_bytes: stats.path.lost_bytes,
        congestion_events: stats.path.congestion_events,
        mtu: stats.path.current_mtu,
    }
}

/// Run the sink (see the module documentation): bind, report the bound address to `on_bound`
/// (which returns `false` to give up at once), accept one connection, count its unidirectional streams' bytes until the sender closes the
/// connection (or the idle timeout, or `max_duration`), and return its record.
///
/// # Errors
/// [`DriverError::Setup`] for a bad address or certificate; [`DriverError::Handshake`] when no
/// connection arrives in time; [`DriverError::Io`] for a socket failure. A connection that
/// ends abnormally is not an error here: the record says what was delivered and why it ended.
pub fn sink(opts: &SinkOptions, on_bound: &mut dyn FnMut(SocketAddr) -> bool) -> Result<SinkRecord, DriverError> {
    let cpu0 = thread_cpu_s();
    // The sink's controller only paces its ACK-only packets: quinn's default.
    let factory = controller_factory(QuicImpl::QuinnNative, "newreno", &[], None)?;
    let server = opts.cert.server_config(transport_config(factory, None))?;
    let sock = bind(&opts.bind, opts.socket_buffer_bytes)?;
    let local = sock.local_addr()?;
    if !on_bound(local) {
        return Err(DriverError::Setup(format!("the caller stopped the sink on {local}")));
    }
    let endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), Some(Arc::new(server)), true, None);
    let mut side = Side::new(sock, endpoint);

    let start = Instant::now();
    let t0 = opts.t0.unwrap_or(start);
    let interval = opts.interval.max(Duration::from_millis(1));
    let end_by = opts.max_duration.map(|d| t0 + d);
    let mut streams: Vec<StreamId> = Vec::new();
    let mut delivered = 0u64;
    let mut finished = false;
    let mut connected_at: Option<Instant> = None;
    let mut last_byte_at: Option<Instant> = None;
    let mut close_reason: Option<String> = None;
    let mut samples = Vec::new();
    let mut next_sample = t0 + interval * (start.saturating_duration_since(t0).as_nanos() / interval.as_nanos()) as u32;
    loop {
        let now = Instant::now();
        side.receive(now, true)?;
        let mut lost = false;
        if let Some((_, conn)) = side.conn.as_mut() {
            connected_at.get_or_insert(now);
            if conn.poll_timeout().is_some_and(|t| t <= now) {
                conn.handle_timeout(now);
            }
            while let Some(ev) = conn.poll() {
                match ev {
                    Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                        while let Some(id) = conn.streams().accept(Dir::Uni) {
                            streams.push(id);
                        }
                    }
                    Event::ConnectionLost { reason } => {
                        close_reason = Some(reason.to_string());
                        lost = true;
                    }
                    _ => {}
                }
            }
            for &id in &streams {
                let mut rs = conn.recv_stream(id);
                let Ok(mut chunks) = rs.read(true) else { continue };
                loop {
                    match chunks.next(usize::MAX) {
                        Ok(Some(c)) => {
                            delivered += c.bytes.len() as u64;
                            last_byte_at = Some(now);
                        }
                        Ok(None) => {
                            finished = true;
                            last_byte_at.get_or_insert(now);
                            break;
                        }
                        Err(ReadError::Blocked) | Err(ReadError::Reset(_)) => break,
                    }
                }
                // Returns whether flow-control credit (MAX_STREAM_DATA) must be sent; quinn
                // queues it either way and the next poll_transmit carries it.
                let _ = chunks.finalize();
            }
        }
        while now >= next_sample {
            samples.push(SinkSample { time_s: next_sample.saturating_duration_since(t0).as_secs_f64(), delivered_bytes: delivered });
            next_sample += interval;
        }
        side.service(now)?;
        if lost || end_by.is_some_and(|e| now >= e) {
            break;
        }
        match (connected_at, side.last_datagram) {
            (None, _) if now.saturating_duration_since(start) > opts.handshake_timeout => {
                return Err(DriverError::Handshake(format!("no sender reached {local} in {:?}", opts.handshake_timeout)));
            }
            (Some(_), Some(last)) if now.saturating_duration_since(last) > opts.idle_timeout => {
                close_reason = Some(format!("nothing arrived for {:?}", opts.idle_timeout));
                break;
            }
            _ => {}
        }
        let deadline = match side.conn.as_mut() {
            Some((_, c)) => next_deadline(c, &[Some(next_sample), end_by]),
            None => Some(next_sample),
        };
        side.sleep(deadline)?;
    }
    let conn_start = connected_at.unwrap_or(start);
    let dur = last_byte_at.map_or(0.0, |l| l.saturating_duration_since(conn_start).as_secs_f64());
    Ok(SinkRecord {
        local_addr: local.to_string(),
        connected: connected_at.is_some(),
        delivered_bytes: delivered,
        finished,
        duration_s: dur,
        goodput_bps: if dur > 0.0 { delivered as f64 * 8.0 / dur } else { 0.0 },
        close_reason,
        bytes_received: side.bytes_received,
        datagrams_received: side.datagrams_received,
        samples,
        cpu_s: thread_cpu_s() - cpu0,
    })
}
