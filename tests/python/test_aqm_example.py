"""examples/aqm.toml shows what the AQMs are for: under CUBIC and BBR load, the sparse probe's RTT
stays near the base RTT plus the AQM's target with CoDel, FQ-CoDel and PIE, and near the full
1000-packet buffer's delay with DropTail (a 20 s version of the example)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import ccarena

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aqm.toml"


def test_aqms_keep_the_probe_rtt_low_under_load(tmp_path: Path) -> None:
    raw = tomllib.loads(EXAMPLE.read_text())
    raw["duration"] = "20s"
    result = ccarena.run(raw, tmp_path / "aqm", jobs=2)
    summary = result.summary
    probe = summary[summary["name"] == "probe"].set_index("topology.bottleneck.queue.discipline")
    base_rtt_s = float(probe["base_rtt_s"].iloc[0])
    rtt = probe["rtt_mean_s"]
    print(rtt.to_dict(), base_rtt_s)
    # 1000 packets at 20 Mbit/s is 600 ms of buffer: DropTail's standing queue fills most of it.
    assert rtt["droptail"] > base_rtt_s + 0.2
    for aqm in ("codel", "fq_codel", "pie"):
        # CoDel's 5 ms / PIE's 15 ms target, plus the bursts the control law lets through.
        assert rtt[aqm] < base_rtt_s + 0.04, aqm
        assert rtt[aqm] < rtt["droptail"] / 4, aqm
    # The bulk flows still fill the link.
    bulk = summary[summary["name"] != "probe"].groupby("topology.bottleneck.queue.discipline")
    assert (bulk["goodput_mean_bps"].sum() > 0.85 * 20e6 * 1448 / 1500).all()
