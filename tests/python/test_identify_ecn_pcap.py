"""``ccarena identify`` on a packet capture of an ECN flow: the simulator's own pcap of the sender's
host (``[output] pcap = ["left0"]``, both directions of its access link, merged by mergecap as a
tcpdump on the host would have written it) goes through ``ccarena import pcap``'s parser; the
ECN-Echo ACKs (RFC 3168 §6.1.3) in it tell identify that the bottleneck marks, and the window's
response to those marks (bytes in flight) tells DCTCP's proportional cut (RFC 8257 §3.3) from
Reno's halving (RFC 3168 §6.1.2)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import ccarena
from ccarena.identify import identify
from ccarena.identify.features import features
from ccarena.identify.path import estimate_path
from ccarena.identify.series import FlowSeries, load_series

MERGECAP = shutil.which("mergecap")
pytestmark = pytest.mark.skipif(MERGECAP is None, reason="mergecap is not installed (Debian "
                                "package wireshark-common, with tshark)")


def _senders_capture(flavor: str, out: Path) -> tuple[Path, pd.Series]:
    """``flavor`` with ECN alone through a 24 Mbit/s, 14 ms bottleneck whose 200-packet queue marks
    CE at K = 20 packets (a third of the BDP), 8 s, captured at the sender's host: the merged
    pcap and the run's own flow row (its ``ce_packets``, counted by the simulator)."""
    raw = {"name": f"ecn-pcap-{flavor}", "duration": "8s", "seed": 3,
           "topology": {"kind": "dumbbell", "pairs": 1,
                        "bottleneck": {"rate": "24Mbps", "delay": "14ms",
                                       "queue": {"limit": "200pkt", "ecn_threshold": "20pkt"}},
                        "access": {"rate": "1Gbps", "delay": "0.5ms"}},
           "flows": [{"from": "left0", "to": "right0", "flavor": flavor, "ecn": True}],
           "output": {"pcap": ["left0"]}}
    ccarena.run(raw, out, jobs=1)
    (run,) = (out / "runs").iterdir()
    merged = out / "sender.pcap"
    subprocess.run([MERGECAP, "-F", "pcap", "-w", str(merged),
                    *map(str, sorted((run / "pcap").glob("*.pcap")))], check=True, timeout=60)
    return merged, pd.read_parquet(run / "flows.parquet").iloc[0]


def _ecn_seen(series: FlowSeries, flow: pd.Series) -> None:
    """The queue marked (the run's count), and the capture at the sender shows it only as
    ECN-Echo ACKs: its data packets left before the bottleneck marked them."""
    assert flow["ce_packets"] > 100, flow["ce_packets"]
    assert series.ecn_echo_acks > 100 and series.ce_packets == 0, (series.ecn_echo_acks,
                                                                   series.ce_packets)


def test_dctcp_in_a_senders_pcap_is_named_by_its_ecn_response(tmp_path: Path) -> None:
    capture, flow = _senders_capture("dctcp", tmp_path / "dctcp")
    _ecn_seen(load_series(capture), flow)
    result = identify(capture)
    assert result.path.marks, result.path  # replayed on a marking queue, ECN negotiated
    assert result.path.threshold_packets == pytest.approx(20, abs=5)
    # DCTCP and Prague cut alike on a step-marking queue (both α/2); Reno's family halves.
    assert result.best in ("dctcp", "prague") and result.confident, (result.best, result.evidence)
    assert "reno" not in [result.best, *result.equivalent], result.equivalent
    assert result.features["mark_decrease_factor"] > 0.85, result.evidence
    assert "under ECN marks" in result.evidence


def test_reno_in_a_senders_pcap_halves_under_the_same_marks(tmp_path: Path) -> None:
    # The same route for a classic ECN flow: the feature DCTCP was told by reads Reno's halving
    # once per window of marks (features only: the full ranking is the test above's).
    capture, flow = _senders_capture("reno", tmp_path / "reno")
    series = load_series(capture)
    _ecn_seen(series, flow)
    path = estimate_path(series)
    assert path.marks
    assert features(series, path)["mark_decrease_factor"] == pytest.approx(0.5, abs=0.1)
