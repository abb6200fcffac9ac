"""What a run will cost, estimated before it starts, and the refusal of runs this machine cannot hold.

The estimate is deliberately coarse (within a small factor): it exists to refuse, in a
millisecond, a run that would take gigabytes — ``sample_interval = "1ns"``, an initial window of
a billion packets, a queue limit of ``1e18pkt`` that the traffic can fill — instead of letting it
exhaust the machine. It counts:

* packets: on every link, the smaller of what the link can carry in the run and what the flows
  crossing it can offer (each window-based flow at most its equal share of its path's tightest
  link, rate / flows crossing it; a CBR flow its rate); acknowledgements on the reverse path one
  per ``ack_every`` segments;
* events: a few per packet per hop (enqueue, departure, arrival, timers);
* memory: stored sample rows (per flow and per link and sample interval, as they pass through the
  engine, Python and the tables), each sender's window of segments in flight (the initial window,
  and what the path and its queues can hold), and the packets the queues can hold.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ccarena.errors import UserError
from ccarena.runspec import CbrFlowSpec, LinkSpec, RunSpec
from ccarena.units import format_bytes

SAMPLE_ROW_BYTES = 600
"""Peak bytes per stored sample row across the engine's columns, their Python lists, the data
frame and the metrics that read it (measured: a 1-flow, 10 ms-interval run of 20 s)."""
SEGMENT_BYTES = 160
"""Bytes per segment a sender keeps while it is in flight (scoreboard entry, packet, RTT sample)."""
QUEUED_PACKET_BYTES = 96
"""Bytes per packet waiting in a queue or on a wire."""
EVENTS_PER_PACKET_HOP = 3.0
"""Events per packet per link crossed (departure, arrival, and the share of timers and ACKs)."""


@dataclass(frozen=True)
class RunEstimate:
    """A run's estimated cost: ``packet_hops`` and ``events`` (counts), ``sample_rows`` and
    ``memory_bytes`` (peak)."""

    packet_hops: float
    events: float
    sample_rows: float
    memory_bytes: float

    def describe(self) -> str:
        """``~2.1e+08 events, ~3 GB`` for messages."""
        return f"~{self.events:.2g} events, ~{format_bytes(self.memory_bytes)} of memory"


def default_max_memory_bytes() -> int:
    """Half of this machine's physical memory: the default per-run budget."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError):
        return 4 * 10**9


def _limit_packets(link: LinkSpec, packet_bytes: int) -> float:
    q = link.queue
    return float(q.limit_packets) if q.limit_packets is not None else (q.limit_bytes or 0) / packet_bytes


def estimate_run(spec: RunSpec, derived: dict) -> RunEstimate:
    """Estimate one run's cost from its spec and derived facts (the flows' paths).

    Args:
        spec: the run spec.
        derived: :class:`ccarena.experiment.resolve.ResolvedRun`'s ``derived`` (``flows[i]``
            has ``path_links``, ``reverse_path_links``, ``bottleneck_rate_bps``, ``base_rtt_s``).
    """
    duration_s = spec.duration_ns / 1e9
    sharing = [0] * len(spec.links)  # window-based flows whose data crosses each link
    for flow, facts in zip(spec.flows, derived["flows"]):
        if not isinstance(flow, CbrFlowSpec):
            for i in facts["path_links"]:
                sharing[i] += 1
    offered_pps = [0.0] * len(spec.links)  # packets per second offered to each link
    smallest_packet = [float("inf")] * len(spec.links)
    window_bytes = 0.0
    for flow, facts in zip(spec.flows, derived["flows"]):
        if isinstance(flow, CbrFlowSpec):
            packet = flow.packet_bytes + flow.header_bytes
            rate_pps, ack_pps, ack = flow.rate_bps / (8 * flow.packet_bytes), 0.0, packet
        else:
            packet = flow.mss_bytes + flow.header_bytes
            share_bps = min((spec.links[i].rate_bps / sharing[i] for i in facts["path_links"]),
                            default=facts["bottleneck_rate_bps"])
            rate_pps = share_bps / (8 * packet)
            ack_pps = rate_pps / max(1, getattr(flow, "ack_every_segments", 1))
            ack = flow.ack_bytes
            path_packets = rate_pps * facts["base_rtt_s"] + sum(
                _limit_packets(spec.links[i], packet) / sharing[i] for i in facts["path_links"])
            initial = getattr(flow, "initial_cwnd_packets", 0)
            window_bytes += (initial + min(path_packets, rate_pps * duration_s)) * SEGMENT_BYTES
        for i in facts["path_links"]:
            offered_pps[i] += rate_pps
            smallest_packet[i] = min(smallest_packet[i], packet)
        for i in facts["reverse_path_links"]:
            offered_pps[i] += ack_pps
            smallest_packet[i] = min(smallest_packet[i], ack)
    packet_hops = 0.0
    queued_bytes = 0.0
    for i, link in enumerate(spec.links):
        if offered_pps[i] == 0:
            continue
        capacity_pps = link.rate_bps / (8 * smallest_packet[i])
        packet_hops += min(capacity_pps, offered_pps[i]) * duration_s
        queued_bytes += min(_limit_packets(link, smallest_packet[i]), offered_pps[i] * duration_s) \
            * QUEUED_PACKET_BYTES
    intervals = spec.duration_ns / max(1, spec.sample_interval_ns)
    sample_rows = intervals * (len(spec.flows) + len(spec.links))
    memory = sample_rows * SAMPLE_ROW_BYTES + window_bytes + queued_bytes
    return RunEstimate(packet_hops=packet_hops, events=packet_hops * EVENTS_PER_PACKET_HOP,
                       sample_rows=sample_rows, memory_bytes=memory)


def check_budget(plans: list, max_memory_bytes: int | None = None) -> None:
    """Refuse the experiment if any run's estimated memory exceeds the budget.

    Args:
        plans: the experiment's :class:`ccarena.experiment.expand.RunPlan` list.
        max_memory_bytes: per-run budget; None = :func:`default_max_memory_bytes`.

    Raises:
        UserError: naming the first run over budget, its estimate, what drives it and how to
            raise the budget (``--max-memory``).
    """
    budget = max_memory_bytes if max_memory_bytes is not None else default_max_memory_bytes()
    for plan in plans:
        spec = plan.resolved.spec
        est = estimate_run(spec, plan.resolved.derived)
        if est.memory_bytes > budget:
            rows = f"{est.sample_rows:.2g} sample rows"
            raise UserError(
                f"run {plan.run_id} would need {est.describe()} ({rows}) and the budget is "
                f"{format_bytes(budget)}: use a longer output.sample_interval, a shorter duration "
                f"or smaller windows, or raise the budget with --max-memory")
