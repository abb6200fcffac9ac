"""iperf3's ``--json`` output (iperf 3.x; checked against 3.12) as an :class:`ImportedRun`.

One flow per stream (``-P N`` gives N per direction, ``--bidir`` both directions), named
``<flavor>-<direction>[-k]``; ``direction`` is ``upload`` (client → server) or ``download``.

What the file gives, and where it goes (iperf3's units → the store's):

- each interval of a stream is one sample at the interval's end (omitted intervals, ``-O``, are
  left out as iperf3 leaves them out of its sums). The side that wrote the file sees its own half
  of a stream: where it sends, ``bits_per_second`` is the rate the application wrote into the
  socket → ``throughput_bps`` (with ``sent_bytes`` cumulative; unlike a simulated flow's, it does
  not count retransmissions), ``snd_cwnd`` (bytes) → ``cwnd_bytes``, ``rtt``/``rttvar`` (µs) →
  ``srtt_s``/``rttvar_s``, ``retransmits`` → ``retransmits`` (cumulative); where it receives,
  ``bits_per_second`` → ``goodput_bps`` (with ``delivered_bytes`` cumulative) and, for UDP,
  ``jitter_ms`` → ``jitter_s``. The other half comes from ``server_output_json`` when the client
  ran with ``--get-server-output`` against a server started with ``-J``, its intervals aligned to
  the client's by time, not by count (:mod:`ccarena.importers.align`: the server reports every
  second unless started with ``-i`` itself, plus a short trailing interval); a receiving
  server's intervals after the client's last become samples of their own;
- the end record of each stream: the receiver's ``bits_per_second`` → ``goodput_mean_bps`` and
  its bytes → ``bytes_delivered``; the sender's → ``throughput_mean_bps`` and ``bytes_sent``;
  TCP ``retransmits`` → ``packets_retransmitted``, ``min_rtt``/``mean_rtt`` → ``rtt_min_s``/
  ``rtt_mean_s`` from the sending side's own record (for a download, the server's output: a
  client's record of a stream it receives has 0 with ``-R`` and its receiving socket's RTT with
  ``--bidir``); UDP ``packets`` → ``packets_sent``, ``lost_packets`` → ``packets_lost`` (so
  ``loss_rate`` = lost/packets), ``jitter_ms`` → ``jitter_s``. UDP datagrams all carry
  ``blksize`` bytes, so the bytes sent by the side that did not write the file are its packets ×
  ``blksize``; the bytes delivered are the receiver's intervals' (:func:`_udp_totals`). A
  server's file (``iperf3 -s -J``) has no record of the client's end: only the server's own end
  is read from it;
- the flavor is the congestion controller the file names for the sending side
  (``sender_tcp_congestion``; with ``--bidir`` the upload's is ``receiver_tcp_congestion``, as
  iperf3 writes them), ``unknown`` without one, ``udp`` for UDP; ``mss_bytes`` is ``tcp_mss``
  (``-M``) or ``tcp_mss_default``, or the UDP ``blksize``.

Anything else (``packets_sent`` of TCP, RTT percentiles, base RTT, the path) stays null. Each
flow names the metrics it should have and why a missing half is missing
(:attr:`ImportedFlow.expected`, :attr:`ImportedFlow.missing`), for the import's warning lines
(:mod:`ccarena.importers.checks`).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from ccarena.analysis import metrics
from ccarena.importers.align import align
from ccarena.importers.bounded_read import read_json
from ccarena.importers.model import ImportedFlow, ImportedRun, ImportProblem
from ccarena.importers.shape import FLAG, INTEGER, NUMBER, STRING, Arr, Obj, check

# The shape of what the parser reads (:mod:`ccarena.importers.shape`); keys it does not read are
# not checked. Field names as iperf 3.12 writes them (src/iperf_api.c).
_STREAM = Obj({"socket": INTEGER, "sender": FLAG, "omitted": FLAG, **{k: NUMBER for k in (
    "start", "end", "seconds", "bytes", "bits_per_second", "retransmits", "snd_cwnd", "rtt",
    "rttvar", "jitter_ms", "packets", "lost_packets")}}, required=("socket",))
_INTERVAL = Obj({"streams": Arr(_STREAM)}, required=("streams",))
_END_RECORD = Obj({"socket": INTEGER, **{k: NUMBER for k in (
    "start", "end", "seconds", "bytes", "bits_per_second", "retransmits", "min_rtt", "mean_rtt",
    "jitter_ms", "packets", "lost_packets")}})
_END_STREAMS = Arr(Obj({"sender": _END_RECORD, "receiver": _END_RECORD, "udp": _END_RECORD}))
_SUM = Obj({"bytes": NUMBER, "seconds": NUMBER})
_DOCUMENT = Obj({
    "start": Obj({
        "version": STRING, "system_info": STRING, "tcp_mss": NUMBER, "tcp_mss_default": NUMBER,
        "timestamp": Obj({"time": STRING}), "connecting_to": Obj({"host": STRING, "port": NUMBER}),
        "accepted_connection": Obj({}),
        "test_start": Obj({"protocol": STRING, "num_streams": NUMBER, "blksize": NUMBER,
                           "duration": NUMBER, "reverse": FLAG, "bidir": FLAG}),
    }),
    "intervals": Arr(_INTERVAL),
    "end": Obj({"streams": _END_STREAMS, "sum_received": _SUM, "sum_received_bidir_reverse": _SUM,
                "sender_tcp_congestion": STRING, "receiver_tcp_congestion": STRING}),
    "server_output_text": STRING,
}, required=("start", "intervals", "end"))
_SERVER_OUTPUT = Obj({"intervals": Arr(_INTERVAL), "end": Obj({"streams": _END_STREAMS})})
"""``server_output_json``: checked on its own, as a bad one is left out with a warning."""


def _num(record: dict[str, Any], key: str, scale: float = 1.0) -> float | None:
    """``record[key]`` × ``scale`` when it is a number, else None."""
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) * scale


def _positive(record: dict[str, Any], key: str, scale: float = 1.0) -> float | None:
    """As :func:`_num`, but None for 0: iperf3 writes 0 for a TCP figure it could not read
    (the peer's RTT in ``-R`` mode)."""
    value = _num(record, key, scale)
    return value if value is not None and value > 0 else None


def load(path: Path) -> tuple[dict[str, Any], str]:
    """The iperf3 JSON document of ``path``, checked to be iperf3 ``--json`` output, and the
    file's SHA-256.

    Raises:
        ImportProblem: unreadable or too large (:mod:`ccarena.importers.bounded_read`), gzip'd, not
            JSON or truncated, iperf3's own ``error``, another kind of file, a record of the
            wrong shape (naming its key path), or no intervals.
    """
    doc, sha = read_json(path, gzip_refused="is gzip-compressed, not iperf3 --json output (a "
                                            "Flent file? use `ccarena import flent`)")
    if not isinstance(doc, dict):
        raise ImportProblem("is not iperf3 --json output (the top level is not a JSON object)")
    if "error" in doc:
        message = " ".join(str(doc["error"])[:300].split())
        raise ImportProblem(f"iperf3 reported an error instead of a result: {message}")
    if "x_values" in doc and "results" in doc:
        raise ImportProblem("is a Flent data file, not iperf3 output; use `ccarena import flent`")
    missing = [k for k in ("start", "intervals", "end") if not isinstance(doc.get(k), (dict, list))]
    if missing:
        raise ImportProblem("is not iperf3 --json output (no " + ", ".join(repr(k) for k in missing)
                            + " record)")
    check(doc, _DOCUMENT)
    if not doc["intervals"]:
        raise ImportProblem("has no intervals (iperf3 ran with -i 0, or stopped before its first "
                            "report): run iperf3 with -i 1 or shorter")
    if not doc["end"].get("streams"):
        raise ImportProblem("has no end record of its streams (the test did not finish)")
    return doc, sha


def _views(intervals: list[Any]) -> dict[int, tuple[bool, list[dict[str, Any]]]]:
    """Socket → (this side sends it, its non-omitted interval records), sockets in order.

    Raises:
        ImportProblem: an interval without streams.
    """
    out: dict[int, tuple[bool, list[dict[str, Any]]]] = {}
    for i, interval in enumerate(intervals):
        streams = interval.get("streams") if isinstance(interval, dict) else None
        if not isinstance(streams, list):
            raise ImportProblem(f"intervals[{i}] has no streams")
        for s in streams:
            if not isinstance(s, dict) or not isinstance(s.get("socket"), int):
                raise ImportProblem(f"intervals[{i}] has a stream without its socket")
            _, rows = out.setdefault(s["socket"], (bool(s.get("sender")), []))
            if not s.get("omitted"):
                rows.append(s)
    return out


def _sample(s: dict[str, Any], sends: bool, udp: bool, totals: dict[str, float]) -> dict[str, Any]:
    """One interval record of a stream as a sample, from the side that sends (``sends``) or
    receives it; ``totals`` carries the cumulative byte and retransmission counts."""
    row: dict[str, Any] = {}
    nbytes = _num(s, "bytes") or 0.0
    if sends:
        totals["sent"] += nbytes
        row.update(throughput_bps=_num(s, "bits_per_second"), sent_bytes=totals["sent"])
        if not udp:
            row.update(cwnd_bytes=_num(s, "snd_cwnd"), srtt_s=_positive(s, "rtt", 1e-6),
                       rttvar_s=_num(s, "rttvar", 1e-6) if _positive(s, "rtt") else None)
            retx = _num(s, "retransmits")
            if retx is not None:
                totals["retx"] += retx
                row["retransmits"] = totals["retx"]
    else:
        totals["delivered"] += nbytes
        row.update(goodput_bps=_num(s, "bits_per_second"), delivered_bytes=totals["delivered"])
        if udp:
            row["jitter_s"] = _num(s, "jitter_ms", 1e-3)
    return row


def _samples(rows: list[dict[str, Any]], sends: bool, udp: bool) -> list[dict[str, Any]]:
    totals: dict[str, float] = defaultdict(float)
    return [dict(_sample(s, sends, udp, totals), time_s=_num(s, "end")) for s in rows]


def _spans(rows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """Each interval record's (start, end), seconds from its side's start of the test."""
    return [(_num(r, "start") or 0.0, _num(r, "end") or 0.0) for r in rows]


_NO_PEER = {
    "absent": "the file holds the client's half of the stream only; run the client with "
              "--get-server-output against a server started with `iperf3 -s -J`",
    "text": "the server's output in the file is text (its server ran without -J); start the "
            "server with `iperf3 -s -J`",
    "server": "the file is the server's and holds its half of the stream only; import the "
              "client's file (run with --get-server-output) for both halves",
}
"""Why one half of a stream is missing, by what the file holds of its peer."""


def _peer(doc: dict[str, Any], views: dict[int, tuple[bool, list[dict[str, Any]]]], server: bool
          ) -> tuple[dict[int, tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]], str, str]:
    """The other side's half of each stream, from ``server_output_json`` (a client run with
    ``--get-server-output`` against a server started with ``-J``): its streams are paired with
    this file's in order per direction (the socket numbers of the two sides differ).

    Returns:
        (local socket → (the peer's non-omitted interval records of it, the peer's end records
        of it), what was done (for run.json), why a stream has no peer half (for warnings)).
    """
    if server:
        return {}, "absent", _NO_PEER["server"]
    peer = doc.get("server_output_json")
    if not isinstance(peer, dict):
        if isinstance(doc.get("server_output_text"), str):
            return {}, "ignored: the server's output is text", _NO_PEER["text"]
        return {}, "absent", _NO_PEER["absent"]
    try:
        check(peer, _SERVER_OUTPUT, "server_output_json")
        peer_views = _views(peer.get("intervals") or [])
    except ImportProblem as err:
        return {}, f"ignored: {err}", f"the server's output in the file was not used ({err})"
    peer_ends = _end_records(peer.get("end") or {}) if isinstance(peer.get("end"), dict) else {}
    pairs: dict[int, tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]] = {}
    for sends in (True, False):
        mine = [k for k, (s, _) in views.items() if s == sends]
        theirs = [k for k, (s, _) in peer_views.items() if s != sends]
        if len(mine) != len(theirs):
            why = (f"the server's output has {len(theirs)} stream(s) in a direction where the "
                   f"client's has {len(mine)}")
            return {}, f"ignored: {why}", f"the server's output in the file was not used ({why})"
        for local, remote in zip(mine, theirs):
            pairs[local] = (peer_views[remote][1], peer_ends.get(remote, {}))
    return pairs, f"merged ({len(pairs)} streams, aligned by time)", ""


