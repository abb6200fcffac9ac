"""Benchmark of the kernel backend's link emulation: how late the link relay sends frames, and what
it costs, at 10, 100 and 1000 Mbit/s (needs root, iperf3)::

    python3 benches/relay.py                         # relay emulation, 10/100/1000 Mbit/s, 3 runs each
    python3 benches/relay.py --emulation tc          # htb rate + queue, the relay only delays
    python3 benches/relay.py --rates 1000 --repeats 5 --seconds 20
    python3 benches/relay.py --rates 1000 --discipline fq_codel   # the relay holds frames (dequeue path)
    python3 benches/relay.py --rates 1000 --discipline dualpi2    # DualPI2 (RFC 9332) on the relay

Each run: two namespaces joined by the relay (:class:`ccarena.backends.kernel.testbed.RelayTestbed`), a
link of the given rate with 50 ms of delay each way and a one-BDP queue, and one CUBIC iperf3
flow through it. Printed per run: goodput, the relay's CPU (both threads, % of one core), the CPU
the hypervisor stole meanwhile (steal, % of all CPU time), and the relay's lateness (send time −
due time) per direction — data (a→b) and ACKs (b→a). The lateness is the emulation's own error;
steal is why a tail can be long on a shared virtual machine whatever the relay does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ccarena.backends.kernel.shaping import Shaper
from ccarena.backends.kernel.testbed import RelayTestbed, cpu_times, link_config, steal_fraction

DELAY_NS = 50_000_000


def relay_cpu_s(pid: int) -> float:
    """User + system CPU seconds of every thread of process ``pid`` so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / ticks


DISCIPLINES = {
    "droptail": {},
    "codel": {"discipline": "codel", "codel": {"target_ns": 5_000_000, "interval_ns": 100_000_000, "ecn": False}},
    "fq_codel": {"discipline": "fq_codel", "fq_codel": {"target_ns": 5_000_000, "interval_ns": 100_000_000,
                                                        "flows": 1024, "quantum_bytes": 1514, "ecn": False}},
    "dualpi2": {"discipline": "dualpi2", "dualpi2": {"target_ns": 15_000_000, "tupdate_ns": 16_000_000,
                                                      "alpha": 0.16, "beta": 3.2, "coupling": 2,
                                                      "l4s_threshold_ns": 1_000_000, "l4s_ramp_ns": 0,
                                                      "l4s_min_qlen_packets": 1, "tshift_ns": 30_000_000}},
}
"""The relay's queue per ``--discipline`` (RFC 8289 / RFC 8290 / RFC 9332 defaults; iperf3's CUBIC
is Not-ECT, so under DualPI2 it is the Classic queue's, dropped at PI2's squared probability)."""


def one_run(bed: RelayTestbed, work: Path, rate_bps: int, seconds: int, emulation: str, port: int,
            discipline: str = "droptail") -> dict:
    """One iperf3 flow through the emulated link; the measurements of :func:`main`'s table."""
    bdp_packets = max(10, int(rate_bps * 2 * DELAY_NS / 1e9 / 8 / 1500))
    if emulation == "relay":
        config = link_config(rate_bps=rate_bps, delay_ns=DELAY_NS, limit_packets=bdp_packets)
        config["pipes"][0]["a_to_b"].update(DISCIPLINES[discipline])  # both directions share it
    else:
        config = link_config(rate_bps=None, delay_ns=DELAY_NS)
        shaper = Shaper(link=0, namespace=bed.ns_relay, ifname="rb", rate_bps=rate_bps,
                        limit_packets=bdp_packets, limit_bytes=None)
        subprocess.run(["tc", "-n", bed.ns_relay, "-batch", "-"], input="\n".join(shaper.tc_lines()) + "\n",
                       check=True, capture_output=True, text=True)
    relay = bed.start_relay(config, work, f"relay{port}")
    try:
        cpu0, t0, wall0 = relay_cpu_s(relay.proc.pid), cpu_times(), time.monotonic()
        client, _ = bed.iperf(port, ["-t", str(seconds), "-C", "cubic"], timeout_s=seconds + 60)
        cpu1, t1, wall1 = relay_cpu_s(relay.proc.pid), cpu_times(), time.monotonic()
    finally:
        stats = relay.stop()
        if emulation == "tc":
            subprocess.run(["tc", "-n", bed.ns_relay, "qdisc", "del", "dev", "rb", "root"], capture_output=True)
    pipe = stats["pipes"][0]
    return {"goodput_bps": client["end"]["sum_received"]["bits_per_second"],
            "relay_cpu": (cpu1 - cpu0) / (wall1 - wall0), "steal": steal_fraction(t0, t1),
            "data": pipe["a_to_b"]["lateness_ns"], "acks": pipe["b_to_a"]["lateness_ns"],
            "cpu_latency_held": stats.get("cpu_latency_held")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="10,100,1000", help="link rates, Mbit/s, comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10, help="length of each iperf3 flow")
    ap.add_argument("--emulation", choices=("relay", "tc"), default="relay")
    ap.add_argument("--discipline", choices=tuple(DISCIPLINES), default="droptail",
                    help="the relay's queue discipline (relay emulation)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("benches/relay.py needs root (network namespaces, AF_PACKET)", file=sys.stderr)
        return 2
    table = Table(title=f"link relay, {args.emulation} emulation, {args.discipline}, 50 ms each way, one-BDP queue, "
                        f"{args.seconds} s CUBIC flow (lateness p50 / p99 / p99.9 / max)")
    for col in ("rate", "run", "goodput", "relay CPU", "steal", "data lateness", "ACK lateness"):
        table.add_column(col, justify="right")

    def ms(lat: dict) -> str:
        return " / ".join(f"{lat[q] / 1e6:.2f}" for q in ("p50", "p99", "p999", "max")) + " ms"

    with tempfile.TemporaryDirectory(prefix="cca-bench-") as tmp, \
            RelayTestbed(f"cca-bench{os.getpid()}") as bed:
        port = 5400
        for rate in (int(r) for r in args.rates.split(",")):
            for k in range(args.repeats):
                port += 1
                r = one_run(bed, Path(tmp), rate * 1_000_000, args.seconds, args.emulation, port,
                            args.discipline)
                table.add_row(f"{rate} Mbit/s", str(k + 1), f"{r['goodput_bps'] / 1e6:.1f} Mbit/s",
                              f"{100 * r['relay_cpu']:.0f}%", f"{100 * r['steal']:.1f}%",
                              ms(r["data"]), ms(r["acks"]))
    Console(width=200).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
