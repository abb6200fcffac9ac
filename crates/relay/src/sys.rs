//! Thin, safe wrappers over the Linux calls the relay needs: clocks and sleeping, interface
//! lookup, and AF_PACKET sockets with batched, timestamped receive.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Length of the `virtio_net_hdr` that `PACKET_VNET_HDR` puts before every frame.
pub const VNET_HDR_LEN: usize = 10;

/// Largest frame (Ethernet header, VLAN tag and a 65535-byte IP packet) the relay accepts.
pub const MAX_FRAME_BYTES: usize = 65_535 + 14 + 4;

/// A receive slot: virtio header plus the largest frame, rounded up.
const SLOT_BYTES: usize = (VNET_HDR_LEN + MAX_FRAME_BYTES + 63) & !63;

/// Room for one SCM_TIMESTAMPNS control message (and anything unexpected next to it).
const CONTROL_BYTES: usize = 64;

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn timespec_ns(ts: &libc::timespec) -> i128 {
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

fn now(clock: libc::clockid_t) -> i128 {
    // SAFETY: clock_gettime writes one timespec; both clocks used here always exist on Linux.
    let mut ts: libc::timespec = unsafe { zeroed() };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    timespec_ns(&ts)
}

/// CLOCK_MONOTONIC now, ns: the relay's one clock for due times and lateness.
#[inline]
pub fn mono_ns() -> u64 {
    now(libc::CLOCK_MONOTONIC) as u64
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC now, ns: converts kernel receive timestamps (which the
/// socket layer stamps in CLOCK_REALTIME) to CLOCK_MONOTONIC. Re-read at every receive batch, so
/// a step of the wall clock can mis-time at most the frames of one batch.
pub fn realtime_minus_mono_ns() -> i128 {
    let m0 = now(libc::CLOCK_MONOTONIC);
    let r = now(libc::CLOCK_REALTIME);
    let m1 = now(libc::CLOCK_MONOTONIC);
    r - (m0 + m1) / 2
}

/// Sleep until CLOCK_MONOTONIC reaches `t_ns` (absolute, so no drift from computing the interval).
/// Returns early on a signal; the caller re-checks the time.
pub fn sleep_until_mono(t_ns: u64) {
    let ts = libc::timespec { tv_sec: (t_ns / 1_000_000_000) as libc::time_t, tv_nsec: (t_ns % 1_000_000_000) as libc::c_long };
    // SAFETY: plain syscall with a valid timespec; the remaining-time pointer is unused for TIMER_ABSTIME.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
}

/// Set the calling thread's timer slack to 1 ns, so its sleeps end when asked rather than up to
/// 50 µs (the default slack) later.
pub fn precise_timers_for_this_thread() {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Make the calling thread SCHED_FIFO at `priority` (1–99), not inherited by children.
///
/// # Errors
/// EPERM without CAP_SYS_NICE (or an RT budget of 0 in the thread's cgroup).
pub fn make_this_thread_realtime(priority: u8) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: libc::c_int::from(priority) };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param) }).map(|_| ())
}

/// While alive, asks every CPU to stay out of deep idle states: 0 µs written to
/// `/dev/cpu_dma_latency` (the kernel's PM QoS interface; the request lasts while the file is open),
/// so an idle CPU polls instead of halting and a waking relay thread runs at once. Measured on
/// the project's virtual machines (cyclictest, 100 µs timers): p99.99 wake-up latency 0.6 ms with
/// it, 4 ms without. This is what latency-sensitive tools (cyclictest, DPDK) do; it costs the host
/// the idle CPUs' power while a run lasts, and nothing after it.
#[derive(Debug)]
pub struct CpuLatencyHold {
    _file: std::fs::File,
}

impl CpuLatencyHold {
    /// Open `/dev/cpu_dma_latency` and request 0 µs.
    ///
    /// # Errors
    /// The file is missing (no PM QoS in this kernel) or not writable (not root).
    pub fn request_zero() -> io::Result<CpuLatencyHold> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency")?;
        f.write_all(&0i32.to_ne_bytes())?;
        Ok(CpuLatencyHold { _file: f })
    }
}

/// Touch every page of `buf`, so the page faults of fresh memory happen now rather than mid-run
/// (on a virtual machine each can cost tens of microseconds).
pub fn prefault(buf: &mut [u8]) {
    const PAGE: usize = 4096;
    for i in (0..buf.len()).step_by(PAGE) {
        // SAFETY: `i` is in bounds; a volatile write so the loop is not optimized away.
        unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), 0) };
    }
}

