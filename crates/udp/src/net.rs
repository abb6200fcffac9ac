//! Datagram I/O: a non-blocking UDP socket with a sub-millisecond wait (`ppoll`), and an
//! impairment wrapper that drops, duplicates and reorders what it sends (seeded) for tests of
//! the transport on a lossy path over loopback.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

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
pub trait Datagrams: Send {
    /// Send one datagram to `to`. A full socket buffer drops the datagram (as a queue would).
    ///
    /// # Errors
    /// The socket's error (for a connected socket, `ConnectionRefused` after an ICMP port
    /// unreachable).
    fn send_to(&mut self, buf: &[u8], to: SocketAddr) -> io::Result<()>;

    /// One datagram if one is waiting (`Ok(None)` if none).
    ///
    /// # Errors
    /// The socket's error.
    fn recv_from(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>>;

    /// Block until a datagram is waiting or `timeout` has passed.
    ///
    /// # Errors
    /// The poll's error (not EINTR, which returns early).
    fn wait(&mut self, timeout: Duration) -> io::Result<()>;

    /// The bound address.
    ///
    /// # Errors
    /// The socket's error.
    fn local_addr(&self) -> io::Result<SocketAddr>;

    /// How long ago the datagram last returned by [`Datagrams::recv_from`] arrived, ns, from the
    /// kernel's receive time stamp; `None` when the socket has none (the caller's clock is then
    /// the arrival time). A receiver that wakes late reads a burst of queued datagrams at once:
    /// its own clock would see them arrive together, which UDT's arrival-speed and packet-pair
    /// estimates must not (draft-gg-udt-03 §6.2).
    fn last_arrival_age_ns(&self) -> Option<u64> {
        None
    }
}

/// `SIOCGSTAMPNS` (linux/sockios.h): the receive time stamp of the last packet read from a
/// socket, as a `timespec` on CLOCK_REALTIME.
const SIOCGSTAMPNS: libc::c_ulong = 0x8907;

/// A non-blocking UDP socket.
#[derive(Debug)]
pub struct Socket {
    sock: UdpSocket,
    /// Datagrams dropped because the send buffer was full.
    pub send_drops: u64,
}

fn set_buffer(sock: &UdpSocket, opt: libc::c_int, bytes: usize) {
    let v = bytes as libc::c_int;
    // SAFETY: a valid fd and a pointer to a c_int of the size passed. Failure only leaves the
    // default size.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
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
    /// Wrap `sock`, making it non-blocking and asking for large buffers.
    ///
    /// # Errors
    /// `set_nonblocking`'s error.
    pub fn new(sock: UdpSocket) -> io::Result<Socket> {
        sock.set_nonblocking(true)?;
        set_buffer(&sock, libc::SO_SNDBUF, SOCKET_BUFFER_BYTES);
        set_buffer(&sock, libc::SO_RCVBUF, SOCKET_BUFFER_BYTES);
        // The first SIOCGSTAMPNS turns the socket's receive time stamps on (it finds none yet);
        // SO_TIMESTAMPNS would not do: it puts the stamps into control messages instead. A packet
        // without a stamp (one that came before stamping was on) reads as arriving when read.
        let socket = Socket { sock, send_drops: 0 };
        let _ = socket.last_arrival_age_ns();
        Ok(socket)
    }
}

impl Datagrams for Socket {
    fn send_to(&mut self, buf: &[u8], to: SocketAddr) -> io::Result<()> {
        for attempt in 0..2 {
            match self.sock.send_to(buf, to) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && attempt == 0 => {
                    // The send buffer is full: give the kernel a moment to drain it.
                    poll_fd(self.sock.as_raw_fd(), libc::POLLOUT, Duration::from_millis(5))?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        self.send_drops += 1;
        Ok(())
    }

    fn recv_from(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
        match self.sock.recv_from(buf) {
            Ok(x) => Ok(Some(x)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        poll_fd(self.sock.as_raw_fd(), libc::POLLIN, timeout).map(|_| ())
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    fn last_arrival_age_ns(&self) -> Option<u64> {
        let mut stamp = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid fd and pointers to timespecs the calls fill.
        let ok = unsafe {
            libc::ioctl(self.sock.as_raw_fd(), SIOCGSTAMPNS as _, &mut stamp) == 0
                && libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) == 0
        };
        let ns = |t: libc::timespec| t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128;
        // A stamp in the future (a clock step) or older than a second (no fresh stamp) is not used.
        let age = ns(now) - ns(stamp);
        (ok && (0..1_000_000_000).contains(&age)).then_some(age as u64)
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
    held: Option<(Vec<u8>, SocketAddr)>,
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
        if self.draw() < self.cfg.loss {
            self.counts[0] += 1;
            return Ok(());
        }
        if self.held.is_none() && self.draw() < self.cfg.reorder {
            self.counts[2] += 1;
            self.held = Some((buf.to_vec(), to));
            return Ok(());
        }
        self.inner.send_to(buf, to)?;
        if self.draw() < self.cfg.duplicate {
            self.counts[1] += 1;
            self.inner.send_to(buf, to)?;
        }
        if let Some((b, t)) = self.held.take() {
            self.inner.send_to(&b, t)?;
        }
        Ok(())
    }

    fn recv_from(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
        self.inner.recv_from(buf)
    }

    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        // Nothing more to send for now: a held datagram goes out late rather than never.
        if let Some((b, t)) = self.held.take() {
            self.inner.send_to(&b, t)?;
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
        let mut buf = [0u8; 8];
        assert_eq!(rx.recv_from(&mut buf).unwrap().map(|x| x.0), Some(1));
        let age = rx.last_arrival_age_ns().expect("a kernel receive stamp");
        assert!((30_000_000..1_000_000_000).contains(&age), "age {age} ns");
    }
}
