//! One incoming file transfer on the file receiver (`file_recv`): the transport's receiver (TCP-like, or UDT's for a
//! transfer offered with flavor `udt`) driven by arriving DATA (UDT_DATA)
//! and its delayed-ACK timer, the payload written to the partial file at the file
//! offsets the stream maps to, the sidecar kept current for a resume, and the end: SHA-256,
//! the file moved into place, DONE.
//!
//! Memory is bounded whatever the sender does: DATA beyond the advertised window (the receive
//! buffer cap) or that would open more than [`MAX_OOO_RANGES`] out-of-order ranges is dropped,
//! so the transport's reassembly list stays small; payload is held only until a run of
//! in-order bytes is written with one `pwrite` (at most [`WRITE_BEHIND_BYTES`], and always
//! before the sidecar claims it or the file is hashed).

use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use ccarena_cc::SimTime;
use ccarena_transport::udt::Ack2Packet;
use ccarena_transport::Ecn;

use crate::clock::KEEPALIVE;
use crate::guard::ReplayWindow;
use crate::net::Datagrams;
use crate::ranges::{RangeSet, StreamMap};
use crate::rx::{data_segment, udt_data_packet, Rx, MAX_OOO_RANGES};
use crate::service::Counters;
use crate::sha256::{hex, Sha256};
use crate::store::Placement;
use crate::udt::FLOW_WINDOW_PACKETS;
use crate::wire::{self, encode, kind_of, DoneStatus, Frame, Header};

/// Most byte ranges a UDT connection tracks (a hole after every packet of the flow window, and
/// then some; 16 bytes each).
pub const MAX_UDT_RANGES: usize = 2 * FLOW_WINDOW_PACKETS as usize;
/// How long a finished connection stays to answer a sender that missed DONE.
pub const LINGER: Duration = Duration::from_secs(2);
/// How often the sidecar is rewritten while receiving.
pub const SIDECAR_EVERY: Duration = Duration::from_secs(1);

/// What a finished incoming transfer did.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceivedRecord {
    /// The file name.
    pub name: String,
    /// The sender.
    pub peer: String,
    /// Where the file is.
    pub path: String,
    /// File size, bytes.
    pub file_bytes: u64,
    /// Bytes held from an earlier, interrupted transfer.
    pub resumed_bytes: u64,
    /// Bytes this transfer delivered.
    pub stream_bytes: u64,
    /// From ACCEPT to the last byte, seconds.
    pub duration_s: f64,
    /// `stream_bytes · 8 / duration_s`, bits per second.
    pub goodput_bps: f64,
    /// Payload bytes that arrived twice.
    pub duplicate_bytes: u64,
    /// DATA that arrived above a hole.
    pub out_of_order_segments: u64,
    /// SHA-256, hex (verified).
    pub sha256: String,
}

/// How a connection ended, for the service's events.
#[derive(Debug)]
pub enum Outcome {
    /// Accepted.
    Started {
        /// File size, bytes.
        file_bytes: u64,
        /// Bytes already held (resume).
        resumed_bytes: u64,
    },
    /// Verified and in place.
    Finished(ReceivedRecord),
    /// Not finished: why (what arrived is kept for a resume unless the hash failed).
    Failed(String),
}

/// Where the connection is.
#[derive(Debug, PartialEq)]
enum Phase {
    Receiving,
    /// DONE sent at `at`; answered again to any packet until [`LINGER`] has passed.
    Finished { status: DoneStatus, message: String, at: Instant },
    /// To be removed.
    Closed,
}

