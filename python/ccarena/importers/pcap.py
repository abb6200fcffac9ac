"""Packet captures of TCP flows (pcap or pcapng, read with dpkt) as an :class:`ImportedRun`.

A capture at the sender (tcpdump on its interface) or at a bottleneck, with both directions of
each connection, in one file or in several (one per link direction, as the simulator's
``[output] pcap`` writes them: merged by timestamp into one run, :func:`parse_files`). Link
types: Ethernet (VLAN tags allowed), Linux cooked (SLL and SLL2), raw IP, BSD loopback; IPv4 and
IPv6; microsecond and nanosecond pcap, and pcapng (the first interface's link type). Only the
headers are read, and sizes come from the IP header, so a capture cut at a snap length (``tcpdump
-s 128``, ccarena's own) imports the same as a full one. The file is streamed: memory grows with
connections × intervals, not with packets.

Each direction of a TCP connection that carried data is one flow, its ACKs the reverse
direction's ACK field: the direction with more payload, and the other too when it carried more
than ten of the connection's largest segments (data both ways;
:meth:`ccarena.importers.tcp_trace.Connection.flow_sides`); :mod:`ccarena.importers.tcp_trace`
says what is measured and how. Samples, one per ``interval_s`` from the capture's start:
``goodput_bps`` (bytes newly acknowledged), ``throughput_bps`` (payload sent, retransmissions
included), ``delivered_bytes`` and ``sent_bytes`` (cumulative), ``inflight_bytes`` and
``cwnd_bytes`` (both the bytes in flight, highest sequence sent − cumulative ACK: ``cwnd_bytes``
is an estimate of the congestion window), ``srtt_s``/``rttvar_s`` (RFC 6298 §2 over the RTT samples so far), ``retransmits``
(cumulative packets). Flow totals: ``bytes_sent``, ``bytes_retransmitted``, ``bytes_delivered``
(acknowledged), ``packets_sent``, ``packets_retransmitted``, ``rtt_min_s``, ``rtt_mean_s``,
``rtt_p50_s``/``p95``/``p99`` (within 1%), ``rtt_samples``, ``mss_bytes`` (the largest payload);
when the ACKs carry SACK blocks (RFC 2018), ``packets_lost`` (retransmissions not found
spurious, plus segments left in a reported hole), ``duplicate_bytes_received`` (the bytes
D-SACK blocks report received twice, RFC 2883; 0 from a receiver that sends no D-SACK) and
``fast_recoveries`` (recovery episodes, RFC 6675 §5). CE-marked data segments, ECE ACKs, the
bytes SACKed and the retransmissions by class (for a reported hole, unreported, spurious) go
into run.json's ``source.flows``. The TCP header does not name the congestion controller: the
flavor is ``unknown`` unless given (``--flavor``).
"""

from __future__ import annotations

import hashlib
import heapq
import socket
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Callable, Optional

from ccarena.importers.model import ImportedFlow, ImportedRun, ImportProblem

DEFAULT_INTERVAL_S = 0.1
"""The sampling interval when none is given (s)."""

_PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_TS_OPTION = 8
_SACK_OPTION = 5
_NOT_TCP = None


