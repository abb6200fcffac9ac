"""ccarena's own traffic generator for the kernel backend (stdlib only; run as a script inside a
flow's namespace: ``ip netns exec NS python3 trafficgen.py CONFIG_JSON``).

Why our own generator and not iperf3:

- **Sampling where the socket is.** The sender reads ``TCP_INFO`` with ``getsockopt`` on its own
  socket at every output interval (cwnd, ssthresh, srtt, rttvar, rto, pacing and delivery rate,
  retransmits, bytes sent/acked, CA state): no ``ss`` fork per flow per interval (~4.4 ms each),
  no matching of iperf3's control connection by port.
- **The receiver's goodput at the same instants.** Both ends sample at ``t0 + k·interval`` on the
  shared ``CLOCK_MONOTONIC``, so the sample table is the simulator's: goodput counted by the
  receiving application, throughput by the sender's stack.
- **The scenario's semantics exactly**: start/stop times, finite ``bytes`` transfers with the
  completion time (all bytes acknowledged: the socket's send queue empty), per-flow
  ``TCP_CONGESTION`` and ``TCP_MAXSEG``, UDP CBR with a sequence number in every datagram (loss
  counted per packet).
- **No iperf3 failure modes** (a leftover server "busy running a test", JSON without
  ``end.sum_sent``): every process is ours, started fresh per flow, stopped by its pid, and it
  exits when ccarena dies (``PR_SET_PDEATHSIG``).

Roles (``config["role"]``): ``tcp-recv`` / ``udp-recv`` bind, print ``ready`` and count what the
application receives; ``tcp-send`` connects as soon as it starts (before ``t0``: the handshake
is not part of the flow, as in the simulator; an MPTCP sender 200 ms before its start,
:data:`MPTCP_CONNECT_LEAD_NS`) and ``udp-send`` at once too; both send from
``start_ns`` until ``stop_ns``, the byte count or the end of the run. Every role writes one JSON object to
``config["out"]`` at its end: ``{"ok": true, "samples": [...], "totals": {...}}`` or
``{"ok": false, "error": "<one line>"}``. Times in the config are nanoseconds relative to
``t0_mono_ns`` (a ``CLOCK_MONOTONIC`` reading chosen by the parent).

A flow with ``config["mptcp"]`` is a Multipath TCP connection (RFC 8684): both ends open
``IPPROTO_MPTCP`` sockets (the listener too), ``TCP_CONGESTION`` on the MPTCP socket names every
subflow's controller (Linux copies it to each subflow, joins included), and the path manager
(set up by :mod:`ccarena.backends.kernel.mptcp`) opens the subflows. At every sample instant the
sender reads ``MPTCP_FULL_INFO`` (each subflow's id, addresses and TCP_INFO; Linux >= 6.5): its
sample sums the subflows as the simulator's MPTCP rows do (:func:`mptcp_sample`) and carries one
row per subflow; both ends' totals sum every subflow they had (:class:`SubflowBook`).

Senders also measure their own CPU cost (:class:`CpuMeter`, seed 001's Table 1): the process's
user + system time (``getrusage(RUSAGE_SELF)``; one process per flow) over the flow's sending
interval, and the CPU clock, in ``result["cpu"]``.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time

PR_SET_PDEATHSIG = 1
SIOCOUTQ = 0x5411  # TIOCOUTQ: bytes in the send queue, not yet acknowledged (unsent + unacked)
TCP_INFO_FORMAT = "=8B24I4Q6I4Q2I2Q6I2HI7I2H"
"""struct tcp_info (include/uapi/linux/tcp.h) up to tcpi_accecn_opt_seen (Linux 6.18: the
Accurate ECN counters after tcpi_total_rto_time, Linux 6.7); an older kernel returns fewer bytes
and :func:`_parse_tcp_info` leaves its missing fields out."""
TCP_INFO_FIELDS = (
    "state", "ca_state", "retransmits", "probes", "backoff", "options", "wscale", "flags",
    "rto", "ato", "snd_mss", "rcv_mss", "unacked", "sacked", "lost", "retrans", "fackets",
    "last_data_sent", "last_ack_sent", "last_data_recv", "last_ack_recv", "pmtu",
    "rcv_ssthresh", "rtt", "rttvar", "snd_ssthresh", "snd_cwnd", "advmss", "reordering",
    "rcv_rtt", "rcv_space", "total_retrans",
    "pacing_rate", "max_pacing_rate", "bytes_acked", "bytes_received",
    "segs_out", "segs_in", "notsent_bytes", "min_rtt", "data_segs_in", "data_segs_out",
    "delivery_rate", "busy_time", "rwnd_limited", "sndbuf_limited",
    "delivered", "delivered_ce", "bytes_sent", "bytes_retrans",
    "dsack_dups", "reord_seen", "rcv_ooopack", "snd_wnd", "rcv_wnd", "rehash",
    "total_rto", "total_rto_recoveries", "total_rto_time",
    "received_ce", "delivered_e1_bytes", "delivered_e0_bytes", "delivered_ce_bytes",
    "received_e1_bytes", "received_e0_bytes", "received_ce_bytes",
    "accecn_fail_mode", "accecn_opt_seen",
)
TCP_INFO_SIZE = struct.calcsize(TCP_INFO_FORMAT)
INFINITE_SSTHRESH = 0x7FFFFFFF
CHUNK = 1 << 16
DEFAULT_PAYLOAD_MSS = 1448  # what Linux uses on a 1500-byte MTU with timestamps
TIMESTAMP_OPTION_BYTES = 12
SO_RCVBUFFORCE = 33  # <asm-generic/socket.h>; Python's socket module does not name it
SO_SNDBUFFORCE = 32
UDP_RCVBUF_BYTES = 4 << 20
GRACE_NS = 2_000_000_000  # after the run's end: time for in-flight data to drain


class Stop(Exception):
    """SIGTERM/SIGINT: end now, write what was measured."""


def _on_signal(signum, frame):  # noqa: ARG001
    raise Stop()


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGKILL this process when ccarena (its parent) dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def now_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def sleep_until(t_ns: int) -> None:
    while True:
        left = t_ns - now_ns()
        if left <= 0:
            return
        time.sleep(min(left / 1e9, 0.5))


def tcp_info(sock: socket.socket) -> dict:
    """TCP_INFO as a dict (fields the running kernel does not fill are absent)."""
    return _parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_SIZE))


def _parse_tcp_info(raw: bytes) -> dict:
    values = struct.unpack(TCP_INFO_FORMAT, raw.ljust(TCP_INFO_SIZE, b"\0"))
    info = dict(zip(TCP_INFO_FIELDS, values))
    # Fields past what the kernel returned are zero padding, not measurements.
    size = 0
    for name, code in zip(TCP_INFO_FIELDS, _field_codes()):
        size += struct.calcsize("=" + code)
        if size > len(raw):
            info.pop(name, None)
    return info


def _field_codes() -> list[str]:
    out = []
    for count, code in _split_format(TCP_INFO_FORMAT[1:]):
        out += [code] * count
    return out


def _split_format(fmt: str):
    num = ""
    for ch in fmt:
        if ch.isdigit():
            num += ch
        else:
            yield int(num or "1"), ch
            num = ""


def outq_bytes(sock: socket.socket) -> int:
    """Bytes written by the application and not yet acknowledged."""
    buf = fcntl.ioctl(sock.fileno(), SIOCOUTQ, b"\0\0\0\0")
    return struct.unpack("i", buf)[0]


def sender_sample(info: dict) -> dict:
    """One sample's TCP state: sizes in bytes, times in seconds, rates in bit/s."""
    mss = info["snd_mss"] or 1
    ssthresh = info["snd_ssthresh"]
    inflight = info["unacked"] - (info["sacked"] + info["lost"]) + info["retrans"]
    return {
        "sent_bytes": info.get("bytes_sent"),
        "acked_bytes": info.get("bytes_acked"),
        "cwnd_bytes": info["snd_cwnd"] * mss,
        "ssthresh_bytes": None if ssthresh >= INFINITE_SSTHRESH else ssthresh * mss,
        "srtt_s": info["rtt"] / 1e6 if info["rtt"] else None,
        "rttvar_s": info["rttvar"] / 1e6 if info["rtt"] else None,
        "rto_s": info["rto"] / 1e6,
        "inflight_bytes": max(inflight, 0) * mss,
        "pacing_rate_bps": info["pacing_rate"] * 8 if info["pacing_rate"] < (1 << 63) else None,
        "delivery_rate_bps": info.get("delivery_rate", 0) * 8,
        "retransmits": info["total_retrans"],
        "ca_state": info["ca_state"],
        "min_rtt_s": info["min_rtt"] / 1e6 if info.get("min_rtt") not in (None, 0, 0xFFFFFFFF) else None,
    }


