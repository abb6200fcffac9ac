//! Many datagrams per system call (Linux): `sendmmsg(2)` with UDP generic segmentation offload
//! (`UDP_SEGMENT`, a run of equal-sized datagrams to one destination handed to the kernel as one
//! buffer that it cuts after routing), and `recvmmsg(2)` with UDP generic receive offload
//! (`UDP_GRO`, datagrams of one flow that arrive together read as one buffer and a segment size),
//! each datagram with its kernel receive time stamp (`SO_TIMESTAMPNS`).
//!
//! Each datagram also carries the IP header's ECN field (RFC 3168 §5) both ways, as quinn-udp
//! does: sent with an `IP_TOS` (IPv4) or `IPV6_TCLASS` (IPv6) control message per message (so a
//! GSO run never mixes codepoints; a Not-ECT datagram carries none and leaves with the socket's
//! TOS, 0), and read back from the `IP_TOS`/`IPV6_TCLASS` control message the kernel attaches
//! when the socket asked for it (`IP_RECVTOS`/`IPV6_RECVTCLASS`, [`enable_ecn_receipt`]). The
//! kernel's IP GRO merges only packets with the same TOS, so one GRO message has one codepoint.
//!
//! Why not the `quinn-udp` crate (0.5): it brings `socket2`, by default `tracing`, and its own
//! transmit/receive types for what is here a few hundred lines over `libc` (already a
//! dependency), and its receive metadata has no kernel time stamps, which UDT's receiver needs (arrival speed and packet pairs,
//! draft-gg-udt-03 §6.2).
//!
//! GSO is used until the kernel refuses it: `sendmsg` with `UDP_SEGMENT` fails with `EIO` when
//! the route's device does not offload checksums (older kernels; recent ones, e.g. 6.18, checksum
//! in software instead; the kernel backend turns `tx` offload off on every veth), or `EINVAL` when a segment
//! would not fit the path MTU or the socket has UDP checksums off; the refused datagrams then go
//! out one per message, and the socket sends that way from then on. The wire is the same either
//! way: GSO's segments are ordinary datagrams.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

use ccarena_transport::Ecn;

/// Most messages one `sendmmsg` or `recvmmsg` call carries.
pub const MAX_MESSAGES: usize = 64;
/// `UDP_MAX_SEGMENTS` (linux/udp.h): most datagrams one GSO message carries.
pub const GSO_MAX_SEGMENTS: usize = 64;
/// Most payload bytes one GSO message carries: an IP packet's 65,535 bytes less IPv6 and UDP
/// headers, rounded down.
pub const GSO_MAX_BYTES: usize = 65_000;
/// A receive slot's size when GRO is on: the largest UDP payload, so a coalesced buffer is never
/// cut.
pub const GRO_SLOT_BYTES: usize = 65_536;

/// Datagrams waiting to be sent, in order, stored back to back.
#[derive(Debug, Default)]
pub struct SendQueue {
    buf: Vec<u8>,
    /// Each datagram's end offset in `buf`, destination and ECN codepoint.
    ends: Vec<(usize, SocketAddr, Ecn)>,
}

impl SendQueue {
    /// Append a copy of `data`, for `to`, Not-ECT.
    pub fn push(&mut self, data: &[u8], to: SocketAddr) {
        self.push_with_ecn(data, to, Ecn::NotEct);
    }

    /// Append a copy of `data`, for `to`, to leave with `ecn` in its IP header's ECN field.
    pub fn push_with_ecn(&mut self, data: &[u8], to: SocketAddr, ecn: Ecn) {
        self.push_written(to, ecn, |buf| buf.extend_from_slice(data));
    }

    /// Append the datagram `write` appends to the buffer it is given (and nothing else of it),
    /// for `to`, with `ecn`: a datagram encoded in place rather than copied in.
    pub fn push_written(&mut self, to: SocketAddr, ecn: Ecn, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.buf);
        self.ends.push((self.buf.len(), to, ecn));
    }

    /// Datagrams queued.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Nothing queued.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Forget everything queued.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.ends.clear();
    }

    /// Datagram `i`: its bytes' range in `buf` and its destination.
    fn get(&self, i: usize) -> (usize, usize, SocketAddr) {
        let start = if i == 0 { 0 } else { self.ends[i - 1].0 };
        let (end, to, _) = self.ends[i];
        (start, end, to)
    }

    /// Datagram `i`'s ECN codepoint.
    fn ecn(&self, i: usize) -> Ecn {
        self.ends[i].2
    }

    /// The datagrams, in order (for senders that take one at a time).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], SocketAddr)> {
        (0..self.len()).map(|i| {
            let (s, e, to) = self.get(i);
            (&self.buf[s..e], to)
        })
    }
}

