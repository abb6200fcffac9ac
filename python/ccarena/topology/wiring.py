"""What the generated topologies share: role-named link classes, per-link overrides, and building a
:class:`Network` from a plan of nodes and wires.

A builder (``chain``, ``parking_lot``, ``fat_tree``, ``leaf_spine``, ``super_spine``) lists its
nodes (with their layer) and its wires — physical links ``a--b`` with the class they belong to.
Each class is a link table of the scenario (``core = { rate = "40Gbps", delay = "5us" }``); every
wire of a class gets that table's rate, delay, loss and queue, and both directions get the class
name as their ``role`` (the report and ``[[events]]`` select links by it). A wire's ``a`` end is the
one its ``loss`` applies from (towards the core, or along the long path); ``reverse_loss`` applies
from ``b``.

Per-link overrides change single links of a class::

    [[topology.overrides]]
    link = "pod0-agg1--core2"        # the two node names joined by "--", either order
    rate = "1Gbps"                   # any of rate, delay, loss, reverse_loss, queue
"""

from __future__ import annotations

import difflib
from collections import deque
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable

from pydantic import Field, model_validator

from ccarena.errors import FieldError
from ccarena.quantities import Fraction, StrictModel, TimeNs
from ccarena.topology.links import Link, LinkRateBps, Queue
from ccarena.topology.network import Network, Node
from ccarena.traces.trace_files import describe_rate
from ccarena.units import format_time

MAX_HOSTS = 8192
"""The most hosts a generated topology may have (a k = 32 fat-tree). Routing state grows with
hosts × nodes (a k = 32 fat-tree already has 8,192 × 9,472 destination entries) and every host runs
flow endpoints; a bigger network cannot be prepared and run on a small machine."""

SEPARATOR = "--"
"""Joins the two node names of a physical link (``pod0-agg1--core2``); node names may hold ``-``."""


def link_name(a: str, b: str) -> str:
    """The physical link between ``a`` and ``b`` as overrides and events name it."""
    return f"{a}{SEPARATOR}{b}"


class FabricLink(Link):
    """A data-center link class: 10 Gbps, 1 µs, no loss and a 100-packet queue unless given."""

    rate_bps: LinkRateBps = Field("10Gbps", alias="rate")
    delay_ns: TimeNs = Field("1us", alias="delay")


class Override(StrictModel):
    """``[[topology.overrides]]``: one physical link's own values (the fields not given keep its
    class's)."""

    link: str
    rate_bps: LinkRateBps | None = Field(None, alias="rate")
    delay_ns: TimeNs | None = Field(None, alias="delay")
    loss: Fraction | None = None
    reverse_loss: Fraction | None = None
    queue: Queue | None = None

    def apply(self, link: Link) -> Link:
        """``link`` with this override's values laid over it."""
        given = {k: v for k, v in (("rate_bps", self.rate_bps), ("delay_ns", self.delay_ns),
                                   ("loss", self.loss), ("reverse_loss", self.reverse_loss),
                                   ("queue", self.queue)) if v is not None}
        return link.model_copy(update=given)


@dataclass(frozen=True)
class Wire:
    """A planned physical link from ``a`` to ``b`` of link class ``cls``."""

    a: str
    b: str
    cls: str


def describe_link(link: Link) -> str:
    """``"10 Gbps, 5 µs"`` (with loss and queue when they are not the defaults)."""
    parts = [describe_rate(link.rate_bps), format_time(link.delay_ns / 1e9)]
    if link.loss or link.reverse_loss:
        loss = f"{link.loss * 100:g}% loss"
        if link.reverse_loss != link.loss:
            loss += f" ({link.reverse_loss * 100:g}% reverse)"
        parts.append(loss)
    limit = link.queue.limit
    parts.append(f"{limit.packets} pkt queue" if limit.packets is not None else f"{limit.bytes} B queue")
    return ", ".join(parts)


def unreachable_pair(hosts: list[str], adjacency: dict[str, list[str]]) -> tuple[str, str] | None:
    """A pair of hosts with no path between them, or None (one breadth-first search)."""
    if not hosts:
        return None
    seen = {hosts[0]}
    todo = deque([hosts[0]])
    while todo:
        for nb in adjacency.get(todo.popleft(), ()):
            if nb not in seen:
                seen.add(nb)
                todo.append(nb)
    missing = next((h for h in hosts if h not in seen), None)
    return (hosts[0], missing) if missing is not None else None