def totals_from(info: dict) -> dict:
    keep = ("bytes_sent", "bytes_retrans", "bytes_acked", "bytes_received", "data_segs_out",
            "data_segs_in", "total_retrans", "total_rto", "min_rtt", "snd_mss", "rcv_mss",
            "dsack_dups", "received_ce", "received_ce_bytes")
    return {k: info[k] for k in keep if k in info}


# ----------------------------------------------------------------------------- MPTCP

IPPROTO_MPTCP = 262  # <linux/in.h>
SOL_MPTCP = 284  # <linux/socket.h>
MPTCP_INFO = 1
MPTCP_FULL_INFO = 4  # <linux/mptcp.h>, Linux >= 6.5
MPTCP_INFO_FORMAT = "@6BIIQQQ3BIQQQQB3xIII"
"""struct mptcp_info (include/uapi/linux/mptcp.h), natural alignment: 96 bytes."""
MPTCP_INFO_FIELDS = (
    "subflows", "add_addr_signal", "add_addr_accepted", "subflows_max", "add_addr_signal_max",
    "add_addr_accepted_max", "flags", "token", "write_seq", "snd_una", "rcv_nxt",
    "local_addr_used", "local_addr_max", "csum_enabled", "retransmits", "bytes_retrans",
    "bytes_sent", "bytes_received", "bytes_acked", "subflows_total", "last_data_sent",
    "last_data_recv", "last_ack_recv",
)
MPTCP_INFO_SIZE = struct.calcsize(MPTCP_INFO_FORMAT)
FULL_INFO_HEAD = struct.Struct("@6I2Q")
"""struct mptcp_full_info up to its mptcp_info: the four sizes, num_subflows, size_arrays_user,
and the user pointers subflow_info and tcp_info."""
SUBFLOW_INFO_SIZE = 8 + 2 * 128
"""struct mptcp_subflow_info: __u32 id, then struct mptcp_subflow_addrs (two
__kernel_sockaddr_storage, 8-byte aligned)."""
MAX_SUBFLOWS_READ = 16


