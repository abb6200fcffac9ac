"""What this machine's kernel and userland offer the kernel backend, detected at run time.

Nothing is assumed: congestion controllers come from
``/proc/sys/net/ipv4/tcp_available_congestion_control``; each qdisc is tried for real on a veth
in a scratch namespace (``cca-<tag>-probe``, removed at once); nftables' ``numgen`` is tried by
loading a rule there; which ECN feedback TCP can negotiate is found by writing each value of
``net.ipv4.tcp_ecn`` there (:mod:`ccarena.backends.kernel.ecn_modes`); the relay is looked up in
the compiled extension. The backend picks the link emulation from the result
(:mod:`ccarena.backends.kernel.emulation_choice`: the kernel's qdiscs with netem when netem exists,
else ccarena's link relay) and checks ``[kernel] ecn`` against it; ``ccarena doctor`` prints it.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ccarena.backends.kernel.ecn_modes import EcnModes, namespace_tcp_ecn_writer, probe_ecn_modes
from ccarena.backends.kernel.names import RunNames, new_tag

CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21
TOOLS = {"ip": "iproute2", "tc": "iproute2", "ethtool": "ethtool", "nft": "nftables"}
"""Programs the backend runs (name → Debian package)."""
OPTIONAL_TOOLS = {"ss": "iproute2", "iperf3": "iperf3", "mptcpize": "mptcpize", "ping": "iputils-ping"}
"""Programs doctor reports but the backend does not need (its traffic generator is its own)."""
QDISCS = {
    "htb": "htb default 1", "tbf": "tbf rate 10mbit burst 5kb limit 30000",
    "pfifo": "pfifo limit 100", "bfifo": "bfifo limit 100000", "netem": "netem delay 1ms",
    "red": "red limit 400000 min 30000 max 90000 avpkt 1000 burst 55 bandwidth 10mbit",
    "codel": "codel", "fq": "fq", "fq_codel": "fq_codel", "pie": "pie", "cake": "cake",
    "sfq": "sfq",
}
"""qdisc name → a root qdisc argument string that exercises it."""


@dataclass
class Capabilities:
    """The result of :func:`detect`.

    Attributes:
        privileged: CAP_NET_ADMIN and CAP_SYS_ADMIN are effective (root, or granted).
        tools: program → absolute path, or None when it is not on PATH.
        congestion_controls: ``tcp_available_congestion_control``, in the kernel's order.
        qdiscs: qdisc name → it could be added (only when probed).
        nft_numgen: an nftables rule with ``numgen random`` loads (only when probed).
        netns: a network namespace could be created (only when probed).
        mptcp: ``net.mptcp.enabled`` is 1 in a new namespace and an ``IPPROTO_MPTCP`` socket
            can be created there (None: not probed or absent).
        mptcp_detail: what the MPTCP probe found, or why it failed (one line).
        mptcp_schedulers: ``net.mptcp.available_schedulers`` in a new namespace.
        mptcp_path_managers: ``net.mptcp.available_path_managers`` (empty before Linux 6.15,
            whose only path manager is the in-kernel one).
        mptcp_max_subflows: the most extra subflows ``ip mptcp limits`` accepted (of 8 tried).
        ecn: the ``net.ipv4.tcp_ecn`` values a new namespace accepts: RFC 3168 ECN, Accurate
            ECN (None: not probed).
        relay: ccarena's link relay is built into the extension.
        kernel_config: CONFIG_* → value from /proc/config.gz, when the kernel exposes it.
        probe_error: why probing failed, if it did.
    """

    privileged: bool
    tools: dict[str, str | None]
    congestion_controls: list[str]
    qdiscs: dict[str, bool] = field(default_factory=dict)
    nft_numgen: bool | None = None
    netns: bool | None = None
    mptcp: bool | None = None
    mptcp_detail: str = ""
    mptcp_schedulers: list[str] = field(default_factory=list)
    mptcp_path_managers: list[str] = field(default_factory=list)
    mptcp_max_subflows: int | None = None
    ecn: EcnModes | None = None
    relay: bool = False
    kernel_config: dict[str, str] = field(default_factory=dict)
    probe_error: str | None = None

    @property
    def netem(self) -> bool:
        """netem can be used (delay and loss)."""
        return bool(self.qdiscs.get("netem"))

    def missing_tools(self) -> list[str]:
        """Required programs not on PATH."""
        return [name for name in TOOLS if not self.tools.get(name)]


def effective_capabilities() -> int:
    """The CapEff bit mask of this process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def is_privileged() -> bool:
    """True when this process may create namespaces and configure their networks."""
    caps = effective_capabilities()
    return bool(caps >> CAP_NET_ADMIN & 1) and bool(caps >> CAP_SYS_ADMIN & 1)


def available_congestion_controls() -> list[str]:
    """The kernel's available TCP congestion controllers (empty if unreadable)."""
    try:
        return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


def relay_built() -> bool:
    """True when the compiled extension has the link relay."""
    try:
        from ccarena import _engine
    except ImportError:
        return False
    return hasattr(_engine, "relay_run")


def kernel_config() -> dict[str, str]:
    """/proc/config.gz as CONFIG_* → value (``"n"`` for "is not set"); empty when absent."""
    try:
        text = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode(errors="replace")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
        elif line.startswith("# CONFIG_") and line.endswith(" is not set"):
            out[line[2:-len(" is not set")]] = "n"
    return out


