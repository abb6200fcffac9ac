"""Scenario → the run spec (:class:`ccarena.runspec.RunSpec`), every default explicit.

The engine decides no defaults: the defaults are the run spec models' own, and the resolved spec is
stored with each run (``run.json``), so a run can be replayed from it alone. Beside the spec,
:func:`resolve_run` returns facts derived from the topology that the metrics and theory need but
the engine does not (each flow's path, base RTT, bottleneck rate, path loss, link roles). The
engine computes the routes (the spec's ``routing``; ``routes`` holds only the scenario's static
routes), so each flow's path is asked of it (``_engine.flow_paths``): the path the run takes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ccarena import flavors as flavor_catalog
from ccarena.errors import UserError
from ccarena.runspec import (
    TCP_DEFAULTS,
    CbrFlowSpec,
    FlowSpec,
    LinkSpec,
    MptcpSpec,
    NodeSpec,
    PcapSpec,
    QuicSpec,
    RouteSpec,
    RoutingSpec,
    RunSpec,
    QUIC_ACK_PACKET_BYTES,
    QUIC_DEFAULTS,
    TcpFlowSpec,
    UdtFlowSpec,
    quic_payload_bytes,
)
from ccarena.scenario import Flow, Scenario
from ccarena.scenario.capture import select_capture_links
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
            "bottleneck_rate_bps", "path_loss", "mss_bytes"}], "links": [{"name", "role"}]}``;
            an MPTCP flow of several subflows also has ``"subflow_path_links"``, each
            subflow's data path. A QUIC flow's ``mss_bytes`` is the stream data its packets
            carry (:func:`ccarena.runspec.quic_payload_bytes`).
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
    entry = flavor_catalog.engine_flavor(flow.flavor)
    # A flavor built on ECN (DCTCP) negotiates it unless the flow says otherwise.
    settings: dict[str, Any] = {"ecn": bool(entry.get("needs_ecn", False))}
    settings.update({key: getattr(flow, key) for key in _FLOW_FIELDS if getattr(flow, key) is not None})
    if flow.is_mptcp:
        ports = tuple(flow.source_ports) if flow.source_ports is not None else None
        settings["mptcp"] = MptcpSpec(
            subflows=flow.subflows or (len(ports) if ports else 1),
            coupling=flow.coupling or "uncoupled",
            scheduler=flow.scheduler or "minrtt", join_delay_ns=flow.join_delay_ns or 0,
            opportunistic=bool(flow.opportunistic), source_ports=ports)
    if flow.is_quic:
        settings["quic"] = _quic(flow)
    return TcpFlowSpec(**base, bytes=flow.size_bytes, flavor=flow.flavor,
                       params=_params(flow, entry),
                       recovery=flow.recovery or entry["default_recovery"], **settings)


def _quic(flow: Flow) -> QuicSpec:
    """The QUIC settings of a ``transport = "quic"`` flow: its own where it gives them, else
    :data:`ccarena.runspec.QUIC_DEFAULTS` (RFC 9000/9002's)."""
    given = {"max_ack_delay_ns": flow.max_ack_delay_ns,
             "ack_eliciting_threshold": flow.ack_eliciting_threshold,
             "reordering_threshold": flow.reordering_threshold,
             "max_stream_data_bytes": flow.max_stream_data_bytes}
    return QuicSpec(**{**QUIC_DEFAULTS, **{k: v for k, v in given.items() if v is not None}})


def _udt_flow(flow: Flow, base: dict[str, Any]) -> UdtFlowSpec:
    entry = flavor_catalog.engine_flavor(flow.flavor)
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


def _static_routes(scenario: Scenario, net: Network, index: dict[str, int]) -> list[RouteSpec]:
    """The scenario's ``[[routing.static]]`` as spec route entries (the link from ``node`` to
    ``via``).

    Raises:
        UserError: ``routing.static[i].<field>``: an unknown node, a ``dst`` that is not a host,
            or no link from ``node`` to ``via``.
    """
    kinds = {n.name: n.kind for n in net.nodes}
    out = []
    for i, route in enumerate(scenario.routing.static):
        for key in ("node", "dst", "via"):
            name = getattr(route, key)
            if name not in kinds:
                raise UserError(f"routing.static[{i}].{key}: unknown node '{name}'"
                                f"{flavor_catalog.suggest(name, list(kinds))}")
        if kinds[route.dst] != "host":
            raise UserError(f"routing.static[{i}].dst: '{route.dst}' is a router; routes lead to hosts")
        link = next((k for k, l in enumerate(net.links) if l.src == route.node and l.dst == route.via), None)
        if link is None:
            raise UserError(f"routing.static[{i}].via: no link from '{route.node}' to '{route.via}'")
        out.append(RouteSpec(node=index[route.node], dst=index[route.dst], link=link))
    return out


_NO_ROUTE = re.compile(r"^flows\[(\d+)\]\.dst: (no route .*)$")
_BAD_ROUTE = re.compile(r"^routes\[(\d+)\](?:\.\w+)?: (.*)$")


def _flow_paths(spec: RunSpec, net: Network, names: list[str]) -> list[tuple[list[int], list[int]]]:
    """Each flow's data and ACK path (link indices) as the engine routes them at time 0.

    Raises:
        UserError: a flow's destination is unreachable (``flow 'x': no route from 'a' to 'b'``) or
            a static route loops or dead-ends (``routing.static[i]: ...``).
    """
    # The compiled engine routes; imported where it is needed.
    from ccarena import _engine

    try:
        return [(list(d), list(a)) for d, a in _engine.flow_paths(spec.to_json())]
    except ValueError as err:
        message = str(err)
        found = _NO_ROUTE.match(message)
        if found:
            raise UserError(f"flow '{names[int(found.group(1))]}': {found.group(2)}") from None
        found = _BAD_ROUTE.match(message)
        if found:  # routes[i] is the scenario's routing.static[i]
            raise UserError(f"routing.static[{found.group(1)}]: {found.group(2)}") from None
        # Any other problem is the backend's to report, as for every spec; the paths of the
        # topology's own shortest routes stand in until then.
        flows = [(f.src, f.dst) for f in spec.flows]
        return [(net.path(net.nodes[s].name, net.nodes[d].name),
                 net.path(net.nodes[d].name, net.nodes[s].name)) for s, d in flows]


def _subflow_paths(spec: RunSpec) -> list[list[list[int]]]:
    """Per flow, each subflow's data path (link indices) as the engine routes it at time 0: one
    path for a single-path flow, one per subflow for an MPTCP flow (each subflow has its own
    5-tuple, so ECMP may hash each onto its own path). Called after :func:`_flow_paths` has
    checked the spec's routes."""
    from ccarena import _engine

    return [[list(data) for data, _ack in flow] for flow in _engine.subflow_paths(spec.to_json())]


def _start_jitter(scenario: Scenario, seed: int) -> list[int]:
    """Each flow's start offset (ns): uniform on [0, start_jitter) from the run's seed, kept
    before the flow's stop and the end of the run; all 0 without jitter."""
    if scenario.start_jitter_ns <= 0:
        return [0] * len(scenario.flows)
    import numpy as np  # only start jitter needs it: a plain run resolves without numpy

    rng = np.random.default_rng([int(seed), 0x5A17])  # a stream of its own, apart from the engine's
    out = []
    for flow in scenario.flows:
        end = min(flow.stop_ns if flow.stop_ns is not None else scenario.duration_ns, scenario.duration_ns)
        room = max(0, min(scenario.start_jitter_ns, end - flow.start_ns - 1))
        out.append(int(rng.integers(0, room)) if room > 0 else 0)
    return out


UNSAMPLED_ROLES = frozenset({"access"})
"""Link roles whose queues ``output.queues = "auto"`` leaves unsampled (their totals stay in the
links table)."""


def resolve_run(scenario: Scenario, seed: int) -> ResolvedRun:
    """Build the topology and write the engine spec for ``scenario`` with ``seed``.

    Raises:
        UserError: a flow's destination is unreachable, or a static route is wrong.
    """
    net = scenario.network()
    index = net.node_index()
    names = scenario.flow_names()
    jitter_ns = _start_jitter(scenario, seed)
    flows_spec: list[FlowSpec] = []
    for flow, name in zip(scenario.flows, names):
        start_ns = flow.start_ns + jitter_ns.pop(0)
        base = {"name": name, "src": index[flow.src], "dst": index[flow.dst],
                "start_ns": start_ns, "stop_ns": flow.stop_ns}
        build = {"tcp": _tcp_flow, "udt": _udt_flow}.get(flow.engine_kind, _udp_flow)
        flows_spec.append(build(flow, base))
    spec = RunSpec(
        seed=int(seed),
        duration_ns=scenario.duration_ns,
        sample_interval_ns=scenario.output.sample_interval_ns,
        nodes=tuple(NodeSpec(name=n.name, kind=n.kind) for n in net.nodes),
        links=tuple(
            LinkSpec(name=link.name, from_=index[link.src], to=index[link.dst],
                     rate_bps=link.rate_bps, delay_ns=link.delay_ns, loss=link.loss,
                     duplicate=link.duplicate, reorder=link.reorder,
                     reorder_delay_ns=link.reorder_delay_ns, queue=link.queue,
                     sample=None if scenario.output.queues == "all" or link.role not in UNSAMPLED_ROLES
                     else False)
            for link in net.links
        ),
        routes=tuple(_static_routes(scenario, net, index)),
        routing=RoutingSpec(mode=scenario.routing.mode),
        flows=tuple(flows_spec),
        events=tuple(resolve_events(scenario.events, net, scenario.duration_ns)),
        pcap=PcapSpec(links=tuple(select_capture_links(net, scenario.output.pcap)),
                      max_bytes=scenario.output.pcap_max_bytes) if scenario.output.pcap else None,
    )
    flows_derived: list[dict[str, Any]] = []
    for flow_spec, name, (forward, back) in zip(flows_spec, names, _flow_paths(spec, net, names)):
        if isinstance(flow_spec, CbrFlowSpec):
            facts = _path_facts(net, forward, back, flow_spec.packet_bytes + flow_spec.header_bytes, 0)
            facts["mss_bytes"] = flow_spec.packet_bytes
        elif isinstance(flow_spec, TcpFlowSpec) and flow_spec.quic is not None:
            # A QUIC packet has the TCP segment's wire size and carries less payload; its ACKs
            # are QUIC's.
            facts = _path_facts(net, forward, back, flow_spec.mss_bytes + flow_spec.header_bytes,
                                QUIC_ACK_PACKET_BYTES)
            facts["mss_bytes"] = quic_payload_bytes(flow_spec.mss_bytes, flow_spec.header_bytes)
        else:
            facts = _path_facts(net, forward, back, flow_spec.mss_bytes + flow_spec.header_bytes,
                                flow_spec.ack_bytes)
            facts["mss_bytes"] = flow_spec.mss_bytes
        flows_derived.append({"name": name, **facts})
    if any(isinstance(f, TcpFlowSpec) and f.mptcp is not None for f in flows_spec):
        for facts, subflow_paths in zip(flows_derived, _subflow_paths(spec)):
            if len(subflow_paths) > 1:
                facts["subflow_path_links"] = subflow_paths
    derived = {"flows": flows_derived,
               "links": [{"name": link.name, "role": link.role} for link in net.links]}
    return ResolvedRun(spec=spec, derived=derived)