def mptcp_full_info(sock: socket.socket) -> tuple[dict, list[dict]]:
    """``getsockopt(SOL_MPTCP, MPTCP_FULL_INFO)``: the connection's ``mptcp_info`` and, per live
    subflow, ``{"id", "local", "remote", "info"}`` (``info`` as :func:`tcp_info`; ``id`` is the
    kernel's subflow id, 1 for the initial subflow and counting up, stable for the subflow's
    life). Python's ``socket.getsockopt`` cannot pass the request's sizes and buffer pointers in,
    so this calls libc's.

    Raises:
        OSError: the kernel refused (a connection that fell back to TCP, or a kernel < 6.5).
    """
    n = MAX_SUBFLOWS_READ
    sf_buf = ctypes.create_string_buffer(n * SUBFLOW_INFO_SIZE)
    ti_buf = ctypes.create_string_buffer(n * TCP_INFO_SIZE)
    req = ctypes.create_string_buffer(FULL_INFO_HEAD.size + MPTCP_INFO_SIZE)
    FULL_INFO_HEAD.pack_into(req, 0, 0, TCP_INFO_SIZE, 0, SUBFLOW_INFO_SIZE, 0, n,
                             ctypes.addressof(sf_buf), ctypes.addressof(ti_buf))
    size = ctypes.c_uint32(len(req))
    if _libc().getsockopt(sock.fileno(), SOL_MPTCP, MPTCP_FULL_INFO, req, ctypes.byref(size)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    head = FULL_INFO_HEAD.unpack_from(req, 0)
    ti_kernel, sf_kernel, count = head[0], head[2], head[4]
    raw_info = bytes(req)[FULL_INFO_HEAD.size:]
    conn = dict(zip(MPTCP_INFO_FIELDS, struct.unpack(MPTCP_INFO_FORMAT, raw_info[:MPTCP_INFO_SIZE])))
    subflows = []
    ti_len = min(ti_kernel, TCP_INFO_SIZE)
    for k in range(min(count, n)):
        sf = sf_buf.raw[k * SUBFLOW_INFO_SIZE:(k + 1) * SUBFLOW_INFO_SIZE] if sf_kernel else b""
        raw = ti_buf.raw[k * TCP_INFO_SIZE:k * TCP_INFO_SIZE + ti_len]
        subflows.append({"id": struct.unpack_from("I", sf, 0)[0] if sf else k + 1,
                         "local": _sockaddr(sf[8:136]) if sf else None,
                         "remote": _sockaddr(sf[136:264]) if sf else None,
                         "info": _parse_tcp_info(raw)})
    return conn, subflows


_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _sockaddr(raw: bytes) -> str | None:
    """``IP:port`` of a sockaddr_in (None for other families)."""
    if len(raw) >= 8 and struct.unpack_from("H", raw, 0)[0] == socket.AF_INET:
        port = struct.unpack_from("!H", raw, 2)[0]
        return f"{socket.inet_ntoa(raw[4:8])}:{port}"
    return None


class SubflowBook:
    """Every subflow an MPTCP socket has had: the last totals read of each (a closed subflow
    leaves the kernel's list, not the connection's counts) and its addresses."""

    def __init__(self) -> None:
        self.totals: dict[int, dict] = {}
        self.addrs: dict[int, tuple] = {}
        self.conn: dict = {}
        self.fallback = False

    def read(self, sock: socket.socket) -> list[dict]:
        """Read the socket's subflows now; returns them (as :func:`mptcp_full_info`). A
        connection that fell back to TCP reads as one subflow (id 1) from ``TCP_INFO``."""
        try:
            self.conn, subflows = mptcp_full_info(sock)
        except OSError:
            subflows = []
        if not subflows:
            self.fallback = True
            subflows = [{"id": 1, "local": None, "remote": None, "info": tcp_info(sock)}]
        for sf in subflows:
            self.totals[sf["id"]] = totals_from(sf["info"])
            self.addrs[sf["id"]] = (sf["local"], sf["remote"])
        return subflows

    def summed(self) -> dict:
        """The connection's totals: every subflow's counts summed, the smallest min_rtt, the first
        subflow's MSS."""
        out: dict = {}
        for sid in sorted(self.totals):
            for k, v in self.totals[sid].items():
                if k in ("min_rtt",):
                    if v not in (0, 0xFFFFFFFF):
                        out[k] = min(out.get(k, v), v)
                elif k in ("snd_mss", "rcv_mss"):
                    out.setdefault(k, v)
                else:
                    out[k] = out.get(k, 0) + v
        return out

    def report(self) -> dict:
        """What the result keeps: the subflows seen (id → local, remote addresses), the count,
        the connection-level counters of Linux (``bytes_retrans`` = data reinjected)."""
        return {"subflows_seen": len(self.totals), "fallback": self.fallback,
                "addresses": {str(k): list(v) for k, v in sorted(self.addrs.items())},
                "conn": {k: self.conn.get(k) for k in ("bytes_retrans", "retransmits", "bytes_sent",
                                                       "bytes_acked", "bytes_received",
                                                       "subflows_total")}}


def mptcp_sample(subflows: list[dict]) -> tuple[dict, list[dict]]:
    """One sample of an MPTCP sender as the simulator takes it: the connection row (windows,
    flight, bytes sent and retransmissions summed over the live subflows; the smallest smoothed
    RTT, the one Linux's default scheduler prefers; the first subflow's rttvar, RTO and CA state)
    and one row per subflow (``delivered_bytes`` = the subflow's ``tcpi_bytes_acked`` less the
    SYN's count, the subflow-level bytes the receiver has in order)."""
    ordered = sorted(subflows, key=lambda sf: sf["id"])
    each = [sender_sample(sf["info"]) for sf in ordered]
    rows = []
    for sf, s in zip(ordered, each):
        acked = sf["info"].get("bytes_acked")
        rows.append({"subflow": sf["id"] - 1, "delivered_bytes": None if acked is None else max(acked - 1, 0),
                     "sent_bytes": s["sent_bytes"], "cwnd_bytes": s["cwnd_bytes"], "srtt_s": s["srtt_s"],
                     "inflight_bytes": s["inflight_bytes"], "retransmits": s["retransmits"],
                     "rto_count": sf["info"].get("total_rto")})
    srtts = [r["srtt_s"] for r in rows if r["srtt_s"]]
    conn = dict(each[0])
    for key in ("sent_bytes", "acked_bytes", "cwnd_bytes", "inflight_bytes", "retransmits"):
        values = [s[key] for s in each]
        conn[key] = None if any(v is None for v in values) else sum(values)
    conn["srtt_s"] = min(srtts) if srtts else None
    conn["ssthresh_bytes"] = None
    conn["pacing_rate_bps"] = None
    return conn, rows


class Clock:
    """Sample instants t0 + k·interval (k ≥ 1, at or after the flow's start)."""

    def __init__(self, cfg: dict) -> None:
        self.t0 = cfg["t0_mono_ns"]
        self.interval = cfg["interval_ns"]
        self.end = self.t0 + cfg["duration_ns"]
        start = cfg.get("start_ns", 0)
        self.k = max(1, -(-start // self.interval))

    def next_ns(self) -> int:
        return self.t0 + self.k * self.interval

    def due(self, t: int) -> bool:
        return self.k * self.interval <= self.end - self.t0 and t >= self.next_ns()

    def take(self) -> float:
        time_s = self.k * self.interval / 1e9
        self.k += 1
        return time_s


# ----------------------------------------------------------------------------- CPU cost

def process_cpu_s() -> tuple[float, float]:
    """This process's (user, system) CPU time so far, seconds. System time includes the kernel's
    transmit path run in this process's system calls and any softirq work that happened to run
    in its context; softirq work run in other contexts (ksoftirqd, the peer's process, the relay)
    is not in it."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime, ru.ru_stime


def cpu_mhz_now() -> float | None:
    """The CPU clock now, MHz: the mean over CPUs of cpufreq's ``scaling_cur_freq`` where the
    kernel has cpufreq, else of ``/proc/cpuinfo``'s "cpu MHz" lines; None if neither is there."""
    khz = []
    cpu = 0
    while os.path.isdir(f"/sys/devices/system/cpu/cpu{cpu}"):
        try:
            with open(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq") as f:
                khz.append(float(f.read().strip()))
        except (OSError, ValueError):
            pass
        cpu += 1
    if khz:
        return sum(khz) / len(khz) / 1e3
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(line.split(":", 1)[1]) for line in f if line.startswith("cpu MHz")]
    except (OSError, ValueError):
        return None
    return sum(mhz) / len(mhz) if mhz else None


class CpuMeter:
    """The sender's CPU time and the CPU clock over its sending interval: :meth:`begin` where the
    flow starts, :meth:`end` (first call counts) where it ends — its stop time, the completion of a
    finite transfer, or the end of the run."""

    def __init__(self) -> None:
        self.t0 = self.cpu0 = self.mhz0 = None
        self.result: dict | None = None

    def begin(self) -> None:
        self.mhz0 = cpu_mhz_now()
        self.t0, self.cpu0 = now_ns(), process_cpu_s()

    def end(self) -> None:
        if self.result is not None or self.t0 is None:
            return
        t, (user, system) = now_ns(), process_cpu_s()
        mhz1 = cpu_mhz_now()
        readings = [m for m in (self.mhz0, mhz1) if m is not None]
        self.result = {"user_s": user - self.cpu0[0], "system_s": system - self.cpu0[1],
                       "cpu_s": (user - self.cpu0[0]) + (system - self.cpu0[1]),
                       "wall_s": (t - self.t0) / 1e9,
                       "mhz": sum(readings) / len(readings) if readings else None}


# ----------------------------------------------------------------------------- TCP

def set_buffer(sock: socket.socket, force: int, option: int, size_bytes: int | None) -> None:
    """Fix a socket buffer at ``size_bytes`` as iperf's ``-w`` does (it turns off Linux's
    autotuning of that buffer); None leaves Linux's defaults and autotuning. FORCE (root, which the
    backend has) is not capped by net.core.rmem_max / wmem_max."""
    if size_bytes is None:
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, force, int(size_bytes))
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, option, int(size_bytes))


CONNECT_TIMEOUT_S = 5.0
"""How long past the flow's start a sender waits for its connection before it gives up."""

MPTCP_CONNECT_LEAD_NS = 200_000_000
"""How long before its start an MPTCP sender connects (a TCP sender connects as soon as it is
launched, up to seconds earlier).

Why not earlier: an MPTCP connection that sat idle between its handshake and its data can keep
its first receive window for seconds. Measured (Linux 6.18.44, ``ss -tinM`` in the receiver's
namespace):

- The receiver's first RTT sample is the idle time: its first data segment echoes the SYN-ACK's
  timestamp. 2,708 ms on a dumbbell after 2.7 s idle; the next sample replaced it.
- On a k = 4 fat-tree at 10 Mbit/s (16 connections of 4 subflows, launched 0.5–5.3 s before
  ``t0``), every subflow's ``rcv_space`` stayed at 14,480 bytes for ~3.7 s (in another run, for
  all 6 s), every sender saw a window of at most 80,896 bytes: 83.7, 85.2 and 88.7 Mbit/s in all
  (the simulator: 123.0). Connected 0.05, 0.1, 0.2 or 0.3 s before ``t0``: 114, 114, 119.1 and
  112.
- Where the connection-level autotuning (``mptcp_rcv_space_adjust``, net/mptcp/protocol.c: it
  measures once per RTT, the largest of the subflows' receiver RTTs, and keeps the RTT of its
  last measurement until the next) takes the idle time in was not traced: this kernel has no
  kprobes. A TCP connection re-reads its own estimate at every measurement and was not seen to
  stall.

So TCP keeps the early handshake (a SYN that a busy queue drops then costs the flow nothing), and
MPTCP connects shortly before its start. 200 ms covers the handshake and the path manager's joins
on paths of up to ~40 ms RTT; on longer ones the last joins come after the data starts, as they
do for an application that sends once connected."""


def tcp_send(cfg: dict) -> dict:
    clock = Clock(cfg)
    t0 = cfg["t0_mono_ns"]
    start, stop = t0 + cfg["start_ns"], t0 + (cfg["stop_ns"] if cfg["stop_ns"] is not None
                                             else cfg["duration_ns"])
    limit = cfg["bytes"]
    # An MPTCP flow: IPPROTO_MPTCP; TCP_CONGESTION below then names every subflow's controller
    # (Linux copies it to the subflows it opens, joins included: net/mptcp/sockopt.c).
    book = SubflowBook() if cfg.get("mptcp") else None
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP if book else 0)
    set_buffer(sock, SO_SNDBUFFORCE, socket.SO_SNDBUF, cfg.get("sndbuf_bytes"))
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cfg["flavor"].encode())
    except OSError as err:
        return {"ok": False, "error": f"TCP_CONGESTION {cfg['flavor']!r}: {err.strerror}"}
    if cfg.get("mss_bytes") and int(cfg["mss_bytes"]) != DEFAULT_PAYLOAD_MSS:
        # TCP_MAXSEG is the MSS option; the payload per segment is 12 bytes less (timestamps).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, int(cfg["mss_bytes"]) + TIMESTAMP_OPTION_BYTES)
    sock.bind((cfg["bind"], 0))
    # The handshake happens before t0, as the udp backend's senders do and as the simulator (which
    # has none) assumes: a SYN dropped at a queue another flow has filled would otherwise hold this
    # flow back by Linux's 1 s initial RTO (RFC 6298 §2.1) — seen in 2 of 17 calibration pairs.
    # An MPTCP connection, shortly before its start (MPTCP_CONNECT_LEAD_NS says why).
    if book is not None:
        sleep_until(start - MPTCP_CONNECT_LEAD_NS)
    sock.settimeout(max(0.0, (start - now_ns()) / 1e9) + CONNECT_TIMEOUT_S)
    try:
        sock.connect((cfg["peer"], cfg["port"]))
    except OSError as err:
        return {"ok": False, "error": f"connect to {cfg['peer']}:{cfg['port']}: {err.strerror or err}"}
    connected_s = (now_ns() - t0) / 1e9
    sleep_until(start)
    meter = CpuMeter()
    meter.begin()
    sock.setblocking(False)
    payload = memoryview(bytes(CHUNK))
    offered = 0
    writing = True
    completion_ns = None
    samples = []
    at_end = None
    poller = select.poll()
    poller.register(sock, select.POLLOUT)
    try:
        while True:
            t = now_ns()
            if t >= stop or completion_ns is not None:
                meter.end()  # the flow's sending interval is over (its CPU, not the sampling after)
            if clock.due(t):
                if book is None:
                    s = sender_sample(tcp_info(sock))
                else:
                    s, rows = mptcp_sample(book.read(sock))
                    s["subflows"] = rows
                s["time_s"] = clock.take()
                s["offered_bytes"] = offered
                samples.append(s)
                continue
            if t >= clock.end:
                meter.end()
                break
            if writing and (t >= stop or (limit is not None and offered >= limit)):
                writing = False
            if not writing and limit is not None and completion_ns is None \
                    and offered >= limit and outq_bytes(sock) == 0:
                completion_ns = t - start
            wake = min(clock.next_ns(), clock.end)
            if writing:
                events = poller.poll(max(0, (wake - t) / 1e6))
                if events:
                    want = CHUNK if limit is None else min(CHUNK, limit - offered)
                    try:
                        offered += sock.send(payload[:want])
                    except BlockingIOError:
                        pass
            else:
                # Waiting for the completion of a finite transfer: poll the queue every 1 ms.
                step = 1_000_000 if (limit is not None and completion_ns is None) else wake - t
                time.sleep(max(0, min(step, wake - t)) / 1e9)
        at_end = _totals(sock, book)
        at_end["offered_bytes"] = offered
        sock.shutdown(socket.SHUT_WR)
        deadline = now_ns() + GRACE_NS
        while outq_bytes(sock) > 0 and now_ns() < deadline:
            time.sleep(0.002)
    except Stop:
        pass
    meter.end()
    drained = _totals(sock, book)
    sock.close()
    return {"ok": True, "samples": samples, "at_end": at_end, "drained": drained,
            "offered_bytes": offered, "cpu": meter.result, "connected_s": connected_s,
            "completion_time_s": None if completion_ns is None else completion_ns / 1e9,
            **({"mptcp": book.report()} if book is not None else {})}


