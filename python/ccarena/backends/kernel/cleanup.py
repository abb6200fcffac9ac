"""Finding and removing what kernel runs left behind (``ccarena doctor --cleanup``).

A run's own ``finally`` removes its processes (by pid) and namespaces (by name). What survives a
``kill -9`` of ccarena: its namespaces (``/run/netns/cca-<tag>-*``; the veths inside die with
them), its registry entry and work directory. Its generator and relay processes die with it
(``PR_SET_PDEATHSIG``), but any that remain are found by the namespace they run in (the inode of
``/proc/PID/ns/net``) or by the run's names in their command line, and killed by pid.

A run is a leftover when its owner (``/run/ccarena/<tag>.json``) is gone; runs whose owner is
alive are left alone unless ``include_live``.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ccarena.backends.kernel.names import PREFIX, REGISTRY, owner_alive, tag_of

NETNS_DIR = Path("/run/netns")


@dataclass
class Leftovers:
    """What :func:`find_leftovers` found.

    Attributes:
        namespaces: ccarena namespace names.
        processes: pid → command line (processes in those namespaces or naming their runs).
        links: root-namespace interfaces whose name starts with ``cca-``.
        tags: run tags involved.
        workdirs: work directories of those runs.
    """

    namespaces: list[str] = field(default_factory=list)
    processes: dict[int, str] = field(default_factory=dict)
    links: list[str] = field(default_factory=list)
    tags: set[str] = field(default_factory=set)
    workdirs: list[Path] = field(default_factory=list)

    def empty(self) -> bool:
        """Nothing was found."""
        return not (self.namespaces or self.processes or self.links or self.workdirs)


def ccarena_namespaces() -> list[str]:
    """Every namespace named ``cca-*``."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(PREFIX))


def _inode(path: str | Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def processes_in(namespaces: list[str], tags: set[str]) -> dict[int, str]:
    """Processes (other than this one) running in one of ``namespaces`` or whose command line
    names a run in ``tags`` (``cca-<tag>-``): pid → command line."""
    inodes = {i for i in (_inode(NETNS_DIR / ns) for ns in namespaces) if i is not None}
    marks = [f"{PREFIX}{t}-" for t in tags]
    me = os.getpid()
    out: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if not cmdline:
            continue  # kernel threads
        if _inode(entry / "ns" / "net") in inodes or any(m in cmdline for m in marks):
            out[pid] = cmdline
    return out


def root_links() -> list[str]:
    """Interfaces in this (root) namespace named ``cca-*``."""
    base = Path("/sys/class/net")
    return sorted(p.name for p in base.iterdir() if p.name.startswith(PREFIX)) if base.is_dir() else []


def workdir_root() -> Path:
    """Where runs keep their work directories."""
    return Path(tempfile.gettempdir())


def find_leftovers(include_live: bool = False) -> Leftovers:
    """Namespaces, processes, links and work directories of runs whose owner is gone (or of
    every run, with ``include_live``)."""
    found = Leftovers()
    for ns in ccarena_namespaces():
        tag = tag_of(ns)
        if tag is not None and not include_live and owner_alive(tag):
            continue
        found.namespaces.append(ns)
        if tag is not None:
            found.tags.add(tag)
    if REGISTRY.is_dir():
        for entry in REGISTRY.glob("*.json"):
            if include_live or not owner_alive(entry.stem):
                found.tags.add(entry.stem)
    for d in workdir_root().glob(f"{PREFIX}*-work*"):
        tag = tag_of(d.name)
        if tag is not None and (include_live or not owner_alive(tag)):
            found.workdirs.append(d)
            found.tags.add(tag)
    found.processes = processes_in(found.namespaces, found.tags)
    found.links = [name for name in root_links() if include_live or not owner_alive(tag_of(name) or "")]
    return found


def kill_pids(pids: list[int], grace_s: float = 1.0) -> None:
    """SIGTERM each pid, wait up to ``grace_s``, SIGKILL the ones still alive."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if Path(f"/proc/{p}").exists() and not _zombie(p)]
        time.sleep(0.05)
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def remove_namespaces(namespaces: list[str]) -> list[str]:
    """Delete the namespaces (their interfaces go with them); returns those that could not be."""
    from pyroute2 import netns

    failed = []
    for ns in namespaces:
        try:
            netns.remove(ns)
        except FileNotFoundError:
            pass
        except OSError:
            failed.append(ns)
    return failed


def remove_root_links(names: list[str]) -> None:
    """Delete root-namespace interfaces by name."""
    if not names:
        return
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        for name in names:
            for idx in ipr.link_lookup(ifname=name):
                try:
                    ipr.link("del", index=idx)
                except Exception:  # already gone with its peer
                    pass


def cleanup(found: Leftovers) -> list[str]:
    """Remove everything in ``found``: processes first (by pid), then namespaces, links, work
    directories and registry entries. Returns namespaces that could not be removed."""
    kill_pids(sorted(found.processes))
    failed = remove_namespaces(found.namespaces)
    remove_root_links(found.links)
    for d in found.workdirs:
        shutil.rmtree(d, ignore_errors=True)
    for tag in found.tags:
        (REGISTRY / f"{tag}.json").unlink(missing_ok=True)
    return failed
