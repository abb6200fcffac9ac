"""The udp backend's flow generator: what the kernel backend's :mod:`~ccarena.backends.kernel.flow_processes`
and :mod:`~ccarena.backends.kernel.measured_tables` do for Linux TCP, done for ccarena's transport on UDP.

A TCP flow's receiver is a sink (``UdpSink``) in its destination's namespace, started first (it
prints ``ready`` once bound); its sender (``udp_stream_send``) runs in the source's namespace. Both
are :mod:`.endpoint` processes, started, watched and stopped by pid exactly as the kernel's
generators (:class:`ccarena.backends.kernel.flow_processes.Endpoint`), and they write the same JSON, so
the kernel backend's tables come out; the transport's own counts (fast recoveries, spurious RTOs,
duplicate bytes) fill the columns Linux cannot. UDP CBR flows run on the kernel's generator. UDT
flows run ccarena's UDT through the same two endpoints (the sender's flavor ``udt`` selects UDT's
own transport and frames) or, with ``udt_impl = "libudt"``, libudt's peer (:mod:`.libudt`); both
write the same keys, and :func:`flow_rows` builds their rows beside the others.

What differs from the simulator's flow, and why (docs/udp-backend.md):

- **MSS**: a DATA packet carries at most 1435 payload bytes (1500-byte MTU − 20 IP − 8 UDP − 20
  ccarena header − 17 DATA frame); the scenario's default 1448 runs as 1435 (0.9 % less payload per
  full packet). Another MSS above 1435 is refused.
- **Headers**: 65 bytes per DATA packet and 90 to 138 per ACK (10 more with AccECN feedback) are
  the wire's, so ``header_bytes`` and ``ack_bytes`` must keep their defaults (they only describe
  the simulator's packets).
- **ECN** is carried in each datagram's IP header (crates/udp/src/batch.rs) and fed back in the
  wire's ACK (docs/udp-wire.md): with ``ecn = true`` an L4S flavor (``prague``; ``dctcp`` with
  ``ect1 = 1``) sends ECT(1) with Accurate ECN feedback, DCTCP ECT(0) with its own echo, any other
  ECT(0) with RFC 3168's, as the simulator's flow. The sink counts the CE marks it reads
  (``ce_packets``, ``ce_bytes``, as the simulator's receiver counts them); UDT is Not-ECT.
- **UDT** (ccarena's): a UDT_DATA packet carries at most 1427 payload bytes (the simulator's 1456
  runs as 1427); SYN, initial RTT, EXP floor and flow window are UDT4's defaults (others refused).
- **QUIC** (``transport = "quic"``): the simulator's QUIC transport (RFC 9002's recovery, RFC 9000's
  ACKs, ECN counts and flow control) in ccarena's QUIC_DATA and QUIC_ACK frames — not QUIC's wire
  format (no TLS, no interoperability; docs/udp-wire.md). A QUIC_DATA packet carries at most 1435
  stream bytes (the simulator's 1437 for the default MSS runs as 1435); the flow's QUIC settings
  travel in the offer, its ``rwnd`` is the sink's connection window (MAX_DATA). The row's ``kind``
  is ``"quic"``, ``recovery`` ``"rfc9002"``, ``rto_count`` the probe timeouts and
  ``fast_recoveries`` the loss-started congestion events, as the simulator's. With ``[kernel]
  quic_impl = "quinn"`` or ``"quinn-native"`` a QUIC flow runs on the quinn QUIC stack instead
  (:mod:`.quinn_flows`: real QUIC packets with TLS 1.3, ccarena's controller inside quinn or
  quinn's own).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from ccarena.backends.kernel import flow_processes as kernel_flows
from ccarena.backends.kernel import measured_tables as kernel_tables
from ccarena.backends.kernel.flow_processes import Endpoint, port_for
from ccarena.backends.kernel.netns import NetworkPlan
from ccarena.backends.udp import libudt, quinn_flows
from ccarena.errors import UserError
from ccarena.runspec import TCP_DEFAULTS, RunSpec, quic_payload_bytes

ENDPOINT = Path(__file__).with_name("endpoint.py")
MAX_PAYLOAD_BYTES = 1435
"""The largest DATA payload of ccarena's wire format (docs/udp-wire.md)."""
DEFAULT_MSS_BYTES = int(TCP_DEFAULTS["mss_bytes"])
FIXED_BY_THE_WIRE = {"header_bytes": "header_bytes", "ack_bytes": "ack_bytes"}
"""Flow fields (spec key → scenario field) that only describe the simulator's packets: the udp
backend's packets carry the wire's headers, so another value is refused rather than ignored."""


