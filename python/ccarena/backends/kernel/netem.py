"""Propagation delay by netem, when the kernel has it (``[kernel] emulation = "tc"``).

``netem delay D limit L`` on the sending node's end of each delayed link (``l<k>`` in its
namespace); the link's queue (htb, :mod:`ccarena.backends.kernel.shaping`) is a different hop, in the wire
namespace. netem orphans the packets it holds, so TCP Small Queues does not throttle the sender.
The limit holds at least 2·BDP of full-size packets (≥ 1000).
"""

from __future__ import annotations

import subprocess

from ccarena.backends.kernel.netns import NetworkPlan
from ccarena.errors import UserError
from ccarena.runspec import RunSpec


def netem_lines(plan: NetworkPlan, spec: RunSpec) -> dict[str, list[str]]:
    """Namespace → ``tc -batch`` lines adding netem delay on each delayed link's sending end."""
    out: dict[str, list[str]] = {}
    for i, link in enumerate(spec.links):
        if link.delay_ns <= 0:
            continue
        ns, ifname = plan.sender_egress(i)
        bdp_packets = link.rate_bps * link.delay_ns / 1e9 / 8 / 1500
        limit = max(1000, int(2 * bdp_packets) + 1)
        out.setdefault(ns, []).append(f"qdisc add dev {ifname} root netem "
                                      f"delay {int(link.delay_ns) // 1000}us limit {limit}")
    return out


def install_netem(plan: NetworkPlan, spec: RunSpec) -> None:
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
