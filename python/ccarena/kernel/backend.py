"""The kernel backend: one resolved spec run on the real Linux TCP stack, returning the same four
tables as the simulator (:func:`ccarena.engine.run_spec`).

Steps: detect what the kernel offers and check the spec against it (one line if it cannot run);
register the run; build the namespaces and links (:mod:`.netns`); shape every directed link
(:mod:`.shaping`); add delay and loss (:mod:`.delay`, :mod:`.loss`); start every flow's receiver
and sender (:mod:`.traffic`) with a common start instant ``t0``; read the queues at every sample
instant while calling ``progress``; collect; build the tables (:mod:`.tables`).

Cleanup always runs (normal end, error, Ctrl-C, SIGTERM — turned into KeyboardInterrupt while the
run is in progress): generators and relay stopped by pid, namespaces deleted by name, the run
unregistered. After a ``kill -9``, ``ccarena doctor --cleanup`` removes the rest.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pandas as pd

from ccarena.errors import UserError
from ccarena.kernel import capabilities, delay, loss, preflight, shaping, tables, traffic
from ccarena.kernel.cleanup import kill_pids, processes_in, remove_namespaces
from ccarena.kernel.names import RunNames, new_tag
from ccarena.kernel.netns import NetworkPlan, build_network, disable_offloads, plan_network

ProgressCallback = Callable[[int, int], None]

LEAD_S = 0.5
"""Time between starting the generators and t0, plus :data:`LEAD_PER_PROCESS_S` per process."""
LEAD_PER_PROCESS_S = 0.15
COLLECT_TIMEOUT_S = 8.0


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While active (main thread only), SIGTERM raises KeyboardInterrupt, so cleanup runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    owner = os.getpid()

    def handler(signum: int, frame: Any) -> None:  # noqa: ARG001
        if os.getpid() != owner:  # a forked helper (pyroute2's netns child) must just exit
            os._exit(128 + signum)
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def check(spec: dict[str, Any], caps: capabilities.Capabilities | None = None) -> capabilities.Capabilities:
    """Check that ``spec`` can run on this kernel; return what was detected.

    Raises:
        UserError: one line naming what is missing (root, a program, a flavor, a mechanism).
    """
    caps = caps or capabilities.detect()
    preflight.check_spec(spec, caps)
    return caps


def _mechanisms(spec: dict[str, Any], caps: capabilities.Capabilities) -> dict[str, str]:
    delayed = any(link["delay_ns"] > 0 for link in spec["links"])
    lossy = any(link["loss"] > 0 for link in spec["links"])
    return {"rate_and_queue": "htb + pfifo/bfifo in the wire namespace (stab overhead -14: IP sizes)",
            "delay": ("netem" if caps.netem else "relay") if delayed else "none",
            "loss": "nftables numgen on the receiver's ingress" if lossy else "none"}


def run_kernel(spec: dict[str, Any], progress: ProgressCallback | None = None,
               workdir: str | Path | None = None, *,
               emulation: dict[str, Any] | None = None) -> dict[str, pd.DataFrame]:
    """Run ``spec`` in network namespaces on this machine's TCP stack.

    Args:
        spec: the resolved spec (docs/engine-spec.md), as the simulator takes it.
        progress: ``progress(elapsed_ns, duration_ns)`` at every sample instant (wall time).
        workdir: where the generators write their results (default: a temporary directory
            ``cca-<tag>-work*``, removed at the end).
        emulation: if given, filled with how the links were emulated and the emulation's own
            error: ``{"mechanisms", "relay": <relay stats> | None, "lateness_ns": {pipe: ...},
            "kernel", "congestion_controls", "run_tag"}``.

    Returns:
        ``{"flows", "samples", "queues", "links"}`` → DataFrame, columns as the simulator's (see
        :mod:`ccarena.kernel.tables` for where each number comes from).

    Raises:
        UserError: the kernel lacks something the spec needs, not root, a tool is missing, a
            generator failed (one line naming the flow and why).
        KeyboardInterrupt: Ctrl-C or SIGTERM; everything of the run is removed first.
    """
    caps = check(spec)
    names = RunNames(new_tag())
    own_workdir = workdir is None
    work = Path(tempfile.mkdtemp(prefix=f"{names.prefix}work")) if own_workdir else Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    endpoints: list[traffic.Endpoint] = []
    relay: delay.Relay | None = None
    names.register()
    try:
        with sigterm_interrupts():
            plan = plan_network(spec, names, relay_delays=not caps.netem)
            build_network(plan, created)
            disable_offloads(plan)
            _shape(plan, spec)
            mechanisms = _mechanisms(spec, caps)
            if mechanisms["delay"] == "netem":
                delay.install_netem(plan, spec)
            elif any(phys.relayed for phys in plan.links):
                relay = delay.start_relay(plan, spec, work)
            _install_loss(plan, spec)
            measured = _run_traffic(spec, plan, work, endpoints, progress)
            relay_stats = relay.stop() if relay is not None else None
            lost_wire = _wire_losses(plan, spec)
            flows_rows, sample_rows = tables.flow_rows(spec, measured["results"])
            out = {
                "flows": tables.frame(flows_rows, tables.FLOW_COLUMNS),
                "samples": tables.frame(sample_rows, tables.SAMPLE_COLUMNS),
                "queues": tables.frame(tables.queue_rows(measured["readings"], measured["baseline"]),
                                       tables.QUEUE_COLUMNS),
                "links": tables.frame(tables.link_rows(spec, measured["final"], measured["baseline"],
                                                       lost_wire), tables.LINK_COLUMNS),
            }
            if emulation is not None:
                emulation.update(_emulation_record(names, caps, mechanisms, relay_stats, measured))
            return out
    finally:
        traffic.stop_all(endpoints)
        if relay is not None:
            relay.kill()
        stragglers = processes_in(created, {names.tag})
        if stragglers:
            kill_pids(sorted(stragglers))
        remove_namespaces(created)
        names.unregister()
        if own_workdir:
            shutil.rmtree(work, ignore_errors=True)


def _shape(plan: NetworkPlan, spec: dict[str, Any]) -> None:
    per_ns: dict[str, list[shaping.Shaper]] = {}
    for i, link in enumerate(spec["links"]):
        ns, ifname = plan.egress(i)
        per_ns.setdefault(ns, []).append(shaping.Shaper(
            link=i, namespace=ns, ifname=ifname, rate_bps=int(link["rate_bps"]),
            limit_packets=link["queue"]["limit_packets"], limit_bytes=link["queue"]["limit_bytes"]))
    for ns, shapers in per_ns.items():
        shaping.install(ns, shapers)


def _install_loss(plan: NetworkPlan, spec: dict[str, Any]) -> None:
    """nftables loss on every lossy link, where its packets arrive (after its queue)."""
    per_ns: dict[str, dict[str, float]] = {}
    for i, link in enumerate(spec["links"]):
        if link["loss"] > 0:
            ns, ifname = plan.ingress(i)
            per_ns.setdefault(ns, {})[ifname] = float(link["loss"])
    for ns, rules in per_ns.items():
        loss.install(ns, rules)


def _wire_losses(plan: NetworkPlan, spec: dict[str, Any]) -> dict[int, int | None]:
    """Spec link → packets its loss rule dropped (0 for loss-free links; None if unreadable)."""
    out: dict[int, int | None] = {}
    counts: dict[str, dict[str, int]] = {}
    for i, link in enumerate(spec["links"]):
        if link["loss"] == 0:
            out[i] = 0
            continue
        ns, ifname = plan.ingress(i)
        if ns not in counts:
            counts[ns] = loss.read_drops(ns)
        out[i] = counts[ns].get(ifname)
    return out


def _run_traffic(spec: dict[str, Any], plan: NetworkPlan, work: Path,
                 endpoints: list[traffic.Endpoint], progress: ProgressCallback | None) -> dict[str, Any]:
    """Start the generators, sample the queues at every instant, collect every result."""
    from pyroute2 import NetNS

    n_proc = 2 * len(spec["flows"])
    t0_ns = time.monotonic_ns() + int((LEAD_S + LEAD_PER_PROCESS_S * n_proc) * 1e9)
    interval_ns = int(spec["sample_interval_ns"])
    duration_ns = int(spec["duration_ns"])
    # Queue sampling over netlink: one socket per namespace holding an egress.
    egress: dict[int, tuple[str, str]] = {i: plan.egress(i) for i in range(len(spec["links"]))}
    handles = {ns: NetNS(ns) for ns in {ns for ns, _ in egress.values()}}
    try:
        ifindex = {i: handles[ns].link_lookup(ifname=ifname)[0] for i, (ns, ifname) in egress.items()}

        def read() -> dict[int, shaping.QueueReading]:
            per_ns = {ns: shaping.read_root_qdiscs(h) for ns, h in handles.items()}
            return {i: per_ns[ns][ifindex[i]] for i, (ns, _) in egress.items() if ifindex[i] in per_ns[ns]}

        traffic.start_flows(spec, plan, work, t0_ns, endpoints, ready_by_ns=t0_ns - 50_000_000)
        if time.monotonic_ns() >= t0_ns:
            raise UserError("the traffic generators took too long to start; the machine is too busy")
        _sleep_until(t0_ns)
        baseline = read()
        readings: list[tuple[float, dict[int, shaping.QueueReading]]] = []
        k = 1
        while k * interval_ns <= duration_ns:
            _sleep_until(t0_ns + k * interval_ns)
            readings.append((k * interval_ns / 1e9, read()))
            if progress is not None:
                progress(k * interval_ns, duration_ns)
            failure = traffic.first_failure(endpoints, spec)
            if failure:
                raise UserError(failure)
            k += 1
        final = readings[-1][1] if readings else read()
    finally:
        for h in handles.values():
            h.close()
    traffic.wait_all(endpoints, COLLECT_TIMEOUT_S)
    results: dict[tuple[int, str], dict[str, Any]] = {}
    for ep in endpoints:
        result = ep.result()
        if not result.get("ok"):
            name = spec["flows"][ep.flow]["name"]
            raise UserError(f"flow '{name}': its {ep.role.split('-')[1]}er in {ep.namespace} failed: "
                            f"{result.get('error')}")
        results[(ep.flow, ep.role.split("-")[1])] = result
    return {"results": results, "readings": readings, "baseline": baseline, "final": final,
            "t0_ns": t0_ns}


def _sleep_until(t_ns: int) -> None:
    while True:
        left = t_ns - time.monotonic_ns()
        if left <= 0:
            return
        time.sleep(min(left / 1e9, 0.2))


def _emulation_record(names: RunNames, caps: capabilities.Capabilities, mechanisms: dict[str, str],
                      relay_stats: dict[str, Any] | None, measured: dict[str, Any]) -> dict[str, Any]:
    import platform

    lateness = {}
    for pipe in (relay_stats or {}).get("pipes", []):
        for direction in ("a_to_b", "b_to_a"):
            stats = pipe.get(direction) or {}
            if stats.get("frames"):
                lateness[f"{pipe['name']} {direction}"] = stats.get("lateness_ns")
    return {"run_tag": names.tag, "kernel": platform.release(), "mechanisms": mechanisms,
            "congestion_controls": caps.congestion_controls, "relay": relay_stats,
            "lateness_ns": lateness}

