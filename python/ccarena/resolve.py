"""Scenario → the engine's resolved spec, with every default explicit (docs/engine-spec.md).

The engine decides no defaults: everything it needs is written here, and the resolved spec is
stored with each run (``run.json``), so a run can be replayed from it alone. Beside the spec,
:func:`resolve_run` returns facts derived from the topology that the metrics and theory need but
the engine does not (each flow's path, base RTT, bottleneck rate, path loss, link roles).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccarena import flavors as flavor_catalog
from ccarena.scenario import Flow, Scenario
from ccarena.schedule import resolve_events
from ccarena.topology.network import Network

SPEC_FORMAT = 1
"""Version of the engine spec this module writes (``"format"`` in the spec)."""

TCP_DEFAULTS: dict[str, Any] = {
    "mss_bytes": 1448,                 # Linux: 1500-byte MTU − 40 (IP+TCP) − 12 (timestamps)
    "header_bytes": 52,                # IPv4 20 + TCP 20 + timestamp option 12
    "ack_bytes": 52,                   # a pure ACK: the same headers, no payload
    "initial_cwnd_packets": 10,        # RFC 6928
    "min_rto_ns": 200_000_000,         # Linux TCP_RTO_MIN
    "initial_rto_ns": 1_000_000_000,   # RFC 6298 §2.1
    "max_rto_ns": 120_000_000_000,     # Linux TCP_RTO_MAX
    "clock_granularity_ns": 1_000_000,  # RFC 6298 G; 1 ms
    "dupthresh": 3,                    # RFC 5681 §3.2
    "delayed_ack_ns": 40_000_000,      # Linux TCP_DELACK_MIN
    "ack_every_segments": 2,           # RFC 5681 §4.2 / RFC 1122
    "ecn": False,
}
"""Linux-like TCP defaults (shared/FLAVORS.md), used for every field a flow does not set."""

UDP_DEFAULTS: dict[str, Any] = {
    "packet_bytes": 1472,  # fills a 1500-byte MTU: 1500 − 20 (IP) − 8 (UDP)
    "header_bytes": 28,    # IPv4 20 + UDP 8
}
"""Defaults for UDP CBR flows."""

UDT_DEFAULTS: dict[str, Any] = {
    "mss_bytes": 1456,                 # 1500 − 20 (IP) − 8 (UDP) − 16 (UDT header)
    "header_bytes": 44,                # IPv4 20 + UDP 8 + UDT 16
    "ack_bytes": 68,                   # UDT full ACK: header + 6 × 4-byte fields (draft-gg-udt-03 §3.2)
    "syn_interval_ns": 10_000_000,     # SYN = 10 ms (Gu & Grossman 2007)
    "flow_window_packets": 25_600,     # UDT4's default receiver buffer (packets)
    "initial_rtt_ns": 100_000_000,     # RTT assumed before the first measurement (draft: 100 ms)
    "min_exp_ns": 500_000_000,         # floor of the EXP (timeout) period
}
"""Defaults for UDT flows (Gu & Grossman 2007; draft-gg-udt-03)."""

_FLOW_FIELD_TO_SPEC = {
    "mss_bytes": "mss_bytes", "initial_cwnd_packets": "initial_cwnd_packets",
    "min_rto_ns": "min_rto_ns", "initial_rto_ns": "initial_rto_ns", "max_rto_ns": "max_rto_ns",
    "delayed_ack_ns": "delayed_ack_ns", "ack_every_segments": "ack_every_segments",
    "dupthresh": "dupthresh", "ecn": "ecn",
}


@dataclass(frozen=True)
class ResolvedRun:
    """One run, ready for the engine.

    Attributes:
        spec: the engine spec (JSON-ready dict; every value explicit).
        derived: per-flow and per-link facts for metrics and theory:
            ``{"flows": [{"name", "path_links", "reverse_path_links", "base_rtt_s",
            "bottleneck_rate_bps", "path_loss", "mss_bytes"}], "links": [{"name", "role"}]}``.
    """

    spec: dict[str, Any]
    derived: dict[str, Any]

    def spec_json(self) -> str:
        """The spec as canonical JSON (sorted keys, no spaces): what the engine is given."""
        return canonical_json(self.spec)

    def spec_sha256(self) -> str:
        """SHA-256 of :meth:`spec_json`: identifies the run's inputs (used to skip finished runs)."""
        return hashlib.sha256(self.spec_json().encode()).hexdigest()


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _params(flow: Flow, entry: dict[str, Any]) -> dict[str, float]:
    """The controller's parameters: every default from the catalogue, overridden by the flow's."""
    params = {p["name"]: float(p["default"]) for p in entry["params"]}
    params.update({k: float(v) for k, v in (flow.params or {}).items()})
    return params


def _tcp_flow(flow: Flow, base: dict[str, Any]) -> dict[str, Any]:
    entry = flavor_catalog.tcp_flavors()[flow.flavor]
    out = dict(base, kind="tcp", bytes=flow.size_bytes, flavor=flow.flavor, params=_params(flow, entry),
               recovery=flow.recovery or entry["default_recovery"])
    for key, value in TCP_DEFAULTS.items():
        out[key] = value
    # A flavor built on ECN (DCTCP) negotiates it unless the flow says otherwise.
    out["ecn"] = bool(entry.get("needs_ecn", False))
    for field, key in _FLOW_FIELD_TO_SPEC.items():
        value = getattr(flow, field)
        if value is not None:
            out[key] = value
    return out


