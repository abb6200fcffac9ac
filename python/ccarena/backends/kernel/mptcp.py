"""Linux Multipath TCP (RFC 8684) on the kernel backend: what a spec may ask of it, and the
in-kernel path manager's set-up in each host namespace.

Linux's in-kernel path manager opens at most one subflow per (local endpoint, remote address)
pair, and only from the side that connected (the client). So an MPTCP flow with ``subflows = N``
gets N − 1 extra addresses on its sending host, each an MPTCP endpoint with the ``subflow`` flag:
with the connection's own address that makes N subflows, each with its own source address and
port. The routers hash multipath routes on the 5-tuple (``fib_multipath_hash_policy = 1``,
:mod:`ccarena.backends.kernel.netns`), so each subflow picks its equal-cost path independently of
the others, as the simulator's subflows do (two may still hash onto the same path, as in the
simulator and in Raiciu et al., SIGCOMM 2011, §2).

The extra addresses are ``/32`` addresses in 172.16.0.0/12 (never used by the link addressing,
10.0.0.0/10): host ``h``'s ``j``-th is ``172.16.0.0 + 32·h + j`` (``j`` = 1 … N − 1). Every
node that routes to the host's own address gets the same (multipath) route to them, from the
spec's next-hop sets (:func:`ccarena.backends.kernel.routes.next_hop_sets`): the return path of
each subflow is then hashed like its forward path. ``ip mptcp limits set subflows N−1
add_addr_accepted N−1`` on the sender and ``subflows`` = the largest N − 1 of the flows it
receives on the receiver (the receiver accepts MP_JOINs up to its limit; it announces nothing).

What Linux lacks is refused before the run (:func:`check_flows`, one line each): a coupled
``coupling`` (no LIA, OLIA or BALIA upstream: each subflow runs its own controller, which is
``coupling = "uncoupled"``), ``scheduler = "roundrobin"`` unless ``net.mptcp.available_schedulers``
lists it (``"minrtt"`` is Linux's ``default`` scheduler: lowest-RTT subflow with room in its
window first), a nonzero ``join_delay`` (the path manager joins as soon as the connection is
fully established), ``opportunistic = true`` (upstream Linux has no opportunistic
retransmission or penalisation; only the out-of-tree multipath-tcp.org kernel had them),
``source_ports`` (the in-kernel path manager binds each subflow it opens to an ephemeral port;
an endpoint takes a ``port`` only with the ``signal`` flag, to announce a listening port), more subflows than the path manager allows (``MPTCP_PM_ADDR_MAX`` = 8 extra
subflows: ``subflows`` ≤ 9), and one host sending MPTCP flows of different ``subflows`` (endpoints
are per namespace, so every MPTCP connection from a host opens the same subflows).
"""

from __future__ import annotations

import ipaddress
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ccarena.backends.kernel.names import RunNames
from ccarena.errors import UserError
from ccarena.runspec import RunSpec

KERNEL_MAX_SUBFLOWS = 9
"""Subflows per connection Linux's in-kernel path manager allows: the initial one and
``MPTCP_PM_ADDR_MAX`` = 8 more (``ip mptcp limits set subflows 9`` is refused: "limit greater than
maximum (8)")."""

LINUX_SCHEDULER = {"minrtt": "default"}
"""The spec's MPTCP scheduler → Linux's ``net.mptcp.scheduler`` (its ``default`` picks the
lowest-RTT subflow with room in its window: net/mptcp/protocol.c, mptcp_subflow_get_send)."""

EXTRA_BASE = int(ipaddress.IPv4Address("172.16.0.0"))
EXTRA_PER_HOST = 32
"""Extra sender addresses live in 172.16.0.0/12: 32 per host (``subflows`` ≤ 32 in the spec)."""

MPTCP_SYSCTL = Path("/proc/sys/net/mptcp")


def coupled_refusal(i: int, coupling: str) -> str:
    """The one line that refuses a coupled ``coupling`` on flow ``i`` (no coupled MPTCP
    congestion control in Linux upstream)."""
    return (f"flows[{i}].coupling: Linux has no coupled MPTCP congestion control upstream "
            f"({coupling} is not in the kernel); use coupling = \"uncoupled\" on the kernel "
            f"backend, or run {coupling} on the simulator (--backend sim)")


def available_schedulers() -> list[str]:
    """``net.mptcp.available_schedulers`` of this kernel (``["default"]`` when the kernel
    predates pluggable schedulers: it has only the default one)."""
    try:
        return (MPTCP_SYSCTL / "available_schedulers").read_text().split()
    except OSError:
        return ["default"]


