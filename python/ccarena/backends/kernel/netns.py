"""The scenario's network as namespaces: one per host and per router, veth links, addresses,
routes and static neighbours, all from the resolved spec (so every topology builder works).

Every physical link ``k`` (the two directed links between nodes ``a`` and ``b``; ``a`` is the
``from`` of the first of them in the spec) passes through the run's *wire* namespace
``cca-<tag>-wire``::

    a:l<k>  ⇄  wire:l<k>a  [ccarena's link relay, or a bridge]  wire:l<k>b  ⇄  b:l<k>

The wire namespace holds every link's emulation (:mod:`ccarena.backends.kernel.emulation_choice`). In relay mode
ccarena's link emulator joins each link's two wire ends and is its queue, transmitter, wire and
delay (:mod:`ccarena.backends.kernel.relay_driver`). In tc mode a Linux bridge joins them (or the relay, for
the delay only, when the link has a delay and the kernel no netem), and htb on the wire end
facing the receiver is the queue (:mod:`ccarena.backends.kernel.shaping`): the ``a → b`` direction is
shaped on ``l<k>b``'s egress and ``b → a`` on ``l<k>a``'s. A queue on a host's own egress would
not fill: TCP Small Queues keeps at most ~1 ms of a socket's data in its host's qdiscs, so the
backlog would stay in the socket instead of the bottleneck. Bridge and relay are transparent at
layer 2, so addressing does not depend on them. For a FIFO served at a constant rate, a constant
propagation delay before the queue or after it gives the same departures shifted in time, so
the order (delay, then queue) in tc mode does not change what flows see.

Addresses: ``a`` gets ``10.0.0.0 + 4k + 1``, ``b`` ``+ 2`` (a /30 per physical link). Each
next-hop set ``(node, destination host, links)`` (:func:`ccarena.backends.kernel.routes.next_hop_sets`:
the spec's routing, computed here as the engine does) becomes ``/32`` routes to every address of
the host via the next hops' addresses on those links: one ``nexthop`` per link when the set has
several (equal-cost multipath). Every node hashes multipath routes by L4 5-tuple
(``net.ipv4.fib_multipath_hash_policy = 1``, per-flow ECMP as the simulator's ``mode = "ecmp"``)
with a hash seed derived from the spec's seed and the node (``fib_multipath_hash_seed``), so one
seed gives one assignment of flows to paths and the tiers do not all choose alike. Neighbours are static (permanent entries with
the peer's MAC): no ARP traffic in the queues and no first-packet delay. IPv6 is disabled
(no router solicitations or DAD in the queues); routers forward IPv4. Offloads (TSO, GSO, GRO,
checksum) are off on every interface and ``gso_max_segs`` is 1 (Linux TCP builds GSO
super-packets whatever the offloads say; the qdisc would count one per 64 KB), so queues hold
real packets.

Namespaces and links are made over netlink with pyroute2; sysctls and ``ethtool -K`` run as one
shell per namespace (``ethtool``'s feature names are its interface, pyroute2's ethtool binding
does not enter namespaces).
"""

from __future__ import annotations

import ipaddress
import subprocess
from dataclasses import dataclass, field
from typing import Any

from ccarena.backends.kernel.ecn_modes import host_tcp_ecn
from ccarena.backends.kernel.emulation_choice import Emulation
from ccarena.backends.kernel.names import RunNames
from ccarena.backends.kernel.routes import next_hop_sets
from ccarena.errors import UserError
from ccarena.runspec import RunSpec

NUD_PERMANENT = 0x80
OFFLOADS = "tso off gso off gro off tx off rx off"


@dataclass
class PhysicalLink:
    """Two directed links of the spec between the same two nodes.

    Attributes:
        k: index of the physical link.
        a, b: node indices (``a`` is the ``from`` of ``forward``).
        forward, reverse: spec link indices ``a → b`` and ``b → a`` (reverse may be None for a
            one-way link, which the builders do not make).
        addr_a, addr_b: IPv4 addresses of ``a`` and ``b`` on the link.
        relayed: the relay joins the link's wire ends (else a bridge does).
    """

    k: int
    a: int
    b: int
    forward: int
    reverse: int | None
    addr_a: str
    addr_b: str
    relayed: bool = False


