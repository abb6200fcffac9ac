"""The link relay (``python -m ccarena.backends.kernel.relay_main``) on a real veth topology
(:class:`ccarena.backends.kernel.testbed.RelayTestbed`)::

    ns a (a0 10.77.0.1)  <->  ns relay (ra | rb)  <->  ns b (b0 10.77.0.2)

The relay emulates a 100 Mbit/s link with a 50 ms delay each way. Checks: the delay holds within
1 ms (relay p99 lateness) under a TCP flow filling the link and ping's RTT is 100 ms ± 2 ms; the
rate holds; 1 % random loss is 0.8–1.2 % by the relay's count and by the receiver's; the queue's
counters are conserved; the relay stops by itself after ``duration_ns`` and dies with its parent;
a bad config is one line naming the field. The topology tests need root and iproute2, ethtool,
iperf3, ping.

On a shared virtual machine the hypervisor sometimes takes a CPU away for milliseconds (steal
time), and every frame due meanwhile is late by that much whatever the relay does. The lateness
test therefore measures the steal during each attempt, tries up to three times, and passes on the
first attempt within 1 ms; it is skipped (saying why) only if every attempt lost more than
:data:`MAX_STEAL` of the CPU to the hypervisor.
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
from ccarena.backends.kernel.testbed import (
    ADDR_B,
    RelayTestbed,
    cpu_times,
    link_config,
    steal_fraction,
)

DELAY_NS = 50_000_000
RATE_BPS = 100_000_000
LIMIT_PACKETS = 1000
TOOLS = ("ip", "tc", "ethtool", "iperf3", "ping")
MAX_STEAL = 0.02
"""Attempts during which the hypervisor stole more than this fraction of the CPU do not count."""

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or any(shutil.which(t) is None for t in TOOLS),
    reason="needs root (network namespaces, AF_PACKET) and " + ", ".join(TOOLS),
)
pytestmark = pytest.mark.skipif(not hasattr(_engine, "relay_run"), reason="extension built without the relay")


@pytest.fixture(scope="module")
def testbed():
    """The three namespaces; always deleted (by name) afterwards."""
    bed = RelayTestbed(f"cca-relaytest-{os.getpid()}")
    with bed:
        yield bed
    assert bed.namespaces() == []


def config(**kw) -> dict:
    return link_config(rate_bps=RATE_BPS, delay_ns=DELAY_NS, limit_packets=LIMIT_PACKETS, **kw)


def check_conserved(direction: dict) -> None:
    link = direction["link"]
    assert link["arrivals"] == link["drops"] + link["departures"] + link["backlog_packets_end"], link
    # Every admitted frame not lost on the wire was sent on or is still inside the relay (frames
    # still waiting in the queue may yet be lost: their losses count when they depart).
    held = direction["frames"] + direction["left_queued"] + direction["send_errors"]
    admitted = link["departures"] + link["backlog_packets_end"]
    assert link["departures"] - link["lost_wire"] <= held <= admitted - link["lost_wire"], direction


@needs_root
def test_fixed_delay_and_rate_hold_under_a_tcp_flow(testbed, tmp_path):
    attempts = []
    for attempt in range(3):
        relay = testbed.start_relay(config(), tmp_path, f"relay{attempt}")
        ping = subprocess.run(["ip", "netns", "exec", testbed.ns_a, "ping", "-c", "21", "-i", "0.2", ADDR_B],
                              capture_output=True, text=True, timeout=60).stdout
        # The first echo also waits for ARP through the relay (another 100 ms): leave it out.
        rtts_ms = [float(line.split("time=")[1].split()[0]) for line in ping.splitlines() if "time=" in line][1:]
        assert len(rtts_ms) == 20, ping
        before = cpu_times()
        client, _ = testbed.iperf(5311 + attempt, ["-t", "10"])
        steal = steal_fraction(before, cpu_times())
        stats = relay.stop()

        assert abs(min(rtts_ms) - 100.0) < 2.0 and abs(statistics.median(rtts_ms) - 100.0) < 2.0, rtts_ms
        pipe = stats["pipes"][0]
        assert pipe["name"] == "a<->b" and stats["wall_s"] > 10
        ab = pipe["a_to_b"]
        # The link's rate holds: never more than 100 Mbit/s of IP bytes over the whole test, and
        # TCP fills it (10 s including slow start through a 100 ms RTT).
        assert ab["link"]["departed_bytes"] * 8 / stats["wall_s"] <= RATE_BPS
        assert client["end"]["sum_received"]["bits_per_second"] > 0.7 * RATE_BPS
        assert ab["frames"] > 50_000  # ~10 s of 100 Mbit/s in full-size frames
        for direction in ("a_to_b", "b_to_a"):
            d = pipe[direction]
            assert d["dropped_loss"] == 0 and d["dropped_overflow"] == 0
            check_conserved(d)
        worst = max(pipe[d]["lateness_ns"]["p99"] for d in ("a_to_b", "b_to_a"))
        attempts.append((worst, steal))
        if worst < 1_000_000:
            return
    if all(steal > MAX_STEAL for _, steal in attempts):
        pytest.skip("the hypervisor stole " + ", ".join(f"{100 * s:.1f}%" for _, s in attempts)
                    + " of the CPU during the attempts: the relay's own timing cannot be judged")
    pytest.fail("relay p99 lateness over 1 ms in every attempt: "
                + ", ".join(f"{w / 1e6:.2f} ms (steal {100 * s:.1f}%)" for w, s in attempts))


@needs_root
def test_one_percent_loss_is_one_percent(testbed, tmp_path):
    relay = testbed.start_relay(config(loss=0.01), tmp_path)
    # 5000 datagrams/s for 8 s: 40,000 packets, so 0.8–1.2 % is ±4.5 standard deviations. The
    # server's socket buffer is 4 MB (-w), so a receiver descheduled for a while loses nothing,
    # and what it still lost to a full buffer the kernel counts (the host's fault, not the link's).
    buffer_errors = testbed.udp_receive_buffer_errors()
    _, server = testbed.iperf(5320, ["-u", "-b", "40M", "-l", "1000", "-t", "8", "-w", "4M"])
    buffer_errors = testbed.udp_receive_buffer_errors() - buffer_errors
    stats = relay.stop()

    ab = stats["pipes"][0]["a_to_b"]
    check_conserved(ab)
    relay_loss = ab["dropped_loss"] / (ab["frames"] + ab["dropped_loss"])
    received = server["end"]["sum"]
    receiver_loss = (received["lost_packets"] - buffer_errors) / received["packets"]
    print(f"relay loss {relay_loss:.3%}, receiver loss {received['lost_packets'] / received['packets']:.3%} "
          f"({buffer_errors} datagrams lost to a full receive buffer)")
    assert received["packets"] >= 10_000
    assert 0.008 <= relay_loss <= 0.012, ab
    assert 0.008 <= receiver_loss <= 0.012, received
    assert ab["dropped_overflow"] == 0 and ab["dropped_queue"] == 0


@needs_root
def test_stops_after_duration(testbed, tmp_path):
    relay = testbed.start_relay(config(duration_ns=300_000_000), tmp_path)
    assert relay.proc.wait(10) == 0, relay.proc.stderr.read()
    stats = json.loads(relay.stats_path.read_text())
    assert 0.29 <= stats["wall_s"] < 2.0


@needs_root
def test_dies_with_its_parent_and_still_writes_stats(testbed, tmp_path):
    cfg, stats_path = tmp_path / "relay.json", tmp_path / "stats.json"
    cfg.write_text(json.dumps(config()))
    cmd = testbed.relay_command(cfg, stats_path)
    # A parent that starts the relay, reports its pid once it is ready, and then just waits.
    parent_code = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen({cmd!r}, stdout=subprocess.PIPE, text=True)\n"
        "assert p.stdout.readline().strip() == 'ready'\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = testbed.start([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True)
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
    done = subprocess.run([sys.executable, "-m", "ccarena.backends.kernel.relay_main", str(cfg), str(tmp_path / "stats.json")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith("pipes[0].a: no interface named 'veth9' in this namespace")
    assert not (tmp_path / "stats.json").exists()


@needs_root
def test_many_pipes_share_a_few_threads_and_keep_their_timing(testbed, tmp_path):
    # 31 idle pipes (veth pairs inside the relay namespace) beside the busy one: 64 directions,
    # as many as a small fat-tree's. The relay serves them with one thread per CPU (plus the
    # Python thread that supervises), not one per direction, and the busy pipe's timing holds.
    idle = 31
    for i in range(idle):
        subprocess.run(["ip", "-n", testbed.ns_relay, "link", "add", f"x{i}a", "type", "veth", "peer", "name", f"x{i}b"],
                       check=True, capture_output=True)
        for end in ("a", "b"):
            subprocess.run(["ip", "-n", testbed.ns_relay, "link", "set", f"x{i}{end}", "up"], check=True, capture_output=True)
    try:
        cfg = config()
        direction = {"delay_ns": 1_000_000, "loss": 0.0, "rate_bps": RATE_BPS, "limit_packets": 100}
        cfg["pipes"] += [{"name": f"idle{i}", "a": f"x{i}a", "b": f"x{i}b", "a_to_b": direction, "b_to_a": direction}
                         for i in range(idle)]
        attempts = []
        for attempt in range(3):
            relay = testbed.start_relay(cfg, tmp_path, f"many{attempt}")
            before = cpu_times()
            client, _ = testbed.iperf(5330 + attempt, ["-t", "5"])
            steal = steal_fraction(before, cpu_times())
            # Read while it still serves (its threads start after it reports ready).
            status = Path(f"/proc/{relay.proc.pid}/status").read_text()
            threads = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))
            stats = relay.stop()
            assert threads <= (os.cpu_count() or 1) + 3, f"{threads} threads for {2 * (idle + 1)} directions"
            assert len(stats["pipes"]) == idle + 1
            pipe = stats["pipes"][0]
            assert client["end"]["sum_received"]["bits_per_second"] > 0.6 * RATE_BPS
            for d in ("a_to_b", "b_to_a"):
                check_conserved(pipe[d])
            worst = max(pipe[d]["lateness_ns"]["p99"] for d in ("a_to_b", "b_to_a"))
            attempts.append((worst, steal))
            if worst < 1_000_000:
                return
        if all(steal > MAX_STEAL for _, steal in attempts):
            pytest.skip("the hypervisor stole too much of the CPU during every attempt")
        pytest.fail("relay p99 lateness over 1 ms in every attempt: "
                    + ", ".join(f"{w / 1e6:.2f} ms (steal {100 * s:.1f}%)" for w, s in attempts))
    finally:
        for i in range(idle):
            subprocess.run(["ip", "-n", testbed.ns_relay, "link", "del", f"x{i}a"], capture_output=True)
