"""Stopping a long single run: Ctrl-C is seen within about a second of wall time even deep inside one
long simulation, also when the process started with SIGINT ignored (as ``nohup … &`` starts it),
and SIGTERM stops it the same way with exit status 143 (issue 18, item 4)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

LONG_RUN = (Path(__file__).resolve().parents[1] / "data" / "long-run.toml").read_text()

STOP_WITHIN_S = 1.0
"""How soon after the signal the run must have stopped (the chunks aim at 0.1 s of wall time)."""
ATTEMPTS = 3
"""The hypervisor steals CPU in bursts: a slow attempt is retried before it counts."""


def _stop_once(tmp_path: Path, sig: int, ignore_sigint: bool) -> tuple[int, float, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG_RUN)
    preexec = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None
    proc = subprocess.Popen([sys.executable, "-m", "ccarena", "run", str(scenario), "--out",
                             str(tmp_path / "out"), "-j", "1", "-q", "--no-report"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=preexec)
    try:
        # Wait until the engine is running (the run's staging directory exists), then a bit more.
        deadline = time.monotonic() + 60
        while not any((tmp_path / "out").rglob("*.json")) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        time.sleep(1.5)
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
        return proc.returncode, time.monotonic() - sent, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("sig, ignore_sigint, status", [
    (signal.SIGINT, False, 130),
    (signal.SIGINT, True, 130),
    (signal.SIGTERM, False, 143),
], ids=["ctrl-c", "ctrl-c-under-nohup", "sigterm"])
def test_a_long_single_run_stops_promptly(tmp_path: Path, sig: int, ignore_sigint: bool, status: int):
    took = []
    for attempt in range(ATTEMPTS):
        code, seconds, stderr = _stop_once(tmp_path / str(attempt), sig, ignore_sigint)
        assert code == status, stderr
        assert "Traceback" not in stderr
        took.append(seconds)
        if seconds <= STOP_WITHIN_S:
            return
    pytest.fail(f"stopped {min(took):.2f} s after the signal at best (attempts: {took}); "
                f"must be within {STOP_WITHIN_S} s")