/// Raise this process's soft limit of open files to its hard limit: the relay opens two sockets
/// per interface, four per link (a k = 8 fat-tree's 384 links take 1,536), and many systems start
/// processes with a soft limit of 1,024. Best effort: on failure the limit stays as it was and
/// opening a socket beyond it fails with EMFILE, naming the interface.
pub fn raise_open_files_limit() {
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        let mut lim: libc::rlimit = zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// The index of the interface named `name` in this network namespace, if there is one.
pub fn if_index(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: `c` is a valid NUL-terminated string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (idx != 0).then_some(idx)
}

/// Wait until `fd` is readable or `timeout_ns` passes (or a signal arrives).
pub fn wait_readable(fd: RawFd, timeout_ns: u64) -> io::Result<()> {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t, tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
    let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// An epoll instance watching many receive sockets for one relay worker, each *armed* once
/// (EPOLLONESHOT): after it reports a socket readable it reports nothing more about it until
/// [`Epoll::arm`] is called again, so a socket whose frames are deliberately left waiting (their
/// direction's head frame is not due yet) does not wake the worker over and over.
#[derive(Debug)]
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// A new epoll instance reporting at most `capacity` (≥ 1) sockets per wait.
    ///
    /// # Errors
    /// The OS error of epoll_create1 (EMFILE, ENOMEM).
    pub fn new(capacity: usize) -> io::Result<Epoll> {
        // SAFETY: plain epoll_create1; the fd is owned by OwnedFd from here on.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Epoll { fd, events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)] })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLONESHOT) as u32, u64: token };
        // SAFETY: `ev` is a valid epoll_event; `fd` is open (the caller owns it).
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) }).map(|_| ())
    }

    /// Watch `fd` (armed), reporting it as `token`.
    ///
    /// # Errors
    /// The OS error of epoll_ctl.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token)
    }

    /// Re-arm `fd` (added before with `token`) after it was reported.
    ///
    /// # Errors
    /// The OS error of epoll_ctl.
    pub fn arm(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token)
    }

    /// Wait until an armed socket is readable or `timeout_ns` passes (or a signal arrives);
    /// returns the tokens of the readable sockets (empty: the timeout, or a signal).
    ///
    /// The timeout has nanosecond resolution (epoll_pwait2, Linux ≥ 5.11, under the thread's
    /// timer slack); on older kernels it is rounded up to whole milliseconds (epoll_wait).
    ///
    /// # Errors
    /// An unexpected OS error.
    pub fn wait(&mut self, timeout_ns: u64) -> io::Result<impl Iterator<Item = u64> + '_> {
        let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t, tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long };
        let max = self.events.len().min(i32::MAX as usize) as libc::c_int;
        // SAFETY: `events` has room for `max` entries; `ts` is a valid timespec; no signal mask.
        let mut r = unsafe {
            libc::syscall(libc::SYS_epoll_pwait2, self.fd.as_raw_fd(), self.events.as_mut_ptr(), max, &ts as *const libc::timespec, std::ptr::null::<libc::sigset_t>(), 0usize)
        } as libc::c_int;
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            let ms = timeout_ns.div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int;
            // SAFETY: as above.
            r = unsafe { libc::epoll_wait(self.fd.as_raw_fd(), self.events.as_mut_ptr(), max, ms) };
        }
        let n = if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
            0
        } else {
            r as usize
        };
        Ok(self.events[..n].iter().map(|e| e.u64))
    }
}

// Linux ABI values from <linux/if_packet.h> and <asm-generic/socket.h> (stable since 2.6 / 4.20),
// spelled out here so the build does not depend on which libc release exports them.
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const SO_SNDBUFFORCE: libc::c_int = 32;
const SO_RCVBUFFORCE: libc::c_int = 33;
const SO_TIMESTAMPNS: libc::c_int = 35;

#[repr(C)]
struct PacketMreq {
    mr_ifindex: libc::c_int,
    mr_type: libc::c_ushort,
    mr_alen: libc::c_ushort,
    mr_address: [u8; 8],
}

#[repr(C)]
#[derive(Default)]
struct TpacketStats {
    tp_packets: libc::c_uint,
    tp_drops: libc::c_uint,
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live T of the size passed.
    cvt(unsafe { libc::setsockopt(fd, level, name, (value as *const T).cast(), size_of::<T>() as libc::socklen_t) }).map(|_| ())
}