/// What [`send_queue`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendReport {
    /// Datagrams handed to the kernel.
    pub sent: usize,
    /// Datagrams dropped because the send buffer stayed full.
    pub dropped: usize,
    /// System calls made (`sendmmsg`).
    pub calls: usize,
}

/// One message of a `sendmmsg` call: datagrams `first..first + count` of the queue, sent as one
/// GSO buffer of `count` segments when `count > 1`.
#[derive(Clone, Copy, Debug)]
struct Message {
    first: usize,
    count: usize,
}

/// Group datagrams `from..` of `q` into at most [`MAX_MESSAGES`] messages: with `gso`, a run of
/// datagrams to one destination with one ECN codepoint, all the size of the first but the last (which may be shorter:
/// GSO's rule), at most [`GSO_MAX_SEGMENTS`] and [`GSO_MAX_BYTES`], is one message; else one
/// datagram per message.
fn plan(q: &SendQueue, from: usize, gso: bool, out: &mut Vec<Message>) {
    out.clear();
    let mut i = from;
    while i < q.len() && out.len() < MAX_MESSAGES {
        let (s, e, to) = q.get(i);
        let seg = e - s;
        let (mut count, mut bytes) = (1, seg);
        while gso && i + count < q.len() && count < GSO_MAX_SEGMENTS {
            let (s2, e2, to2) = q.get(i + count);
            let len = e2 - s2;
            if to2 != to || q.ecn(i + count) != q.ecn(i) || len > seg || len == 0 || bytes + len > GSO_MAX_BYTES {
                break;
            }
            bytes += len;
            count += 1;
            if len < seg {
                break;
            }
        }
        out.push(Message { first: i, count });
        i += count;
    }
}

/// A socket address in the C layout, and its length.
fn to_c(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all zeros is a valid (empty) value.
    let mut ss: libc::sockaddr_storage = unsafe { zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            let sin = unsafe { &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr = libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr = libc::in6_addr { s6_addr: a.ip().octets() };
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_scope_id = a.scope_id();
            size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// A socket address from the C layout (`None`: another family).
fn from_c(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says it holds a sockaddr_in.
            let sin = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it holds a sockaddr_in6.
            let sin6 = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(ip, u16::from_be(sin6.sin6_port), sin6.sin6_flowinfo, sin6.sin6_scope_id)))
        }
        _ => None,
    }
}

/// Bytes of a message's control buffer: room for one `UDP_SEGMENT`/`UDP_GRO` integer (24 with
/// its header), one `SCM_TIMESTAMPNS` timespec (32) and one `IP_TOS`/`IPV6_TCLASS` integer (24),
/// with room to spare.
const CONTROL_BYTES: usize = 128;

/// Control buffer of one message, 8-byte aligned as `cmsghdr` wants.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct Control([u8; CONTROL_BYTES]);

/// The control message that sets a datagram's ECN field: `IP_TOS` to an IPv4 destination,
/// `IPV6_TCLASS` to an IPv6 one (level, type), each an `int` holding the whole TOS or traffic
/// class byte, whose low two bits are the ECN field (RFC 3168 §5; RFC 8200 §7 for IPv6's traffic
/// class). The DSCP bits are left 0, the socket's default.
fn ecn_cmsg(to: SocketAddr) -> (libc::c_int, libc::c_int) {
    match to {
        SocketAddr::V4(_) => (libc::IPPROTO_IP, libc::IP_TOS),
        SocketAddr::V6(_) => (libc::IPPROTO_IPV6, libc::IPV6_TCLASS),
    }
}

/// Ask the kernel to attach each received datagram's TOS (IPv4) and traffic class (IPv6) byte
/// as a control message (`IP_RECVTOS`, `IPV6_RECVTCLASS`; an IPv6 socket takes both, for
/// IPv4-mapped peers). Returns whether the kernel took the option for `fd`'s own family.
pub fn enable_ecn_receipt(fd: RawFd, ipv6: bool) -> bool {
    let v4 = set_int_option(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1);
    if ipv6 {
        set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)
    } else {
        v4
    }
}

