"""The kernel backend through the command line: two flows on a dumbbell beside the simulator,
and stopping a run (SIGTERM; SIGKILL + ``doctor --cleanup``) leaves nothing behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
from kernelutil import (
    ccarena_env,
    leftovers,
    namespaces,
    processes,
    requires_root,
    run_cli,
)

pytestmark = requires_root

DUMBBELL = """
name = "pair"
duration = "6s"
[topology]
kind = "dumbbell"
pairs = 2
bottleneck = {{ rate = "20Mbps", delay = "10ms", queue = {{ limit = "100pkt" }} }}
access = {{ rate = "1Gbps", delay = "0.5ms" }}
[[flows]]
from = "left0"
to = "right0"
flavor = "cubic"
[[flows]]
from = "left1"
to = "right1"
flavor = "reno"
start = "1s"
{extra}
"""


def test_two_flows_on_a_dumbbell_fill_the_simulators_tables_and_the_report(tag: str, tmp_path: Path) -> None:
    scenario = tmp_path / "pair.toml"
    scenario.write_text(DUMBBELL.format(extra='[sweep]\n"flows[1].flavor" = ["reno", "bbr"]'))
    done = run_cli("run", str(scenario), "--backend", "sim,kernel", "--out", str(tmp_path / "out"),
                   "-q", cwd=tmp_path, timeout=150)
    assert done.returncode == 0, done.stderr
    runs = tmp_path / "out" / "runs"
    for point in ("flavor=reno_r0", "flavor=bbr_r0"):
        for table in ("flows", "samples", "queues", "links"):
            sim = pq.read_table(runs / point / f"{table}.parquet").to_pandas()
            kernel = pq.read_table(runs / f"{point}@kernel" / f"{table}.parquet").to_pandas()
            assert list(kernel.columns) == list(sim.columns), table
            assert len(kernel) == len(sim), table  # same flows, same sample instants, same links
        samples = pq.read_table(runs / f"{point}@kernel" / "samples.parquet").to_pandas()
        for column in ("goodput_bps", "cwnd_bytes", "srtt_s", "rto_s", "retransmits", "delivered_bytes"):
            assert samples[column].notna().all(), column
        flows = pq.read_table(runs / f"{point}@kernel" / "flows.parquet").to_pandas()
        assert (flows["goodput_mean_bps"] > 1e6).all()
        assert flows["bytes_delivered"].sum() * 8 / 6.0 <= 20e6 * 1448 / 1500  # the payload share of 20 Mbit/s
    summary = pd.read_parquet(tmp_path / "out" / "summary.parquet")
    assert set(summary["backend"]) == {"sim", "kernel"}
    report = (tmp_path / "out" / "report.html").read_text()
    assert "Simulator vs kernel, side by side" in report
    assert 'data-col="goodput_mean_bps_kernel"' in report
    assert "how late the link relay sent frames" in report


def _start_and_wait(tmp_path: Path, tag: str) -> subprocess.Popen:
    scenario = tmp_path / "long.toml"
    scenario.write_text(DUMBBELL.format(extra="").replace('duration = "6s"', 'duration = "60s"'))
    proc = subprocess.Popen([sys.executable, "-m", "ccarena", "run", str(scenario), "--backend", "kernel",
                             "--out", str(tmp_path / "out"), "-q"], cwd=tmp_path,
                            env=ccarena_env(CCARENA_RUN_TAG=tag), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # traffic is flowing once the generators run
        if len(processes(f"cca-{tag}")) >= 4:
            time.sleep(1.0)
            return proc
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the run did not start: {proc.communicate()[1]}")


def test_sigterm_stops_the_run_and_removes_everything(tag: str, tmp_path: Path) -> None:
    proc = _start_and_wait(tmp_path, tag)
    assert namespaces(f"cca-{tag}")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert leftovers(tag) == ([], []), err


def test_sigkill_then_doctor_cleanup_leaves_nothing(tag: str, tmp_path: Path) -> None:
    proc = _start_and_wait(tmp_path, tag)
    proc.kill()
    proc.communicate(timeout=10)
    time.sleep(0.5)
    assert namespaces(f"cca-{tag}"), "a SIGKILLed run leaves its namespaces (nothing could remove them)"
    assert processes(f"cca-{tag}") == [], "generators and relay die with ccarena (PDEATHSIG)"
    # Plain `doctor` names what is left and how to remove it (issue 18, item 8).
    report = run_cli("doctor", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "leftovers of killed runs" in report.stdout and "--cleanup" in report.stdout, report.stdout
    done = run_cli("doctor", "--cleanup", "--tag", tag, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "removed namespace" in done.stdout
    assert leftovers(tag) == ([], [])
