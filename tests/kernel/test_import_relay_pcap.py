"""``ccarena import pcap`` on a kernel-backend capture (issue 34 item 2, "what must be shown"): the
relay's capture of the two senders' access links (both directions, four files merged by time) of a
lossy Linux CUBIC and Reno run imports to the run's own tables (TCP_INFO at the senders, bytes
delivered at the receivers) within stated bands:

- bytes sent by the run's end (the import's sample at 4 s vs TCP_INFO's ``bytes_sent``): every
  segment leaves through the captured link; the capture also holds what the senders sent after
  the run's end until they were stopped, which the sample at 4 s leaves out (``SENT_BAND``);
- bytes delivered by the run's end (cumulatively ACKed at the sender vs read by the receiving
  application: the last RTT's data is read but not yet ACKed at the sender; ``DELIVERED_BAND``);
- retransmitted segments within ``RETRANS_BAND`` (measured: equal, 38 and 70; sent by 4 s equal
  or 0.1 % apart, delivered 0.2 % apart, RTT floors 0.46 ms apart);
- mean RTT within ``RTT_BAND`` (data/ACK matching at the sender's link vs the kernel's srtt
  samples, which Linux smooths) and the RTT floor within 1 ms (the ACK is captured where it starts
  its last link, 0.1 ms before the sender reads it).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from ccarena.cli.typer_app import app
from kernelutil import requires_root
from typer.testing import CliRunner

pytestmark = requires_root

SCENARIO = {
    "name": "relay-import", "duration": "4s", "seed": 2,
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "bottleneck": {"rate": "20Mbps", "delay": "10ms", "loss": "1%",
                                "queue": {"limit": "40pkt"}},
                 "access": {"rate": "100Mbps", "delay": "0.1ms"}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "cubic"},
              {"from": "left1", "to": "right1", "flavor": "reno"}],
    "kernel": {"emulation": "relay"},
    "output": {"sample_interval": "100ms", "pcap": ["left0", "left1"]},
}
SENT_BAND = 0.02
DELIVERED_BAND = 0.02
RETRANS_BAND = 0.15
RTT_BAND = 0.15


def test_a_relay_capture_imports_to_the_kernel_runs_own_numbers(tag: str, tmp_path: Path) -> None:
    from ccarena.executor import run_experiment
    from ccarena.scenario import load_scenario

    run_experiment(load_scenario(SCENARIO), tmp_path / "out", jobs=1, backends=["kernel"]).raise_for_failures()
    (run,) = (tmp_path / "out" / "runs").iterdir()
    files = sorted((run / "pcap").glob("*.pcap"))
    assert len(files) == 4
    done = CliRunner().invoke(app, ["import", "pcap", "--merge", *map(str, files), "--flavor", "cubic,reno",
                                    "-o", str(tmp_path / "imp")])
    assert done.exit_code == 0, done.stderr
    (imp,) = (tmp_path / "imp" / "runs").iterdir()
    got = pd.read_parquet(imp / "flows.parquet").set_index("flavor")
    want = pd.read_parquet(run / "flows.parquet").set_index("flavor")
    at_end = pd.read_parquet(imp / "samples.parquet").query("abs(time_s - 4.0) < 1e-6").set_index("flow")
    run_end = pd.read_parquet(run / "samples.parquet").query("abs(time_s - 4.0) < 1e-6").set_index("flow")
    failures = []
    for i, flavor in enumerate(("cubic", "reno")):
        g, w = got.loc[flavor], want.loc[flavor]
        sent, delivered = at_end.loc[i, "sent_bytes"], at_end.loc[i, "delivered_bytes"]
        print(f"{flavor}: sent by 4 s {sent:.0f} vs {w.bytes_sent:.0f} B, delivered by 4 s {delivered:.0f} vs "
              f"{run_end.loc[i, 'delivered_bytes']:.0f} B, retransmitted {g.packets_retransmitted} vs "
              f"{w.packets_retransmitted}, RTT mean {g.rtt_mean_s * 1e3:.2f} vs {w.rtt_mean_s * 1e3:.2f} ms, "
              f"min {g.rtt_min_s * 1e3:.2f} vs {w.rtt_min_s * 1e3:.2f} ms")
        checks = [("bytes sent", sent, w.bytes_sent, SENT_BAND),
                  ("bytes delivered", delivered, run_end.loc[i, "delivered_bytes"], DELIVERED_BAND),
                  ("retransmissions", g.packets_retransmitted, w.packets_retransmitted, RETRANS_BAND),
                  ("mean RTT", g.rtt_mean_s, w.rtt_mean_s, RTT_BAND)]
        for what, a, b, band in checks:
            if a != pytest.approx(b, rel=band, abs=2 if what == "retransmissions" else 0):
                failures.append(f"{flavor} {what}: imported {a} vs run {b} (band {band:.0%})")
        if abs(g.rtt_min_s - w.rtt_min_s) > 0.001:
            failures.append(f"{flavor} RTT floor {g.rtt_min_s} vs {w.rtt_min_s}")
        if not w.packets_retransmitted > 0:
            failures.append(f"{flavor}: the run lost nothing; the test needs losses")
    assert not failures, failures