@dataclass
class NetworkPlan:
    """Where everything of a spec goes in namespaces (pure data: nothing is created).

    Attributes:
        names: the run's names.
        node_names: node index → name; node_kinds: node index → "host" or "router".
        links: the physical links.
        link_of: spec link index → (physical link, True if it is the ``a → b`` direction).
        host_addresses: host node index → its addresses (first = the one flows use).
        routes: ``(namespace, destination address, ((interface, gateway), ...))`` for every
            route of the spec to a host address that is not on-link (several next hops: an
            equal-cost multipath route).
        hash_seeds: namespace → its ``fib_multipath_hash_seed`` (nonzero).
        tcp_ecn: host namespace → the ``net.ipv4.tcp_ecn`` it gets, for the run's ``[kernel]
            ecn`` (:func:`ccarena.backends.kernel.ecn_modes.host_tcp_ecn`); a host not in it
            keeps Linux's default, 2 (accepts RFC 3168 ECN when asked).
    """

    names: RunNames
    node_names: list[str]
    node_kinds: list[str]
    links: list[PhysicalLink]
    link_of: dict[int, tuple[PhysicalLink, bool]]
    host_addresses: dict[int, list[str]] = field(default_factory=dict)
    routes: list[tuple[str, str, tuple[tuple[str, str], ...]]] = field(default_factory=list)
    hash_seeds: dict[str, int] = field(default_factory=dict)
    tcp_ecn: dict[str, int] = field(default_factory=dict)

    def ns(self, node: int) -> str:
        """The namespace of node ``node``."""
        return self.names.node_ns(self.node_names[node])

    def egress(self, spec_link: int) -> tuple[str, str]:
        """(namespace, interface) where spec link ``spec_link``'s queue is (in the wire
        namespace, on the end facing the receiving node)."""
        phys, forward = self.link_of[spec_link]
        return self.names.wire_ns, RunNames.wire_if(phys.k, "b" if forward else "a")

    def sender_egress(self, spec_link: int) -> tuple[str, str]:
        """(namespace, interface) of the sending node's end of spec link ``spec_link``."""
        phys, forward = self.link_of[spec_link]
        return self.ns(phys.a if forward else phys.b), RunNames.link_if(phys.k)

    def ingress(self, spec_link: int) -> tuple[str, str]:
        """(namespace, interface) where spec link ``spec_link``'s packets arrive."""
        phys, forward = self.link_of[spec_link]
        node = phys.b if forward else phys.a
        return self.ns(node), RunNames.link_if(phys.k)

    def namespaces(self) -> list[str]:
        """Every namespace of the run: the nodes', then the wire namespace."""
        return [self.ns(i) for i in range(len(self.node_names))] + [self.names.wire_ns]


def plan_network(spec: RunSpec, names: RunNames, emulation: Emulation, *,
                 ecn: str = "classic") -> NetworkPlan:
    """Map the spec's nodes and links to namespaces, interfaces and addresses.

    Args:
        emulation: decides which links the relay joins (:meth:`Emulation.relays`); the others
            are bridged.
        ecn: the run's ``[kernel] ecn`` (``"classic"``, ``"accecn"`` or ``"off"``): the hosts'
            ``net.ipv4.tcp_ecn`` (:attr:`NetworkPlan.tcp_ecn`).

    Raises:
        UserError: too many links for the address plan (over 4 million).
    """
    nodes = spec.nodes
    pairs: dict[tuple[int, int], PhysicalLink] = {}
    link_of: dict[int, tuple[PhysicalLink, bool]] = {}
    physical: list[PhysicalLink] = []
    for i, link in enumerate(spec.links):
        u, v = int(link.from_), int(link.to)
        if (v, u) in pairs and pairs[(v, u)].reverse is None:
            phys = pairs[(v, u)]
            phys.reverse = i
            link_of[i] = (phys, False)
        else:
            k = len(physical)
            if k >= 1 << 22:
                raise UserError("topology: the kernel backend addresses at most 4 million links")
            base = int(ipaddress.IPv4Address("10.0.0.0")) + 4 * k
            phys = PhysicalLink(k=k, a=u, b=v, forward=i, reverse=None,
                                addr_a=str(ipaddress.IPv4Address(base + 1)),
                                addr_b=str(ipaddress.IPv4Address(base + 2)))
            pairs[(u, v)] = phys
            physical.append(phys)
            link_of[i] = (phys, True)
    for phys in physical:
        directions = [phys.forward] + ([phys.reverse] if phys.reverse is not None else [])
        phys.relayed = any(emulation.relays(spec.links[i]) for i in directions)
    plan = NetworkPlan(names=names, node_names=[n.name for n in nodes],
                       node_kinds=[n.kind for n in nodes], links=physical, link_of=link_of)
    for phys in physical:
        for node, addr in ((phys.a, phys.addr_a), (phys.b, phys.addr_b)):
            if plan.node_kinds[node] == "host":
                plan.host_addresses.setdefault(node, []).append(addr)
    for node, dst, links in next_hop_sets(spec):
        hops = []
        for link in links:
            phys, forward = link_of[link]
            next_hop, gateway = (phys.b, phys.addr_b) if forward else (phys.a, phys.addr_a)
            hops.append((next_hop, RunNames.link_if(phys.k), gateway))
        for addr in plan.host_addresses.get(dst, []):
            if any(next_hop == dst and addr == gateway for next_hop, _, gateway in hops):
                continue  # on-link: the /30's own route covers it
            plan.routes.append((plan.ns(node), addr, tuple((ifname, gw) for _, ifname, gw in hops)))
    for node in range(len(nodes)):
        plan.hash_seeds[plan.ns(node)] = multipath_hash_seed(int(spec.seed), node)
    senders = ecn_senders(spec)
    for node, kind in enumerate(plan.node_kinds):
        value = host_tcp_ecn(ecn, node in senders) if kind == "host" else None
        if value is not None:
            plan.tcp_ecn[plan.ns(node)] = value
    return plan