def _merge(samples: list[dict[str, Any]], rows: list[dict[str, Any]],
           peer_rows: list[dict[str, Any]], sends: bool, udp: bool) -> None:
    """Add the peer's half of a stream to its ``samples`` (one per own interval ``rows``),
    aligned by time (:func:`ccarena.importers.align.align`); a receiving peer's intervals after
    the own last one are appended as samples of their own."""
    if not peer_rows:
        return
    peer = _samples(peer_rows, not sends, udp)
    aligned, trailing = align(_spans(rows), _spans(peer_rows), peer, tail=sends)
    for row, extra in zip(samples, aligned):
        row.update({k: v for k, v in extra.items() if k not in row})
    samples.extend(trailing)


def _coverage(rows: list[dict[str, Any]], peer_rows: list[dict[str, Any]]) -> str:
    """Why some samples have no peer half: the span each side's intervals cover."""
    def span(r: list[dict[str, Any]]) -> str:
        return f"{_num(r[0], 'start') or 0.0:.2f}–{_num(r[-1], 'end') or 0.0:.2f} s" if r else "no time"
    return f"the server's intervals cover {span(peer_rows)} of the client's {span(rows)}"


def _end_records(end: dict[str, Any]) -> dict[int, dict[str, dict[str, Any]]]:
    """Socket → its end records (``sender`` and ``receiver`` for TCP, ``udp`` for UDP)."""
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for entry in end.get("streams") or []:
        if not isinstance(entry, dict):
            continue
        for key, record in entry.items():
            if isinstance(record, dict) and isinstance(record.get("socket"), int):
                out.setdefault(record["socket"], {})[key] = record
    return out


