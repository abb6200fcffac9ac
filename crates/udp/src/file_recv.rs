//! The file transfer's receiving service (`ccarena recv`): one UDP socket with the stateless
//! handshake (`service`), a bounded table of connections ([`Conn`], `file_recv_conn`), and the
//! loop that feeds them datagrams and timer ticks.
//!
//! What a hostile network can make it do is bounded: a HELLO costs one token of a handshake rate
//! limit and a RETRY smaller than the HELLO (no amplification); no state exists before an OFFER
//! carries a cookie bound to its source address; at most `max_connections` connections, each of
//! bounded memory (see `file_recv_conn`); everything that does not decode, belongs to no
//! connection, or repeats a packet number is dropped and counted in [`Counters`].
//!
//! A slot is held by moving data, not by being there: a connection with no new payload for
//! `stall_timeout` is evicted (keepalives do not count), and when the table is full a new sender
//! with a valid cookie evicts the connection that has moved no data for longest (the oldest of
//! those that never moved any, else one idle at least [`EVICT_GRACE`]). One source address holds
//! at most `max_connections_per_source` connections and `max_partials_per_source` partial files;
//! partial files together declare at most `max_partial_bytes` (their full sizes: they are
//! sparse but may fill). A partial file its connection created and wrote nothing into is removed
//! when the connection goes away. Nothing is evicted for an offer that is then refused.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ccarena_cc::SimTime;
use ccarena_transport::{EcnMode, Receiver as TransportReceiver, ReceiverConfig};

use crate::error::TransferError;
use crate::file_recv_conn::{Conn, Outcome, ReceivedRecord};
use crate::net::Impairment;
use crate::rx::Rx;
use crate::service::{read_datagrams, Counters, Service, ServiceSocket};
use crate::store::{check_dir, existing_partials, partial_names, Placement};
use crate::udt::UDT_FLAVOR;
use crate::wire::{self, Frame, Header, Offer, RejectCode};

/// How often the service's callback runs.
const TICK: Duration = Duration::from_millis(100);
/// A connection that moved data this recently is not evicted to make room for a new one.
pub const EVICT_GRACE: Duration = Duration::from_secs(2);

/// Limits and behaviour of a [`Receiver`].
#[derive(Clone, Debug)]
pub struct ReceiverOptions {
    /// Overwrite existing files.
    pub force: bool,
    /// Most simultaneous connections.
    pub max_connections: usize,
    /// Receive buffer per connection, bytes: the window advertised; DATA beyond it is dropped.
    pub rcvbuf_bytes: u64,
    /// Largest file accepted, bytes.
    pub max_file_bytes: u64,
    /// Handshake packets (HELLO, OFFER) answered per second, all sources together.
    pub handshakes_per_s: f64,
    /// Burst of handshake packets answered at once.
    pub handshake_burst: f64,
    /// A connection silent this long is dropped (what arrived is kept for a resume).
    pub idle_timeout: Duration,
    /// A connection that delivered no new payload this long is evicted even if it keeps
    /// pinging (what arrived is kept for a resume).
    pub stall_timeout: Duration,
    /// Most simultaneous connections from one source address (any port).
    pub max_connections_per_source: usize,
    /// Most partial files one source address has on disk (counted from this service's start).
    pub max_partials_per_source: usize,
    /// Most partial files on disk.
    pub max_partial_files: usize,
    /// Most bytes the partial files on disk declare together (each counts its full size).
    pub max_partial_bytes: u64,
    /// Impair what this end sends (tests on loopback).
    pub impairment: Option<Impairment>,
}

impl Default for ReceiverOptions {
    fn default() -> ReceiverOptions {
        ReceiverOptions {
            force: false,
            max_connections: 64,
            rcvbuf_bytes: 16 << 20,
            max_file_bytes: 1 << 40,
            handshakes_per_s: 200.0,
            handshake_burst: 50.0,
            idle_timeout: Duration::from_secs(10),
            stall_timeout: Duration::from_secs(60),
            max_connections_per_source: 8,
            max_partials_per_source: 16,
            max_partial_files: 1024,
            max_partial_bytes: 2 << 40,
            impairment: None,
        }
    }
}

