"""Scenario models for a link's parameters, shared by the topology kinds."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ccarena.errors import FieldError

from ccarena.quantities import Fraction, QueueLimitValue, RateBps, StrictModel, TimeNs


class Queue(StrictModel):
    """The egress queue of a link.

    TOML: ``queue = { discipline = "droptail", limit = "100pkt", ecn_threshold = "20pkt" }``;
    ``limit`` in packets (``"100pkt"``) or bytes (``"150KB"``). ``ecn_threshold`` (optional) is
    the marking threshold K of DCTCP-style step marking (RFC 8257 §3.1): ECN-capable packets that
    arrive with at least K waiting are marked CE instead of waiting for the limit to drop them.
    """

    discipline: Literal["droptail"] = "droptail"
    limit: QueueLimitValue = "100pkt"
    ecn_threshold: QueueLimitValue | None = None

    def ecn_threshold_fields(self) -> dict[str, int | None]:
        """``ecn_threshold_packets`` / ``ecn_threshold_bytes`` for :meth:`Network.add_duplex`."""
        k = self.ecn_threshold
        return {"ecn_threshold_packets": k.packets if k else None,
                "ecn_threshold_bytes": k.bytes if k else None}

    @model_validator(mode="after")
    def _threshold_fits_the_limit(self) -> "Queue":
        k = self.ecn_threshold
        if k is not None:
            same_unit = (k.packets is not None) == (self.limit.packets is not None)
            if same_unit and (k.packets or k.bytes or 0) > (self.limit.packets or self.limit.bytes or 0):
                raise FieldError("ecn_threshold", "must not exceed the queue limit")
        return self


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