def _tcp_totals(snd: dict[str, Any], rcv: dict[str, Any], rtt: dict[str, Any]
                ) -> tuple[dict[str, float], float, float]:
    """A TCP stream's totals from its ``sender`` and ``receiver`` end records, its RTT from the
    sending side's own record ``rtt``; with its start and end (s)."""
    totals = {
        "bytes_sent": _num(snd, "bytes"), "bytes_delivered": _num(rcv, "bytes"),
        "throughput_mean_bps": _num(snd, "bits_per_second"),
        "goodput_mean_bps": _num(rcv, "bits_per_second"),
        "packets_retransmitted": _num(snd, "retransmits"),
        "rtt_min_s": _positive(rtt, "min_rtt", 1e-6), "rtt_mean_s": _positive(rtt, "mean_rtt", 1e-6),
    }
    starts = [v for v in (_num(snd, "start"), _num(rcv, "start")) if v is not None]
    ends = [v for v in (_num(snd, "end"), _num(rcv, "end")) if v is not None]
    return ({k: v for k, v in totals.items() if v is not None},
            min(starts) if starts else math.nan, max(ends) if ends else math.nan)


def _udp_totals(record: dict[str, Any], sends: bool, blksize: float | None,
                received_rows: list[dict[str, Any]], received_sum: dict[str, Any] | None
                ) -> tuple[dict[str, float], float, float]:
    """A UDP stream's totals from its ``udp`` end record (written by the side that ``sends`` it
    or receives it), with its start and end (s).

    What was delivered is read where iperf3 3.12 counts it right: the receiver's intervals
    (``received_rows``: bytes, and packets less lost ones, over the intervals' span) — its end
    record of a stream has the sender's bytes (a client's file) or 0 (a server's); without them,
    the receiver's total ``received_sum`` (``end.sum_received``; given for a stream alone in its
    direction); else (packets − lost) × ``blksize`` over the record's span.
    """
    packets, lost = _num(record, "packets"), _num(record, "lost_packets")
    start, end = _num(record, "start"), _num(record, "end")
    span = end - start if start is not None and end is not None else math.nan
    received = packets - lost if packets is not None and lost is not None else None
    sent_b = _num(record, "bytes") if sends else (packets * blksize if packets is not None and blksize else None)
    delivered_b = received * blksize if received is not None and blksize else None
    rx_span = span
    if received_rows:
        delivered_b = sum(_num(r, "bytes") or 0.0 for r in received_rows)
        counts = [(_num(r, "packets"), _num(r, "lost_packets")) for r in received_rows]
        if all(p is not None and q is not None for p, q in counts):
            received = sum(p - q for p, q in counts)  # type: ignore[operator]
        rx_span = (_num(received_rows[-1], "end") or 0.0) - (_num(received_rows[0], "start") or 0.0)
    elif received_sum and _num(received_sum, "bytes"):
        delivered_b = _num(received_sum, "bytes")
        rx_span = _num(received_sum, "seconds") or span
        if blksize and delivered_b is not None:
            received = delivered_b / blksize
    totals = {"bytes_sent": sent_b, "bytes_delivered": delivered_b, "packets_sent": packets,
              "packets_lost": lost, "packets_received": received,
              "jitter_s": _num(record, "jitter_ms", 1e-3)}
    for key, size, over in (("goodput_mean_bps", delivered_b, rx_span), ("throughput_mean_bps", sent_b, span)):
        if size is not None and over > 0:
            totals[key] = metrics.rate_bps(size, over)
    return ({k: v for k, v in totals.items() if v is not None},
            start if start is not None else math.nan, end if end is not None else math.nan)


