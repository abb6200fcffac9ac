"""Ctrl-C in a terminal (SIGINT to the whole process group) while a sweep runs on a process pool:
finished runs are kept whole, unfinished ones leave nothing, and a rerun does only the rest."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SWEEP = """
name = "pool-interrupt"
duration = "15s"
seed = 4

[topology]
kind = "single_link"
link = { rate = "1Gbps", delay = "10ms", queue = { limit = "2000pkt" } }

[[flows]]
from = "a"
to = "b"
flavor = "reno"

[sweep]
"topology.link.loss" = ["0%", "0.01%", "0.02%", "0.05%", "0.1%", "0.2%"]
repeats = 2
"""


def runs(root: Path) -> dict[str, str]:
    """run id → digest of every file of the run."""
    out = {}
    if (root / "runs").is_dir():
        for d in sorted((root / "runs").iterdir()):
            out[d.name] = hashlib.sha256(b"".join(f.read_bytes() for f in sorted(d.iterdir()))).hexdigest()
    return out


def test_group_sigint_on_a_pool_keeps_finished_runs(tmp_path):
    (tmp_path / "sweep.toml").write_text(SWEEP)
    cmd = [sys.executable, "-m", "ccarena", "run", "sweep.toml", "--out", "out", "-j", "2", "-q", "--no-report"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(runs(tmp_path / "out")) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    kept = runs(tmp_path / "out")
    assert 2 <= len(kept) < 12
    for run_id in kept:  # every directory under runs/ is whole
        names = {p.name for p in (tmp_path / "out" / "runs" / run_id).iterdir()}
        assert {"run.json", "flows.parquet", "samples.parquet", "queues.parquet", "links.parquet"} <= names
    assert not (tmp_path / "out" / ".tmp").exists() or not any((tmp_path / "out" / ".tmp").iterdir())

    rerun = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(kept)} of 12 runs were already complete" in rerun.stderr
    after = runs(tmp_path / "out")
    assert len(after) == 12
    assert all(after[k] == v for k, v in kept.items()), "a kept run was redone"
