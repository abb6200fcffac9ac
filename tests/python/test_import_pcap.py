"""``ccarena import pcap`` (issue 34, item 2): a simulator's capture of a lossy two-flow run, taken
on the senders' links (both directions, four files merged by time), imports to the goodput,
retransmissions and RTT of the run's own tables; tshark's pcapng of it imports the same; report
and query read it; a truncated file is one line and exit 2. Hand-made captures (dpkt) check the
link types, IPv6, nanosecond timestamps, snap-length-cut headers and Karn's rule without TCP
timestamps, where the right answer is known exactly."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
from pathlib import Path

import dpkt
import pandas as pd
import pytest
from typer.testing import CliRunner

import ccarena
from ccarena.cli.typer_app import app
from ccarena.importers import pcap

TSHARK = shutil.which("tshark")

SCENARIO = {
    "name": "import-pcap", "duration": "4s", "seed": 3,
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "bottleneck": {"rate": "20Mbps", "delay": "10ms", "loss": "1%",
                                "queue": {"limit": "60pkt"}},
                 "access": {"rate": "1Gbps", "delay": "0.1ms"}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "reno"},
              {"from": "left1", "to": "right1", "flavor": "cubic"}],
    "output": {"sample_interval": "100ms", "pcap": ["left0", "left1"]},
}
"""Two flows losing 1% on the bottleneck's wire, captured on each sender's access link (the data
leaving it and the ACKs coming back: the sender's view, 0.1 ms from it)."""

GOODPUT_BAND = 0.03
"""Imported mean goodput (bytes ACKed at the sender / active time) vs the run's (bytes delivered
/ run time): the ACKs still in flight at the end, and the last ACK before the end of the run."""
RTT_BAND = 0.06
"""Imported mean RTT vs the run's: the capture of the ACKs is 0.1 ms before the sender, and a
sample covering retransmitted data comes from TCP timestamps, where the engine takes none."""


def cli(*args: object) -> tuple[int, str, str]:
    """`ccarena ARGS` in this process: (exit code, stdout, stderr)."""
    done = CliRunner().invoke(app, [str(a) for a in args])
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return done.exit_code, done.stdout, done.stderr


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario's one run directory (its pcap/ holds four files)."""
    out = tmp_path_factory.mktemp("sim") / "out"
    ccarena.run(SCENARIO, out, jobs=1, report=False)
    (run_dir,) = (out / "runs").iterdir()
    return run_dir


def captures(run_dir: Path) -> list[Path]:
    files = sorted((run_dir / "pcap").glob("*.pcap"))
    assert [f.name for f in files] == ["left0_to_r0.pcap", "left1_to_r0.pcap", "r0_to_left0.pcap",
                                       "r0_to_left1.pcap"]
    return files


def imported_flows(root: Path) -> pd.DataFrame:
    (run_dir,) = (root / "runs").iterdir()
    return pd.read_parquet(run_dir / "flows.parquet").set_index("flavor")


@pytest.fixture(scope="module")
def imported(sim_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("imp") / "hosts"
    code, out, err = cli("import", "pcap", "--merge", *captures(sim_run), "--flavor", "reno,cubic",
                         "-o", root)
    assert code == 0, err
    assert "4 pcap file(s) merged into one run" in out
    return root


def test_a_sender_capture_imports_to_the_runs_own_numbers(sim_run: Path, imported: Path) -> None:
    mine = imported_flows(imported)
    truth = pd.read_parquet(sim_run / "flows.parquet").set_index("flavor")
    for flavor in ("reno", "cubic"):
        got, want = mine.loc[flavor], truth.loc[flavor]
        # Every segment leaves through the captured link: bytes and retransmissions are exact.
        assert got.bytes_sent == want.bytes_sent and got.packets_sent == want.packets_sent
        assert got.packets_retransmitted == want.packets_retransmitted > 0
        assert got.goodput_mean_bps == pytest.approx(want.goodput_mean_bps, rel=GOODPUT_BAND)
        assert got.rtt_mean_s == pytest.approx(want.rtt_mean_s, rel=RTT_BAND)
        assert got.rtt_min_s == pytest.approx(want.rtt_min_s, rel=0.01)
    (run_dir,) = (imported / "runs").iterdir()
    samples = pd.read_parquet(run_dir / "samples.parquet")
    sim_samples = pd.read_parquet(sim_run / "samples.parquet")
    for flavor, flow in (("reno", 0), ("cubic", 1)):
        s = samples[samples["flow"] == flow]
        assert len(s) == 40 and s["time_s"].iloc[-1] == pytest.approx(4.0)
        # The ACKed bytes are goodput: summed over the samples, the flow's delivered bytes.
        assert (s["goodput_bps"] * 0.1 / 8).sum() == mine.loc[flavor, "bytes_delivered"]
        assert s["retransmits"].iloc[-1] == mine.loc[flavor, "packets_retransmitted"]
        # Bytes in flight as the cwnd estimate: near the engine's cwnd on average (the sender is
        # cwnd-limited but between an ACK and the segments it releases).
        sim_cwnd = sim_samples[sim_samples["name"] == flavor]["cwnd_bytes"].mean()
        assert s["cwnd_bytes"].mean() == pytest.approx(sim_cwnd, rel=0.15)
        assert s["srtt_s"].notna().all()


def test_report_and_query_read_the_import(imported: Path) -> None:
    code, out, err = cli("report", imported)
    assert code == 0, err
    assert "reno-49152" in out and "cubic-49153" in out
    code, out, err = cli("query", imported, "SELECT name, retransmits FROM samples WHERE time_s > 3.95 "
                                            "ORDER BY name", "--csv")
    assert code == 0, err
    assert out.splitlines()[1].startswith("cubic-49153,")


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian package tshark)")
def test_tsharks_pcapng_imports_the_same(sim_run: Path, imported: Path, tmp_path: Path) -> None:
    converted = []
    for f in captures(sim_run):
        target = tmp_path / (f.stem + ".pcapng")
        subprocess.run([TSHARK, "-r", f, "-w", target, "-F", "pcapng"], check=True,
                       capture_output=True, timeout=60)
        assert target.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"
        converted.append(target)
    code, _, err = cli("import", "pcap", "--merge", *converted, "--flavor", "reno,cubic",
                       "-o", tmp_path / "ng")
    assert code == 0, err
    pd.testing.assert_frame_equal(imported_flows(tmp_path / "ng").drop(columns="run_id"),
                                  imported_flows(imported).drop(columns="run_id"))


def test_a_truncated_or_foreign_file_is_one_line_and_exit_2(sim_run: Path, tmp_path: Path) -> None:
    whole = (sim_run / "pcap" / "left0_to_r0.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(whole[: len(whole) // 2 + 7])
    code, out, err = cli("import", "pcap", cut, "-o", tmp_path / "x")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert str(cut) in line and "truncated" in line
    text = tmp_path / "notes.pcap"
    text.write_text("not a capture\n")
    code, _, err = cli("import", "pcap", text, "-o", tmp_path / "y")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a pcap or pcapng" in err
    code, _, err = cli("import", "pcap", cut, "--interval", "0ms", "-o", tmp_path / "z")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--interval" in err


# Hand-made captures: a sender 10.0.0.1:40000 (or fd00::1) sends 20 segments of 1000 bytes,
# one a 2 ms (one segment per ms, so the pipe holds none but the first); the receiver ACKs each
# 30 ms after it was sent; segment 5 is lost and sent again at 60 ms, its ACK and those of the
# segments after it held until then (they are below the hole).
MSS, RTT_S, LOST = 1000, 0.030, 5


def _tcp(seq: int, ack: int, flags: int, payload: int, opts: bytes = b"") -> dpkt.tcp.TCP:
    t = dpkt.tcp.TCP(sport=40000, dport=5201, seq=seq, ack=ack, flags=flags, opts=opts)
    t.off = (20 + len(opts)) // 4
    t.data = b"\0" * payload
    return t


def _packets(v6: bool) -> list[tuple[float, dpkt.Packet]]:
    """(time, IP packet) of the transfer above; ACKs go from the receiver (ports reversed)."""
    family = socket.AF_INET6 if v6 else socket.AF_INET
    a = socket.inet_pton(family, "fd00::1" if v6 else "10.0.0.1")
    b = socket.inet_pton(family, "fd00::2" if v6 else "10.0.0.2")
    out = []
    sends = [(i * 0.002, i) for i in range(20)] + [(0.060, LOST)]
    hole_filled = 0.060 + RTT_S
    for t, i in sends:
        out.append((t, i, True))
        if i == LOST and t < 0.06:
            continue  # lost: never ACKed
        acked_at = t + RTT_S if i < LOST else max(t + RTT_S, hole_filled)
        out.append((acked_at, i, False))
    packets = []
    seen_ack = 0
    for t, i, data in sorted(out, key=lambda x: (x[0], not x[2])):
        if data:
            seg = _tcp(1000 + i * MSS, 1, dpkt.tcp.TH_ACK, MSS)
            src, dst = a, b
        else:
            seen_ack = max(seen_ack, 1000 + (i + 1 if i < LOST else 20) * MSS)
            seg = _tcp(1, seen_ack, dpkt.tcp.TH_ACK, 0)
            seg.sport, seg.dport = 5201, 40000
            src, dst = b, a
        if v6:
            ip: dpkt.Packet = dpkt.ip6.IP6(src=src, dst=dst, nxt=dpkt.ip.IP_PROTO_TCP, hlim=64,
                                           data=seg)
            ip.plen = len(seg)
        else:
            ce = i == 7 and data  # one CE-marked data segment (IPv4 only)
            ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_TCP, data=seg, tos=3 if ce else 0)
            ip.len = 20 + len(seg)
        packets.append((t, ip))
    return packets


def _write(path: Path, linktype: int, v6: bool, nano: bool, snap: int) -> Path:
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=snap, linktype=linktype, nano=nano)
        for t, ip in _packets(v6):
            raw = bytes(ip)
            if linktype == dpkt.pcap.DLT_EN10MB:
                frame = bytes(dpkt.ethernet.Ethernet(type=0x86DD if v6 else 0x0800, data=raw))
            elif linktype == dpkt.pcap.DLT_LINUX_SLL:
                frame = bytes(dpkt.sll.SLL(ethtype=0x86DD if v6 else 0x0800, data=raw))
            else:
                frame = raw
            # Cut at the snap length as tcpdump -s does: the IP length still says the size.
            w.writepkt(frame[:snap], 1_700_000_000 + t)
    return path


