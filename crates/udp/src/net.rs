//! Datagram I/O: a non-blocking UDP socket that sends and reads in batches ([`crate::batch`])
//! with a sub-millisecond wait (`ppoll`), and an
//! impairment wrapper that drops, duplicates and reorders what it sends (seeded) for tests of
//! the transport on a lossy path over loopback.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use ccarena_transport::Ecn;

use crate::batch::{self, RecvBatch, SendQueue};
use crate::wire;

/// Socket buffer size asked for (SO_SNDBUF/SO_RCVBUF), bytes; the kernel caps it at
/// `net.core.{w,r}mem_max`. A large receive buffer keeps a burst of a fast sender from being
/// dropped in the receiver's socket before the driver reads it.
pub const SOCKET_BUFFER_BYTES: usize = 8 << 20;

/// Ask for 1 µs timer slack on this thread (Linux's default is 50 µs): a paced sender sleeps
/// between packets, and at hundreds of Mbit/s the gap is a few µs; the transport's pacer does
/// not make up time lost to a late wake-up.
pub fn fine_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong);
    }
}

/// What the drivers need of a datagram socket.
///
/// Sends may be queued: they go out, in order, at the latest at the next [`Datagrams::flush`],
/// [`Datagrams::wait`] or [`Datagrams::recv_batch`] (so a sender's loop that hands over all the
/// pacer releases at once and then waits sends them with one system call).
pub trait Datagrams: Send {
    /// Send (or queue) one datagram to `to`. A full socket buffer drops the datagram (as a
    /// queue would).
    ///
    /// # Errors
    /// The socket's error (for a connected socket, `ConnectionRefused` after an ICMP port
    /// unreachable), possibly for a datagram queued earlier.
    fn send_to(&mut self, buf: &[u8], to: SocketAddr) -> io::Result<()>;

    /// As [`Datagrams::send_to`], the datagram leaving with `ecn` in its IP header's ECN field
    /// (RFC 3168 §5). A socket that cannot set it sends it as the socket's default (Not-ECT).
    ///
    /// # Errors
    /// As [`Datagrams::send_to`].
    fn send_to_with_ecn(&mut self, buf: &[u8], to: SocketAddr, ecn: Ecn) -> io::Result<()> {
        let _ = ecn;
        self.send_to(buf, to)
    }

    /// Send everything queued.
    ///
    /// # Errors
    /// As [`Datagrams::send_to`].
    fn flush(&mut self) -> io::Result<()>;

    /// Encode `frame` under `header` and send (or queue) it to `to` with `ecn`, as
    /// [`Datagrams::send_to_with_ecn`]; `scratch` is the caller's buffer to encode into (a socket
    /// that queues may encode straight into its queue instead).
    ///
    /// # Errors
    /// As [`Datagrams::send_to`].
    fn send_frame(
        &mut self,
        header: &wire::Header,
        frame: &wire::Frame<'_>,
        to: SocketAddr,
        ecn: Ecn,
        scratch: &mut Vec<u8>,
    ) -> io::Result<()> {
        wire::encode(header, frame, scratch);
        self.send_to_with_ecn(scratch, to, ecn)
    }

    /// Flush, then read what is waiting into `batch` (cleared first); returns the messages
    /// read (0: nothing waiting). Iterate with [`RecvBatch::iter`].
    ///
    /// # Errors
    /// The socket's error.
    fn recv_batch(&mut self, batch: &mut RecvBatch) -> io::Result<usize>;

    /// A receive batch sized for this socket (its slots hold a GRO buffer when GRO is on).
    fn new_recv_batch(&self) -> RecvBatch {
        RecvBatch::new(batch::MAX_MESSAGES, wire::MAX_DATAGRAM_BYTES + 1)
    }

    /// Flush, then block until a datagram is waiting or `timeout` has passed.
    ///
    /// # Errors
    /// The poll's error (not EINTR, which returns early), or a flush's.
    fn wait(&mut self, timeout: Duration) -> io::Result<()>;

