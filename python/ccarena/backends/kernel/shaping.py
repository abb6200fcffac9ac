"""A link's rate and queue limit by htb (``[kernel] emulation = "tc"``), and the queue's statistics.

Each directed link ``u → v`` of the spec becomes an ``htb`` root on the wire namespace's
interface facing ``v`` with one class (``rate = ceil = rate_bps``) and a ``pfifo limit N``
(packets) or ``bfifo limit B`` (bytes) leaf: the DropTail queue of the simulator. A size table
(``stab overhead -14``) makes htb count IP packet sizes, not Ethernet frames, so the rate means
what it means in the simulator (a 1500-byte IP packet takes 1500·8/rate seconds). The bucket
(``burst``/``cburst``) holds :data:`BURST_S` of the rate, at least two full-size packets: with a
backlog htb arms a timer for every packet, and a timer that fires late can then still send what
the elapsed time allows instead of losing it (iproute2's default bucket is one packet).

Setup runs ``tc -batch`` once per namespace (one fork for all its qdiscs: ``tc`` is the reference
syntax for htb/stab; pyroute2's htb support does not cover size tables). Sampling reads the
qdiscs over netlink with pyroute2 (~0.3 ms per namespace, against a fork of ``tc`` per link).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from ccarena.errors import UserError

HTB_HANDLE = 0x10000  # 1:
ETH_HEADER_BYTES = 14
BURST_S = 250e-6
"""How much of the rate the token bucket holds, s."""
MIN_BURST_BYTES = 2 * 1514


@dataclass(frozen=True)
class Shaper:
    """The egress shaping of one directed link.

    Attributes:
        link: the link's index in the spec.
        namespace: where the interface is.
        ifname: the egress interface.
        rate_bps: shaped rate (IP bytes).
        limit_packets, limit_bytes: the DropTail limit (exactly one is set).
    """

    link: int
    namespace: str
    ifname: str
    rate_bps: int
    limit_packets: int | None
    limit_bytes: int | None

    def tc_lines(self) -> list[str]:
        """The ``tc -batch`` lines that install it."""
        leaf = f"pfifo limit {self.limit_packets}" if self.limit_packets is not None \
            else f"bfifo limit {self.limit_bytes}"
        dev = self.ifname
        burst = max(MIN_BURST_BYTES, int(self.rate_bps * BURST_S / 8))
        return [
            f"qdisc add dev {dev} root handle 1: stab overhead -{ETH_HEADER_BYTES} mtu 2048 "
            f"tsize 512 htb default 1",
            f"class add dev {dev} parent 1: classid 1:1 htb rate {self.rate_bps}bit "
            f"ceil {self.rate_bps}bit burst {burst} cburst {burst} quantum 1514",
            f"qdisc add dev {dev} parent 1:1 handle 10: {leaf}",
        ]


def install(namespace: str, shapers: list[Shaper]) -> None:
    """Install every shaper of ``namespace`` with one ``tc -batch``.

    Raises:
        UserError: tc rejected a line (the message names the interface and tc's reason).
    """
    lines = [line for s in shapers for line in s.tc_lines()]
    if not lines:
        return
    done = subprocess.run(["tc", "-n", namespace, "-batch", "-"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["unknown error"])[0]
        raise UserError(f"link shaping in {namespace}: tc failed: {first}")


@dataclass
class QueueReading:
    """Cumulative counters of one link's queue at one instant (packets and IP bytes).

    ``sojourn_total_ns`` (time spent waiting, summed over departed packets), ``lost_wire``
    (packets lost on the wire), ``busy_ns`` (time the link spent serializing), ``duplicated`` and
    ``reordered`` (departed packets the wire sent twice or held back) come only from the relay;
    None from htb.
    """

    backlog_bytes: int
    backlog_packets: int
    drops: int
    departures: int
    departed_bytes: int
    sojourn_total_ns: int | None = None
    lost_wire: int | None = None
    busy_ns: int | None = None
    duplicated: int | None = None
    reordered: int | None = None

    @property
    def arrivals(self) -> int:
        """Packets that reached the queue: departed + dropped + waiting."""
        return self.departures + self.drops + self.backlog_packets


def read_root_qdiscs(ipr: Any) -> dict[int, QueueReading]:
    """The htb root qdisc of every interface in ``ipr``'s namespace: ifindex → reading.

    Args:
        ipr: a pyroute2 ``NetNS``/``IPRoute`` bound to the namespace.
    """
    out: dict[int, QueueReading] = {}
    for msg in ipr.get_qdiscs():
        if msg.get("TCA_KIND") != "htb" or msg["handle"] != HTB_HANDLE:
            continue
        stats = msg.get("TCA_STATS2")
        if stats is None:
            continue
        queue = stats.get("TCA_STATS_QUEUE") or {}
        basic = stats.get("TCA_STATS_BASIC") or {}
        out[msg["index"]] = QueueReading(
            backlog_bytes=int(queue.get("backlog", 0)), backlog_packets=int(queue.get("qlen", 0)),
            drops=int(queue.get("drops", 0)), departures=int(basic.get("packets", 0)),
            departed_bytes=int(basic.get("bytes", 0)))
    return out