def ecn_senders(spec: RunSpec) -> set[int]:
    """The hosts that send a TCP flow with ``ecn``: their namespaces request ECN on the
    connections they open (``net.ipv4.tcp_ecn`` 1, or 3 for Accurate ECN; every namespace's
    default, 2, accepts RFC 3168 ECN on the ones it is asked for). ECN is per namespace in
    Linux, so a host sending flows with and without ECN cannot be set up faithfully
    (:mod:`ccarena.backends.kernel.preflight` refuses it). A queue that marks only marks ECN-capable packets, as in the simulator, so marking
    queues alone do not turn ECN on."""
    return {int(f.src) for f in spec.flows if f.kind == "tcp" and f.ecn}


def multipath_hash_seed(seed: int, node: int) -> int:
    """Node ``node``'s ``fib_multipath_hash_seed`` for a run seeded ``seed``: SplitMix64's mixer
    of both, as a nonzero 32-bit value (0 would ask Linux for a random seed)."""
    mask = (1 << 64) - 1
    z = (seed * 0x9E3779B97F4A7C15 + (node + 1) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return (z & 0xFFFFFFFF) or 1


def _sh(namespace: str, script: str) -> None:
    done = subprocess.run(["ip", "netns", "exec", namespace, "sh", "-ec", script],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["unknown error"])[0]
        raise UserError(f"network setup in {namespace}: {first}")


def _sysctls(router: bool, hash_seed: int | None, tcp_ecn: int | None) -> str:
    values: dict[str, int] = {
        "net/ipv6/conf/all/disable_ipv6": 1, "net/ipv6/conf/default/disable_ipv6": 1,
        "net/ipv4/conf/all/rp_filter": 0, "net/ipv4/conf/default/rp_filter": 0,
        "net/ipv4/ip_forward": 1 if router else 0}
    if hash_seed is not None:  # a node (not the wire namespace): per-flow ECMP on L4
        values["net/ipv4/fib_multipath_hash_policy"] = 1
    if tcp_ecn is not None:
        values["net/ipv4/tcp_ecn"] = tcp_ecn
    script = "; ".join(f"echo {v} > /proc/sys/{k}" for k, v in values.items())
    if hash_seed is not None:  # Linux >= 6.11; older kernels hash with a random seed
        script += (f"; if [ -w /proc/sys/net/ipv4/fib_multipath_hash_seed ]; then "
                   f"echo {hash_seed} > /proc/sys/net/ipv4/fib_multipath_hash_seed; fi")
    return script


def build_network(plan: NetworkPlan, created: list[str]) -> None:
    """Create the namespaces, links, addresses, neighbours and routes of ``plan``.

    Args:
        plan: from :func:`plan_network`.
        created: each namespace is appended as soon as it exists (the caller removes them, even
            when this raises half-way).

    Raises:
        UserError: a step failed (one line naming the namespace).
    """
    from pyroute2 import NetNS, netns

    for ns in plan.namespaces():
        try:
            netns.create(ns)
        except OSError as err:
            raise UserError(f"cannot create network namespace {ns}: {err.strerror or err}") from None
        created.append(ns)
        wire = ns == plan.names.wire_ns
        kind = None if wire else plan.node_kinds[plan.node_names.index(ns[len(plan.names.prefix):])]
        _sh(ns, _sysctls(kind == "router", plan.hash_seeds.get(ns), plan.tcp_ecn.get(ns))
            + "; ip link set lo up")
    handles: dict[str, Any] = {}
    try:
        for ns in plan.namespaces():
            handles[ns] = NetNS(ns)
        wire_ns = plan.names.wire_ns
        w = handles[wire_ns]
        for phys in plan.links:
            ifname = RunNames.link_if(phys.k)
            for node, side in ((phys.a, "a"), (phys.b, "b")):
                handles[plan.ns(node)].link("add", ifname=ifname, kind="veth",
                                            peer={"ifname": RunNames.wire_if(phys.k, side),
                                                  "net_ns_fd": wire_ns})
            ends = [w.link_lookup(ifname=RunNames.wire_if(phys.k, side))[0] for side in ("a", "b")]
            if not phys.relayed:
                bridge = RunNames.bridge_if(phys.k)
                w.link("add", ifname=bridge, kind="bridge", br_stp_state=0, br_forward_delay=0)
                master = w.link_lookup(ifname=bridge)[0]
                for idx in ends:
                    w.link("set", index=idx, master=master)
                w.link("set", index=master, state="up")
            for idx in ends:
                w.link("set", index=idx, state="up", gso_max_segs=1,
                       promiscuity=1 if phys.relayed else 0)
        macs: dict[tuple[int, int], str] = {}
        for phys in plan.links:
            ifname = RunNames.link_if(phys.k)
            for node, addr in ((phys.a, phys.addr_a), (phys.b, phys.addr_b)):
                ipr = handles[plan.ns(node)]
                idx = ipr.link_lookup(ifname=ifname)[0]
                ipr.addr("add", index=idx, address=addr, prefixlen=30)
                # TCP hands the qdisc GSO super-packets even with offloads off; one segment per
                # skb makes queue limits and byte counts count real packets.
                ipr.link("set", index=idx, state="up", gso_max_segs=1)
                macs[(phys.k, node)] = ipr.get_links(idx)[0].get("IFLA_ADDRESS")
        for phys in plan.links:
            ifname = RunNames.link_if(phys.k)
            for node, peer, peer_addr in ((phys.a, phys.b, phys.addr_b), (phys.b, phys.a, phys.addr_a)):
                ipr = handles[plan.ns(node)]
                idx = ipr.link_lookup(ifname=ifname)[0]
                ipr.neigh("add", dst=peer_addr, lladdr=macs[(phys.k, peer)], ifindex=idx,
                          state=NUD_PERMANENT)
        for ns, dst, hops in plan.routes:
            ipr = handles[ns]
            via = [{"gateway": gateway, "oif": ipr.link_lookup(ifname=ifname)[0]} for ifname, gateway in hops]
            if len(via) == 1:
                ipr.route("add", dst=f"{dst}/32", **via[0])
            else:
                ipr.route("add", dst=f"{dst}/32", multipath=via)
    finally:
        for h in handles.values():
            h.close()


def disable_offloads(plan: NetworkPlan) -> None:
    """``ethtool -K IF tso off gso off gro off tx off rx off`` on every interface of the run."""
    per_ns: dict[str, list[str]] = {}
    for phys in plan.links:
        for node in (phys.a, phys.b):
            per_ns.setdefault(plan.ns(node), []).append(RunNames.link_if(phys.k))
        per_ns.setdefault(plan.names.wire_ns, []).extend(
            RunNames.wire_if(phys.k, s) for s in ("a", "b"))
    for ns, ifnames in per_ns.items():
        _sh(ns, "; ".join(f"ethtool -K {i} {OFFLOADS} >/dev/null 2>&1 || "
                          f"ethtool -K {i} tso off gso off gro off >/dev/null" for i in ifnames))