    /// The bound address.
    ///
    /// # Errors
    /// The socket's error.
    fn local_addr(&self) -> io::Result<SocketAddr>;
}

/// Most datagrams a driver or a service reads before it looks at its timers again.
pub const MAX_READ_PER_WAKE: usize = 4096;

/// Datagrams queued before a [`Socket`] flushes on its own: about one `sendmmsg` call's worth,
/// so memory stays small whatever a caller queues.
pub const MAX_QUEUED_DATAGRAMS: usize = batch::MAX_MESSAGES;

/// A non-blocking UDP socket that sends and receives in batches ([`crate::batch`]): `sendmmsg`
/// with UDP GSO while the kernel takes it, `recvmmsg` with UDP GRO where the kernel offers it,
/// kernel receive time stamps and the IP ECN field on every datagram.
#[derive(Debug)]
pub struct Socket {
    sock: UdpSocket,
    queue: SendQueue,
    /// GSO is still in use (false once the kernel refused it).
    gso: bool,
    /// GRO is on (the kernel took `UDP_GRO`).
    gro: bool,
    /// The peer the socket is connected to: datagrams to it are sent on the socket's cached
    /// route ([`batch::send_queue_connected`]).
    connected: Option<SocketAddr>,
    /// Datagrams dropped because the send buffer was full.
    pub send_drops: u64,
    /// `sendmmsg` calls made and datagrams they sent (how well sends batch).
    pub send_calls: u64,
    /// Datagrams sent.
    pub sent_datagrams: u64,
}

fn set_buffer(sock: &UdpSocket, opt: libc::c_int, bytes: usize) {
    // Failure only leaves the default size.
    batch::set_int_option(sock.as_raw_fd(), libc::SOL_SOCKET, opt, bytes as libc::c_int);
}

fn poll_fd(fd: libc::c_int, events: libc::c_short, timeout: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd { fd, events, revents: 0 };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
    let n = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(n > 0)
}

impl Socket {
    /// Wrap `sock`, making it non-blocking, asking for large buffers, receive time stamps
    /// (`SO_TIMESTAMPNS`), each datagram's ECN field (`IP_RECVTOS`/`IPV6_RECVTCLASS`) and GRO
    /// (`UDP_GRO`, where the kernel has it).
    ///
    /// # Errors
    /// `set_nonblocking`'s error.
    pub fn new(sock: UdpSocket) -> io::Result<Socket> {
        Socket::with_offloads(sock, true, true)
    }

    /// As [`Socket::new`], choosing whether to try GSO and GRO (false: one datagram per
    /// message and per receive slot; for tests and measurements of the plain path).
    ///
    /// # Errors
    /// `set_nonblocking`'s error.
    pub fn with_offloads(sock: UdpSocket, gso: bool, gro: bool) -> io::Result<Socket> {
        sock.set_nonblocking(true)?;
        set_buffer(&sock, libc::SO_SNDBUF, SOCKET_BUFFER_BYTES);
        set_buffer(&sock, libc::SO_RCVBUF, SOCKET_BUFFER_BYTES);
        let fd = sock.as_raw_fd();
        // Stamps come as control messages of every datagram read (a packet that arrived
        // before stamping was on reads as arriving when read).
        batch::set_int_option(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1);
        // Refused only by a kernel without it: every datagram then reads Not-ECT.
        batch::enable_ecn_receipt(fd, sock.local_addr().is_ok_and(|a| a.is_ipv6()));
        let gro = gro && batch::set_int_option(fd, libc::SOL_UDP, libc::UDP_GRO, 1);
        // Connected before it was wrapped (session::connect), or never (a service's socket).
        let connected = sock.peer_addr().ok();
        Ok(Socket { sock, queue: SendQueue::default(), gso, gro, connected, send_drops: 0, send_calls: 0, sent_datagrams: 0 })
    }

