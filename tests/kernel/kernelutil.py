"""Helpers of the kernel backend's tests: they need root (CI has it) and clean up after
themselves by their own names.

Every test gets a unique run tag (``$CCARENA_RUN_TAG``), so everything it creates is named
``cca-<tag>…``; the ``tag`` fixture's finalizer asserts that no namespace and no process of that
tag is left — after a normal end, an error, a SIGTERM, or a SIGKILL followed by ``ccarena doctor
--cleanup``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ccarena.runspec import RunSpec

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"


def _privileged() -> bool:
    try:
        from ccarena.backends.kernel.capabilities import is_privileged

        return is_privileged()
    except Exception:
        return os.geteuid() == 0


requires_root = pytest.mark.skipif(not _privileged(), reason="the kernel backend needs root (CI runs as root)")
"""Mark (``pytestmark = requires_root``) of every kernel test module."""


def namespaces(prefix: str) -> list[str]:
    """Namespaces whose name starts with ``prefix``."""
    run = Path("/run/netns")
    return sorted(p.name for p in run.iterdir() if p.name.startswith(prefix)) if run.is_dir() else []


def processes(mark: str) -> list[str]:
    """Command lines of processes (not this one) that contain ``mark``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if mark in cmd:
            out.append(f"{entry.name}: {cmd[:120]}")
    return out


def leftovers(tag: str) -> tuple[list[str], list[str]]:
    """(namespaces, processes) of runs tagged ``tag``."""
    return namespaces(f"cca-{tag}"), processes(f"cca-{tag}")


def ccarena_env(**extra: str) -> dict[str, str]:
    """The environment for a ``python -m ccarena`` subprocess (this checkout first on the path)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PYTHON_DIR) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120,
            prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    """``python -m ccarena ARGS`` (optionally under ``prefix``, e.g. setpriv), captured."""
    return subprocess.run([*(prefix or []), sys.executable, "-m", "ccarena", *args], cwd=cwd,
                          env=env or ccarena_env(), capture_output=True, text=True, timeout=timeout)


def spec_of(raw: dict) -> tuple[RunSpec, dict]:
    """(resolved spec, derived facts) of a scenario dict, as a kernel run gets them."""
    from ccarena.experiment import apply_backends, expand
    from ccarena.scenario import load_scenario

    plan = apply_backends(expand(load_scenario(raw))[:1], ["kernel"])[0]
    return plan.resolved.spec, plan.resolved.derived
