"""Scenario → the run spec (:class:`ccarena.runspec.RunSpec`), every default explicit.

The engine decides no defaults: the defaults are the run spec models' own, and the resolved spec is
stored with each run (``run.json``), so a run can be replayed from it alone. Beside the spec,
:func:`resolve_run` returns facts derived from the topology that the metrics and theory need but
the engine does not (each flow's path, base RTT, bottleneck rate, path loss, link roles).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ccarena import flavors as flavor_catalog
from ccarena.runspec import (
    TCP_DEFAULTS,
    CbrFlowSpec,
    FlowSpec,
    LinkSpec,
    NodeSpec,
    RouteSpec,
    RunSpec,
    TcpFlowSpec,
    UdtFlowSpec,
)
from ccarena.scenario import Flow, Scenario
from ccarena.scenario.events import resolve_events
from ccarena.topology.network import Network

_FLOW_FIELDS = tuple(name for name in TCP_DEFAULTS if name not in ("header_bytes", "ack_bytes",
                                                                   "clock_granularity_ns")) \
    + ("rwnd_bytes", "sndbuf_bytes")
"""Host settings a scenario's flow may give (the rest of :data:`TCP_DEFAULTS` are fixed)."""


@dataclass(frozen=True)
class ResolvedRun:
    """One run, ready for the engine.

    Attributes:
        spec: the run spec (every value explicit).
        derived: per-flow and per-link facts for metrics and theory:
            ``{"flows": [{"name", "path_links", "reverse_path_links", "base_rtt_s",
            "bottleneck_rate_bps", "path_loss", "mss_bytes"}], "links": [{"name", "role"}]}``.
    """

    spec: RunSpec
    derived: dict[str, Any]

    def spec_sha256(self) -> str:
        """SHA-256 of the spec's canonical JSON: identifies the run's inputs (used to skip
        finished runs)."""
        return self.spec.sha256()


def _params(flow: Flow, entry: dict[str, Any]) -> dict[str, float]:
    """The controller's parameters: every default from the catalogue, overridden by the flow's."""
    params = {p["name"]: float(p["default"]) for p in entry["params"]}
    params.update({k: float(v) for k, v in (flow.params or {}).items()})
    return params


def _tcp_flow(flow: Flow, base: dict[str, Any]) -> TcpFlowSpec:
    entry = flavor_catalog.tcp_flavors()[flow.flavor]
    # A flavor built on ECN (DCTCP) negotiates it unless the flow says otherwise.
    settings: dict[str, Any] = {"ecn": bool(entry.get("needs_ecn", False))}
    settings.update({key: getattr(flow, key) for key in _FLOW_FIELDS if getattr(flow, key) is not None})
    return TcpFlowSpec(**base, bytes=flow.size_bytes, flavor=flow.flavor,
                       params=_params(flow, entry),
                       recovery=flow.recovery or entry["default_recovery"], **settings)


def _udt_flow(flow: Flow, base: dict[str, Any]) -> UdtFlowSpec:
    entry = flavor_catalog.engine_flavors()[flow.flavor]
    window: dict[str, Any] = {}
    if flow.rwnd_bytes is not None:  # UDT's flow window is the receiver's buffer, in packets
        mss = UdtFlowSpec.model_fields["mss_bytes"].default
        window["flow_window_packets"] = max(2, flow.rwnd_bytes // mss)
    return UdtFlowSpec(**base, bytes=flow.size_bytes, params=_params(flow, entry), **window)


def _udp_flow(flow: Flow, base: dict[str, Any]) -> CbrFlowSpec:
    packet = {"packet_bytes": flow.packet_bytes} if flow.packet_bytes is not None else {}
    return CbrFlowSpec(**base, rate_bps=flow.rate_bps, **packet)


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
    net = scenario.network()
    index = net.node_index()
    names = scenario.flow_names()
    jitter_ns = _start_jitter(scenario, seed)
    flows_spec: list[FlowSpec] = []
    flows_derived: list[dict[str, Any]] = []
    for flow, name in zip(scenario.flows, names):
        start_ns = flow.start_ns + jitter_ns.pop(0)
        base = {"name": name, "src": index[flow.src], "dst": index[flow.dst],
                "start_ns": start_ns, "stop_ns": flow.stop_ns}
        build = {"tcp": _tcp_flow, "udt": _udt_flow}.get(flow.transport, _udp_flow)
        spec = build(flow, base)
        flows_spec.append(spec)
        forward, back = net.path(flow.src, flow.dst), net.path(flow.dst, flow.src)
        if isinstance(spec, CbrFlowSpec):
            facts = _path_facts(net, forward, back, spec.packet_bytes + spec.header_bytes, 0)
            facts["mss_bytes"] = spec.packet_bytes
        else:
            facts = _path_facts(net, forward, back, spec.mss_bytes + spec.header_bytes,
                                spec.ack_bytes)
            facts["mss_bytes"] = spec.mss_bytes
        flows_derived.append({"name": name, **facts})
    spec = RunSpec(
        seed=int(seed),
        duration_ns=scenario.duration_ns,
        sample_interval_ns=scenario.output.sample_interval_ns,
        nodes=tuple(NodeSpec(name=n.name, kind=n.kind) for n in net.nodes),
        links=tuple(
            LinkSpec(name=link.name, from_=index[link.src], to=index[link.dst],
                     rate_bps=link.rate_bps, delay_ns=link.delay_ns, loss=link.loss,
                     queue=link.queue)
            for link in net.links
        ),
        routes=tuple(RouteSpec(node=n, dst=d, link=k) for n, d, k in net.routes()),
        flows=tuple(flows_spec),
        events=tuple(resolve_events(scenario.events, net, scenario.duration_ns)),
    )
    derived = {"flows": flows_derived,
               "links": [{"name": link.name, "role": link.role} for link in net.links]}
    return ResolvedRun(spec=spec, derived=derived)