_SENDER_SAMPLES = {"tcp": ("throughput_bps", "cwnd_bytes", "srtt_s"), "udp": ("throughput_bps",)}
"""Sample columns of a stream's sending half, by protocol (goodput is the receiving half's)."""

_EXPECTED = {"tcp": ("throughput_bps", "cwnd_bytes", "srtt_s", "rtt_mean_s"),
             "udp": ("throughput_bps", "loss_rate", "jitter_s")}
"""Metrics beyond goodput an iperf3 stream should give with both halves, by protocol."""


def parse(path: Path) -> ImportedRun:
    """One iperf3 ``--json`` file as an :class:`ImportedRun` (see the module doc for the mapping).

    Raises:
        ImportProblem: the file is not a complete iperf3 result (:func:`load`), or a stream has
            no end record.
    """
    doc, sha = load(path)
    start, end = doc["start"], doc["end"]
    test = start.get("test_start") or {}
    udp = str(test.get("protocol", "TCP")).upper() == "UDP"
    kind = "udp" if udp else "tcp"
    server = "accepted_connection" in start and "connecting_to" not in start
    views = _views(doc["intervals"])
    if not any(rows for _, rows in views.values()):
        raise ImportProblem("has no intervals outside the omitted start (-O): nothing to sample")
    ends = _end_records(end)
    pairs, peer_status, no_peer = _peer(doc, views, server)
    bidir = len({sends for sends, _ in views.values()}) > 1
    blksize = _num(test, "blksize")
    mss = _num(start, "tcp_mss") or _num(start, "tcp_mss_default")
    counts: dict[str, int] = defaultdict(int)
    directions = {}
    for sock, (sends, _) in views.items():
        directions[sock] = "upload" if sends != server else "download"
        counts[directions[sock]] += 1
    seen: dict[str, int] = defaultdict(int)
    flows = []
    for sock, (sends, rows) in views.items():
        direction = directions[sock]
        if sock not in ends:
            raise ImportProblem(f"stream {sock} has no end record (the test did not finish)")
        peer_rows, peer_end = pairs.get(sock, ([], {}))
        samples = _samples(rows, sends, udp)
        _merge(samples, rows, peer_rows, sends, udp)
        # What the peer's half would have given, and why it is missing where it is.
        halves = (("goodput_bps", "jitter_s") if sends else
                  _SENDER_SAMPLES[kind] + (() if udp else ("rtt_mean_s",)))
        why = no_peer if sock not in pairs else _coverage(rows, peer_rows)
        missing = {metric: why for metric in halves}
        if udp:
            own_rx = [] if sends else rows
            received_sum = None
            if not server and counts[direction] == 1:
                received_sum = end.get("sum_received_bidir_reverse" if bidir and direction == "download"
                                       else "sum_received")
            totals, t0, t1 = _udp_totals(ends[sock].get("udp", {}), sends, blksize,
                                         own_rx or (peer_rows if sends else []),
                                         received_sum if isinstance(received_sum, dict) else None)
            flavor = "udp"
            if blksize:
                totals["mss_bytes"] = blksize
        else:
            # A client's file holds both ends' records (the server sends its own at the end); a
            # server's holds zeros for the client's end: only its own end is read there. The RTT
            # is the sending side's: a client's record of a stream it receives has 0 (-R) or its
            # receiving socket's (--bidir), not the sender's.
            own = ends[sock]
            snd = own.get("sender", {}) if sends or not server else {}
            rcv = own.get("receiver", {}) if not sends or not server else {}
            rtt = own.get("sender", {}) if sends else peer_end.get("sender", {})
            totals, t0, t1 = _tcp_totals(snd, rcv, rtt)
            key = "receiver_tcp_congestion" if bidir and direction == "upload" else "sender_tcp_congestion"
            flavor = str(end.get(key) or "unknown")
            if mss:
                totals["mss_bytes"] = mss
        if not math.isfinite(t0) or not math.isfinite(t1):
            t0 = min((_num(r, "start") or 0.0) for r in rows) if rows else 0.0
            t1 = max((_num(r, "end") or 0.0) for r in rows) if rows else 0.0
        seen[direction] += 1
        name = f"{flavor}-{direction}" + (f"-{seen[direction]}" if counts[direction] > 1 else "")
        flows.append(ImportedFlow(name=name, kind=kind, flavor=flavor, direction=direction,
                                  start_s=t0, end_s=t1, totals=totals, samples=samples,
                                  expected=_EXPECTED[kind], missing=missing))
    first = next(rows for _, rows in views.values() if rows)
    interval = statistics.median([_num(r, "seconds") or 0.0 for r in first]) or 1.0
    info = {
        "tool": "iperf3", "version": start.get("version"), "system_info": start.get("system_info"),
        "time": (start.get("timestamp") or {}).get("time"), "role": "server" if server else "client",
        "connecting_to": start.get("connecting_to"), "test_start": test, "bidir": bidir,
        "sender_tcp_congestion": end.get("sender_tcp_congestion"),
        "receiver_tcp_congestion": end.get("receiver_tcp_congestion"),
        "cpu_utilization_percent": end.get("cpu_utilization_percent"),
        "server_output_json": peer_status,
    }
    return ImportedRun(tool="iperf3", path=path, sha256=sha, flows=flows,
                       duration_s=max(f.end_s for f in flows), interval_s=float(interval), info=info)


def about(run: ImportedRun) -> str:
    """A short description of an imported iperf3 run (for experiment.json's text)."""
    test = run.info.get("test_start") or {}
    host = (run.info.get("connecting_to") or {}).get("host")
    bits = [f"{test.get('protocol', '?')}", f"{test.get('num_streams', '?')} stream(s)"]
    if run.info.get("bidir"):
        bits.append("bidir")
    elif test.get("reverse"):
        bits.append("reverse")
    bits.append(f"{test.get('duration', '?')} s")
    if host:
        bits.append(f"to {host}")
    return f": iperf3 {run.info.get('version') or ''}, " + ", ".join(bits)
