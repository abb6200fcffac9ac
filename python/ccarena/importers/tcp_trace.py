"""Per-connection TCP analysis of a packet capture, packet by packet, in bounded memory: what a
sender did and what its receiver acknowledged, binned into fixed intervals.

Fed one TCP header at a time (:meth:`TcpTrace.add`, in capture order), it keeps per connection
and direction only counters, one bin per interval that saw a packet, and the segments or
timestamps still in flight; so memory grows with connections × intervals, not with packets.

What it measures, for the direction of a connection that carries data (the flow; the reverse
direction carries its ACKs):

- **sent**: payload bytes of every data segment (retransmissions included), its length taken
  from the IP header (IPv4 total length, IPv6 payload length) less the IP and TCP headers, so a
  capture limited to the headers (a snap length) counts what was on the wire;
- **retransmissions**: a data segment starting below the highest sequence number sent so far
  (tcptrace's rule, https://github.com/blitz/tcptrace, ``tcptrace -l`` "rexmt data pkts"); its
  bytes below that point are the retransmitted bytes;
- **acknowledged** (goodput): the advance of the highest cumulative ACK of the reverse direction;
- **bytes in flight**: highest sequence number sent − highest cumulative ACK, after each packet;
  an estimate of the congestion window (cwnd) when the sender is cwnd-limited;
- **RTT**: one sample per ACK that advances the cumulative ACK, as Linux takes them
  (``tcp_ack_update_rtt`` in net/ipv4/tcp_input.c): the time since the last segment it newly
  covers was sent, unless it covers retransmitted data (Karn's rule, RFC 6298 §3); then, when
  the data carries TCP timestamps, the time since the segment whose TSval the ACK's TSecr echoes
  was first sent (RFC 7323 §4.1: unambiguous), else no sample. Smoothed per RFC 6298 §2 (srtt,
  rttvar);
- **ECN**: data segments marked CE (RFC 3168 §5) and ACKs with ECE set.

Sequence numbers are unwrapped from 32 bits (RFC 9293 §3.4 arithmetic mod 2³²). At a capture
point other than the sender (a bottleneck), the RTT is that from the capture point on, and
segments lost before it show as retransmissions of data never seen there.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Optional

_MOD = 1 << 32
_HALF = 1 << 31
TH_SYN, TH_ACK, TH_ECE = 0x02, 0x10, 0x40

RTT_BIN_RATIO = 1.01
"""The RTT histogram's bin width (quantiles within 1%): log-spaced bins from 1 µs."""
_LOG_RATIO = math.log(RTT_BIN_RATIO)
_MAX_IN_FLIGHT_RECORDS = 1 << 20
"""At most this many unacknowledged segments (or timestamps) are kept per direction: a bound on
memory if ACKs are never seen; the oldest go first."""


class _Bin:
    """One interval of one direction: bytes sent, bytes newly acknowledged, retransmitted packets,
    and the bytes in flight, srtt and rttvar at its last packet."""

    __slots__ = ("sent", "acked", "retx", "inflight", "srtt", "rttvar")

    def __init__(self) -> None:
        self.sent = 0
        self.acked = 0
        self.retx = 0
        self.inflight: Optional[int] = None
        self.srtt: Optional[float] = None
        self.rttvar: Optional[float] = None