/// The ECN codepoint in one received control message (`level`, `kind`, its data bytes), if it
/// is the TOS or traffic class one: Linux sends IPv4's `IP_TOS` as one byte and IPv6's
/// `IPV6_TCLASS` as an `int` (native byte order). `None` for any other message or a short one.
pub fn ecn_from_cmsg(level: libc::c_int, kind: libc::c_int, data: &[u8]) -> Option<Ecn> {
    match (level, kind) {
        (libc::IPPROTO_IP, libc::IP_TOS) => data.first().map(|&tos| Ecn::from_bits(tos)),
        (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => {
            let bytes: [u8; 4] = data.get(..4)?.try_into().ok()?;
            Some(Ecn::from_bits(i32::from_ne_bytes(bytes) as u8))
        }
        _ => None,
    }
}

/// Wait up to `timeout_ms` for room in the send buffer.
fn wait_writable(fd: RawFd, timeout_ms: libc::c_int) {
    let mut pfd = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
    // SAFETY: one valid pollfd. A failed or interrupted poll only means trying again sooner.
    unsafe {
        libc::poll(&mut pfd, 1, timeout_ms);
    }
}

/// Send every datagram of `q` on the non-blocking socket `fd`, in order, with as few `sendmmsg`
/// calls as the kernel allows, using GSO while `*gso` (set to false, for good, when the kernel
/// refuses it). A full send buffer is waited on for up to 5 ms once per stall; what still does
/// not fit is dropped (as a full queue drops) and counted. `q` is left as it was.
///
/// # Errors
/// The socket's error for the first datagram that could not be sent (for a connected socket,
/// `ConnectionRefused` after an ICMP port unreachable); datagrams before it were sent.
pub fn send_queue(fd: RawFd, q: &SendQueue, gso: &mut bool) -> io::Result<SendReport> {
    send_queue_connected(fd, q, gso, None)
}

/// As [`send_queue`], on a socket connected to `connected`: a datagram to that address goes
/// without one, so the kernel uses the socket's cached route (`udp_sendmsg` looks the route up
/// afresh for every message that names its destination, connected socket or not: a FIB lookup
/// and a search for the source address's device per message).
///
/// # Errors
/// As [`send_queue`].
pub fn send_queue_connected(fd: RawFd, q: &SendQueue, gso: &mut bool, connected: Option<SocketAddr>) -> io::Result<SendReport> {
    let mut report = SendReport::default();
    let mut msgs = Vec::with_capacity(MAX_MESSAGES);
    let mut waited = false;
    let mut next = 0;
    while next < q.len() {
        plan(q, next, *gso, &mut msgs);
        let mut iovs: Vec<libc::iovec> = Vec::with_capacity(msgs.len());
        let mut names: Vec<(libc::sockaddr_storage, libc::socklen_t)> = Vec::with_capacity(msgs.len());
        let mut controls = vec![Control([0; CONTROL_BYTES]); msgs.len()];
        for m in &msgs {
            let (start, _, to) = q.get(m.first);
            let (_, end, _) = q.get(m.first + m.count - 1);
            iovs.push(libc::iovec { iov_base: q.buf[start..].as_ptr() as *mut libc::c_void, iov_len: end - start });
            names.push(to_c(to));
        }
        // SAFETY: mmsghdr is plain data; zeroed then filled below.
        let mut hdrs: Vec<libc::mmsghdr> = (0..msgs.len()).map(|_| unsafe { zeroed() }).collect();
        for (k, m) in msgs.iter().enumerate() {
            let h = &mut hdrs[k].msg_hdr;
            if Some(q.get(m.first).2) != connected {
                h.msg_name = (&mut names[k].0 as *mut libc::sockaddr_storage).cast();
                h.msg_namelen = names[k].1;
            }
            h.msg_iov = &mut iovs[k];
            h.msg_iovlen = 1;
            let ecn = q.ecn(m.first);
            if m.count > 1 || ecn != Ecn::NotEct {
                let (s, e, to) = q.get(m.first);
                let seg = (e - s) as u16;
                h.msg_control = controls[k].0.as_mut_ptr().cast();
                // The kernel walks msg_controllen bytes: set it to the whole buffer while the
                // messages are written (CMSG_NXTHDR checks against it), then to what was used.
                h.msg_controllen = CONTROL_BYTES as _;
                let mut used = 0usize;
                // SAFETY: the two CMSG_SPACEs (of a u16 and a c_int, 24 bytes each) fit the
                // CONTROL_BYTES buffer; CMSG_FIRSTHDR/NXTHDR of a msghdr whose control buffer is
                // that size give valid, aligned cmsghdrs inside it (the first is never null, the
                // second is not either since 48 bytes fit).
                unsafe {
                    let mut c = libc::CMSG_FIRSTHDR(h);
                    if m.count > 1 {
                        (*c).cmsg_level = libc::SOL_UDP;
                        (*c).cmsg_type = libc::UDP_SEGMENT;
                        (*c).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
                        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg);
                        used += libc::CMSG_SPACE(size_of::<u16>() as u32) as usize;
                        c = libc::CMSG_NXTHDR(h, c);
                    }
                    if ecn != Ecn::NotEct {
                        let (level, kind) = ecn_cmsg(to);
                        (*c).cmsg_level = level;
                        (*c).cmsg_type = kind;
                        (*c).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
                        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), libc::c_int::from(ecn.bits()));
                        used += libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) as usize;
                    }
                }
                h.msg_controllen = used as _;
            }
        }
        // SAFETY: every header points at live buffers (q, names, iovs, controls) that outlive
        // the call; the kernel only reads them.
        let r = unsafe { libc::sendmmsg(fd, hdrs.as_mut_ptr(), hdrs.len() as libc::c_uint, libc::MSG_DONTWAIT) };
        report.calls += 1;
        if r > 0 {
            let n: usize = msgs[..r as usize].iter().map(|m| m.count).sum();
            report.sent += n;
            next += n;
            waited = false;
            continue;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock if !waited => {
                // The send buffer is full: give the kernel a moment to drain it.
                wait_writable(fd, 5);
                waited = true;
            }
            io::ErrorKind::WouldBlock => {
                // Still full: drop the first message's datagrams (as a full queue would) and go on.
                report.dropped += msgs[0].count;
                next += msgs[0].count;
                waited = false;
            }
            // The kernel refused the GSO message (EIO: no checksum offload on the route's
            // device; EINVAL: a segment over the MTU, or GSO unknown): one datagram per
            // message from now on.
            _ if msgs[0].count > 1 && matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT | libc::EOPNOTSUPP)) => {
                *gso = false;
            }
            _ => return Err(e),
        }
    }
    Ok(report)
}

