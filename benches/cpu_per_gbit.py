"""Benchmark: loopback throughput and sender CPU per Gbit for kernel TCP (iperf3, CUBIC),
ccarena's transport on UDP (``ccarena send``, CUBIC and UDT), the reference UDT4 library
(libudt 4.11 through ``tools/udt-peer``) and a production QUIC stack, quinn (``ccarena-quinn``:
ccarena's CUBIC inside quinn, and quinn's own CUBIC) — the issue 14 / seed 001 "CPU per megabit"
comparison on one machine, unshaped::

    python3 benches/cpu_per_gbit.py                 # 3 runs each, 5 s tests, a 400 MB file
    python3 benches/cpu_per_gbit.py --repeats 5 --seconds 10 --file-mb 1000
    python3 benches/cpu_per_gbit.py --only libudt,udt

Every sender is measured the same way: the sending process's (iperf3, the libudt peer) or
thread's (``ccarena send``, ``getrusage(RUSAGE_THREAD)``) user + system CPU over the transfer,
and the CPU clock from cpufreq or /proc/cpuinfo. On loopback the kernel runs the receive path
(softirq) in the sending context, so every figure includes part of the receiver's kernel work;
the receiver's own process is not counted. iperf3's number is its
``cpu_utilization_percent.host_total`` (getrusage of the client process) times the test's length;
the libudt peer's is its process's getrusage (UDT4's sending and receiving threads included) over
a test as long as iperf3's. quinn's sender and sink run in two threads of this process
(``_engine.quinn_send``/``quinn_sink``, the GIL released) and move ``--file-mb`` of zeros; the
sender's figure is its thread's getrusage, like ``ccarena send``'s (TLS 1.3 encryption included). Printed per sender: goodput (Gbit/s), sender CPU (% of one core), CPU
seconds per Gbit delivered, and MHz/Mbps (seed 001's CPU cycles per bit). Needs g++ and
libudt-dev for the libudt row (``scripts/test.sh`` installs both). Not a test: numbers depend on
the machine and on what else it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from ccarena.backends.kernel.trafficgen import cpu_mhz_now  # noqa: E402


SENDERS = {
    "tcp": "kernel TCP (iperf3, cubic)",
    "cubic": "ccarena send (UDP, cubic)",
    "udt": "ccarena send (UDP, UDT)",
    "libudt": "libudt (UDT4 4.11)",
    "quinn": "quinn (QUIC, ccarena cubic in quinn)",
    "quinn-native": "quinn (QUIC, quinn's cubic)",
}
"""``--only`` names → the table's row names."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def iperf3_run(seconds: float) -> dict:
    """One iperf3 CUBIC test on loopback: goodput and the client's (sender's) CPU."""
    port = free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        mhz0 = cpu_mhz_now()
        out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds),
                              "-C", "cubic", "-J"], capture_output=True, text=True, timeout=seconds + 30)
        mhz1 = cpu_mhz_now()
    finally:
        server.wait(10)
    end = json.loads(out.stdout)["end"]
    wall_s = float(end["sum_received"]["seconds"])
    goodput_bps = float(end["sum_received"]["bits_per_second"])
    cpu_s = float(end["cpu_utilization_percent"]["host_total"]) / 100 * wall_s
    return {"goodput_bps": goodput_bps, "cpu_s": cpu_s, "wall_s": wall_s,
            "mhz": (mhz0 + mhz1) / 2 if mhz0 and mhz1 else None}


