"""QUIC flows run by quinn on the udp backend (``[kernel] quic_impl = "quinn"`` or
``"quinn-native"``): a production QUIC stack (RFC 9000 with TLS 1.3, RFC 9002 recovery) instead of
the simulator's sans-IO QUIC.

``quinn`` runs the flow's flavor as ccarena's controller inside quinn (crates/quinn,
``CcarenaController``: every catalogue flavor); ``quinn-native`` runs quinn's own NewReno, CUBIC or
BBR for the flavors ``reno``, ``cubic`` and ``bbr``, as a reference for ccarena's. A run
generates one self-signed certificate (:func:`write_certificate`); the sink serves it and the
sender trusts only it. Both ends are :mod:`.endpoint` processes (roles ``quinn-recv`` and
``quinn-send``, calling ``ccarena._engine.quinn_sink`` and ``quinn_send``) and their records are
turned into the kernel backend's generator format (:func:`as_generator_results`), so the flows
and samples tables are every backend's.

What quinn fixes, so a scenario may not set it (refused in one line, :func:`check_quinn_flow`):
its packet size (it starts at 1200 bytes and probes up to 1452 with PLPMTUD, RFC 8899), its ACK
policy (RFC 9000 §13.2: ``max_ack_delay`` 25 ms, every 2nd ack-eliciting packet), its pacing
(always on), its flow-control windows, and ECN (std sockets here send Not-ECT). quinn keeps its
probe-timeout count private: a quinn flow's ``rto_count`` is null.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ccarena.errors import UserError
from ccarena.runspec import QUIC_DEFAULTS, TCP_DEFAULTS, RunSpec

QUINN_IMPLEMENTATIONS = ("quinn", "quinn-native")
"""``quic_impl`` values that run a QUIC flow on quinn."""
QUINN_NATIVE_FLAVORS = ("reno", "cubic", "bbr")
"""The catalogue flavors quinn has its own controller for (its NewReno, CUBIC and BBR)."""
INITIAL_MTU_BYTES = 1452
"""quinn's starting UDP payload size on the udp backend: the largest its PLPMTUD probes to, which
a 1500-byte path carries (1500 − 20 IP − 8 UDP − 20 spare), so a run does not spend its first
seconds at 1200-byte packets."""
CERT_FILE, KEY_FILE = "quinn-cert.der", "quinn-key.der"


def check_quinn_flow(where: str, flow: Any, quic_impl: str) -> None:
    """Check one QUIC flow (``transport = "quic"``) for quinn on the udp backend.

    Raises:
        UserError: one line naming the field and the fix: a flavor quinn-native lacks, a
            parameter other than the flavor's default given to quinn's own controller, or a setting quinn fixes (QUIC settings other than the
            defaults, ``mss``, ``rwnd``, ``sndbuf``, ``ecn``).
    """
    from ccarena.flavors import engine_flavor, tcp_flavors

    if quic_impl == "quinn-native":
        if flow.flavor not in QUINN_NATIVE_FLAVORS:
            raise UserError(f"{where}.flavor: quinn has no '{flow.flavor}' controller of its own "
                            f"(quinn-native runs {', '.join(QUINN_NATIVE_FLAVORS)}); set "
                            "[kernel] quic_impl = \"quinn\" to run ccarena's inside quinn")
        defaults = {p["name"]: p["default"] for p in engine_flavor(flow.flavor)["params"]}
        if any(defaults.get(k) != v for k, v in flow.params.items()):
            raise UserError(f"{where}.params: quinn's own {flow.flavor} takes no parameters here; "
                            "remove them or set [kernel] quic_impl = \"quinn\"")
    elif flow.flavor not in tcp_flavors():
        raise UserError(f"{where}.flavor: '{flow.flavor}' is not a congestion controller of ccarena's "
                        "catalogue; run `ccarena flavors`")
    fixed = {"mss_bytes": "mss", "header_bytes": "header_bytes", "ack_bytes": "ack_bytes",
             "rwnd_bytes": "rwnd", "sndbuf_bytes": "sndbuf"}
    for key, field in fixed.items():
        if getattr(flow, key) != TCP_DEFAULTS.get(key):
            raise UserError(f"{where}.{field}: quinn sets it itself on the udp backend; remove "
                            f"{field} or set [kernel] quic_impl = \"ccarena\"")
    if flow.ecn:
        raise UserError(f"{where}.ecn: quinn sends Not-ECT on this machine's sockets; remove ecn "
                        "or set [kernel] quic_impl = \"ccarena\"")
    quic = flow.quic.model_dump()
    for key, default in QUIC_DEFAULTS.items():
        if quic.get(key) != default:
            field = key.removesuffix("_ns").removesuffix("_bytes")
            raise UserError(f"{where}.{field}: quinn fixes its QUIC settings (RFC 9000/9002 "
                            f"defaults); remove {field} or set [kernel] quic_impl = \"ccarena\"")


def write_certificate(engine: Any, workdir: Path) -> tuple[Path, Path]:
    """Generate the run's certificate (``engine.quinn_certificate()``) into ``workdir``: (the
    certificate's DER file, the PKCS #8 key's DER file, mode 0600)."""
    cert = engine.quinn_certificate()
    cert_path, key_path = workdir / CERT_FILE, workdir / KEY_FILE
    cert_path.write_bytes(cert["cert_der"])
    key_path.touch(mode=0o600)
    key_path.write_bytes(cert["key_der"])
    return cert_path, key_path


def receiver_config(base: dict[str, Any], bind: str, cert: tuple[Path, Path], start_ns: int) -> dict[str, Any]:
    """The ``quinn-recv`` endpoint's configuration: ``base`` (the endpoint's common keys) with
    the address, the certificate files and a handshake timeout that waits for the flow's start."""
    return {**base, "role": "quinn-recv", "bind": bind, "cert_file": str(cert[0]), "key_file": str(cert[1]),
            "handshake_timeout_s": start_ns / 1e9 + 10.0}


