"""Per-connection TCP analysis of a packet capture, packet by packet, in bounded memory: what a
sender did and what its receiver acknowledged, binned into fixed intervals.

Fed one TCP header at a time (:meth:`TcpTrace.add`, in capture order), it keeps per connection
and direction only counters, one bin per interval that saw a packet, and the segments or
timestamps still in flight; so memory grows with connections × intervals, not with packets.

What it measures, for each direction of a connection that carries data (a flow; the reverse
direction's ACK field acknowledges it, whether its packets carry data too or not):

- **sent**: payload bytes of every data segment (retransmissions included), its length taken
  from the IP header (IPv4 total length, IPv6 payload length) less the IP and TCP headers, so a
  capture limited to the headers (a snap length) counts what was on the wire;
- **retransmissions**: a data segment starting below the highest sequence number sent so far
  (tcptrace's rule, https://github.com/blitz/tcptrace, ``tcptrace -l`` "rexmt data pkts"); its
  bytes below that point are the retransmitted bytes;
- **acknowledged** (goodput): the advance of the highest cumulative ACK of the reverse direction;
- **bytes in flight**: highest sequence number sent − highest cumulative ACK, after each packet;
  an estimate of the congestion window (cwnd) when the sender is cwnd-limited;
- **RTT**: one sample per ACK that newly acknowledges data, cumulatively or by SACK, as the
  sender's stack takes them (ccarena's transport, ``Sender::on_ack``; Linux's
  ``tcp_clean_rtx_queue`` and ``tcp_sacktag_one`` in net/ipv4/tcp_input.c also sample newly
  SACKed data): the time since the most recently sent segment it newly covers that was never
  retransmitted; a cumulative ACK that covers retransmitted data gives nothing from its part
  (Karn's rule, RFC 6298 §3) and then, when the data carries TCP timestamps, the time since the
  segment whose TSval the ACK's TSecr echoes was first sent (RFC 7323 §4.1: unambiguous). Smoothed
  per RFC 6298 §2 (srtt, rttvar);
- **SACK** (RFC 2018 option kind 5): the bytes newly SACKed above the cumulative ACK (a
  scoreboard as RFC 6675 §3 keeps it); D-SACK blocks (RFC 2883 §4: a first block below the
  cumulative ACK or inside the second block, Linux's ``tcp_check_dsack`` rule) report a segment
  the receiver got twice. Each retransmission is classed when sent: **spurious** if its bytes
  were already cumulatively ACKed or SACKed, **for a reported hole** if data above it was
  SACKed (RFC 6675 §5's loss inference: the receiver said what it misses), else **unreported**
  (a timeout or a tail loss probe: nothing had said it was lost). A later D-SACK covering a
  retransmission makes it spurious too (RFC 3708 §3's detection). Losses: every retransmission
  not found spurious replaced a lost copy, plus the segments still in a reported hole at the end
  and never retransmitted. Recovery episodes (``fast_recoveries``): a retransmission for a
  reported hole outside an episode starts one, ending when the cumulative ACK reaches the highest
  sequence sent at its start (RFC 6675 §5's RecoveryPoint);
- **ECN**: data segments marked CE (RFC 3168 §5) and ACKs with ECE set.

Sequence numbers are unwrapped from 32 bits (RFC 9293 §3.4 arithmetic mod 2³²). At a capture
point other than the sender (a bottleneck), the RTT is that from the capture point on, and
segments lost before it show as retransmissions of data never seen there.
"""

from __future__ import annotations

import bisect
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
REVERSE_FLOW_SEGMENTS = 10
"""A connection's direction with less payload is a flow of its own when it carried more than
this many of the connection's largest segments (:meth:`Connection.flow_sides`)."""


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


class _Segment:
    """New data sent once: its byte range on the unwrapped line, when it was first sent, and
    whether a retransmission overlapped it or a SACK block covered it."""

    __slots__ = ("start", "end", "sent_t", "retransmitted", "sacked")

    def __init__(self, start: int, end: int, sent_t: float) -> None:
        self.start, self.end, self.sent_t = start, end, sent_t
        self.retransmitted = False
        self.sacked = False


