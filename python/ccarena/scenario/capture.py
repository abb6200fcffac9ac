"""``[output] pcap``: which links a run captures to pcap files.

Each entry names links by their name (``"r0->r1"``, one direction), their duplex pair
(``"r0-r1"``, both directions) or a host (``"left0"``: its access links, both directions, as a
tcpdump on the host's interface would see), with shell-style globs (``"r0->*"``, ``"left*"``).
The simulator writes one file per link direction (docs/engine-spec.md, "Packet capture").
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from ccarena.errors import FieldError, FieldErrors
from ccarena.topology.network import Network

def select_capture_links(net: Network, patterns: list[str]) -> list[int]:
    """The indices of the links ``patterns`` name, in the network's link order, each once.

    Raises:
        FieldError, FieldErrors: (field ``output.pcap[i]``) an entry that names nothing; the
            message says what would.
    """
    hosts = {n.name for n in net.nodes if n.kind == "host"}
    chosen: set[int] = set()
    problems: list[FieldError] = []
    for i, pattern in enumerate(patterns):
        matched = {j for j, link in enumerate(net.links)
                   if fnmatchcase(link.name, pattern) or fnmatchcase(link.physical, pattern)
                   or (link.src in hosts and fnmatchcase(link.src, pattern))
                   or (link.dst in hosts and fnmatchcase(link.dst, pattern))}
        if not matched:
            problems.append(FieldError(f"output.pcap[{i}]", _nothing_matches(net, pattern, hosts)))
        chosen |= matched
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise FieldErrors(problems)
    return sorted(chosen)


def _nothing_matches(net: Network, pattern: str, hosts: set[str]) -> str:
    """The message for an entry that names no link: what would."""
    examples = [net.links[0].name, net.links[0].physical] if net.links else []
    host = next((n.name for n in net.nodes if n.name in hosts), None)
    if host is not None:
        examples.append(host)
    shown = ", ".join(f"'{e}'" for e in examples)
    return (f"'{pattern}' names no link or host of this topology; give a link direction, a duplex "
            f"pair or a host (its access links), globs allowed, e.g. {shown}")