/// One incoming transfer.
#[derive(Debug)]
pub struct Conn {
    /// The sender's address.
    pub peer: SocketAddr,
    /// The connection id it chose.
    pub conn_id: u64,
    /// The file name.
    pub name: String,
    replay: ReplayWindow,
    pn_out: u64,
    place: Placement,
    file: File,
    held_before: RangeSet,
    map: StreamMap,
    rx: Rx,
    /// UDT: the stream ranges written (UDT's receiver tracks packets, not bytes); bounded by
    /// [`MAX_UDT_RANGES`].
    udt_got: RangeSet,
    rcvbuf_bytes: u64,
    force: bool,
    epoch: Instant,
    last_heard: Instant,
    last_sent: Instant,
    last_sidecar: Instant,
    /// When the last new payload bytes arrived (or the connection was made): what the service
    /// evicts by, so keepalives alone do not hold a slot.
    last_progress: Instant,
    /// Some payload was written to the partial file by this connection.
    wrote_any: bool,
    phase: Phase,
    buf: Vec<u8>,
    /// Payload not yet written: contiguous bytes for file offset `pending_at` (written in one
    /// `pwrite` when the next piece is not contiguous, it reaches [`WRITE_BEHIND_BYTES`], or
    /// before anything reads the file or claims it holds them).
    pending: Vec<u8>,
    pending_at: u64,
    /// A write failed: the file lacks bytes the transport took, so no sidecar may claim them.
    write_failed: bool,
}

/// Most payload bytes a connection holds before writing them.
pub const WRITE_BEHIND_BYTES: usize = 1 << 20;

