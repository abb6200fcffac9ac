"""The simulator's four tables (docs/engine-spec.md) from what the kernel run measured.

Same columns and units as :func:`ccarena.backends.sim.run_spec`; NaN where the kernel cannot say.
Where each number comes from:

``samples`` (per flow, at ``t0 + k·interval``): ``delivered_bytes`` and ``goodput_bps`` from the
receiving application's byte count; ``sent_bytes``/``throughput_bps`` from ``tcpi_bytes_sent``
(retransmissions included; UDP: datagrams sent × payload); ``cwnd_bytes`` = ``snd_cwnd·mss``,
``ssthresh_bytes`` (NaN while infinite), ``srtt_s``, ``rttvar_s``, ``rto_s``,
``inflight_bytes`` = (unacked − sacked − lost + retrans)·mss, ``pacing_rate_bps``,
``retransmits`` (cumulative ``tcpi_total_retrans``), ``ca_state`` — all from TCP_INFO.

``flows``: byte totals at the run's end (consistent with the samples); packet counts after the
sender has drained (``data_segs_out`` at the sender, ``data_segs_in`` at the receiver), so
``packets_lost`` = sent − received counts the data segments that never arrived. ``rtt_min_s`` is
the kernel's ``tcpi_min_rtt`` (minimum over per-ACK samples); mean and percentiles are over the
flow's srtt samples (one per interval, ``rtt_samples`` of them): the kernel does not expose its
per-ACK samples. ``rto_count`` is ``tcpi_total_rto`` (Linux ≥ 6.7); ``fast_recoveries``,
``spurious_rtos`` and ``duplicate_bytes_received`` are NaN. ``ce_packets`` and ``ce_bytes`` are
the receiver's ``tcpi_received_ce`` and ``tcpi_received_ce_bytes`` (Linux ≥ 6.18; NaN before).
A UDP flow's ``bytes_offered`` also counts the datagrams that fell due while its sender was
stalled and were skipped rather than sent in a burst
(:data:`ccarena.backends.kernel.trafficgen.MAX_CATCH_UP_NS`).

``sender_cpu_s``, ``sender_wall_s``, ``cpu_mhz`` (:data:`ccarena.backends.CPU_FLOW_COLUMNS`):
the sender process's user + system CPU seconds over its sending interval (from the flow's start
to its stop, its completion, or the run's end), that interval's wall-clock length, and the mean
CPU clock of readings at its start and end (:class:`ccarena.backends.kernel.trafficgen.CpuMeter`;
docs/metrics.md, "CPU cost", says what is and is not counted).

An MPTCP flow (``TcpFlowSpec.mptcp``): its samples and flows row sum its subflows (bytes,
windows, flight, retransmissions, packets; the smallest srtt and min_rtt; the first subflow's
rttvar, RTO and CA state; ``ssthresh_bytes`` and ``pacing_rate_bps`` NaN), as the simulator's
MPTCP rows do, and the flows row's RTT mean and percentiles over every subflow's srtt weighted
by the bytes it delivered (:func:`mptcp_rtt_samples`); its ``subflows``, ``coupling`` and
``bytes_reinjected`` come from Linux's MPTCP (:func:`_mptcp_columns`), and the ``subflows``
table from each subflow's TCP_INFO (:func:`subflow_rows`), read with ``MPTCP_FULL_INFO`` at
every sample instant.

``queues`` (per link, per sample): the link's queue at the sample instant, counted from the start
of traffic (backlog, drops, departures; arrivals = departures + drops + backlog). In relay mode
the link emulator computes it exactly at the instant (its model's state) and times every
packet's wait, so ``sojourn_mean_s`` is the mean wait of the packets that left the queue during
the interval, as in the simulator; in tc mode it is htb's root qdisc read over netlink, and
``sojourn_mean_s`` is NaN (pfifo does not time packets). ``marks`` (packets marked CE) and
``early_drops`` (of ``drops``, the AQM's own: RED's and PIE's early drops, CoDel's drops at
dequeue) are the relay's counts, as the simulator's; 0 with htb, which neither marks nor drops
early. The AQM probabilities are the relay's, sampled at the instant as the simulator samples
them: ``aqm_prob_classic`` (DualPI2's p_C = p'², RFC 9332 §2.1; PIE's drop probability, RFC 8033
§4.2) and ``aqm_prob_l4s`` (DualPI2's p_CL = min(k·p', 1)); NaN for other disciplines and in tc
mode. ``red_avg`` is NaN (the relay does not report RED's average).

``links``: the same counters at the end; ``packets_lost_wire`` from the relay's (or the loss
rule's) own count; ``packets_delivered`` = departures − lost on the wire + the wire's copies
(packets still propagating at the end count as delivered); ``packets_duplicated`` and
``packets_reordered`` are the relay's counts of packets its wire sent twice or held back (0 in tc
mode, which does neither); ``utilization`` is the relay's busy time over the
run (right under rate changes) or, with htb, the bytes sent over rate × duration; ``bytes_in``,
``packets_in_flight_end`` are NaN. DualPI2's per-class columns (``l4s_…``, ``classic_…``, relay
mode): ``packets_departed``, ``packets_marked``, ``packets_dropped`` and ``sojourn_mean_s`` from
the relay's per-class counters over the run (final minus baseline reading, as the other counts);
``sojourn_min_s``, the percentiles and ``sojourn_max_s`` from its per-class sojourn histogram,
which covers the relay's whole life (the few packets before ``t0`` and after the end too; the
percentiles to within one bucket, ≤ 1.6%, as the simulator's); NaN on other links and in tc mode.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ccarena.backends import (
    AQM_PROBABILITY_COLUMNS,
    CPU_FLOW_COLUMNS,
    DUALPI2_CLASSES,
    DUALPI2_LINK_COLUMNS,
    INTEGER_COLUMNS,
    MPTCP_FLOW_COLUMNS,
    OPPORTUNISTIC_SUBFLOW_COLUMNS,
)
from ccarena.runspec import RunSpec

NAN = math.nan

FLOW_COLUMNS = ("flow", "name", "kind", "flavor", "recovery", "start_s", "end_s", "bytes_offered",
                "bytes_sent", "bytes_retransmitted", "bytes_delivered", "packets_sent",
                "packets_retransmitted", "packets_received", "packets_lost", "rto_count",
                "fast_recoveries", "spurious_rtos", "duplicate_bytes_received", "completion_time_s",
                "rtt_min_s", "rtt_mean_s", "rtt_p50_s", "rtt_p95_s", "rtt_p99_s", "rtt_samples",
                "ce_packets", "ce_bytes", *MPTCP_FLOW_COLUMNS, *CPU_FLOW_COLUMNS)
SAMPLE_COLUMNS = ("time_s", "flow", "goodput_bps", "throughput_bps", "delivered_bytes", "sent_bytes",
                  "cwnd_bytes", "ssthresh_bytes", "srtt_s", "rttvar_s", "rto_s", "inflight_bytes",
                  "pacing_rate_bps", "retransmits", "ca_state")
QUEUE_COLUMNS = ("time_s", "link", "backlog_bytes", "backlog_packets", "drops", "marks", "arrivals",
                 "departures", "sojourn_mean_s", "red_avg", "early_drops", *AQM_PROBABILITY_COLUMNS)
LINK_COLUMNS = ("link", "name", "rate_bps", "delay_ns", "packets_in", "bytes_in", "packets_delivered",
                "packets_dropped_queue", "packets_marked", "packets_lost_wire", "down_drops_packets",
                "no_route_drops_packets", "packets_queued_end", "packets_in_flight_end",
                "bytes_transmitted", "utilization", "packets_duplicated", "packets_reordered",
                *DUALPI2_LINK_COLUMNS)
SUBFLOW_COLUMNS = ("time_s", "flow", "subflow", "goodput_bps", "delivered_bytes", "sent_bytes",
                   "cwnd_bytes", "srtt_s", "inflight_bytes", "retransmits", "rto_count",
                   "bytes_scheduled", "bytes_reinjected", "stale", *OPPORTUNISTIC_SUBFLOW_COLUMNS)
"""The ``subflows`` table (:data:`ccarena.backends.SUBFLOW_TABLE`), the simulator's columns."""
STRING_COLUMNS = ("name", "kind", "flavor", "recovery", "coupling")


