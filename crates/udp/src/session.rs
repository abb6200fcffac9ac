//! The connection as a sender sees it (a file transfer's or a scenario flow's): the socket
//! connected to the peer ([`connect`]), the stateless-cookie handshake (HELLO → RETRY → OFFER or
//! STREAM_OFFER → ACCEPT, [`handshake`]), and the [`Session`] that numbers, sends, receives
//! (replay window, version checks) and closes its packets. What a driver does between them —
//! the transport's loop — is the driver's (`file_send`, `scenario_send`).

use std::hash::{BuildHasher, RandomState};
use std::io::ErrorKind;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

use ccarena_transport::Ecn;

use crate::batch::RecvBatch;
use crate::error::TransferError;
use crate::guard::ReplayWindow;
use crate::net::{Datagrams, Socket, MAX_READ_PER_WAKE};
use crate::wire::{self, decode, kind_of, DecodeError, Frame, Header};

/// Copies of a CLOSE a sender sends. Nothing acknowledges a CLOSE, and a lost one leaves the
/// peer holding the connection until its idle timeout — meanwhile it refuses to resume the same
/// file ("being received from another sender"); three copies leave 10⁻³ of that at 10 % loss.
pub(crate) const CLOSE_COPIES: usize = 3;
/// Longest the handshake sleeps before it resends or asks its caller whether to go on.
const HANDSHAKE_WAKE_EVERY: Duration = Duration::from_millis(100);

/// The connection as the sender sees it: socket, peer, ids and counters.
pub(crate) struct Session {
    pub(crate) sock: Box<dyn Datagrams>,
    pub(crate) peer: SocketAddr,
    pub(crate) conn_id: u64,
    pub(crate) pn_out: u64,
    pub(crate) replay: ReplayWindow,
    pub(crate) buf: Vec<u8>,
    pub(crate) last_sent: Instant,
    pub(crate) last_heard: Instant,
    /// How long before it was read the frame being handed to [`Session::receive`]'s callback
    /// arrived (the kernel's receive stamp), ns; 0 when unknown.
    pub(crate) arrival_age_ns: u64,
    /// When the datagrams being handed to [`Session::receive`]'s callback were read (one clock
    /// read a batch: the reference of `arrival_age_ns`, so a frame's arrival is
    /// `read_at − arrival_age_ns` however long the frames before it took).
    pub(crate) read_at: Instant,
    rbatch: RecvBatch,
}

impl Session {
    /// A session with `peer` over `sock` with a fresh random connection id.
    pub(crate) fn new(sock: Box<dyn Datagrams>, peer: SocketAddr) -> Session {
        let now = Instant::now();
        Session {
            peer,
            conn_id: RandomState::new().hash_one((now, std::process::id())),
            pn_out: 0,
            replay: ReplayWindow::default(),
            buf: Vec::with_capacity(wire::MAX_DATAGRAM_BYTES),
            last_sent: now,
            last_heard: now,
            arrival_age_ns: 0,
            read_at: now,
            rbatch: sock.new_recv_batch(),
            sock,
        }
    }

    /// Send `frame` to the peer, Not-ECT, with the next packet number.
    ///
    /// # Errors
    /// The socket's error, as [`Session::io_error`] names it.
    pub(crate) fn send(&mut self, frame: &Frame<'_>) -> Result<(), TransferError> {
        self.send_with_ecn(frame, Ecn::NotEct)
    }

    /// As [`Session::send`], the datagram's IP header carrying `ecn` (RFC 3168 §5).
    ///
    /// # Errors
    /// As [`Session::send`].
    pub(crate) fn send_with_ecn(&mut self, frame: &Frame<'_>, ecn: Ecn) -> Result<(), TransferError> {
        self.send_at(frame, ecn, Instant::now())
    }

    /// As [`Session::send_with_ecn`] at `now`, a clock reading the caller took (a driver sending
    /// a batch reads the clock once for all of it).
    ///
    /// # Errors
    /// As [`Session::send`].
    pub(crate) fn send_at(&mut self, frame: &Frame<'_>, ecn: Ecn, now: Instant) -> Result<(), TransferError> {
        let h = Header { version: wire::VERSION, kind: kind_of(frame), conn_id: self.conn_id, pn: self.pn_out };
        self.pn_out += 1;
        self.last_sent = now;
        self.sock.send_frame(&h, frame, self.peer, ecn, &mut self.buf).map_err(|e| self.io_error(e, "send"))
    }

