"""``ccarena send`` / ``ccarena recv`` between network namespaces over the relay's emulated link with
10 % loss, reordering and duplication (issue 14): byte-exact transfers (SHA-256) for reno, cubic,
bbr and udt, and a transfer interrupted with SIGINT (Ctrl-C) that a rerun resumes without resending
what arrived.

The path (:class:`ccarena.backends.kernel.testbed.RelayTestbed`: host a, the relay's namespace,
host b): 100 Mbit/s, 1 ms each way, a 200-packet queue; a → b (the data) loses 10 % of its packets
on the wire; both directions duplicate 1 % (the copy right behind) and hold back 5 % by 2 ms so the
packets behind overtake them (``crates/link/src/impair.rs``). The relay's own counters show that
every condition happened during each transfer.

Reno runs with Linux's recovery (SACK, RACK-TLP, PRR: ``--recovery linux``, which is what
Linux's ``reno`` is): with its own RFC 5681 recovery it recovers one loss per window and at 10 %
loss most losses end in a retransmission timeout, 0.65 Mbit/s measured on this path (8 MB in 99 s),
as Padhye et al.'s model predicts with the 200 ms minimum RTO — correct, but too slow for a test.

UDT runs on its own transport (``--flavor udt``: UDT_DATA, UDT_ACK, UDT_ACK2 and UDT_NAK frames,
``crates/udp/src/tx.rs``), recovering from its receiver's NAKs; the same record, SHA-256 check and
resume as the TCP-like flavors. UDT reads every loss as congestion (a rate decrease per NAK
period; Gu & Grossman 2007), and its rate increase follows packet-pair capacity estimates (whose
window now starts at 1 ms intervals, as UDT4's; it started at 1 s, Gu 2009 §2.2,
``crates/transport/src/udt/window.rs``): at 10 % loss it reached about 3 Mbit/s with the 1 s start
(50 MB in 141 s measured, cubic 58 s), so its default case is a 500 kB prefix of the file
(docs/udp-backend.md).

The file is ``CCARENA_IMPAIRED_BYTES`` bytes: 4 MB by default, so the module stays within about
half a minute; the issue's 50 MB is the same test with ``CCARENA_IMPAIRED_BYTES=50000000`` (run by
hand; about 7 s for bbr, a minute for cubic). Goodput, counters and times are printed
(``pytest -s``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ccarena import _engine
from ccarena.backends.kernel.testbed import ADDR_B, RelayTestbed, link_config
from kernelutil import ccarena_env, requires_root

pytestmark = [
    requires_root,
    pytest.mark.skipif(not hasattr(_engine, "relay_run"), reason="extension built without the relay"),
    pytest.mark.skipif(shutil.which("ethtool") is None, reason="needs ethtool"),
]

SIZE = int(os.environ.get("CCARENA_IMPAIRED_BYTES", 4_000_000))
LINK = {"rate_bps": 100_000_000, "delay_ns": 1_000_000, "limit_packets": 200, "loss": 0.10,
        "reverse_loss": 0.0, "duplicate": 0.01, "reorder": 0.05, "reorder_delay_ns": 2_000_000}
# UDT takes every loss as congestion and starts slowly here (module docstring): its default case is a
# 500 kB prefix of the file (5 to 15 s; enough packets that every impairment shows in both
# directions); CCARENA_IMPAIRED_BYTES runs it on the whole file too.
UDT_BYTES = SIZE if "CCARENA_IMPAIRED_BYTES" in os.environ else min(SIZE, 500_000)
SEND_TIMEOUT_S = max(300, SIZE / 1e6 * 12)


@pytest.fixture(scope="module")
def testbed():
    """The three namespaces, named after this process; always deleted (by name) afterwards."""
    bed = RelayTestbed(f"cca-impair-{os.getpid()}")
    with bed:
        yield bed
    assert bed.namespaces() == []


@pytest.fixture(scope="module")
def payload(tmp_path_factory) -> tuple[Path, str]:
    """A random file of ``SIZE`` bytes and its SHA-256."""
    path = tmp_path_factory.mktemp("src") / "payload.bin"
    data = os.urandom(SIZE)
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def _in(ns: str, *args: str) -> list[str]:
    """``python -m ccarena ARGS`` in namespace ``ns``."""
    return ["ip", "netns", "exec", ns, sys.executable, "-m", "ccarena", *args]


def _receiver(bed: RelayTestbed, port: int, directory: Path) -> subprocess.Popen:
    """``ccarena recv`` on host b, started and listening."""
    p = bed.start(_in(bed.ns_b, "recv", "--bind", f"{ADDR_B}:{port}", "--dir", str(directory), "--json"),
                  env=ccarena_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stderr is not None
    line = p.stderr.readline()
    assert re.search(r"listening on", line), line
    return p


def _send(bed: RelayTestbed, src: Path, port: int, flavor: str, recovery: str | None = None) -> dict:
    """``ccarena send --json`` from host a to completion; its record."""
    extra = ["--recovery", recovery] if recovery else []
    done = subprocess.run(_in(bed.ns_a, "send", str(src), f"{ADDR_B}:{port}", "--flavor", flavor, *extra, "--json"),
                          env=ccarena_env(), capture_output=True, text=True, timeout=SEND_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _stop(p: subprocess.Popen) -> None:
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(5)


def _check_impaired(stats: dict) -> dict:
    """The data direction's link counters, after checking every condition happened and packets
    are conserved."""
    data, acks = stats["pipes"][0]["a_to_b"]["link"], stats["pipes"][0]["b_to_a"]["link"]
    for d in (data, acks):
        assert d["arrivals"] == d["drops"] + d["departures"] + d["backlog_packets_end"], d
        assert d["duplicated"] > 0 and d["reordered"] > 0, d
    # 10 % of the departures lost, within 5 binomial standard deviations.
    n = data["departures"]
    assert abs(data["lost_wire"] - 0.1 * n) < 5 * (n * 0.1 * 0.9) ** 0.5 + 1, data
    return data


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


FLAVORS = [("reno", "linux"), ("cubic", None), ("bbr", None), ("udt", None)]


@pytest.mark.parametrize(("flavor", "recovery"), FLAVORS)
def test_a_transfer_through_loss_reordering_and_duplication_is_byte_exact(testbed, payload, tmp_path, flavor,
                                                                          recovery):
    src, digest = payload
    size = UDT_BYTES if flavor == "udt" else SIZE
    if size < SIZE:
        (tmp_path / "src").mkdir()
        src = tmp_path / "src" / src.name
        src.write_bytes(payload[0].read_bytes()[:size])
        digest = _sha(src)
    port = 9100 + ["reno", "cubic", "bbr", "udt"].index(flavor)
    relay = testbed.start_relay(link_config(**LINK), tmp_path)
    recv = _receiver(testbed, port, tmp_path)
    try:
        started = time.monotonic()
        record = _send(testbed, src, port, flavor, recovery)
        wall_s = time.monotonic() - started
    finally:
        _stop(recv)
        stats = relay.stop()
    data = _check_impaired(stats)
    assert record["sha256"] == digest
    assert _sha(tmp_path / src.name) == digest
    assert record["stream_bytes"] == size and record["bytes_retransmitted"] > 0
    print(f"\n{flavor}: {size / 1e6:g} MB in {record['duration_s']:.2f} s ({wall_s:.2f} s wall), goodput "
          f"{record['goodput_bps'] / 1e6:.2f} Mbit/s, retransmitted {record['bytes_retransmitted'] / 1e6:.2f} MB; "
          f"data link: {data['departures']} departed, {data['lost_wire']} lost, {data['duplicated']} duplicated, "
          f"{data['reordered']} reordered")


def test_an_interrupted_transfer_resumes_without_resending_what_arrived(testbed, payload, tmp_path):
    src, digest = payload
    port = 9110
    relay = testbed.start_relay(link_config(**LINK), tmp_path)
    recv = _receiver(testbed, port, tmp_path)
    # The partial file is named by a hash of the final name (docs/udp-wire.md, "Resume").
    part = tmp_path / (".ccarena-part-" + hashlib.sha256(src.name.encode()).hexdigest()[:32])
    try:
        first = testbed.start(_in(testbed.ns_a, "send", str(src), f"{ADDR_B}:{port}", "--flavor", "cubic"),
                              env=ccarena_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Ctrl-C once a quarter of the file has reached host b's disk.
        deadline = time.monotonic() + SEND_TIMEOUT_S
        while not (part.exists() and part.stat().st_blocks * 512 >= SIZE // 4):
            assert first.poll() is None, f"the transfer ended before the interruption: {first.communicate()}"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=30)
        assert first.returncode != 0 and "interrupted" in err, err
        assert not (tmp_path / src.name).exists()
        record = _send(testbed, src, port, "cubic")
    finally:
        _stop(recv)
        relay.stop()
    # What arrived is not sent again: the rerun sends only the rest, each new byte once
    # (retransmissions aside).
    assert 0 < record["resumed_bytes"] < SIZE, record
    assert record["resumed_bytes"] + record["stream_bytes"] == SIZE
    assert record["bytes_sent"] - record["bytes_retransmitted"] == record["stream_bytes"]
    assert record["sha256"] == digest and _sha(tmp_path / src.name) == digest
    print(f"\nresumed: {record['resumed_bytes'] / 1e6:.2f} MB kept, {record['stream_bytes'] / 1e6:.2f} MB sent "
          f"in {record['duration_s']:.2f} s")