/// Datagrams read by one [`recv_batch`] call: up to [`MAX_MESSAGES`] messages, each a datagram
/// or (with GRO) several of one size back to back.
pub struct RecvBatch {
    buf: Vec<u8>,
    slot_bytes: usize,
    /// Per message read: bytes, GRO segment size (0: one datagram), sender, receive stamp
    /// (CLOCK_REALTIME ns; 0: none), the IP ECN field (Not-ECT when the kernel attached none).
    meta: Vec<(usize, usize, Option<SocketAddr>, u64, Ecn)>,
    /// CLOCK_REALTIME when the batch was read, ns.
    read_at_ns: u64,
    scratch: RecvScratch,
}

/// The `recvmmsg` call's headers, kept with the batch so that a read allocates nothing (a
/// driver reads at every wake-up; four allocations and 5 KB of zeroing a call were measurable
/// on a rate-limited sender waking 250 times a second).
#[derive(Default)]
struct RecvScratch {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    names: Vec<libc::sockaddr_storage>,
    controls: Vec<Control>,
}

// SAFETY: the raw pointers in `hdrs` and `iovs` are rewritten by every `recv_batch` call before
// the kernel sees them, to point into the batch that owns them; nothing reads them elsewhere.
unsafe impl Send for RecvScratch {}

impl RecvScratch {
    /// Room for `n` messages.
    fn new(n: usize) -> RecvScratch {
        RecvScratch {
            // SAFETY: plain C data; all zeros is a valid value.
            hdrs: (0..n).map(|_| unsafe { zeroed() }).collect(),
            iovs: vec![libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; n],
            // SAFETY: as above.
            names: (0..n).map(|_| unsafe { zeroed() }).collect(),
            controls: vec![Control([0; CONTROL_BYTES]); n],
        }
    }
}

impl Default for RecvBatch {
    /// An empty batch with no room (a placeholder; allocates nothing).
    fn default() -> RecvBatch {
        RecvBatch { buf: Vec::new(), slot_bytes: 1, meta: Vec::new(), read_at_ns: 0, scratch: RecvScratch::default() }
    }
}

impl std::fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBatch").field("slot_bytes", &self.slot_bytes).field("messages", &self.meta.len()).finish()
    }
}

/// One datagram of a [`RecvBatch`].
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    /// Its bytes (a datagram longer than the slot is cut to the slot).
    pub data: &'a [u8],
    /// Its sender.
    pub from: SocketAddr,
    /// How long before it was read it arrived, ns, from the kernel's receive stamp; `None`
    /// without a usable stamp (the reader's clock is then the arrival time).
    pub arrival_age_ns: Option<u64>,
    /// The ECN field of its IP header as it arrived (a queue on the path may have set CE);
    /// Not-ECT when the socket does not report it ([`enable_ecn_receipt`]).
    pub ecn: Ecn,
}

