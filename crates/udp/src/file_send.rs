//! The file transfer's sending side (`ccarena send`): the session's handshake (HELLO → RETRY →
//! OFFER → ACCEPT, `session`), then the transport's sender (`tx`: the TCP-like one or UDT's)
//! driven over the socket on the monotonic clock until the receiver's DONE.
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
use std::io::{BufReader, ErrorKind};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use ccarena_cc::{Params, SimTime};
use ccarena_transport::rtt::RtoRule;

use crate::clock::KEEPALIVE;
use crate::error::TransferError;
use crate::limit::RateLimit;
use crate::net::{Datagrams, Impaired, Impairment};
use crate::ranges::{RangeSet, StreamMap};
use crate::record::{mhz_per_mbps, CpuMeter, Recorder, TransferRecord};
use crate::session::{connect, handshake, Accepted, Session};
use crate::sha256::{hex, sha256_of};
use crate::tx::{Outgoing, Tx, TxSetup};
use crate::udt::UDT_FLAVOR;
use crate::wire::{self, DoneStatus, Frame, Offer};

/// How often the progress callback runs (and the loop wakes at least), and the cwnd sampling.
const TICK: Duration = Duration::from_millis(100);
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
    /// A read outside the window lands here.
    aside: Vec<u8>,
}

impl ReadAhead {
    /// Fill `dst` from `file` at `off`.
    #[cfg(test)]
    fn read_exact_at(&mut self, file: &File, dst: &mut [u8], off: u64) -> std::io::Result<()> {
        dst.copy_from_slice(self.bytes_at(file, off, dst.len())?);
        Ok(())
    }

    /// The `len` bytes of `file` at `off`, from the window where it holds them (new data: no
    /// copy on the way to the packet).
    fn bytes_at(&mut self, file: &File, off: u64, len: usize) -> std::io::Result<&[u8]> {
        let end = off + len as u64;
        let held = self.start..self.start + self.buf.len() as u64;
        if !(held.contains(&off) && end <= held.end) {
            if off < self.start || len > READ_AHEAD_BYTES {
                self.aside.resize(len, 0);
                file.read_exact_at(&mut self.aside, off)?;
                return Ok(&self.aside);
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
            if n < len {
                return Err(std::io::Error::new(ErrorKind::UnexpectedEof, "the file is shorter than offered"));
            }
        }
        let at = (off - self.start) as usize;
        Ok(&self.buf[at..at + len])
    }
}

/// Send the file at `path` to the receiver at `addr` (`HOST:PORT`) with `opts`, calling
/// `progress` about every 100 ms (return `false` to stop: the transfer ends with
/// [`TransferError::Interrupted`] after telling the receiver, which keeps what arrived for a
/// resume). Returns the transfer's record once the receiver confirmed the SHA-256.
///
/// The phases: the options checked (before any I/O), the file opened and hashed, the session
/// opened and the offer accepted, the receiver's held ranges checked, then the transport's loop
/// (`FileTransfer::run`) until the receiver's DONE.
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
    let setup = tx_setup(opts)?;
    let (_, recovery) = Tx::new(&setup, u64::MAX, SimTime::ZERO)?; // options checked before any I/O
    crate::net::fine_timers();
    let file = OfferedFile::open(path, opts.name.as_deref())?;
    let (sock, peer) = connect(None, addr)?;
    let sock: Box<dyn Datagrams> = match opts.impairment {
        Some(imp) => Box::new(Impaired::new(sock, imp)),
        None => Box::new(sock),
    };
    let mut session = Session::new(sock, peer);
    let offer = file.offer(opts);
    let file_bytes = file.file_bytes;
    let acc = handshake(&mut session, &|cookie| Frame::Offer(Offer { cookie, ..offer }), opts.handshake_timeout, &mut || {
        progress(&Progress { file_bytes, ..Progress::default() })
    })?;
    let map = held_by_receiver(&acc, file_bytes)?;
    let (sender, _) = Tx::new(&setup, acc.rwnd_bytes, SimTime::ZERO)?;
    FileTransfer::new(opts, file, map, session, sender, recovery).run(progress)
}