    /// Send what is queued once the queue holds [`MAX_QUEUED_DATAGRAMS`].
    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.queue.len() >= MAX_QUEUED_DATAGRAMS {
            self.flush()?;
        }
        Ok(())
    }

    /// GSO is in use (the kernel has not refused it yet).
    pub fn gso(&self) -> bool {
        self.gso
    }

    /// GRO is on.
    pub fn gro(&self) -> bool {
        self.gro
    }
}

impl Datagrams for Socket {
    fn send_to(&mut self, buf: &[u8], to: SocketAddr) -> io::Result<()> {
        self.send_to_with_ecn(buf, to, Ecn::NotEct)
    }

    fn send_to_with_ecn(&mut self, buf: &[u8], to: SocketAddr, ecn: Ecn) -> io::Result<()> {
        self.queue.push_with_ecn(buf, to, ecn);
        self.flush_if_full()
    }

    fn send_frame(
        &mut self,
        header: &wire::Header,
        frame: &wire::Frame<'_>,
        to: SocketAddr,
        ecn: Ecn,
        _scratch: &mut Vec<u8>,
    ) -> io::Result<()> {
        // Encoded where sendmmsg will read it: one copy of the payload fewer per packet.
        self.queue.push_written(to, ecn, |buf| wire::encode_append(header, frame, buf));
        self.flush_if_full()
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.queue.is_empty() {
            return Ok(());
        }
        let r = batch::send_queue_connected(self.sock.as_raw_fd(), &self.queue, &mut self.gso, self.connected);
        self.queue.clear();
        let r = r?;
        self.send_drops += r.dropped as u64;
        self.send_calls += r.calls as u64;
        self.sent_datagrams += r.sent as u64;
        Ok(())
    }

    fn recv_batch(&mut self, batch: &mut RecvBatch) -> io::Result<usize> {
        self.flush()?;
        batch::recv_batch(self.sock.as_raw_fd(), batch)
    }

    fn new_recv_batch(&self) -> RecvBatch {
        if self.gro {
            RecvBatch::new(16, batch::GRO_SLOT_BYTES)
        } else {
            RecvBatch::new(batch::MAX_MESSAGES, wire::MAX_DATAGRAM_BYTES + 1)
        }
    }

    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        self.flush()?;
        poll_fd(self.sock.as_raw_fd(), libc::POLLIN, timeout).map(|_| ())
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }
}

impl Drop for Socket {
    /// What is still queued (a last CLOSE) goes out.
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// How an [`Impaired`] socket mangles what it sends: each datagram is dropped with probability
/// `loss`, else held back and sent after the next one with probability `reorder`, and sent twice
/// with probability `duplicate`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Impairment {
    /// Drop probability, 0 to 1.
    pub loss: f64,
    /// Duplication probability, 0 to 1.
    pub duplicate: f64,
    /// Reordering probability, 0 to 1.
    pub reorder: f64,
    /// RNG seed (SplitMix64).
    pub seed: u64,
}

/// A socket whose sends are impaired per [`Impairment`] (for tests and experiments on loopback).
#[derive(Debug)]
pub struct Impaired<D> {
    inner: D,
    cfg: Impairment,
    rng: u64,
    held: Option<(Vec<u8>, SocketAddr, Ecn)>,
    /// Datagrams dropped, duplicated and reordered so far.
    pub counts: [u64; 3],
}

impl<D: Datagrams> Impaired<D> {
    /// Wrap `inner`.
    pub fn new(inner: D, cfg: Impairment) -> Impaired<D> {
        Impaired { inner, cfg, rng: cfg.seed, held: None, counts: [0; 3] }
    }

