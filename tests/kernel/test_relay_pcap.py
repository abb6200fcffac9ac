"""``[output] pcap`` on the kernel and udp backends (issue 34, item 1, the relay's part): the relay
writes the frames it forwards on a captured link to a pcap file in the run directory, with the
simulator's capture point (when the link starts serializing a frame, after its queue), and what
Debian's tshark reads agrees with the run's own tables: the data segments the flows sent less
those the queue dropped, the retransmissions, the CE marks, and frames spaced at least their
serialization time apart (the model's instants, not the relay's send times). A file stops at
``pcap_max_bytes`` and the run counts and warns about what it left out; a link the relay does not
emulate (``emulation = "tc"``) is refused in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from kernelutil import requires_root

pytestmark = requires_root

TSHARK = shutil.which("tshark")
RATE_BPS = 50_000_000
DURATION_S = 3.0

SCENARIO = {
    "name": "relay-pcap", "duration": "3s", "seed": 3,
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "bottleneck": {"rate": "50Mbps", "delay": "10ms", "loss": "0.1%",
                                "queue": {"limit": "8pkt", "ecn_threshold": "4pkt"}},
                 "access": {"rate": "100Mbps", "delay": "1ms"}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "cubic", "ecn": True},
              {"from": "left1", "to": "right1", "flavor": "cubic"}],
    "kernel": {"emulation": "relay"},
    "output": {"sample_interval": "100ms", "pcap": ["r0->r1"]},
}
"""Two CUBIC flows through a 50 Mbit/s bottleneck that loses 0.1% on the wire, with an 8-packet
buffer (the queue drops, below HyStart's 4 ms) marking CE above 4 packets (the first flow is
ECN-capable)."""


def _run(raw: dict, out: Path, backend: str) -> Path:
    from ccarena.executor import run_experiment
    from ccarena.scenario import load_scenario

    run_experiment(load_scenario(raw), out, jobs=1, backends=[backend]).raise_for_failures()
    (run_dir,) = (out / "runs").iterdir()
    return run_dir


def _tshark(path: Path, *fields: str, where: str = "") -> list[list[str]]:
    """tshark's ``fields`` of every frame of ``path`` matching the display filter ``where``."""
    assert TSHARK is not None
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-T", "fields", "-E", "separator=;", *(["-Y", where] if where else []),
         *[a for f in fields for a in ("-e", f)]],
        check=True, capture_output=True, text=True, timeout=60).stdout
    return [line.split(";") for line in out.splitlines()]


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian package tshark)")
def test_the_relay_captures_what_the_kernel_runs_tables_say(tag: str, tmp_path: Path) -> None:
    run = _run(SCENARIO, tmp_path / "out", "kernel")
    record = json.loads((run / "run.json").read_text())
    (capture,) = record["pcap"]
    path = run / capture["file"]
    assert capture["link"] == "r0->r1" and capture["file"] == "pcap/r0_to_r1.pcap"
    assert path.stat().st_size == capture["bytes"]
    assert capture["packets_over_limit"] == 0 and capture["error"] is None
    link = pd.read_parquet(run / "links.parquet").set_index("name").loc["r0->r1"]
    flows = pd.read_parquet(run / "flows.parquet")
    departed = int(link.packets_in - link.packets_dropped_queue - link.packets_queued_end)
    every = [float(f[0]) for f in _tshark(path, "frame.time_epoch")]
    assert len(every) == capture["packets_written"]
    # The tables count from t0 to the end; the file also holds the handshakes before t0 (stamped
    # 0) and what the senders' buffers still held after the end: inside the run, the frames are
    # the link's departures, one for one.
    in_run = sum(0.0 < t <= DURATION_S for t in every)
    print(f"captured {len(every)} frames, {in_run} inside the run; the link departed {departed}")
    assert abs(in_run - departed) <= 2 + 0.002 * departed

    frames = _tshark(path, "frame.time_relative", "frame.time_epoch", "ip.len", "tcp.len", "ip.dsfield.ecn",
                     "tcp.analysis.retransmission", "tcp.analysis.fast_retransmission",
                     "tcp.analysis.out_of_order", "tcp.analysis.spurious_retransmission", where="tcp")
    epoch = [float(f[1]) for f in frames]
    data = [f for f in frames if int(f[3]) > 0]
    # Timestamps on the run's clock: the handshakes before t0 at 0, the data from t0 on, in order.
    assert epoch == sorted(epoch) and epoch[0] >= 0.0
    assert 0.0 <= float(data[0][1]) < 0.5 and float(data[-1][1]) < DURATION_S + 2.0
    # The model's serialization start: a frame starts no sooner than the one before it ends, and
    # while the queue is backlogged exactly then (1500 IP bytes at 50 Mbit/s: 240 µs).
    gaps = [(b - a, int(prev[2])) for a, b, prev in zip(epoch, epoch[1:], frames) if a > 0.0]
    assert all(gap >= ip_bytes * 8 / RATE_BPS - 2e-9 for gap, ip_bytes in gaps)
    back_to_back = sum(abs(gap - 240e-6) < 2e-9 for gap, ip_bytes in gaps if ip_bytes == 1500)
    assert back_to_back > 0.3 * len(data)
    # Data segments: what the flows sent (counted once their senders drained, as the file ends),
    # less what the queue dropped (before the capture point).
    sent = int(flows["packets_sent"].sum())
    expected = sent - int(link.packets_dropped_queue)
    print(f"tshark: {len(data)} data segments; flows sent {sent}, queue dropped "
          f"{int(link.packets_dropped_queue)}")
    assert abs(len(data) - expected) <= 0.01 * expected + 10
    # Retransmissions: one per segment the flows retransmitted, as tshark flags them (a segment
    # seen before, or filling a hole left by one the queue dropped), but those the queue dropped.
    flagged = sum(any(f[i] for i in (5, 6, 7, 8)) for f in data)
    retransmitted = int(flows["packets_retransmitted"].sum())
    print(f"tshark flags {flagged} retransmissions; the flows retransmitted {retransmitted}; "
          f"lost on the wire {int(link.packets_lost_wire)}, dropped by the queue "
          f"{int(link.packets_dropped_queue)}")
    assert link.packets_lost_wire > 0 and link.packets_dropped_queue > 0
    assert abs(flagged - retransmitted) <= 0.1 * retransmitted + 3
    # CE as sent: the queue's marks are on the frames (ECN-capable ones only).
    ce = sum(f[4] == "3" for f in frames)
    print(f"CE on {ce} frames; the queue marked {int(link.packets_marked)}")
    assert link.packets_marked > 0
    assert link.packets_marked - link.packets_queued_end - 5 <= ce <= link.packets_marked + 5


