"""The host model of a run's flows (``host = "linux" | "rfc"``, top level or per flow): which end
hosts the simulator (and ccarena's transport on the udp backend) model.

- ``"rfc"``: each flavor as its RFC or paper describes it (FLAVORS.md), its default loss recovery,
  no connection set-up, links without timing jitter — the published models, as ns-3 runs them.
- ``"linux"``: a Linux 6.x host, as the kernel backend runs one. Every TCP flow whose recovery the
  scenario leaves to the flavor recovers as Linux does (SACK + RACK-TLP + PRR, ``reno`` included:
  :data:`LINUX_RECOVERY`); where Linux's congestion control module departs from the RFC or draft
  the flavor follows, the flavor takes Linux's behaviour for every parameter the scenario leaves
  to its default (:data:`LINUX_HOST_PARAMS`: CUBIC's Reno-friendly factor, slow-start exit, first
  growth and whole-packet window; BBR's long-term bandwidth sampling); each sender connects before
  t0 over the idle path, so its first RTT sample is the handshake's (``handshake_rtt``); its RTO
  follows Linux's rule (``rto_rule = "linux"``: SRTT + an rttvar floored at the minimum RTO) and
  its receiver starts in quick-ACK mode (``quickack_segments`` = :data:`LINUX_QUICKACK_SEGMENTS`)
  and, when the flow gives no ``rwnd``, autotunes its receive window as Linux's does
  (``rcvbuf_autotuning``: from the SYN-ACK's 65,160 bytes, two segments per segment received,
  the clamp raised each RTT; an MPTCP connection's shared buffer once per largest subflow RTT),
  and compresses SACKs above a hole as Linux's
  receiver does (``sack_compression``: three ACKs at once, then one per millisecond; single-path
  flows);
  each sender starts 0.5–2 ms after the flow's scheduled start, drawn from the run's seed
  (``start_delay_ns`` = :data:`LINUX_START_DELAY_NS`), as the kernel backend's senders do; and
  (a scenario-level choice) each packet reaches the far end of a link up to a quarter of its
  serialization time late (:data:`LINUX_LINK_JITTER`), as real hosts and the relay jitter by
  microseconds, so flows do not lock into the phase patterns a perfectly periodic simulation can
  (Floyd & Jacobson, "On Traffic Phase Effects in Packet-Switched Gateways", 1992).

The default, when neither the scenario nor the flow says: ``"rfc"`` for a run on its own, and
``"linux"`` when the scenario's runs are set beside a real-TCP backend's (``--backend
sim,kernel``), whose hosts are Linux — so a simulated twin compares like with like unless the
scenario asks for the RFC models by name. Runs on a real-TCP backend always use Linux's recovery
(their hosts are Linux; a recovery the scenario names is refused there). Why ``"rfc"`` alone: the
catalogue's flavors are checked against their sources (FLAVORS.md), the seed studies and every
finding in the README were made with them, and ns-3's models are the RFCs'; ``host = "linux"``
makes a plain run what ``ccarena calibrate`` checks against this machine's kernel.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

from ccarena.experiment.expand import RunPlan
from ccarena.runspec import RunSpec, TcpFlowSpec

LINUX_RECOVERY = "linux"
"""The recovery profile of a Linux host: SACK (RFC 6675) + RACK-TLP (RFC 8985) + PRR (RFC 6937)."""

LINUX_HOST_PARAMS: dict[str, dict[str, float]] = {
    "cubic": {
        # RFC 8312 §4.2: α_cubic = 3(1 − β)/(1 + β) always, not 1 once W_est ≥ cwnd_prior
        # (RFC 9438 §4.3); Linux's tcp_cubic never switches.
        "alpha_switch": 0.0,
        # Ha & Rhee's HyStart (ACK train + delay increase, straight to congestion avoidance),
        # which tcp_cubic runs by default, instead of HyStart++ (RFC 9406).
        "hystart": 2.0,
        # tcp_cubic grows by at least 5% per RTT until its first congestion event.
        "no_loss_growth": 0.05,
        # snd_cwnd is a whole number of packets: ssthresh = ⌊cwnd·717/1024⌋, growth one packet
        # at a time (−9% goodput at 1% loss and a ~10-packet window, as the kernel measures).
        "whole_packets": 1.0,
    },
    "bbr": {
        # Linux's v1 long-term ("policer") bandwidth sampling, not in draft-00.
        "lt_bw": 1.0,
    },
}
"""Flavor → the parameters that make the simulator's flavor behave as Linux's module (Linux 6.x
defaults), for flows of the ``linux`` host model."""

LINUX_LINK_JITTER = 0.25
"""The ``link_jitter`` of a ``linux``-host run (docs/engine-spec.md): up to 0.25 of a packet's
serialization time (0.15 ms at 20 Mbit/s, about the relay's own p99 timing error). Without it a
30 s reno-vs-cubic calibration pair locked into a phase that gave Reno 0.38 of the link where
five jittered seeds give 0.44–0.48 (the kernel: 0.49–0.56)."""

LINUX_QUICKACK_SEGMENTS = 16
"""Segments a Linux receiver acknowledges one by one at connection start (``tcp_incr_quickack``'s
first grant, min(16, rcv_wnd / (2·MSS))). Measured here (Linux 6.18, default tcp_rmem): 21–22 on
the wire, the rest one per segment that raised the autotuned window (``tcp_grow_window``'s quick
ACK), which ``rcvbuf_autotuning`` models."""

LINUX_START_DELAY_NS = (500_000, 2_000_000)
"""The range [low, high) of a ``linux``-host TCP sender's start delay (ns) after its scheduled
start, drawn uniformly per flow from the run's seed. Measured here on the kernel backend (12
two-flow runs): each sender's first data segment left 0.58–1.96 ms after t0, the two senders
−1.1 to +1.0 ms apart. Two senders started in the same nanosecond put their slow-start packets
through the bottleneck in runs that double each RTT (2, 4, 8, … interleaved), which breaks each
flow's ACK train: CUBIC's HyStart never fired with two such flows and both overshot (~300
retransmissions each where the kernel's flows had 142 and 79)."""

RFC, LINUX = "rfc", "linux"


def run_host(plan: RunPlan, beside_real_tcp: bool) -> str:
    """The run's host model: the scenario's ``host``, else ``"linux"`` when the run is set beside
    a real-TCP backend's (``beside_real_tcp``), else ``"rfc"``."""
    return getattr(plan.scenario, "host", None) or (LINUX if beside_real_tcp else RFC)


def _flows(plan: RunPlan) -> Iterator[tuple[Any, Any]]:
    """(the scenario's flow or None, the spec's flow) for every flow of the run: flows a traffic
    generator adds after the scenario's own have no scenario flow."""
    scenario_flows = list(plan.scenario.flows)
    for i, spec in enumerate(plan.resolved.spec.flows):
        yield (scenario_flows[i] if i < len(scenario_flows) else None), spec


def flow_hosts(plan: RunPlan, beside_real_tcp: bool) -> list[str | None]:
    """Each flow's host model: its own ``host``, else the run's (:func:`run_host`); None for a
    flow that is not TCP (the models differ only in TCP hosts)."""
    default = run_host(plan, beside_real_tcp)
    return [((flow.host if flow is not None else None) or default) if isinstance(spec, TcpFlowSpec) else None
            for flow, spec in _flows(plan)]


def _with_flows(plan: RunPlan, flows: tuple[Any, ...], **update: Any) -> RunPlan:
    spec: RunSpec = plan.resolved.spec.model_copy(update={"flows": flows, **update})
    return dataclasses.replace(plan, resolved=dataclasses.replace(plan.resolved, spec=spec))


def with_linux_recovery(plan: RunPlan) -> RunPlan:
    """``plan`` with :data:`LINUX_RECOVERY` for every TCP flow whose scenario leaves recovery to
    the flavor (a recovery the scenario names stays; a real-TCP backend refuses it)."""
    flows = tuple(spec.model_copy(update={"recovery": LINUX_RECOVERY})
                  if isinstance(spec, TcpFlowSpec) and (flow is None or flow.recovery is None) else spec
                  for flow, spec in _flows(plan))
    return _with_flows(plan, flows)


def _linux_flow(flow: Any, spec: TcpFlowSpec) -> TcpFlowSpec:
    """``spec`` as a Linux host runs it (the module docstring): Linux recovery unless the scenario
    names one, Linux's module parameters the scenario leaves to default, the handshake's RTT
    sample, Linux's RTO rule and quick-ACK mode, and receive-window autotuning when the flow
    gives no window."""
    given = (flow.params or {}) if flow is not None else {}
    params = {**spec.params, **{name: value for name, value in LINUX_HOST_PARAMS.get(spec.flavor, {}).items()
                                if name not in given}}
    update: dict[str, Any] = {"handshake_rtt": True, "params": params, "rto_rule": "linux",
                              "quickack_segments": LINUX_QUICKACK_SEGMENTS}
    if spec.rwnd_bytes is None and spec.quic is None:
        # Linux autotunes a receive buffer the application did not size (tcp_moderate_rcvbuf;
        # an MPTCP connection's, mptcp_rcv_space_adjust).
        update["rcvbuf_autotuning"] = True
    if spec.mptcp is None and spec.quic is None:
        # Linux's receiver compresses SACKs above a hole (tcp_comp_sack_delay_ns, 1 ms).
        update["sack_compression"] = True
    if flow is None or flow.recovery is None:
        update["recovery"] = LINUX_RECOVERY
    return spec.model_copy(update=update)


def start_delays_ns(spec: RunSpec, hosts: list[str | None]) -> list[int]:
    """Each flow's sender start delay (``start_delay_ns``): uniform on
    :data:`LINUX_START_DELAY_NS` for a ``linux``-host flow, from ``spec.seed`` (a stream apart
    from the engine's and from ``start_jitter``'s), cut so that the sender still starts before
    the flow's stop and the end of the run; 0 for other flows. The flow's ``start_ns`` stays: its
    samples and completion time count from it, as the kernel backend's do."""
    import numpy as np  # only linux-host runs need it

    rng = np.random.default_rng([int(spec.seed), 0x11F0])
    low, high = LINUX_START_DELAY_NS
    out = []
    for flow, host in zip(spec.flows, hosts):
        delay = int(rng.integers(low, high)) if host == LINUX else 0
        end = min(flow.stop_ns if flow.stop_ns is not None else spec.duration_ns, spec.duration_ns)
        out.append(max(0, min(delay, end - flow.start_ns - 1)))
    return out


def with_host_model(plan: RunPlan, beside_real_tcp: bool) -> RunPlan:
    """``plan`` with each TCP flow's host model applied (:func:`flow_hosts`; ``"rfc"`` leaves a
    flow as resolved; a ``linux`` flow's sender also starts later by :func:`start_delays_ns`) and, for a
    ``linux`` run, :data:`LINUX_LINK_JITTER` on every link. The per-flow models are recorded in
    the plan's derived facts (``derived["flows"][i]["host"]``) and the run's in ``derived["host"]``."""
    hosts = flow_hosts(plan, beside_real_tcp)
    delays = start_delays_ns(plan.resolved.spec, hosts) if LINUX in hosts else [0] * len(hosts)
    flows = tuple(_linux_flow(flow, spec).model_copy(update={"start_delay_ns": delay})
                  if host == LINUX else spec
                  for (flow, spec), host, delay in zip(_flows(plan), hosts, delays))
    jitter = {"link_jitter": LINUX_LINK_JITTER} if run_host(plan, beside_real_tcp) == LINUX else {}
    out = _with_flows(plan, flows, **jitter)
    return _record(out, run_host(plan, beside_real_tcp), hosts)


def with_real_tcp_host(plan: RunPlan) -> RunPlan:
    """``plan`` for a real-TCP backend (Linux's own stack): Linux recovery (:func:`with_linux_recovery`),
    recorded as the ``linux`` host model whatever the scenario chose for the simulator."""
    out = with_linux_recovery(plan)
    hosts = [LINUX if isinstance(spec, TcpFlowSpec) else None for spec in out.resolved.spec.flows]
    return _record(out, LINUX, hosts)


def _record(plan: RunPlan, run_model: str, hosts: list[str | None]) -> RunPlan:
    derived = dict(plan.resolved.derived)
    derived["host"] = run_model
    derived["flows"] = [dict(facts, host=host) for facts, host in zip(derived.get("flows", []), hosts)]
    return dataclasses.replace(plan, resolved=dataclasses.replace(plan.resolved, derived=derived))
