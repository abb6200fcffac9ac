//! What the two receiving services (the file receiver, `file_recv`, and the scenario sink,
//! `scenario_sink`) share: their socket bound on a given address, the stateless front door that
//! answers before any connection exists (a foreign version's VERSION_MISMATCH, HELLO's RETRY,
//! the cookie and rate-limit checks of an offer, REJECT), the [`Counters`] of what they saw and
//! dropped, and the read loop that hands them datagrams.
//!
//! The defences live here once: a HELLO or a foreign-version reply costs a token of the
//! handshake rate limit and is no larger than what came (no amplification); an offer creates
//! state only with a cookie bound to its source address; everything that does not decode is
//! counted and dropped.

use std::io::ErrorKind;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

use ccarena_transport::Ecn;

use crate::batch::RecvBatch;
use crate::error::TransferError;
use crate::guard::{CookieJar, TokenBucket};
use crate::net::{Datagrams, Impaired, Impairment, Socket, MAX_READ_PER_WAKE};
use crate::wire::{self, decode, encode, kind_of, DecodeError, Frame, Header, RejectCode};

/// Counters of what the receiver dropped or did, for people and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams read.
    pub datagrams: u64,
    /// Datagrams that did not decode or were of a type a receiver does not take.
    pub malformed: u64,
    /// Datagrams of another wire version.
    pub foreign_version: u64,
    /// Packets for no known connection (spoofed, stale, or after the end).
    pub unknown_connection: u64,
    /// OFFERs with a wrong or expired cookie.
    pub bad_cookie: u64,
    /// Packets whose packet number was seen before or is too old.
    pub replayed: u64,
    /// HELLOs and OFFERs over the handshake rate.
    pub rate_limited: u64,
    /// OFFERs refused at the connection limit (of the table or of one source address).
    pub connection_limit: u64,
    /// Connections ended to make room: no new data for the stall timeout, or the one idle
    /// longest when the table was full, or the old connection a resume took over.
    pub evicted: u64,
    /// DATA dropped beyond the window, the stream, or the out-of-order range cap.
    pub out_of_bounds: u64,
    /// OFFERs refused (exists, bad name, I/O, too large, busy, bad offer).
    pub rejected_offers: u64,
    /// Transfers finished and verified.
    pub completed: u64,
    /// Transfers that ended otherwise.
    pub failed: u64,
}

impl Counters {
    /// Every counter with its field's name, in declaration order: what a datagram service's
    /// counters read (the last two, `completed` and `failed`, count file transfers).
    pub fn named(&self) -> [(&'static str, u64); 13] {
        [
            ("datagrams", self.datagrams),
            ("malformed", self.malformed),
            ("foreign_version", self.foreign_version),
            ("unknown_connection", self.unknown_connection),
            ("bad_cookie", self.bad_cookie),
            ("replayed", self.replayed),
            ("rate_limited", self.rate_limited),
            ("connection_limit", self.connection_limit),
            ("evicted", self.evicted),
            ("out_of_bounds", self.out_of_bounds),
            ("rejected_offers", self.rejected_offers),
            ("completed", self.completed),
            ("failed", self.failed),
        ]
    }
}

/// A receiving service's socket and its stateless front door.
pub(crate) struct ServiceSocket {
    pub(crate) sock: Box<dyn Datagrams>,
    jar: CookieJar,
    bucket: TokenBucket,
    pub(crate) counters: Counters,
    /// Where frames are encoded before they are sent.
    pub(crate) buf: Vec<u8>,
    /// How long before it was read the datagram being handled arrived (the kernel's time stamp;
    /// 0: unknown, or just now). UDT's receiver takes its arrival time from it.
    pub(crate) arrival_age_ns: u64,
    /// The IP ECN field the datagram being handled arrived with (Not-ECT when the socket does
    /// not report it). The transport's receiver feeds CE back from it.
    pub(crate) arrival_ecn: Ecn,
}

impl ServiceSocket {
    /// Bind `addr` (`HOST:PORT`), answering at most `handshakes_per_s` handshake packets per
    /// second in bursts of `handshake_burst`; `impairment` impairs what it sends (tests).
    ///
    /// # Errors
    /// [`TransferError::BadAddress`], [`TransferError::PortInUse`], [`TransferError::Bind`],
    /// [`TransferError::Io`] for the socket's set-up.
    pub(crate) fn bind(
        addr: &str,
        handshakes_per_s: f64,
        handshake_burst: f64,
        impairment: Option<Impairment>,
    ) -> Result<ServiceSocket, TransferError> {
        let bad = |reason: String| TransferError::BadAddress { addr: addr.to_string(), reason };
        let local = addr.to_socket_addrs().map_err(|e| bad(e.to_string()))?.next().ok_or_else(|| bad("resolves to no address".into()))?;
        let udp = UdpSocket::bind(local).map_err(|e| match e.kind() {
            ErrorKind::AddrInUse => TransferError::PortInUse { addr: local },
            _ => TransferError::Bind { addr: addr.to_string(), reason: e.to_string() },
        })?;
        let sock = Socket::new(udp).map_err(|e| TransferError::Io { context: "socket".into(), error: e })?;
        let sock: Box<dyn Datagrams> = match impairment {
            Some(imp) => Box::new(Impaired::new(sock, imp)),
            None => Box::new(sock),
        };
        Ok(ServiceSocket {
            sock,
            jar: CookieJar::new(),
            bucket: TokenBucket::new(handshakes_per_s, handshake_burst, Instant::now()),
            counters: Counters::default(),
            buf: Vec::with_capacity(wire::MAX_DATAGRAM_BYTES),
            arrival_age_ns: 0,
            arrival_ecn: Ecn::NotEct,
        })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.sock.local_addr().expect("a bound socket has an address")
    }

