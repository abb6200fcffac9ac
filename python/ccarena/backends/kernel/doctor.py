"""``ccarena doctor``: what the kernel backend can use on this machine, and ``--cleanup``."""

from __future__ import annotations

import os

from rich.table import Table

from ccarena.backends.kernel import capabilities, ecn_modes
from ccarena.backends.kernel.cleanup import cleanup, find_leftovers
from ccarena.backends.kernel.preflight import NOT_ROOT
from ccarena.errors import UserError


def doctor_rows(caps: capabilities.Capabilities | None = None) -> list[tuple[str, str, str]]:
    """``(item, status, detail)`` rows; status is ``ok``, ``missing``, ``no`` or ``–``."""
    caps = caps or capabilities.detect()
    rows: list[tuple[str, str, str]] = []

    def yes(flag: bool | None) -> str:
        return "–" if flag is None else ("ok" if flag else "no")

    rows.append(("root / CAP_NET_ADMIN", yes(caps.privileged),
                 "" if caps.privileged else NOT_ROOT))
    rows.append(("network namespaces", yes(caps.netns), caps.probe_error or ""))
    for name, package in {**capabilities.TOOLS, **capabilities.OPTIONAL_TOOLS}.items():
        path = caps.tools.get(name)
        needed = "needed" if name in capabilities.TOOLS else "optional (not used by the backend)"
        rows.append((name, "ok" if path else "missing",
                     f"{path} — {needed}" if path else f"{needed}; apt-get install {package}"))
    for qdisc in capabilities.QDISCS:
        ok = caps.qdiscs.get(qdisc) if caps.qdiscs else None
        config = caps.kernel_config.get(f"CONFIG_NET_SCH_{qdisc.upper()}", "")
        rows.append((f"qdisc {qdisc}", yes(ok), f"CONFIG_NET_SCH_{qdisc.upper()}={config}" if config else ""))
    if caps.netem or not caps.relay:
        mode = "tc: htb rate and queue, " + ("netem delay" if caps.netem else
                                              "no delay possible (no netem, relay not built: pip install -e .)")
    else:
        mode = "relay: ccarena's link emulator does rate, queue, delay and loss (no netem in this kernel)"
    rows.append(("link emulation (auto)", "ok" if (caps.netem or caps.relay) else "no", mode))
    rows.append(("relay built", yes(caps.relay), "ccarena._engine.relay_run (kernel.emulation = \"relay\")"
                 if caps.relay else "pip install -e ."))
    rows.append(("PM QoS (/dev/cpu_dma_latency)", yes(os.access("/dev/cpu_dma_latency", os.W_OK)),
                 "the relay keeps idle CPUs polling while it runs (shorter wake-ups)"))
    rows.append(("nftables numgen (random loss)", yes(caps.nft_numgen), ""))
    rows.append(("congestion controllers", "ok" if caps.congestion_controls else "no",
                 " ".join(caps.congestion_controls)))
    rows.extend(mptcp_rows(caps))
    rows.extend(ecn_rows(caps))
    rows.append(("/proc/config.gz", yes(bool(caps.kernel_config)), ""))
    if caps.privileged:
        rows.append(leftovers_row())
    return rows


def mptcp_rows(caps: capabilities.Capabilities) -> list[tuple[str, str, str]]:
    """Whether Multipath TCP runs here (``net.mptcp.enabled`` in a new namespace, an
    ``IPPROTO_MPTCP`` socket) and what its path manager allows: subflows per connection, the
    schedulers, and that coupled controllers are not in Linux (:mod:`.mptcp`)."""
    if caps.mptcp is None:
        return [("MPTCP", "–", "not probed (needs root)")]
    if not caps.mptcp:
        return [("MPTCP", "no", f"{caps.mptcp_detail}; MPTCP flows run on --backend sim only")]
    extra = caps.mptcp_max_subflows
    pm = ("in-kernel path manager" + (f" (available: {' '.join(caps.mptcp_path_managers)})"
                                      if caps.mptcp_path_managers else ""))
    allows = (f"{pm}: up to {extra + 1} subflows per connection (ip mptcp limits: {extra} extra), "
              "one per extra host address ccarena adds" if extra else f"{pm}: ip mptcp limits refused every value")
    return [("MPTCP", "ok", caps.mptcp_detail),
            ("MPTCP path manager", "ok" if extra else "no", allows),
            ("MPTCP schedulers", "ok", f"{' '.join(caps.mptcp_schedulers) or 'default'} "
                                       "(scheduler = \"minrtt\" runs Linux's default)"),
            # Short enough for an 80-column terminal (the table wraps a longer name).
            ("MPTCP coupled CC", "no",
             "lia, olia, balia are not in Linux upstream: coupling = \"uncoupled\" on the kernel; "
             "coupled ones on --backend sim")]


