"""Starting, watching and collecting the traffic generator (:mod:`ccarena.backends.kernel.trafficgen`).

Every flow has a receiver in its destination host's namespace (started first; it prints
``ready`` once bound) and a sender in its source host's namespace. Each runs as ``ip netns exec
NS python3 -S trafficgen.py CONFIG`` in its own session (a Ctrl-C at the terminal reaches ccarena
only, which stops them in order); each dies with ccarena (``PR_SET_PDEATHSIG``). Each writes its
measurements as JSON into the run's work directory.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccarena.backends.kernel.netns import NetworkPlan
from ccarena.errors import UserError
from ccarena.runspec import RunSpec

GENERATOR = Path(__file__).with_name("trafficgen.py")
BASE_PORT = 5201


def port_for(flow: int) -> int:
    """The receiver's port of flow ``flow`` (distinct per flow, so two flows to one host never
    collide)."""
    return BASE_PORT + flow


@dataclass
class Endpoint:
    """One generator process.

    Attributes:
        flow: the flow's index; role: ``tcp-send``, ``tcp-recv``, ``udp-send`` or ``udp-recv``.
        namespace: where it runs; out: its JSON result file; proc: the process.
    """

    flow: int
    role: str
    namespace: str
    out: Path
    proc: subprocess.Popen
    stderr: Path

    def result(self) -> dict[str, Any]:
        """The process's JSON result, or ``{"ok": False, "error": ...}`` if it wrote none."""
        try:
            return json.loads(self.out.read_text())
        except (OSError, ValueError):
            last = ""
            try:
                last = (self.stderr.read_text().strip().splitlines() or [""])[-1]
            except OSError:
                pass
            code = self.proc.poll()
            return {"ok": False, "error": last or f"exited with status {code} without a result"}


def _role(flow: dict[str, Any], side: str) -> str:
    return ("tcp" if flow.kind == "tcp" else "udp") + "-" + side


def start_in_namespace(namespace: str, command: list[str], stderr: Path) -> subprocess.Popen:
    """``ip netns exec NAMESPACE COMMAND...``: a flow's process in a session of its own (a Ctrl-C
    at the terminal reaches ccarena only), its stdout piped (where it prints ``ready``), its
    stderr written to the file ``stderr``."""
    with open(stderr, "w") as err:
        return subprocess.Popen(["ip", "netns", "exec", namespace, *command], stdout=subprocess.PIPE,
                                stderr=err, text=True, start_new_session=True)


def start_script(script: Path, namespace: str, cfg: dict[str, Any], stderr: Path) -> subprocess.Popen:
    """``python3 -S SCRIPT CONFIG_JSON`` in ``namespace`` (:func:`start_in_namespace`): this
    backend's generator, or another backend's endpoint."""
    return start_in_namespace(namespace, [sys.executable, "-S", str(script), json.dumps(cfg)], stderr)


def _start(namespace: str, cfg: dict[str, Any], stderr: Path) -> subprocess.Popen:
    return start_script(GENERATOR, namespace, cfg, stderr)


def _base_config(spec: RunSpec, i: int, t0_ns: int, workdir: Path, role: str) -> dict[str, Any]:
    flow = spec.flows[i]
    cfg = {"role": role, "parent_pid": os.getpid(), "t0_mono_ns": t0_ns,
           "interval_ns": int(spec.sample_interval_ns), "duration_ns": int(spec.duration_ns),
           "start_ns": int(flow.start_ns), "stop_ns": flow.stop_ns,
           "port": port_for(i), "out": str(workdir / f"flow{i}-{role}.json")}
    mptcp = getattr(flow, "mptcp", None) if flow.kind == "tcp" else None
    if mptcp is not None:
        # Both ends open IPPROTO_MPTCP sockets; the path manager (set up by
        # :mod:`ccarena.backends.kernel.mptcp`) opens the subflows.
        cfg["mptcp"] = {"subflows": int(mptcp.subflows)}
    return cfg