def check_flows(spec: RunSpec, mptcp_enabled: bool | None,
                schedulers: list[str] | None = None, max_extra_subflows: int | None = None) -> None:
    """Refuse what Linux's MPTCP cannot run (module docstring), before anything is created.

    Args:
        mptcp_enabled: ``net.mptcp.enabled`` reads 1 in a new namespace (None: not probed).
        schedulers: Linux's available MPTCP schedulers (default: read from this kernel).
        max_extra_subflows: the most extra subflows ``ip mptcp limits`` accepted in the probe
            (default: Linux's ``MPTCP_PM_ADDR_MAX``, :data:`KERNEL_MAX_SUBFLOWS` − 1).

    Raises:
        UserError: one line naming the field (``flows[i].coupling`` …) and the fix.
    """
    senders: dict[int, tuple[int, int]] = {}
    most = KERNEL_MAX_SUBFLOWS if max_extra_subflows is None else max_extra_subflows + 1
    for i, flow in enumerate(spec.flows):
        m = getattr(flow, "mptcp", None)
        if flow.kind != "tcp" or m is None:
            continue
        where = f"flows[{i}]"
        if m.coupling != "uncoupled":
            raise UserError(coupled_refusal(i, m.coupling))
        if mptcp_enabled is False:
            raise UserError(f"{where}.subflows: this kernel has no Multipath TCP in a new network "
                            "namespace (net.mptcp.enabled is not 1; `ccarena doctor` says why); "
                            "use --backend sim")
        if m.subflows > most:
            raise UserError(f"{where}.subflows: Linux's path manager opens at most "
                            f"{most} subflows per connection, not {m.subflows}; "
                            f"use subflows <= {most} or --backend sim")
        linux = LINUX_SCHEDULER.get(m.scheduler, m.scheduler)
        have = schedulers if schedulers is not None else available_schedulers()
        if linux not in have:
            raise UserError(f"{where}.scheduler: this kernel's MPTCP has no \"{m.scheduler}\" "
                            f"scheduler (net.mptcp.available_schedulers: {' '.join(have)}); use "
                            "scheduler = \"minrtt\" or --backend sim")
        if m.join_delay_ns:
            raise UserError(f"{where}.join_delay: Linux's path manager joins the subflows as soon "
                            "as the connection is established; remove join_delay or use --backend sim")
        if m.opportunistic:
            raise UserError(f"{where}.opportunistic: upstream Linux MPTCP has no opportunistic "
                            "retransmission or penalisation (only the out-of-tree multipath-tcp.org "
                            "kernel had them); remove opportunistic or use --backend sim")
        if m.source_ports is not None:
            raise UserError(f"{where}.source_ports: Linux's in-kernel path manager binds each "
                            "subflow to an ephemeral source port (an endpoint's port is for "
                            "`signal` endpoints only; here each subflow gets its own source "
                            "address instead); remove source_ports or use --backend sim")
        src = int(flow.src)
        seen = senders.setdefault(src, (i, m.subflows))
        if seen[1] != m.subflows:
            host = spec.nodes[src].name
            raise UserError(f"{where}.subflows: Linux's MPTCP endpoints are per host, and '{host}' "
                            f"also sends flows[{seen[0]}] with subflows = {seen[1]}; give them the "
                            "same subflows or use --backend sim")


def extra_address(host: int, j: int) -> str:
    """Host ``host``'s ``j``-th extra source address (``j`` ≥ 1)."""
    if not 1 <= j < EXTRA_PER_HOST or host >= (1 << 20) // EXTRA_PER_HOST:
        raise UserError("flows: too many MPTCP hosts or subflows for the kernel backend's "
                        "extra-address plan (172.16.0.0/12)")
    return str(ipaddress.IPv4Address(EXTRA_BASE + EXTRA_PER_HOST * host + j))


@dataclass
class MptcpPlan:
    """The path manager's set-up of a run (pure data: nothing is created).

    Attributes:
        hosts: host namespace → ``(subflows limit, add_addr_accepted limit)`` for every host
            that sends or receives an MPTCP flow.
        endpoints: sending host namespace → ``(interface, [extra address, …])``: the addresses
            added to it, each an MPTCP endpoint with the ``subflow`` flag.
        routes: ``(namespace, extra address, ((interface, gateway), …))``: the routes every
            other node gets to the extra addresses (several hops: a multipath route).
        scheduler: ``net.mptcp.scheduler`` per MPTCP host namespace (``"default"``).
    """

    hosts: dict[str, tuple[int, int]] = field(default_factory=dict)
    endpoints: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    routes: list[tuple[str, str, tuple[tuple[str, str], ...]]] = field(default_factory=list)
    scheduler: dict[str, str] = field(default_factory=dict)

    def empty(self) -> bool:
        """True when the run has no MPTCP flow."""
        return not self.hosts


