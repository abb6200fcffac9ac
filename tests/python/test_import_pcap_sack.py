"""``ccarena import pcap`` with SACK blocks and with data both ways (issue 34, the import's
remaining items): a simulator capture of a lossy, reordering run with Linux-style recovery
(SACK, D-SACK from the receiver) imports to the run's own retransmissions, duplicate bytes (the
D-SACKed ones), recovery episodes, losses and RTT; a hand-made capture with one lost segment,
SACK blocks and one D-SACKed retransmission gives the answer known exactly; a hand-made
connection carrying data both ways gives two flows, each with its own bytes and ACKs, while a
37-byte request the other way (iperf3's cookie) gives none; a ``.cap`` file names the
experiment without its suffix."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import dpkt
import pandas as pd
import pytest
from typer.testing import CliRunner

import ccarena
from ccarena.cli.typer_app import app
from ccarena.importers import pcap

SCENARIO = {
    "name": "import-pcap-sack", "duration": "4s", "seed": 3,
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "bottleneck": {"rate": "20Mbps", "delay": "10ms", "loss": "1%", "reorder": "5%",
                                "reorder_delay": "8ms", "queue": {"limit": "60pkt"}},
                 "access": {"rate": "1Gbps", "delay": "0.1ms"}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "reno", "recovery": "linux"},
              {"from": "left1", "to": "right1", "flavor": "cubic", "recovery": "linux"}],
    "output": {"sample_interval": "100ms", "pcap": ["left0", "left1"]},
}
"""Loss and reordering on the bottleneck's wire (5% of packets held back 8 ms: some fast
retransmissions are spurious, and the receiver's D-SACK says so), captured at each sender."""

RTT_BAND = 0.03
"""Imported mean RTT vs the engine's: the ACKs are captured 0.1 ms before the sender, and an ACK
covering retransmitted data gives a TCP-timestamp sample here where the engine takes none."""
RTT_SAMPLES_BAND = 0.05
"""Imported RTT samples vs the engine's: those timestamp samples are the only extra ones."""


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sack") / "out"
    ccarena.run(SCENARIO, out, jobs=1, report=False)
    (run_dir,) = (out / "runs").iterdir()
    return run_dir


def test_sack_blocks_give_the_runs_losses_duplicates_and_recoveries(sim_run: Path) -> None:
    run = pcap.parse_files(sorted((sim_run / "pcap").glob("*.pcap")), 0.1, "reno,cubic")
    truth = pd.read_parquet(sim_run / "flows.parquet").set_index("flavor")
    at_end = pd.read_parquet(sim_run / "samples.parquet").query("abs(time_s - 4.0) < 1e-6")
    for flow, info in zip(run.flows, run.info["flows"]):
        got, want = flow.totals, truth.loc[flow.flavor]
        print(f"{flow.flavor}: retransmitted {got['packets_retransmitted']} vs "
              f"{want.packets_retransmitted}, duplicate bytes {got['duplicate_bytes_received']} vs "
              f"{want.duplicate_bytes_received}, recoveries {got['fast_recoveries']} vs "
              f"{want.fast_recoveries}, lost {got['packets_lost']} vs {want.packets_lost}, RTT "
              f"{got['rtt_mean_s'] * 1e3:.3f} vs {want.rtt_mean_s * 1e3:.3f} ms, samples "
              f"{got['rtt_samples']} vs {want.rtt_samples}; {info}")
        assert got["packets_retransmitted"] == want.packets_retransmitted
        # Each spurious retransmission arrives twice and the receiver D-SACKs it once: the
        # D-SACKed bytes are the receiver's duplicate bytes, exactly.
        assert got["duplicate_bytes_received"] == want.duplicate_bytes_received > 0
        assert info["retransmitted_spurious_bytes"] == want.duplicate_bytes_received
        assert (info["retransmitted_for_reported_holes"] + info["retransmitted_unreported"]
                == got["packets_retransmitted"])
        assert got["fast_recoveries"] == pytest.approx(want.fast_recoveries, abs=1)
        # The engine counts the packets still on the wire at the end as lost (sent − received);
        # the capture counts the losses SACK reported: between the two.
        flying = at_end[at_end["name"] == want["name"]]["inflight_bytes"].iloc[0] / 1448
        assert want.packets_lost - flying <= got["packets_lost"] <= want.packets_lost
        assert got["packets_lost"] < got["packets_retransmitted"]  # the spurious ones left out
        assert got["rtt_mean_s"] == pytest.approx(want.rtt_mean_s, rel=RTT_BAND)
        assert want.rtt_samples <= got["rtt_samples"] <= want.rtt_samples * (1 + RTT_SAMPLES_BAND)
        assert info["sacked_bytes"] > 0