impl RecvBatch {
    /// Room for `messages` messages (at most [`MAX_MESSAGES`]) of `slot_bytes` each.
    pub fn new(messages: usize, slot_bytes: usize) -> RecvBatch {
        let messages = messages.clamp(1, MAX_MESSAGES);
        RecvBatch {
            buf: vec![0; messages * slot_bytes],
            slot_bytes,
            meta: Vec::with_capacity(messages),
            read_at_ns: 0,
            scratch: RecvScratch::new(messages),
        }
    }

    /// Messages the batch has room for.
    pub fn capacity(&self) -> usize {
        self.buf.len() / self.slot_bytes
    }

    /// Messages read by the last call (a GRO message holds several datagrams).
    pub fn messages(&self) -> usize {
        self.meta.len()
    }

    /// Forget what was read.
    pub fn clear(&mut self) {
        self.meta.clear();
    }

    /// The datagrams read, in arrival order (a GRO message split at its segment size).
    pub fn iter(&self) -> impl Iterator<Item = Datagram<'_>> {
        self.meta.iter().enumerate().filter_map(|(k, &(len, seg, from, stamp_ns, ecn))| {
            let from = from?;
            let age = self.read_at_ns.checked_sub(stamp_ns).filter(|a| stamp_ns > 0 && *a < 1_000_000_000);
            let data = &self.buf[k * self.slot_bytes..k * self.slot_bytes + len];
            let seg = if seg == 0 { len.max(1) } else { seg };
            Some(data.chunks(seg).map(move |d| Datagram { data: d, from, arrival_age_ns: age, ecn }))
        })
        .flatten()
    }
}

/// CLOCK_REALTIME now, ns (the clock of the kernel's receive stamps).
fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec pointer.
    unsafe {
        libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Read what is waiting on the non-blocking socket `fd` into `batch` (cleared first) with one
/// `recvmmsg` call; returns the messages read (0: nothing waiting).
///
/// # Errors
/// The socket's error (e.g. `ConnectionRefused` for an ICMP error of an earlier send).
pub fn recv_batch(fd: RawFd, batch: &mut RecvBatch) -> io::Result<usize> {
    batch.meta.clear();
    let n = batch.capacity();
    let slot = batch.slot_bytes;
    let RecvScratch { hdrs, iovs, names, controls } = &mut batch.scratch;
    for (k, c) in batch.buf.chunks_mut(slot).enumerate() {
        iovs[k] = libc::iovec { iov_base: c.as_mut_ptr().cast(), iov_len: c.len() };
        // The kernel wrote the lengths and flags back last time: reset every field it reads.
        let h = &mut hdrs[k].msg_hdr;
        h.msg_name = (&mut names[k] as *mut libc::sockaddr_storage).cast();
        h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        h.msg_iov = &mut iovs[k];
        h.msg_iovlen = 1;
        h.msg_control = controls[k].0.as_mut_ptr().cast();
        h.msg_controllen = size_of::<Control>() as _;
        h.msg_flags = 0;
        hdrs[k].msg_len = 0;
    }
    let r = loop {
        // SAFETY: every header points at live, writable buffers of the sizes given.
        let r = unsafe {
            libc::recvmmsg(fd, hdrs.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT, std::ptr::null_mut())
        };
        if r >= 0 {
            break r as usize;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(0),
            _ => return Err(e),
        }
    };
    batch.read_at_ns = realtime_ns();
    for k in 0..r {
        let h = &hdrs[k].msg_hdr;
        let len = (hdrs[k].msg_len as usize).min(slot);
        let (mut seg, mut stamp_ns, mut ecn) = (0usize, 0u64, Ecn::NotEct);
        // SAFETY: the kernel filled msg_control up to msg_controllen; CMSG_FIRSTHDR/NXTHDR walk
        // within it and the data of each cmsg is of the type its level and type say.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                match ((*c).cmsg_level, (*c).cmsg_type) {
                    (libc::SOL_UDP, libc::UDP_GRO) => {
                        seg = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>()).max(0) as usize;
                    }
                    (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) => {
                        let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                        stamp_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                    }
                    (level, kind) => {
                        let header = libc::CMSG_LEN(0) as usize;
                        let data_len = ((*c).cmsg_len as usize).saturating_sub(header);
                        let data = std::slice::from_raw_parts(libc::CMSG_DATA(c), data_len);
                        if let Some(e) = ecn_from_cmsg(level, kind, data) {
                            ecn = e;
                        }
                    }
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        batch.meta.push((len, seg, from_c(&names[k]), stamp_ns, ecn));
    }
    Ok(r)
}

