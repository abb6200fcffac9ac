"""What a person sees in the terminal (issue 17): the summary at 80 columns shows whole headings
and values, ``--wide`` every column, ``--json`` numbers for scripts; every validation problem is
listed with its hint; ``--version`` names the package, engine and revision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIO = """
name = "terminal"
duration = "3s"
[topology]
kind = "single_link"
link = { rate = "20Mbps", delay = "10ms", loss = "0%", queue = { limit = "100pkt" } }
[[flows]]
from = "a"
to = "b"
flavor = "cubic"
[[flows]]
name = "second-reno-flow"
from = "a"
to = "b"
flavor = "reno"
[sweep]
"topology.link.loss" = ["0%", "1%"]
repeats = 2
"""


def ccarena(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "ccarena", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("terminal")
    scenario = root / "terminal.toml"
    scenario.write_text(SCENARIO)
    done = ccarena("run", str(scenario), "-o", str(root / "out"), "-q", "--no-report")
    assert done.returncode == 0, done.stderr
    return root / "out", done.stdout


def test_the_summary_fits_80_columns_with_whole_headings_and_values(experiment):
    _, stdout = experiment
    lines = stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, stdout
    assert "…" not in stdout  # nothing truncated by rich
    header = next(line for line in lines if "goodput" in line)
    for heading in ("link.loss", "flow", "flavor", "goodput", "loss"):
        assert heading in header.split(), header
    assert "second-reno-flow" in stdout
    # Swept loss headed by its short name, values with their CI in one unit.
    assert "Mbps" in stdout and "±" in stdout
    assert "--wide shows them" in stdout


def test_wide_shows_every_column_and_json_every_number(experiment):
    root, narrow = experiment
    wide = ccarena("report", str(root), "--wide")
    assert wide.returncode == 0, wide.stderr
    header = next(line for line in wide.stdout.splitlines() if "goodput" in line).split()
    assert "delivered" in header and "stability" in header
    assert "delivered" not in next(line for line in narrow.splitlines() if "goodput" in line)
    assert "…" not in wide.stdout
    as_json = ccarena("report", str(root), "--json")
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)
    assert len(rows) == 2 * 2 * 2  # points × repeats × flows
    assert {"run_id", "flavor", "goodput_mean_bps", "loss_rate"} <= set(rows[0])
    assert "report:" in as_json.stderr


def test_every_validation_problem_is_listed_with_its_hint(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nduration = "1s"\n[topology]\nkind = "dumbbell"\nrate = "1Mbps"\n'
                   '[[flows]]\nflavr = "cubic"\n')
    done = ccarena("validate", str(bad))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) >= 3 and all(line.startswith("error: ") for line in lines), done.stderr
    text = done.stderr
    assert "topology.rate: unknown field" in text
    assert "flows[0].flavr: unknown field (did you mean 'flavor'?)" in text
    assert "topology.bottleneck: is required" in text
    assert "more problem" not in text


def test_version_names_package_engine_and_revision():
    done = ccarena("--version")
    assert done.returncode == 0
    import ccarena as package

    assert done.stdout.startswith(f"ccarena {package.__version__} (engine ")
    assert ", git " in done.stdout