/// What the service reports to its caller.
#[derive(Debug)]
pub enum Event<'a> {
    /// A transfer was accepted.
    Started {
        /// File name.
        name: &'a str,
        /// Sender.
        peer: SocketAddr,
        /// File size, bytes.
        file_bytes: u64,
        /// Bytes already held (resume).
        resumed_bytes: u64,
    },
    /// A transfer finished and verified.
    Finished(&'a ReceivedRecord),
    /// A transfer ended otherwise.
    Failed {
        /// File name.
        name: &'a str,
        /// Sender.
        peer: SocketAddr,
        /// Why.
        reason: &'a str,
    },
    /// About every 100 ms.
    Tick,
}

/// A bound receiving service.
pub struct Receiver {
    port: ServiceSocket,
    dir: PathBuf,
    opts: ReceiverOptions,
    conns: HashMap<(SocketAddr, u64), Conn>,
    /// The partial files on disk: path → (source address that made it, `None` for one found at
    /// start; declared bytes).
    parts: HashMap<PathBuf, (Option<IpAddr>, u64)>,
}

impl Service for Receiver {
    fn socket(&mut self) -> &mut ServiceSocket {
        &mut self.port
    }
}

impl Receiver {
    /// Bind `addr` (`HOST:PORT`) and serve files into `dir`.
    ///
    /// # Errors
    /// [`TransferError::BadAddress`], [`TransferError::PortInUse`], [`TransferError::Bind`],
    /// [`TransferError::BadDir`] (missing, not a directory, not writable).
    pub fn bind(addr: &str, dir: &Path, opts: ReceiverOptions) -> Result<Receiver, TransferError> {
        let dir = check_dir(dir).map_err(|reason| TransferError::BadDir { dir: dir.to_path_buf(), reason })?;
        let port = ServiceSocket::bind(addr, opts.handshakes_per_s, opts.handshake_burst, opts.impairment)?;
        let found = existing_partials(&dir).map_err(|e| TransferError::BadDir { dir: dir.clone(), reason: e.to_string() })?;
        let parts = found.into_iter().map(|(p, n)| (p, (None, n))).collect();
        Ok(Receiver { port, dir, parts, opts, conns: HashMap::new() })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.port.local_addr()
    }