    /// Uniform in [0, 1) (SplitMix64, Steele et al. 2014).
    fn draw(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl<D: Datagrams> Datagrams for Impaired<D> {
    fn send_to(&mut self, buf: &[u8], to: SocketAddr) -> io::Result<()> {
        self.send_to_with_ecn(buf, to, Ecn::NotEct)
    }

    fn send_to_with_ecn(&mut self, buf: &[u8], to: SocketAddr, ecn: Ecn) -> io::Result<()> {
        if self.draw() < self.cfg.loss {
            self.counts[0] += 1;
            return Ok(());
        }
        if self.held.is_none() && self.draw() < self.cfg.reorder {
            self.counts[2] += 1;
            self.held = Some((buf.to_vec(), to, ecn));
            return Ok(());
        }
        self.inner.send_to_with_ecn(buf, to, ecn)?;
        if self.draw() < self.cfg.duplicate {
            self.counts[1] += 1;
            self.inner.send_to_with_ecn(buf, to, ecn)?;
        }
        if let Some((b, t, e)) = self.held.take() {
            self.inner.send_to_with_ecn(&b, t, e)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    fn recv_batch(&mut self, batch: &mut RecvBatch) -> io::Result<usize> {
        self.inner.recv_batch(batch)
    }

    fn new_recv_batch(&self) -> RecvBatch {
        self.inner.new_recv_batch()
    }

    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        // Nothing more to send for now: a held datagram goes out late rather than never.
        if let Some((b, t, e)) = self.held.take() {
            self.inner.send_to_with_ecn(&b, t, e)?;
        }
        self.inner.wait(timeout)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_read_late_reports_when_it_arrived() {
        let mut rx = Socket::new(UdpSocket::bind("127.0.0.1:0").unwrap()).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        // The kernel turns packet time stamping on a moment after a socket first asks for it
        // (a deferred static-key switch); a packet arriving before is stamped when read.
        std::thread::sleep(Duration::from_millis(100));
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        rx.wait(Duration::from_secs(1)).unwrap();
        // Read 30 ms after it arrived: the kernel's stamp says so, the reader's clock would not.
        std::thread::sleep(Duration::from_millis(30));
        let mut batch = rx.new_recv_batch();
        assert_eq!(rx.recv_batch(&mut batch).unwrap(), 1);
        let d = batch.iter().next().expect("the datagram");
        assert_eq!(d.data, b"x");
        let age = d.arrival_age_ns.expect("a kernel receive stamp");
        assert!((30_000_000..1_000_000_000).contains(&age), "age {age} ns");
    }

    #[test]
    fn queued_sends_leave_in_order_in_few_calls_at_the_wait_and_at_drop() {
        let mut rx = Socket::new(UdpSocket::bind("127.0.0.1:0").unwrap()).unwrap();
        let to = rx.local_addr().unwrap();
        let mut tx = Socket::new(UdpSocket::bind("127.0.0.1:0").unwrap()).unwrap();
        let datagram = |i: u32| {
            let mut d = vec![0u8; 1400];
            d[..4].copy_from_slice(&i.to_be_bytes());
            d
        };
        // 150 datagrams: more than the queue holds (it flushes itself at 64), the rest at the
        // wait; the last two after the wait, sent when the socket is dropped.
        for i in 0..148 {
            tx.send_to(&datagram(i), to).unwrap();
        }
        tx.wait(Duration::ZERO).unwrap();
        assert_eq!(tx.sent_datagrams, 148);
        assert!(tx.send_calls <= 6, "{} calls for 148 datagrams", tx.send_calls);
        tx.send_to(&datagram(148), to).unwrap();
        tx.send_to(&datagram(149), to).unwrap();
        drop(tx);
        let mut batch = rx.new_recv_batch();
        let mut got = Vec::new();
        while got.len() < 150 {
            rx.wait(Duration::from_secs(1)).unwrap();
            if rx.recv_batch(&mut batch).unwrap() == 0 {
                break;
            }
            got.extend(batch.iter().map(|d| u32::from_be_bytes(d.data[..4].try_into().unwrap())));
        }
        assert_eq!(got, (0..150).collect::<Vec<_>>());
    }
}
