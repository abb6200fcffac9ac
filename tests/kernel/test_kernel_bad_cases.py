"""What the kernel cannot do fails before anything starts, with one clear line, and leaves
nothing behind."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from ccarena.backends.kernel import flow_processes
from ccarena.backends.kernel.backend import run_kernel
from ccarena.backends.kernel.capabilities import available_congestion_controls
from ccarena.errors import UserError
from kernelutil import ccarena_env, leftovers, requires_root, run_cli, spec_of

pytestmark = requires_root

SCENARIO = """
name = "bad"
duration = "3s"
backend = "kernel"
[topology]
kind = "single_link"
link = {{ rate = "10Mbps", delay = "0ms" }}
[[flows]]
from = "a"
to = "b"
flavor = "{flavor}"
"""


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def _missing_flavor() -> str:
    for name in ("vegas", "htcp", "westwood", "illinois", "veno"):
        if name not in available_congestion_controls():
            return name
    pytest.skip("this kernel has every candidate flavor")


def test_a_flavor_the_kernel_lacks(tag: str, tmp_path: Path) -> None:
    flavor = _missing_flavor()
    (tmp_path / "s.toml").write_text(SCENARIO.format(flavor=flavor))
    done = run_cli("run", "s.toml", "-q", cwd=tmp_path, env=ccarena_env(CCARENA_RUN_TAG=tag))
    assert done.returncode == 2
    available = " ".join(available_congestion_controls())
    assert _one_line(done.stderr) == (f"error: flows[0].flavor: flavor '{flavor}' is not available in "
                                      f"this kernel (available: {available}); use --backend sim")
    assert not (tmp_path / "results").exists()  # failed before anything was written


def test_not_root(tag: str, tmp_path: Path) -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop capabilities")
    (tmp_path / "s.toml").write_text(SCENARIO.format(flavor="cubic"))
    done = run_cli("run", "s.toml", "-q", cwd=tmp_path, env=ccarena_env(CCARENA_RUN_TAG=tag),
                   prefix=[setpriv, "--inh-caps=-all", "--bounding-set=-net_admin,-sys_admin", "--"])
    assert done.returncode == 2
    assert _one_line(done.stderr) == "error: the kernel backend needs root (or CAP_NET_ADMIN)"


def test_a_missing_program(tag: str, tmp_path: Path) -> None:
    # A PATH with everything the backend runs except ethtool (iperf3 is not needed at all: the
    # traffic generator is ccarena's own).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ip", "tc", "nft", "sh", "cat"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    (tmp_path / "s.toml").write_text(SCENARIO.format(flavor="cubic"))
    done = run_cli("run", "s.toml", "-q", cwd=tmp_path,
                   env=ccarena_env(CCARENA_RUN_TAG=tag, PATH=str(bin_dir)))
    assert done.returncode == 2
    assert _one_line(done.stderr).startswith("error: the kernel backend needs `ethtool`, which is not "
                                             "on PATH (install it: apt-get install ethtool)")


def test_a_port_in_use(tag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two flows to one host given the same port: the second receiver cannot bind.
    monkeypatch.setattr(flow_processes, "port_for", lambda flow: 5201)
    spec, _ = spec_of({"name": "port", "duration": "3s",
                       "topology": {"kind": "single_link", "link": {"rate": "10Mbps", "delay": "0ms"}},
                       "flows": [{"from": "a", "to": "b", "flavor": "cubic"},
                                 {"from": "a", "to": "b", "flavor": "reno"}]})
    with pytest.raises(UserError) as err:
        run_kernel(spec)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("flow 'reno': its receiver in cca-") and message.endswith(
        "failed: port 5201 on 10.0.0.2 is in use")
    assert leftovers(tag) == ([], [])


def test_events_need_the_relay_emulation(tag: str, tmp_path: Path) -> None:
    scenario = SCENARIO.format(flavor="cubic") + (
        '[kernel]\nemulation = "tc"\n[[events]]\nat = "1s"\nlink = "link"\nset = { rate = "5Mbps" }\n')
    (tmp_path / "s.toml").write_text(scenario)
    done = run_cli("run", "s.toml", "-q", cwd=tmp_path, env=ccarena_env(CCARENA_RUN_TAG=tag))
    assert done.returncode == 2
    assert _one_line(done.stderr) == ("error: events: scheduled link changes on the kernel backend need "
                                      "the relay's link emulation; set kernel.emulation = \"relay\" "
                                      "(or use --backend sim)")
    assert not (tmp_path / "results").exists()
