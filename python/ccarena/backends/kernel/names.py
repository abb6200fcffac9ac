"""Names of everything a kernel run creates, and the run registry that tells leftovers from live
runs.

Every namespace is ``cca-<tag>-<node>`` (``cca-<tag>-wire`` for the links' emulation: relay,
bridges, queues), where ``<tag>`` is unique per run, so runs never collide and ``ccarena doctor --cleanup`` finds leftovers by the
``cca-`` prefix. Interfaces live only inside those namespaces (never in the root namespace), so
their short names (``l<k>``, ``l<k>a``, ``l<k>b``, ``br<k>``; ≤ 15 characters) cannot collide either.

A run registers itself in ``/run/ccarena/<tag>.json`` with its owner's pid and start time; a
namespace whose owner is no longer alive is a leftover.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

PREFIX = "cca-"
"""Every namespace ccarena creates starts with this."""
REGISTRY = Path("/run/ccarena")
TAG_ENV = "CCARENA_RUN_TAG"
"""Environment variable that fixes a run's tag (tests use it to find their own names)."""


def new_tag() -> str:
    """A fresh run tag: ``$CCARENA_RUN_TAG`` + 4 random hex digits, or 6 random hex digits."""
    base = "".join(ch for ch in os.environ.get(TAG_ENV, "") if ch.isalnum())[:12]
    return (base + secrets.token_hex(2)) if base else secrets.token_hex(3)


def process_start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot, /proc/PID/stat field 22), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


@dataclass(frozen=True)
class RunNames:
    """The names of one kernel run."""

    tag: str

    @property
    def prefix(self) -> str:
        """``cca-<tag>-``: the prefix of every namespace of the run."""
        return f"{PREFIX}{self.tag}-"

    def node_ns(self, node: str) -> str:
        """The namespace of a host or router."""
        return f"{self.prefix}{node}"

    @property
    def wire_ns(self) -> str:
        """The namespace every link passes through: the link relay, bridges and queues."""
        return f"{self.prefix}wire"

    @property
    def scratch_ns(self) -> str:
        """A short-lived namespace for probing the kernel's features."""
        return f"{self.prefix}probe"

    @staticmethod
    def link_if(k: int) -> str:
        """A node's interface on physical link ``k``."""
        return f"l{k}"

    @staticmethod
    def wire_if(k: int, side: str) -> str:
        """The wire namespace's interface on physical link ``k`` facing side ``a`` (the link's
        first node) or ``b``."""
        return f"l{k}{side}"

    @staticmethod
    def bridge_if(k: int) -> str:
        """The bridge joining physical link ``k``'s two wire interfaces."""
        return f"br{k}"

    # ------------------------------------------------------------------ registry
    @property
    def registry_file(self) -> Path:
        return REGISTRY / f"{self.tag}.json"

    def register(self) -> None:
        """Record this process as the run's owner."""
        REGISTRY.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        self.registry_file.write_text(json.dumps({"tag": self.tag, "pid": pid,
                                                  "start_time": process_start_time(pid)}))

    def unregister(self) -> None:
        """Forget the run (after its cleanup)."""
        self.registry_file.unlink(missing_ok=True)


def tag_of(namespace: str) -> str | None:
    """The run tag of a ccarena namespace name ``cca-<tag>-<node>``, or None."""
    if not namespace.startswith(PREFIX):
        return None
    rest = namespace[len(PREFIX):]
    return rest.split("-", 1)[0] if "-" in rest else None


def owner_alive(tag: str) -> bool:
    """True when the run ``tag`` is registered and its owner process is still the same, alive
    process."""
    path = REGISTRY / f"{tag}.json"
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    pid = int(entry.get("pid", 0))
    return pid > 0 and process_start_time(pid) == entry.get("start_time")
