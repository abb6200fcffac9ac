"""``[output] pcap`` (issue 34, item 1, the simulator's part): a short lossy run with ECN marking
writes pcap files into its run directory that Debian's tshark reads, and what tshark reads agrees
with the run's own tables: one frame per packet that started serialization on the link, the CE
marks the queue made (``packets_marked``), sequence numbers up to what each flow sent, the
segments the wire lost seen again when retransmitted, SACK blocks that cover segments seen and lie
above the cumulative ACK. The kernel and udp backends capture with their relay
(tests/kernel/test_relay_pcap.py) and refuse, in one line, a link the relay does not emulate; a
host or a glob selects links as the README says."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

import ccarena
from ccarena.errors import UserError
from ccarena.experiment import expand
from ccarena.scenario import load_scenario

TSHARK = shutil.which("tshark")

SCENARIO = {
    "name": "pcap-test", "duration": "3s", "seed": 5,
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "bottleneck": {"rate": "10Mbps", "delay": "10ms", "loss": "1%",
                                "queue": {"limit": "50pkt", "ecn_threshold": "15pkt"}},
                 "access": {"rate": "1Gbps", "delay": "1ms"}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "dctcp"},
              {"from": "left1", "to": "right1", "flavor": "cubic"}],
    "output": {"sample_interval": "100ms", "pcap": ["r0->r1", "r1->r0"]},
}
"""Two flows over a bottleneck that loses 1% on the wire and marks CE above 15 packets: DCTCP's
segments are ECN-capable, CUBIC's not."""

MSS = 1448
FIRST_PORT = 49_152


def _tshark(path: Path, *fields: str) -> list[list[str]]:
    """tshark's ``fields`` of every frame of ``path`` (raw sequence numbers), one row a frame."""
    assert TSHARK is not None
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-o", "tcp.relative_sequence_numbers:FALSE", "-T", "fields",
         "-E", "separator=;", "-E", "aggregator=,", *[a for f in fields for a in ("-e", f)]],
        check=True, capture_output=True, text=True, timeout=120).stdout
    return [line.split(";") for line in out.splitlines()]


def _ints(cell: str) -> list[int]:
    return [int(v) for v in cell.split(",") if v]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario's one run directory."""
    out = tmp_path_factory.mktemp("pcap") / "out"
    ccarena.run(SCENARIO, out, jobs=1, report=False)
    (run_dir,) = (out / "runs").iterdir()
    return run_dir


def test_the_run_records_its_captures(run: Path) -> None:
    record = json.loads((run / "run.json").read_text())
    links = pd.read_parquet(run / "links.parquet").set_index("name")
    assert [c["link"] for c in record["pcap"]] == ["r0->r1", "r1->r0"]
    for c in record["pcap"]:
        path = run / c["file"]
        assert path.is_file() and path.stat().st_size == c["bytes"]
        assert c["packets_over_limit"] == 0 and c["error"] is None and c["max_bytes"] == 100_000_000
        link = links.loc[c["link"]]
        # One frame per packet that started serialization: offered, less what the queue dropped
        # or still held at the end.
        departed = link.packets_in - link.packets_dropped_queue - link.packets_queued_end - link.down_drops_packets
        assert c["packets_written"] == departed


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian package tshark; scripts/test.sh installs it)")
def test_tshark_reads_what_the_tables_say(run: Path) -> None:
    links = pd.read_parquet(run / "links.parquet").set_index("name")
    flows = pd.read_parquet(run / "flows.parquet").set_index("name")
    data = _tshark(run / "pcap" / "r0_to_r1.pcap", "frame.time_epoch", "ip.dsfield.ecn", "tcp.srcport",
                   "tcp.seq_raw", "tcp.len")
    bottleneck = links.loc["r0->r1"]
    assert len(data) == bottleneck.packets_in - bottleneck.packets_dropped_queue - bottleneck.packets_queued_end
    times = [float(r[0]) for r in data]
    assert times == sorted(times) and 0 <= times[0] and times[-1] <= 3.0
    # CE: every mark the queue made is on a frame, but those on packets still queued at the end.
    ce = sum(r[1] == "3" for r in data)
    assert bottleneck.packets_marked > 0
    assert bottleneck.packets_marked - bottleneck.packets_queued_end <= ce <= bottleneck.packets_marked
    assert ce >= flows.loc["dctcp", "ce_packets"]  # the receiver saw those that were not lost after
    # Not-ECT: all of CUBIC's segments; ECT(0) or CE: DCTCP's, but its retransmissions.
    by_port: dict[int, list[tuple[int, int, str]]] = {}
    for r in data:
        by_port.setdefault(int(r[2]), []).append((int(r[3]), int(r[4]), r[1]))
    assert all(e == "0" for _, _, e in by_port[FIRST_PORT + 1])
    assert sum(e != "0" for _, _, e in by_port[FIRST_PORT]) >= 0.95 * len(by_port[FIRST_PORT])
    repeats = 0
    for port, name in ((FIRST_PORT, "dctcp"), (FIRST_PORT + 1, "cubic")):
        segments = by_port[port]
        # Sequence numbers: byte offsets from 0 (ISN 0); the highest end is at most the new bytes
        # sent, and at least those delivered in order.
        new_bytes = flows.loc[name, "bytes_sent"] - flows.loc[name, "bytes_retransmitted"]
        top = max(seq + length for seq, length, _ in segments)
        assert flows.loc[name, "bytes_delivered"] <= top <= new_bytes
        assert all(length == MSS for _, length, _ in segments[:-1])
        repeats += sum(n - 1 for n in Counter(seq for seq, _, _ in segments).values())
    # A segment the wire lost after the capture point is captured again when retransmitted.
    assert bottleneck.packets_lost_wire > 0
    assert 0 < repeats <= flows["packets_retransmitted"].sum()

    acks = _tshark(run / "pcap" / "r1_to_r0.pcap", "tcp.dstport", "tcp.ack_raw", "tcp.options.sack_le",
                   "tcp.options.sack_re", "ip.dsfield.ecn")
    assert all(r[4] == "0" for r in acks), "ACKs are Not-ECT"
    with_sack = 0
    for port, name in ((FIRST_PORT, "dctcp"), (FIRST_PORT + 1, "cubic")):
        starts = {seq for seq, _, _ in by_port[port]}
        ends = {seq + length for seq, length, _ in by_port[port]}
        rows = [r for r in acks if int(r[0]) == port]
        top_ack = max(int(r[1]) for r in rows)
        assert top_ack <= flows.loc[name, "bytes_delivered"] and top_ack >= flows.loc[name, "bytes_delivered"] - 10 * MSS
        for r in rows:
            ack, left, right = int(r[1]), _ints(r[2]), _ints(r[3])
            assert len(left) == len(right) <= 3
            with_sack += bool(left)
            for le, re_ in zip(left, right):
                # A block covers whole segments seen on the bottleneck; one below the cumulative
                # ACK is a D-SACK (RFC 2883), else it lies above it (RFC 2018).
                assert le in starts and re_ in ends and le < re_
                assert re_ <= ack or le > ack
    assert with_sack > 0


