"""The kernel backend: one resolved spec run on the real Linux TCP stack, returning the same four
tables as the simulator (:func:`ccarena.backends.sim.run_spec`).

Steps: detect what the kernel offers, choose how to emulate the links (:mod:`.emulation_choice`) and
check the spec against both (one line if it cannot run); register the run; build the namespaces
and links (:mod:`.netns`); emulate the links — ccarena's link relay (:mod:`.relay_driver`), or htb
(:mod:`.shaping`) with netem or the relay for delay (:mod:`.netem`) and nftables for loss
(:mod:`.loss`); start every flow's receiver and sender (:mod:`.flow_processes`) with a common start
instant ``t0`` (on the relay's sampling grid); read htb's queues at every sample instant while
calling ``progress`` (the relay samples its own); collect; build the tables (:mod:`.measured_tables`).

Cleanup always runs (normal end, error, Ctrl-C, SIGTERM — turned into KeyboardInterrupt while the
run is in progress): generators and relay stopped by pid, namespaces deleted by name, the run
unregistered. After a ``kill -9``, ``ccarena doctor --cleanup`` removes the rest.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ccarena.backends import SUBFLOW_TABLE, ProgressCallback, RunResult
from ccarena.backends.kernel import (
    capabilities,
    flow_processes,
    loss,
    measured_tables,
    mptcp,
    netem,
    preflight,
    relay_driver,
    shaping,
)
from ccarena.backends.kernel.cleanup import kill_pids, processes_in, remove_namespaces
from ccarena.backends.kernel.emulation_choice import Emulation, choose
from ccarena.backends.kernel.names import RunNames, new_tag
from ccarena.backends.kernel.netns import (
    NetworkPlan,
    build_network,
    disable_offloads,
    plan_network,
)
from ccarena.backends.kernel.shaping import QueueReading
from ccarena.backends.kernel.signals import sigterm_interrupts
from ccarena.backends.kernel.testbed import cpu_times
from ccarena.backends.sim import capture_dir, remove_scratch
from ccarena.errors import UserError
from ccarena.runspec import RunSpec

LEAD_S = 0.5
"""Time between starting the generators and t0, plus :data:`LEAD_PER_PROCESS_S` per process."""
LEAD_PER_PROCESS_S = 0.15
COLLECT_TIMEOUT_S = 8.0


def _sampled_links(spec: Any) -> set[int]:
    """The links whose queue the spec asks to sample (``LinkSpec.sample`` not False), as the
    simulator samples them."""
    return {i for i, link in enumerate(spec.links) if link.sample is not False}


class KernelBackend:
    """The Linux TCP stack behind the backend protocol (:mod:`ccarena.backends`): runs in real time,
    one at a time, in the calling process.

    Args:
        emulation: how links are emulated, the scenario's ``[kernel] emulation``: ``"auto"``,
            ``"relay"`` or ``"tc"`` (:mod:`ccarena.backends.kernel.emulation_choice`).
        udt_impl, quic_impl, tcp_impl: the udp backend's options in the same ``[kernel]`` table;
            ignored here.
        ecn: the ECN feedback hosts negotiate for flows with ``ecn = true``, the scenario's
            ``[kernel] ecn``: ``"classic"`` (RFC 3168), ``"accecn"`` (RFC 9768) or ``"off"``
            (:func:`ccarena.backends.kernel.ecn_modes.host_tcp_ecn`).
    """

    name = "kernel"
    realtime = True

    def __init__(self, emulation: str = "auto", udt_impl: str = "ccarena", ecn: str = "classic",
                 quic_impl: str = "ccarena", tcp_impl: str = "ccarena") -> None:
        # The udp backend's options of the shared [kernel] table: Linux has no UDT, its QUIC
        # flows are refused (preflight) whoever would run them, and its TCP is Linux's.
        del udt_impl, quic_impl, tcp_impl
        self.emulation = emulation
        self.ecn = ecn
        self._caps: capabilities.Capabilities | None = None  # detected once, on first check

    def check(self, spec: RunSpec) -> None:
        """Raise UserError naming what this machine lacks for ``spec`` (root, a program, a
        flavor, a queue discipline, a mechanism)."""
        self._caps = check(spec, self._caps, self.emulation, ecn=self.ecn)

    def run(self, spec: RunSpec, progress: ProgressCallback | None = None,
            cancel: Callable[[], bool] | None = None) -> RunResult:
        """Run ``spec`` (:func:`run_kernel`, with :meth:`run_options`); the record holds
        ``{"emulation": ...}`` and :meth:`run_record`'s entries."""
        def tick(now_ns: int, duration_ns: int) -> None:
            if progress is not None:
                progress(now_ns, duration_ns)
            if cancel is not None and cancel():
                raise KeyboardInterrupt("cancelled")

        record: dict[str, Any] = {}
        captures: list[dict[str, Any]] = []
        pcap_dir = capture_dir(spec)
        try:
            tables_ = run_kernel(spec, tick, mode=self.emulation, emulation=record, ecn=self.ecn,
                                 pcap_dir=pcap_dir, captures=captures, **self.run_options())
        except BaseException:
            remove_scratch(pcap_dir)  # a failed or cancelled run keeps none of its captures
            raise
        run_record = {"emulation": record, **self.run_record(spec)}
        if pcap_dir is None:
            return RunResult(tables=tables_, record=run_record)
        files = {c["file"]: pcap_dir / Path(c["file"]).name for c in captures}
        return RunResult(tables=tables_, record={**run_record, "pcap": captures}, files=files,
                         scratch=pcap_dir)

    def run_options(self) -> dict[str, Any]:
        """Extra keyword arguments of :func:`run_kernel` (a backend on this testbed with its own
        flow generator passes ``generator`` and ``tcp_check``); none for Linux TCP."""
        return {}

    def run_record(self, spec: RunSpec) -> dict[str, Any]:
        """Extra entries of the run's record; none for Linux TCP."""
        return {}


