"""Scenario models for a link's parameters, shared by the topology kinds."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ccarena.quantities import Fraction, QueueLimitValue, RateBps, StrictModel, TimeNs


class Queue(StrictModel):
    """The egress queue of a link.

    TOML: ``queue = { discipline = "droptail", limit = "100pkt" }``; ``limit`` in packets
    (``"100pkt"``) or bytes (``"150KB"``).
    """

    discipline: Literal["droptail"] = "droptail"
    limit: QueueLimitValue = "100pkt"


class AccessQueue(Queue):
    """An access link's queue: like :class:`Queue`, deeper by default (Linux txqueuelen 1000)."""

    limit: QueueLimitValue = "1000pkt"


class Link(StrictModel):
    """A duplex link with the same rate, delay and queue in both directions.

    ``loss`` is the wire loss probability in the forward direction (from the left/first node to the
    right/second), ``reverse_loss`` in the other (the ACK path of left-to-right flows).
    """

    rate_bps: RateBps = Field(alias="rate")
    delay_ns: TimeNs = Field(alias="delay")
    loss: Fraction = "0%"
    reverse_loss: Fraction = "0%"
    queue: Queue = Queue()


class AccessLink(Link):
    """A host's access link: 1 Gbps, 1 ms, no loss and a 1000-packet queue unless given."""

    rate_bps: RateBps = Field("1Gbps", alias="rate")
    delay_ns: TimeNs = Field("1ms", alias="delay")
    queue: AccessQueue = AccessQueue()
