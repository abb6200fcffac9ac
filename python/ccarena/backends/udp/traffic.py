"""The udp backend's flow generator: what the kernel backend's :mod:`~ccarena.backends.kernel.traffic`
and :mod:`~ccarena.backends.kernel.tables` do for Linux TCP, done for ccarena's transport on UDP.

A TCP flow's receiver is a sink (``UdpSink``) in its destination's namespace, started first (it
prints ``ready`` once bound); its sender (``udp_stream_send``) runs in the source's namespace. Both
are :mod:`.endpoint` processes, started, watched and stopped by pid exactly as the kernel's
generators (:class:`ccarena.backends.kernel.traffic.Endpoint`), and they write the same JSON, so
the kernel backend's tables come out; the transport's own counts (fast recoveries, spurious RTOs,
duplicate bytes) fill the columns Linux cannot. UDP CBR flows run on the kernel's generator.

What differs from the simulator's flow, and why (docs/udp-backend.md):

- **MSS**: a DATA packet carries at most 1435 payload bytes (1500-byte MTU − 20 IP − 8 UDP − 20
  ccarena header − 17 DATA frame); the scenario's default 1448 runs as 1435 (0.9 % less payload per
  full packet). Another MSS above 1435 is refused.
- **Headers**: 65 bytes per DATA packet and 90 to 138 per ACK are the wire's, so ``header_bytes``
  and ``ack_bytes`` must keep their defaults (they only describe the simulator's packets).
- **ECN** is not carried on real sockets yet (refused).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ccarena.backends.kernel import tables as kernel_tables
from ccarena.backends.kernel import traffic as kernel_traffic
from ccarena.backends.kernel.netns import NetworkPlan
from ccarena.backends.kernel.traffic import Endpoint, port_for
from ccarena.errors import UserError
from ccarena.runspec import TCP_DEFAULTS, RunSpec

ENDPOINT = Path(__file__).with_name("endpoint.py")
MAX_PAYLOAD_BYTES = 1435
"""The largest DATA payload of ccarena's wire format (docs/udp-wire.md)."""
DEFAULT_MSS_BYTES = int(TCP_DEFAULTS["mss_bytes"])
FIXED_BY_THE_WIRE = {"header_bytes": "header_bytes", "ack_bytes": "ack_bytes"}
"""Flow fields (spec key → scenario field) that only describe the simulator's packets: the udp
backend's packets carry the wire's headers, so another value is refused rather than ignored."""


def check_tcp_flow(where: str, flow: Any) -> None:
    """Check one TCP flow of the spec for the udp backend.

    Raises:
        UserError: one line naming the field and the fix.
    """
    from ccarena.flavors import tcp_flavors

    if flow.flavor not in tcp_flavors():
        raise UserError(f"{where}.flavor: '{flow.flavor}' is not a TCP flavor of ccarena's transport; "
                        "use --backend sim")
    if flow.ecn:
        raise UserError(f"{where}.ecn: the udp backend does not carry ECN on real sockets yet; "
                        "remove ecn or use --backend sim")
    mss = int(flow.mss_bytes)
    if mss > MAX_PAYLOAD_BYTES and mss != DEFAULT_MSS_BYTES:
        raise UserError(f"{where}.mss: {mss} bytes do not fit one UDP datagram of ccarena's wire "
                        f"(at most {MAX_PAYLOAD_BYTES}); lower mss or use --backend sim")
    if mss < 64:
        raise UserError(f"{where}.mss: the udp backend's packets carry at least 64 bytes; raise mss")
    for key, field in FIXED_BY_THE_WIRE.items():
        if getattr(flow, key) != TCP_DEFAULTS.get(key):
            raise UserError(f"{where}.{field}: the udp backend's packets carry the wire's own headers; "
                            f"remove {field} or use --backend sim")


def mss_on_the_wire(flow: Any) -> int:
    """The MSS a TCP flow runs with: its own, the default 1448 cut to :data:`MAX_PAYLOAD_BYTES`."""
    return min(int(flow.mss_bytes), MAX_PAYLOAD_BYTES)


def _engine_path() -> str:
    import ccarena._engine as engine

    return str(engine.__file__)


def _start(namespace: str, cfg: dict[str, Any], stderr: Path) -> subprocess.Popen:
    with open(stderr, "w") as err:
        return subprocess.Popen(
            ["ip", "netns", "exec", namespace, sys.executable, "-S", str(ENDPOINT), json.dumps(cfg)],
            stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)