UDT_IMPLEMENTATIONS = ("ccarena", "libudt")
"""Who runs a UDT flow on the udp backend: ccarena's UDT transport (crates/transport/src/udt, the
simulator's code, over crates/udp) or the reference UDT4 (:mod:`.libudt`)."""
MAX_UDT_PAYLOAD_BYTES = 1427
"""The largest UDT_DATA payload of ccarena's wire format (docs/udp-wire.md): 1500 − 20 IP − 8 UDP −
20 ccarena header − 25 UDT_DATA frame."""


TCP_IMPLEMENTATIONS = ("ccarena", "linux")
"""Who runs a (non-QUIC) TCP flow on the udp backend: ccarena's transport on UDP, or this
kernel's TCP on the kernel backend's generator (:mod:`ccarena.backends.kernel.flow_processes`)."""
QUIC_IMPLEMENTATIONS = ("ccarena", *quinn_flows.QUINN_IMPLEMENTATIONS)
"""Who runs a QUIC flow on the udp backend: the simulator's sans-IO QUIC in ccarena's frames, or
quinn (:mod:`.quinn_flows`) with ccarena's controller or its own."""


def check_flow(where: str, flow: Any, udt_impl: str = "ccarena", quic_impl: str = "ccarena",
               tcp_impl: str = "ccarena") -> bool | None:
    """Check one TCP, QUIC or UDT flow of the spec for the udp backend (UDT run by ``udt_impl``,
    QUIC by ``quic_impl``, TCP by ``tcp_impl``). Returns ``False`` for a TCP flow Linux runs
    (``tcp_impl = "linux"``): the kernel backend's preflight checks it as its own
    (:func:`ccarena.backends.kernel.preflight.check_spec`).

    Raises:
        UserError: one line naming the field and the fix.
    """
    quic = getattr(flow, "quic", None) is not None
    if flow.kind == "tcp" and not quic and tcp_impl == "linux":
        if getattr(flow, "mptcp", None) is not None:
            raise UserError(f"{where}.subflows: Linux TCP flows of the udp backend run without "
                            "it; remove subflows or use --backend kernel")
        return False
    if quic and quic_impl in quinn_flows.QUINN_IMPLEMENTATIONS:
        quinn_flows.check_quinn_flow(where, flow, quic_impl)
    elif flow.kind != "udt":
        check_tcp_flow(where, flow)
    elif udt_impl == "libudt":
        libudt.check_udt_flow(where, flow)
    else:
        check_udt_flow(where, flow)


def check_udt_flow(where: str, flow: Any) -> None:
    """Check one UDT flow for ccarena's UDT on the udp backend: the SYN, initial RTT, EXP floor
    and flow window are the driver's (UDT4's defaults, crates/udp/src/udt.rs), the headers
    the wire's; another value is refused rather than ignored.

    Raises:
        UserError: one line naming the field and the fix.
    """
    from ccarena.runspec import UDT_DEFAULTS

    for key in (*libudt.FIXED_BY_LIBUDT, "flow_window_packets"):
        if getattr(flow, key) != UDT_DEFAULTS.get(key):
            field = "rwnd" if key == "flow_window_packets" else key
            raise UserError(f"{where}.{field}: ccarena's UDT on the udp backend runs with UDT4's "
                            f"default; remove {field} or use --backend sim")


