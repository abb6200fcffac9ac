"""The front end's architecture, checked: the import contracts in pyproject.toml (layers from the
CLI down the data flow, backends that see only the run spec, no circles) hold for the installed
source, and the package tree shows the data flow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ccarena

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(ccarena.__file__).parent


def test_import_contracts_hold() -> None:
    # lint-imports reads the package from sys.path: point it at the source tree under test.
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent))
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                               "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, "
                               "no_logo=True))"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "3 kept, 0 broken" in report, report


def test_the_tree_shows_the_data_flow() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert {"scenario", "experiment", "backends", "executor", "store", "analysis", "report",
            "topology"} <= packages
    assert (PACKAGE / "runspec.py").is_file()
    assert {p.stem for p in (PACKAGE / "backends").iterdir()} >= {"sim", "kernel"}