@pytest.mark.parametrize("linktype, v6, nano, snap", [
    (dpkt.pcap.DLT_EN10MB, False, False, 65535),
    (dpkt.pcap.DLT_LINUX_SLL, True, True, 96),
    (dpkt.pcap.DLT_RAW, False, True, 40),
])
def test_hand_made_captures_give_the_known_answer(tmp_path: Path, linktype: int, v6: bool, nano: bool,
                                                  snap: int) -> None:
    run = pcap.parse_files([_write(tmp_path / "t.pcap", linktype, v6, nano, snap)], 0.05)
    (flow,) = run.flows
    t = flow.totals
    assert (t["packets_sent"], t["packets_retransmitted"], t["bytes_sent"]) == (21, 1, 21 * MSS)
    assert t["bytes_delivered"] == 20 * MSS
    # Karn's rule: the ACKs of segments 0–4 give 30 ms; the one ACK that fills the hole covers
    # the retransmitted segment and gives none (no timestamps to tell which copy it acknowledges).
    assert t["rtt_samples"] == LOST and t["rtt_mean_s"] == pytest.approx(RTT_S, abs=1e-6)
    assert run.info["flows"][0]["ce_packets"] == (0 if v6 else 1)
    assert run.info["flows"][0]["sender"].endswith(":40000")
    assert [s["retransmits"] for s in flow.samples] == [0, 1]  # 0–50 ms, 50–100 ms
