"""A resolved spec checked against what this kernel offers, before anything is created.

Each problem is one line (:class:`ccarena.errors.UserError`) naming the field and the fix, e.g.
``flows[1].flavor: flavor 'vegas' is not available in this kernel (available: reno cubic bbr);
use --backend sim``.
"""

from __future__ import annotations

from typing import Any, Callable, get_args

from ccarena.backends.kernel import mptcp
from ccarena.backends.kernel.capabilities import TOOLS, Capabilities
from ccarena.backends.kernel.ecn_modes import ACCEPT_ACCECN, KERNEL_ECN_MODES, REQUEST_ACCECN
from ccarena.backends.kernel.emulation_choice import Emulation
from ccarena.errors import UserError
from ccarena.runspec import TCP_DEFAULTS, QueueSpec, RunSpec

NOT_ROOT = "the kernel backend needs root (or CAP_NET_ADMIN)"

LINUX_RECOVERY = "linux"
"""The only loss recovery a kernel flow can have: Linux's own (SACK + RACK-TLP + PRR)."""

TCP_FIELDS_FIXED_BY_LINUX = {
    "header_bytes": "header_bytes", "ack_bytes": "ack_bytes",
    "initial_cwnd_packets": "initial_cwnd", "min_rto_ns": "min_rto", "initial_rto_ns": "initial_rto",
    "max_rto_ns": "max_rto", "clock_granularity_ns": "clock_granularity", "dupthresh": "dupthresh",
    "delayed_ack_ns": "delayed_ack", "ack_every_segments": "ack_every",
}
"""Flow fields the kernel backend cannot set per flow (spec key → scenario field): a value other
than the Linux-like default is refused rather than silently ignored."""


QUEUE_FEATURES = frozenset({*get_args(QueueSpec.model_fields["discipline"].annotation), "ecn_threshold"})
"""What the kernel backend's queues can do: every discipline of the run spec, and
``"ecn_threshold"`` for ECN step marking. The relay runs the shared link model (crates/link) for
every discipline, so a discipline the engine gains is one the relay has: those that
decide when a packet arrives (DropTail, RED, Adaptive RED, PIE) and those that decide when it
leaves (CoDel, FQ-CoDel, FQ: the relay holds the frame until then); it marks CE in the frame's IP
header (ECN thresholds, ``ecn = true``) and drops a Not-ECT frame instead. All of it needs the
relay's link emulation (htb's queue is a FIFO that never marks)."""


NO_KERNEL_QUIC = "QUIC runs on the simulator; Linux has no kernel QUIC"
"""Why the kernel backend refuses a QUIC flow (``transport = "quic"``): Linux implements TCP
in the kernel, and QUIC lives in user-space libraries."""


def refuse_quic(spec: RunSpec, why: str = NO_KERNEL_QUIC) -> None:
    """Refuse the first QUIC flow of ``spec`` (a TCP flow with ``quic`` set) with ``why``. Needs
    no probe of the machine, so a run is refused before anything is detected or started.

    Raises:
        UserError: ``flows[i].transport: <why>; use --backend sim``.
    """
    for i, flow in enumerate(spec.flows):
        if getattr(flow, "quic", None) is not None:
            raise UserError(f"flows[{i}].transport: {why}; use --backend sim")


NOT_RELAYED_PCAP = "{link} runs on tc, and only the relay captures"
"""Why the kernel and udp backends refuse to capture a link (``[output] pcap``): only the relay,
which emulates every link in relay mode, writes pcap files (:mod:`.relay_driver`)."""


def refuse_pcap(spec: RunSpec, emulation: Emulation) -> None:
    """Refuse packet capture (the spec's ``pcap``) of a link the relay does not emulate: the
    relay records each frame where the simulator does (when its link starts serializing it),
    which needs the relay to be the link's queue and transmitter — relay mode, where it is every
    link's (``crates/relay/src/capture.rs``).

    Raises:
        UserError: ``output.pcap: '<link>' runs on tc, and only the relay captures; fix:
            [kernel] emulation = "relay"``.
    """
    if spec.pcap is None or emulation.rate_and_queue == "relay" or not spec.pcap.links:
        return
    link = spec.links[int(spec.pcap.links[0])].name
    raise UserError(f"output.pcap: {NOT_RELAYED_PCAP.format(link=repr(link))}; "
                    "fix: [kernel] emulation = \"relay\"")


def check_privileges(caps: Capabilities) -> None:
    """Raises: UserError: not root and without CAP_NET_ADMIN/CAP_SYS_ADMIN."""
    if not caps.privileged:
        raise UserError(NOT_ROOT)