def ecn_rows(caps: capabilities.Capabilities) -> list[tuple[str, str, str]]:
    """The ECN modes of the kernel's TCP (``kernel.ecn``), from the values of ``net.ipv4.tcp_ecn``
    a new namespace accepts (:mod:`.ecn_modes`, the probe the preflight uses), and whether the
    kernel has TCP Prague (out of tree in Linux: the L4S side runs on ``--backend sim`` or
    ``udp``)."""
    ecn = caps.ecn
    accepted = f"net.ipv4.tcp_ecn accepts {ecn.accepted_text()}" if ecn is not None else ""
    classic = ("–" if ecn is None else "ok" if ecn.classic else "no",
               f"kernel.ecn = \"classic\"; {accepted}" if ecn is not None else "")
    accecn = ("–" if ecn is None else "ok" if ecn.accecn else "no",
              "" if ecn is None else f"kernel.ecn = \"accecn\"; {accepted}" if ecn.accecn
              else f"kernel.ecn = \"accecn\" is refused: {accepted}, not "
                   f"{ecn_modes.REQUEST_ACCECN} and {ecn_modes.ACCEPT_ACCECN}")
    prague = "prague" in caps.congestion_controls
    return [("ECN (RFC 3168)", *classic), ("Accurate ECN (RFC 9768)", *accecn),
            ("TCP Prague (L4S)", "ok" if prague else "no",
             "in tcp_available_congestion_control" if prague else
             "out of tree in Linux; ccarena's prague runs on --backend sim or udp")]


def leftovers_row() -> tuple[str, str, str]:
    """The doctor row for what killed runs left behind (namespaces, processes, links, work
    directories): ``ok`` when nothing, else how much and the command that removes it."""
    found = find_leftovers()
    counts = [(len(found.namespaces), "namespace", "namespaces"),
              (len(found.processes), "process", "processes"), (len(found.links), "link", "links"),
              (len(found.workdirs), "work directory", "work directories")]
    parts = [f"{n} {one if n == 1 else many}" for n, one, many in counts if n]
    if not parts:
        return ("leftovers of killed runs", "ok", "none")
    names = ", ".join(found.namespaces[:3]) + (" …" if len(found.namespaces) > 3 else "")
    return ("leftovers of killed runs", "found",
            f"{', '.join(parts)}{f' ({names})' if names else ''}: ccarena doctor --cleanup removes them")


def doctor_table() -> Table:
    """The doctor report as a rich table."""
    table = Table(title="ccarena doctor: the kernel backend on this machine")
    for c in ("item", "status", "detail"):
        table.add_column(c)
    for row in doctor_rows():
        table.add_row(*row)
    return table


def cleanup_report(tag_prefix: str | None = None) -> tuple[list[str], bool]:
    """Remove leftovers of dead runs (optionally only tags starting with ``tag_prefix``).

    Returns:
        (lines to print, True when nothing is left).

    Raises:
        UserError: not privileged.
    """
    if not capabilities.is_privileged():
        raise UserError(NOT_ROOT)
    found = find_leftovers()
    if tag_prefix:
        keep = {t for t in found.tags if t.startswith(tag_prefix)}
        found.tags = keep
        found.namespaces = [ns for ns in found.namespaces if any(ns.startswith(f"cca-{t}-") for t in keep)]
        found.workdirs = [d for d in found.workdirs if any(d.name.startswith(f"cca-{t}-") for t in keep)]
        found.links = [name for name in found.links if any(name.startswith(f"cca-{t}") for t in keep)]
        from ccarena.backends.kernel.cleanup import processes_in

        found.processes = processes_in(found.namespaces, found.tags)
    if found.empty() and not found.tags:
        return ["nothing to clean up"], True
    lines = [f"killed process {pid}: {cmd[:100]}" for pid, cmd in sorted(found.processes.items())]
    failed = cleanup(found)
    lines += [f"removed namespace {ns}" for ns in found.namespaces if ns not in failed]
    lines += [f"removed link {name}" for name in found.links]
    lines += [f"removed work directory {d}" for d in found.workdirs]
    lines += [f"could not remove namespace {ns}" for ns in failed]
    if not lines:
        lines = ["nothing to clean up"]
    return lines, not failed
