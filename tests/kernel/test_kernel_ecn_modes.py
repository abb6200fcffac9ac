"""``[kernel] ecn`` on this machine's kernel: the ``net.ipv4.tcp_ecn`` probe in a scratch
namespace, ``ccarena run`` refusing Accurate ECN in one line where the kernel lacks it (and an L4S
flavor the kernel lacks), ``ccarena doctor``'s ECN rows at 80 columns, and an ECN run under each
mode this kernel has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ccarena.backends.kernel.capabilities import detect
from ccarena.flavors import tcp_flavors
from kernelutil import ccarena_env, leftovers, requires_root, run_cli

pytestmark = requires_root

SCENARIO = """
name = "ecn"
duration = "2s"
backend = "kernel"
[topology]
kind = "single_link"
link = {{ rate = "10Mbps", delay = "5ms", queue = {{ limit = "20pkt", ecn_threshold = "5pkt" }} }}
[[flows]]
from = "a"
to = "b"
flavor = "{flavor}"
ecn = true
[kernel]
ecn = "{ecn}"
"""


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_the_probe_finds_classic_ecn_and_leaves_no_namespace(tag: str) -> None:
    caps = detect()
    assert caps.ecn is not None, caps.probe_error
    assert caps.ecn.classic  # every Linux since 2.4 takes tcp_ecn = 1
    assert set(caps.ecn.accepted) >= {0, 1, 2}
    assert leftovers(tag) == ([], [])


def test_accecn_on_a_kernel_without_it_is_refused_in_one_line(tag: str, tmp_path: Path) -> None:
    if detect().ecn.accecn:
        pytest.skip("this kernel negotiates Accurate ECN")
    (tmp_path / "s.toml").write_text(SCENARIO.format(flavor="cubic", ecn="accecn"))
    done = run_cli("run", "s.toml", "-q", cwd=tmp_path, env=ccarena_env(CCARENA_RUN_TAG=tag))
    assert done.returncode == 2, done.stderr
    line = _one_line(done.stderr)
    assert line.startswith('error: kernel.ecn: "accecn" needs a kernel that negotiates Accurate ECN')
    assert 'set kernel.ecn = "classic"' in line
    assert not (tmp_path / "results").exists()  # refused before anything was written


def test_off_with_an_ecn_flow_is_refused_in_one_line(tag: str, tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SCENARIO.format(flavor="cubic", ecn="off"))
    done = run_cli("run", "s.toml", "-q", cwd=tmp_path, env=ccarena_env(CCARENA_RUN_TAG=tag))
    assert done.returncode == 2, done.stderr
    assert _one_line(done.stderr).startswith('error: flows[0].ecn: kernel.ecn = "off"')


def test_an_l4s_flavor_the_kernel_lacks_is_refused_in_one_line(tag: str, tmp_path: Path) -> None:
    l4s = sorted(name for name, entry in tcp_flavors().items() if entry.get("l4s", False))
    missing = [name for name in l4s if name not in detect(probe_kernel=False).congestion_controls]
    if not missing:
        pytest.skip("the engine's catalogue has no L4S flavor this kernel lacks (rebuild the engine)")
    (tmp_path / "s.toml").write_text(SCENARIO.format(flavor=missing[0], ecn="classic"))
    done = run_cli("run", "s.toml", "-q", cwd=tmp_path, env=ccarena_env(CCARENA_RUN_TAG=tag))
    assert done.returncode == 2, done.stderr
    assert _one_line(done.stderr) == (f"error: flows[0].flavor: this kernel has no '{missing[0]}' (an L4S "
                                      "flavor: Linux's TCP Prague is out of tree); run it with "
                                      "--backend sim or --backend udp")


def test_doctor_reports_the_ecn_modes_at_80_columns(tag: str, tmp_path: Path) -> None:
    done = run_cli("doctor", cwd=tmp_path, env=ccarena_env(CCARENA_RUN_TAG=tag, COLUMNS="80"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    ecn = detect().ecn

    def status(item: str) -> str:
        row = next(line for line in lines if f"│ {item}" in line)
        return re.split(r"\s*│\s*", row)[2]

    assert status("ECN (RFC 3168)") == ("ok" if ecn.classic else "no")
    assert status("Accurate ECN (RFC 9768)") == ("ok" if ecn.accecn else "no")
    assert status("TCP Prague (L4S)") in ("ok", "no")


@pytest.mark.parametrize("mode", ["classic", "accecn"])
def test_an_ecn_flow_runs_and_is_marked_under_each_mode_the_kernel_has(mode: str, tag: str,
                                                                       tmp_path: Path) -> None:
    if mode == "accecn" and not detect().ecn.accecn:
        pytest.skip("this kernel does not negotiate Accurate ECN")
    import pandas as pd

    (tmp_path / "s.toml").write_text(SCENARIO.format(flavor="cubic", ecn=mode))
    done = run_cli("run", "s.toml", "-q", "--no-report", cwd=tmp_path,
                   env=ccarena_env(CCARENA_RUN_TAG=tag))
    assert done.returncode == 0, done.stderr
    links = pd.concat(pd.read_parquet(p) for p in (tmp_path / "results").rglob("links.parquet"))
    assert links["packets_marked"].sum() > 0  # the flow negotiated ECN: the step threshold marked it