def udt_mss_on_the_wire(flow: Any) -> int:
    """The payload per packet of a ccarena UDT flow: its MSS cut to :data:`MAX_UDT_PAYLOAD_BYTES`."""
    return min(int(flow.mss_bytes), MAX_UDT_PAYLOAD_BYTES)


MAX_QUIC_PAYLOAD_BYTES = 1435
"""The largest QUIC_DATA stream payload of ccarena's wire format (docs/udp-wire.md): 1500 − 20 IP −
8 UDP − 20 ccarena header − 17 QUIC_DATA frame."""
MAX_QUIC_ACK_DELAY_NS = 2**14 * 1_000_000
"""A QUIC flow's ``max_ack_delay`` must stay below 2^14 ms (RFC 9000 §18.2); the sink refuses more."""
DEFAULT_QUIC_PAYLOAD_BYTES = quic_payload_bytes(DEFAULT_MSS_BYTES, int(TCP_DEFAULTS["header_bytes"]))


def quic_mss_on_the_wire(flow: Any) -> int:
    """Stream bytes per packet of a QUIC flow on the udp backend: the simulator's
    (:func:`ccarena.runspec.quic_payload_bytes`) cut to :data:`MAX_QUIC_PAYLOAD_BYTES`."""
    return min(quic_payload_bytes(int(flow.mss_bytes), int(flow.header_bytes)), MAX_QUIC_PAYLOAD_BYTES)


def quic_settings(flow: Any) -> dict[str, Any]:
    """A QUIC flow's settings as the engine's stream sender takes them (``udp_stream_send``'s
    ``config["quic"]``, crates/py/src/udp.rs)."""
    q = flow.quic
    return {"max_ack_delay_ns": int(q.max_ack_delay_ns), "ack_eliciting_threshold": int(q.ack_eliciting_threshold),
            "reordering_threshold": int(q.reordering_threshold), "initial_rtt_ns": int(q.initial_rtt_ns),
            "max_stream_data_bytes": None if q.max_stream_data_bytes is None else int(q.max_stream_data_bytes),
            "pacing": bool(q.pacing)}


def _check_quic_flow(where: str, flow: Any) -> None:
    """A QUIC flow's payload and ACK delay fit the udp backend (the rest as a TCP flow's)."""
    payload = quic_payload_bytes(int(flow.mss_bytes), int(flow.header_bytes))
    if payload > MAX_QUIC_PAYLOAD_BYTES and int(flow.mss_bytes) != DEFAULT_MSS_BYTES:
        raise UserError(f"{where}.mss: a QUIC packet of {payload} stream bytes does not fit one UDP "
                        f"datagram of ccarena's wire (at most {MAX_QUIC_PAYLOAD_BYTES}); lower mss or "
                        "use --backend sim")
    if payload < 64:
        raise UserError(f"{where}.mss: the udp backend's QUIC packets carry at least 64 stream bytes; raise mss")
    if int(flow.quic.max_ack_delay_ns) >= MAX_QUIC_ACK_DELAY_NS:
        raise UserError(f"{where}.quic.max_ack_delay: RFC 9000 §18.2 allows less than 16384 ms; lower it "
                        "or use --backend sim")


