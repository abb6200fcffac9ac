//! Sending a file: the handshake (HELLO → RETRY → OFFER → ACCEPT), then the transport's sender
//! (`tx`: the TCP-like one or UDT's) driven over the socket on the monotonic clock until the
//! receiver's DONE.
//!
//! The loop is the sans-IO contract of `ccarena_transport::sender`: fire due timers, drain
//! `poll_transmit` (pacing is the sender's: it reports its next release in `poll_timeout`, and the
//! loop sleeps until then with `ppoll`), wait for the earliest deadline or a datagram, feed every
//! ACK to `on_ack` at the time the kernel stamped its arrival.
//!
//! A bandwidth limit (`max_rate_bps`, [`crate::limit`]) is the loop's, not the transport's: the
//! transport is asked for a segment only while a token bucket holds credit for one, and once it
//! does not, the loop sleeps on a timer until a batch of segments is due, reads the ACKs that
//! came meanwhile, and sends the batch with one system call.

use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io::{BufReader, ErrorKind};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use ccarena_cc::{catalogue, new_controller, Params, SimTime};
use ccarena_transport::{AckSegment, RecoveryMode, SackBlock, MAX_SACK_BLOCKS};

use crate::batch::RecvBatch;
use crate::error::TransferError;
use crate::guard::ReplayWindow;
use crate::limit::RateLimit;
use crate::net::{Datagrams, Impaired, Impairment, Socket};
use crate::ranges::{RangeSet, StreamMap};
use crate::record::{mhz_per_mbps, CpuMeter, Recorder, TransferRecord};
use crate::sha256::{hex, sha256_of};
use crate::tx::{Outgoing, Tx};
use crate::wire::{self, decode, encode, kind_of, DecodeError, DoneStatus, Frame, Header, Offer};

/// Copies of a CLOSE a sender sends. Nothing acknowledges a CLOSE, and a lost one leaves the
/// peer holding the connection until its idle timeout — meanwhile it refuses to resume the same
/// file ("being received from another sender"); three copies leave 10⁻³ of that at 10 % loss.
pub(crate) const CLOSE_COPIES: usize = 3;
/// How often the progress callback runs (and the loop wakes at least), and the cwnd sampling.
const TICK: Duration = Duration::from_millis(100);
/// Idle time after which a PING goes out (keepalive).
pub const KEEPALIVE: Duration = Duration::from_secs(1);

/// How to send.
#[derive(Clone, Debug)]
pub struct SendOptions {
    /// Congestion-control flavor: any TCP flavor of the catalogue (ccarena's TCP-like transport),
    /// or `udt` (UDT's own transport, [`crate::udt`]).
    pub flavor: String,
    /// Loss-recovery mode; `None`: the flavor's default (must be `None` for `udt`).
    pub recovery: Option<String>,
    /// Payload bytes per DATA packet (64 to [`wire::MAX_PAYLOAD_BYTES`]; for `udt`, to
    /// [`wire::MAX_UDT_PAYLOAD_BYTES`]).
    pub mss_bytes: u32,
    /// How long the handshake may take before giving up.
    pub handshake_timeout: Duration,
    /// How long the peer may stay silent during the transfer.
    pub idle_timeout: Duration,
    /// Impair what this end sends (tests on loopback).
    pub impairment: Option<Impairment>,
    /// Stop (as if interrupted) once this many stream bytes are acknowledged (tests of resume).
    pub stop_after_bytes: Option<u64>,
    /// Name to offer; `None`: the file's own name.
    pub name: Option<String>,
    /// Lower bound on the retransmission timeout (RFC 6298 §2.4; Linux's 200 ms by default, as
    /// `ip route ... rto_min` lowers it on a fast path).
    pub min_rto: Duration,
    /// Upper bound on the sending rate, payload bits per second (a user's bandwidth limit, as
    /// `SO_MAX_PACING_RATE`, enforced by the loop's token bucket: [`crate::limit`]; a pacing
    /// controller such as BBR is also paced at its own rate, so it sends at the smaller of the
    /// two); `None`: only congestion control limits it. Not for `udt`.
    pub max_rate_bps: Option<u64>,
    /// How much late wake-up time the pacer may make up back-to-back (see
    /// `ccarena_transport::pacing`): 1 ms, about Linux's TSO burst at its pacing rate.
    pub pacing_burst: Duration,
}