    /// Tell the peer the connection ends (CLOSE with `code`: 0 a normal end, else an abort, and
    /// `message` for people), in [`CLOSE_COPIES`] copies.
    ///
    /// # Errors
    /// As [`Session::send`].
    pub(crate) fn close(&mut self, code: u8, message: &str) -> Result<(), TransferError> {
        for _ in 0..CLOSE_COPIES {
            self.send(&Frame::Close { code, message })?;
        }
        Ok(())
    }

    /// `e`, from `what` (send, wait, receive) to the peer, as the transfer's error: a refusal
    /// (ICMP port unreachable) as [`TransferError::Refused`], else [`TransferError::Io`].
    pub(crate) fn io_error(&self, e: std::io::Error, what: &str) -> TransferError {
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
        mut on: impl FnMut(&mut Session, Frame<'_>) -> Result<(), TransferError>,
    ) -> Result<(), TransferError> {
        if !timeout.is_zero() {
            self.sock.wait(timeout).map_err(|e| self.io_error(e, "wait"))?;
        }
        // The batch is taken out of the session for the frames (which borrow it) to meet `on`
        // (which takes the session), and put back whatever happens.
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
        on: &mut impl FnMut(&mut Session, Frame<'_>) -> Result<(), TransferError>,
    ) -> Result<(), TransferError> {
        let mut read = 0;
        while read < MAX_READ_PER_WAKE {
            let messages = self.sock.recv_batch(batch).map_err(|e| self.io_error(e, "receive"))?;
            if messages == 0 {
                break;
            }
            self.read_at = Instant::now();
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
                self.last_heard = self.read_at;
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
    /// The offer's round trip (sent → ACCEPT received), when the offer went out once: an
    /// answer to a resent offer cannot say which copy it answers (Karn's rule, RFC 6298 §3).
    pub(crate) rtt: Option<Duration>,
}

/// HELLO until RETRY, then OFFER until ACCEPT; resent with backoff until `handshake_timeout`.
///
/// `offer` builds the offer (OFFER or STREAM_OFFER) around the cookie; `keep_going` is asked at
/// every wake-up (false: [`TransferError::Interrupted`]).
pub(crate) fn handshake<'o>(
    session: &mut Session,
    offer: &dyn Fn([u8; wire::COOKIE_BYTES]) -> Frame<'o>,
    timeout: Duration,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Accepted, TransferError> {
    let start = Instant::now();
    let mut cookie: Option<[u8; wire::COOKIE_BYTES]> = None;
    let mut accepted: Option<Accepted> = None;
    let mut gap = Duration::from_millis(200);
    let mut next_send = start;
    // When the offer was first sent and how often: its round trip is the handshake's RTT sample.
    let (mut offered_at, mut offers) = (start, 0u32);
    loop {
        let now = Instant::now();
        if now >= next_send {
            match cookie {
                None => session.send(&Frame::Hello)?,
                Some(c) => {
                    session.send(&offer(c))?;
                    offered_at = now;
                    offers += 1;
                }
            }
            next_send = now + gap;
            gap = (gap * 2).min(Duration::from_secs(1));
        }
        if now.duration_since(start) >= timeout {
            return Err(TransferError::NoAnswer { addr: session.peer, secs: timeout.as_secs_f64() });
        }
        if !keep_going() {
            return Err(TransferError::Interrupted { acked_bytes: 0 });
        }
        let wait = next_send.saturating_duration_since(now).min(HANDSHAKE_WAKE_EVERY);
        let mut got_cookie = false;
        session.receive(wait, |_, frame| {
            match frame {
                Frame::Retry { cookie: c } if cookie.is_none() => {
                    cookie = Some(c);
                    got_cookie = true;
                }
                Frame::Accept { stream_bytes, rwnd_bytes, held } => {
                    let rtt = (offers == 1).then(|| offered_at.elapsed());
                    accepted = Some(Accepted { stream_bytes, rwnd_bytes, held, rtt })
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
        let mut session = Session::new(Box::new(Recorded(std::sync::Arc::clone(&sent))), "127.0.0.1:2".parse().unwrap());
        session.close(1, "interrupted by the sender").unwrap();
        let sent = sent.lock().unwrap();
        assert_eq!(sent.len(), 3, "three copies: at 10 % loss one in 1,000 closes is lost");
        let mut replay = ReplayWindow::default();
        for d in sent.iter() {
            let (h, frame) = decode(d).unwrap();
            assert!(matches!(frame, Frame::Close { code: 1, message: "interrupted by the sender" }));
            assert!(replay.accept(h.pn), "each copy has a packet number of its own");
        }
    }
}