def check_tcp_flow(where: str, flow: Any) -> None:
    """Check one TCP flow of the spec for the udp backend.

    Raises:
        UserError: one line naming the field and the fix.
    """
    from ccarena.flavors import tcp_flavors

    if flow.flavor not in tcp_flavors():
        raise UserError(f"{where}.flavor: '{flow.flavor}' is not a TCP flavor of ccarena's transport; "
                        "use --backend sim")
    if getattr(flow, "mptcp", None) is not None:
        raise UserError(f"{where}.subflows: the udp backend runs single-path connections; run "
                        "Multipath TCP with --backend sim or kernel")
    if getattr(flow, "quic", None) is not None:
        _check_quic_flow(where, flow)
        for key, field in FIXED_BY_THE_WIRE.items():
            if getattr(flow, key) != TCP_DEFAULTS.get(key):
                raise UserError(f"{where}.{field}: the udp backend's packets carry the wire's own "
                                f"headers; remove {field} or use --backend sim")
        return
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
    return kernel_flows.start_script(ENDPOINT, namespace, cfg, stderr)


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
               dsack=flow.recovery == "linux",
               # Linux's quick-ACK mode (host = "linux"), restarted after min_rto of silence, as
               # the simulator's receiver does.
               quickack_segments=int(flow.quickack_segments), quickack_idle_ns=int(flow.min_rto_ns))
    return cfg


def sender_config(spec: RunSpec, i: int, t0_ns: int, workdir: Path, bind: str, peer: str) -> dict[str, Any]:
    """The stream sender's configuration of TCP flow ``i`` (its transport settings, as the
    simulator builds its sender; a QUIC flow's QUIC settings, :func:`quic_settings`)."""
    flow = spec.flows[i]
    cfg = _config(spec, i, t0_ns, workdir, "stream-send")
    quic = getattr(flow, "quic", None) is not None
    cfg.update(bind=bind, peer=peer, flavor=flow.flavor, params=dict(flow.params),
               recovery=flow.recovery, mss_bytes=quic_mss_on_the_wire(flow) if quic else mss_on_the_wire(flow),
               quic=quic_settings(flow) if quic else None,
               initial_cwnd_packets=int(flow.initial_cwnd_packets), min_rto_ns=int(flow.min_rto_ns),
               initial_rto_ns=int(flow.initial_rto_ns), max_rto_ns=int(flow.max_rto_ns),
               clock_granularity_ns=int(flow.clock_granularity_ns), dupthresh=int(flow.dupthresh),
               sndbuf_bytes=flow.sndbuf_bytes, bytes=flow.bytes, ecn=bool(flow.ecn),
               rto_rule=flow.rto_rule, handshake_rtt=bool(flow.handshake_rtt))
    return cfg


def udt_receiver_config(spec: RunSpec, i: int, t0_ns: int, workdir: Path, bind: str) -> dict[str, Any]:
    """The sink's configuration of UDT flow ``i`` run by ccarena's UDT (the sink runs UDT's
    receiver when the sender offers flavor ``udt``; its settings are UDT4's defaults)."""
    cfg = _config(spec, i, t0_ns, workdir, "stream-recv")
    cfg.update(bind=bind)
    return cfg


def udt_sender_config(spec: RunSpec, i: int, t0_ns: int, workdir: Path, bind: str,
                      peer: str) -> dict[str, Any]:
    """The stream sender's configuration of UDT flow ``i`` run by ccarena's UDT (flavor ``udt``:
    the engine's driver runs the UDT transport, its ``params`` the ``udt`` controller's)."""
    flow = spec.flows[i]
    cfg = _config(spec, i, t0_ns, workdir, "stream-send")
    cfg.update(bind=bind, peer=peer, flavor="udt", params=dict(flow.params),
               mss_bytes=udt_mss_on_the_wire(flow), bytes=flow.bytes)
    return cfg