def _run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=20)


def probe(caps: Capabilities) -> None:
    """Fill ``netns``, ``qdiscs``, ``nft_numgen``, ``mptcp`` and ``ecn`` by trying them in a
    scratch namespace (removed before returning)."""
    from pyroute2 import NetNS, netns

    names = RunNames(new_tag())
    ns = names.scratch_ns
    # Registered while it exists: a concurrent `ccarena doctor --cleanup` (or another run's
    # cleanup) removes the namespaces of unregistered tags, and did remove this one mid-probe.
    names.register()
    try:
        netns.create(ns)
    except OSError as err:
        names.unregister()
        caps.netns = False
        caps.probe_error = f"cannot create a network namespace: {err.strerror or err}"
        return
    caps.netns = True
    try:
        with NetNS(ns) as ipr:
            ipr.link("add", ifname="p0", kind="veth", peer="p1")
            for name in ("p0", "p1"):
                ipr.link("set", index=ipr.link_lookup(ifname=name)[0], state="up")
        if caps.tools.get("tc"):
            for qdisc, args in QDISCS.items():
                added = _run(["tc", "-n", ns, "qdisc", "replace", "dev", "p0", "root", *args.split()])
                caps.qdiscs[qdisc] = added.returncode == 0
                _run(["tc", "-n", ns, "qdisc", "del", "dev", "p0", "root"])
        if caps.tools.get("nft") and caps.tools.get("ip"):
            from ccarena.backends.kernel.loss import nft_ruleset

            rule = nft_ruleset("ccaprobe", {"p1": 0.01})
            caps.nft_numgen = _run(["ip", "netns", "exec", ns, "nft", "-f", "-"], rule).returncode == 0
        if caps.tools.get("ip"):
            probe_mptcp(caps, ns)
            caps.ecn = probe_ecn_modes(namespace_tcp_ecn_writer(ns))
    finally:
        try:
            netns.remove(ns)
        except OSError:
            pass
        names.unregister()


MPTCP_SOCKET_PROBE = ("import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262).close()")
"""Creates an IPPROTO_MPTCP socket (Linux refuses it with ENOPROTOOPT where net.mptcp.enabled = 0)."""


def probe_mptcp(caps: Capabilities, ns: str) -> None:
    """Fill the MPTCP fields of ``caps`` from the scratch namespace ``ns``: ``net.mptcp.enabled``,
    an ``IPPROTO_MPTCP`` socket, the schedulers and path managers offered, and how many extra
    subflows ``ip mptcp limits set subflows`` accepts."""
    import sys

    sysctl = "/proc/sys/net/mptcp"
    got = _run(["ip", "netns", "exec", ns, "cat", f"{sysctl}/enabled"])
    if got.returncode != 0:
        caps.mptcp, caps.mptcp_detail = False, "no /proc/sys/net/mptcp: the kernel lacks CONFIG_MPTCP"
        return
    if got.stdout.strip() != "1":
        caps.mptcp, caps.mptcp_detail = False, f"net.mptcp.enabled = {got.stdout.strip()} in a new namespace"
        return
    sock = _run(["ip", "netns", "exec", ns, sys.executable, "-S", "-c", MPTCP_SOCKET_PROBE])
    if sock.returncode != 0:
        last = (sock.stderr.strip().splitlines() or ["failed"])[-1]
        caps.mptcp, caps.mptcp_detail = False, f"an IPPROTO_MPTCP socket cannot be created: {last}"
        return
    for name, attr in (("available_schedulers", "mptcp_schedulers"),
                       ("available_path_managers", "mptcp_path_managers")):
        read = _run(["ip", "netns", "exec", ns, "cat", f"{sysctl}/{name}"])
        setattr(caps, attr, read.stdout.split() if read.returncode == 0 else [])
    for n in range(8, 0, -1):
        if _run(["ip", "-n", ns, "mptcp", "limits", "set", "subflows", str(n),
                 "add_addr_accepted", str(n)]).returncode == 0:
            caps.mptcp_max_subflows = n
            break
    caps.mptcp = True
    caps.mptcp_detail = "net.mptcp.enabled = 1 and IPPROTO_MPTCP sockets in a new namespace"


def detect(*, probe_kernel: bool = True) -> Capabilities:
    """Detect what the kernel backend can use here.

    Args:
        probe_kernel: also try namespaces, qdiscs and nftables (needs privileges; skipped
            without them).
    """
    caps = Capabilities(
        privileged=is_privileged(),
        tools={name: shutil.which(name) for name in (*TOOLS, *OPTIONAL_TOOLS)},
        congestion_controls=available_congestion_controls(),
        relay=relay_built(),
        kernel_config=kernel_config(),
    )
    if probe_kernel and caps.privileged and caps.tools.get("ip"):
        # pyroute2 stops the helper it forks to create the scratch namespace with SIGTERM: under
        # this guard the helper just exits. Without it (``ccarena doctor``) the helper ran the
        # CLI's SIGTERM handler instead, the namespace never appeared, and every probe said "no".
        from ccarena.backends.kernel.signals import sigterm_interrupts

        try:
            with sigterm_interrupts():
                probe(caps)
        except Exception as err:  # doctor reports it; the backend's preflight turns it into one line
            caps.probe_error = f"{type(err).__name__}: {err}"
    return caps

