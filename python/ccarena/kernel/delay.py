"""Propagation delay: netem when the kernel has it, else ccarena's relay.

- **netem**: ``netem delay D limit L`` on the sending node's end of the link (``l<k>`` in its
  namespace); the queue (rate limiter) is a different hop, in the wire namespace. netem orphans
  the packets it holds, so TCP Small Queues does not throttle the sender. The limit holds at least
  2·BDP of full-size packets (≥ 1000).
- **ccarena's relay** (otherwise): one process (``python3 -m ccarena.kernel.relay CONFIG STATS``
  in the wire namespace; AF_PACKET on ``l<k>a`` and ``l<k>b``, one queue per direction) serves
  every delayed link of the run. Its frames leave through the wire interface's qdisc, the link's
  queue. When stopped it writes how late it sent each frame against its deadline: the emulation's
  own error, stored with the run.

Random loss is not drawn here: :mod:`ccarena.kernel.loss` drops on the receiving node's ingress,
after the queue, as the simulator loses packets after serialization.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccarena.errors import UserError
from ccarena.kernel.names import RunNames
from ccarena.kernel.netns import NetworkPlan

READY_TIMEOUT_S = 20.0


def pipes(plan: NetworkPlan, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The relay's pipe list: one per relayed physical link, with each direction's delay (the
    relay config's ``pipes``; loss is left to :mod:`ccarena.kernel.loss`)."""
    out = []
    for phys in plan.links:
        if not phys.relayed:
            continue
        fwd = spec["links"][phys.forward]
        rev = spec["links"][phys.reverse] if phys.reverse is not None else {"delay_ns": 0, "loss": 0.0}
        out.append({"name": fwd["name"], "a": RunNames.wire_if(phys.k, "a"),
                    "b": RunNames.wire_if(phys.k, "b"),
                    "a_to_b": {"delay_ns": int(fwd["delay_ns"]), "loss": 0.0},
                    "b_to_a": {"delay_ns": int(rev["delay_ns"]), "loss": 0.0}})
    return out


def netem_lines(plan: NetworkPlan, spec: dict[str, Any]) -> dict[str, list[str]]:
    """Namespace → ``tc -batch`` lines adding netem delay on each delayed link's sending end."""
    out: dict[str, list[str]] = {}
    for i, link in enumerate(spec["links"]):
        if link["delay_ns"] <= 0:
            continue
        ns, ifname = plan.sender_egress(i)
        bdp_packets = link["rate_bps"] * link["delay_ns"] / 1e9 / 8 / 1500
        limit = max(1000, int(2 * bdp_packets) + 1)
        out.setdefault(ns, []).append(f"qdisc add dev {ifname} root netem "
                                      f"delay {int(link['delay_ns']) // 1000}us limit {limit}")
    return out


def install_netem(plan: NetworkPlan, spec: dict[str, Any]) -> None:
    """Add the netem delays (``tc -batch``, one fork per namespace).

    Raises:
        UserError: tc failed.
    """
    for ns, lines in netem_lines(plan, spec).items():
        done = subprocess.run(["tc", "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n",
                              capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["unknown error"])[0]
            raise UserError(f"netem delay in {ns}: tc failed: {first}")


@dataclass
class Relay:
    """A running relay process (see the module doc).

    Attributes:
        proc: the process (``ip netns exec`` has exec'd into the relay: same pid).
        config_path, stats_path: its files.
    """

    proc: subprocess.Popen
    config_path: Path
    stats_path: Path
    pipes: list[dict[str, Any]] = field(default_factory=list)

    def stop(self, timeout_s: float = 10.0) -> dict[str, Any] | None:
        """SIGTERM the relay, wait for it, and return its stats (None if it wrote none)."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        try:
            return json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return None

    def kill(self) -> None:
        """SIGKILL the relay if it still runs (cleanup after an error)."""
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass


def start_relay(plan: NetworkPlan, spec: dict[str, Any], workdir: Path) -> Relay:
    """Start one relay process for every relayed link of the run and wait for ``ready``.

    Raises:
        UserError: the relay exited or did not become ready (its stderr's last line is shown).
    """
    config = {"pipes": pipes(plan, spec), "seed": int(spec["seed"]), "duration_ns": None,
              "max_queue_frames": 100_000}
    config_path = workdir / f"{plan.names.prefix}relay.json"
    stats_path = workdir / f"{plan.names.prefix}relay-stats.json"
    config_path.write_text(json.dumps(config))
    stderr_path = workdir / "relay.stderr"
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", plan.names.wire_ns, sys.executable, "-m", "ccarena.kernel.relay",
             str(config_path), str(stats_path)],
            stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True,
            env=dict(os.environ))
    relay = Relay(proc=proc, config_path=config_path, stats_path=stats_path, pipes=config["pipes"])
    deadline = time.monotonic() + READY_TIMEOUT_S
    import select

    assert proc.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if ready:
            line = proc.stdout.readline()
            if line.strip() == "ready":
                return relay
            if line == "":  # EOF: the relay exited
                break
        elif proc.poll() is not None:
            break
    relay.kill()
    last = (stderr_path.read_text().strip().splitlines() or ["no output"])[-1]
    raise UserError(f"the delay relay did not start in {plan.names.wire_ns}: {last}")