def sender_config(base: dict[str, Any], flow: Any, bind: str, peer: str, cert: tuple[Path, Path],
                  quic_impl: str, payload_bytes: int) -> dict[str, Any]:
    """The ``quinn-send`` endpoint's configuration: ``base`` with the flavor, whose code runs it
    (``quic_impl``), the certificate, what to send (``bytes`` or until the stop time) and an
    initial window of the flow's ``initial_cwnd_packets`` packets of ``payload_bytes``."""
    return {**base, "role": "quinn-send", "bind": bind, "peer": peer, "cert_file": str(cert[0]),
            "impl": quic_impl, "flavor": flow.flavor, "params": dict(flow.params) if quic_impl == "quinn" else {}, "bytes": flow.bytes,
            "initial_window_bytes": int(flow.initial_cwnd_packets) * payload_bytes,
            "initial_mtu": INITIAL_MTU_BYTES}


def as_generator_results(send: dict[str, Any], recv: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """quinn's sender and sink records (``quinn_send``/``quinn_sink``) in the kernel backend's
    generator format (:func:`ccarena.backends.kernel.measured_tables.flow_rows` reads it): sent
    bytes are UDP payload (QUIC headers and frames included, as Linux counts TCP's), the
    retransmission count is quinn's lost packets (it resends their frames), the RTT floor its
    ``min_rtt`` in µs as TCP_INFO gives it."""
    samples = [{"time_s": s["time_s"], "sent_bytes": s["sent_bytes"], "cwnd_bytes": s["cwnd_bytes"],
                "ssthresh_bytes": s.get("ssthresh_bytes"), "srtt_s": s.get("srtt_s"),
                "pacing_rate_bps": s.get("pacing_rate_bps"), "retransmits": s.get("lost_packets")}
               for s in send["samples"]]
    rtt = send.get("rtt") or {}
    min_ms = rtt.get("min_ms")
    out_send = {
        "ok": True, "samples": samples, "completion_time_s": send.get("completion_time_s"),
        "at_end": {"offered_bytes": send.get("stream_bytes_written"), "bytes_sent": send.get("bytes_sent"),
                   "bytes_retrans": send.get("lost_bytes")},
        "drained": {"data_segs_out": send.get("packets_sent"), "total_retrans": send.get("lost_packets"),
                    "total_rto": send.get("pto_count"),
                    "min_rtt": None if min_ms is None else min_ms * 1000.0,
                    "fast_recoveries": send.get("loss_events")},
        "cpu": send.get("cpu"), "controller": send.get("controller"), "mtu_bytes": send.get("mtu_bytes"),
    }
    out_recv = {"ok": True, "samples": recv["samples"], "at_end_bytes": recv.get("delivered_bytes"),
                "drained": {"data_segs_in": recv.get("datagrams_received")}}
    return out_send, out_recv


def quinn_flows(spec: RunSpec, quic_impl: str) -> list[int]:
    """Indices of the flows quinn runs in ``spec`` (its QUIC flows, when ``quic_impl`` is one of
    :data:`QUINN_IMPLEMENTATIONS`)."""
    if quic_impl not in QUINN_IMPLEMENTATIONS:
        return []
    return [i for i, f in enumerate(spec.flows) if f.kind == "tcp" and getattr(f, "quic", None) is not None]
