"""The delay relay (``python -m ccarena.kernel.relay``) on a real veth topology.

    ns a (a0 10.77.0.1, tbf 100 Mbit/s)  <->  ns relay (ra | rb)  <->  ns b (b0 10.77.0.2)

Checks: a fixed 50 ms each way holds within 1 ms (relay p99 lateness) under a 100 Mbit/s TCP
flow and ping's RTT is 100 ms ± 2 ms; 1 % random loss is 0.8–1.2 % by the relay's count and by the
receiver's; the relay stops by itself after ``duration_ns`` and dies with its parent; a bad config
is one line naming the field. The topology tests need root and iproute2, ethtool, iperf3, ping.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccarena import _engine

PREFIX = f"cca-relaytest-{os.getpid()}"
NS_A, NS_RELAY, NS_B = f"{PREFIX}-a", f"{PREFIX}-relay", f"{PREFIX}-b"
ADDR_B = "10.77.0.2"
DELAY_NS = 50_000_000
TOOLS = ("ip", "tc", "ethtool", "iperf3", "ping")

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or any(shutil.which(t) is None for t in TOOLS),
    reason="needs root (network namespaces, AF_PACKET) and " + ", ".join(TOOLS),
)
pytestmark = pytest.mark.skipif(not hasattr(_engine, "relay_run"), reason="extension built without the relay")


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout


def our_namespaces() -> list[str]:
    return [line.split()[0] for line in sh("ip", "netns", "list").splitlines() if line.startswith(PREFIX)]


class Procs:
    """Processes a test started, stopped by pid at cleanup."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen] = []

    def start(self, cmd: list[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(cmd, **kw)
        self.started.append(p)
        return p

    def stop_all(self) -> None:
        for p in self.started:
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    pass


@pytest.fixture(scope="module")
def topology():
    """Build the three namespaces; always delete them (by name) afterwards."""
    try:
        for ns in (NS_A, NS_RELAY, NS_B):
            sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", "a0", "netns", NS_A, "type", "veth", "peer", "name", "ra", "netns", NS_RELAY)
        sh("ip", "link", "add", "b0", "netns", NS_B, "type", "veth", "peer", "name", "rb", "netns", NS_RELAY)
        # The relay namespace must not send traffic of its own (IPv6 router solicitations) into the links.
        sh("ip", "netns", "exec", NS_RELAY, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1")
        for ns, ifname in ((NS_A, "a0"), (NS_RELAY, "ra"), (NS_RELAY, "rb"), (NS_B, "b0")):
            sh("ip", "netns", "exec", ns, "ethtool", "-K", ifname, "tso", "off", "gso", "off", "gro", "off", "tx", "off")
            sh("ip", "-n", ns, "link", "set", ifname, "up")
        sh("ip", "-n", NS_A, "addr", "add", "10.77.0.1/24", "dev", "a0")
        sh("ip", "-n", NS_B, "addr", "add", f"{ADDR_B}/24", "dev", "b0")
        # 100 Mbit/s on a's egress, queue of about one BDP at 100 ms RTT.
        sh("tc", "-n", NS_A, "qdisc", "add", "dev", "a0", "root", "tbf", "rate", "100mbit", "burst", "64kb",
           "limit", "1250000")
        yield
    finally:
        for ns in (NS_A, NS_RELAY, NS_B):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        assert our_namespaces() == []


@pytest.fixture
def procs():
    p = Procs()
    try:
        yield p
    finally:
        p.stop_all()


def relay_config(tmp_path: Path, loss: float = 0.0, duration_ns: int | None = None) -> Path:
    direction = {"delay_ns": DELAY_NS, "loss": loss}
    cfg = {"pipes": [{"name": "a<->b", "a": "ra", "b": "rb", "a_to_b": direction, "b_to_a": direction}],
           "seed": 7, "duration_ns": duration_ns, "max_queue_frames": 100_000}
    path = tmp_path / "relay.json"
    path.write_text(json.dumps(cfg))
    return path


def relay_cmd(cfg: Path, stats: Path) -> list[str]:
    return ["ip", "netns", "exec", NS_RELAY, sys.executable, "-m", "ccarena.kernel.relay", str(cfg), str(stats)]


def start_relay(procs: Procs, cfg: Path, stats: Path) -> subprocess.Popen:
    p = procs.start(relay_cmd(cfg, stats), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready", p.stderr.read() if p.poll() is not None else "no ready line"
    return p


def stop_relay(p: subprocess.Popen, stats: Path) -> dict:
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == 0, p.stderr.read()
    return json.loads(stats.read_text())


def iperf(procs: Procs, port: int, client_args: list[str]) -> tuple[dict, dict]:
    """One iperf3 test a → b; returns (client JSON, server JSON)."""
    server = procs.start(["ip", "netns", "exec", NS_B, "iperf3", "-s", "-1", "-J", "-p", str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(0.5)
    client = subprocess.run(["ip", "netns", "exec", NS_A, "iperf3", "-c", ADDR_B, "-p", str(port), "-J", *client_args],
                            capture_output=True, text=True, timeout=60)
    out, _ = server.communicate(timeout=30)
    c, s = json.loads(client.stdout), json.loads(out)
    assert "error" not in c and "error" not in s, (c.get("error"), s.get("error"))
    return c, s


@needs_root
def test_fixed_delay_holds_under_a_100mbit_tcp_flow(topology, procs, tmp_path):
    stats_path = tmp_path / "stats.json"
    relay = start_relay(procs, relay_config(tmp_path), stats_path)

    ping = sh("ip", "netns", "exec", NS_A, "ping", "-c", "21", "-i", "0.2", ADDR_B)
    # The first echo also waits for ARP through the relay (another 100 ms): leave it out.
    rtts_ms = [float(line.split("time=")[1].split()[0]) for line in ping.splitlines() if "time=" in line][1:]
    assert len(rtts_ms) == 20, ping

    client, _ = iperf(procs, 5311, ["-t", "10"])
    stats = stop_relay(relay, stats_path)

    assert abs(min(rtts_ms) - 100.0) < 2.0 and abs(statistics.median(rtts_ms) - 100.0) < 2.0, rtts_ms
    assert client["end"]["sum_received"]["bits_per_second"] > 50e6
    pipe = stats["pipes"][0]
    assert pipe["name"] == "a<->b" and stats["wall_s"] > 10
    assert pipe["a_to_b"]["frames"] > 50_000  # ~10 s of 100 Mbit/s in full-size frames
    for direction in ("a_to_b", "b_to_a"):
        d = pipe[direction]
        assert d["dropped_loss"] == 0 and d["dropped_overflow"] == 0
        assert d["lateness_ns"]["p99"] < 1_000_000, (direction, d["lateness_ns"])


@needs_root
def test_one_percent_loss_is_one_percent(topology, procs, tmp_path):
    stats_path = tmp_path / "stats.json"
    relay = start_relay(procs, relay_config(tmp_path, loss=0.01), stats_path)
    # 5000 datagrams/s for 8 s: 40,000 packets, so 0.8–1.2 % is ±4.5 standard deviations.
    _, server = iperf(procs, 5312, ["-u", "-b", "40M", "-l", "1000", "-t", "8"])
    stats = stop_relay(relay, stats_path)

    ab = stats["pipes"][0]["a_to_b"]
    relay_loss = ab["dropped_loss"] / (ab["frames"] + ab["dropped_loss"])
    received = server["end"]["sum"]
    receiver_loss = received["lost_packets"] / received["packets"]
    assert received["packets"] >= 10_000
    assert 0.008 <= relay_loss <= 0.012, ab
    assert 0.008 <= receiver_loss <= 0.012, received
    assert ab["dropped_overflow"] == 0


@needs_root
def test_stops_after_duration(topology, procs, tmp_path):
    stats_path = tmp_path / "stats.json"
    relay = start_relay(procs, relay_config(tmp_path, duration_ns=300_000_000), stats_path)
    assert relay.wait(10) == 0, relay.stderr.read()
    stats = json.loads(stats_path.read_text())
    assert 0.29 <= stats["wall_s"] < 2.0


@needs_root
def test_dies_with_its_parent_and_still_writes_stats(topology, procs, tmp_path):
    stats_path = tmp_path / "stats.json"
    cmd = relay_cmd(relay_config(tmp_path), stats_path)
    # A parent that starts the relay, reports its pid once it is ready, and then just waits.
    parent_code = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen({cmd!r}, stdout=subprocess.PIPE, text=True)\n"
        "assert p.stdout.readline().strip() == 'ready'\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = procs.start([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True)
    relay_pid = int(parent.stdout.readline())
    parent.kill()
    parent.wait(5)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{relay_pid}").exists():
        state = Path(f"/proc/{relay_pid}/stat").read_text().split()[2] if Path(f"/proc/{relay_pid}/stat").exists() else "X"
        if state == "Z":
            break
        time.sleep(0.05)
    else:
        if Path(f"/proc/{relay_pid}").exists():
            os.kill(relay_pid, signal.SIGKILL)
            pytest.fail("the relay outlived its parent")
    assert json.loads(stats_path.read_text())["pipes"][0]["name"] == "a<->b"


def test_bad_config_is_one_line_naming_the_field(tmp_path):
    cfg = tmp_path / "relay.json"
    direction = {"delay_ns": 1000, "loss": 0.0}
    cfg.write_text(json.dumps({"pipes": [{"name": "x", "a": "veth9", "b": "lo", "a_to_b": direction,
                                          "b_to_a": direction}]}))
    done = subprocess.run([sys.executable, "-m", "ccarena.kernel.relay", str(cfg), str(tmp_path / "stats.json")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith("pipes[0].a: no interface named 'veth9' in this namespace")
    assert not (tmp_path / "stats.json").exists()
