//! The few OS calls the driver needs beyond std: waiting on a socket with a nanosecond timeout
//! (`ppoll`), socket buffer sizes, the thread's CPU time and CLOCK_MONOTONIC (Linux).

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Wait until `sock` is readable (or writable, with `write`) or `timeout` passes; `Ok(true)`
/// when it is ready. An interrupted wait returns `Ok(false)`.
pub fn wait(sock: &UdpSocket, timeout: Duration, write: bool) -> io::Result<bool> {
    let mut fd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: if write { libc::POLLOUT } else { libc::POLLIN },
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let r = unsafe { libc::ppoll(&mut fd, 1, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
    }
    Ok(r > 0)
}

/// Ask for `bytes` of send and receive buffer (the kernel may grant less; failures ignored: the
/// defaults still work, with more drops on loopback bursts).
pub fn set_buffers(sock: &UdpSocket, bytes: usize) {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        // SAFETY: a valid socket and a c_int option value of the right size.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                &v as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// The calling thread's CPU time, user + system (`getrusage(RUSAGE_THREAD)`), seconds.
pub fn thread_cpu_s() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return f64::NAN;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CLOCK_MONOTONIC now, nanoseconds (the clock Python's `time.monotonic_ns` and Rust's
/// [`Instant`] read on Linux).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The [`Instant`] at CLOCK_MONOTONIC reading `t_ns` (in the past or future).
pub fn instant_at_monotonic_ns(t_ns: u64) -> Instant {
    let (now, now_ns) = (Instant::now(), monotonic_ns());
    if t_ns <= now_ns {
        now.checked_sub(Duration::from_nanos(now_ns - t_ns)).unwrap_or(now)
    } else {
        now + Duration::from_nanos(t_ns - now_ns)
    }
}