def check(spec: RunSpec, caps: capabilities.Capabilities | None = None,
          mode: str = "auto", tcp_check: Callable[[str, Any], None] | None = None, *,
          ecn: str = "classic") -> capabilities.Capabilities:
    """Check that ``spec`` can run on this kernel with link emulation ``mode`` (``auto``,
    ``relay`` or ``tc``) and ECN mode ``ecn`` (``[kernel] ecn``); return what was detected.
    ``tcp_check`` replaces the checks of TCP flows
    (:func:`ccarena.backends.kernel.preflight.check_spec`).

    Raises:
        UserError: one line naming what is missing (root, a program, a flavor, a mechanism), a
            QUIC flow on Linux's TCP (:func:`ccarena.backends.kernel.preflight.refuse_quic`), or
            packet capture of a link the relay does not emulate
            (:func:`ccarena.backends.kernel.preflight.refuse_pcap`).
    """
    # Probing forks pyroute2 helpers, which pyroute2 stops with SIGTERM: under the guard such a
    # helper exits instead of running the caller's handler (the CLI's would unwind a copy of the
    # whole command in the helper, printing "interrupted" and running its cleanups).
    if tcp_check is None:  # Linux's own TCP: no QUIC (refused before anything is probed)
        preflight.refuse_quic(spec)
    with sigterm_interrupts():
        caps = caps or capabilities.detect()
        preflight.check_privileges(caps)
        emulation = choose(spec, caps, mode)
        preflight.refuse_pcap(spec, emulation)  # the kernel and udp backends alike
        preflight.check_spec(spec, caps, emulation, tcp_check, ecn=ecn)
    return caps