def _config(spec: RunSpec, i: int, t0_ns: int, workdir: Path, role: str) -> dict[str, Any]:
    flow = spec.flows[i]
    return {"role": role, "parent_pid": os.getpid(), "engine": _engine_path(), "t0_mono_ns": t0_ns,
            "interval_ns": int(spec.sample_interval_ns), "duration_ns": int(spec.duration_ns),
            "start_ns": int(flow.start_ns), "stop_ns": None if flow.stop_ns is None else int(flow.stop_ns),
            "port": port_for(i), "out": str(workdir / f"flow{i}-{role}.json")}


def receiver_config(spec: RunSpec, i: int, t0_ns: int, workdir: Path, bind: str) -> dict[str, Any]:
    """The sink's configuration of TCP flow ``i`` (its receiver settings, as the simulator's)."""
    flow = spec.flows[i]
    cfg = _config(spec, i, t0_ns, workdir, "stream-recv")
    cfg.update(bind=bind, rwnd_bytes=flow.rwnd_bytes, delayed_ack_ns=int(flow.delayed_ack_ns),
               ack_every_segments=int(flow.ack_every_segments),
               # Linux's receiver sends D-SACK, which only the `linux` recovery uses (as in the
               # simulator, crates/sim/src/flow.rs).
               dsack=flow.recovery == "linux")
    return cfg


def sender_config(spec: RunSpec, i: int, t0_ns: int, workdir: Path, bind: str, peer: str) -> dict[str, Any]:
    """The stream sender's configuration of TCP flow ``i`` (its transport settings, as the
    simulator builds its sender)."""
    flow = spec.flows[i]
    cfg = _config(spec, i, t0_ns, workdir, "stream-send")
    cfg.update(bind=bind, peer=peer, flavor=flow.flavor, params=dict(flow.params),
               recovery=flow.recovery, mss_bytes=mss_on_the_wire(flow),
               initial_cwnd_packets=int(flow.initial_cwnd_packets), min_rto_ns=int(flow.min_rto_ns),
               initial_rto_ns=int(flow.initial_rto_ns), max_rto_ns=int(flow.max_rto_ns),
               clock_granularity_ns=int(flow.clock_granularity_ns), dupthresh=int(flow.dupthresh),
               sndbuf_bytes=flow.sndbuf_bytes, bytes=flow.bytes)
    return cfg


def start_flows(spec: RunSpec, plan: NetworkPlan, workdir: Path, t0_ns: int,
                endpoints: list[Endpoint], ready_by_ns: int) -> None:
    """Start every flow's receiver (waiting for ``ready``), then every sender: TCP flows as
    :mod:`.endpoint` processes, UDP CBR flows on the kernel's generator. Each started process is
    appended to ``endpoints`` at once (the caller stops them all, even when this raises).

    Raises:
        UserError: a receiver failed to start (e.g. its port is in use): one line naming the flow.
    """
    for i, flow in enumerate(spec.flows):
        if flow.kind != "tcp":
            continue
        ns = plan.ns(int(flow.dst))
        cfg = receiver_config(spec, i, t0_ns, workdir, plan.host_addresses[int(flow.dst)][0])
        stderr = workdir / f"flow{i}-stream-recv.stderr"
        ep = Endpoint(i, "stream-recv", ns, Path(cfg["out"]), _start(ns, cfg, stderr), stderr)
        endpoints.append(ep)
        kernel_traffic._wait_ready(ep, flow.name, ready_by_ns)
    for i, flow in enumerate(spec.flows):
        if flow.kind != "tcp":
            continue
        ns = plan.ns(int(flow.src))
        cfg = sender_config(spec, i, t0_ns, workdir, plan.host_addresses[int(flow.src)][0],
                            plan.host_addresses[int(flow.dst)][0])
        stderr = workdir / f"flow{i}-stream-send.stderr"
        endpoints.append(Endpoint(i, "stream-send", ns, Path(cfg["out"]), _start(ns, cfg, stderr), stderr))
    cbr = [i for i, flow in enumerate(spec.flows) if flow.kind != "tcp"]
    if cbr:
        kernel_traffic.start_flows(spec, plan, workdir, t0_ns, endpoints, ready_by_ns, flows=cbr)


def flow_rows(spec: RunSpec, results: dict[tuple[int, str], dict[str, Any]]
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(flows rows, samples rows) as the kernel backend builds them, with the transport's own
    counts where Linux has none: ``fast_recoveries``, ``spurious_rtos`` (the sender's, after
    draining) and ``duplicate_bytes_received`` (the sink's)."""
    flows, samples = kernel_tables.flow_rows(spec, results)
    for row in flows:
        i = int(row["flow"])
        if spec.flows[i].kind != "tcp":
            continue
        drained = results[(i, "send")].get("drained") or {}
        row["fast_recoveries"] = drained.get("fast_recoveries")
        row["spurious_rtos"] = drained.get("spurious_rtos")
        row["duplicate_bytes_received"] = results[(i, "recv")].get("duplicate_bytes")
    return flows, samples
