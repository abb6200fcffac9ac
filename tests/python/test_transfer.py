"""ccarena send / ccarena recv over loopback: a byte-exact transfer with its record, a resume
after an interruption, and every bad input as one line with exit status 2."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ccarena import _engine
from ccarena.cli import app
from typer.testing import CliRunner

CLI = [sys.executable, "-m", "ccarena"]


class Stop(Exception):
    """Raised in the receiver's callback to end its serve loop."""


def make_file(path: Path, size: int) -> str:
    data = os.urandom(size)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


class Receiver:
    """A receiver serving `directory` on an ephemeral loopback port in a thread."""

    def __init__(self, directory: Path, **options) -> None:
        self.rx = _engine.UdpReceiver("127.0.0.1:0", str(directory), **options)
        self.addr = self.rx.local_addr
        self.events: list[dict] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()

    def _serve(self) -> None:
        def on_event(ev: dict) -> None:
            if ev["event"] != "tick":
                self.events.append(ev)
            if self.stop.is_set():
                raise Stop

        try:
            self.rx.serve(on_event=on_event)
        except Stop:
            pass

    def __enter__(self) -> "Receiver":
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def cli(*args: str):
    """`ccarena ARGS` in this process: (exit code, stdout, stderr)."""
    done = CliRunner().invoke(app, list(args))
    return done.exit_code, done.stdout, done.stderr


