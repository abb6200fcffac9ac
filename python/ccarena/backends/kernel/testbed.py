"""Two hosts joined by the link relay, for the relay's tests and benchmark (needs root)::

    ns <prefix>-a (a0 10.77.0.1)  ⇄  ns <prefix>-relay (ra | rb)  ⇄  ns <prefix>-b (b0 10.77.0.2)

Offloads are off, TCP buffers allow a 1 Gbit/s × 100 ms window, and the relay namespace sends
nothing of its own (IPv6 off). :meth:`RelayTestbed.start_relay` runs ``python -m
ccarena.backends.kernel.relay_main`` there with a config from :func:`link_config`; :meth:`RelayTestbed.iperf`
runs one iperf3 test from a to b with a fresh server. Every process is stopped by its pid and
every namespace removed by its name when the testbed closes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ADDR_A = "10.77.0.1"
ADDR_B = "10.77.0.2"
TCP_BUFFER_BYTES = 32 << 20
"""Largest TCP send and receive buffer in the hosts (1 Gbit/s × 100 ms is 12.5 MB)."""


def _sh(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout


def link_config(*, rate_bps: int | None, delay_ns: int, limit_packets: int | None = None,
                loss: float = 0.0, duration_ns: int | None = None, seed: int = 7,
                reverse_loss: float | None = None, duplicate: float = 0.0, reorder: float = 0.0,
                reorder_delay_ns: int | None = None, **options: Any) -> dict[str, Any]:
    """A relay config (``crates/relay/src/config.rs``) emulating the same link both ways between
    ``ra`` and ``rb`` (``loss`` a → b, and b → a unless ``reverse_loss`` is given; ``duplicate``,
    ``reorder`` and ``reorder_delay_ns`` both ways, left out of the config at 0 / None);
    ``options`` are further top-level keys (``min_wake_interval_ns``, ...)."""
    direction: dict[str, Any] = {"delay_ns": delay_ns, "loss": loss}
    if rate_bps is not None:
        direction["rate_bps"] = rate_bps
        if limit_packets is not None:
            direction["limit_packets"] = limit_packets
    if duplicate:
        direction["duplicate"] = duplicate
    if reorder:
        direction["reorder"] = reorder
        if reorder_delay_ns is not None:
            direction["reorder_delay_ns"] = reorder_delay_ns
    back = direction if reverse_loss is None else {**direction, "loss": reverse_loss}
    return {"pipes": [{"name": "a<->b", "a": "ra", "b": "rb", "a_to_b": direction, "b_to_a": back}],
            "seed": seed, "duration_ns": duration_ns, "max_queue_frames": 100_000, **options}


def cpu_times() -> list[int]:
    """The aggregate CPU line of /proc/stat (user nice system idle iowait irq softirq steal ...)."""
    return [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]


def steal_fraction(before: list[int], after: list[int]) -> float:
    """Share of all CPU time between two :func:`cpu_times` readings that the hypervisor stole
    (a virtual machine's CPUs taken away by its host)."""
    delta = [b - a for a, b in zip(before, after)]
    return delta[7] / max(1, sum(delta)) if len(delta) > 7 else 0.0


@dataclass
class RelayTestbed:
    """The three namespaces (see the module doc), named ``<prefix>-a``, ``-relay``, ``-b``."""

    prefix: str
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def ns_a(self) -> str:
        """The name of host A's namespace."""
        return f"{self.prefix}-a"

    @property
    def ns_relay(self) -> str:
        """The name of the relay's namespace (between the hosts)."""
        return f"{self.prefix}-relay"

    @property
    def ns_b(self) -> str:
        """The name of host B's namespace."""
        return f"{self.prefix}-b"

    def build(self) -> None:
        """Create the namespaces and links (the caller calls :meth:`remove` even if this raises)."""
        for ns in (self.ns_a, self.ns_relay, self.ns_b):
            _sh("ip", "netns", "add", ns)
        _sh("ip", "link", "add", "a0", "netns", self.ns_a, "type", "veth", "peer", "name", "ra", "netns", self.ns_relay)
        _sh("ip", "link", "add", "b0", "netns", self.ns_b, "type", "veth", "peer", "name", "rb", "netns", self.ns_relay)
        _sh("ip", "netns", "exec", self.ns_relay, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1")
        for ns, ifname in ((self.ns_a, "a0"), (self.ns_relay, "ra"), (self.ns_relay, "rb"), (self.ns_b, "b0")):
            _sh("ip", "netns", "exec", ns, "ethtool", "-K", ifname, "tso", "off", "gso", "off", "gro", "off", "tx", "off")
            _sh("ip", "-n", ns, "link", "set", ifname, "up")
        for ns, ifname, addr in ((self.ns_a, "a0", ADDR_A), (self.ns_b, "b0", ADDR_B)):
            _sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", ifname)
            _sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv4.tcp_rmem=4096 131072 {TCP_BUFFER_BYTES}",
                f"net.ipv4.tcp_wmem=4096 16384 {TCP_BUFFER_BYTES}")

    def namespaces(self) -> list[str]:
        """This testbed's namespaces that exist now."""
        listed = _sh("ip", "netns", "list").splitlines()
        return [line.split()[0] for line in listed if line.startswith(f"{self.prefix}-")]

    def remove(self) -> None:
        """Kill every process this testbed started and delete its namespaces."""
        for p in self.processes:
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    pass
        for ns in (self.ns_a, self.ns_relay, self.ns_b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)

    def __enter__(self) -> "RelayTestbed":
        try:
            self.build()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def start(self, cmd: list[str], **kw: Any) -> subprocess.Popen:
        """Start a process that :meth:`remove` will kill if it is still running."""
        p = subprocess.Popen(cmd, **kw)
        self.processes.append(p)
        return p

    def udp_receive_buffer_errors(self) -> int:
        """Datagrams the kernel of host b dropped because a receiving socket's buffer was full
        (``RcvbufErrors`` of ``/proc/net/snmp`` in its namespace): the receiver's fault, not the
        link's."""
        lines = [line.split() for line in _sh("ip", "netns", "exec", self.ns_b, "cat", "/proc/net/snmp").splitlines()
                 if line.startswith("Udp:")]
        header, values = lines[0], lines[1]
        return int(values[header.index("RcvbufErrors")])

    def relay_command(self, config_path: Path, stats_path: Path) -> list[str]:
        """The command running the relay in the relay namespace."""
        return ["ip", "netns", "exec", self.ns_relay, sys.executable, "-m", "ccarena.backends.kernel.relay_main",
                str(config_path), str(stats_path)]

    def start_relay(self, config: dict[str, Any], workdir: Path, name: str = "relay") -> "RunningRelay":
        """Write ``config`` and start the relay; returns once it reports ready.

        Raises:
            RuntimeError: it exited or said something else (its stderr is in the message).
        """
        config_path, stats_path = workdir / f"{name}.json", workdir / f"{name}-stats.json"
        config_path.write_text(json.dumps(config))
        p = self.start(self.relay_command(config_path, stats_path), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.stdout is not None and p.stderr is not None
        if p.stdout.readline().strip() != "ready":
            p.kill()
            raise RuntimeError(f"the relay did not start: {p.stderr.read()}")
        return RunningRelay(p, stats_path)

    def iperf(self, port: int, client_args: list[str], timeout_s: float = 90) -> tuple[dict, dict]:
        """One iperf3 test a → b with a fresh server on ``port``; returns (client JSON, server JSON).

        Raises:
            RuntimeError: either side reported an error or printed no JSON.
        """
        server = self.start(["ip", "netns", "exec", self.ns_b, "iperf3", "-s", "-1", "-J", "-p", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(0.5)
        client = subprocess.run(["ip", "netns", "exec", self.ns_a, "iperf3", "-c", ADDR_B, "-p", str(port),
                                 "-J", *client_args], capture_output=True, text=True, timeout=timeout_s)
        out, _ = server.communicate(timeout=30)
        try:
            c, s = json.loads(client.stdout), json.loads(out)
        except ValueError as err:
            raise RuntimeError(f"iperf3 printed no JSON: {client.stderr.strip()}") from err
        if "error" in c or "error" in s:
            raise RuntimeError(f"iperf3 failed: {c.get('error') or s.get('error')}")
        return c, s


@dataclass
class RunningRelay:
    """A relay started by :meth:`RelayTestbed.start_relay`."""

    proc: subprocess.Popen
    stats_path: Path

    def stop(self) -> dict[str, Any]:
        """SIGTERM it and return its stats.

        Raises:
            RuntimeError: it did not exit cleanly.
        """
        self.proc.send_signal(signal.SIGTERM)
        if self.proc.wait(10) != 0:
            raise RuntimeError(f"the relay exited with {self.proc.returncode}: "
                               f"{self.proc.stderr.read() if self.proc.stderr else ''}")
        return json.loads(self.stats_path.read_text())