def check_tools(caps: Capabilities) -> None:
    """Raises: UserError: a program the backend runs is missing (names its Debian package)."""
    missing = caps.missing_tools()
    if missing:
        name = missing[0]
        raise UserError(f"the kernel backend needs `{name}`, which is not on PATH "
                        f"(install it: apt-get install {TOOLS[name]}); `ccarena doctor` lists what is missing")


def check_spec(spec: RunSpec, caps: Capabilities, emulation: Emulation,
               tcp_check: Callable[[str, Any], None] | None = None, *, ecn: str = "classic") -> None:
    """Check privileges, programs, flows, queues, links and events of ``spec`` against ``caps``
    and the chosen link ``emulation``, and the kernel TCP's ECN mode ``ecn`` (``[kernel] ecn``,
    :func:`check_ecn_mode`). ``tcp_check(where, flow)``, when given, checks each TCP flow instead
    of this kernel's TCP (the udp backend runs them on its own transport; ``ecn`` is then not
    checked); when it returns ``False`` the flow is checked as this kernel's TCP flow (the udp
    backend's ``tcp_impl = "linux"``).

    Raises:
        UserError: the first problem, as one line.
    """
    from ccarena.flavors import tcp_flavors

    check_privileges(caps)
    check_tools(caps)
    if caps.netns is False:
        raise UserError(f"the kernel backend cannot create network namespaces here: {caps.probe_error}")
    if spec.routing is not None and spec.routing.mode == "spray":
        raise UserError("routing.mode: per-packet spraying has no faithful Linux equivalent (its "
                        "multipath routes hash per flow); use mode = \"ecmp\" or --backend sim")
    if any(event.set.up is not None for event in spec.events):
        raise UserError("events: taking a link down or up (up = false / true) is simulated only; "
                        "use --backend sim")
    if spec.events and emulation.rate_and_queue != "relay":
        raise UserError("events: scheduled link changes on the kernel backend need the relay's link "
                        "emulation; set kernel.emulation = \"relay\" (or use --backend sim)")
    available = caps.congestion_controls
    catalogue = tcp_flavors()
    for i, flow in enumerate(spec.flows):
        where = f"flows[{i}]"
        if flow.kind == "udt" and tcp_check is not None:  # the udp backend runs UDT (libudt)
            tcp_check(where, flow)
            continue
        if flow.kind not in ("tcp", "udp_cbr"):
            raise UserError(f"{where}.flavor: {flow.kind} flows are not available on the kernel "
                            "backend (TCP flavors and udp-cbr are); use --backend sim")
        if flow.kind != "tcp":
            continue
        if tcp_check is not None and tcp_check(where, flow) is not False:
            continue  # False: the flow runs on this kernel's TCP after all (udp's tcp_impl = "linux")
        if flow.quic is not None:
            raise UserError(f"{where}.transport: {NO_KERNEL_QUIC}; use --backend sim")
        flavor = flow.flavor
        entry = catalogue.get(flavor, {})
        if flavor not in available and entry.get("l4s", False):
            raise UserError(f"{where}.flavor: this kernel has no '{flavor}' (an L4S flavor: Linux's "
                            "TCP Prague is out of tree); run it with --backend sim or --backend udp")
        if flavor not in available:
            raise UserError(f"{where}.flavor: flavor '{flavor}' is not available in this kernel "
                            f"(available: {' '.join(available)}); use --backend sim")
        defaults = {p["name"]: float(p["default"]) for p in entry.get("params", [])}
        for name, value in flow.params.items():
            if name in defaults and float(value) != defaults[name]:
                raise UserError(f"{where}.params.{name}: the kernel's {flavor} cannot be given "
                                "parameters per flow; remove it or use --backend sim")
        if flow.recovery != LINUX_RECOVERY:
            raise UserError(f"{where}.recovery: Linux recovers losses its own way (SACK, RACK-TLP "
                            f"and PRR: recovery = \"linux\"); remove recovery = "
                            f"\"{flow.recovery}\" or use --backend sim")
        for key, field in TCP_FIELDS_FIXED_BY_LINUX.items():
            if getattr(flow, key) != TCP_DEFAULTS.get(key):
                raise UserError(f"{where}.{field}: the kernel backend uses Linux's own value; "
                                f"remove {field} or use --backend sim")
    if tcp_check is None:
        _check_ecn_per_host(spec)
        check_ecn_mode(spec, caps, ecn)
        # Multipath TCP: coupled controllers, schedulers, join delays Linux lacks (one line each).
        mptcp.check_flows(spec, caps.mptcp, caps.mptcp_schedulers or None, caps.mptcp_max_subflows)
    for i, link in enumerate(spec.links):
        where = f"links[{i}] ({link.name})"
        queue = link.queue
        if queue.discipline not in QUEUE_FEATURES:
            raise UserError(f"{where}: queue discipline '{queue.discipline}' is not supported by "
                            "the kernel backend; use --backend sim")
        if queue.discipline != "droptail" and emulation.rate_and_queue != "relay":
            raise UserError(f"{where}: a {queue.discipline} queue needs the relay's link emulation "
                            "(htb's queue is a FIFO); set kernel.emulation = \"relay\"")
        marks = queue.ecn_threshold_packets is not None or queue.ecn_threshold_bytes is not None
        if marks and "ecn_threshold" not in QUEUE_FEATURES:
            raise UserError(f"{where}: ECN step marking (ecn_threshold) needs a marking qdisc "
                            "this backend does not set up; remove it or use --backend sim")
        if marks and emulation.rate_and_queue != "relay":
            raise UserError(f"{where}: ECN step marking (ecn_threshold) needs the relay's link "
                            "emulation (htb's queue never marks); set kernel.emulation = \"relay\"")
        if link.trace is not None and emulation.rate_and_queue != "relay":
            raise UserError(f"{where}: a rate that follows a trace needs the relay's link emulation "
                            "(tc shapes at one constant rate); set kernel.emulation = \"relay\" or use --backend sim")
        if link.delay_ns > 0 and emulation.delay == "relay" and not caps.relay:
            raise UserError(f"{where}: a propagation delay needs netem or ccarena's link relay, and "
                            "this kernel has no netem and this build no relay (rebuild: pip install -e .)")
        if link.loss > 0 and emulation.loss == "nft" and not caps.nft_numgen:
            raise UserError(f"{where}: random loss needs nftables with numgen, which does not work "
                            "here (`ccarena doctor` says why)")


