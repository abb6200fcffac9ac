"""``single_link``: two hosts, ``a`` and ``b``, joined by one duplex link.

TOML::

    [topology]
    kind = "single_link"
    link = { rate = "10Mbps", delay = "20ms", loss = "1%", queue = { limit = "100pkt" } }

``loss`` applies from ``a`` to ``b``, ``reverse_loss`` from ``b`` to ``a``.
"""

from __future__ import annotations

from typing import Literal

from ccarena.quantities import StrictModel
from ccarena.topology.links import Link
from ccarena.topology.network import Network, Node
from ccarena.topology.wiring import describe_link

HOSTS = ("a", "b")


class SingleLink(StrictModel):
    """Scenario model of the single-link topology."""

    kind: Literal["single_link"]
    link: Link

    def node_names(self) -> dict[str, str]:
        """Every node name → its kind ("host" or "router")."""
        return {h: "host" for h in HOSTS}

    def build(self) -> Network:
        """The explicit network: nodes a, b; links a->b (role "link") and b->a ("link-reverse")."""
        net = Network(nodes=[Node(h, "host") for h in HOSTS])
        q = self.link.queue
        net.add_duplex("a", "b", rate_bps=self.link.rate_bps, delay_ns=self.link.delay_ns,
                       loss_ab=self.link.loss, loss_ba=self.link.reverse_loss,
                       queue=q, role="link", reverse_role="link-reverse", impair=self.link.impair())
        return net

    def describe(self) -> list[str]:
        """Lines for ``ccarena validate`` and ``ccarena topo``."""
        return ["single link: hosts a and b", f"link: {describe_link(self.link)}"]