def start_flows(spec: RunSpec, plan: NetworkPlan, workdir: Path, t0_ns: int,
                endpoints: list[Endpoint], ready_by_ns: int, flows: list[int] | None = None) -> None:
    """Start every flow's receiver (waiting for ``ready``), then every sender.

    Args:
        flows: only these flows (indices); None: every flow.
        endpoints: each started process is appended at once (the caller stops them all, even
            when this raises).
        ready_by_ns: CLOCK_MONOTONIC deadline for the receivers to be ready.

    Raises:
        UserError: a receiver failed to start (e.g. its port is in use): one line naming the flow.
    """
    chosen = [(i, spec.flows[i]) for i in (range(len(spec.flows)) if flows is None else flows)]
    for i, flow in chosen:
        role = _role(flow, "recv")
        cfg = _base_config(spec, i, t0_ns, workdir, role)
        cfg["bind"] = plan.host_addresses[int(flow.dst)][0]
        if flow.kind == "tcp":
            cfg["rwnd_bytes"] = flow.rwnd_bytes
        ns = plan.ns(int(flow.dst))
        stderr = workdir / f"flow{i}-{role}.stderr"
        ep = Endpoint(i, role, ns, Path(cfg["out"]), _start(ns, cfg, stderr), stderr)
        endpoints.append(ep)
        _wait_ready(ep, flow.name, ready_by_ns)
    for i, flow in chosen:
        role = _role(flow, "send")
        cfg = _base_config(spec, i, t0_ns, workdir, role)
        cfg["bind"] = plan.host_addresses[int(flow.src)][0]
        cfg["peer"] = plan.host_addresses[int(flow.dst)][0]
        if flow.kind == "tcp":
            cfg.update(flavor=flow.flavor, bytes=flow.bytes, mss_bytes=flow.mss_bytes,
                       sndbuf_bytes=flow.sndbuf_bytes)
        else:
            cfg.update(rate_bps=flow.rate_bps, packet_bytes=flow.packet_bytes)
        ns = plan.ns(int(flow.src))
        stderr = workdir / f"flow{i}-{role}.stderr"
        endpoints.append(Endpoint(i, role, ns, Path(cfg["out"]), _start(ns, cfg, stderr), stderr))


def _wait_ready(ep: Endpoint, name: str, deadline_ns: int) -> None:
    assert ep.proc.stdout is not None
    ended = False
    while time.monotonic_ns() < deadline_ns:
        ready, _, _ = select.select([ep.proc.stdout], [], [], 0.05)
        if ready:
            line = ep.proc.stdout.readline()
            if line.strip() == "ready":
                return
            if line == "":  # EOF: the receiver is exiting
                ended = True
                break
        elif ep.proc.poll() is not None:
            ended = True
            break
    if not ended:
        raise UserError(f"flow '{name}': its receiver in {ep.namespace} was not ready in time")
    try:
        ep.proc.wait(5)
    except subprocess.TimeoutExpired:
        raise UserError(f"flow '{name}': its receiver in {ep.namespace} closed its output "
                        "but did not exit") from None
    raise UserError(f"flow '{name}': its receiver in {ep.namespace} failed: {ep.result()['error']}")


def first_failure(endpoints: list[Endpoint], spec: RunSpec) -> str | None:
    """A one-line description of the first generator that exited with an error, else None."""
    for ep in endpoints:
        code = ep.proc.poll()
        if code not in (None, 0):
            name = spec.flows[ep.flow].name
            return f"flow '{name}': its {ep.role.split('-')[1]}er in {ep.namespace} failed: " \
                   f"{ep.result()['error']}"
    return None


def wait_all(endpoints: list[Endpoint], timeout_s: float) -> None:
    """Wait for every generator to exit on its own; SIGTERM (then SIGKILL) the rest."""
    deadline = time.monotonic() + timeout_s
    for ep in endpoints:
        try:
            ep.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    stop_all(endpoints)


def stop_all(endpoints: list[Endpoint]) -> None:
    """SIGTERM every generator still running, wait up to 2 s, then SIGKILL it (by its pid)."""
    for ep in endpoints:
        if ep.proc.poll() is None:
            try:
                ep.proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 2.0
    for ep in endpoints:
        try:
            ep.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            ep.proc.kill()
            try:
                ep.proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        if ep.proc.stdout is not None:
            ep.proc.stdout.close()