def one_error_line(done, *needles: str) -> str:
    code, out, err = done
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("flavor", ["bbr", "udt"])
def test_send_and_recv_commands_byte_exact_with_a_record(tmp_path, flavor):
    src = tmp_path / "payload.bin"
    digest = make_file(src, 6_000_000)
    incoming = tmp_path / "in"
    incoming.mkdir()
    recv = subprocess.Popen([*CLI, "recv", "--bind", "127.0.0.1:0", "--dir", str(incoming),
                             "--once", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = recv.stderr.readline()
        match = re.search(r"listening on (\S+)", line)
        assert match, line
        code, out, err = cli("send", str(src), match.group(1), "--flavor", flavor, "--json")
        assert code == 0, err
        record = json.loads(out)
        recv_out, recv_err = recv.communicate(timeout=30)
    finally:
        recv.kill()
    assert recv.returncode == 0, recv_err
    assert hashlib.sha256((incoming / "payload.bin").read_bytes()).hexdigest() == digest
    assert record["sha256"] == digest and record["flavor"] == flavor
    assert record["stream_bytes"] == 6_000_000 and record["goodput_bps"] > 0
    assert record["rtt"]["samples"] > 0 and record["rtt"]["p50_ms"] <= record["rtt"]["p99_ms"]
    assert record["cwnd_samples"] and all(c > 0 for _, c in record["cwnd_samples"])
    assert json.loads(recv_out)["sha256"] == digest
    assert "SHA-256 verified" in recv_err


def test_the_record_table_names_the_quantities(tmp_path):
    src = tmp_path / "t.bin"
    make_file(src, 300_000)
    (tmp_path / "in").mkdir()
    with Receiver(tmp_path / "in") as rx:
        code, out, err = cli("send", str(src), rx.addr, "--name", "copy.bin")
    assert code == 0, err
    for words in ("goodput", "retransmissions", "RTT min / p50 / p90 / p99 / max", "SHA-256"):
        assert words in out, out


def test_the_send_record_has_the_senders_cpu_cost(tmp_path):
    src = tmp_path / "c.bin"
    make_file(src, 8_000_000)
    (tmp_path / "in").mkdir()
    with Receiver(tmp_path / "in") as rx:
        code, out, err = cli("send", str(src), rx.addr, "--flavor", "cubic", "--json")
    assert code == 0, err
    r = json.loads(out)
    # The sending thread's CPU (the receiver runs in another thread of this process): positive and
    # at most the transfer's wall time.
    assert 0 < r["sender_cpu_s"] <= r["duration_s"] * 1.05 + 0.01, r
    assert r["cpu_mhz"] > 0
    assert r["cpu_percent"] == pytest.approx(r["sender_cpu_s"] / r["duration_s"] * 100)
    # Seed 001's MHz per Mbps: the CPU fraction times the clock over the goodput in Mbit/s.
    assert r["mhz_per_mbps"] == pytest.approx(r["cpu_percent"] / 100 * r["cpu_mhz"] / (r["goodput_bps"] / 1e6))
    with Receiver(tmp_path / "in") as rx:
        code, out, err = cli("send", str(src), rx.addr, "--name", "c2.bin")
    assert code == 0, err
    assert "sender CPU" in out and "MHz/Mbps" in out, out


def test_an_interrupted_send_resumes_with_only_the_missing_bytes(tmp_path):
    src = tmp_path / "big.bin"
    digest = make_file(src, 30_000_000)
    incoming = tmp_path / "in"
    incoming.mkdir()
    with Receiver(incoming) as rx:
        def interrupt(acked, stream, resumed, total, elapsed):
            # The first report after data started (about 100 ms in). Unlimited, loopback moves
            # 30 MB in less than that and the transfer ended before the "Ctrl-C"; at 100 Mbit/s it
            # takes 2.4 s.
            if acked > 0:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            _engine.udp_send_file(str(src), rx.addr, progress=interrupt, max_rate_bps=100_000_000)
        # The sidecar is named by a hash of the final name (docs/udp-wire.md, "Resume").
        sidecar = incoming / (".ccarena-ranges-" + hashlib.sha256(b"big.bin").hexdigest()[:32])
        deadline = time.monotonic() + 30  # written at once on the sender's CLOSE; generous under load
        while not sidecar.exists():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert not (incoming / "big.bin").exists()
        code, out, err = cli("send", str(src), rx.addr, "--json")
        assert code == 0, err
        record = json.loads(out)
    assert 0 < record["resumed_bytes"] < 30_000_000
    assert record["resumed_bytes"] + record["stream_bytes"] == 30_000_000
    assert record["bytes_sent"] - record["bytes_retransmitted"] == record["stream_bytes"]
    assert hashlib.sha256((incoming / "big.bin").read_bytes()).hexdigest() == digest
    assert [e["event"] for e in rx.events] == ["started", "failed", "started", "finished"]


@pytest.mark.parametrize("flavor", ["cubic", "bbr"])
def test_limit_rate_caps_the_goodput(tmp_path, flavor):
    # A window controller (CUBIC) and a pacing one (BBR, paced at the smaller of its own rate
    # and the cap): unlimited, loopback carries hundreds of Mbit/s.
    src = tmp_path / "r.bin"
    make_file(src, 4_000_000)
    (tmp_path / "in").mkdir()
    with Receiver(tmp_path / "in") as rx:
        code, out, err = cli("send", str(src), rx.addr, "--flavor", flavor, "--limit-rate",
                             "40Mbps", "--json")
    assert code == 0, err
    goodput = json.loads(out)["goodput_bps"]
    assert 0.3 * 40e6 < goodput <= 1.02 * 40e6, goodput


@pytest.mark.parametrize("mbps", [50, 100])
def test_limit_rate_delivers_the_cap(tmp_path, mbps):
    # Issue 29: the cap is delivered, not undershot by the time late wake-ups lose (it fell
    # 12-21 % short on a busy machine). benches/limit_rate.rs measures the 3 % target; here the
    # band is 10 %, the best of three tries, as the VM's hypervisor steals the CPU in bursts
    # longer than the token bucket makes up.
    cap_bps = mbps * 1e6
    src = tmp_path / "c.bin"
    make_file(src, int(cap_bps * 1.5 / 8))  # 1.5 s at the cap
    (tmp_path / "in").mkdir()
    goodputs: list[float] = []
    with Receiver(tmp_path / "in") as rx:
        for attempt in range(3):
            code, out, err = cli("send", str(src), rx.addr, "--limit-rate", f"{mbps}Mbps",
                                 "--name", f"c{attempt}.bin", "--json")
            assert code == 0, err
            goodputs.append(json.loads(out)["goodput_bps"])
            if abs(goodputs[-1] / cap_bps - 1) <= 0.10:
                break
    assert abs(goodputs[-1] / cap_bps - 1) <= 0.10, [round(g / 1e6, 1) for g in goodputs]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    src = tmp_path / "f.bin"
    make_file(src, 10_000)
    closed = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    closed.bind(("127.0.0.1", 0))
    closed_addr = "127.0.0.1:%d" % closed.getsockname()[1]
    closed.close()

    one_error_line(cli("send", str(tmp_path / "missing.bin"), closed_addr), "missing.bin")
    one_error_line(cli("send", str(src), closed_addr), "no ccarena receiver", closed_addr)
    one_error_line(cli("send", str(src), "no-such-host.invalid:9000"), "bad address")
    one_error_line(cli("send", str(src), "127.0.0.1"), "bad address")
    one_error_line(cli("send", str(src), closed_addr, "--flavor", "cubik"), "cubic")
    one_error_line(cli("send", str(src), closed_addr, "--recovery", "fast"), "--recovery")
    # UDT is carried, but has no recovery modes or rate limit.
    one_error_line(cli("send", str(src), closed_addr, "--flavor", "udt", "--recovery", "sack"), "UDT")
    one_error_line(cli("send", str(src), closed_addr, "--flavor", "udt", "--limit-rate", "10Mbps"), "UDT")
    one_error_line(cli("send", str(src), closed_addr, "--limit-rate", "fast"), "--limit-rate")

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        one_error_line(cli("recv", "--bind", f"127.0.0.1:{port}", "--dir", str(tmp_path)),
                       "port in use")
    one_error_line(cli("recv", "--bind", "127.0.0.1:0", "--dir", str(tmp_path / "nope")),
                   "directory")
    one_error_line(cli("recv", "--bind", "127.0.0.1:0", "--dir", str(src)), "not a directory")
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        one_error_line(cli("recv", "--bind", "127.0.0.1:0", "--dir", str(locked)),
                       "not writable")

    # A peer speaking another wire version answers the HELLO with its own version.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        peer.settimeout(10)

        def answer() -> None:
            data, sender = peer.recvfrom(2048)
            reply = bytearray(data[:20])
            reply[2] = 7
            peer.sendto(bytes(reply) + b"\x00" * 16, sender)

        t = threading.Thread(target=answer)
        t.start()
        one_error_line(cli("send", str(src), "127.0.0.1:%d" % peer.getsockname()[1]), "version 7")
        t.join()


def test_existing_files_need_force_and_names_stay_inside_the_directory(tmp_path):
    src = tmp_path / "f.bin"
    make_file(src, 50_000)
    incoming = tmp_path / "in"
    incoming.mkdir()
    (incoming / "f.bin").write_bytes(b"keep me")
    with Receiver(incoming):
        pass
    with Receiver(incoming) as rx:
        one_error_line(cli("send", str(src), rx.addr), "exists", "--force")
        assert (incoming / "f.bin").read_bytes() == b"keep me"
        one_error_line(cli("send", str(src), rx.addr, "--name", "../escape.bin"), "path separator")
        one_error_line(cli("send", str(src), rx.addr, "--name", ".."), "starts with a dot")
    assert not (tmp_path / "escape.bin").exists()
    with Receiver(incoming, force=True) as rx:
        code, _, err = cli("send", str(src), rx.addr)
        assert code == 0, err
    assert (incoming / "f.bin").read_bytes() == src.read_bytes()
