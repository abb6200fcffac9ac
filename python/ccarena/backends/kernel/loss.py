"""Random loss in tc mode (:mod:`ccarena.backends.kernel.emulation_choice`): an nftables rule in the receiving
node's namespace.

The rule sits on the netdev ``ingress`` hook of the interface a link's packets arrive on, so it
applies after the sender's queue (loss "on the wire", as in the simulator) whether the receiving
node is a host or a router. ``numgen random mod 1000000 < p·10⁶`` drops IPv4 packets with
probability ``p`` (resolution 10⁻⁶). ARP is not dropped (neighbours are static anyway).

In relay mode no rule is needed: the link emulator draws the loss itself, after its transmitter
(:mod:`ccarena.backends.kernel.relay_driver`).
"""

from __future__ import annotations

import json
import subprocess

from ccarena.errors import UserError

SCALE = 1_000_000
"""Loss probabilities are applied in units of 10⁻⁶."""


def nft_ruleset(table: str, loss_by_interface: dict[str, float]) -> str:
    """An nftables ruleset (``nft -f`` input) dropping IPv4 packets arriving on each interface
    with its probability.

    Args:
        table: the netdev table's name.
        loss_by_interface: interface name → loss probability in [0, 1].
    """
    lines = [f"table netdev {table} {{"]
    for ifname, p in sorted(loss_by_interface.items()):
        threshold = round(p * SCALE)
        lines += [f"  chain loss_{ifname} {{",
                  f'    type filter hook ingress device "{ifname}" priority 0;',
                  f"    meta protocol ip numgen random mod {SCALE} < {threshold} counter drop",
                  "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def install(namespace: str, loss_by_interface: dict[str, float]) -> None:
    """Load the loss rules into ``namespace`` (``nft`` as a subprocess: nftables has no netlink
    binding in pyroute2 that builds numgen expressions).

    Raises:
        UserError: nft rejected the rules (the one line says which namespace and why).
    """
    if not loss_by_interface:
        return
    done = subprocess.run(["ip", "netns", "exec", namespace, "nft", "-f", "-"],
                          input=nft_ruleset("ccarena", loss_by_interface), capture_output=True,
                          text=True, timeout=20)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["unknown error"])[0]
        raise UserError(f"random loss: nftables rejected the rule in {namespace}: {first}")


def read_drops(namespace: str) -> dict[str, int]:
    """Packets each loss rule of ``namespace`` dropped: interface name → count (``nft -j``)."""
    done = subprocess.run(["ip", "netns", "exec", namespace, "nft", "-j", "list", "table",
                           "netdev", "ccarena"], capture_output=True, text=True, timeout=20)
    if done.returncode != 0:
        return {}
    out: dict[str, int] = {}
    for item in json.loads(done.stdout).get("nftables", []):
        rule = item.get("rule")
        if not rule or not str(rule.get("chain", "")).startswith("loss_"):
            continue
        for expr in rule.get("expr", []):
            if "counter" in expr:
                out[rule["chain"][len("loss_"):]] = int(expr["counter"]["packets"])
    return out