/// An AF_PACKET raw socket bound to one interface, exchanging frames prefixed by a virtio header.
///
/// The virtio header (`PACKET_VNET_HDR`) carries GSO and checksum-offload state across the relay:
/// if offloads were left on, a 64 KB GSO frame or a frame with a checksum still to fill in is sent
/// on exactly as it came instead of being refused for its size or arriving with a bad checksum.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: u32,
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Socket buffer sizes, bytes.
#[derive(Clone, Copy, Debug)]
pub struct BufferSizes {
    /// SO_RCVBUF(FORCE) of receiving sockets.
    pub rcvbuf_bytes: usize,
    /// SO_SNDBUF(FORCE) of sending sockets.
    pub sndbuf_bytes: usize,
}

impl PacketSocket {
    fn new(ifindex: u32) -> io::Result<PacketSocket> {
        // Protocol 0 at creation: the socket receives nothing until bind names the protocol and
        // the interface, so no frame from another interface can slip in before bind.
        // SAFETY: plain socket(2); the fd is owned by OwnedFd from here on.
        let fd = cvt(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        setsockopt(fd.as_raw_fd(), libc::SOL_PACKET, PACKET_VNET_HDR, &1 as &libc::c_int)?;
        Ok(PacketSocket { fd, ifindex })
    }

    fn bind(&self, protocol: u16) -> io::Result<()> {
        // SAFETY: sockaddr_ll is plain data; zero is a valid starting value.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as libc::c_ushort;
        sll.sll_protocol = protocol.to_be();
        sll.sll_ifindex = self.ifindex as libc::c_int;
        // SAFETY: `sll` is a valid sockaddr_ll of the size passed.
        cvt(unsafe {
            libc::bind(self.fd.as_raw_fd(), (&sll as *const libc::sockaddr_ll).cast(), size_of::<libc::sockaddr_ll>() as libc::socklen_t)
        })
        .map(|_| ())
    }

    fn buffer(&self, force: libc::c_int, plain: libc::c_int, bytes: usize) -> io::Result<()> {
        let v = bytes.min(i32::MAX as usize / 2) as libc::c_int;
        // FORCE ignores net.core.{r,w}mem_max but needs CAP_NET_ADMIN; without it take what the
        // sysctl allows.
        setsockopt(self.fd.as_raw_fd(), libc::SOL_SOCKET, force, &v).or_else(|_| setsockopt(self.fd.as_raw_fd(), libc::SOL_SOCKET, plain, &v))
    }

    /// A socket receiving every frame that arrives on `ifindex` (not the ones sent from it), with
    /// kernel receive timestamps and the interface in promiscuous mode while the socket lives.
    ///
    /// # Errors
    /// The failing call's OS error (EPERM without CAP_NET_RAW).
    pub fn receiver(ifindex: u32, sizes: BufferSizes) -> io::Result<PacketSocket> {
        let s = PacketSocket::new(ifindex)?;
        let fd = s.fd.as_raw_fd();
        setsockopt(fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &1 as &libc::c_int)?;
        setsockopt(fd, libc::SOL_SOCKET, SO_TIMESTAMPNS, &1 as &libc::c_int)?;
        s.buffer(SO_RCVBUFFORCE, libc::SO_RCVBUF, sizes.rcvbuf_bytes)?;
        // veth delivers every frame anyway; promiscuous mode makes other device kinds do the same.
        let mreq = PacketMreq { mr_ifindex: ifindex as libc::c_int, mr_type: PACKET_MR_PROMISC, mr_alen: 0, mr_address: [0; 8] };
        setsockopt(fd, libc::SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq)?;
        s.bind(libc::ETH_P_ALL as u16)?;
        Ok(s)
    }

    /// A socket sending frames out of `ifindex` (through its qdisc, so shaping there applies).
    ///
    /// # Errors
    /// The failing call's OS error.
    pub fn sender(ifindex: u32, sizes: BufferSizes) -> io::Result<PacketSocket> {
        let s = PacketSocket::new(ifindex)?;
        s.buffer(SO_SNDBUFFORCE, libc::SO_SNDBUF, sizes.sndbuf_bytes)?;
        // Protocol 0: this socket never receives.
        s.bind(0)?;
        Ok(s)
    }

    /// Send one virtio header + frame. Blocks only if the send buffer is full (a qdisc on the
    /// interface holding many frames).
    ///
    /// # Errors
    /// The OS error (ENOBUFS when a qdisc drops the frame, ENETDOWN when the link is down).
    pub fn send(&self, hdr_and_frame: &[u8]) -> io::Result<()> {
        loop {
            // SAFETY: the slice is valid for its length.
            let r = unsafe { libc::send(self.fd.as_raw_fd(), hdr_and_frame.as_ptr().cast(), hdr_and_frame.len(), 0) };
            if r >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Frames the kernel dropped before this socket could read them (receive buffer full) since
    /// the last call; reading resets the kernel's counter.
    pub fn take_kernel_drops(&self) -> u64 {
        let mut st = TpacketStats::default();
        let mut len = size_of::<TpacketStats>() as libc::socklen_t;
        // SAFETY: `st` is a live tpacket_stats of the size passed.
        let r = unsafe { libc::getsockopt(self.fd.as_raw_fd(), libc::SOL_PACKET, PACKET_STATISTICS, (&mut st as *mut TpacketStats).cast(), &mut len) };
        if r < 0 {
            0
        } else {
            u64::from(st.tp_drops)
        }
    }
}

/// One received frame, borrowed from a [`RxBatch`].
#[derive(Debug)]
pub struct Received<'a> {
    /// Virtio header followed by the frame.
    pub hdr_and_frame: &'a [u8],
    /// The kernel's receive timestamp, CLOCK_REALTIME ns, if one came with the frame.
    pub rx_realtime_ns: Option<i128>,
    /// The frame did not fit a receive slot and was cut short.
    pub truncated: bool,
}

/// Buffers for receiving up to `n` frames with one `recvmmsg` call.
///
/// Holds raw pointers into its own buffers, so it is built inside the thread that uses it.
pub struct RxBatch {
    slots: Vec<u8>,
    control: Vec<u8>,
    iovecs: Vec<libc::iovec>,
    headers: Vec<libc::mmsghdr>,
    got: usize,
}

impl RxBatch {
    /// Buffers for `n` frames of up to [`MAX_FRAME_BYTES`] (about 64 KiB each; pages are only
    /// touched as far as frames reach).
    pub fn new(n: usize) -> RxBatch {
        let n = n.max(1);
        let mut b = RxBatch {
            slots: vec![0; n * SLOT_BYTES],
            control: vec![0; n * CONTROL_BYTES],
            iovecs: Vec::with_capacity(n),
            // SAFETY: mmsghdr is plain data; zero is a valid value.
            headers: (0..n).map(|_| unsafe { zeroed() }).collect(),
            got: 0,
        };
        for i in 0..n {
            b.iovecs.push(libc::iovec { iov_base: b.slots[i * SLOT_BYTES..].as_mut_ptr().cast(), iov_len: SLOT_BYTES });
        }
        b
    }

    /// Receive whatever is queued on `sock` without blocking, up to the batch size; returns the
    /// number of frames (0 when none were waiting).
    ///
    /// # Errors
    /// An OS error other than "nothing to read", "interrupted" or "interface went down".
    pub fn receive(&mut self, sock: &PacketSocket) -> io::Result<usize> {
        let n = self.headers.len();
        for i in 0..n {
            let h = &mut self.headers[i].msg_hdr;
            h.msg_name = std::ptr::null_mut();
            h.msg_namelen = 0;
            h.msg_iov = &mut self.iovecs[i];
            h.msg_iovlen = 1;
            h.msg_control = self.control[i * CONTROL_BYTES..].as_mut_ptr().cast();
            h.msg_controllen = CONTROL_BYTES as _;
            h.msg_flags = 0;
            self.headers[i].msg_len = 0;
        }
        self.got = 0;
        // SAFETY: every header points into buffers owned by self, sized as declared.
        let r = unsafe { libc::recvmmsg(sock.as_raw_fd(), self.headers.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::ENETDOWN) => Ok(0),
                _ => Err(e),
            };
        }
        self.got = r as usize;
        Ok(self.got)
    }

    /// The `i`-th frame of the last [`RxBatch::receive`].
    pub fn get(&self, i: usize) -> Received<'_> {
        assert!(i < self.got, "frame {i} of a batch of {}", self.got);
        let h = &self.headers[i];
        let len = (h.msg_len as usize).min(SLOT_BYTES);
        let mut rx_realtime_ns = None;
        // SAFETY: walking the control buffer the kernel filled for this message, with the libc
        // CMSG macros and the length it reported.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&h.msg_hdr);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    rx_realtime_ns = Some(timespec_ns(&ts));
                }
                c = libc::CMSG_NXTHDR(&h.msg_hdr, c);
            }
        }
        Received {
            hdr_and_frame: &self.slots[i * SLOT_BYTES..i * SLOT_BYTES + len],
            rx_realtime_ns,
            truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
        }
    }
}