def tcp_recv(cfg: dict) -> dict:
    clock = Clock(cfg)
    book = SubflowBook() if cfg.get("mptcp") else None
    # MPTCP: the listener too is IPPROTO_MPTCP (a plain TCP listener answers MP_CAPABLE SYNs as
    # plain TCP; the MP_JOINs reach the accepted MPTCP socket).
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP if book else 0)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Before listen(): the accepted socket inherits it and the window scale is chosen from it.
    set_buffer(srv, SO_RCVBUFFORCE, socket.SO_RCVBUF, cfg.get("rwnd_bytes"))
    try:
        srv.bind((cfg["bind"], cfg["port"]))
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            return {"ok": False, "error": f"port {cfg['port']} on {cfg['bind']} is in use"}
        return {"ok": False, "error": f"bind {cfg['bind']}:{cfg['port']}: {err.strerror}"}
    srv.listen(1)
    print("ready", flush=True)
    samples = []
    received = 0
    at_end_bytes = None
    conn = None
    buf = bytearray(1 << 18)
    poller = select.poll()
    poller.register(srv, select.POLLIN)
    hard_end = clock.end + GRACE_NS + 1_000_000_000
    eof = False
    info_final = {}
    try:
        while True:
            t = now_ns()
            if clock.due(t):
                samples.append({"time_s": clock.take(), "delivered_bytes": received})
                if book is not None and conn is not None and not eof:
                    book.read(conn)  # keeps the counts of subflows that close before the end
                continue
            if t >= clock.end and at_end_bytes is None:
                at_end_bytes = received
            if (eof or conn is None) and t >= clock.end:
                break
            if t >= hard_end:
                break
            wake = min(clock.next_ns(), clock.end) if t < clock.end else hard_end
            events = poller.poll(max(0, (wake - t) / 1e6))
            for fd, _ in events:
                if conn is None and fd == srv.fileno():
                    conn, _ = srv.accept()
                    conn.setblocking(False)
                    poller.unregister(srv)
                    poller.register(conn, select.POLLIN)
                elif conn is not None:
                    try:
                        n = conn.recv_into(buf)
                    except BlockingIOError:
                        continue
                    except ConnectionResetError:
                        n = 0
                    if n == 0:
                        eof = True
                        info_final = _totals(conn, book)
                        poller.unregister(conn)
                    else:
                        received += n
    except Stop:
        pass
    if conn is not None and not info_final:
        info_final = _totals(conn, book)
    return {"ok": True, "samples": samples, "received_bytes": received,
            "at_end_bytes": received if at_end_bytes is None else at_end_bytes,
            "drained": info_final, "connected": conn is not None,
            **({"mptcp": book.report()} if book is not None else {})}


