"""The results store on hostile file systems and under concurrent writers (issue 18, items 5–7):
a read-only, full or dangling ``--out`` gives one line and exit 2 and loses nothing; a full disk
mid-sweep keeps every finished run and the rerun after space is freed completes; two runs into one
``--out`` at once end with one complete experiment and a clear message from the other; symbolic
links inside the results tree are refused.

The file-system cases mount a small tmpfs, so they need root (as CI has)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from conftest import ccarena

SWEEP = """
name = "store"
duration = "2s"
seed = 5

[topology]
kind = "single_link"
link = { rate = "20Mbps", delay = "10ms", queue = { limit = "100pkt" } }

[[flows]]
from = "a"
to = "b"
flavor = "cubic"

[sweep]
"topology.link.loss" = ["0%", "0.1%", "0.2%", "0.5%", "1%", "2%"]
repeats = REPEATS

[output]
sample_interval = "100ms"
"""

requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


def sweep(repeats: int = 1) -> str:
    return SWEEP.replace("REPEATS", str(repeats))


def digest(root: Path) -> dict[str, str]:
    """Every stored file (not the lock's note of its holder) → its SHA-256."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.startswith(".lock")}


def complete_runs(root: Path) -> list[str]:
    runs = root / "runs"
    return sorted(d.name for d in runs.iterdir()) if runs.is_dir() else []


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert len(lines) == 1, done.stderr
    return lines[0]


@contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "ccarena-test", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@requires_root
def test_read_only_out_gives_one_line_and_keeps_what_is_stored(tmp_path: Path):
    (tmp_path / "s.toml").write_text(sweep())
    with tmpfs(tmp_path / "fs", "64m") as fs:
        out = fs / "out"
        first = ccarena("run", "s.toml", "--out", str(out), "-q", "--no-report", "-j", "1", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        before = digest(out)
        subprocess.run(["mount", "-o", "remount,ro", str(fs)], check=True)
        (tmp_path / "s.toml").write_text(sweep(2))  # new runs to write
        done = ccarena("run", "s.toml", "--out", str(out), "-q", "--no-report", "-j", "1", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "read-only" in one_line(done)
        assert digest(out) == before
        fresh = ccarena("run", "s.toml", "--out", str(fs / "new"), "-q", "--no-report", cwd=tmp_path)
        assert fresh.returncode == 2 and "read-only" in one_line(fresh)


@requires_root
def test_full_disk_mid_sweep_keeps_finished_runs_and_rerun_completes(tmp_path: Path):
    (tmp_path / "s.toml").write_text(sweep(4))  # 24 runs: more than the small tmpfs holds
    with tmpfs(tmp_path / "fs", "600k") as fs:
        out = fs / "out"
        done = ccarena("run", "s.toml", "--out", str(out), "-q", "--no-report", "-j", "1", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "no space left" in one_line(done)
        kept = complete_runs(out)
        assert 0 < len(kept) < 24, kept
        for run_id in kept:  # every run in runs/ is whole
            record = json.loads((out / "runs" / run_id / "run.json").read_text())
            assert record["status"] == "complete"
        before = {k: v for k, v in digest(out).items() if k.startswith("runs/")}
        subprocess.run(["mount", "-o", "remount,size=64m", str(fs)], check=True)
        rerun = ccarena("run", "s.toml", "--out", str(out), "-q", "--no-report", "-j", "1", cwd=tmp_path)
        assert rerun.returncode == 0, rerun.stderr
        assert len(complete_runs(out)) == 24
        after = digest(out)
        assert all(after[k] == v for k, v in before.items()), "a finished run was redone"


def test_dangling_symlink_out_gives_one_line(tmp_path: Path):
    (tmp_path / "s.toml").write_text(sweep())
    (tmp_path / "out").symlink_to(tmp_path / "nowhere")
    done = ccarena("run", "s.toml", "--out", "out", "-q", "--no-report", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "does not exist" in one_line(done)
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("link", ["runs", "run"])
def test_symlinks_inside_the_results_tree_are_refused(tmp_path: Path, link: str):
    (tmp_path / "s.toml").write_text(sweep())
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    first = ccarena("run", "s.toml", "--out", "out", "-q", "--no-report", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    elsewhere.mkdir()
    if link == "runs":
        (out / "runs").rename(elsewhere / "runs")
        (out / "runs").symlink_to(elsewhere / "runs")
    else:
        victim = complete_runs(out)[0]
        (out / "runs" / victim).rename(elsewhere / victim)
        (out / "runs" / victim).symlink_to(elsewhere / victim)
    before = digest(elsewhere)
    done = ccarena("run", "s.toml", "--out", "out", "-q", "--no-report", "--force", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "symbolic link" in one_line(done)
    assert digest(elsewhere) == before


def test_two_runs_into_one_out_at_once(tmp_path: Path):
    # Runs long enough (1 Gbps, 40 s: a second or more each) that the second command starts
    # while the first is still writing.
    text = sweep(1).replace('"20Mbps"', '"1Gbps"').replace('"2s"', '"40s"')
    (tmp_path / "s.toml").write_text(text.replace('["0%", "0.1%", "0.2%", "0.5%", "1%", "2%"]', '["0%", "0.0001%", "0.0002%"]')
                                     .replace("repeats = 1", "repeats = 3"))
    cmd = [sys.executable, "-m", "ccarena", "run", "s.toml", "--out", "out", "-q", "--no-report", "-j", "1"]
    first = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "out" / ".lock-owner.json").exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        second = ccarena(*cmd[3:], cwd=tmp_path)
        first_out, first_err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, first_err
    assert second.returncode == 2, second.stderr
    line = one_line(second)
    assert "another ccarena is writing" in line and f"pid {first.pid}" in line, line
    assert len(complete_runs(tmp_path / "out")) == 9
    assert not (tmp_path / "out" / "failed").exists()