    /// The cookie a RETRY to `peer` for `conn_id` carries now.
    pub(crate) fn cookie_for(&self, peer: SocketAddr, conn_id: u64) -> [u8; wire::COOKIE_BYTES] {
        self.jar.issue(peer, conn_id, Instant::now())
    }

    /// A reply that creates no state (RETRY, REJECT, VERSION_MISMATCH).
    pub(crate) fn reply(&mut self, to: SocketAddr, conn_id: u64, frame: &Frame<'_>) {
        let h = Header { version: wire::VERSION, kind: kind_of(frame), conn_id, pn: 0 };
        encode(&h, frame, &mut self.buf);
        let _ = self.sock.send_to(&self.buf, to);
    }

    /// `data` from `from` decoded at `now`; `None` (counted) when it does not decode, after a
    /// rate-limited VERSION_MISMATCH to a foreign version.
    pub(crate) fn decode<'d>(&mut self, data: &'d [u8], from: SocketAddr, now: Instant) -> Option<(Header, Frame<'d>)> {
        match decode(data) {
            Ok(x) => Some(x),
            Err(DecodeError::UnknownVersion(_)) => {
                self.counters.foreign_version += 1;
                if self.bucket.allow(now) {
                    let conn_id = data.get(4..12).map_or(0, |b| u64::from_be_bytes(b.try_into().expect("8 bytes")));
                    self.reply(from, conn_id, &Frame::VersionMismatch { supported: vec![wire::VERSION] });
                }
                None
            }
            Err(_) => {
                self.counters.malformed += 1;
                None
            }
        }
    }

    /// A HELLO from `from` for `conn_id` at `now`: a RETRY with a cookie, within the rate limit.
    pub(crate) fn hello(&mut self, from: SocketAddr, conn_id: u64, now: Instant) {
        if !self.bucket.allow(now) {
            self.counters.rate_limited += 1;
            return;
        }
        let cookie = self.jar.issue(from, conn_id, now);
        self.reply(from, conn_id, &Frame::Retry { cookie });
    }

    /// An offer from `from` for `conn_id` with `cookie` at `now` may be considered: its cookie
    /// is valid and the rate limit has a token (else counted: `bad_cookie`, `rate_limited`).
    pub(crate) fn admit_offer(&mut self, from: SocketAddr, conn_id: u64, cookie: &[u8; wire::COOKIE_BYTES], now: Instant) -> bool {
        if !self.jar.verify(from, conn_id, cookie, now) {
            self.counters.bad_cookie += 1;
            return false;
        }
        if !self.bucket.allow(now) {
            self.counters.rate_limited += 1;
            return false;
        }
        true
    }

    /// Refuse an offer: REJECT with `code` and `message` (counted: `rejected_offers`).
    pub(crate) fn refuse(&mut self, to: SocketAddr, conn_id: u64, code: RejectCode, message: &str) {
        self.counters.rejected_offers += 1;
        self.reply(to, conn_id, &Frame::Reject { code, message });
    }

    /// Refuse the other service's offer (a stream at a file receiver, a file at a sink) with
    /// `message`, once its cookie shows the source is real (the REJECT is then no reflection)
    /// and within the rate limit.
    pub(crate) fn refuse_other_service(&mut self, from: SocketAddr, conn_id: u64, cookie: &[u8; wire::COOKIE_BYTES], now: Instant, message: &str) {
        if !self.jar.verify(from, conn_id, cookie, now) {
            self.counters.bad_cookie += 1;
        } else if self.bucket.allow(now) {
            self.refuse(from, conn_id, RejectCode::BadOffer, message);
        } else {
            self.counters.rate_limited += 1;
        }
    }
}

/// A receiving service that reads through a [`ServiceSocket`].
pub(crate) trait Service {
    /// The service's socket.
    fn socket(&mut self) -> &mut ServiceSocket;
}

/// Wait up to `timeout` for datagrams, then read up to [`MAX_READ_PER_WAKE`] of them with
/// `batch`, handing each to `on` (the service, the datagram, its source) with its arrival age in
/// [`ServiceSocket::arrival_age_ns`] and its IP ECN field in [`ServiceSocket::arrival_ecn`]
/// meanwhile. An ICMP error for an earlier send is skipped.
///
/// # Errors
/// [`TransferError::Io`]: the socket's wait or read failed.
pub(crate) fn read_datagrams<S: Service>(
    svc: &mut S,
    batch: &mut RecvBatch,
    timeout: Duration,
    mut on: impl FnMut(&mut S, &[u8], SocketAddr),
) -> Result<(), TransferError> {
    svc.socket().sock.wait(timeout).map_err(|e| TransferError::Io { context: "wait".into(), error: e })?;
    let mut read = 0;
    while read < MAX_READ_PER_WAKE {
        match svc.socket().sock.recv_batch(batch) {
            Ok(0) => break,
            Ok(_) => {}
            // An ICMP error for an earlier send: nothing to read, go on.
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionRefused | ErrorKind::ConnectionReset) => {
                read += 1;
                continue;
            }
            Err(e) => return Err(TransferError::Io { context: "receive".into(), error: e }),
        }
        for d in batch.iter() {
            read += 1;
            let port = svc.socket();
            port.counters.datagrams += 1;
            port.arrival_age_ns = d.arrival_age_ns.unwrap_or(0);
            port.arrival_ecn = d.ecn;
            on(svc, d.data, d.from);
            let port = svc.socket();
            port.arrival_age_ns = 0;
            port.arrival_ecn = Ecn::NotEct;
        }
    }
    Ok(())
}
