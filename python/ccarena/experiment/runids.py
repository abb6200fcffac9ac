"""Each run on each backend asked for (``--backend sim,kernel`` runs both side by side).

A run of a non-sim backend has the id of the same run on the simulator plus ``@<backend>``
(``r0`` and ``r0@kernel``), so sim run ids never change and each kernel run sits beside its
simulated twin: the same resolved spec (but for the Linux host's flavor parameters below), the
same seed.

Linux recovers every flavor's losses the same way (SACK + RACK-TLP + PRR, ``reno`` included), so
when a run goes to the kernel backend, its TCP flows whose recovery the scenario leaves to the
flavor's default use recovery ``"linux"`` — on the kernel and on its simulated twin alike, so the
two compare like with like (:data:`LINUX_RECOVERY`).

The simulated twin of a kernel run also models a Linux host where Linux's congestion control
module departs from the RFC or draft the flavor follows by default (:data:`LINUX_HOST_PARAMS`:
CUBIC's Reno-friendly factor, slow-start exit, first growth and whole-packet window; BBR's long-term bandwidth
sampling), for every parameter the scenario leaves to its default, and models the kernel
backend's connection set-up: each sender connected before t0 over the idle path, so its first
RTT sample is that handshake's (``handshake_rtt``), and the testbed's timing noise: each packet
reaches the far end of a link up to a quarter of its serialization time late
(:data:`TWIN_LINK_JITTER`), as real hosts and the relay jitter by microseconds, so that flows do
not lock into the phase patterns a perfectly periodic simulation can (Floyd & Jacobson, "On
Traffic Phase Effects in Packet-Switched Gateways", 1992). A run without a kernel twin keeps the
RFC flavor, no handshake and no jitter.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from ccarena.backends import real_tcp_backends, reference_backend
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
defaults), applied to the simulated twins of kernel runs (:func:`with_linux_host`)."""

TWIN_LINK_JITTER = 0.25
"""The simulated twin's ``link_jitter`` (docs/engine-spec.md): up to 0.25 of a packet's
serialization time (0.15 ms at 20 Mbit/s, about the relay's own p99 timing error). Without it a
30 s reno-vs-cubic calibration pair locked into a phase that gave Reno 0.38 of the link where
five jittered seeds give 0.44–0.48 (the kernel: 0.49–0.56)."""

REAL_TCP_BACKENDS = real_tcp_backends()
"""Backends whose TCP is Linux's own (they declare ``real_tcp``, :mod:`ccarena.backends`): runs
on them (and their twins) use :data:`LINUX_RECOVERY`."""

SIMULATOR = reference_backend()
"""The simulator's backend name: its run ids carry no ``@<backend>``."""


def run_id_for(run_id: str, backend: str) -> str:
    """The run id on ``backend``: unchanged for sim, ``<id>@<backend>`` otherwise."""
    return run_id if backend == SIMULATOR else f"{run_id}@{backend}"


def sim_twin(run_id: str) -> tuple[str, str]:
    """``"r0@kernel"`` → ``("r0", "kernel")``; a sim id → ``(id, "sim")``."""
    if "@" in run_id:
        base, backend = run_id.rsplit("@", 1)
        return base, backend
    return run_id, SIMULATOR


def apply_backends(plans: Sequence[RunPlan], backends: Sequence[str] | None) -> list[RunPlan]:
    """Each plan once per backend (default: its scenario's ``backend``), ids per
    :func:`run_id_for`; when one of them is a :data:`REAL_TCP_BACKENDS` backend, with the Linux
    recovery profile on every backend (:func:`with_linux_recovery`) and the Linux host's flavor
    parameters on the simulator (:func:`with_linux_host`; the kernel runs Linux's own modules)."""
    out = []
    for plan in plans:
        chosen = list(backends or [plan.scenario.backend])
        twinned = any(b in REAL_TCP_BACKENDS for b in chosen)
        if twinned:
            plan = with_linux_recovery(plan)
        for backend in chosen:
            one = with_linux_host(plan) if twinned and backend == SIMULATOR else plan
            out.append(dataclasses.replace(one, backend=backend,
                                           run_id=run_id_for(plan.run_id, backend)))
    return out


def with_linux_recovery(plan: RunPlan) -> RunPlan:
    """``plan`` with :data:`LINUX_RECOVERY` for every TCP flow whose scenario leaves recovery to
    the flavor (a recovery the scenario names stays, and the kernel backend refuses it)."""
    flows = tuple(
        spec.model_copy(update={"recovery": LINUX_RECOVERY})
        if isinstance(spec, TcpFlowSpec) and flow.recovery is None else spec
        for flow, spec in zip(plan.scenario.flows, plan.resolved.spec.flows))
    spec: RunSpec = plan.resolved.spec.model_copy(update={"flows": flows})
    return dataclasses.replace(plan, resolved=dataclasses.replace(plan.resolved, spec=spec))


def with_linux_host(plan: RunPlan) -> RunPlan:
    """``plan`` with :data:`LINUX_HOST_PARAMS` for every TCP flow of those flavors, except the
    parameters the scenario gives the flow itself, and with every TCP flow's handshake RTT
    sample (``handshake_rtt``): the kernel backend's senders connect before t0, on the idle
    path, and Linux takes the SYN-ACK's RTT before it initializes the congestion control module
    (BBR's RTprop starts from it, not from a first data RTT that includes another flow's
    queue); and the testbed's timing noise on every link (:data:`TWIN_LINK_JITTER`)."""
    flows = tuple(
        spec.model_copy(update={"handshake_rtt": True, "params": {**spec.params, **{
            name: value for name, value in LINUX_HOST_PARAMS.get(spec.flavor, {}).items()
            if name not in (flow.params or {})}}})
        if isinstance(spec, TcpFlowSpec) else spec
        for flow, spec in zip(plan.scenario.flows, plan.resolved.spec.flows))
    spec: RunSpec = plan.resolved.spec.model_copy(update={"flows": flows,
                                                          "link_jitter": TWIN_LINK_JITTER})
    return dataclasses.replace(plan, resolved=dataclasses.replace(plan.resolved, spec=spec))