def check_ecn_mode(spec: RunSpec, caps: Capabilities, ecn: str) -> None:
    """Check ``[kernel] ecn`` against the spec's flows and what this kernel's ``net.ipv4.tcp_ecn``
    accepts (``caps.ecn``, probed in a scratch namespace: :mod:`.ecn_modes`).

    Raises:
        UserError: ``"accecn"`` on a kernel that does not negotiate Accurate ECN (RFC 9768) or
            could not be probed; ``"off"`` with a TCP flow that has ``ecn = true``; an unknown
            mode.
    """
    if ecn not in KERNEL_ECN_MODES:
        raise UserError(f"kernel.ecn: unknown mode '{ecn}' (choose {', '.join(KERNEL_ECN_MODES)})")
    if ecn == "off":
        for i, flow in enumerate(spec.flows):
            if flow.kind == "tcp" and flow.ecn:
                raise UserError(f"flows[{i}].ecn: kernel.ecn = \"off\" turns ECN off on every host; "
                                "remove ecn = true or set kernel.ecn = \"classic\"")
    if ecn == "accecn" and (caps.ecn is None or not caps.ecn.accecn):
        found = (f"net.ipv4.tcp_ecn accepts only {caps.ecn.accepted_text()} here, not "
                 f"{REQUEST_ACCECN} and {ACCEPT_ACCECN}" if caps.ecn is not None
                 else f"net.ipv4.tcp_ecn could not be probed: {caps.probe_error or 'no scratch namespace'}")
        raise UserError(f"kernel.ecn: \"accecn\" needs a kernel that negotiates Accurate ECN "
                        f"(RFC 9768) and this one does not ({found}); set kernel.ecn = \"classic\" "
                        "or use --backend sim")


def _check_ecn_per_host(spec: RunSpec) -> None:
    """Linux turns ECN on per namespace (``net.ipv4.tcp_ecn``): one host's TCP flows must agree.

    Raises:
        UserError: a host sends TCP flows with and without ``ecn`` (names the second flow).
    """
    first: dict[int, tuple[int, bool]] = {}
    for i, flow in enumerate(spec.flows):
        if flow.kind != "tcp":
            continue
        seen = first.setdefault(int(flow.src), (i, bool(flow.ecn)))
        if seen[1] != bool(flow.ecn):
            host = spec.nodes[int(flow.src)].name
            raise UserError(f"flows[{i}].ecn: the kernel turns ECN on per host, and '{host}' also "
                            f"sends flows[{seen[0]}] with ecn = {str(seen[1]).lower()}; give them the "
                            "same ecn or use --backend sim")