class _Tracked:
    """A file read through: its SHA-256, and whether a read came back short of what was asked
    (the file ends inside a record: truncated)."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self.sha = hashlib.sha256()
        self.short = False
        self.name = getattr(f, "name", "")

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self.sha.update(data)
        if n is not None and n > 0 and 0 < len(data) < n:
            self.short = True
        return data


def _ip_decoder(linktype: int) -> Callable[[bytes], Any]:
    """The function from a frame of ``linktype`` (LINKTYPE_* of
    https://www.tcpdump.org/linktypes.html) to its dpkt IP or IP6 layer (or something else for a
    frame that carries neither).

    Raises:
        ImportProblem: a link type this reader does not decode.
    """
    import dpkt

    def by_version(buf: bytes) -> Any:
        if not buf:
            return None
        version = buf[0] >> 4
        return dpkt.ip.IP(buf) if version == 4 else dpkt.ip6.IP6(buf) if version == 6 else None

    if linktype == 1:  # Ethernet
        return lambda buf: dpkt.ethernet.Ethernet(buf).data
    if linktype == 113:  # Linux cooked (SLL)
        return lambda buf: dpkt.sll.SLL(buf).data
    if linktype == 276:  # Linux cooked v2 (SLL2)
        return lambda buf: dpkt.sll2.SLL2(buf).data
    if linktype in (12, 14, 101, 228, 229):  # raw IP (DLT_RAW on BSD and Linux, IPv4, IPv6)
        return by_version
    if linktype in (0, 108):  # BSD loopback: a 4-byte address family first
        return lambda buf: by_version(buf[4:])
    raise ImportProblem(f"has link type {linktype}, which this import does not decode; give a "
                        "capture of Ethernet, Linux cooked (tcpdump -i any), raw IP or loopback")


def _headers(ip: Any, dpkt: Any) -> Optional[tuple[Any, ...]]:
    """A TCP segment's fields from its dpkt IP/IP6 layer: (src, sport, dst, dport, seq, ack,
    flags, payload bytes from the IP header's length, CE, TSval, TSecr, SACK blocks as raw
    (left, right) edges in the option's order, RFC 2018 §3); None for anything else (not TCP, a
    later IPv4 fragment, headers cut short)."""
    tcp = ip.data
    if not isinstance(tcp, dpkt.tcp.TCP):
        return _NOT_TCP
    if isinstance(ip, dpkt.ip.IP):
        if ip.offset:
            return _NOT_TCP
        length = ip.len - ip.hl * 4 - tcp.off * 4
        ecn = ip.tos & 3
        src, dst = socket.inet_ntop(socket.AF_INET, ip.src), socket.inet_ntop(socket.AF_INET, ip.dst)
    else:
        extensions = sum(len(h) for h in getattr(ip, "all_extension_headers", ()))
        length = ip.plen - extensions - tcp.off * 4
        ecn = ip.fc & 3
        src, dst = socket.inet_ntop(socket.AF_INET6, ip.src), socket.inet_ntop(socket.AF_INET6, ip.dst)
    tsval = tsecr = None
    sack: tuple[tuple[int, int], ...] = ()
    opts = tcp.opts
    if opts:
        i, n = 0, len(opts)
        while i < n:  # RFC 9293 §3.1 option list: kind, length, data; 0 ends it, 1 pads
            kind = opts[i]
            if kind == 0:
                break
            if kind == 1:
                i += 1
                continue
            if i + 1 >= n or opts[i + 1] < 2:
                break
            if kind == _TS_OPTION and opts[i + 1] == 10 and i + 10 <= n:
                tsval, tsecr = struct.unpack_from(">II", opts, i + 2)
            elif kind == _SACK_OPTION and (opts[i + 1] - 2) % 8 == 0 and i + opts[i + 1] <= n:
                edges = struct.unpack_from(f">{(opts[i + 1] - 2) // 4}I", opts, i + 2)
                sack = tuple(zip(edges[::2], edges[1::2]))
            i += opts[i + 1]
    return (src, tcp.sport, dst, tcp.dport, tcp.seq, tcp.ack, tcp.flags, max(0, length), ecn == 3,
            tsval, tsecr, sack)


def _segments(path: Path, source: int, hashes: list[Any], counts: list[int]
              ) -> Iterator[tuple[float, int, tuple[Any, ...]]]:
    """The TCP segments of one capture file: (time in s, ``source``, :func:`_headers`' tuple).
    The file's SHA-256 object goes into ``hashes[source]``, its packets that are not TCP are
    counted in ``counts[source]``.

    Raises:
        ImportProblem: not a pcap or pcapng file, an unknown link type, or truncated.
    """
    import dpkt

    try:
        f = open(path, "rb")
    except OSError as err:
        raise ImportProblem(f"cannot be read ({err.strerror or err})") from None
    with f:
        magic = f.read(4)
        f.seek(0)
        if not magic:
            raise ImportProblem("is empty")
        tracked = _Tracked(f)
        hashes[source] = tracked.sha
        try:
            if magic in _PCAP_MAGICS:
                reader: Any = dpkt.pcap.Reader(tracked)
            elif magic == _PCAPNG_MAGIC:
                reader = dpkt.pcapng.Reader(tracked)
            else:
                raise ImportProblem("is not a pcap or pcapng capture (its first bytes are "
                                    f"{magic.hex()}); give a file written by tcpdump, tshark, "
                                    "Wireshark or ccarena's [output] pcap")
        except (ValueError, dpkt.UnpackError) as err:
            raise ImportProblem(f"has a bad capture header ({err or 'too short'})") from None
        decode = _ip_decoder(reader.datalink())
        packet = 0
        try:
            for ts, buf in reader:
                packet += 1
                if tracked.short:
                    break
                try:
                    ip = decode(buf)
                    decoded = ip is not None and not isinstance(ip, bytes)
                    fields = _headers(ip, dpkt) if decoded else None
                except (dpkt.UnpackError, struct.error, AttributeError, IndexError):
                    fields = None
                if fields is None:
                    counts[source] += 1
                    continue
                yield float(ts), source, fields
        except (dpkt.UnpackError, struct.error, ValueError):
            tracked.short = True
        if tracked.short:
            raise ImportProblem(f"is truncated: packet record {packet} stops before its end (the "
                                "capture was cut short); import the complete file")


def analyse(paths: Sequence[Path], interval_s: float) -> tuple[Any, list[str], int, list[int]]:
    """The TCP connections of the capture files ``paths`` merged by timestamp
    (:class:`ccarena.importers.tcp_trace.TcpTrace`), the SHA-256 of each file (hex), the TCP
    segments read, and the other packets of each file (not TCP, or not decodable).

    Raises:
        ImportProblem: a file cannot be read or is not a capture (:func:`_segments`); one
            connection's data appears in two files (two capture points of one packet).
    """
    from ccarena.importers.tcp_trace import TcpTrace

    trace = TcpTrace(interval_s)
    hashes: list[Any] = [None] * len(paths)
    counts = [0] * len(paths)
    streams = [_segments(Path(p), i, hashes, counts) for i, p in enumerate(paths)]
    for t, source, f in heapq.merge(*streams, key=lambda item: item[0]):
        trace.add(t, *f, source=source)
    for conn in trace.connections.values():
        for side in conn.flow_sides():
            sources = conn.directions[side].sources
            if len(sources) > 1:
                a, b = sorted(sources)[:2]
                raise ImportProblem(f"the data of the connection {_label(conn)} is in both "
                                    f"{paths[a]} and {paths[b]}: give the files of one capture "
                                    "point (e.g. both directions of one link)")
    return trace, [h.hexdigest() for h in hashes], trace.packets, counts


def _label(conn: Any) -> str:
    (a, ap), (b, bp) = conn.endpoints
    return f"{a}:{ap} ↔ {b}:{bp}"


def _samples(d: Any, first_idx: int, last_idx: int, interval_s: float) -> list[dict[str, Any]]:
    """One sample per interval ``first_idx`` … ``last_idx`` of the data direction ``d``: rates
    over the interval, cumulative counts and the last in-flight and RTT state (carried over
    intervals without a packet)."""
    rows = []
    sent = delivered = retx = 0
    inflight = srtt = rttvar = None
    acks = d.has_acks
    for idx in range(first_idx, last_idx + 1):
        b = d.bins.get(idx)
        if b is not None:
            sent += b.sent
            delivered += b.acked
            retx += b.retx
            inflight = b.inflight if b.inflight is not None else inflight
            srtt = b.srtt if b.srtt is not None else srtt
            rttvar = b.rttvar if b.rttvar is not None else rttvar
        rows.append({
            "time_s": round((idx + 1) * interval_s, 9),
            "goodput_bps": 8.0 * (b.acked if b else 0) / interval_s if acks else None,
            "throughput_bps": 8.0 * (b.sent if b else 0) / interval_s,
            "delivered_bytes": delivered if acks else None, "sent_bytes": sent,
            "cwnd_bytes": inflight, "inflight_bytes": inflight, "srtt_s": srtt, "rttvar_s": rttvar,
            "retransmits": retx,
        })
    return rows


def _flavors(flavor: Optional[str], n: int) -> list[str]:
    """``--flavor``: one name for every flow, or a comma-separated name per flow in order.

    Raises:
        ImportProblem: a list of another length than the flows.
    """
    if not flavor:
        return ["unknown"] * n
    names = [f.strip() for f in flavor.split(",")]
    if len(names) == 1:
        return names * n
    if len(names) != n:
        raise ImportProblem(f"--flavor names {len(names)} flavors for {n} flows; give one for all "
                            "or one per flow, in the order of their first packet")
    return names


_NO_ACKS = ("the capture holds no ACK of this flow (one direction only); capture both directions "
            "(give both files of a link to `ccarena import pcap --merge`)")
_NO_RTT = ("no ACK of this flow's data covered a segment sent once or echoed a timestamp; "
           "capture both directions of the connection")


def parse_files(paths: Sequence[Path], interval_s: float = DEFAULT_INTERVAL_S,
                flavor: Optional[str] = None) -> ImportedRun:
    """Capture files of one capture point (one, or one per link direction) merged by timestamp
    into one :class:`ImportedRun` (``tool`` = ``pcap``, ``path`` = the first file), one flow per
    direction of a TCP connection that carried data (both directions of a transfer both ways),
    named ``<flavor or tcp>-<sender's port>``, in the order of their connection's first packet,
    then of their first data segment (see the module doc for the columns).

    Args:
        paths: the files (pcap or pcapng), at least one.
        interval_s: the sample interval (s), > 0.
        flavor: the flows' congestion controller (the header does not say): one name, or one per
            flow separated by commas; None = ``unknown``.

    Raises:
        ImportProblem: a file is unreadable, not a capture, truncated or of an unknown link
            type; holds no TCP connection with data; or ``flavor`` lists the wrong number.
    """
    trace, shas, packets, other = analyse(paths, interval_s)
    # One flow per direction that carried data (both of a transfer both ways), in the order of
    # the connection's first packet, then of the direction's first data segment.
    # Ties between connections keep the capture's order (a relay stamps every frame before the
    # run's start 0, so handshakes tie); only a connection's own two directions go by first data.
    directions = sorted(((i, c, side) for i, c in enumerate(trace.connections.values())
                         for side in c.flow_sides()),
                        key=lambda ics: (ics[1].first_t, ics[0], ics[1].directions[ics[2]].first_t))
    if not directions:
        where = f"{len(paths)} files" if len(paths) > 1 else "the file"
        raise ImportProblem(f"has no TCP segment carrying data ({packets} TCP and {sum(other)} "
                            f"other packets in {where}); give a capture of TCP flows")
    names = _flavors(flavor, len(directions))
    flows, info_flows, used = [], [], set()
    for (_, conn, side), fl in zip(directions, names):
        d = conn.directions[side]
        (src, sport), (dst, dport) = conn.endpoints[side], conn.endpoints[1 - side]
        name = f"{'tcp' if fl == 'unknown' else fl}-{sport}"
        while name in used:
            name += "'"
        used.add(name)
        first_idx = int(conn.first_t // interval_s)
        last_idx = int(conn.last_t // interval_s)
        totals: dict[str, float] = {
            "bytes_sent": d.payload_bytes, "bytes_retransmitted": d.retx_bytes,
            "packets_sent": d.packets, "packets_retransmitted": d.retx_packets,
            "mss_bytes": d.mss_bytes, "rtt_samples": d.rtt_count,
        }
        if d.has_acks:
            totals["bytes_delivered"] = d.acked_bytes
        if d.sack_acks:
            # What the SACK blocks tell (tcp_trace's module doc, **SACK**); without them a
            # capture cannot tell a lost segment from a spurious retransmission: left empty.
            totals.update(packets_lost=d.packets_lost, duplicate_bytes_received=d.dsack_bytes,
                          fast_recoveries=d.recoveries)
        if d.rtt_count:
            totals.update(rtt_min_s=d.rtt_min_s, rtt_mean_s=d.rtt_sum_s / d.rtt_count,
                          rtt_p50_s=d.rtt_quantile(0.5), rtt_p95_s=d.rtt_quantile(0.95),
                          rtt_p99_s=d.rtt_quantile(0.99))
        missing = {}
        if not d.has_acks:
            missing.update({"goodput_bps": _NO_ACKS, "goodput_mean_bps": _NO_ACKS,
                            "cwnd_bytes": _NO_ACKS})
        if not d.rtt_count:
            missing.update({"srtt_s": _NO_RTT, "rtt_mean_s": _NO_RTT})
        flows.append(ImportedFlow(
            name=name, kind="tcp", flavor=fl, direction=None, start_s=conn.first_t,
            end_s=conn.last_t, totals=totals, samples=_samples(d, first_idx, last_idx, interval_s),
            expected=("throughput_bps", "cwnd_bytes", "srtt_s", "rtt_mean_s"), missing=missing))
        info_flows.append({
            "name": name, "sender": f"{src}:{sport}", "receiver": f"{dst}:{dport}",
            "rtt_from": ("data/ACK matching, TCP timestamps where Karn's rule excludes it"
                         if d.timestamps else "data/ACK matching (Karn's rule)"),
            "ce_packets": d.ce_packets, "ece_acks": d.ece_acks, "acks": d.acks_seen,
            "sack_acks": d.sack_acks, "sacked_bytes": d.sacked_bytes,
            "dsack_blocks": d.dsack_blocks, "dsack_bytes": d.dsack_bytes,
            "retransmitted_for_reported_holes": d.retx_hole_packets,
            "retransmitted_unreported": d.retx_unreported_packets,
            "retransmitted_spurious": d.retx_spurious_packets,
            "retransmitted_spurious_bytes": d.retx_spurious_bytes,
            "holes_unrepaired": d.holes_unrepaired(),
        })
    sha = shas[0] if len(shas) == 1 else hashlib.sha256("".join(shas).encode()).hexdigest()
    info = {"tool": "pcap", "files": [str(p) for p in paths], "file_sha256": shas,
            "tcp_packets": packets, "other_packets": sum(other), "interval_s": interval_s,
            "time_zero_s": trace.t0, "flows": info_flows,
            "connections_without_data": (len(trace.connections)
                                         - len({i for i, _, _ in directions}))}
    return ImportedRun(tool="pcap", path=Path(paths[0]), sha256=sha, flows=flows,
                       duration_s=max(f.end_s for f in flows), interval_s=interval_s, info=info)


def parse(path: Path) -> ImportedRun:
    """One capture file (pcap or pcapng) as an :class:`ImportedRun`, sampled every
    :data:`DEFAULT_INTERVAL_S`, flavors ``unknown`` (:func:`parse_files` with one file).

    Raises:
        ImportProblem: as :func:`parse_files`.
    """
    return parse_files([path])


def about(run: ImportedRun) -> str:
    """A short description of an imported capture (for experiment.json's text)."""
    files = run.info.get("files") or [str(run.path)]
    more = f" (+{len(files) - 1} merged file(s))" if len(files) > 1 else ""
    return (f": pcap{more}, {len(run.flows)} TCP flow(s), {run.info.get('tcp_packets', 0)} TCP "
            f"packets over {run.duration_s:.2f} s")
