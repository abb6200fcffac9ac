"""Pydantic field types for unit-bearing scenario values.

Each type accepts the string the user writes (``"100Mbps"``) and stores the parsed integer in the
unit the field's name carries (``rate_bps``). The parsing and its error messages are in
:mod:`ccarena.units`; these aliases only attach the parsers to pydantic.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict

from ccarena import units

RateBps = Annotated[int, BeforeValidator(units.parse_rate_bps)]
"""A bit rate: ``"100Mbps"`` → 100_000_000 (bits per second, > 0)."""

TimeNs = Annotated[int, BeforeValidator(units.parse_time_ns)]
"""A time: ``"20ms"`` → 20_000_000 (nanoseconds, >= 0)."""

SizeBytes = Annotated[int, BeforeValidator(units.parse_size_bytes)]
"""A size: ``"1.5MB"`` → 1_500_000 (bytes, > 0)."""

Packets = Annotated[int, BeforeValidator(units.parse_packets)]
"""A packet count: ``"10pkt"`` → 10 (> 0)."""

Fraction = Annotated[float, BeforeValidator(units.parse_fraction)]
"""A percentage: ``"0.5%"`` → 0.005 (a fraction in [0, 1])."""


def _queue_limit(text: object) -> units.QueueLimit:
    return units.parse_queue_limit(text)


QueueLimitValue = Annotated[units.QueueLimit, BeforeValidator(_queue_limit)]
"""A queue limit: ``"100pkt"`` → QueueLimit(packets=100); ``"150KB"`` → QueueLimit(bytes=150000)."""


class StrictModel(BaseModel):
    """Base for every scenario model: unknown fields are errors, values validated on assignment,
    defaults validated like given values (so defaults can be written as the user would write them)."""

    model_config = ConfigDict(extra="forbid", validate_default=True, populate_by_name=False,
                              frozen=True, arbitrary_types_allowed=True)