def _totals(conn: socket.socket, book: SubflowBook | None) -> dict:
    """A connection's totals now: TCP_INFO, or an MPTCP connection's subflows summed (those
    closed already at their last reading)."""
    if book is None:
        return totals_from(tcp_info(conn))
    book.read(conn)
    return book.summed()


# ----------------------------------------------------------------------------- UDP CBR

HEADER = struct.Struct("!QQ")  # sequence number, send time (ns)
MAX_CATCH_UP_NS = 5_000_000
"""A sender that wakes late sends at once only the datagrams due in the last 5 ms; older ones
are skipped (counted, not sent). A machine that stalled the sender for 300 ms would otherwise
fire 300 ms of datagrams at line rate into the link's queue — drops the scenario never asked for
(seen: 574 drops of a 1000-packet queue at 8 Mbit/s of 200-byte datagrams)."""


def due_slots(next_slot: int, t: int, start: int, period_ns: float, stop: int) -> tuple[int, int]:
    """CBR slots at time ``t``: ``(first, end)`` — slots ``next_slot .. first-1`` are skipped
    (due more than :data:`MAX_CATCH_UP_NS` ago), ``first .. end-1`` are sent now. Slot ``k`` is
    due at ``start + k·period_ns``; none is due at or after ``stop``."""
    first = next_slot
    while start + first * period_ns < min(t - MAX_CATCH_UP_NS, stop):
        first += 1
    end = first
    while start + end * period_ns <= t and start + end * period_ns < stop:
        end += 1
    return first, end


