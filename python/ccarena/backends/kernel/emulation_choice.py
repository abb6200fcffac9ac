"""How the kernel backend emulates the scenario's links: which mechanism does the rate and queue,
the propagation delay and the random loss.

Two ways, chosen per run (scenario ``[kernel] emulation``):

- ``"relay"``: ccarena's userspace link emulator (``crates/relay``) joins every link's two wire
  interfaces and does all of it — a DropTail queue in packets or bytes, a transmitter at the link
  rate, random loss after it, the propagation delay — with the simulator's model, timed from the
  kernel's receive timestamps, and samples the queue itself. It is the choice when the kernel has
  no netem, and the only one that holds at high rates on a virtual machine: there a kernel
  shaper's per-packet timer costs 10–40 µs of CPU, so htb or tbf cannot pace 1 Gbit/s, while the
  relay wakes once per batch of due frames.
- ``"tc"``: the kernel's own mechanisms — htb + pfifo/bfifo for the rate and queue, netem for the
  delay (or, when the kernel has no netem, the relay for the delay only), nftables ``numgen`` for
  the loss. Closest to a hand-built Linux testbed; fine at the rates where timers are cheap.

``"auto"`` (the default) takes ``"tc"`` when the kernel has netem, else ``"relay"``; and
``"relay"`` whenever a link's rate follows a trace, which tc cannot shape, or the run captures
packets (``[output] pcap``), which only the relay writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ccarena.backends.kernel.capabilities import Capabilities
from ccarena.errors import UserError
from ccarena.runspec import LinkSpec, RunSpec

Mode = Literal["auto", "relay", "tc"]
MODES: tuple[str, ...] = ("auto", "relay", "tc")


@dataclass(frozen=True)
class Emulation:
    """The mechanisms of one run.

    Attributes:
        mode: ``"relay"`` or ``"tc"`` (never ``"auto"``: resolved).
        rate_and_queue: ``"relay"`` or ``"htb"``.
        delay: ``"relay"``, ``"netem"`` or ``"none"`` (no link has a delay).
        loss: ``"relay"``, ``"nft"`` or ``"none"`` (no link loses packets).
    """

    mode: str
    rate_and_queue: str
    delay: str
    loss: str

    def relays(self, link: LinkSpec) -> bool:
        """True when the relay carries this spec link (every link in relay mode; in tc mode only
        links with a delay, when netem is absent)."""
        return self.rate_and_queue == "relay" or (self.delay == "relay" and link.delay_ns > 0)

    def describe(self) -> dict[str, Any]:
        """The mechanisms (stored with the run as ``emulation.mechanisms``): ``mode``,
        ``rate_and_queue``, ``delay``, ``loss`` as codes, and ``details``, each in words."""
        words = {
            "relay": "ccarena's link emulator (AF_PACKET relay in the wire namespace)",
            "htb": "htb + pfifo/bfifo in the wire namespace (stab overhead -14: IP sizes)",
            "netem": "netem on the sending node's egress",
            "nft": "nftables numgen on the receiver's ingress",
            "none": "none",
        }
        return {"mode": self.mode, "rate_and_queue": self.rate_and_queue, "delay": self.delay,
                "loss": self.loss,
                "details": {"rate_and_queue": words[self.rate_and_queue], "delay": words[self.delay],
                            "loss": words[self.loss]}}


def choose(spec: RunSpec, caps: Capabilities, requested: str = "auto") -> Emulation:
    """Resolve ``requested`` (``auto``, ``relay`` or ``tc``) against what this machine offers.

    Raises:
        UserError: an unknown mode, or the relay asked for (or needed) but not built.
    """
    if requested not in MODES:
        raise UserError(f"kernel.emulation: unknown mode '{requested}' (choose auto, relay or tc)")
    delayed = any(link.delay_ns > 0 for link in spec.links)
    lossy = any(link.loss > 0 for link in spec.links)
    traced = any(link.trace is not None for link in spec.links)  # only the relay runs a trace
    # Only the relay duplicates and reorders as the simulator does (crates/link/src/impair.rs).
    impaired = any(link.duplicate > 0 or link.reorder > 0 for link in spec.links)
    captured = getattr(spec, "pcap", None) is not None  # only the relay writes pcap
    mode = requested if requested != "auto" else (
        "relay" if (traced or impaired or captured) and caps.relay else ("tc" if caps.netem or not caps.relay else "relay"))
    if mode == "tc" and impaired:
        raise UserError("kernel.emulation: duplicate and reorder need ccarena's relay "
                        "(emulation = \"relay\"; rebuild with pip install -e . if it is missing)")
    if mode == "relay":
        if not caps.relay:
            raise UserError("kernel.emulation: 'relay' needs ccarena's relay, which this build lacks "
                            "(rebuild: pip install -e .), or use emulation = \"tc\"")
        return Emulation("relay", "relay", "relay" if delayed else "none", "relay" if lossy else "none")
    delay = ("netem" if caps.netem else "relay") if delayed else "none"
    return Emulation("tc", "htb", delay, "nft" if lossy else "none")