# Hand-made captures (raw IPv4, no timestamps): 10.0.0.1 sends, 10.0.0.2 acknowledges.
MSS = 1000
A, B = socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2")


def _segment(t: float, src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int,
             payload: int, sack: tuple[tuple[int, int], ...] = ()) -> tuple[float, bytes]:
    opts = b""
    if sack:
        opts = b"\x01\x01" + bytes([5, 2 + 8 * len(sack)]) + b"".join(
            struct.pack(">II", left, right) for left, right in sack)
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=dpkt.tcp.TH_ACK, opts=opts)
    tcp.off = (20 + len(opts)) // 4
    tcp.data = b"\0" * payload
    ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_TCP, data=tcp)
    ip.len = 20 + len(tcp)
    return t, bytes(ip)


def _write(path: Path, packets: list[tuple[float, bytes]]) -> Path:
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_RAW)
        for t, raw in sorted(packets, key=lambda p: p[0]):
            w.writepkt(raw, 1_700_000_000 + t)
    return path


def test_a_hand_made_sack_recovery_gives_the_known_answer(tmp_path: Path) -> None:
    # Ten segments one per ms, each ACKed 30 ms after it was sent; segment 3 is lost, so the
    # ACKs of 4–9 carry SACK blocks; it is sent again at 40 ms (a reported hole) and ACKed at
    # 70 ms; segment 5, already SACKed, is sent again at 45 ms (spurious), which the receiver
    # D-SACKs at 75 ms (a first block below the cumulative ACK).
    seq0, lost = 1, 3
    out = [_segment(i * 0.001, A, B, 40000, 5201, seq0 + i * MSS, 1, MSS) for i in range(10)]
    out.append(_segment(0.040, A, B, 40000, 5201, seq0 + lost * MSS, 1, MSS))
    out.append(_segment(0.045, A, B, 40000, 5201, seq0 + 5 * MSS, 1, MSS))
    hole = seq0 + lost * MSS
    for i in range(10):
        if i < lost:
            out.append(_segment(0.030 + i * 0.001, B, A, 5201, 40000, 1, seq0 + (i + 1) * MSS, 0))
        elif i > lost:
            sack = ((hole + MSS, seq0 + (i + 1) * MSS),)
            out.append(_segment(0.030 + i * 0.001, B, A, 5201, 40000, 1, hole, 0, sack))
    end = seq0 + 10 * MSS
    out.append(_segment(0.070, B, A, 5201, 40000, 1, end, 0))
    out.append(_segment(0.075, B, A, 5201, 40000, 1, end, 0,
                        ((seq0 + 5 * MSS, seq0 + 6 * MSS),)))
    run = pcap.parse_files([_write(tmp_path / "sack.pcap", out)], 0.05)
    (flow,) = run.flows
    (info,) = run.info["flows"]
    t = flow.totals
    assert (t["packets_sent"], t["packets_retransmitted"], t["bytes_delivered"]) == (12, 2, 10 * MSS)
    assert info["sacked_bytes"] == 6 * MSS and info["sack_acks"] == 7
    assert (info["retransmitted_for_reported_holes"], info["retransmitted_spurious"],
            info["retransmitted_unreported"]) == (1, 1, 0)
    assert info["dsack_blocks"] == 1 and t["duplicate_bytes_received"] == MSS
    assert t["packets_lost"] == 1 and t["fast_recoveries"] == 1
    # RTT: the ACKs of 0–2 (cumulative) and of 4–9 (newly SACKed, never retransmitted) give
    # 30 ms each; the one filling the hole covers retransmitted data and gives none (Karn).
    assert t["rtt_samples"] == 9 and t["rtt_mean_s"] == pytest.approx(0.030, abs=1e-6)


