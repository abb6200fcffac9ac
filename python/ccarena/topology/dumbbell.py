"""``dumbbell``: ``pairs`` hosts on each side of one bottleneck between two routers.

Hosts ``left0 … left{pairs-1}`` attach to router ``r0``, hosts ``right0 … right{pairs-1}`` to
router ``r1``; ``r0``–``r1`` is the bottleneck. TOML::

    [topology]
    kind = "dumbbell"
    pairs = 2
    bottleneck = { rate = "20Mbps", delay = "10ms", loss = "0%", queue = { limit = "100pkt" } }
    access = { rate = "1Gbps", delay = "1ms" }       # or a list, one table per pair

``access`` is one table for every host, or a list of ``pairs`` tables, where entry i applies to both
``left{i}`` and ``right{i}`` (different RTTs per pair). Bottleneck ``loss`` applies from r0 to r1
(left to right), ``reverse_loss`` from r1 to r0.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ccarena.errors import FieldError
from ccarena.quantities import StrictModel
from ccarena.topology.links import AccessLink, Link
from ccarena.topology.network import Network, Node
from ccarena.topology.wiring import describe_link


class Dumbbell(StrictModel):
    """Scenario model of the dumbbell topology."""

    kind: Literal["dumbbell"]
    pairs: int = Field(1, ge=1, le=10_000)
    bottleneck: Link
    access: AccessLink | list[AccessLink] = AccessLink()

    @model_validator(mode="after")
    def _access_per_pair(self) -> "Dumbbell":
        if isinstance(self.access, list) and len(self.access) != self.pairs:
            raise FieldError("access", f"gives {len(self.access)} links for {self.pairs} pairs; "
                                       "give one table, or one per pair")
        return self

    def access_for(self, pair: int) -> AccessLink:
        """The access link parameters of pair ``pair``."""
        return self.access[pair] if isinstance(self.access, list) else self.access

    def node_names(self) -> dict[str, str]:
        """Every node name → its kind ("host" or "router")."""
        names = {f"left{i}": "host" for i in range(self.pairs)}
        names.update({f"right{i}": "host" for i in range(self.pairs)})
        names.update({"r0": "router", "r1": "router"})
        return names

    def build(self) -> Network:
        """The explicit network: hosts left*, right*, routers r0, r1; the bottleneck r0->r1 has
        role "bottleneck", r1->r0 "bottleneck-reverse"; access links have role "access"."""
        nodes = [Node(f"left{i}", "host") for i in range(self.pairs)]
        nodes += [Node(f"right{i}", "host") for i in range(self.pairs)]
        nodes += [Node("r0", "router", 1), Node("r1", "router", 1)]
        net = Network(nodes=nodes)
        b = self.bottleneck
        net.add_duplex("r0", "r1", rate_bps=b.rate_bps, delay_ns=b.delay_ns, loss_ab=b.loss,
                       loss_ba=b.reverse_loss, queue=b.queue,
                       role="bottleneck", reverse_role="bottleneck-reverse", impair=b.impair())
        for i in range(self.pairs):
            a = self.access_for(i)
            for host, router in ((f"left{i}", "r0"), (f"right{i}", "r1")):
                # loss applies host -> router on the left, router -> host on the right:
                # both are the left-to-right direction of data.
                forward_from_host = router == "r0"
                net.add_duplex(host, router, rate_bps=a.rate_bps, delay_ns=a.delay_ns,
                               loss_ab=a.loss if forward_from_host else a.reverse_loss,
                               loss_ba=a.reverse_loss if forward_from_host else a.loss,
                               queue=a.queue, role="access",
                               forward_is_ab=forward_from_host, impair=a.impair())
        return net

    def describe(self) -> list[str]:
        """Lines for ``ccarena validate`` and ``ccarena topo``."""
        access = "access: " + ("one table per pair" if isinstance(self.access, list)
                               else describe_link(self.access))
        return [f"dumbbell: {self.pairs} host pair(s) left{{i}} → right{{i}} over r0–r1",
                f"bottleneck: {describe_link(self.bottleneck)}", access]
