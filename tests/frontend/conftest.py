"""Shared helpers for the front-end tests: run the real CLI in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

TWO_PARTS = """
[[parts]]
name = "pair"
description = "CUBIC and Reno."

[[parts]]
name = "sweep"
description = "Reno alone over loss."
flows = [{ from = "left0", to = "right0", flavor = "reno" }]
sweep = { "topology.bottleneck.loss" = ["0%", "1%"], repeats = 2 }
"""
"""Two parts to append to the quickstart: its CUBIC-vs-Reno pair, and Reno alone over a 2-point
loss sweep of 2 repeats (the report tests that build parts in worker processes)."""


def ccarena(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m ccarena ARGS` in `cwd` and capture its output."""
    return subprocess.run([sys.executable, "-m", "ccarena", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def quickstart_text() -> str:
    return (EXAMPLES / "quickstart.toml").read_text()