impl Default for SendOptions {
    fn default() -> SendOptions {
        SendOptions {
            flavor: "cubic".into(),
            recovery: None,
            mss_bytes: 1400,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
            impairment: None,
            stop_after_bytes: None,
            name: None,
            min_rto: Duration::from_millis(200),
            max_rate_bps: None,
            pacing_burst: Duration::from_millis(1),
        }
    }
}

/// Where a transfer is, for a progress display.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// File size, bytes.
    pub file_bytes: u64,
    /// Bytes the receiver held before this run.
    pub resumed_bytes: u64,
    /// Bytes this run must deliver.
    pub stream_bytes: u64,
    /// Of those, acknowledged so far.
    pub acked_bytes: u64,
    /// Seconds since the first DATA (0 during the handshake).
    pub elapsed_s: f64,
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

/// The connection as the sender sees it: socket, peer, ids and counters.
pub(crate) struct Link {
    pub(crate) sock: Box<dyn Datagrams>,
    pub(crate) peer: SocketAddr,
    pub(crate) conn_id: u64,
    pub(crate) pn_out: u64,
    pub(crate) replay: ReplayWindow,
    pub(crate) buf: Vec<u8>,
    pub(crate) last_sent: Instant,
    pub(crate) last_heard: Instant,
    /// How long before it was read the frame being handed to [`Link::receive`]'s callback
    /// arrived (the kernel's receive stamp), ns; 0 when unknown.
    pub(crate) arrival_age_ns: u64,
    rbatch: RecvBatch,
}

/// Most datagrams a driver reads before it looks at its timers again.
pub(crate) const MAX_READ_PER_WAKE: usize = 4096;

impl Link {
    /// A link to `peer` over `sock` with a fresh random connection id.
    pub(crate) fn new(sock: Box<dyn Datagrams>, peer: SocketAddr) -> Link {
        let now = Instant::now();
        Link {
            peer,
            conn_id: RandomState::new().hash_one((now, std::process::id())),
            pn_out: 0,
            replay: ReplayWindow::default(),
            buf: Vec::with_capacity(wire::MAX_DATAGRAM_BYTES),
            last_sent: now,
            last_heard: now,
            arrival_age_ns: 0,
            rbatch: sock.new_recv_batch(),
            sock,
        }
    }

    pub(crate) fn send(&mut self, frame: &Frame<'_>) -> Result<(), TransferError> {
        let h = Header { version: wire::VERSION, kind: kind_of(frame), conn_id: self.conn_id, pn: self.pn_out };
        self.pn_out += 1;
        encode(&h, frame, &mut self.buf);
        self.last_sent = Instant::now();
        self.sock.send_to(&self.buf, self.peer).map_err(|e| self.io_error(e, "send"))
    }

    /// Tell the peer the connection ends (CLOSE with `code`: 0 a normal end, else an abort, and
    /// `message` for people), in [`CLOSE_COPIES`] copies.
    ///
    /// # Errors
    /// As [`Link::send`].
    pub(crate) fn close(&mut self, code: u8, message: &str) -> Result<(), TransferError> {
        for _ in 0..CLOSE_COPIES {
            self.send(&Frame::Close { code, message })?;
        }
        Ok(())
    }

    fn io_error(&self, e: std::io::Error, what: &str) -> TransferError {
        match e.kind() {
            ErrorKind::ConnectionRefused => TransferError::Refused { addr: self.peer },
            _ => TransferError::Io { context: format!("{what} to {}", self.peer), error: e },
        }
    }