def run_kernel(spec: RunSpec, progress: ProgressCallback | None = None,
               workdir: str | Path | None = None, *, mode: str = "auto",
               emulation: dict[str, Any] | None = None, generator: Any = None,
               tcp_check: Callable[[str, Any], None] | None = None,
               ecn: str = "classic", pcap_dir: Path | None = None,
               captures: list[dict[str, Any]] | None = None) -> dict[str, pd.DataFrame]:
    """Run ``spec`` in network namespaces on this machine's TCP stack.

    Args:
        spec: the resolved spec (docs/engine-spec.md), as the simulator takes it.
        progress: ``progress(elapsed_ns, duration_ns)`` at every sample instant (wall time).
        workdir: where the generators write their results (default: a temporary directory
            ``cca-<tag>-work*``, removed at the end).
        mode: how to emulate the links: ``"auto"``, ``"relay"`` or ``"tc"``
            (:mod:`ccarena.backends.kernel.emulation_choice`).
        generator: what runs the flows: a module or object with ``start_flows`` and
            ``flow_rows`` as :mod:`.flow_processes` and :mod:`.measured_tables` have them (default: this
            kernel's TCP through :mod:`.trafficgen`; the udp backend passes its own).
        tcp_check: the generator's own check of TCP flows (see :func:`check`).
        ecn: ``[kernel] ecn``: which ECN feedback the hosts' TCP negotiates (``"classic"``,
            ``"accecn"`` or ``"off"``; :func:`ccarena.backends.kernel.ecn_modes.host_tcp_ecn`).
        emulation: if given, filled with how the links were emulated and the emulation's own
            error: ``{"mechanisms", "relay": <relay stats without samples, and its timing
            settings> | None,
            "lateness_ns": {pipe direction: ...}, "kernel", "congestion_controls", "run_tag"}``.
        pcap_dir: where the relay writes the spec's ``pcap`` links' capture files (one per link
            direction, named as the simulator names them; :func:`.relay_driver.capture_files`);
            None: no capture (the spec's ``pcap`` is then ignored).
        captures: if given, filled with one entry per captured link, as the simulator's
            ``run.json`` ``pcap`` entries (:func:`.relay_driver.capture_entries`); a link whose
            file reached ``max_bytes`` is also warned about (RuntimeWarning).

    Returns:
        ``{"flows", "samples", "queues", "links"}`` → DataFrame, columns as the simulator's (see
        :mod:`ccarena.backends.kernel.measured_tables` for where each number comes from), and
        ``"subflows"`` (:data:`ccarena.backends.SUBFLOW_TABLE`) when a flow is Multipath TCP
        (its path manager set up by :mod:`ccarena.backends.kernel.mptcp`).

    Raises:
        UserError: the kernel lacks something the spec needs, not root, a tool is missing, a
            generator failed (one line naming the flow and why).
        KeyboardInterrupt: Ctrl-C or SIGTERM; everything of the run is removed first.
    """
    caps = check(spec, mode=mode, tcp_check=tcp_check, ecn=ecn)
    emu = choose(spec, caps, mode)
    names = RunNames(new_tag())
    own_workdir = workdir is None
    work = Path(tempfile.mkdtemp(prefix=f"{names.prefix}work")) if own_workdir else Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    endpoints: list[flow_processes.Endpoint] = []
    relay: relay_driver.Relay | None = None
    names.register()
    try:
        with sigterm_interrupts():
            plan = plan_network(spec, names, emu, ecn=ecn)
            build_network(plan, created)
            disable_offloads(plan)
            mptcp_plan = mptcp.plan_mptcp(spec, plan)
            if not mptcp_plan.empty():
                mptcp.install(mptcp_plan)
            if emu.rate_and_queue == "htb":
                _shape(plan, spec)
            if emu.delay == "netem":
                netem.install_netem(plan, spec)
            if any(phys.relayed for phys in plan.links):
                relay = relay_driver.start_relay(plan, spec, emu, work, pcap_dir=pcap_dir)
            if emu.loss == "nft":
                _install_loss(plan, spec)
            measured = _run_traffic(spec, plan, work, endpoints, progress,
                                    htb=emu.rate_and_queue == "htb", relay=relay,
                                    start_flows=(generator or flow_processes).start_flows)
            relay_stats = relay.stop() if relay is not None else None
            if emu.rate_and_queue == "relay":
                if relay_stats is None:
                    raise UserError(f"the link relay stopped without writing its results: {relay.last_error()}")
                _add_relay_readings(measured, relay_driver.queue_readings(relay_stats, plan), spec)
            if pcap_dir is not None and spec.pcap is not None and captures is not None:
                captures.extend(relay_driver.capture_entries(relay_stats or {}, plan, spec))
                relay_driver.warn_incomplete_captures(captures)
            lost_wire = _wire_losses(plan, spec, emu, measured)
            flows_rows, sample_rows = (generator or measured_tables).flow_rows(spec, measured["results"])
            out = {
                "flows": measured_tables.frame(flows_rows, measured_tables.FLOW_COLUMNS),
                "samples": measured_tables.frame(sample_rows, measured_tables.SAMPLE_COLUMNS),
                "queues": measured_tables.frame(measured_tables.queue_rows(measured["readings"], measured["baseline"],
                                                         sampled=_sampled_links(spec)),
                                       measured_tables.QUEUE_COLUMNS),
                "links": measured_tables.frame(measured_tables.link_rows(spec, measured["final"], measured["baseline"],
                                                       lost_wire), measured_tables.LINK_COLUMNS),
            }
            subflow_rows = measured_tables.subflow_rows(spec, measured["results"])
            if subflow_rows:
                out[SUBFLOW_TABLE] = measured_tables.frame(subflow_rows, measured_tables.SUBFLOW_COLUMNS)
            if emulation is not None:
                emulation.update(_emulation_record(names, caps, emu, relay_stats))
                emulation["machine_cpu_s"] = measured["machine_cpu"]
            return out
    finally:
        flow_processes.stop_all(endpoints)
        if relay is not None:
            relay.kill()
        stragglers = processes_in(created, {names.tag})
        if stragglers:
            kill_pids(sorted(stragglers))
        remove_namespaces(created)
        names.unregister()
        if own_workdir:
            shutil.rmtree(work, ignore_errors=True)


