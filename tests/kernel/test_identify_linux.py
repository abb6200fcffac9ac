"""``ccarena identify`` names a fresh kernel-backend run of Linux's CUBIC (10 s, 40 Mbit/s,
30 ms base RTT, a 1 BDP buffer; a path none of the fixtures of tests/data/identify/ uses)."""

from __future__ import annotations

import json
from pathlib import Path

from kernelutil import requires_root, run_cli

pytestmark = requires_root

SCENARIO = """
name = "identify-cubic"
duration = "10s"
seed = 3
[topology]
kind = "single_link"
link = { rate = "40Mbps", delay = "15ms", queue = { limit = "100pkt" } }
[[flows]]
from = "a"
to = "b"
flavor = "cubic"
[output]
sample_interval = "10ms"
"""


def test_a_fresh_kernel_cubic_run_is_identified_as_cubic(tag: str, tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    done = run_cli("run", str(scenario), "--backend", "kernel", "--out", str(out), "-q",
                   "--no-report", cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    done = run_cli("identify", str(out), "--flow", "0", "--json", cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["best"] == "cubic", answer["evidence"]