def test_a_full_file_stops_and_the_run_counts_what_it_left_out(tmp_path: Path) -> None:
    raw = {**SCENARIO, "duration": "1s", "output": {"pcap": ["r0->r1"], "pcap_max_bytes": "4KB"}}
    ccarena.run(raw, tmp_path / "out", jobs=1, report=False)
    (run_dir,) = (tmp_path / "out" / "runs").iterdir()
    (capture,) = json.loads((run_dir / "run.json").read_text())["pcap"]
    size = (run_dir / capture["file"]).stat().st_size
    assert size == capture["bytes"] <= 4000 == capture["max_bytes"]
    assert capture["packets_written"] > 0 and capture["packets_over_limit"] > 0
    link = pd.read_parquet(run_dir / "links.parquet").set_index("name").loc["r0->r1"]
    departed = link.packets_in - link.packets_dropped_queue - link.packets_queued_end
    assert capture["packets_written"] + capture["packets_over_limit"] == departed


def test_a_host_or_a_glob_names_links() -> None:
    def captured(pcap: list[str]) -> list[str]:
        raw = {**SCENARIO, "output": {"pcap": pcap}}
        spec = expand(load_scenario(raw))[0].resolved.spec
        assert spec.pcap is not None
        return [spec.links[i].name for i in spec.pcap.links]

    assert captured(["left0"]) == ["left0->r0", "r0->left0"]
    assert captured(["r0-r1"]) == ["r0->r1", "r1->r0"]
    assert captured(["r1->right*"]) == ["r1->right0", "r1->right1"]
    assert sorted(captured(["*"])) == sorted(captured(["left*", "right*", "r0-r1"]))


def test_no_pcap_keeps_the_spec_unchanged() -> None:
    raw = {**SCENARIO, "output": {"sample_interval": "100ms"}}
    spec = expand(load_scenario(raw))[0].resolved.spec
    assert spec.pcap is None and "pcap" not in spec.to_dict()


def test_the_kernel_and_udp_backends_capture_only_links_on_the_relay() -> None:
    from ccarena.backends.kernel import preflight
    from ccarena.backends.kernel.emulation_choice import Emulation

    spec = expand(load_scenario(SCENARIO))[0].resolved.spec
    with pytest.raises(UserError) as caught:
        preflight.refuse_pcap(spec, Emulation("tc", "htb", "netem", "nft"))
    assert str(caught.value) == ("output.pcap: 'r0->r1' runs on tc, and only the relay captures; "
                                 "fix: [kernel] emulation = \"relay\"")
    preflight.refuse_pcap(spec, Emulation("relay", "relay", "relay", "relay"))  # the relay captures