def udp_send(cfg: dict) -> dict:
    clock = Clock(cfg)
    t0 = cfg["t0_mono_ns"]
    start = t0 + cfg["start_ns"]
    stop = t0 + (cfg["stop_ns"] if cfg["stop_ns"] is not None else cfg["duration_ns"])
    size = int(cfg["packet_bytes"])
    period_ns = size * 8 * 1_000_000_000 / cfg["rate_bps"]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((cfg["bind"], 0))
    sock.connect((cfg["peer"], cfg["port"]))
    pad = bytes(max(0, size - HEADER.size))
    sent = errors = skipped = 0
    samples = []
    meter = CpuMeter()
    try:
        sleep_until(start)
        meter.begin()
        while True:
            t = now_ns()
            if t >= stop:
                meter.end()
            if clock.due(t):
                samples.append({"time_s": clock.take(), "sent_bytes": sent * size, "sent_packets": sent})
                continue
            if t >= clock.end:
                break
            # Send every datagram whose time has come; after a late wake-up, only those of the
            # last MAX_CATCH_UP_NS (sequence numbers still count every slot, so the receiver's
            # loss count is per slot sent).
            first, end = due_slots(sent + skipped, t, start, period_ns, stop)
            skipped += first - (sent + skipped)
            for slot in range(first, end):
                try:
                    sock.send(HEADER.pack(slot, t) + pad)
                except OSError:  # ENOBUFS from a full qdisc: the datagram is lost at the sender
                    errors += 1
                sent += 1
            nxt = start + end * period_ns
            wake = min(clock.next_ns(), clock.end, nxt if nxt < stop else clock.end)
            sleep_until(int(wake))
    except Stop:
        pass
    meter.end()
    sock.close()
    return {"ok": True, "samples": samples, "sent_packets": sent, "send_errors": errors,
            "skipped_packets": skipped, "packet_bytes": size, "cpu": meter.result}


