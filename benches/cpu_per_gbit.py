"""Benchmark: loopback throughput and sender CPU per Gbit for kernel TCP (iperf3, CUBIC) and
ccarena's transport on UDP (``ccarena send``, CUBIC) — the issue 14 / seed 001 "CPU per megabit"
comparison on one machine, unshaped::

    python3 benches/cpu_per_gbit.py                 # 3 runs each, iperf3 for 5 s, a 400 MB file
    python3 benches/cpu_per_gbit.py --repeats 5 --seconds 10 --file-mb 1000

Both senders are measured the same way: the sending process's (iperf3) or thread's (``ccarena
send``, ``getrusage(RUSAGE_THREAD)``) user + system CPU over the transfer, and the CPU clock from
cpufreq or /proc/cpuinfo. On loopback the kernel runs the receive path (softirq) in the sending
context for both, so both figures include part of the receiver's kernel work; the receiver's own
process is not counted. iperf3's number is its ``cpu_utilization_percent.host_total`` (getrusage
of the client process) times the test's length. Printed per tool: goodput (Gbit/s), sender CPU
(% of one core), CPU seconds per Gbit delivered, and MHz/Mbps (seed 001's CPU cycles per bit).
Not a test: numbers depend on the machine and on what else it runs.
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


def ccarena_run(path: Path, incoming: Path) -> dict:
    """One ``ccarena send`` (CUBIC) of ``path`` to a ``ccarena recv`` on loopback: its record."""
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
                              "--flavor", "cubic", "--json"], capture_output=True, text=True, env=env,
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
    ap.add_argument("--seconds", type=float, default=5.0, help="iperf3's test length")
    ap.add_argument("--file-mb", type=int, default=400, help="ccarena send's file size, MB")
    args = ap.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory(prefix="ccarena-cpu-") as tmp:
        src, incoming = Path(tmp) / "payload.bin", Path(tmp) / "in"
        incoming.mkdir()
        with open(src, "wb") as f:
            for _ in range(args.file_mb):
                f.write(os.urandom(1_000_000))
        results = {"kernel TCP (iperf3, cubic)": [], "ccarena send (UDP, cubic)": []}
        for i in range(args.repeats):
            results["kernel TCP (iperf3, cubic)"].append(iperf3_run(args.seconds))
            results["ccarena send (UDP, cubic)"].append(ccarena_run(src, incoming))
            console.print(f"run {i + 1}/{args.repeats} done")
    table = Table(title="Loopback, unshaped: median (min–max) over runs")
    for h in ("sender", "goodput Gbit/s", "sender CPU % of a core", "CPU s per Gbit", "MHz/Mbps", "MHz"):
        table.add_column(h)
    for name, runs in results.items():
        table.add_row(*row(name, runs))
    console.print(table)


if __name__ == "__main__":
    main()