class _Retransmission:
    """One retransmitted range and how it was classed (see the module doc)."""

    __slots__ = ("start", "end", "kind", "dsacked")

    def __init__(self, start: int, end: int, kind: str) -> None:
        self.start, self.end, self.kind = start, end, kind
        self.dsacked = False


SPURIOUS, HOLE, UNREPORTED = "spurious", "hole", "unreported"
"""The classes of a retransmission when sent (module doc, **SACK**)."""


class Direction:
    """One direction of a connection: its data (sent by its source) and the ACKs of it (carried
    by the reverse direction's packets). Sequence numbers are unwrapped relative to the first one
    seen; all byte counts are payload bytes.

    Attributes:
        first_t, last_t: the first and last data segment of this direction (s from the trace's
            start).
        packets, payload_bytes: data segments sent and their payload (bytes, retransmissions
            included); retx_packets, retx_bytes: those retransmitted.
        retx_hole_packets, retx_unreported_packets, retx_spurious_packets: the retransmissions
            by class (module doc, **SACK**); the spurious ones counting those a later D-SACK
            reported; retx_spurious_bytes: their bytes.
        mss_bytes: the largest payload seen; ce_packets: data segments marked CE.
        acks_seen: ACKs of this data seen (from the reverse direction); ece_acks: those with ECE.
        acked_bytes: the cumulative ACK's total advance (bytes).
        sack_acks: ACKs carrying SACK blocks; sacked_bytes: bytes newly SACKed above the
            cumulative ACK; dsack_blocks, dsack_bytes: D-SACK blocks seen and the bytes they
            report received twice (RFC 2883).
        recoveries: recovery episodes started by a retransmission for a reported hole.
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
        self.retx_hole_packets = 0
        self.retx_unreported_packets = 0
        self.retx_spurious_packets = 0
        self.retx_spurious_bytes = 0
        self.mss_bytes = 0
        self.ce_packets = 0
        self.acks_seen = 0
        self.ece_acks = 0
        self.acked_bytes = 0
        self.sack_acks = 0
        self.sacked_bytes = 0
        self.dsack_blocks = 0
        self.dsack_bytes = 0
        self.recoveries = 0
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
        self._recovery_point: Optional[int] = None  # RFC 6675 §5 RecoveryPoint, in an episode
        # Unacknowledged new data in sequence order (a list read from _head on: the cumulative
        # ACK consumes it from the front, a SACK block is found by bisection).
        self._segments: list[_Segment] = []
        self._head = 0
        self._sacked: list[list[int]] = []  # SACKed [start, end) above the cumulative ACK, sorted
        self._retx_log: deque[_Retransmission] = deque()  # for D-SACKs arriving later
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
            self._retransmission(start, min(end, self._snd_max))
            b.retx += 1
        if end > self._snd_max:
            self._remember_segment(_Segment(max(start, self._snd_max), end, t))
            self._snd_max = end
        if self.timestamps and tsval is not None and tsval not in self._ts_sent:
            self._ts_sent[tsval] = t
            self._ts_order.append(tsval)
            if len(self._ts_order) > _MAX_IN_FLIGHT_RECORDS:
                self._ts_sent.pop(self._ts_order.popleft(), None)
        self._inflight(b)

    def _retransmission(self, start: int, end: int) -> None:
        """Data ``start``–``end`` sent again: counted, classed (module doc, **SACK**), and the
        segments it overlaps marked for Karn's rule."""
        self.retx_packets += 1
        self.retx_bytes += end - start
        if self._high_ack is not None and end <= self._high_ack or self._is_sacked(start, end):
            kind = SPURIOUS
            self.retx_spurious_packets += 1
            self.retx_spurious_bytes += end - start
        elif self._sacked and self._sacked[-1][1] > start:
            kind = HOLE
            self.retx_hole_packets += 1
            if self._recovery_point is None:
                self.recoveries += 1
                self._recovery_point = self._snd_max
        else:
            kind = UNREPORTED
            self.retx_unreported_packets += 1
        self._retx_log.append(_Retransmission(start, end, kind))
        if len(self._retx_log) > _MAX_IN_FLIGHT_RECORDS:
            self._retx_log.popleft()
        for seg in self._overlapping(start, end):
            seg.retransmitted = True

    def _remember_segment(self, seg: _Segment) -> None:
        self._segments.append(seg)
        if len(self._segments) - self._head > _MAX_IN_FLIGHT_RECORDS:
            self._head += 1
        if self._head > 4096 and self._head * 2 > len(self._segments):
            del self._segments[: self._head]
            self._head = 0

    def _overlapping(self, start: int, end: int) -> list[_Segment]:
        """The unacknowledged segments that overlap ``start``–``end``."""
        segs = self._segments
        i = bisect.bisect_right(segs, start, lo=self._head, key=lambda s: s.end)
        out = []
        while i < len(segs) and segs[i].start < end:
            out.append(segs[i])
            i += 1
        return out

    def _is_sacked(self, start: int, end: int) -> bool:
        """Whether ``start``–``end`` lies inside one SACKed range."""
        i = bisect.bisect_right(self._sacked, start, key=lambda r: r[0]) - 1
        return i >= 0 and self._sacked[i][1] >= end

    def ack(self, t: float, idx: int, ack: int, ece: bool, tsecr: Optional[int],
            sack: tuple[tuple[int, int], ...] = ()) -> None:
        """An ACK of this direction's data, seen at ``t`` (s) in interval ``idx``: raw cumulative
        ACK number ``ack``, ECE flag ``ece``, TSecr ``tsecr`` (None without timestamps), the
        SACK blocks' raw (left, right) edges in the option's order."""
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
        sample_from: Optional[float] = None  # the newest never-retransmitted segment covered
        covers_retx = False
        if a > self._high_ack:
            b.acked += a - self._high_ack
            self.acked_bytes += a - self._high_ack
            self._high_ack = a
            sample_from, covers_retx = self._cumulative(a)
        if sack and self._snd_max is not None:
            blocks = [(self._unwrap(left), self._unwrap(right)) for left, right in sack]
            self.sack_acks += 1
            first = blocks[0]
            # Linux's tcp_check_dsack: below the cumulative ACK, or inside the second block.
            if first[0] < a or (len(blocks) > 1 and blocks[1][0] <= first[0]
                                and first[1] <= blocks[1][1]):
                self._dsack(*first)
                blocks = blocks[1:]
            for left, right in blocks:
                newest = self._sack(max(left, self._high_ack), min(right, self._snd_max))
                if newest is not None and (sample_from is None or newest > sample_from):
                    sample_from = newest
        if self._recovery_point is not None and self._high_ack >= self._recovery_point:
            self._recovery_point = None
        sample = t - sample_from if sample_from is not None else None
        if sample is None and covers_retx and echoed is not None:
            sample = t - echoed  # covers retransmitted data: the echoed TSval is unambiguous
        if sample is not None:
            self._rtt(sample)
        self._inflight(b)
        b.srtt, b.rttvar = self.srtt_s, self.rttvar_s

    def _cumulative(self, a: int) -> tuple[Optional[float], bool]:
        """Segments below the cumulative ACK ``a`` leave the scoreboard: the send time of the
        newest one not SACKed before (None if none, or if any covered was retransmitted: Karn's
        rule), and whether any covered was retransmitted."""
        segs = self._segments
        newest: Optional[float] = None
        covers_retx = False
        while self._head < len(segs) and segs[self._head].end <= a:
            seg = segs[self._head]
            self._head += 1
            covers_retx |= seg.retransmitted
            if not seg.sacked and not seg.retransmitted:
                newest = seg.sent_t if newest is None else max(newest, seg.sent_t)
        while self._sacked and self._sacked[0][1] <= a:
            self._sacked.pop(0)
        if self._sacked and self._sacked[0][0] < a:
            self._sacked[0][0] = a
        return (None if covers_retx else newest), covers_retx

    def _sack(self, left: int, right: int) -> Optional[float]:
        """The SACK block ``left``–``right`` (clipped to the unacknowledged data) merged into the
        scoreboard: its new bytes counted, the segments it completes marked; returns the send
        time of the newest such segment never retransmitted (an RTT sample's start) or None."""
        if right <= left:
            return None
        ranges = self._sacked
        i = bisect.bisect_left(ranges, left, key=lambda r: r[1])  # first range ending at or after
        j = i
        covered = 0
        new_left, new_right = left, right
        while j < len(ranges) and ranges[j][0] <= right:
            covered += min(ranges[j][1], right) - max(ranges[j][0], left)
            new_left, new_right = min(new_left, ranges[j][0]), max(new_right, ranges[j][1])
            j += 1
        fresh = (right - left) - covered
        ranges[i:j] = [[new_left, new_right]]
        if fresh <= 0:
            return None
        self.sacked_bytes += fresh
        newest: Optional[float] = None
        for seg in self._overlapping(left, right):
            if not seg.sacked and new_left <= seg.start and seg.end <= new_right:
                seg.sacked = True
                if not seg.retransmitted:
                    newest = seg.sent_t if newest is None else max(newest, seg.sent_t)
        return newest

    def _dsack(self, left: int, right: int) -> None:
        """A D-SACK block: ``left``–``right`` arrived twice. The latest retransmission it covers
        becomes spurious (RFC 3708 §3), unless it was already."""
        self.dsack_blocks += 1
        self.dsack_bytes += max(0, right - left)
        for r in reversed(self._retx_log):
            if r.start < right and left < r.end and not r.dsacked:
                r.dsacked = True
                if r.kind != SPURIOUS:
                    self.retx_spurious_packets += 1
                    self.retx_spurious_bytes += r.end - r.start
                break

    def holes_unrepaired(self) -> int:
        """Segments in a hole the receiver reported (below the highest SACKed byte, neither
        SACKed nor retransmitted) now: lost, as the SACK blocks say, and not yet sent again."""
        if not self._sacked:
            return 0
        top = self._sacked[-1][1]
        n = 0
        for seg in self._segments[self._head:]:
            if seg.end > top:
                break
            n += not seg.sacked and not seg.retransmitted
        return n

    @property
    def packets_lost(self) -> int:
        """Lost transmissions as the sender could know them: each retransmission not found
        spurious replaced a lost copy, plus :meth:`holes_unrepaired`."""
        return self.retx_packets - self.retx_spurious_packets + self.holes_unrepaired()

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
        """0 or 1: the side whose direction carried more payload (the main flow's sender)."""
        a, b = self.directions
        return 0 if a.payload_bytes >= b.payload_bytes else 1

    def flow_sides(self) -> list[int]:
        """The sides whose direction is a flow: the one with more payload (if any), and the other
        too when it carried more than :data:`REVERSE_FLOW_SEGMENTS` of the connection's largest
        segments (a transfer both ways). Less than that (a request, iperf3's 37-byte cookie) fits
        in an initial window (RFC 6928: 10 segments) and is no congestion-controlled flow."""
        main = self.data_side()
        if self.directions[main].payload_bytes == 0:
            return []
        other = self.directions[1 - main]
        mss = max(d.mss_bytes for d in self.directions)
        return sorted([main, 1 - main] if other.payload_bytes > REVERSE_FLOW_SEGMENTS * mss
                      else [main])


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
            sack: tuple[tuple[int, int], ...], source: int) -> None:
        """One TCP segment seen at ``t`` (s, absolute): its endpoints, raw sequence and ACK
        numbers, TCP flags, payload length (bytes), CE mark, timestamp option values (None
        without it), SACK blocks (raw left and right edges, in the option's order; empty without
        the option) and input file index ``source``. Its data goes to its own direction, its ACK
        field (with the SACK blocks) to the reverse direction's."""
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
            conn.directions[1 - side].ack(t, idx, ack, bool(flags & TH_ECE), tsecr, sack)