/// The sending half's set-up for `opts`.
///
/// # Errors
/// [`TransferError::Config`] for `udt` with a recovery mode or a rate limit (UDT's rate control
/// has neither); the rest is checked by [`Tx::new`].
fn tx_setup(opts: &SendOptions) -> Result<TxSetup<'_>, TransferError> {
    let config = |message: &str| TransferError::Config { message: message.to_string() };
    if opts.flavor == UDT_FLAVOR {
        if opts.recovery.is_some() {
            return Err(config("--recovery: UDT recovers from its receiver's NAKs; it takes no recovery mode"));
        }
        if opts.max_rate_bps.is_some() {
            return Err(config("--limit-rate: UDT's rate control takes no rate limit"));
        }
    }
    // Linux's sender: IW 10 (RFC 6928), RTO from 1 s within [min_rto, 60 s], G = 1 ms,
    // dupthresh 3; no send-buffer cap.
    Ok(TxSetup {
        flavor: &opts.flavor,
        params: Params::default(),
        recovery: opts.recovery.as_deref(),
        mss_bytes: opts.mss_bytes,
        initial_cwnd_packets: 10,
        min_rto: ccarena_cc::Duration(opts.min_rto.as_nanos() as u64),
        initial_rto: ccarena_cc::Duration::from_secs(1),
        max_rto: ccarena_cc::Duration::from_secs(60),
        clock_granularity: ccarena_cc::Duration::from_millis(1),
        dupthresh: 3,
        sndbuf_bytes: None,
        pacing_burst: opts.pacing_burst,
        rto_rule: RtoRule::Rfc6298,
        // A file transfer runs without ECN (its OFFER has no field to ask the receiver for it).
        ecn: None,
        // Nor QUIC (its OFFER has no transport field; scenario streams run it).
        quic: None,
    })
}

/// The file being sent: open, its size, the name it is offered under and its SHA-256.
struct OfferedFile<'p> {
    path: &'p Path,
    file: File,
    file_bytes: u64,
    name: String,
    digest: [u8; 32],
}

