"""Which ECN feedback this kernel's TCP can negotiate, and the ``net.ipv4.tcp_ecn`` each host gets.

Linux chooses a connection's ECN feedback at the handshake from ``net.ipv4.tcp_ecn``, per network
namespace; each value names the highest variant a host negotiates for incoming connections and the
one it requests on outgoing connections (Documentation/networking/ip-sysctl.rst):

====== ====================== ======================
value  incoming               outgoing
====== ====================== ======================
0      no ECN                 no ECN
1      ECN (RFC 3168)         ECN (RFC 3168)
2      ECN (RFC 3168)         no ECN (Linux's default)
3      AccECN (RFC 9768)      AccECN (RFC 9768)
4      AccECN                 ECN
5      AccECN                 no ECN
====== ====================== ======================

Kernels without Accurate ECN refuse 3–5 (Linux 6.18 here accepts 0–2). Nothing here assumes what a
kernel has: :func:`probe_ecn_modes` writes every value in a scratch namespace and keeps the ones the
kernel took; ``ccarena doctor`` and the backend's preflight share it
(:func:`ccarena.backends.kernel.capabilities.probe`).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Callable

TCP_ECN_PATH = "/proc/sys/net/ipv4/tcp_ecn"
"""The sysctl ``net.ipv4.tcp_ecn`` (per network namespace)."""

NO_ECN = 0
"""Neither requests nor accepts ECN."""
REQUEST_ECN = 1
"""Requests RFC 3168 ECN on the connections it opens (RFC 3168 §6.1.1), and accepts it."""
ACCEPT_ECN = 2
"""Accepts RFC 3168 ECN when asked, never asks: the default of every new namespace."""
REQUEST_ACCECN = 3
"""Requests Accurate ECN on the connections it opens (RFC 9768 §3.1.1; it falls back to RFC 3168
ECN or none, whichever the peer answers, §3.1.2), and accepts it."""
ACCEPT_ACCECN = 5
"""Accepts Accurate ECN (or RFC 3168 ECN) when asked, never asks."""
TCP_ECN_VALUES = (0, 1, 2, 3, 4, 5)
"""Every value of ``net.ipv4.tcp_ecn`` a kernel with Accurate ECN accepts."""

KERNEL_ECN_MODES = ("off", "classic", "accecn")
"""The scenario's ``[kernel] ecn`` values (:class:`ccarena.backends.kernel.options.KernelOptions`)."""


@dataclass(frozen=True)
class EcnModes:
    """What :func:`probe_ecn_modes` found.

    Attributes:
        accepted: the values of ``net.ipv4.tcp_ecn`` the kernel took, ascending.
    """

    accepted: tuple[int, ...]

    @property
    def classic(self) -> bool:
        """RFC 3168 ECN can be requested (``tcp_ecn = 1``)."""
        return REQUEST_ECN in self.accepted

    @property
    def accecn(self) -> bool:
        """Accurate ECN (RFC 9768) can be requested and accepted (``tcp_ecn`` 3 and 5)."""
        return REQUEST_ACCECN in self.accepted and ACCEPT_ACCECN in self.accepted

    def accepted_text(self) -> str:
        """The accepted values as a reader writes them: ``"0–2"``, ``"0–5"``, ``"0, 2"``, ``"none"``."""
        values = self.accepted
        if not values:
            return "none"
        if len(values) > 2 and values == tuple(range(values[0], values[-1] + 1)):
            return f"{values[0]}–{values[-1]}"
        return ", ".join(str(v) for v in values)


def probe_ecn_modes(write_tcp_ecn: Callable[[int], bool]) -> EcnModes:
    """Try every value of ``net.ipv4.tcp_ecn`` (:data:`TCP_ECN_VALUES`) with ``write_tcp_ecn``.

    Args:
        write_tcp_ecn: writes one value to the sysctl of a throw-away namespace and returns True
            when the kernel took it (:func:`namespace_tcp_ecn_writer`; tests pass a fake).
    """
    return EcnModes(tuple(v for v in TCP_ECN_VALUES if write_tcp_ecn(v)))


def namespace_tcp_ecn_writer(namespace: str) -> Callable[[int], bool]:
    """A writer for :func:`probe_ecn_modes`: ``net.ipv4.tcp_ecn`` in network namespace
    ``namespace`` (which must exist, and is the caller's to remove). A value counts as taken
    when the write succeeds and reads back unchanged (a kernel that clamps is not trusted)."""

    def write(value: int) -> bool:
        done = subprocess.run(
            ["ip", "netns", "exec", namespace, "sh", "-c",
             f"echo {int(value)} > {TCP_ECN_PATH} && cat {TCP_ECN_PATH}"],
            capture_output=True, text=True, timeout=20)
        return done.returncode == 0 and done.stdout.strip() == str(int(value))

    return write


def host_tcp_ecn(mode: str, sends_ecn_flows: bool) -> int | None:
    """``net.ipv4.tcp_ecn`` of a host namespace under ``[kernel] ecn = mode``.

    Args:
        mode: ``"classic"`` — a host that sends flows with ``ecn = true`` requests RFC 3168 ECN;
            the others keep Linux's default (accept it when asked); ``"accecn"`` — the same with
            Accurate ECN (RFC 9768), which every host accepts; ``"off"`` — no host requests or
            accepts ECN.
        sends_ecn_flows: the host sends TCP flows with ``ecn = true``.

    Returns:
        The value to write, or None to leave the namespace's default (:data:`ACCEPT_ECN`).

    Raises:
        ValueError: ``mode`` is not one of :data:`KERNEL_ECN_MODES`.
    """
    if mode == "classic":
        return REQUEST_ECN if sends_ecn_flows else None
    if mode == "accecn":
        return REQUEST_ACCECN if sends_ecn_flows else ACCEPT_ACCECN
    if mode == "off":
        return NO_ECN
    raise ValueError(f"unknown kernel.ecn mode {mode!r} (choose {', '.join(KERNEL_ECN_MODES)})")