def check_host_count(field: str, hosts: int, what: str) -> None:
    """Refuse a topology with more than :data:`MAX_HOSTS` hosts.

    Raises:
        FieldError: at ``field``, with the count and the bound.
    """
    if hosts > MAX_HOSTS:
        raise FieldError(field, f"gives {hosts:,} hosts ({what}); at most {MAX_HOSTS:,} hosts "
                                "(a k = 32 fat-tree) can be prepared and run on one machine")


def build_network(nodes: list[Node], wires: Iterable[Wire], link_of: Any,
                  reverse_roles: dict[str, str] | None = None,
                  overrides: dict[str, Override] | None = None) -> Network:
    """A :class:`Network` of ``nodes`` and ``wires``: each wire gets ``link_of(cls)``'s values,
    with its override laid over them; role = the class name (``reverse_roles[cls]`` for the b→a
    direction when given)."""
    net = Network(nodes=nodes)
    overrides = overrides or {}
    reverse_roles = reverse_roles or {}
    for w in wires:
        link = link_of(w.cls)
        name = link_name(w.a, w.b)
        override = overrides.get(name) or overrides.get(link_name(w.b, w.a))
        if override is not None:
            link = override.apply(link)
        net.add_duplex(w.a, w.b, rate_bps=link.rate_bps, delay_ns=link.delay_ns, loss_ab=link.loss,
                       loss_ba=link.reverse_loss, queue=link.queue, role=w.cls,
                       reverse_role=reverse_roles.get(w.cls), physical=name, impair=link.impair())
    return net


class Wired(StrictModel):
    """Base of the generated topologies: ``overrides`` and the build from :meth:`plan_nodes` and
    :meth:`plan_wires`. A subclass sets :attr:`CLASSES` (its link class fields) and may set
    :attr:`REVERSE_ROLES` (the role of a class's b→a direction, e.g. ``bottleneck-reverse``)."""

    CLASSES: ClassVar[tuple[str, ...]] = ()
    REVERSE_ROLES: ClassVar[dict[str, str]] = {}

    overrides: list[Override] = []

    def plan_nodes(self) -> list[Node]:
        """Every node in drawing order (pods together), hosts and routers with their layers."""
        raise NotImplementedError

    def plan_wires(self) -> Iterable[Wire]:
        """Every physical link with its class."""
        raise NotImplementedError

    def link_class(self, cls: str) -> Link:
        """The link table of class ``cls``."""
        return getattr(self, cls)

    def summary(self) -> str:
        """The kind's size, in lines of at most 80 characters."""
        return self.kind if hasattr(self, "kind") else ""

    @model_validator(mode="after")
    def _overrides_name_links(self) -> "Wired":
        if not self.overrides:
            return self
        names = {link_name(w.a, w.b): w for w in self.plan_wires()}
        seen: dict[frozenset[str], int] = {}
        for i, o in enumerate(self.overrides):
            ends = o.link.split(SEPARATOR)
            wire = names.get(o.link) or (names.get(link_name(ends[1], ends[0])) if len(ends) == 2 else None)
            if wire is None:
                close = difflib.get_close_matches(o.link, list(names), n=1, cutoff=0.6)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                example = next(iter(names), "")
                raise FieldError(f"overrides[{i}].link",
                                 f"no link '{o.link}' in this {getattr(self, 'kind', 'topology')}"
                                 f"{hint}; name a link by its two nodes joined by '--', e.g. "
                                 f"'{example}'")
            key = frozenset((wire.a, wire.b))
            if key in seen:
                raise FieldError(f"overrides[{i}].link", f"overrides '{o.link}' again (also "
                                                         f"overrides[{seen[key]}])")
            seen[key] = i
        return self

    def node_names(self) -> dict[str, str]:
        """Every node name → its kind ("host" or "router")."""
        return {n.name: n.kind for n in self.plan_nodes()}

    def build(self) -> Network:
        """The explicit network (see the module docstring of the kind)."""
        overrides = {o.link: o for o in self.overrides}
        return build_network(self.plan_nodes(), self.plan_wires(), self.link_class,
                             self.REVERSE_ROLES, overrides)

    def describe(self) -> list[str]:
        """Lines for ``ccarena validate`` and ``ccarena topo``: the size, then each link class."""
        lines = self.summary().splitlines()
        for cls in self.CLASSES:
            link = getattr(self, cls, None)
            if link is not None:
                lines.append(f"{cls}: {describe_link(link)}")
        if self.overrides:
            lines.append(f"{len(self.overrides)} link override(s)")
        return lines