/// Set an integer socket option; false if the kernel refused it.
pub fn set_int_option(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> bool {
    // SAFETY: a pointer to a c_int of the size passed.
    unsafe {
        libc::setsockopt(fd, level, name, (&value as *const libc::c_int).cast(), size_of::<libc::c_int>() as libc::socklen_t)
            == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    fn pair() -> (UdpSocket, UdpSocket) {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        tx.set_nonblocking(true).unwrap();
        // Room for a whole test batch: a datagram cut from a GSO buffer is charged a large
        // share of it against the receive buffer.
        set_int_option(rx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, 8 << 20);
        (tx, rx)
    }

    /// Datagram `i` of a test batch: `len` bytes, each `i`'s low byte, so order and boundaries
    /// show.
    fn datagram(i: usize, len: usize) -> Vec<u8> {
        let mut d = vec![i as u8; len];
        d[..2].copy_from_slice(&(i as u16).to_be_bytes());
        d
    }

    /// "n datagrams, first difference at i" rather than kilobytes of bytes in a failure.
    fn same(got: &[Vec<u8>], want: &[Vec<u8>]) -> Result<(), String> {
        let first_diff = got.iter().zip(want).position(|(g, w)| g != w);
        if got.len() == want.len() && first_diff.is_none() {
            return Ok(());
        }
        let head = |v: &[Vec<u8>]| v.iter().take(8).map(|d| (d.len(), d[..2].to_vec())).collect::<Vec<_>>();
        Err(format!("got {} datagrams, want {}; first difference at {first_diff:?}; got starts {:?}", got.len(), want.len(), head(got)))
    }

    /// Read until `want` datagrams arrived (or a second passed).
    fn read_all(rx: &UdpSocket, batch: &mut RecvBatch, want: usize) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while got.len() < want && std::time::Instant::now() < until {
            recv_batch(rx.as_raw_fd(), batch).unwrap();
            got.extend(batch.iter().map(|d| d.data.to_vec()));
        }
        got
    }

    #[test]
    fn a_batch_arrives_whole_and_in_order_with_and_without_gso() {
        for gso_first in [true, false] {
            let (tx, rx) = pair();
            let to = rx.local_addr().unwrap();
            let mut q = SendQueue::default();
            // Equal sizes (one GSO run), a short one (ends the run), more, a different
            // destination's... then sizes that change at every datagram.
            let mut want = Vec::new();
            for i in 0..150 {
                let len = if i < 100 { 1200 } else if i == 100 { 300 } else { 40 + 7 * i };
                let d = datagram(i, len);
                q.push(&d, to);
                want.push(d);
            }
            let mut gso = gso_first;
            let r = send_queue(tx.as_raw_fd(), &q, &mut gso).unwrap();
            assert_eq!((r.sent, r.dropped), (150, 0));
            // Fewer calls than datagrams: the point of it (with GSO, 1200-byte runs of up to 54
            // fill few messages; without, 64 per call).
            assert!(r.calls < 10, "{r:?}");
            let mut batch = RecvBatch::new(MAX_MESSAGES, 2048);
            same(&read_all(&rx, &mut batch, 150), &want).unwrap_or_else(|e| panic!("gso {gso_first}: {e}"));
        }
    }

    #[test]
    fn a_connected_socket_sends_its_peers_datagrams_without_naming_it_and_others_by_name() {
        // To the connected peer the messages go without an address (the socket's cached
        // route); to another address, named as before; with and without GSO.
        for gso_first in [true, false] {
            let (tx, rx) = pair();
            let (_, other) = pair();
            tx.connect(rx.local_addr().unwrap()).unwrap();
            let (to, elsewhere) = (rx.local_addr().unwrap(), other.local_addr().unwrap());
            let mut q = SendQueue::default();
            let mut want = Vec::new();
            let mut want_elsewhere = Vec::new();
            for i in 0..90 {
                let d = datagram(i, 1000);
                // Every tenth to the other socket: a run to the peer, one elsewhere, a run...
                if i % 10 == 9 {
                    q.push(&d, elsewhere);
                    want_elsewhere.push(d);
                } else {
                    q.push(&d, to);
                    want.push(d);
                }
            }
            let mut gso = gso_first;
            let r = send_queue_connected(tx.as_raw_fd(), &q, &mut gso, Some(to)).unwrap();
            assert_eq!((r.sent, r.dropped), (90, 0));
            let mut batch = RecvBatch::new(MAX_MESSAGES, 2048);
            same(&read_all(&rx, &mut batch, want.len()), &want).unwrap_or_else(|e| panic!("gso {gso_first}: {e}"));
            // The batch is reused: every read names the sender afresh.
            assert!(batch.iter().all(|d| d.from == tx.local_addr().unwrap()));
            same(&read_all(&other, &mut batch, want_elsewhere.len()), &want_elsewhere).unwrap();
        }
    }

    #[test]
    fn gro_splits_coalesced_datagrams_back_into_the_sent_ones() {
        let (tx, rx) = pair();
        let gro = set_int_option(rx.as_raw_fd(), libc::SOL_UDP, libc::UDP_GRO, 1);
        let to = rx.local_addr().unwrap();
        let mut q = SendQueue::default();
        let want: Vec<Vec<u8>> = (0..40).map(|i| datagram(i, if i == 39 { 100 } else { 1400 })).collect();
        for d in &want {
            q.push(d, to);
        }
        let mut gso = true;
        send_queue(tx.as_raw_fd(), &q, &mut gso).unwrap();
        let mut batch = RecvBatch::new(8, GRO_SLOT_BYTES);
        same(&read_all(&rx, &mut batch, 40), &want).unwrap();
        // Loopback hands a GSO buffer to a GRO socket whole: one message held them all.
        if gro && gso {
            assert_eq!(batch.messages(), 1);
        }
    }

    #[test]
    fn a_refused_gso_send_falls_back_to_one_datagram_per_message() {
        // UDP_SEGMENT with a segment over the path MTU is refused (EINVAL): lo's MTU is 65,536,
        // so use the smaller of GSO's limits instead — a socket with checksums off
        // (SO_NO_CHECK) makes the kernel refuse every GSO send (EINVAL).
        let (tx, rx) = pair();
        assert!(set_int_option(tx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_NO_CHECK, 1));
        let to = rx.local_addr().unwrap();
        let mut q = SendQueue::default();
        let want: Vec<Vec<u8>> = (0..20).map(|i| datagram(i, 1000)).collect();
        for d in &want {
            q.push(d, to);
        }
        let mut gso = true;
        let r = send_queue(tx.as_raw_fd(), &q, &mut gso).unwrap();
        assert!(!gso, "the kernel refused GSO and the queue noticed");
        assert_eq!((r.sent, r.dropped), (20, 0));
        let mut batch = RecvBatch::new(MAX_MESSAGES, 2048);
        same(&read_all(&rx, &mut batch, 20), &want).unwrap();
    }

    #[test]
    fn the_ecn_field_is_read_from_either_family_s_control_message() {
        // IPv4's IP_TOS: one byte, the whole TOS; the ECN field is its low two bits (a DSCP in
        // the high six must not leak in).
        assert_eq!(ecn_from_cmsg(libc::IPPROTO_IP, libc::IP_TOS, &[0b1011_1001]), Some(Ecn::Ect1));
        assert_eq!(ecn_from_cmsg(libc::IPPROTO_IP, libc::IP_TOS, &[0x02]), Some(Ecn::Ect0));
        assert_eq!(ecn_from_cmsg(libc::IPPROTO_IP, libc::IP_TOS, &[0x03]), Some(Ecn::Ce));
        assert_eq!(ecn_from_cmsg(libc::IPPROTO_IP, libc::IP_TOS, &[0x00]), Some(Ecn::NotEct));
        // IPv6's IPV6_TCLASS: an int.
        assert_eq!(ecn_from_cmsg(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, &0xB9i32.to_ne_bytes()), Some(Ecn::Ect1));
        assert_eq!(ecn_from_cmsg(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, &3i32.to_ne_bytes()), Some(Ecn::Ce));
        // Short or foreign messages say nothing.
        assert_eq!(ecn_from_cmsg(libc::IPPROTO_IP, libc::IP_TOS, &[]), None);
        assert_eq!(ecn_from_cmsg(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, &[1, 0]), None);
        assert_eq!(ecn_from_cmsg(libc::SOL_UDP, libc::UDP_GRO, &1i32.to_ne_bytes()), None);
    }

    #[test]
    fn each_datagram_s_codepoint_is_sent_and_read_back_on_loopback() {
        // The four codepoints in runs (GSO groups a run; a change of codepoint ends it), with
        // and without GSO and GRO, over IPv4 and (where the host has it) IPv6.
        let codepoints = [Ecn::Ect1, Ecn::Ect1, Ecn::Ect1, Ecn::NotEct, Ecn::Ect0, Ecn::Ect0, Ecn::Ce, Ecn::Ect1];
        for host in ["127.0.0.1:0", "[::1]:0"] {
            for offload in [true, false] {
                let (Ok(tx), Ok(rx)) = (UdpSocket::bind(host), UdpSocket::bind(host)) else {
                    assert!(host.starts_with('['), "IPv4 loopback must bind");
                    continue;
                };
                rx.set_nonblocking(true).unwrap();
                tx.set_nonblocking(true).unwrap();
                assert!(enable_ecn_receipt(rx.as_raw_fd(), host.starts_with('[')), "{host}: IP_RECVTOS/IPV6_RECVTCLASS refused");
                if offload {
                    set_int_option(rx.as_raw_fd(), libc::SOL_UDP, libc::UDP_GRO, 1);
                }
                let to = rx.local_addr().unwrap();
                let mut q = SendQueue::default();
                let want: Vec<Vec<u8>> = (0..codepoints.len()).map(|i| datagram(i, 1000)).collect();
                for (d, &e) in want.iter().zip(&codepoints) {
                    q.push_with_ecn(d, to, e);
                }
                let mut gso = offload;
                let r = send_queue(tx.as_raw_fd(), &q, &mut gso).unwrap();
                assert_eq!((r.sent, r.dropped), (codepoints.len(), 0));
                let mut batch = RecvBatch::new(8, if offload { GRO_SLOT_BYTES } else { 2048 });
                let mut got = Vec::new();
                let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
                while got.len() < codepoints.len() && std::time::Instant::now() < until {
                    recv_batch(rx.as_raw_fd(), &mut batch).unwrap();
                    got.extend(batch.iter().map(|d| (d.data.to_vec(), d.ecn)));
                }
                let (data, ecn): (Vec<_>, Vec<_>) = got.into_iter().unzip();
                same(&data, &want).unwrap_or_else(|e| panic!("{host} offload {offload}: {e}"));
                assert_eq!(ecn, codepoints, "{host} offload {offload}");
            }
        }
    }

    #[test]
    fn a_socket_that_did_not_ask_reads_not_ect() {
        let (tx, rx) = pair();
        let to = rx.local_addr().unwrap();
        let mut q = SendQueue::default();
        q.push_with_ecn(&datagram(0, 100), to, Ecn::Ect1);
        let mut gso = false;
        send_queue(tx.as_raw_fd(), &q, &mut gso).unwrap();
        let mut batch = RecvBatch::new(4, 2048);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while batch.messages() == 0 && std::time::Instant::now() < until {
            recv_batch(rx.as_raw_fd(), &mut batch).unwrap();
        }
        assert_eq!(batch.iter().map(|d| d.ecn).collect::<Vec<_>>(), [Ecn::NotEct]);
    }

    #[test]
    fn plan_groups_runs_by_gso_rules() {
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let mut q = SendQueue::default();
        for (len, to) in [(10, a), (10, a), (5, a), (10, a), (10, b), (10, b), (20, b)] {
            q.push(&vec![0; len], to);
        }
        let mut m = Vec::new();
        plan(&q, 0, true, &mut m);
        let shape: Vec<(usize, usize)> = m.iter().map(|m| (m.first, m.count)).collect();
        // A shorter datagram ends a run; a new destination or a longer datagram starts one.
        assert_eq!(shape, [(0, 3), (3, 1), (4, 2), (6, 1)]);
        // A change of ECN codepoint ends a run too (one TOS control message per message).
        let mut by_ecn = SendQueue::default();
        for e in [Ecn::Ect1, Ecn::Ect1, Ecn::NotEct, Ecn::NotEct, Ecn::Ect1] {
            by_ecn.push_with_ecn(&[0; 10], a, e);
        }
        plan(&by_ecn, 0, true, &mut m);
        assert_eq!(m.iter().map(|m| (m.first, m.count)).collect::<Vec<_>>(), [(0, 2), (2, 2), (4, 1)]);
        plan(&q, 0, false, &mut m);
        assert_eq!(m.len(), 7);
        // GSO's limits: at most 64 segments and 65,000 bytes a message.
        let mut q = SendQueue::default();
        for _ in 0..100 {
            q.push(&[0; 1000], a);
        }
        plan(&q, 0, true, &mut m);
        assert_eq!(m.iter().map(|m| m.count).collect::<Vec<_>>(), [64, 36]);
    }
}