class Direction:
    """One direction of a connection: its data (sent by its source) and the ACKs of it (carried
    by the reverse direction's packets). Sequence numbers are unwrapped relative to the first one
    seen; all byte counts are payload bytes.

    Attributes:
        first_t, last_t: the first and last packet of this direction (s from the trace's start).
        packets, payload_bytes: data segments sent and their payload (bytes, retransmissions
            included); retx_packets, retx_bytes: those retransmitted.
        mss_bytes: the largest payload seen; ce_packets: data segments marked CE.
        acks_seen: ACKs of this data seen (from the reverse direction); ece_acks: those with ECE.
        acked_bytes: the cumulative ACK's total advance (bytes).
        rtt_*: RTT samples: count, sum (s), min (s), and a log-spaced histogram (bin → count).
        srtt_s, rttvar_s: RFC 6298 §2's smoothed RTT and variation (s), None before a sample.
        timestamps: whether the first data segment carried the TCP timestamp option (RTT
            samples from the TSecr of ACKs that cover retransmitted data).
        sources: the input files (indices) its data segments came from.
        bins: interval index → :class:`_Bin`.
    """

    def __init__(self) -> None:
        self.first_t: Optional[float] = None
        self.last_t = 0.0
        self.packets = 0
        self.payload_bytes = 0
        self.retx_packets = 0
        self.retx_bytes = 0
        self.mss_bytes = 0
        self.ce_packets = 0
        self.acks_seen = 0
        self.ece_acks = 0
        self.acked_bytes = 0
        self.rtt_count = 0
        self.rtt_sum_s = 0.0
        self.rtt_min_s = math.inf
        self.rtt_hist: dict[int, int] = {}
        self.srtt_s: Optional[float] = None
        self.rttvar_s: Optional[float] = None
        self.timestamps: Optional[bool] = None
        self.sources: set[int] = set()
        self.bins: dict[int, _Bin] = {}
        self._hi: Optional[int] = None  # highest unwrapped sequence number seen (data or ACK)
        self._first_seq: Optional[int] = None
        self._snd_max: Optional[int] = None
        self._high_ack: Optional[int] = None
        self._retx_high = -(1 << 62)  # the end of the highest retransmitted range (Karn's rule)
        self._segments: deque[tuple[int, int, float]] = deque()  # (end, start, first sent) unacked
        self._ts_sent: dict[int, float] = {}  # TSval → first data segment sent with it
        self._ts_order: deque[int] = deque()

    def _unwrap(self, raw: int) -> int:
        """A 32-bit sequence or ACK number as an offset on this direction's unwrapped line."""
        if self._hi is None:
            self._hi = raw
            return raw
        delta = (raw - self._hi) % _MOD
        if delta >= _HALF:
            delta -= _MOD
        value = self._hi + delta
        if value > self._hi:
            self._hi = value
        return value

    def syn(self, seq: int) -> None:
        """A SYN with raw sequence number ``seq`` (the ISN): data starts at ISN + 1 (RFC 9293
        §3.4), where the count of acknowledged bytes starts."""
        self._unwrap((seq + 1) % _MOD)

    def _bin(self, idx: int) -> _Bin:
        b = self.bins.get(idx)
        if b is None:
            b = self.bins[idx] = _Bin()
        return b

    def _inflight(self, b: _Bin) -> None:
        if self._snd_max is not None and self._high_ack is not None:
            b.inflight = max(0, self._snd_max - self._high_ack)

    def data(self, t: float, idx: int, seq: int, length: int, ce: bool,
             tsval: Optional[int], source: int) -> None:
        """A data segment of ``length`` payload bytes (> 0) sent at ``t`` (s), in interval
        ``idx``, with raw sequence number ``seq``, CE mark ``ce``, TSval ``tsval`` (None without
        the timestamp option), read from input file ``source``."""
        if self.first_t is None:
            self.first_t = t
        self.last_t = t
        self.sources.add(source)
        start = self._unwrap(seq)
        end = start + length
        b = self._bin(idx)
        if self._snd_max is None:
            self._first_seq = self._snd_max = start
            self.timestamps = tsval is not None
        self.packets += 1
        self.payload_bytes += length
        b.sent += length
        self.mss_bytes = max(self.mss_bytes, length)
        if ce:
            self.ce_packets += 1
        if start < self._snd_max:
            self.retx_packets += 1
            self.retx_bytes += min(end, self._snd_max) - start
            self._retx_high = max(self._retx_high, min(end, self._snd_max))
            b.retx += 1
        if end > self._snd_max:
            self._snd_max = end
            self._remember(self._segments, (end, start, t))
        if self.timestamps and tsval is not None and tsval not in self._ts_sent:
            self._ts_sent[tsval] = t
            self._remember(self._ts_order, tsval)
        self._inflight(b)

    def _remember(self, queue: deque[Any], item: Any) -> None:
        queue.append(item)
        if len(queue) > _MAX_IN_FLIGHT_RECORDS:
            old = queue.popleft()
            if queue is self._ts_order:
                self._ts_sent.pop(old, None)

    def ack(self, t: float, idx: int, ack: int, ece: bool, tsecr: Optional[int]) -> None:
        """An ACK of this direction's data, seen at ``t`` (s) in interval ``idx``: raw cumulative
        ACK number ``ack``, ECE flag ``ece``, TSecr ``tsecr`` (None without timestamps)."""
        a = self._unwrap(ack)
        self.acks_seen += 1
        if ece:
            self.ece_acks += 1
        b = self._bin(idx)
        if self._high_ack is None:
            # The first ACK: bytes from the first data segment seen count as acknowledged (a
            # capture from the connection's start); an ACK before any data starts the count.
            self._high_ack = min(a, self._first_seq) if self._first_seq is not None else a
        echoed = self._echoed(tsecr) if self.timestamps and tsecr is not None else None
        if a > self._high_ack:
            b.acked += a - self._high_ack
            self.acked_bytes += a - self._high_ack
            self._high_ack = a
            sample = self._match(t, a)
            if sample is None and echoed is not None:
                sample = t - echoed  # covers retransmitted data: the echoed TSval is unambiguous
            if sample is not None:
                self._rtt(sample)
        self._inflight(b)
        b.srtt, b.rttvar = self.srtt_s, self.rttvar_s

    def _echoed(self, tsecr: int) -> Optional[float]:
        """When the data segment whose TSval an ACK echoes (``tsecr``) was first sent (s), or
        None; older TSvals are forgotten (the receiver's TS.Recent has moved past them)."""
        sent = self._ts_sent.get(tsecr)
        if sent is not None:
            while self._ts_order:
                old = self._ts_order.popleft()
                del self._ts_sent[old]
                if old == tsecr:
                    break
        return sent

    def _match(self, t: float, a: int) -> Optional[float]:
        """The RTT sample (s) of the cumulative ACK ``a`` at ``t``: the time since the last
        segment it newly covers was sent; None if it covers none, or covers retransmitted data
        (Karn's rule)."""
        first_start: Optional[int] = None
        last_sent: Optional[float] = None
        while self._segments and self._segments[0][0] <= a:
            end, start, sent = self._segments.popleft()
            if first_start is None:
                first_start = start
            last_sent = sent
        if first_start is not None and last_sent is not None and first_start >= self._retx_high:
            return t - last_sent
        return None

    def _rtt(self, r: float) -> None:
        """One RTT sample ``r`` (s): the totals, the histogram and RFC 6298 §2's estimator."""
        if r <= 0:
            return
        self.rtt_count += 1
        self.rtt_sum_s += r
        self.rtt_min_s = min(self.rtt_min_s, r)
        k = int(math.log(r / 1e-6) / _LOG_RATIO) if r > 1e-6 else 0
        self.rtt_hist[k] = self.rtt_hist.get(k, 0) + 1
        if self.srtt_s is None or self.rttvar_s is None:
            self.srtt_s, self.rttvar_s = r, r / 2
        else:
            self.rttvar_s = 0.75 * self.rttvar_s + 0.25 * abs(self.srtt_s - r)
            self.srtt_s = 0.875 * self.srtt_s + 0.125 * r

    def rtt_quantile(self, q: float) -> float:
        """The ``q`` quantile (0–1) of the RTT samples (s), within :data:`RTT_BIN_RATIO`; NaN
        without samples."""
        if not self.rtt_count:
            return math.nan
        rank = q * self.rtt_count
        seen = 0
        for k in sorted(self.rtt_hist):
            seen += self.rtt_hist[k]
            if seen >= rank:
                return 1e-6 * RTT_BIN_RATIO ** (k + 0.5)
        return math.nan

    @property
    def has_acks(self) -> bool:
        """Whether an ACK of this direction's data was seen."""
        return self._high_ack is not None


