"""UDT flows on the udp backend, run by the reference implementation: UDT4 (Debian's
``libudt-dev``, UDT 4.11) through ``tools/udt-peer/udt_peer.cpp``, one process per end inside the
flow's namespaces, over the same emulated links as every other flow.

The peer is compiled once per source version (``g++ -O2 … -ludt -lpthread``) into
``$XDG_CACHE_HOME/ccarena/udt-peer/<hash>/`` (``~/.cache`` by default); preflight refuses UDT flows
in one line when the compiler or the library is missing. Its ends write the kernel generator's JSON,
so :func:`flow_row` builds the simulator's columns from them.

What libudt fixes, so the scenario may not change it (refused rather than ignored): the SYN
interval (10 ms), the initial RTT and EXP floor, the rate control's parameters (UDT4's native
DAIMD, ``CUDTCC``), and the header sizes on the wire (UDT's own 16 bytes). ``mss`` (payload per
packet, at most 1456 on a 1500-byte MTU) and ``flow_window`` (UDT_FC) are passed on.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from ccarena.backends.kernel.trafficgen import cpu_mhz_now
from ccarena.errors import UserError

SOURCE = Path(__file__).resolve().parents[4] / "tools" / "udt-peer" / "udt_peer.cpp"
HEADER = Path("/usr/include/udt/udt.h")
MAX_PAYLOAD_BYTES = 1456
"""1500-byte MTU − 20 IP − 8 UDP − 16 UDT header."""
FIXED_BY_LIBUDT = ("header_bytes", "ack_bytes", "syn_interval_ns", "initial_rtt_ns", "min_exp_ns")
"""UdtFlowSpec fields UDT4 fixes (its constants, not options); another value is refused."""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ccarena" / "udt-peer"


def missing() -> str | None:
    """Why the peer cannot be built here (one phrase), or None."""
    if not SOURCE.is_file():
        return f"its source {SOURCE} is not in this installation"
    if shutil.which("g++") is None:
        return "g++ is not installed (apt-get install g++)"
    if not HEADER.is_file():
        return "libudt-dev is not installed (apt-get install libudt-dev)"
    return None


def peer_program() -> Path:
    """The compiled peer, built on first use and cached by the source's hash.

    Raises:
        UserError: the compiler or library is missing, or the build failed (its last line).
    """
    reason = missing()
    if reason:
        raise UserError(f"UDT flows on the udp backend run libudt, but {reason}; use --backend sim")
    source = SOURCE.read_bytes()
    out_dir = _cache_dir() / hashlib.sha256(source).hexdigest()[:16]
    program = out_dir / "udt_peer"
    if program.is_file():
        return program
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f"udt_peer.{os.getpid()}.tmp"
    build = subprocess.run(["g++", "-O2", "-o", str(tmp), str(SOURCE), "-ludt", "-lpthread"],
                           capture_output=True, text=True, check=False)
    if build.returncode != 0:
        last = (build.stderr.strip().splitlines() or ["g++ failed"])[-1]
        raise UserError(f"building the libudt peer failed: {last}")
    os.replace(tmp, program)
    return program


def check_udt_flow(where: str, flow: Any) -> None:
    """Check one UDT flow for libudt (fields UDT4 fixes, the payload size, the build).

    Raises:
        UserError: one line naming the field and the fix.
    """
    from ccarena.flavors import engine_flavors
    from ccarena.runspec import UDT_DEFAULTS

    defaults = {p["name"]: float(p["default"]) for p in engine_flavors()["udt"]["params"]}
    for name, value in flow.params.items():
        if name in defaults and float(value) != defaults[name]:
            raise UserError(f"{where}.params.{name}: libudt runs UDT4's own rate control, which "
                            "takes no parameters; remove it or use --backend sim")
    for key in FIXED_BY_LIBUDT:
        if getattr(flow, key) != UDT_DEFAULTS.get(key):
            raise UserError(f"{where}.{key}: libudt (UDT4) fixes it; remove it or use --backend sim")
    if not 64 <= int(flow.mss_bytes) <= MAX_PAYLOAD_BYTES:
        raise UserError(f"{where}.mss: libudt's packets carry 64 to {MAX_PAYLOAD_BYTES} payload "
                        "bytes on a 1500-byte MTU; change mss or use --backend sim")
    peer_program()


def _args(cfg: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in cfg.items():
        if value is not None:
            out += [f"--{key}", str(value)]
    return out


def recv_command(program: Path, *, bind: str, port: int, t0_ns: int, interval_ns: int,
                 duration_ns: int, out: Path, flow: Any) -> list[str]:
    """The receiving end's command line (run in the destination's namespace)."""
    return [str(program), "recv", *_args({
        "bind": bind, "port": port, "t0-ns": t0_ns, "interval-ns": interval_ns,
        "duration-ns": duration_ns, "out": out, "parent-pid": os.getpid(),
        "mss-bytes": int(flow.mss_bytes), "flow-window": int(flow.flow_window_packets)})]


def send_command(program: Path, *, bind: str, peer: str, port: int, t0_ns: int, interval_ns: int,
                 duration_ns: int, out: Path, flow: Any) -> list[str]:
    """The sending end's command line (run in the source's namespace)."""
    return [str(program), "send", *_args({
        "bind": bind, "peer": peer, "port": port, "t0-ns": t0_ns, "interval-ns": interval_ns,
        "duration-ns": duration_ns, "start-ns": int(flow.start_ns),
        "stop-ns": None if flow.stop_ns is None else int(flow.stop_ns), "bytes": flow.bytes,
        "out": out, "parent-pid": os.getpid(), "mss-bytes": int(flow.mss_bytes),
        "flow-window": int(flow.flow_window_packets)})]


def flow_row(i: int, flow: Any, send: dict[str, Any], recv: dict[str, Any], start_s: float,
             stop_s: float, srtts: list[float]) -> dict[str, Any]:
    """The flows-table row of a libudt flow. RTT columns are UDT's smoothed RTT (one sample per
    interval; ``rtt_min_s`` their minimum): UDT4 exposes no per-ACK samples."""
    at_end, drained = send.get("at_end") or {}, send.get("drained") or {}
    sent_pk, recv_pk = drained.get("data_segs_out"), (recv.get("drained") or {}).get("data_segs_in")
    completion = send.get("completion_time_s")
    rtt = np.array([r for r in srtts if r], dtype=float)
    cpu = send.get("cpu") or {}
    return {
        "flow": i, "name": flow.name, "kind": "udt", "flavor": "udt", "recovery": "nak",
        "start_s": start_s, "end_s": start_s + completion if completion is not None else stop_s,
        "bytes_offered": send.get("offered_bytes"), "bytes_sent": at_end.get("bytes_sent"),
        "bytes_retransmitted": at_end.get("bytes_retrans"),
        "bytes_delivered": recv.get("at_end_bytes"), "packets_sent": sent_pk,
        "packets_retransmitted": drained.get("total_retrans"), "packets_received": recv_pk,
        "packets_lost": None if sent_pk is None or recv_pk is None else max(0, sent_pk - recv_pk),
        "rto_count": None, "fast_recoveries": None, "spurious_rtos": None,
        "duplicate_bytes_received": None, "completion_time_s": completion,
        "rtt_min_s": float(rtt.min()) if rtt.size else None,
        "rtt_mean_s": float(rtt.mean()) if rtt.size else None,
        "rtt_p50_s": float(np.percentile(rtt, 50)) if rtt.size else None,
        "rtt_p95_s": float(np.percentile(rtt, 95)) if rtt.size else None,
        "rtt_p99_s": float(np.percentile(rtt, 99)) if rtt.size else None,
        "rtt_samples": int(rtt.size),
        # UDT's packets are Not-ECT: no queue marks them (as the simulator's UDT rows).
        "ce_packets": 0, "ce_bytes": 0,
        "sender_cpu_s": cpu.get("cpu_s"), "sender_wall_s": cpu.get("wall_s"),
        # The UDT senders (the peer program, ccarena's stream) report no clock: read it as the run
        # ends, on the same machine (the kernel backend averages its start and end readings).
        "cpu_mhz": cpu.get("mhz") or (cpu_mhz_now() if cpu.get("cpu_s") is not None else None),
    }