def start_flows(spec: RunSpec, plan: NetworkPlan, workdir: Path, t0_ns: int,
                endpoints: list[Endpoint], ready_by_ns: int, udt_impl: str = "ccarena",
                quic_impl: str = "ccarena", tcp_impl: str = "ccarena") -> None:
    """Start every flow's receiver (waiting for ``ready``), then every sender: TCP flows as
    :mod:`.endpoint` processes (on the kernel's generator, Linux's TCP, with ``tcp_impl =
    "linux"``), QUIC flows too (on quinn with ``quic_impl`` ``"quinn"`` or ``"quinn-native"``),
    UDP CBR flows on the kernel's generator. Each started process is appended to ``endpoints`` at
    once (the caller stops them all, even when this raises).

    Raises:
        UserError: a receiver failed to start (e.g. its port is in use): one line naming the flow.
    """
    on_quinn = quinn_flows.quinn_flows(spec, quic_impl)
    if on_quinn:
        _start_quinn(spec, plan, workdir, t0_ns, endpoints, ready_by_ns, on_quinn, quic_impl)
    linux = linux_tcp_flows(spec, tcp_impl)
    ours = [i for i, flow in enumerate(spec.flows) if i not in on_quinn and i not in linux and
            (flow.kind == "tcp" or (flow.kind == "udt" and udt_impl == "ccarena"))]
    for i in ours:
        flow = spec.flows[i]
        ns = plan.ns(int(flow.dst))
        make = receiver_config if flow.kind == "tcp" else udt_receiver_config
        cfg = make(spec, i, t0_ns, workdir, plan.host_addresses[int(flow.dst)][0])
        stderr = workdir / f"flow{i}-stream-recv.stderr"
        ep = Endpoint(i, "stream-recv", ns, Path(cfg["out"]), _start(ns, cfg, stderr), stderr)
        endpoints.append(ep)
        kernel_flows._wait_ready(ep, flow.name, ready_by_ns)
    for i in ours:
        flow = spec.flows[i]
        ns = plan.ns(int(flow.src))
        make = sender_config if flow.kind == "tcp" else udt_sender_config
        cfg = make(spec, i, t0_ns, workdir, plan.host_addresses[int(flow.src)][0],
                   plan.host_addresses[int(flow.dst)][0])
        stderr = workdir / f"flow{i}-stream-send.stderr"
        endpoints.append(Endpoint(i, "stream-send", ns, Path(cfg["out"]), _start(ns, cfg, stderr), stderr))
    udt = [i for i, flow in enumerate(spec.flows) if flow.kind == "udt" and udt_impl == "libudt"]
    if udt:
        _start_udt(spec, plan, workdir, t0_ns, endpoints, ready_by_ns, udt)
    on_kernel = [i for i, flow in enumerate(spec.flows) if flow.kind == "udp_cbr" or i in linux]
    if on_kernel:
        kernel_flows.start_flows(spec, plan, workdir, t0_ns, endpoints, ready_by_ns, flows=on_kernel)


def linux_tcp_flows(spec: RunSpec, tcp_impl: str) -> list[int]:
    """Indices of the TCP flows (not QUIC) Linux runs: all of them with ``tcp_impl = "linux"``."""
    if tcp_impl != "linux":
        return []
    return [i for i, f in enumerate(spec.flows) if f.kind == "tcp" and getattr(f, "quic", None) is None]


def _start_quinn(spec: RunSpec, plan: NetworkPlan, workdir: Path, t0_ns: int,
                 endpoints: list[Endpoint], ready_by_ns: int, flows: list[int], quic_impl: str) -> None:
    """Start QUIC flows ``flows`` on quinn (:mod:`.quinn_flows`): the run's certificate, each
    sink (waiting for ``ready``), then each sender, appended to ``endpoints`` at once."""
    import ccarena._engine as engine

    cert = quinn_flows.write_certificate(engine, workdir)
    for i in flows:
        flow = spec.flows[i]
        ns = plan.ns(int(flow.dst))
        cfg = quinn_flows.receiver_config(_config(spec, i, t0_ns, workdir, "quinn-recv"),
                                          plan.host_addresses[int(flow.dst)][0], cert, int(flow.start_ns))
        stderr = workdir / f"flow{i}-quinn-recv.stderr"
        ep = Endpoint(i, "quinn-recv", ns, Path(cfg["out"]), _start(ns, cfg, stderr), stderr)
        endpoints.append(ep)
        kernel_flows._wait_ready(ep, flow.name, ready_by_ns)
    for i in flows:
        flow = spec.flows[i]
        ns = plan.ns(int(flow.src))
        cfg = quinn_flows.sender_config(_config(spec, i, t0_ns, workdir, "quinn-send"), flow,
                                        plan.host_addresses[int(flow.src)][0],
                                        plan.host_addresses[int(flow.dst)][0], cert, quic_impl,
                                        quic_mss_on_the_wire(flow))
        stderr = workdir / f"flow{i}-quinn-send.stderr"
        endpoints.append(Endpoint(i, "quinn-send", ns, Path(cfg["out"]), _start(ns, cfg, stderr), stderr))