def ccarena_run(path: Path, incoming: Path, flavor: str = "cubic") -> dict:
    """One ``ccarena send --flavor FLAVOR`` of ``path`` to a ``ccarena recv`` on loopback: its
    record's goodput, sender CPU and clock."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    for f in incoming.iterdir():
        f.unlink()
    recv = subprocess.Popen([sys.executable, "-m", "ccarena", "recv", "--bind", "127.0.0.1:0",
                             "--dir", str(incoming), "--once", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = recv.stderr.readline()
        addr = re.search(r"listening on (\S+)", line)
        if not addr:
            raise SystemExit(f"ccarena recv did not start: {line}")
        out = subprocess.run([sys.executable, "-m", "ccarena", "send", str(path), addr.group(1),
                              "--flavor", flavor, "--json"], capture_output=True, text=True, env=env,
                             timeout=600)
        if out.returncode != 0:
            raise SystemExit(f"ccarena send failed: {out.stderr.strip()}")
        recv.communicate(timeout=60)
    finally:
        if recv.poll() is None:
            recv.kill()
    r = json.loads(out.stdout)
    return {"goodput_bps": r["goodput_bps"], "cpu_s": r["sender_cpu_s"], "wall_s": r["duration_s"],
            "mhz": r["cpu_mhz"]}


def libudt_run(seconds: float) -> dict:
    """One libudt (UDT4) test on loopback: the peer program sends for ``seconds`` as fast as UDT4
    lets it; goodput is what the receiving peer got over that time."""
    from ccarena.backends.udp.libudt import peer_program

    program = peer_program()
    port = free_port()
    interval_ns, start_ns = 100_000_000, 500_000_000
    duration_ns = start_ns + int(seconds * 1e9)
    with tempfile.TemporaryDirectory(prefix="ccarena-libudt-") as tmp:
        rx_out, tx_out = Path(tmp) / "rx.json", Path(tmp) / "tx.json"
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + 300_000_000
        common = ["--port", str(port), "--t0-ns", str(t0), "--interval-ns", str(interval_ns),
                  "--duration-ns", str(duration_ns)]
        recv = subprocess.Popen([str(program), "recv", "--bind", "127.0.0.1", *common, "--out",
                                 str(rx_out)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True)
        try:
            if recv.stdout.readline().strip() != "ready":
                raise SystemExit("the libudt receiver did not start")
            mhz0 = cpu_mhz_now()
            send = subprocess.run([str(program), "send", "--bind", "127.0.0.1", "--peer",
                                   "127.0.0.1", *common, "--start-ns", str(start_ns), "--out",
                                   str(tx_out)], capture_output=True, text=True,
                                  timeout=seconds + 30)
            mhz1 = cpu_mhz_now()
            recv.wait(timeout=seconds + 30)
        finally:
            if recv.poll() is None:
                recv.kill()
        if send.returncode != 0:
            raise SystemExit(f"the libudt sender failed: {send.stderr.strip()}")
        tx, rx = json.loads(tx_out.read_text()), json.loads(rx_out.read_text())
    # The receiver's samples count delivered bytes at t0 + k·interval: goodput over the sending time.
    at = {round(s["time_s"] * 1e9): s["delivered_bytes"] for s in rx["samples"]}
    wall_s = tx["cpu"]["wall_s"]
    delivered = at[duration_ns] - at.get(start_ns, 0)
    return {"goodput_bps": delivered * 8 / wall_s, "cpu_s": tx["cpu"]["cpu_s"], "wall_s": wall_s,
            "mhz": (mhz0 + mhz1) / 2 if mhz0 and mhz1 else None}


def quinn_run(size_bytes: int, impl: str) -> dict:
    """One quinn transfer of ``size_bytes`` on loopback, CUBIC (ccarena's inside quinn with
    ``impl="quinn"``, quinn's own with ``"quinn-native"``): the sink in a thread, the sender in
    this one; goodput and sender CPU from the sender's record."""
    import queue
    import threading

    from ccarena import _engine

    cert = _engine.quinn_certificate()
    bound: queue.Queue[str] = queue.Queue()
    out: dict = {}

    def serve() -> None:
        try:
            out["sink"] = _engine.quinn_sink({"bind": "127.0.0.1:0", "cert_der": cert["cert_der"],
                                              "key_der": cert["key_der"], "on_bound": bound.put})
        except Exception as e:  # reported below
            out["error"] = e
            bound.put("")

    sink = threading.Thread(target=serve)
    sink.start()
    addr = bound.get(timeout=10)
    if not addr:
        raise SystemExit(f"the quinn sink did not start: {out.get('error')}")
    mhz0 = cpu_mhz_now()
    r = _engine.quinn_send({"peer": addr, "cert_der": cert["cert_der"], "flavor": "cubic",
                            "impl": impl, "bytes": size_bytes})
    mhz1 = cpu_mhz_now()
    sink.join(timeout=60)
    if out.get("sink", {}).get("delivered_bytes") != size_bytes:
        raise SystemExit(f"quinn ({impl}) delivered {out.get('sink', {}).get('delivered_bytes')} "
                         f"of {size_bytes} bytes: {out.get('error')}")
    return {"goodput_bps": r["goodput_bps"], "cpu_s": r["sender_cpu_s"],
            "wall_s": r["completion_time_s"], "mhz": (mhz0 + mhz1) / 2 if mhz0 and mhz1 else None}


def row(name: str, runs: list[dict]) -> list[str]:
    def med(key):
        return statistics.median(r[key] for r in runs)

    def span(f):
        values = sorted(f(r) for r in runs)
        return f"{values[len(values) // 2]:.3g} ({values[0]:.3g}–{values[-1]:.3g})"

    gbit = lambda r: r["goodput_bps"] * r["wall_s"] / 1e9  # noqa: E731
    return [name, span(lambda r: r["goodput_bps"] / 1e9),
            span(lambda r: r["cpu_s"] / r["wall_s"] * 100),
            span(lambda r: r["cpu_s"] / gbit(r)),
            span(lambda r: r["cpu_s"] / r["wall_s"] * r["mhz"] / (r["goodput_bps"] / 1e6)),
            f"{med('mhz'):.0f}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0, help="iperf3's and libudt's test length")
    ap.add_argument("--file-mb", type=int, default=400,
                    help="ccarena send's file size and quinn's stream size, MB")
    ap.add_argument("--only", default=",".join(SENDERS),
                    help=f"comma-separated senders among {', '.join(SENDERS)}")
    args = ap.parse_args()
    only = [name for name in args.only.split(",") if name]
    unknown = sorted(set(only) - set(SENDERS))
    if unknown:
        ap.error(f"--only: unknown sender {unknown[0]!r}; choose among {', '.join(SENDERS)}")
    console = Console()
    with tempfile.TemporaryDirectory(prefix="ccarena-cpu-") as tmp:
        src, incoming = Path(tmp) / "payload.bin", Path(tmp) / "in"
        incoming.mkdir()
        with open(src, "wb") as f:
            for _ in range(args.file_mb):
                f.write(os.urandom(1_000_000))
        runners = {
            "tcp": lambda: iperf3_run(args.seconds),
            "cubic": lambda: ccarena_run(src, incoming, "cubic"),
            "udt": lambda: ccarena_run(src, incoming, "udt"),
            "libudt": lambda: libudt_run(args.seconds),
            "quinn": lambda: quinn_run(args.file_mb * 1_000_000, "quinn"),
            "quinn-native": lambda: quinn_run(args.file_mb * 1_000_000, "quinn-native"),
        }
        results: dict[str, list[dict]] = {SENDERS[name]: [] for name in only}
        for i in range(args.repeats):
            for name in only:
                results[SENDERS[name]].append(runners[name]())
            console.print(f"run {i + 1}/{args.repeats} done")
    table = Table(title="Loopback, unshaped: median (min–max) over runs")
    for h in ("sender", "goodput Gbit/s", "sender CPU % of a core", "CPU s per Gbit", "MHz/Mbps", "MHz"):
        table.add_column(h)
    for name, runs in results.items():
        table.add_row(*row(name, runs))
    console.print(table)


if __name__ == "__main__":
    main()