impl Conn {
    /// A connection accepted at `now` for `place` (partial `file` holding `held_before`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        peer: SocketAddr,
        conn_id: u64,
        offer_pn: u64,
        name: String,
        place: Placement,
        file: File,
        held_before: RangeSet,
        rx: Rx,
        rcvbuf_bytes: u64,
        force: bool,
        now: Instant,
    ) -> Conn {
        let map = StreamMap::new(&held_before.complement(place.file_bytes));
        let mut replay = ReplayWindow::default();
        replay.accept(offer_pn);
        Conn {
            peer,
            conn_id,
            name,
            replay,
            pn_out: 0,
            place,
            file,
            held_before,
            map,
            rx,
            udt_got: RangeSet::new(),
            rcvbuf_bytes,
            force,
            epoch: now,
            last_heard: now,
            last_sent: now,
            last_sidecar: now,
            last_progress: now,
            wrote_any: false,
            phase: Phase::Receiving,
            buf: Vec::with_capacity(wire::MAX_DATAGRAM_BYTES),
            pending: Vec::new(),
            pending_at: 0,
            write_failed: false,
        }
    }

    /// True while bytes are still arriving.
    pub fn receiving(&self) -> bool {
        self.phase == Phase::Receiving
    }

    /// True when the service should forget this connection.
    pub fn closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// When new payload last arrived (the connection's start if none did).
    pub fn last_progress(&self) -> Instant {
        self.last_progress
    }

    /// This connection has written payload into its partial file.
    pub fn wrote_any(&self) -> bool {
        self.wrote_any
    }

    /// The offered file's size, bytes.
    pub fn file_bytes(&self) -> u64 {
        self.place.file_bytes
    }

    /// The partial file's path.
    pub fn part_path(&self) -> &std::path::Path {
        &self.place.part_path
    }

    /// True when this is a transfer of `name` of `file_bytes` with this `sha256`.
    pub fn is_file(&self, name: &str, file_bytes: u64, sha256: &[u8; 32]) -> bool {
        self.name == name && self.place.file_bytes == file_bytes && &self.place.sha256 == sha256
    }

    /// Remove the partial file and its sidecar when this connection created the file and wrote
    /// nothing into it: a peer that offered and vanished leaves nothing behind. True when removed.
    pub fn discard_if_empty(&self) -> bool {
        // (A zero-byte file is complete with nothing written: it was moved into place.)
        let empty = self.place.created && !self.wrote_any && self.held_before.len_bytes() == 0 && !self.stream_complete();
        if empty && self.phase != Phase::Receiving {
            self.place.discard();
        }
        empty && self.phase != Phase::Receiving
    }

    /// End a receiving connection to make room (`why` goes to the peer in a CLOSE and to the
    /// caller): the sidecar is saved, as for an idle timeout.
    pub fn evict(&mut self, sock: &mut dyn Datagrams, counters: &mut Counters, why: &str) -> Option<Outcome> {
        if self.receiving() {
            Some(self.fail(sock, counters, why.to_string()))
        } else {
            self.phase = Phase::Closed;
            None
        }
    }

    /// Accept `pn` into the anti-replay window (false: a replay, drop the packet).
    pub fn fresh(&mut self, pn: u64) -> bool {
        self.replay.accept(pn)
    }

    fn send(&mut self, sock: &mut dyn Datagrams, frame: &Frame<'_>) {
        let h = Header { version: wire::VERSION, kind: kind_of(frame), conn_id: self.conn_id, pn: self.pn_out };
        self.pn_out += 1;
        encode(&h, frame, &mut self.buf);
        self.last_sent = Instant::now();
        // A send error (a vanished route) is the sender's problem to notice: it retransmits.
        let _ = sock.send_to(&self.buf, self.peer);
    }

    /// Send ACCEPT (again, for a repeated OFFER whose ACCEPT was lost).
    pub fn send_accept(&mut self, sock: &mut dyn Datagrams) {
        let held = self.held_before.ranges().to_vec();
        let frame = Frame::Accept { stream_bytes: self.map.stream_bytes(), rwnd_bytes: self.rcvbuf_bytes, held };
        self.send(sock, &frame);
    }

    fn sim(&self, now: Instant) -> SimTime {
        SimTime(now.saturating_duration_since(self.epoch).as_nanos() as u64)
    }

    /// Send the receiver's feedback (ACKs; UDT's ACKs and NAKs).
    fn flush_acks(&mut self, sock: &mut dyn Datagrams, t: SimTime) {
        while let Some(frame) = self.rx.poll_frame(t) {
            self.send(sock, &frame);
        }
    }

    /// The stream ranges the partial file holds from this connection.
    fn stream_held(&self) -> Vec<(u64, u64)> {
        match &self.rx {
            Rx::Tcp(rx) => std::iter::once((0, rx.rcv_nxt())).chain(rx.out_of_order_ranges()).collect(),
            Rx::Udt(_) => self.udt_got.ranges().to_vec(),
            // A file transfer never runs QUIC (`file_recv` builds TCP-like or UDT receivers).
            Rx::Quic(_) => Vec::new(),
        }
    }

    /// Every stream byte is in.
    fn stream_complete(&self) -> bool {
        let total = self.map.stream_bytes();
        match &self.rx {
            Rx::Tcp(rx) => rx.rcv_nxt() >= total,
            Rx::Udt(_) => total == 0 || self.udt_got.ranges().first().is_some_and(|&(s, e)| s == 0 && e >= total),
            Rx::Quic(_) => false,
        }
    }

    /// Everything the partial file holds now: what was held before, and the stream's in-order
    /// prefix and out-of-order ranges mapped back to file offsets.
    pub fn held_now(&self) -> RangeSet {
        let mut set = self.held_before.clone();
        let mut add = |s: u64, e: u64| {
            for (off, len) in self.map.file_pieces(s, e - s) {
                set.insert(off, off + len);
            }
        };
        for (s, e) in self.stream_held() {
            add(s, e);
        }
        set
    }

    /// Queue `data` for file offset `off`, writing what was pending first unless `data`
    /// continues it (one `pwrite` per run of in-order payload instead of one per packet).
    fn write_behind(&mut self, data: &[u8], off: u64) -> io::Result<()> {
        let continues = !self.pending.is_empty() && self.pending_at + self.pending.len() as u64 == off;
        if !continues || self.pending.len() + data.len() > WRITE_BEHIND_BYTES {
            self.flush_writes()?;
            self.pending_at = off;
        }
        self.pending.extend_from_slice(data);
        Ok(())
    }

    /// Write what is pending.
    fn flush_writes(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let r = self.file.write_all_at(&self.pending, self.pending_at);
        self.pending.clear();
        self.write_failed |= r.is_err();
        r
    }

    /// Write the sidecar — only after the bytes it claims are in the file.
    fn save_sidecar(&mut self, now: Instant) {
        self.last_sidecar = now;
        if self.flush_writes().is_ok() && !self.write_failed {
            let _ = self.place.write_sidecar(&self.held_now());
        }
    }

    /// A DATA packet arrived at `now`. Returns the outcome when this packet ended the transfer.
    #[allow(clippy::too_many_arguments)]
    pub fn on_data(
        &mut self,
        sock: &mut dyn Datagrams,
        counters: &mut Counters,
        now: Instant,
        offset: u64,
        ts_val_ns: u64,
        flags: u8,
        payload: &[u8],
    ) -> Option<Outcome> {
        if !self.heard(sock, now) {
            return None;
        }
        let Rx::Tcp(rx) = &self.rx else {
            counters.out_of_bounds += 1; // DATA on a UDT connection
            return None;
        };
        let len = payload.len() as u64;
        let end = offset + len; // decode checked it does not overflow
        let rcv_nxt = rx.rcv_nxt();
        let beyond_stream = end > self.map.stream_bytes();
        let beyond_window = end > rcv_nxt.saturating_add(self.rcvbuf_bytes);
        let too_scattered = offset > rcv_nxt && rx.out_of_order_ranges().count() >= MAX_OOO_RANGES;
        if beyond_stream || beyond_window || too_scattered {
            counters.out_of_bounds += 1;
            return None;
        }
        if end > rcv_nxt {
            // Progress only for bytes not held yet: resending one segment does not hold a slot.
            let from = offset.max(rcv_nxt);
            if !rx.out_of_order_ranges().any(|(s, e)| s <= from && end <= e) {
                self.last_progress = now;
            }
            if let Err(e) = self.write_stream(offset, payload) {
                return Some(self.fail(sock, counters, format!("writing {}: {e}", self.name)));
            }
        }
        // A file transfer runs without ECN: its sender sends Not-ECT, which no queue marks.
        let seg = data_segment(offset, len as u32, ts_val_ns, flags, Ecn::NotEct);
        let t = self.sim(now);
        if let Rx::Tcp(rx) = &mut self.rx {
            let _ = rx.on_segment(t, &seg);
        }
        self.flush_acks(sock, t);
        self.maybe_finish(sock, counters, now)
    }

    /// A data packet arrived at `now`: true while receiving; a finished connection answers DONE.
    fn heard(&mut self, sock: &mut dyn Datagrams, now: Instant) -> bool {
        self.last_heard = now;
        if !self.receiving() {
            self.answer_finished(sock);
        }
        self.receiving()
    }

    /// Write stream bytes `payload` at stream `offset` to their file offsets.
    fn write_stream(&mut self, offset: u64, payload: &[u8]) -> io::Result<()> {
        self.wrote_any = true;
        let mut at = 0usize;
        let pieces: Vec<(u64, u64)> = self.map.file_pieces(offset, payload.len() as u64).collect();
        for (off, n) in pieces {
            self.write_behind(&payload[at..at + n as usize], off)?;
            at += n as usize;
        }
        Ok(())
    }

    /// A UDT_DATA packet arrived at `now` (`arrival_age_ns` before it was read: UDT's receiver
    /// takes its arrival time). Returns the outcome when this packet ended the transfer.
    ///
    /// Dropped (`out_of_bounds`): on a TCP-like connection, beyond the stream,
    /// [`FLOW_WINDOW_PACKETS`] or more ahead of the first missing packet, or new bytes when the
    /// connection already tracks [`MAX_UDT_RANGES`] ranges.
    #[allow(clippy::too_many_arguments)]
    pub fn on_udt_data(
        &mut self,
        sock: &mut dyn Datagrams,
        counters: &mut Counters,
        now: Instant,
        arrival_age_ns: u64,
        seq: u64,
        offset: u64,
        timestamp_ns: u64,
        flags: u8,
        payload: &[u8],
    ) -> Option<Outcome> {
        if !self.heard(sock, now) {
            return None;
        }
        let Rx::Udt(rx) = &self.rx else {
            counters.out_of_bounds += 1; // UDT_DATA on a TCP-like connection
            return None;
        };
        let end = offset + payload.len() as u64; // decode checked it does not overflow
        let beyond_stream = end > self.map.stream_bytes();
        let beyond_window = seq >= rx.rcv_nxt().saturating_add(FLOW_WINDOW_PACKETS as u64);
        let held = self.udt_got.ranges();
        // The first range ending at or after `offset`: the bytes are old if it covers them.
        let i = held.partition_point(|&(_, e)| e < offset);
        let covered = held.get(i).is_some_and(|&(s, e)| s <= offset && end <= e);
        let too_scattered = !covered && held.len() >= MAX_UDT_RANGES;
        if beyond_stream || beyond_window || too_scattered {
            counters.out_of_bounds += 1;
            return None;
        }
        if !covered {
            self.last_progress = now;
            if let Err(e) = self.write_stream(offset, payload) {
                return Some(self.fail(sock, counters, format!("writing {}: {e}", self.name)));
            }
            self.udt_got.insert(offset, end);
        }
        let t = self.sim(now);
        let pkt = udt_data_packet(seq, offset, timestamp_ns, flags, payload.len());
        if let Rx::Udt(rx) = &mut self.rx {
            // When it arrived, not when it was read (the kernel's stamp, batch::Datagram).
            let _ = rx.on_data(SimTime(t.as_nanos().saturating_sub(arrival_age_ns)), &pkt);
        }
        self.flush_acks(sock, t);
        self.maybe_finish(sock, counters, now)
    }

    /// A UDT_ACK2 arrived at `now` (UDT's receiver measures the RTT from it); on a finished
    /// connection it is answered with DONE.
    pub fn on_udt_ack2(&mut self, sock: &mut dyn Datagrams, counters: &mut Counters, now: Instant, ack_seq: u64) {
        self.last_heard = now;
        let t = self.sim(now);
        let receiving = self.receiving();
        match &mut self.rx {
            Rx::Udt(rx) if receiving => {
                let _ = rx.on_ack2(t, &Ack2Packet { ack_seq });
                self.flush_acks(sock, t);
            }
            Rx::Udt(_) => self.answer_finished(sock),
            Rx::Tcp(_) | Rx::Quic(_) => counters.out_of_bounds += 1,
        }
    }

    /// End the transfer if every stream byte is in: hash, move into place, DONE.
    pub fn maybe_finish(&mut self, sock: &mut dyn Datagrams, counters: &mut Counters, now: Instant) -> Option<Outcome> {
        if !self.receiving() || !self.stream_complete() {
            return None;
        }
        // Acknowledge the last bytes at once rather than after the delayed-ACK timer, which a
        // finished connection no longer runs: the sender's RTT and completion time see them.
        let t = self.sim(now);
        self.rx.ack_now(t);
        self.flush_acks(sock, t);
        // Out now, not at the socket's next wait: hashing the file comes first and takes
        // 0.05-0.2 s per 50 MB, which the sender counted into its transfer time (its goodput
        // fell short of a --limit-rate cap by as much). A send error is the sender's to notice,
        // as in `send`.
        let _ = sock.flush();
        if let Err(e) = self.flush_writes() {
            return Some(self.fail(sock, counters, format!("writing {}: {e}", self.name)));
        }
        let (status, message, outcome) = match self.verify() {
            Ok(true) => match self.place.finish(self.force) {
                Ok(()) => {
                    counters.completed += 1;
                    (DoneStatus::Ok, String::new(), Outcome::Finished(self.record(now)))
                }
                Err(e) => {
                    counters.failed += 1;
                    let m = format!("cannot move {} into place: {e}", self.name);
                    (DoneStatus::Io, m.clone(), Outcome::Failed(m))
                }
            },
            Ok(false) => {
                counters.failed += 1;
                self.place.discard();
                let m = format!("SHA-256 of the received {} differs from the sender's; partial file removed", self.name);
                (DoneStatus::HashMismatch, m.clone(), Outcome::Failed(m))
            }
            Err(e) => {
                counters.failed += 1;
                let m = format!("reading back {}: {e}", self.name);
                (DoneStatus::Io, m.clone(), Outcome::Failed(m))
            }
        };
        self.phase = Phase::Finished { status, message, at: now };
        self.answer_finished(sock);
        Some(outcome)
    }

    fn verify(&self) -> io::Result<bool> {
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut off = 0u64;
        while off < self.place.file_bytes {
            let n = (self.place.file_bytes - off).min(buf.len() as u64) as usize;
            self.file.read_exact_at(&mut buf[..n], off)?;
            h.update(&buf[..n]);
            off += n as u64;
        }
        Ok(h.finish() == self.place.sha256)
    }

    fn record(&self, now: Instant) -> ReceivedRecord {
        let duration_s = now.saturating_duration_since(self.epoch).as_secs_f64().max(1e-9);
        let (duplicate_bytes, out_of_order_segments) = self.rx.disorder();
        let stream_bytes = self.map.stream_bytes();
        ReceivedRecord {
            name: self.name.clone(),
            peer: self.peer.to_string(),
            path: self.place.final_path.display().to_string(),
            file_bytes: self.place.file_bytes,
            resumed_bytes: self.place.file_bytes - stream_bytes,
            stream_bytes,
            duration_s,
            goodput_bps: stream_bytes as f64 * 8.0 / duration_s,
            duplicate_bytes,
            out_of_order_segments,
            sha256: hex(&self.place.sha256),
        }
    }

    /// Answer a packet on a finished connection with its DONE.
    fn answer_finished(&mut self, sock: &mut dyn Datagrams) {
        if let Phase::Finished { status, message, .. } = &self.phase {
            let (status, message) = (*status, message.clone());
            self.send(sock, &Frame::Done { status, message: &message });
        }
    }

    fn fail(&mut self, sock: &mut dyn Datagrams, counters: &mut Counters, why: String) -> Outcome {
        counters.failed += 1;
        self.send(sock, &Frame::Close { code: 2, message: &why });
        if self.receiving() {
            self.save_sidecar(Instant::now());
        }
        self.phase = Phase::Closed;
        Outcome::Failed(why)
    }

    /// A PING arrived: a finished connection answers with DONE.
    pub fn on_ping(&mut self, sock: &mut dyn Datagrams, now: Instant) {
        self.last_heard = now;
        self.answer_finished(sock);
    }

    /// The sender closed. Returns the outcome if the transfer had not finished (what arrived is
    /// kept for a resume).
    pub fn on_close(&mut self, counters: &mut Counters, now: Instant, message: &str) -> Option<Outcome> {
        let receiving = self.receiving();
        if receiving {
            self.save_sidecar(now);
            counters.failed += 1;
        }
        self.phase = Phase::Closed;
        receiving.then(|| Outcome::Failed(format!("the sender stopped: {message}")))
    }

    /// Timers at `now`: delayed ACK, keepalive, sidecar, idle timeout, linger. Returns the
    /// outcome when the connection timed out.
    pub fn on_timers(&mut self, sock: &mut dyn Datagrams, counters: &mut Counters, now: Instant, idle: Duration) -> Option<Outcome> {
        match self.phase {
            Phase::Receiving => {
                let t = self.sim(now);
                self.rx.handle_timeout(t);
                self.flush_acks(sock, t);
                if now.duration_since(self.last_heard) >= idle {
                    let secs = idle.as_secs_f64();
                    return Some(self.fail(sock, counters, format!("the sender went silent for {secs:.0} s")));
                }
                if now.duration_since(self.last_sidecar) >= SIDECAR_EVERY {
                    self.save_sidecar(now);
                }
                if now.duration_since(self.last_sent) >= KEEPALIVE {
                    self.send(sock, &Frame::Ping);
                }
            }
            Phase::Finished { at, .. } => {
                if now.duration_since(at) >= LINGER {
                    self.phase = Phase::Closed;
                }
            }
            Phase::Closed => {}
        }
        None
    }

    /// The next time [`Conn::on_timers`] has something to do.
    pub fn next_deadline(&self) -> Instant {
        match self.phase {
            Phase::Receiving => {
                let mut d = (self.last_sent + KEEPALIVE).min(self.last_sidecar + SIDECAR_EVERY);
                if let Some(t) = self.rx.poll_timeout() {
                    d = d.min(self.epoch + Duration::from_nanos(t.as_nanos()));
                }
                d
            }
            Phase::Finished { at, .. } => at + LINGER,
            Phase::Closed => Instant::now(),
        }
    }

    /// Save what arrived (the service is stopping).
    pub fn shutdown(&mut self, sock: &mut dyn Datagrams) {
        if self.receiving() {
            self.save_sidecar(Instant::now());
            self.send(sock, &Frame::Close { code: 3, message: "the receiver is shutting down" });
        }
        self.phase = Phase::Closed;
    }
}