def _start_udt(spec: RunSpec, plan: NetworkPlan, workdir: Path, t0_ns: int,
               endpoints: list[Endpoint], ready_by_ns: int, flows: list[int]) -> None:
    """Start UDT flows ``flows`` as libudt peers (:mod:`.libudt`): each receiver (waiting for
    ``ready``), then each sender, appended to ``endpoints`` at once."""
    program = libudt.peer_program()
    common = {"t0_ns": t0_ns, "interval_ns": int(spec.sample_interval_ns),
              "duration_ns": int(spec.duration_ns)}
    for i in flows:
        flow = spec.flows[i]
        ns, out = plan.ns(int(flow.dst)), workdir / f"flow{i}-udt-recv.json"
        stderr = workdir / f"flow{i}-udt-recv.stderr"
        command = libudt.recv_command(program, bind=plan.host_addresses[int(flow.dst)][0],
                                      port=port_for(i), out=out, flow=flow, **common)
        ep = Endpoint(i, "udt-recv", ns, out, kernel_flows.start_in_namespace(ns, command, stderr), stderr)
        endpoints.append(ep)
        kernel_flows._wait_ready(ep, flow.name, ready_by_ns)
    for i in flows:
        flow = spec.flows[i]
        ns, out = plan.ns(int(flow.src)), workdir / f"flow{i}-udt-send.json"
        stderr = workdir / f"flow{i}-udt-send.stderr"
        command = libudt.send_command(program, bind=plan.host_addresses[int(flow.src)][0],
                                      peer=plan.host_addresses[int(flow.dst)][0], port=port_for(i),
                                      out=out, flow=flow, **common)
        endpoints.append(Endpoint(i, "udt-send", ns, out, kernel_flows.start_in_namespace(ns, command, stderr), stderr))