impl<'p> OfferedFile<'p> {
    /// Open and hash the regular file at `path`, to be offered as `name` (`None`: its own name).
    ///
    /// # Errors
    /// [`TransferError::MissingFile`]: it cannot be opened or read, is not a regular file, or
    /// its name is not UTF-8.
    fn open(path: &'p Path, name: Option<&str>) -> Result<OfferedFile<'p>, TransferError> {
        let missing = |reason: String| TransferError::MissingFile { path: path.to_path_buf(), reason };
        let file = File::open(path).map_err(|e| missing(e.to_string()))?;
        let meta = file.metadata().map_err(|e| missing(e.to_string()))?;
        if !meta.is_file() {
            return Err(missing("not a regular file".into()));
        }
        let name = match name {
            Some(n) => n.to_string(),
            None => path
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or_else(|| missing("the file name is not UTF-8".into()))?
                .to_string(),
        };
        let digest = sha256_of(BufReader::new(&file)).map_err(|e| missing(e.to_string()))?;
        Ok(OfferedFile { path, file, file_bytes: meta.len(), name, digest })
    }

    /// The OFFER for this file with `opts` (its cookie still zero).
    fn offer<'a>(&'a self, opts: &'a SendOptions) -> Offer<'a> {
        Offer {
            cookie: [0; wire::COOKIE_BYTES],
            file_bytes: self.file_bytes,
            sha256: self.digest,
            mss_bytes: opts.mss_bytes as u16,
            name: &self.name,
            flavor: &opts.flavor,
        }
    }

    /// The file can no longer be read for `reason`.
    fn missing(&self, reason: String) -> TransferError {
        TransferError::MissingFile { path: self.path.to_path_buf(), reason }
    }
}

/// The map from the stream this run sends to the file's offsets: the file minus the ranges the
/// receiver holds (a resume).
///
/// # Errors
/// [`TransferError::PeerClosed`]: held ranges beyond the file, or a stream length that does not
/// match them.
fn held_by_receiver(acc: &Accepted, file_bytes: u64) -> Result<StreamMap, TransferError> {
    let protocol = |what: &str| TransferError::PeerClosed { message: format!("the receiver sent {what}") };
    if acc.held.iter().any(|&(_, e)| e > file_bytes) {
        return Err(protocol("held ranges beyond the file"));
    }
    let held = RangeSet::from_ranges(acc.held.iter().copied());
    let map = StreamMap::new(&held.complement(file_bytes));
    if map.stream_bytes() != acc.stream_bytes {
        return Err(protocol("a stream length that does not match its held ranges"));
    }
    Ok(map)
}

/// `t` on the sender's clock: time since `epoch`.
fn since(epoch: Instant, t: Instant) -> SimTime {
    SimTime(t.saturating_duration_since(epoch).as_nanos() as u64)
}

/// A file transfer after the handshake: the transport's loop and what it measures.
struct FileTransfer<'o, 'p> {
    opts: &'o SendOptions,
    file: OfferedFile<'p>,
    map: StreamMap,
    session: Session,
    sender: Tx,
    recovery: String,
    /// The first DATA's time: the sender's clock starts here.
    epoch: Instant,
    rec: Recorder,
    /// The sending thread's CPU over the same interval as duration_s (first DATA to last ACK).
    cpu_meter: CpuMeter,
    cpu_at_completion: (f64, f64),
    payload: Vec<u8>,
    reader: ReadAhead,
    next_tick: Instant,
    completed_at: Option<Instant>,
    done: Option<(DoneStatus, String)>,
    last_poke: Instant,
    limit: Option<RateLimit>,
    /// The latest time handed to the sender: an ACK's arrival stamp may precede it by a little.
    sender_clock: SimTime,
}

impl<'o, 'p> FileTransfer<'o, 'p> {
    /// The transfer of `file` over `session` with `sender` (loss recovery `recovery`), the
    /// stream mapped onto the file by `map`; the clock starts now.
    fn new(opts: &'o SendOptions, file: OfferedFile<'p>, map: StreamMap, session: Session, mut sender: Tx, recovery: String) -> Self {
        let epoch = Instant::now();
        if map.stream_bytes() > 0 {
            sender.app_write(map.stream_bytes());
        }
        let rec = Recorder::new(epoch);
        let cpu_meter = CpuMeter::start();
        let limit = opts
            .max_rate_bps
            .filter(|r| *r > 0)
            .map(|r| RateLimit::new(r, u64::from(opts.mss_bytes), SimTime::ZERO));
        FileTransfer {
            payload: vec![0u8; opts.mss_bytes as usize],
            opts,
            file,
            map,
            session,
            sender,
            recovery,
            epoch,
            rec,
            cpu_meter,
            cpu_at_completion: (f64::NAN, f64::NAN),
            reader: ReadAhead::default(),
            next_tick: epoch,
            completed_at: None,
            done: None,
            last_poke: epoch,
            limit,
            sender_clock: SimTime::ZERO,
        }
    }

    /// Bytes the receiver held before this run.
    fn resumed_bytes(&self) -> u64 {
        self.file.file_bytes - self.map.stream_bytes()
    }

