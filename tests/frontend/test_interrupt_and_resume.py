"""Ctrl-C mid-sweep keeps every finished run, leaves no half-written run directory, and a rerun
completes the rest without redoing what was kept."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

SWEEP = """
name = "interrupt-me"
duration = "15s"
seed = 3

[topology]
kind = "single_link"
link = { rate = "1Gbps", delay = "10ms", loss = "0%", queue = { limit = "2000pkt" } }

[[flows]]
from = "a"
to = "b"
flavor = "cubic"

[sweep]
"topology.link.loss" = ["0%", "0.01%", "0.02%", "0.05%", "0.1%", "0.2%"]
repeats = 2

[output]
sample_interval = "100ms"
"""

RUN_FILES = ("run.json", "flows.parquet", "samples.parquet", "queues.parquet")


def complete_runs(root: Path) -> dict[str, str]:
    """run id -> digest of its files, for every run directory whose run.json says complete."""
    out = {}
    runs = root / "runs"
    if not runs.is_dir():
        return out
    for d in sorted(runs.iterdir()):
        meta = d / "run.json"
        if meta.is_file() and json.loads(meta.read_text()).get("status") == "complete":
            out[d.name] = hashlib.sha256(b"".join((d / f).read_bytes() for f in RUN_FILES)).hexdigest()
    return out


def test_sigint_keeps_finished_runs_and_rerun_completes_the_rest(tmp_path):
    scenario = tmp_path / "sweep.toml"
    scenario.write_text(SWEEP)
    root = tmp_path / "out"
    cmd = [sys.executable, "-m", "ccarena", "run", str(scenario), "--out", str(root), "-j", "1", "-q", "--no-report"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(complete_runs(root)) < 2:
            assert proc.poll() is None, f"finished before it could be interrupted: {proc.communicate()}"
            assert time.monotonic() < deadline, "no run finished in time"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    kept = complete_runs(root)
    assert 2 <= len(kept) < 12, kept
    # Nothing half-written: every directory under runs/ is a complete run.
    assert sorted(p.name for p in (root / "runs").iterdir()) == sorted(kept)
    for run_id in kept:
        for f in RUN_FILES:
            assert (root / "runs" / run_id / f).is_file()

    rerun = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    after = complete_runs(root)
    assert len(after) == 12
    for run_id, digest in kept.items():
        assert after[run_id] == digest, f"run {run_id} was redone"
    assert (root / "summary.parquet").is_file()