def test_the_udp_backends_file_stops_at_its_limit_and_the_run_warns(tag: str, tmp_path: Path) -> None:
    raw = {**SCENARIO, "duration": "2s", "flows": SCENARIO["flows"][:1],
           "output": {"pcap": ["r0->r1"], "pcap_max_bytes": "2KB"}}
    with pytest.warns(RuntimeWarning, match="pcap_max_bytes"):
        run = _run(raw, tmp_path / "out", "udp")
    (capture,) = json.loads((run / "run.json").read_text())["pcap"]
    assert (run / capture["file"]).stat().st_size == capture["bytes"] <= capture["max_bytes"] == 2000
    assert capture["packets_written"] > 0 and capture["packets_over_limit"] > 0
    link = pd.read_parquet(run / "links.parquet").set_index("name").loc["r0->r1"]
    departed = int(link.packets_in - link.packets_dropped_queue - link.packets_queued_end)
    total = capture["packets_written"] + capture["packets_over_limit"]
    print(f"udp: {capture['packets_written']} frames written, {capture['packets_over_limit']} over "
          f"the limit; the link departed {departed} in the run")
    assert departed <= total <= departed * 1.05 + 40


def test_a_link_off_the_relay_is_refused_in_one_line(tag: str) -> None:
    from ccarena.backends.kernel import backend as kernel_backend
    from ccarena.backends.kernel.capabilities import detect
    from ccarena.errors import UserError
    from kernelutil import spec_of

    caps = detect()
    if not caps.netns:
        pytest.skip("no network namespaces here")
    spec, _ = spec_of({**SCENARIO, "kernel": {"emulation": "tc"}})
    with pytest.raises(UserError) as caught:
        kernel_backend.check(spec, caps, mode="tc")
    assert str(caught.value) == ("output.pcap: 'r0->r1' runs on tc, and only the relay captures; "
                                 "fix: [kernel] emulation = \"relay\"")