def flow_rows(spec: RunSpec, results: dict[tuple[int, str], dict[str, Any]], tcp_impl: str = "ccarena"
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    # UDT rows (ccarena's or libudt's: both ends write the same keys) come from :func:`_udt_rows`.
    """(flows rows, samples rows) as the kernel backend builds them, with the transport's own
    counts where Linux has none: ``fast_recoveries``, ``spurious_rtos`` (the sender's, after
    draining), ``duplicate_bytes_received``, ``ce_packets`` and ``ce_bytes`` (the sink's); a QUIC
    flow's row has ``kind`` ``"quic"`` and ``recovery`` ``"rfc9002"``. A flow quinn ran (its
    sender's record says ``impl``) is read through :func:`.quinn_flows.as_generator_results`; its
    ``fast_recoveries`` are quinn's loss-started congestion events. Linux's TCP flows
    (``tcp_impl = "linux"``) keep the kernel backend's rows."""
    results = dict(results)
    on_quinn = {i for i, _ in results if results[(i, "send")].get("impl") in quinn_flows.QUINN_IMPLEMENTATIONS}
    for i in on_quinn:
        results[(i, "send")], results[(i, "recv")] = quinn_flows.as_generator_results(
            results[(i, "send")], results[(i, "recv")])
    keep = [i for i, flow in enumerate(spec.flows) if flow.kind != "udt"]
    sub = spec.model_copy(update={"flows": [spec.flows[i] for i in keep]})
    flows, samples = kernel_tables.flow_rows(
        sub, {(j, side): results[(i, side)] for j, i in enumerate(keep) for side in ("send", "recv")})
    for row in flows + samples:
        row["flow"] = keep[int(row["flow"])]
    udt_flows, udt_samples = _udt_rows(spec, results)
    flows = sorted(flows + udt_flows, key=lambda r: int(r["flow"]))
    samples = sorted(samples + udt_samples, key=lambda r: (int(r["flow"]), r["time_s"]))
    linux = set(linux_tcp_flows(spec, tcp_impl))
    for row in flows:
        i = int(row["flow"])
        if spec.flows[i].kind != "tcp" or i in linux:  # Linux's rows are the kernel backend's
            continue
        drained = results[(i, "send")].get("drained") or {}
        if getattr(spec.flows[i], "quic", None) is not None:
            # As the simulator's QUIC row (crates/sim/src/results.rs): probe timeouts in rto_count.
            row["kind"], row["recovery"] = "quic", "rfc9002"
        if i in on_quinn:  # quinn keeps its own counts; the sink sees no CE (Not-ECT)
            row["fast_recoveries"] = drained.get("fast_recoveries")
            continue
        row["fast_recoveries"] = drained.get("fast_recoveries")
        row["spurious_rtos"] = drained.get("spurious_rtos")
        row["duplicate_bytes_received"] = results[(i, "recv")].get("duplicate_bytes")
        ecn = results[(i, "recv")].get("ecn") or {}
        row["ce_packets"] = ecn.get("ce_packets")
        row["ce_bytes"] = ecn.get("ce_bytes")
    return flows, samples


def _udt_rows(spec: RunSpec, results: dict[tuple[int, str], dict[str, Any]]
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(flows rows, samples rows) of the UDT (libudt) flows: the samples as the kernel's TCP
    samples (UDT's congestion window, smoothed RTT, sending rate and retransmissions at the
    sender; bytes delivered at the receiver), the rows by :func:`.libudt.flow_row`."""
    interval_s = spec.sample_interval_ns / 1e9
    duration_s = spec.duration_ns / 1e9
    flows, samples = [], []
    for i, flow in enumerate(spec.flows):
        if flow.kind != "udt":
            continue
        send, recv = results[(i, "send")], results[(i, "recv")]
        start_s = flow.start_ns / 1e9
        stop_s = flow.stop_ns / 1e9 if flow.stop_ns is not None else duration_s
        sent_by_k = {round(s["time_s"] / interval_s): s for s in send["samples"]}
        recv_by_k = {round(s["time_s"] / interval_s): s for s in recv["samples"]}
        prev_sent = prev_delivered = 0.0
        srtts = []
        for k in sorted(set(sent_by_k) | set(recv_by_k)):
            s, r = sent_by_k.get(k, {}), recv_by_k.get(k, {})
            delivered = float(r.get("delivered_bytes", prev_delivered))
            sent = float(s.get("sent_bytes", prev_sent))
            row = {"time_s": k * interval_s, "flow": i, "delivered_bytes": delivered,
                   "sent_bytes": sent, "goodput_bps": (delivered - prev_delivered) * 8 / interval_s,
                   "throughput_bps": (sent - prev_sent) * 8 / interval_s,
                   "ssthresh_bytes": None, "rttvar_s": None, "rto_s": None, "ca_state": None}
            for c in ("cwnd_bytes", "srtt_s", "inflight_bytes", "pacing_rate_bps", "retransmits"):
                row[c] = s.get(c)
            if s.get("srtt_s") and start_s <= k * interval_s <= stop_s + 1e-9:
                srtts.append(s["srtt_s"])
            samples.append(row)
            prev_sent, prev_delivered = sent, delivered
        flows.append(libudt.flow_row(i, flow, send, recv, start_s, stop_s, srtts))
    return flows, samples