def _udt_flow(flow: Flow, base: dict[str, Any]) -> dict[str, Any]:
    entry = flavor_catalog.engine_flavors()[flow.flavor]
    return dict(base, kind="udt", bytes=flow.size_bytes, params=_params(flow, entry), **UDT_DEFAULTS)


def _udp_flow(flow: Flow, base: dict[str, Any]) -> dict[str, Any]:
    kind = flavor_catalog.UDP_TRANSPORTS[flow.flavor]["engine_kind"]
    return dict(base, kind=kind, rate_bps=flow.rate_bps,
                packet_bytes=flow.packet_bytes or UDP_DEFAULTS["packet_bytes"],
                header_bytes=UDP_DEFAULTS["header_bytes"])


def _path_facts(net: Network, links: list[int], back: list[int], data_bytes: int,
                ack_bytes: int) -> dict[str, Any]:
    """Base RTT (propagation + serialization of one data packet out and one ACK back), the
    slowest link's rate and the forward path's loss probability 1 − Π(1 − p_i)."""
    rtt_s = 0.0
    for i in links:
        rtt_s += net.links[i].delay_ns / 1e9 + data_bytes * 8 / net.links[i].rate_bps
    for i in back:
        rtt_s += net.links[i].delay_ns / 1e9 + ack_bytes * 8 / net.links[i].rate_bps
    survive = 1.0
    for i in links:
        survive *= 1.0 - net.links[i].loss
    return {"path_links": links, "reverse_path_links": back, "base_rtt_s": rtt_s,
            "bottleneck_rate_bps": min(net.links[i].rate_bps for i in links),
            "path_loss": 1.0 - survive}


def _start_jitter(scenario: Scenario, seed: int) -> list[int]:
    """Each flow's start offset (ns): uniform on [0, start_jitter) from the run's seed, kept
    before the flow's stop and the end of the run; all 0 without jitter."""
    if scenario.start_jitter_ns <= 0:
        return [0] * len(scenario.flows)
    rng = np.random.default_rng([int(seed), 0x5A17])  # a stream of its own, apart from the engine's
    out = []
    for flow in scenario.flows:
        end = min(flow.stop_ns if flow.stop_ns is not None else scenario.duration_ns, scenario.duration_ns)
        room = max(0, min(scenario.start_jitter_ns, end - flow.start_ns - 1))
        out.append(int(rng.integers(0, room)) if room > 0 else 0)
    return out


def resolve_run(scenario: Scenario, seed: int) -> ResolvedRun:
    """Build the topology and write the engine spec for ``scenario`` with ``seed``.

    Raises:
        UserError: a flow's destination is unreachable.
    """
    net = scenario.topology.build()
    index = net.node_index()
    names = scenario.flow_names()
    jitter_ns = _start_jitter(scenario, seed)
    flows_spec: list[dict[str, Any]] = []
    flows_derived: list[dict[str, Any]] = []
    for flow, name in zip(scenario.flows, names):
        start_ns = flow.start_ns + jitter_ns.pop(0)
        base = {"name": name, "src": index[flow.src], "dst": index[flow.dst],
                "start_ns": start_ns, "stop_ns": flow.stop_ns}
        build = {"tcp": _tcp_flow, "udt": _udt_flow}.get(flow.transport, _udp_flow)
        spec = build(flow, base)
        flows_spec.append(spec)
        forward, back = net.path(flow.src, flow.dst), net.path(flow.dst, flow.src)
        if spec["kind"] in ("tcp", "udt"):
            facts = _path_facts(net, forward, back, spec["mss_bytes"] + spec["header_bytes"],
                                spec["ack_bytes"])
            facts["mss_bytes"] = spec["mss_bytes"]
        else:
            facts = _path_facts(net, forward, back, spec["packet_bytes"] + spec["header_bytes"], 0)
            facts["mss_bytes"] = spec["packet_bytes"]
        flows_derived.append({"name": name, **facts})
    spec = {
        "format": SPEC_FORMAT,
        "seed": int(seed),
        "duration_ns": scenario.duration_ns,
        "sample_interval_ns": scenario.output.sample_interval_ns,
        "nodes": [{"name": n.name, "kind": n.kind} for n in net.nodes],
        "links": [
            {"name": link.name, "from": index[link.src], "to": index[link.dst],
             "rate_bps": link.rate_bps, "delay_ns": link.delay_ns, "loss": link.loss,
             "queue": dict(link.queue)}
            for link in net.links
        ],
        "routes": [{"node": n, "dst": d, "link": k} for n, d, k in net.routes()],
        "flows": flows_spec,
        "events": resolve_events(scenario.events, net, scenario.duration_ns),
    }
    derived = {"flows": flows_derived,
               "links": [{"name": link.name, "role": link.role} for link in net.links]}
    return ResolvedRun(spec=spec, derived=derived)