    /// The directory files go into (canonical).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.port.counters
    }

    /// The cookie a RETRY to `peer` for `conn_id` carries now (for tests and the fuzz target
    /// over the receiver's state machine, which must get past the handshake).
    pub fn cookie_for(&self, peer: SocketAddr, conn_id: u64) -> [u8; wire::COOKIE_BYTES] {
        self.port.cookie_for(peer, conn_id)
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Connections open now from source address `ip` (any port).
    pub fn connections_from(&self, ip: IpAddr) -> usize {
        self.conns.keys().filter(|(a, _)| a.ip() == ip).count()
    }

    /// Partial files this service counts on disk, and the bytes they declare.
    pub fn partials(&self) -> (usize, u64) {
        (self.parts.len(), self.parts.values().map(|&(_, n)| n).sum())
    }

    /// Forget connections that are closed: remove the partial file of one that wrote nothing
    /// into a file it created, and drop from the count partial files no longer on disk.
    fn sweep(&mut self) {
        let closed: Vec<_> = self.conns.iter().filter(|(_, c)| c.closed()).map(|(k, _)| *k).collect();
        for k in closed {
            if let Some(c) = self.conns.remove(&k) {
                self.forget(&c);
            }
        }
    }

    fn forget(&mut self, c: &Conn) {
        if c.discard_if_empty() || std::fs::symlink_metadata(c.part_path()).is_err() {
            self.parts.remove(c.part_path());
        }
    }

    /// End and forget connection `key` to make room (`why`: the reason given to its peer).
    fn evict(&mut self, key: (SocketAddr, u64), why: &str, out: &mut Vec<(String, SocketAddr, Outcome)>) {
        let Some(mut c) = self.conns.remove(&key) else { return };
        self.port.counters.evicted += 1;
        if let Some(o) = c.evict(&mut *self.port.sock, &mut self.port.counters, why) {
            out.push((c.name.clone(), c.peer, o));
        }
        self.forget(&c);
    }

    /// The connection to end for a new one when the table is full: a finished one (lingering to
    /// repeat DONE) first; else the oldest of those that never wrote a byte (a sender's first
    /// DATA follows its ACCEPT within a round trip, so churning handshakes cannot keep fresh
    /// empty connections ahead of it for long); else the one whose last new data is oldest, if
    /// at least [`EVICT_GRACE`] ago. `None`: every connection is moving data.
    fn victim(&self, now: Instant) -> Option<(SocketAddr, u64)> {
        if let Some((k, _)) = self.conns.iter().find(|(_, c)| !c.receiving()) {
            return Some(*k);
        }
        if let Some((k, _)) = self.conns.iter().filter(|(_, c)| !c.wrote_any()).min_by_key(|(_, c)| c.last_progress()) {
            return Some(*k);
        }
        let (k, c) = self.conns.iter().min_by_key(|(_, c)| c.last_progress())?;
        (now.saturating_duration_since(c.last_progress()) >= EVICT_GRACE).then_some(*k)
    }

    /// Serve until `on_event` returns `false` (checked at least every 100 ms) or, with `once`,
    /// until the first transfer has ended and its connection closed. Stopping saves every
    /// partial transfer's sidecar.
    ///
    /// # Errors
    /// An I/O error of the socket.
    pub fn serve(&mut self, once: bool, on_event: &mut dyn FnMut(&Event<'_>) -> bool) -> Result<(), TransferError> {
        crate::net::fine_timers();
        let mut next_tick = Instant::now();
        let mut ended_one = false;
        let mut rbatch = self.port.sock.new_recv_batch();
        loop {
            let now = Instant::now();
            let mut outcomes = Vec::new();
            let (sock, counters) = (&mut *self.port.sock, &mut self.port.counters);
            for c in self.conns.values_mut() {
                if let Some(o) = c.on_timers(sock, counters, now, self.opts.idle_timeout) {
                    outcomes.push((c.name.clone(), c.peer, o));
                } else if c.receiving() && now.saturating_duration_since(c.last_progress()) >= self.opts.stall_timeout {
                    // Eviction by age: pings alone do not keep a connection.
                    counters.evicted += 1;
                    let why = format!("no data for {:.0} s", self.opts.stall_timeout.as_secs_f64());
                    if let Some(o) = c.evict(sock, counters, &why) {
                        outcomes.push((c.name.clone(), c.peer, o));
                    }
                }
            }
            ended_one |= !outcomes.is_empty();
            if !report(&outcomes, on_event) {
                self.shutdown();
                return Ok(());
            }
            self.sweep();
            if once && ended_one && self.conns.is_empty() {
                return Ok(());
            }
            if now >= next_tick {
                next_tick = now + TICK;
                if !on_event(&Event::Tick) {
                    self.shutdown();
                    return Ok(());
                }
            }
            let deadline = self.conns.values().map(Conn::next_deadline).fold(next_tick, Instant::min);
            let mut outcomes = Vec::new();
            let timeout = deadline.saturating_duration_since(Instant::now());
            read_datagrams(self, &mut rbatch, timeout, |rx, data, from| rx.on_datagram(data, from, &mut outcomes))?;
            ended_one |= outcomes.iter().any(|(_, _, o)| !matches!(o, Outcome::Started { .. }));
            if !report(&outcomes, on_event) {
                self.shutdown();
                return Ok(());
            }
        }
    }

    fn shutdown(&mut self) {
        for c in self.conns.values_mut() {
            c.shutdown(&mut *self.port.sock);
        }
        self.sweep();
    }

    /// Handle one datagram from `from`, pushing onto `out` the transfers it started or ended.
    pub fn on_datagram(&mut self, data: &[u8], from: SocketAddr, out: &mut Vec<(String, SocketAddr, Outcome)>) {
        if let Some(o) = self.dispatch(data, from, out) {
            out.push(o);
        }
    }

    fn dispatch(&mut self, data: &[u8], from: SocketAddr, out: &mut Vec<(String, SocketAddr, Outcome)>) -> Option<(String, SocketAddr, Outcome)> {
        let now = Instant::now();
        let (h, frame) = self.port.decode(data, from, now)?;
        let key = (from, h.conn_id);
        match frame {
            Frame::Hello => {
                self.port.hello(from, h.conn_id, now);
                None
            }
            Frame::Offer(offer) => self.on_offer(from, h, &offer, now, out),
            Frame::StreamOffer { cookie, .. } => {
                // A scenario's stream sent to a file receiver.
                self.port.refuse_other_service(from, h.conn_id, &cookie, now, "this receiver takes files, not streams");
                None
            }
            Frame::Data { .. } | Frame::UdtData { .. } | Frame::UdtAck2 { .. } | Frame::Ping | Frame::Close { .. } => {
                let Some(c) = self.conns.get_mut(&key) else {
                    self.port.counters.unknown_connection += 1;
                    return None;
                };
                if !c.fresh(h.pn) {
                    self.port.counters.replayed += 1;
                    return None;
                }
                let age = self.port.arrival_age_ns;
                let (sock, counters) = (&mut *self.port.sock, &mut self.port.counters);
                let o = match frame {
                    Frame::Data { offset, ts_val_ns, flags, payload } => {
                        c.on_data(sock, counters, now, offset, ts_val_ns, flags, payload)?
                    }
                    Frame::UdtData { seq, offset, timestamp_ns, flags, payload } => {
                        c.on_udt_data(sock, counters, now, age, seq, offset, timestamp_ns, flags, payload)?
                    }
                    Frame::UdtAck2 { ack_seq } => {
                        c.on_udt_ack2(sock, counters, now, ack_seq);
                        return None;
                    }
                    Frame::Close { message, .. } => c.on_close(counters, now, message)?,
                    _ => {
                        c.on_ping(sock, now);
                        return None;
                    }
                };
                Some((c.name.clone(), from, o))
            }
            // Server-to-client packets sent to a server.
            _ => {
                self.port.counters.malformed += 1;
                None
            }
        }
    }

    fn on_offer(
        &mut self,
        from: SocketAddr,
        h: Header,
        offer: &Offer<'_>,
        now: Instant,
        out: &mut Vec<(String, SocketAddr, Outcome)>,
    ) -> Option<(String, SocketAddr, Outcome)> {
        let key = (from, h.conn_id);
        if let Some(c) = self.conns.get_mut(&key) {
            // The ACCEPT was lost: say it again.
            if c.receiving() && c.fresh(h.pn) {
                c.send_accept(&mut *self.port.sock);
            }
            return None;
        }
        if !self.port.admit_offer(from, h.conn_id, &offer.cookie, now) {
            return None;
        }
        // Connections closed by earlier packets of this batch go first: one that wrote nothing
        // removes its partial file, which must not be the one this offer is about to open.
        self.sweep();
        let refuse = |this: &mut Receiver, code: RejectCode, message: &str| {
            this.port.refuse(from, h.conn_id, code, message);
            None
        };
        // A resume from the same address of the same file takes the old connection's place (its
        // sender was killed or restarted); from elsewhere, or of another file, it is refused.
        let ip = from.ip();
        let same_name = self.conns.iter().find(|(_, c)| c.name == offer.name && c.receiving()).map(|(k, c)| (*k, c));
        let takeover = match same_name {
            Some((old, c)) if old.0.ip() == ip && c.is_file(offer.name, offer.file_bytes, &offer.sha256) => Some(old),
            Some(_) => return refuse(self, RejectCode::Busy, "this file is being received from another sender"),
            None => None,
        };
        let per_source = self.connections_from(ip) - usize::from(takeover.is_some());
        if per_source >= self.opts.max_connections_per_source {
            self.port.counters.connection_limit += 1;
            let m = format!("this address has {per_source} connections open, the receiver's limit per address");
            return refuse(self, RejectCode::Busy, &m);
        }
        let udt = offer.flavor == UDT_FLAVOR;
        let max_mss = if udt { wire::MAX_UDT_PAYLOAD_BYTES } else { wire::MAX_PAYLOAD_BYTES };
        if !(64..=max_mss as u16).contains(&offer.mss_bytes) {
            return refuse(self, RejectCode::BadOffer, "MSS out of range");
        }
        if offer.file_bytes > self.opts.max_file_bytes {
            let m = format!("file of {} bytes is over the receiver's limit of {}", offer.file_bytes, self.opts.max_file_bytes);
            return refuse(self, RejectCode::TooLarge, &m);
        }
        if let Err((code, m)) = self.room_for_partial(ip, offer.name, offer.file_bytes) {
            return refuse(self, code, &m);
        }
        let victim = match takeover {
            Some(_) => None,
            None if self.conns.len() >= self.opts.max_connections => match self.victim(now) {
                Some(k) => Some(k),
                None => {
                    self.port.counters.connection_limit += 1;
                    return refuse(self, RejectCode::Busy, "the receiver is at its connection limit");
                }
            },
            None => None,
        };
        // The old connection saves its sidecar before the partial file is opened again.
        if let Some(old) = takeover {
            self.evict(old, "taken over by a resume from the same address", out);
        }
        let (place, file, held) = match Placement::open(&self.dir, offer.name, offer.file_bytes, offer.sha256, self.opts.force) {
            Ok(x) => x,
            Err((code, message)) => return refuse(self, code, &message),
        };
        if let Some(k) = victim {
            self.evict(k, "evicted for a new sender: no data moved for longest", out);
        }
        let rcfg = ReceiverConfig {
            mss_bytes: offer.mss_bytes as u32,
            delayed_ack: ccarena_cc::Duration::from_millis(40),
            ack_every_segments: 2,
            ecn: EcnMode::Off,
            rcvbuf_bytes: Some(self.opts.rcvbuf_bytes),
            dsack: false,
        };
        let rx = if udt { Rx::udt(SimTime::ZERO) } else { Rx::Tcp(Box::new(TransportReceiver::new(rcfg))) };
        let resumed = held.len_bytes();
        self.parts.insert(place.part_path.clone(), (Some(ip), offer.file_bytes));
        let mut c = Conn::new(from, h.conn_id, h.pn, offer.name.to_string(), place, file, held, rx, self.opts.rcvbuf_bytes, self.opts.force, now);
        c.send_accept(&mut *self.port.sock);
        out.push((offer.name.to_string(), from, Outcome::Started { file_bytes: offer.file_bytes, resumed_bytes: resumed }));
        let done = c.maybe_finish(&mut *self.port.sock, &mut self.port.counters, now);
        let name = c.name.clone();
        self.conns.insert(key, c);
        done.map(|o| (name, from, o))
    }
}

impl Receiver {
    /// Whether a partial file for `name` of `file_bytes` from `ip` fits the caps on partial
    /// files (one already there for this name is replaced, so its bytes do not count twice).
    ///
    /// # Errors
    /// The refusal: `TooLarge` over the byte cap, `Busy` over a count.
    fn room_for_partial(&self, ip: IpAddr, name: &str, file_bytes: u64) -> Result<(), (RejectCode, String)> {
        let path = self.dir.join(partial_names(name).0);
        let here = self.parts.get(&path).copied();
        let total: u64 = self.parts.values().map(|&(_, n)| n).sum::<u64>() - here.map_or(0, |(_, n)| n);
        let cap = self.opts.max_partial_bytes;
        if total.saturating_add(file_bytes) > cap {
            let m = format!("partial files on disk would declare {} bytes, over the receiver's cap of {cap}", total.saturating_add(file_bytes));
            return Err((RejectCode::TooLarge, m));
        }
        if here.is_none() && self.parts.len() >= self.opts.max_partial_files {
            return Err((RejectCode::Busy, format!("the receiver holds {} partial files, its limit", self.parts.len())));
        }
        if here.is_none_or(|(src, _)| src != Some(ip)) {
            let mine = self.parts.values().filter(|(src, _)| *src == Some(ip)).count();
            if mine >= self.opts.max_partials_per_source {
                return Err((RejectCode::Busy, format!("this address has {mine} partial files here, the receiver's limit per address")));
            }
        }
        Ok(())
    }
}

/// Hand transfers' ends to the caller; false when it asked to stop.
fn report(outcomes: &[(String, SocketAddr, Outcome)], on_event: &mut dyn FnMut(&Event<'_>) -> bool) -> bool {
    let mut go_on = true;
    for (name, peer, o) in outcomes {
        go_on &= match o {
            Outcome::Finished(r) => on_event(&Event::Finished(r)),
            Outcome::Failed(reason) => on_event(&Event::Failed { name, peer: *peer, reason }),
            Outcome::Started { file_bytes, resumed_bytes } => {
                on_event(&Event::Started { name, peer: *peer, file_bytes: *file_bytes, resumed_bytes: *resumed_bytes })
            }
        };
    }
    go_on
}