def _shape(plan: NetworkPlan, spec: RunSpec) -> None:
    per_ns: dict[str, list[shaping.Shaper]] = {}
    for i, link in enumerate(spec.links):
        ns, ifname = plan.egress(i)
        per_ns.setdefault(ns, []).append(shaping.Shaper(
            link=i, namespace=ns, ifname=ifname, rate_bps=int(link.rate_bps),
            limit_packets=link.queue.limit_packets, limit_bytes=link.queue.limit_bytes))
    for ns, shapers in per_ns.items():
        shaping.install(ns, shapers)


def _install_loss(plan: NetworkPlan, spec: RunSpec) -> None:
    """nftables loss on every lossy link, where its packets arrive (after its queue)."""
    per_ns: dict[str, dict[str, float]] = {}
    for i, link in enumerate(spec.links):
        if link.loss > 0:
            ns, ifname = plan.ingress(i)
            per_ns.setdefault(ns, {})[ifname] = float(link.loss)
    for ns, rules in per_ns.items():
        loss.install(ns, rules)


def _add_relay_readings(measured: dict[str, Any], rows: dict[int, dict[int, QueueReading]],
                        spec: RunSpec) -> None:
    """Put the relay's queue samples at ``t0`` (baseline) and ``t0 + k·interval`` beside htb's."""
    t0, interval = measured["t0_ns"], int(spec.sample_interval_ns)
    for link, by_time in rows.items():
        if t0 in by_time:
            measured["baseline"][link] = by_time[t0]
        for k, (_, per_link) in enumerate(measured["readings"], start=1):
            reading = by_time.get(t0 + k * interval)
            if reading is not None:
                per_link[link] = reading
        if measured["readings"] and link in measured["readings"][-1][1]:
            measured["final"][link] = measured["readings"][-1][1][link]


def _wire_losses(plan: NetworkPlan, spec: RunSpec, emu: Emulation,
                 measured: dict[str, Any]) -> dict[int, int | None]:
    """Spec link → packets lost on its wire during the run (0 for loss-free links; None if
    unreadable): the relay's own count, or the nftables rule's."""
    out: dict[int, int | None] = {}
    counts: dict[str, dict[str, int]] = {}
    for i, link in enumerate(spec.links):
        if link.loss == 0:
            out[i] = 0
            continue
        if emu.loss == "relay":
            final, base = measured["final"].get(i), measured["baseline"].get(i)
            if final is None or final.lost_wire is None:
                out[i] = None
            else:
                out[i] = final.lost_wire - (base.lost_wire or 0 if base is not None else 0)
            continue
        ns, ifname = plan.ingress(i)
        if ns not in counts:
            counts[ns] = loss.read_drops(ns)
        out[i] = counts[ns].get(ifname)
    return out