    /// Wait up to `timeout`, then hand every datagram from the peer of this connection that
    /// decodes (and is not a replay) to `on`. Decoding errors other than a foreign version are
    /// dropped; a foreign version ends the transfer.
    pub(crate) fn receive(
        &mut self,
        timeout: Duration,
        mut on: impl FnMut(&mut Link, Frame<'_>) -> Result<(), TransferError>,
    ) -> Result<(), TransferError> {
        if !timeout.is_zero() {
            self.sock.wait(timeout).map_err(|e| self.io_error(e, "wait"))?;
        }
        // The batch is taken out of the link for the frames (which borrow it) to meet `on`
        // (which takes the link), and put back whatever happens.
        let mut batch = std::mem::take(&mut self.rbatch);
        let r = self.receive_into(&mut batch, &mut on);
        self.rbatch = batch;
        r
    }

    /// Read up to [`MAX_READ_PER_WAKE`] datagrams with `batch`, handing each of this
    /// connection's frames to `on`.
    fn receive_into(
        &mut self,
        batch: &mut RecvBatch,
        on: &mut impl FnMut(&mut Link, Frame<'_>) -> Result<(), TransferError>,
    ) -> Result<(), TransferError> {
        let mut read = 0;
        while read < MAX_READ_PER_WAKE {
            let messages = self.sock.recv_batch(batch).map_err(|e| self.io_error(e, "receive"))?;
            if messages == 0 {
                break;
            }
            for d in batch.iter() {
                read += 1;
                if d.from != self.peer {
                    continue;
                }
                let (h, frame) = match decode(d.data) {
                    Ok(x) => x,
                    Err(DecodeError::UnknownVersion(v)) => {
                        return Err(TransferError::VersionMismatch { addr: self.peer, theirs: v })
                    }
                    Err(_) => continue,
                };
                if let Frame::VersionMismatch { supported } = &frame {
                    if !supported.contains(&wire::VERSION) {
                        let theirs = supported.iter().copied().max().unwrap_or(h.version);
                        return Err(TransferError::VersionMismatch { addr: self.peer, theirs });
                    }
                    continue;
                }
                // RETRY and REJECT come from the stateless handshake path (packet number 0, no
                // connection yet): only the connection's own packets go through the replay window.
                let stateless = matches!(frame, Frame::Retry { .. } | Frame::Reject { .. });
                if h.conn_id != self.conn_id || (!stateless && !self.replay.accept(h.pn)) {
                    continue;
                }
                self.last_heard = Instant::now();
                self.arrival_age_ns = d.arrival_age_ns.unwrap_or(0);
                on(self, frame)?;
            }
            // Fewer messages than the batch holds: the socket was empty when read, and another
            // call would only say so (a system call per wake-up saved).
            if messages < batch.capacity() {
                break;
            }
        }
        Ok(())
    }
}

/// Bytes the file sender reads ahead at once.
const READ_AHEAD_BYTES: usize = 1 << 20;

/// The file read in large pieces for the DATA packets: one `pread` per
/// [`READ_AHEAD_BYTES`] of new data rather than one per packet (a system call per packet
/// would cost as much as the batched sends save). Retransmissions, behind the window, are read
/// directly and leave it in place.
#[derive(Default)]
struct ReadAhead {
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    start: u64,
}

impl ReadAhead {
    /// Fill `dst` from `file` at `off`.
    fn read_exact_at(&mut self, file: &File, dst: &mut [u8], off: u64) -> std::io::Result<()> {
        let end = off + dst.len() as u64;
        let held = self.start..self.start + self.buf.len() as u64;
        if !(held.contains(&off) && end <= held.end) {
            if off < self.start || dst.len() > READ_AHEAD_BYTES {
                return file.read_exact_at(dst, off);
            }
            // Forward of the window: refill from here (up to the end of the file).
            self.buf.resize(READ_AHEAD_BYTES, 0);
            let mut n = 0;
            while n < self.buf.len() {
                match file.read_at(&mut self.buf[n..], off + n as u64) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            self.buf.truncate(n);
            self.start = off;
            if (n as u64) < dst.len() as u64 {
                return Err(std::io::Error::new(ErrorKind::UnexpectedEof, "the file is shorter than offered"));
            }
        }
        let at = (off - self.start) as usize;
        dst.copy_from_slice(&self.buf[at..at + dst.len()]);
        Ok(())
    }
}

/// A socket bound on `bind` (`HOST`, any port; `None`: any address of the peer's family) and
/// connected to `peer` (`HOST:PORT`, resolved here), so an ICMP port unreachable comes back as
/// ECONNREFUSED. Returns it with the peer's address.
///
/// # Errors
/// [`TransferError::BadAddress`]: `peer` does not resolve; [`TransferError::Io`]: bind, connect
/// or the socket's set-up failed.
pub(crate) fn connect(bind: Option<&str>, peer: &str) -> Result<(Socket, SocketAddr), TransferError> {
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
    Ok((Socket::new(udp).map_err(|e| io("socket", e))?, peer_addr))
}

/// What the receiver answered to the offer.
pub(crate) struct Accepted {
    pub(crate) stream_bytes: u64,
    pub(crate) rwnd_bytes: u64,
    pub(crate) held: Vec<(u64, u64)>,
}

/// HELLO until RETRY, then OFFER until ACCEPT; resent with backoff until `handshake_timeout`.
///
/// `offer` builds the offer (OFFER or STREAM_OFFER) around the cookie; `keep_going` is asked at
/// every wake-up (false: [`TransferError::Interrupted`]).
pub(crate) fn handshake<'o>(
    link: &mut Link,
    offer: &dyn Fn([u8; wire::COOKIE_BYTES]) -> Frame<'o>,
    timeout: Duration,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Accepted, TransferError> {
    let start = Instant::now();
    let mut cookie: Option<[u8; wire::COOKIE_BYTES]> = None;
    let mut accepted: Option<Accepted> = None;
    let mut gap = Duration::from_millis(200);
    let mut next_send = start;
    loop {
        let now = Instant::now();
        if now >= next_send {
            match cookie {
                None => link.send(&Frame::Hello)?,
                Some(c) => link.send(&offer(c))?,
            }
            next_send = now + gap;
            gap = (gap * 2).min(Duration::from_secs(1));
        }
        if now.duration_since(start) >= timeout {
            return Err(TransferError::NoAnswer { addr: link.peer, secs: timeout.as_secs_f64() });
        }
        if !keep_going() {
            return Err(TransferError::Interrupted { acked_bytes: 0 });
        }
        let wait = next_send.saturating_duration_since(now).min(TICK);
        let mut got_cookie = false;
        link.receive(wait, |_, frame| {
            match frame {
                Frame::Retry { cookie: c } if cookie.is_none() => {
                    cookie = Some(c);
                    got_cookie = true;
                }
                Frame::Accept { stream_bytes, rwnd_bytes, held } => {
                    accepted = Some(Accepted { stream_bytes, rwnd_bytes, held })
                }
                Frame::Reject { code, message } => {
                    return Err(TransferError::Rejected { code, message: message.to_string() })
                }
                Frame::Close { message, .. } => {
                    return Err(TransferError::PeerClosed { message: message.to_string() })
                }
                _ => {}
            }
            Ok(())
        })?;
        if let Some(a) = accepted.take() {
            return Ok(a);
        }
        if got_cookie {
            next_send = Instant::now();
            gap = Duration::from_millis(200);
        }
    }
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
        rwnd_bytes: a.rwnd_bytes,
    }
}

/// Send the file at `path` to the receiver at `addr` (`HOST:PORT`) with `opts`, calling
/// `progress` about every 100 ms (return `false` to stop: the transfer ends with
/// [`TransferError::Interrupted`] after telling the receiver, which keeps what arrived for a
/// resume). Returns the transfer's record once the receiver confirmed the SHA-256.
///
/// # Errors
/// [`TransferError`]: a missing file, a bad address, no receiver, a foreign wire version, a
/// refusal, a silent peer, a failed verification, an interruption.
pub fn send_file(
    path: &Path,
    addr: &str,
    opts: &SendOptions,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<TransferRecord, TransferError> {
    let (_, recovery) = Tx::for_file(opts, u64::MAX, SimTime::ZERO)?; // options checked before any I/O
    crate::net::fine_timers();
    let missing = |reason: String| TransferError::MissingFile { path: path.to_path_buf(), reason };
    let file = File::open(path).map_err(|e| missing(e.to_string()))?;
    let meta = file.metadata().map_err(|e| missing(e.to_string()))?;
    if !meta.is_file() {
        return Err(missing("not a regular file".into()));
    }
    let file_bytes = meta.len();
    let name = match &opts.name {
        Some(n) => n.clone(),
        None => path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| missing("the file name is not UTF-8".into()))?
            .to_string(),
    };
    let digest = sha256_of(BufReader::new(&file)).map_err(|e| missing(e.to_string()))?;

    let (sock, peer) = connect(None, addr)?;
    let sock: Box<dyn Datagrams> = match opts.impairment {
        Some(imp) => Box::new(Impaired::new(sock, imp)),
        None => Box::new(sock),
    };
    let mut link = Link::new(sock, peer);
    let offer = Offer {
        cookie: [0; wire::COOKIE_BYTES],
        file_bytes,
        sha256: digest,
        mss_bytes: opts.mss_bytes as u16,
        name: &name,
        flavor: &opts.flavor,
    };
    let acc = handshake(&mut link, &|cookie| Frame::Offer(Offer { cookie, ..offer }), opts.handshake_timeout, &mut || {
        progress(&Progress { file_bytes, ..Progress::default() })
    })?;

    let protocol = |what: &str| TransferError::PeerClosed { message: format!("the receiver sent {what}") };
    if acc.held.iter().any(|&(_, e)| e > file_bytes) {
        return Err(protocol("held ranges beyond the file"));
    }
    let held = RangeSet::from_ranges(acc.held.iter().copied());
    let map = StreamMap::new(&held.complement(file_bytes));
    if map.stream_bytes() != acc.stream_bytes {
        return Err(protocol("a stream length that does not match its held ranges"));
    }
    let stream_bytes = acc.stream_bytes;
    let resumed_bytes = file_bytes - stream_bytes;

    let epoch = Instant::now();
    let sim = |t: Instant| SimTime(t.saturating_duration_since(epoch).as_nanos() as u64);
    let (mut sender, _) = Tx::for_file(opts, acc.rwnd_bytes, SimTime::ZERO)?;
    if stream_bytes > 0 {
        sender.app_write(stream_bytes);
    }
    let mut rec = Recorder::new(epoch);
    // The sending thread's CPU over the same interval as duration_s (first DATA to last ACK).
    let cpu_meter = CpuMeter::start();
    let mut cpu_at_completion = (f64::NAN, f64::NAN);
    let mut payload = vec![0u8; opts.mss_bytes as usize];
    let mut reader = ReadAhead::default();
    let mut next_tick = epoch;
    let mut completed_at: Option<Instant> = None;
    let mut done: Option<(DoneStatus, String)> = None;
    let mut last_poke = epoch;
    let mut limit = opts
        .max_rate_bps
        .filter(|r| *r > 0)
        .map(|r| RateLimit::new(r, u64::from(opts.mss_bytes), SimTime::ZERO));
    // The latest time handed to the sender: an ACK's arrival stamp may precede it by a little.
    let mut sender_clock = SimTime::ZERO;
    loop {
        let now = Instant::now();
        let t = sim(now).max(sender_clock);
        sender_clock = t;
        sender.handle_timeout(t);
        // Out of credit for a segment: the transport was not asked, whatever it holds.
        let mut rate_limited = false;
        loop {
            if let Some(l) = limit.as_mut() {
                if !l.allows_segment(t) {
                    rate_limited = true;
                    break;
                }
            }
            let Some(out) = sender.poll_transmit(t) else { break };
            let data = match out {
                Outgoing::Data(d) => d,
                Outgoing::Control(frame) => {
                    link.send(&frame)?;
                    continue;
                }
            };
            let mut at = 0usize;
            for (off, len) in map.file_pieces(data.offset, data.len as u64) {
                let dst = &mut payload[at..at + len as usize];
                reader.read_exact_at(&file, dst, off).map_err(|e| missing(e.to_string()))?;
                at += len as usize;
            }
            debug_assert_eq!(at, data.len as usize);
            link.send(&data.frame(&payload[..at]))?;
            if let Some(l) = limit.as_mut() {
                l.bucket.take(t, u64::from(data.len));
            }
        }
        if sender.is_complete() && completed_at.is_none() {
            completed_at = Some(now);
            cpu_at_completion = cpu_meter.finish();
        }
        // Everything acknowledged: poke the receiver until its DONE arrives (it answers any
        // packet of a finished connection with DONE, so a lost DONE is repaired).
        if completed_at.is_some() && now.duration_since(last_poke) >= Duration::from_millis(200) {
            link.send(&Frame::Ping)?;
            last_poke = now;
        } else if now.duration_since(link.last_sent) >= KEEPALIVE {
            link.send(&Frame::Ping)?;
        }
        // Once everything is acknowledged the receiver hashes the whole file before its DONE,
        // silent meanwhile: allow for that at a slow 100 MB/s.
        let allowed_idle = match completed_at {
            Some(_) => opts.idle_timeout + Duration::from_secs_f64(file_bytes as f64 / 100e6),
            None => opts.idle_timeout,
        };
        if now.duration_since(link.last_heard) >= allowed_idle {
            return Err(TransferError::PeerSilent { secs: allowed_idle.as_secs_f64() });
        }
        let interrupted = opts.stop_after_bytes.is_some_and(|n| sender.acked_bytes() >= n && completed_at.is_none());
        if now >= next_tick || interrupted {
            next_tick = now + TICK;
            rec.cwnd(now, sender.cwnd_bytes());
            let p = Progress {
                file_bytes,
                resumed_bytes,
                stream_bytes,
                acked_bytes: sender.acked_bytes(),
                elapsed_s: now.duration_since(epoch).as_secs_f64(),
            };
            if interrupted || !progress(&p) {
                link.close(1, "interrupted by the sender")?;
                return Err(TransferError::Interrupted { acked_bytes: sender.acked_bytes() });
            }
        }
        if let Some((status, message)) = done.take() {
            let _ = link.close(0, "");
            if status != DoneStatus::Ok {
                return Err(TransferError::Verify { message });
            }
            let end = completed_at.unwrap_or(now);
            let duration_s = end.duration_since(epoch).as_secs_f64().max(1e-9);
            let (rtt, cwnd_samples) = rec.finish();
            let st = sender.totals();
            let (sender_cpu_s, cpu_mhz) = cpu_at_completion;
            let goodput_bps = stream_bytes as f64 * 8.0 / duration_s;
            return Ok(TransferRecord {
                name,
                peer: peer.to_string(),
                flavor: opts.flavor.clone(),
                recovery: recovery.to_string(),
                file_bytes,
                resumed_bytes,
                stream_bytes,
                duration_s,
                goodput_bps,
                bytes_sent: st.bytes_sent,
                bytes_retransmitted: st.bytes_retransmitted,
                segments_sent: st.segments_sent,
                retransmissions: st.retransmissions,
                rto_count: st.rto_count,
                fast_recoveries: st.fast_recoveries,
                rtt,
                cwnd_samples,
                sha256: hex(&digest),
                sender_cpu_s,
                cpu_mhz,
                cpu_percent: sender_cpu_s / duration_s * 100.0,
                mhz_per_mbps: mhz_per_mbps(sender_cpu_s, duration_s, cpu_mhz, goodput_bps),
            });
        }
        let mut deadline = next_tick.min(link.last_sent + KEEPALIVE);
        let mut wait = Duration::ZERO;
        match limit.as_ref() {
            Some(l) if rate_limited => {
                // Whatever an ACK or a timer of the sender's would release needs credit, and
                // none comes before the next batch: sleep until it is due without waking for
                // each ACK (the wake-ups, not the packets, were what a limited transfer paid
                // for), then read every ACK that came meanwhile, at its arrival time.
                deadline = deadline.min(epoch + Duration::from_nanos(l.batch_due().as_nanos()));
                link.sock.flush().map_err(|e| link.io_error(e, "send"))?;
                std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            }
            _ => {
                if let Some(t) = sender.poll_timeout() {
                    deadline = deadline.min(epoch + Duration::from_nanos(t.as_nanos()));
                }
                wait = deadline.saturating_duration_since(Instant::now());
            }
        }
        link.receive(wait, |l, frame| {
            match frame {
                Frame::Ack(_) | Frame::UdtAck(_) | Frame::UdtNak { .. } => {
                    let arrived = SimTime(sim(Instant::now()).as_nanos().saturating_sub(l.arrival_age_ns));
                    sender_clock = sender_clock.max(arrived);
                    if let Some(rtt) = sender.on_frame(sender_clock, &frame) {
                        rec.rtt(rtt);
                    }
                }
                Frame::Done { status, message } => done = Some((status, message.to_string())),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps what is sent.
    struct Recorded(std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>);

    impl Datagrams for Recorded {
        fn send_to(&mut self, buf: &[u8], _: SocketAddr) -> std::io::Result<()> {
            self.0.lock().unwrap().push(buf.to_vec());
            Ok(())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn recv_batch(&mut self, _: &mut RecvBatch) -> std::io::Result<usize> {
            Ok(0)
        }
        fn wait(&mut self, _: Duration) -> std::io::Result<()> {
            Ok(())
        }
        fn local_addr(&self) -> std::io::Result<SocketAddr> {
            Ok("127.0.0.1:1".parse().unwrap())
        }
    }

    #[test]
    fn a_close_goes_out_in_copies_the_peers_replay_window_accepts() {
        let sent = std::sync::Arc::default();
        let mut link = Link::new(Box::new(Recorded(std::sync::Arc::clone(&sent))), "127.0.0.1:2".parse().unwrap());
        link.close(1, "interrupted by the sender").unwrap();
        let sent = sent.lock().unwrap();
        assert_eq!(sent.len(), 3, "three copies: at 10 % loss one in 1,000 closes is lost");
        let mut replay = ReplayWindow::default();
        for d in sent.iter() {
            let (h, frame) = decode(d).unwrap();
            assert!(matches!(frame, Frame::Close { code: 1, message: "interrupted by the sender" }));
            assert!(replay.accept(h.pn), "each copy has a packet number of its own");
        }
    }

    #[test]
    fn read_ahead_returns_the_files_bytes_forward_backward_across_windows_and_at_the_end() {
        let path = std::env::temp_dir().join(format!("ccarena-readahead-{}", std::process::id()));
        let len = 2 * READ_AHEAD_BYTES + 12_345;
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        let mut r = ReadAhead::default();
        // New data in order, a window boundary crossed mid-piece, retransmissions far behind,
        // a piece at the very end, and one past it.
        let reads = [(0, 1400), (1400, 1400), (READ_AHEAD_BYTES as u64 - 700, 1400), (10, 1400), (2800, 35), (len as u64 - 1000, 1000)];
        for (off, n) in reads {
            let mut dst = vec![0u8; n];
            r.read_exact_at(&file, &mut dst, off).unwrap();
            assert!(dst == data[off as usize..off as usize + n], "read at {off}");
        }
        let mut dst = vec![0u8; 10];
        assert!(r.read_exact_at(&file, &mut dst, len as u64 - 5).is_err());
        let _ = std::fs::remove_file(&path);
    }
}