def plan_mptcp(spec: RunSpec, plan) -> MptcpPlan:
    """The set-up of every MPTCP flow of ``spec`` on the network ``plan``
    (:class:`ccarena.backends.kernel.netns.NetworkPlan`); assumes :func:`check_flows` passed."""
    from ccarena.backends.kernel.routes import next_hop_sets

    out = MptcpPlan()
    extras: dict[int, list[str]] = {}
    limits: dict[int, list[int]] = {}
    for flow in spec.flows:
        m = getattr(flow, "mptcp", None)
        if flow.kind != "tcp" or m is None:
            continue
        src, dst = int(flow.src), int(flow.dst)
        extras[src] = [extra_address(src, j) for j in range(1, m.subflows)]
        for host in (src, dst):
            limit = limits.setdefault(host, [0, 0])
            limit[0] = max(limit[0], m.subflows - 1)
            limit[1] = max(limit[1], m.subflows - 1)
        for host in (src, dst):
            out.scheduler[plan.ns(host)] = LINUX_SCHEDULER.get(m.scheduler, m.scheduler)
    for host, (subflows, accepted) in limits.items():
        out.hosts[plan.ns(host)] = (subflows, accepted)
    for host, addrs in extras.items():
        if addrs:
            first = plan.host_addresses[host][0]
            phys = next(p for p in plan.links
                        if (p.a == host and p.addr_a == first) or (p.b == host and p.addr_b == first))
            out.endpoints[plan.ns(host)] = (RunNames.link_if(phys.k), addrs)
    for node, dst, links in next_hop_sets(spec):
        if not extras.get(dst):
            continue
        hops = []
        for link in links:
            phys, forward = plan.link_of[link]
            hops.append((RunNames.link_if(phys.k), phys.addr_b if forward else phys.addr_a))
        for addr in extras[dst]:
            out.routes.append((plan.ns(node), addr, tuple(hops)))
    return out


def commands(mp: MptcpPlan) -> dict[str, list[str]]:
    """Namespace → the ``ip -batch`` lines that set it up (limits, addresses, endpoints,
    routes), in order."""
    out: dict[str, list[str]] = {}
    for ns, (subflows, accepted) in mp.hosts.items():
        out.setdefault(ns, []).append(f"mptcp limits set subflows {subflows} add_addr_accepted {accepted}")
    for ns, (ifname, addrs) in mp.endpoints.items():
        for addr in addrs:
            out[ns].append(f"address add {addr}/32 dev {ifname}")
            out[ns].append(f"mptcp endpoint add {addr} dev {ifname} subflow")
    for ns, addr, hops in mp.routes:
        if len(hops) == 1:
            line = f"route add {addr}/32 via {hops[0][1]} dev {hops[0][0]}"
        else:
            line = f"route add {addr}/32 " + " ".join(f"nexthop via {gw} dev {ifname}" for ifname, gw in hops)
        out.setdefault(ns, []).append(line)
    return out


def install(mp: MptcpPlan) -> None:
    """Turn MPTCP on (``net.mptcp.enabled = 1``, the scheduler) in every MPTCP host's namespace
    and apply :func:`commands` with one ``ip -batch`` per namespace.

    Raises:
        UserError: a command failed (one line naming the namespace and ip's message).
    """
    for ns, scheduler in mp.scheduler.items():
        script = "echo 1 > /proc/sys/net/mptcp/enabled; " \
                 f"if [ -w /proc/sys/net/mptcp/scheduler ]; then echo {scheduler} > /proc/sys/net/mptcp/scheduler; fi"
        _run(["ip", "netns", "exec", ns, "sh", "-ec", script], ns)
    for ns, lines in commands(mp).items():
        _run(["ip", "-n", ns, "-batch", "-"], ns, "\n".join(lines) + "\n")


def _run(args: list[str], ns: str, stdin: str | None = None) -> None:
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["unknown error"])[0]
        raise UserError(f"MPTCP setup in {ns}: {first}")