def _run_traffic(spec: RunSpec, plan: NetworkPlan, work: Path,
                 endpoints: list[flow_processes.Endpoint], progress: ProgressCallback | None, *,
                 htb: bool, relay: relay_driver.Relay | None,
                 start_flows: Callable[..., None] = flow_processes.start_flows) -> dict[str, Any]:
    """Start the generators, sample htb's queues at every instant (when ``htb``), collect every
    result. With a relay, ``t0`` falls on its sampling grid and is announced to it (its links'
    scheduled changes count from it)."""
    from pyroute2 import NetNS

    n_proc = 2 * len(spec.flows)
    interval_ns = int(spec.sample_interval_ns)
    duration_ns = int(spec.duration_ns)
    t0_ns = time.monotonic_ns() + int((LEAD_S + LEAD_PER_PROCESS_S * n_proc) * 1e9)
    if relay is not None:
        t0_ns = relay_driver.on_grid(t0_ns, relay.sample_origin_ns, interval_ns)
        relay.announce_start(t0_ns)
    # Queue sampling over netlink: one socket per namespace holding an htb egress.
    egress: dict[int, tuple[str, str]] = {i: plan.egress(i) for i in range(len(spec.links))} if htb else {}
    handles = {ns: NetNS(ns) for ns in {ns for ns, _ in egress.values()}}
    try:
        ifindex = {i: handles[ns].link_lookup(ifname=ifname)[0] for i, (ns, ifname) in egress.items()}

        def read() -> dict[int, shaping.QueueReading]:
            per_ns = {ns: shaping.read_root_qdiscs(h) for ns, h in handles.items()}
            return {i: per_ns[ns][ifindex[i]] for i, (ns, _) in egress.items() if ifindex[i] in per_ns[ns]}

        start_flows(spec, plan, work, t0_ns, endpoints, ready_by_ns=t0_ns - 50_000_000)
        if time.monotonic_ns() >= t0_ns:
            raise UserError("the traffic generators took too long to start; the machine is too busy")
        _sleep_until(t0_ns)
        machine0 = cpu_times()
        baseline = read()
        readings: list[tuple[float, dict[int, shaping.QueueReading]]] = []
        k = 1
        while k * interval_ns <= duration_ns:
            _sleep_until(t0_ns + k * interval_ns)
            readings.append((k * interval_ns / 1e9, read()))
            if progress is not None:
                progress(k * interval_ns, duration_ns)
            failure = flow_processes.first_failure(endpoints, spec)
            if failure:
                raise UserError(failure)
            k += 1
        final = readings[-1][1] if readings else read()
        machine_cpu = machine_cpu_s(machine0, cpu_times())
    finally:
        for h in handles.values():
            h.close()
    flow_processes.wait_all(endpoints, COLLECT_TIMEOUT_S)
    results: dict[tuple[int, str], dict[str, Any]] = {}
    for ep in endpoints:
        result = ep.result()
        if not result.get("ok"):
            name = spec.flows[ep.flow].name
            raise UserError(f"flow '{name}': its {ep.role.split('-')[1]}er in {ep.namespace} failed: "
                            f"{result.get('error')}")
        results[(ep.flow, ep.role.split("-")[1])] = result
    return {"results": results, "readings": readings, "baseline": baseline, "final": final,
            "t0_ns": t0_ns, "machine_cpu": machine_cpu}


def machine_cpu_s(before: list[int], after: list[int]) -> dict[str, float]:
    """CPU seconds of the whole machine (every CPU, every process: not only this run's) between two
    /proc/stat readings, by kind. ``softirq_s`` bounds the kernel's softirq network work that
    the per-flow ``sender_cpu_s`` may leave out (docs/metrics.md, "CPU cost")."""
    ticks = os.sysconf("SC_CLK_TCK")
    names = ("user_s", "nice_s", "system_s", "idle_s", "iowait_s", "irq_s", "softirq_s", "steal_s")
    return {n: (b - a) / ticks for n, a, b in zip(names, before, after)}


def _sleep_until(t_ns: int) -> None:
    while True:
        left = t_ns - time.monotonic_ns()
        if left <= 0:
            return
        time.sleep(min(left / 1e9, 0.2))


def _emulation_record(names: RunNames, caps: capabilities.Capabilities, emu: Emulation,
                      relay_stats: dict[str, Any] | None) -> dict[str, Any]:
    import platform

    lateness = {}
    relay = None
    if relay_stats is not None:
        # The queue samples are in the queues table already; keep the record small.
        pipes = [dict(pipe, **{d: {k: v for k, v in pipe[d].items() if k != "samples"}
                               for d in relay_driver.DIRECTIONS if d in pipe})
                 for pipe in relay_stats.get("pipes", [])]
        relay = dict(relay_stats, timing=relay_driver.TIMING, pipes=pipes)
        for pipe in relay_stats.get("pipes", []):
            for direction in relay_driver.DIRECTIONS:
                stats = pipe.get(direction) or {}
                if stats.get("frames"):
                    lateness[f"{pipe['name']} {direction}"] = stats.get("lateness_ns")
    return {"run_tag": names.tag, "kernel": platform.release(), "mechanisms": emu.describe(),
            "congestion_controls": caps.congestion_controls, "relay": relay,
            "lateness_ns": lateness}