def _num(v: Any) -> float:
    return NAN if v is None else float(v)


def frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    """Rows → a DataFrame in the engine's column order and types (ints where all finite)."""
    data: dict[str, Any] = {}
    for c in columns:
        values = [r.get(c) for r in rows]
        if c in STRING_COLUMNS:
            data[c] = pd.array(["" if v is None else str(v) for v in values], dtype="string")
            continue
        x = np.array([_num(v) for v in values], dtype=np.float64)
        if c in INTEGER_COLUMNS and np.all(np.isfinite(x)):
            x = x.astype(np.int64)
        data[c] = x
    return pd.DataFrame(data, columns=list(columns))


def _by_time(samples: list[dict[str, Any]], interval_s: float) -> dict[int, dict[str, Any]]:
    return {round(s["time_s"] / interval_s): s for s in samples}


def flow_rows(spec: RunSpec, results: dict[tuple[int, str], dict[str, Any]]
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(flows rows, samples rows) from each generator's result, keyed by (flow, "send"/"recv")."""
    interval_s = spec.sample_interval_ns / 1e9
    duration_s = spec.duration_ns / 1e9
    flows, samples = [], []
    for i, flow in enumerate(spec.flows):
        send, recv = results[(i, "send")], results[(i, "recv")]
        tcp = flow.kind == "tcp"
        start_s = flow.start_ns / 1e9
        stop_s = flow.stop_ns / 1e9 if flow.stop_ns is not None else duration_s
        sent_by_k, recv_by_k = _by_time(send["samples"], interval_s), _by_time(recv["samples"], interval_s)
        prev_sent = prev_delivered = 0.0
        srtts = []
        for k in sorted(set(sent_by_k) | set(recv_by_k)):
            s, r = sent_by_k.get(k, {}), recv_by_k.get(k, {})
            delivered, sent = _num(r.get("delivered_bytes")), _num(s.get("sent_bytes"))
            row = {"time_s": k * interval_s, "flow": i, "delivered_bytes": delivered,
                   "sent_bytes": sent,
                   "goodput_bps": (delivered - prev_delivered) * 8 / interval_s,
                   "throughput_bps": (sent - prev_sent) * 8 / interval_s}
            if tcp:
                for c in ("cwnd_bytes", "ssthresh_bytes", "srtt_s", "rttvar_s", "rto_s",
                          "inflight_bytes", "pacing_rate_bps", "retransmits", "ca_state"):
                    row[c] = s.get(c)
                if s.get("srtt_s") and start_s <= k * interval_s <= stop_s + 1e-9:
                    srtts.append(s["srtt_s"])
            samples.append(row)
            prev_sent = sent if math.isfinite(sent) else prev_sent
            prev_delivered = delivered if math.isfinite(delivered) else prev_delivered
        if tcp:
            weights = None
            if send.get("mptcp") is not None:
                srtts, weights = mptcp_rtt_samples(send, interval_s, start_s, stop_s)
            flows.append(_tcp_flow_row(i, flow, send, recv, start_s, stop_s, srtts, weights))
            if send.get("mptcp") is not None:
                flows[-1].update(_mptcp_columns(send))
        else:
            flows.append(_udp_flow_row(i, flow, send, recv, start_s, stop_s))
    return flows, samples


def _cpu(send: dict[str, Any]) -> dict[str, Any]:
    """The CPU columns from the sender's ``cpu`` result (None where it measured nothing)."""
    cpu = send.get("cpu") or {}
    return {"sender_cpu_s": cpu.get("cpu_s"), "sender_wall_s": cpu.get("wall_s"),
            "cpu_mhz": cpu.get("mhz")}


def mptcp_rtt_samples(send: dict[str, Any], interval_s: float, start_s: float, stop_s: float
                      ) -> tuple[list[float], list[float]]:
    """An MPTCP flow's RTT samples for its flows row, and their weights: every subflow's srtt
    (seconds) at each sample instant within the flow's interval, weighted by the bytes that
    subflow delivered since the previous instant. The simulator's row averages every ACK's RTT
    sample over all subflows, so a subflow counts by the data it carries; the connection's
    samples rows keep the smallest srtt, the subflow Linux's default scheduler prefers."""
    rtts: list[float] = []
    weights: list[float] = []
    last: dict[int, float] = {}
    for sample in send.get("samples", []):
        t = round(sample["time_s"] / interval_s) * interval_s
        for sf in sample.get("subflows") or []:
            delivered = _num(sf.get("delivered_bytes"))
            if not math.isfinite(delivered):
                continue
            gained = delivered - last.get(sf["subflow"], 0.0)
            last[sf["subflow"]] = delivered
            if sf.get("srtt_s") and gained > 0 and start_s <= t <= stop_s + 1e-9:
                rtts.append(sf["srtt_s"])
                weights.append(gained)
    return rtts, weights


def _tcp_flow_row(i: int, flow: dict[str, Any], send: dict[str, Any], recv: dict[str, Any],
                  start_s: float, stop_s: float, srtts: list[float],
                  weights: list[float] | None = None) -> dict[str, Any]:
    at_end = send.get("at_end") or send.get("drained") or {}
    drained = send.get("drained") or {}
    recv_drained = recv.get("drained") or {}
    sent_pk = drained.get("data_segs_out")
    recv_pk = recv_drained.get("data_segs_in")
    completion = send.get("completion_time_s")
    rtt = np.array(srtts, dtype=float)
    w = np.array(weights, dtype=float) if weights is not None and rtt.size else None

    def pct(q: float) -> float | None:
        if not rtt.size:
            return None
        return float(np.percentile(rtt, q) if w is None else np.percentile(rtt, q, weights=w, method="inverted_cdf"))

    min_rtt = drained.get("min_rtt")
    return {
        "flow": i, "name": flow.name, "kind": "tcp", "flavor": flow.flavor,
        "recovery": flow.recovery, "start_s": start_s,
        "end_s": start_s + completion if completion is not None else stop_s,
        "bytes_offered": at_end.get("offered_bytes", send.get("offered_bytes")),
        "bytes_sent": at_end.get("bytes_sent"), "bytes_retransmitted": at_end.get("bytes_retrans"),
        "bytes_delivered": recv.get("at_end_bytes"),
        "packets_sent": sent_pk, "packets_retransmitted": drained.get("total_retrans"),
        "packets_received": recv_pk,
        "packets_lost": None if sent_pk is None or recv_pk is None else max(0, sent_pk - recv_pk),
        "rto_count": drained.get("total_rto"), "fast_recoveries": None, "spurious_rtos": None,
        "duplicate_bytes_received": None, "completion_time_s": completion,
        "rtt_min_s": min_rtt / 1e6 if min_rtt not in (None, 0, 0xFFFFFFFF) else None,
        "rtt_mean_s": float(np.average(rtt, weights=w)) if rtt.size else None,
        "rtt_p50_s": pct(50), "rtt_p95_s": pct(95), "rtt_p99_s": pct(99),
        "rtt_samples": int(rtt.size),
        **_ce_columns(recv_drained),
        # A single-path connection: one subflow, nothing to reinject or reorder.
        "subflows": 1, "coupling": "", "bytes_reinjected": 0,
        **_cpu(send),
    }


def _ce_columns(recv_drained: dict[str, Any]) -> dict[str, Any]:
    """``ce_packets`` and ``ce_bytes`` from the receiver's TCP_INFO: ``tcpi_received_ce`` (data
    segments that arrived CE-marked) and ``tcpi_received_ce_bytes`` (their payload), which Linux
    6.18 counts with classic ECN as with Accurate ECN (RFC 9768 §3.2's counters). Measured
    through the relay's step marking: 115 of 115 marks, 166,520 bytes = 115 × 1448. Older kernels
    have no receiver count (NaN). The sender's ``tcpi_delivered_ce`` is not used: under classic
    ECN it counts every segment an ECE-flagged ACK acknowledged, the receiver echoing ECE from
    the mark until the CWR (RFC 3168 §6.1.3), so about a window per mark (319 for those 115)."""
    packets = recv_drained.get("received_ce")
    return {"ce_packets": packets,
            "ce_bytes": recv_drained.get("received_ce_bytes") if packets is not None else None}


def _udp_flow_row(i: int, flow: dict[str, Any], send: dict[str, Any], recv: dict[str, Any],
                  start_s: float, stop_s: float) -> dict[str, Any]:
    size = int(flow.packet_bytes)
    sent = int(send.get("sent_packets", 0))
    skipped = int(send.get("skipped_packets", 0))  # due while the sender was stalled: offered, not sent
    got = int(recv.get("received_packets", 0))
    return {
        "flow": i, "name": flow.name, "kind": flow.kind, "flavor": "udp-cbr", "recovery": "",
        "start_s": start_s, "end_s": stop_s, "bytes_offered": (sent + skipped) * size,
        "bytes_sent": sent * size,
        "bytes_retransmitted": 0, "bytes_delivered": recv.get("at_end_bytes"),
        "packets_sent": sent, "packets_retransmitted": 0, "packets_received": got,
        "packets_lost": max(0, sent - got), "rto_count": None, "fast_recoveries": None,
        "spurious_rtos": None, "duplicate_bytes_received": int(recv.get("duplicates", 0)) * size,
        "completion_time_s": None, "rtt_min_s": None, "rtt_mean_s": None, "rtt_p50_s": None,
        "rtt_p95_s": None, "rtt_p99_s": None, "rtt_samples": 0,
        # Datagrams are Not-ECT (RFC 3168 §6.1.4 leaves them out): no queue marks them.
        "ce_packets": 0, "ce_bytes": 0, "coupling": "",
        **_cpu(send),
    }


def _mptcp_columns(send: dict[str, Any]) -> dict[str, Any]:
    """An MPTCP flow's own columns from its sender's ``mptcp`` report
    (:class:`ccarena.backends.kernel.trafficgen.SubflowBook`): the subflows that were established
    during the run, ``coupling`` "uncoupled" (each subflow its own controller: Linux has no
    coupled one), and the data Linux's MPTCP level retransmitted on another subflow
    (``mptcpi_bytes_retrans``: reinjections). Linux does not time the data-level reordering wait:
    NaN."""
    report = send["mptcp"]
    conn = report.get("conn") or {}
    return {"subflows": report.get("subflows_seen"), "coupling": "uncoupled",
            "bytes_reinjected": conn.get("bytes_retrans"),
            "reorder_delay_mean_s": None, "reorder_delay_max_s": None}


def subflow_rows(spec: RunSpec, results: dict[tuple[int, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``subflows`` table's rows (:data:`SUBFLOW_COLUMNS`) of every MPTCP flow, one per live
    subflow per sample instant, from its sender's samples: ``subflow`` is Linux's subflow id − 1
    (0: the initial subflow); ``delivered_bytes`` is the subflow's ``tcpi_bytes_acked`` (the
    subflow-level bytes its receiver has in order, the SYN not counted) and ``goodput_bps`` its
    increase over the interval; ``sent_bytes``, ``cwnd_bytes``, ``srtt_s``, ``inflight_bytes``,
    ``retransmits`` and ``rto_count`` from the subflow's TCP_INFO as for a single-path flow.
    Linux does not tell which connection bytes it scheduled or reinjected on which subflow, nor
    whether it holds a subflow stale: ``bytes_scheduled``, ``bytes_reinjected`` and ``stale`` are
    NaN; so are :data:`ccarena.backends.OPPORTUNISTIC_SUBFLOW_COLUMNS` — null for "not
    measured", not 0: upstream Linux has no opportunistic retransmission, and the spec's
    ``opportunistic`` is refused on this backend (:func:`ccarena.backends.kernel.mptcp.check_flows`).
    Empty without MPTCP flows."""
    interval_s = spec.sample_interval_ns / 1e9
    rows: list[dict[str, Any]] = []
    for i, _ in enumerate(spec.flows):
        send = results.get((i, "send")) or {}
        if send.get("mptcp") is None:
            continue
        last: dict[int, float] = {}
        for sample in send.get("samples", []):
            k = round(sample["time_s"] / interval_s)
            for sf in sample.get("subflows") or []:
                delivered = _num(sf.get("delivered_bytes"))
                prev = last.get(sf["subflow"], 0.0)
                rows.append({"time_s": k * interval_s, "flow": i, "subflow": sf["subflow"],
                             "goodput_bps": (delivered - prev) * 8 / interval_s,
                             "delivered_bytes": delivered, "sent_bytes": sf.get("sent_bytes"),
                             "cwnd_bytes": sf.get("cwnd_bytes"), "srtt_s": sf.get("srtt_s"),
                             "inflight_bytes": sf.get("inflight_bytes"),
                             "retransmits": sf.get("retransmits"), "rto_count": sf.get("rto_count"),
                             "bytes_scheduled": None, "bytes_reinjected": None, "stale": None,
                             **dict.fromkeys(OPPORTUNISTIC_SUBFLOW_COLUMNS)})
                if math.isfinite(delivered):
                    last[sf["subflow"]] = delivered
    return rows


def queue_rows(readings: list[tuple[float, dict[int, Any]]], baseline: dict[int, Any],
               sampled: set[int] | None = None) -> list[dict[str, Any]]:
    """Queue rows from ``[(time_s, {link: QueueReading})]``, counters relative to ``baseline``;
    ``sojourn_mean_s`` over each interval's departures where the readings time packets. Only the
    links in ``sampled`` (None = every link), as the simulator samples them."""
    rows = []
    previous = dict(baseline)
    for time_s, per_link in readings:
        for link in sorted(per_link):
            if sampled is not None and link not in sampled:
                continue
            q, b, p = per_link[link], baseline.get(link), previous.get(link)
            drops = q.drops - (b.drops if b else 0)
            departures = q.departures - (b.departures if b else 0)
            sojourn = None
            if q.sojourn_total_ns is not None and p is not None and p.sojourn_total_ns is not None:
                departed = q.departures - p.departures
                sojourn = (q.sojourn_total_ns - p.sojourn_total_ns) / departed / 1e9 if departed else None
            previous[link] = q
            rows.append({"time_s": time_s, "link": link, "backlog_bytes": q.backlog_bytes,
                         "backlog_packets": q.backlog_packets, "drops": drops,
                         "marks": _since(q, b, "marks"),
                         "arrivals": departures + drops + q.backlog_packets,
                         "departures": departures, "sojourn_mean_s": sojourn,
                         "red_avg": None, "early_drops": _since(q, b, "early_drops"),
                         "aqm_prob_classic": getattr(q, "aqm_prob_classic", None),
                         "aqm_prob_l4s": getattr(q, "aqm_prob_l4s", None)})
    return rows


SOJOURN_PERCENTILES = ("p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99")
"""The relay's per-class sojourn percentiles, as the links table's ``sojourn_<p>_s`` columns."""


def _class_columns(q: Any, b: Any) -> dict[str, Any]:
    """DualPI2's per-class links columns (:data:`ccarena.backends.DUALPI2_LINK_COLUMNS`) from the
    final reading ``q`` and the baseline ``b``; empty (NaN) when ``q`` has no classes (another
    discipline, or htb)."""
    classes = getattr(q, "classes", None)
    if not classes:
        return {}
    before = getattr(b, "classes", None) or {}
    sojourn = getattr(q, "class_sojourn_ns", None) or {}
    out: dict[str, Any] = {}
    for c in DUALPI2_CLASSES:
        now, base = classes[c], before.get(c, {})
        count = {k: now[k] - base.get(k, 0) for k in now}
        s = sojourn.get(c) or {}
        seconds = {k: None if s.get(k) is None else s[k] / 1e9
                   for k in ("min", "max", *SOJOURN_PERCENTILES)}
        out.update({
            f"{c}_packets_departed": count["departed"], f"{c}_packets_marked": count["marked"],
            f"{c}_packets_dropped": count["dropped"],
            f"{c}_sojourn_mean_s": (count["sojourn_total_ns"] / count["departed"] / 1e9
                                    if count["departed"] else None),
            f"{c}_sojourn_min_s": seconds["min"], f"{c}_sojourn_max_s": seconds["max"],
            **{f"{c}_sojourn_{p}_s": seconds[p] for p in SOJOURN_PERCENTILES},
        })
    return out


def _since(q: Any, b: Any, key: str) -> int:
    """Counter ``key`` of reading ``q`` since the baseline ``b`` (0 for a reading without it:
    htb neither marks nor drops early)."""
    now = getattr(q, key, None)
    if now is None:
        return 0
    before = getattr(b, key, None) if b is not None else None
    return int(now) - int(before or 0)


def link_rows(spec: RunSpec, final: dict[int, Any], baseline: dict[int, Any],
              lost_wire: dict[int, int | None]) -> list[dict[str, Any]]:
    """Link rows from the final and baseline readings and each link's wire losses."""
    duration_s = spec.duration_ns / 1e9
    rows = []
    for i, link in enumerate(spec.links):
        q, b = final.get(i), baseline.get(i)
        if q is None:
            rows.append({"link": i, "name": link.name, "rate_bps": link.rate_bps,
                         "delay_ns": link.delay_ns})
            continue
        drops = q.drops - (b.drops if b else 0)
        departures = q.departures - (b.departures if b else 0)
        sent_bytes = q.departed_bytes - (b.departed_bytes if b else 0)
        lost = lost_wire.get(i)
        if q.busy_ns is not None:  # the relay's busy time: right when the rate changes mid-run
            busy_s = (q.busy_ns - (b.busy_ns or 0 if b is not None else 0)) / 1e9
        else:
            busy_s = sent_bytes * 8 / link.rate_bps
        rows.append({
            "link": i, "name": link.name, "rate_bps": link.rate_bps, "delay_ns": link.delay_ns,
            "packets_in": departures + drops + q.backlog_packets, "bytes_in": None,
            # The wire's copies are delivered too (as the simulator counts them).
            "packets_delivered": None if lost is None else departures - lost + _since(q, b, "duplicated"),
            "packets_dropped_queue": drops, "packets_marked": _since(q, b, "marks"),
            "packets_lost_wire": lost,
            # The kernel backend takes no link down (preflight refuses `up` events) and routes
            # every flow (static routes to every host).
            "down_drops_packets": 0, "no_route_drops_packets": 0,
            "packets_queued_end": q.backlog_packets, "packets_in_flight_end": None,
            "bytes_transmitted": sent_bytes,
            "utilization": busy_s / duration_s,
            "packets_duplicated": _since(q, b, "duplicated"),
            "packets_reordered": _since(q, b, "reordered"),
            **_class_columns(q, b),
        })
    return rows