def _bidirectional() -> list[tuple[float, bytes]]:
    """Connection 1: 10.0.0.1:40000 sends 30 segments of 1000 B (one every 2 ms) while
    10.0.0.2:5201 sends 30 of 500 B (one every 2 ms, 1 ms later); each side's packets ACK what
    the other sent 20 ms or more before, and a last pure ACK each way at 0.1 s ACKs the rest.
    Connection 2: 10.0.0.1:40001 sends a 37-byte request, 10.0.0.2:5202 answers with 15 segments
    of 1000 B, each ACKed 20 ms later."""
    a_seg, b_seg = 1000, 500
    a_sent = [0.002 * i for i in range(30)]
    b_sent = [0.001 + 0.002 * j for j in range(30)]

    def acked(times: list[float], t: float, size: int) -> int:
        return 1 + size * sum(1 for s in times if s <= t - 0.020 + 1e-9)

    out = []
    for i, t in enumerate(a_sent):
        out.append(_segment(t, A, B, 40000, 5201, 1 + i * a_seg, acked(b_sent, t, b_seg), a_seg))
    for j, t in enumerate(b_sent):
        out.append(_segment(t, B, A, 5201, 40000, 1 + j * b_seg, acked(a_sent, t, a_seg), b_seg))
    out.append(_segment(0.1, A, B, 40000, 5201, 1 + 30 * a_seg, 1 + 30 * b_seg, 0))
    out.append(_segment(0.1, B, A, 5201, 40000, 1 + 30 * b_seg, 1 + 30 * a_seg, 0))
    out.append(_segment(0.0105, A, B, 40001, 5202, 1, 1, 37))
    for k in range(15):
        t = 0.011 + 0.002 * k
        out.append(_segment(t, B, A, 5202, 40001, 1 + k * MSS, 38, MSS))
        out.append(_segment(t + 0.020, A, B, 40001, 5202, 38, 1 + (k + 1) * MSS, 0))
    return out


def test_data_both_ways_gives_a_flow_each_way(tmp_path: Path) -> None:
    run = pcap.parse_files([_write(tmp_path / "bidir.pcap", _bidirectional())], 0.05)
    flows = {f.name: f for f in run.flows}
    assert list(flows) == ["tcp-40000", "tcp-5201", "tcp-5202"]  # no flow of the 37-byte request
    for name, packets, size in (("tcp-40000", 30, 1000), ("tcp-5201", 30, 500), ("tcp-5202", 15, 1000)):
        t = flows[name].totals
        assert (t["packets_sent"], t["bytes_sent"], t["bytes_delivered"]) == (packets, packets * size,
                                                                             packets * size)
        assert t["packets_retransmitted"] == 0
        # Each direction's RTT from its own ACK stream: 20 ms, up to one send spacing more.
        assert 0.020 - 1e-6 <= t["rtt_min_s"] and t["rtt_mean_s"] <= 0.022 + 1e-6
    senders = [f["sender"] for f in run.info["flows"]]
    assert senders == ["10.0.0.1:40000", "10.0.0.2:5201", "10.0.0.2:5202"]


def test_a_cap_file_names_the_experiment_without_its_suffix(tmp_path: Path) -> None:
    capture = _write(tmp_path / "both-ways.cap", _bidirectional())
    done = CliRunner().invoke(app, ["import", "pcap", str(capture), "--results", str(tmp_path / "r")])
    assert done.exit_code == 0, done.stderr
    assert (tmp_path / "r" / "both-ways" / "experiment.json").is_file()
    (run_dir,) = (tmp_path / "r" / "both-ways" / "runs").iterdir()
    assert run_dir.name.startswith("both-ways-")
    flows = pd.read_parquet(run_dir / "flows.parquet")
    assert flows["name"].tolist() == ["tcp-40000", "tcp-5201", "tcp-5202"]