    /// The loop: timers, sending, keepalives, progress, then a wait for feedback, until DONE.
    ///
    /// # Errors
    /// As [`send_file`].
    fn run(mut self, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<TransferRecord, TransferError> {
        loop {
            let now = Instant::now();
            let t = since(self.epoch, now).max(self.sender_clock);
            self.sender_clock = t;
            self.sender.handle_timeout(t);
            let rate_limited = self.transmit(t, now)?;
            if self.sender.is_complete() && self.completed_at.is_none() {
                self.completed_at = Some(now);
                self.cpu_at_completion = self.cpu_meter.finish();
            }
            self.keep_alive(now)?;
            self.report(now, progress)?;
            if let Some((status, message)) = self.done.take() {
                let _ = self.session.close(0, "");
                if status != DoneStatus::Ok {
                    return Err(TransferError::Verify { message });
                }
                return Ok(self.record(now));
            }
            self.wait_for_feedback(rate_limited)?;
        }
    }

    /// Send what the sender releases at `t` (`now` on the wall clock), while the rate limit (if
    /// any) holds credit. Returns whether the limit stopped it (out of credit for a segment: the
    /// transport was not asked, whatever it holds).
    fn transmit(&mut self, t: SimTime, now: Instant) -> Result<bool, TransferError> {
        loop {
            if let Some(l) = self.limit.as_mut() {
                if !l.allows_segment(t) {
                    return Ok(true);
                }
            }
            let Some(out) = self.sender.poll_transmit(t) else { return Ok(false) };
            let data = match out {
                Outgoing::Data(d) => d,
                Outgoing::Control(frame) => {
                    self.session.send(&frame)?;
                    continue;
                }
            };
            let missing = |e: std::io::Error| self.file.missing(e.to_string());
            let mut pieces = self.map.file_pieces(data.offset, data.len as u64);
            let payload = match (pieces.next(), pieces.next()) {
                // One piece of the file (always, but across a resume's hole): straight from the
                // read-ahead window into the send queue.
                (Some((off, len)), None) => self.reader.bytes_at(&self.file.file, off, len as usize).map_err(missing)?,
                (first, second) => {
                    let mut at = 0usize;
                    for (off, len) in first.into_iter().chain(second).chain(pieces) {
                        let bytes = self.reader.bytes_at(&self.file.file, off, len as usize).map_err(missing)?;
                        self.payload[at..at + len as usize].copy_from_slice(bytes);
                        at += len as usize;
                    }
                    &self.payload[..at]
                }
            };
            debug_assert_eq!(payload.len(), data.len as usize);
            self.session.send_at(&data.frame(payload), data.ecn, now)?;
            if let Some(l) = self.limit.as_mut() {
                l.bucket.take(t, u64::from(data.len));
            }
        }
    }

    /// PING when idle (or, everything acknowledged, every 200 ms until DONE arrives); end the
    /// transfer once the receiver is silent too long.
    fn keep_alive(&mut self, now: Instant) -> Result<(), TransferError> {
        // Everything acknowledged: poke the receiver until its DONE arrives (it answers any
        // packet of a finished connection with DONE, so a lost DONE is repaired).
        if self.completed_at.is_some() && now.duration_since(self.last_poke) >= Duration::from_millis(200) {
            self.session.send(&Frame::Ping)?;
            self.last_poke = now;
        } else if now.duration_since(self.session.last_sent) >= KEEPALIVE {
            self.session.send(&Frame::Ping)?;
        }
        // Once everything is acknowledged the receiver hashes the whole file before its DONE,
        // silent meanwhile: allow for that at a slow 100 MB/s.
        let allowed_idle = match self.completed_at {
            Some(_) => self.opts.idle_timeout + Duration::from_secs_f64(self.file.file_bytes as f64 / 100e6),
            None => self.opts.idle_timeout,
        };
        if now.duration_since(self.session.last_heard) >= allowed_idle {
            return Err(TransferError::PeerSilent { secs: allowed_idle.as_secs_f64() });
        }
        Ok(())
    }

    /// Every [`TICK`]: sample the cwnd and call `progress`; stop (telling the receiver) when it
    /// says so or `stop_after_bytes` are acknowledged.
    fn report(&mut self, now: Instant, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<(), TransferError> {
        let acked_bytes = self.sender.acked_bytes();
        let interrupted = self.opts.stop_after_bytes.is_some_and(|n| acked_bytes >= n && self.completed_at.is_none());
        if now >= self.next_tick || interrupted {
            self.next_tick = now + TICK;
            self.rec.cwnd(now, self.sender.cwnd_bytes());
            let p = Progress {
                file_bytes: self.file.file_bytes,
                resumed_bytes: self.resumed_bytes(),
                stream_bytes: self.map.stream_bytes(),
                acked_bytes,
                elapsed_s: now.duration_since(self.epoch).as_secs_f64(),
            };
            if interrupted || !progress(&p) {
                self.session.close(1, "interrupted by the sender")?;
                return Err(TransferError::Interrupted { acked_bytes });
            }
        }
        Ok(())
    }

    /// Wait for the earliest of the next tick, keepalive and the sender's timer (or, out of
    /// credit, sleep until the rate limit's next batch), then feed every frame that came to the
    /// sender at its arrival time.
    fn wait_for_feedback(&mut self, rate_limited: bool) -> Result<(), TransferError> {
        let epoch = self.epoch;
        let mut deadline = self.next_tick.min(self.session.last_sent + KEEPALIVE);
        let mut wait = Duration::ZERO;
        match self.limit.as_ref() {
            Some(l) if rate_limited => {
                // Whatever an ACK or a timer of the sender's would release needs credit, and
                // none comes before the next batch: sleep until it is due without waking for
                // each ACK (the wake-ups, not the packets, were what a limited transfer paid
                // for), then read every ACK that came meanwhile, at its arrival time.
                deadline = deadline.min(epoch + Duration::from_nanos(l.batch_due().as_nanos()));
                self.session.sock.flush().map_err(|e| self.session.io_error(e, "send"))?;
                std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            }
            _ => {
                if let Some(t) = self.sender.poll_timeout() {
                    deadline = deadline.min(epoch + Duration::from_nanos(t.as_nanos()));
                }
                wait = deadline.saturating_duration_since(Instant::now());
            }
        }
        let (sender, rec, done, sender_clock) = (&mut self.sender, &mut self.rec, &mut self.done, &mut self.sender_clock);
        self.session.receive(wait, |s, frame| {
            match frame {
                Frame::Ack(_) | Frame::UdtAck(_) | Frame::UdtNak { .. } => {
                    let arrived = SimTime(since(epoch, s.read_at).as_nanos().saturating_sub(s.arrival_age_ns));
                    *sender_clock = (*sender_clock).max(arrived);
                    if let Some(rtt) = sender.on_frame(*sender_clock, &frame) {
                        rec.rtt(rtt);
                    }
                }
                Frame::Done { status, message } => *done = Some((status, message.to_string())),
                Frame::Close { message, .. } => {
                    return Err(TransferError::PeerClosed { message: message.to_string() })
                }
                Frame::Reject { code, message } => {
                    return Err(TransferError::Rejected { code, message: message.to_string() })
                }
                _ => {}
            }
            Ok(())
        })
    }

    /// The record of a transfer the receiver verified, at `now`.
    fn record(self, now: Instant) -> TransferRecord {
        let end = self.completed_at.unwrap_or(now);
        let duration_s = end.duration_since(self.epoch).as_secs_f64().max(1e-9);
        let resumed_bytes = self.resumed_bytes();
        let stream_bytes = self.map.stream_bytes();
        let (rtt, cwnd_samples) = self.rec.finish();
        let st = self.sender.totals();
        let (sender_cpu_s, cpu_mhz) = self.cpu_at_completion;
        let goodput_bps = stream_bytes as f64 * 8.0 / duration_s;
        TransferRecord {
            name: self.file.name,
            peer: self.session.peer.to_string(),
            flavor: self.opts.flavor.clone(),
            recovery: self.recovery,
            file_bytes: self.file.file_bytes,
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
            sha256: hex(&self.file.digest),
            sender_cpu_s,
            cpu_mhz,
            cpu_percent: sender_cpu_s / duration_s * 100.0,
            mhz_per_mbps: mhz_per_mbps(sender_cpu_s, duration_s, cpu_mhz, goodput_bps),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