@dataclass
class Connection:
    """Both directions of one TCP connection; ``endpoints`` = (address, port) of each side, in
    the order of its first packet, and ``directions`` the directions from each."""

    endpoints: tuple[tuple[str, int], tuple[str, int]]
    directions: tuple[Direction, Direction] = field(default_factory=lambda: (Direction(), Direction()))
    first_t: float = 0.0
    last_t: float = 0.0

    def data_side(self) -> int:
        """0 or 1: the side whose direction carried more payload (the flow's sender)."""
        a, b = self.directions
        return 0 if a.payload_bytes >= b.payload_bytes else 1


class TcpTrace:
    """The TCP connections of a capture, fed one header at a time, in time order.

    Args:
        interval_s: the bin width (s), > 0.
    """

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.t0: Optional[float] = None
        self.connections: dict[tuple[Any, ...], Connection] = {}
        self.packets = 0

    def start(self, t: float) -> float:
        """The trace's zero (s): the first packet's time rounded down to a multiple of the
        interval (so a simulator's capture, timed from 0, bins as the run samples)."""
        if self.t0 is None:
            self.t0 = math.floor(t / self.interval_s) * self.interval_s
        return self.t0

    def add(self, t: float, src: str, sport: int, dst: str, dport: int, seq: int, ack: int,
            flags: int, length: int, ce: bool, tsval: Optional[int], tsecr: Optional[int],
            source: int) -> None:
        """One TCP segment seen at ``t`` (s, absolute): its endpoints, raw sequence and ACK
        numbers, TCP flags, payload length (bytes), CE mark, timestamp option values (None
        without it) and input file index ``source``."""
        t -= self.start(t)
        self.packets += 1
        key = (src, sport, dst, dport) if (src, sport) <= (dst, dport) else (dst, dport, src, sport)
        conn = self.connections.get(key)
        if conn is None:
            conn = self.connections[key] = Connection(((src, sport), (dst, dport)), first_t=t)
        conn.last_t = t
        side = 0 if conn.endpoints[0] == (src, sport) else 1
        idx = int(t // self.interval_s)
        if length > 0:
            conn.directions[side].data(t, idx, seq, length, ce, tsval, source)
        elif flags & TH_SYN:
            conn.directions[side].syn(seq)
        if flags & TH_ACK:
            conn.directions[1 - side].ack(t, idx, ack, bool(flags & TH_ECE), tsecr)
