"""Shared helpers for the front-end tests: run the real CLI in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def ccarena(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m ccarena ARGS` in `cwd` and capture its output."""
    return subprocess.run([sys.executable, "-m", "ccarena", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def quickstart_text() -> str:
    return (EXAMPLES / "quickstart.toml").read_text()