def udp_recv(cfg: dict) -> dict:
    clock = Clock(cfg)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # 4 MiB: a second of a fast CBR stream, so a receiver descheduled for a while (a busy machine,
    # a hypervisor's pause) loses nothing the link did not. FORCE (root, which the backend has)
    # is not capped by net.core.rmem_max (212 KiB by default: ~300 small datagrams).
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, UDP_RCVBUF_BYTES)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UDP_RCVBUF_BYTES)
    try:
        sock.bind((cfg["bind"], cfg["port"]))
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            return {"ok": False, "error": f"port {cfg['port']} on {cfg['bind']} is in use"}
        return {"ok": False, "error": f"bind {cfg['bind']}:{cfg['port']}: {err.strerror}"}
    sock.setblocking(False)
    print("ready", flush=True)
    received = packets = dups = 0
    seen_max = -1
    seen = set()
    at_end = None
    samples = []
    hard_end = clock.end + 500_000_000  # datagrams still in flight at the end
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    try:
        while True:
            t = now_ns()
            if clock.due(t):
                samples.append({"time_s": clock.take(), "delivered_bytes": received,
                                "received_packets": packets})
                continue
            if t >= clock.end and at_end is None:
                at_end = (received, packets)
            if t >= hard_end:
                break
            wake = min(clock.next_ns(), clock.end) if t < clock.end else hard_end
            if poller.poll(max(0, (wake - t) / 1e6)):
                while True:
                    try:
                        data = sock.recv(65536)
                    except BlockingIOError:
                        break
                    seq, _sent_ns = HEADER.unpack_from(data)
                    if seq in seen:
                        dups += 1
                        continue
                    seen.add(seq)
                    seen_max = max(seen_max, seq)
                    received += len(data)
                    packets += 1
    except Stop:
        pass
    sock.close()
    at_end = at_end or (received, packets)
    return {"ok": True, "samples": samples, "received_packets": packets, "received_bytes": received,
            "at_end_bytes": at_end[0], "at_end_packets": at_end[1], "duplicates": dups}


ROLES = {"tcp-send": tcp_send, "tcp-recv": tcp_recv, "udp-send": udp_send, "udp-recv": udp_recv}


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[1])
    die_with_parent(int(cfg["parent_pid"]))
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    return measure_and_report(cfg, lambda: ROLES[cfg["role"]](cfg))


def measure_and_report(cfg: dict, measure) -> int:
    """Run ``measure()`` and write its result (or ``{"ok": false, "error": "<one line>"}``) to
    ``cfg["out"]`` atomically; the process's exit status (0 when ok). Shared by the udp backend's
    endpoint (:mod:`ccarena.backends.udp.endpoint`)."""
    try:
        result = measure()
    except Stop:
        result = {"ok": False, "error": "stopped before it could measure"}
    except Exception as err:  # reported to the parent as one line, never a made-up number
        result = {"ok": False, "error": f"{type(err).__name__}: {err}"}
    tmp = cfg["out"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, cfg["out"])
    if not result.get("ok"):
        print(result.get("error", "failed"), file=sys.stderr, flush=True)
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
