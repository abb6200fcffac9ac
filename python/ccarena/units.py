"""Quantities with units, as written in scenario files: ``"100Mbps"``, ``"20ms"``, ``"1.5MB"``,
``"100pkt"``, ``"0.5%"``.

Every parser takes the string the user wrote and returns an exact integer (or a fraction for
percentages) in the unit its name carries: ``parse_rate_bps`` → bits per second,
``parse_time_ns`` → nanoseconds, ``parse_size_bytes`` → bytes. Arithmetic is decimal
(:class:`decimal.Decimal`), so ``"0.1ms"`` is exactly 100000 ns. Prefixes are SI (k = 1000) except the
binary ``KiB``/``MiB``/``GiB`` (1024). A bad string raises :class:`UnitError` with a message saying
what was expected, for example ``'100Mbs' is not a rate: use a number and one of bps, kbps, Mbps,
Gbps, Tbps (e.g. '100Mbps')``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Callable

_NUMBER_AND_UNIT = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([^\d\s].*?)?\s*$")

RATE_UNITS_BPS: dict[str, int] = {
    "bps": 1, "kbps": 10**3, "Kbps": 10**3, "Mbps": 10**6, "Gbps": 10**9, "Tbps": 10**12,
    "bit/s": 1, "kbit/s": 10**3, "Mbit/s": 10**6, "Gbit/s": 10**9,
    "kbit": 10**3, "Kbit": 10**3, "Mbit": 10**6, "Gbit": 10**9,
}
TIME_UNITS_NS: dict[str, int] = {
    "ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9,
}
SIZE_UNITS_BYTES: dict[str, int] = {
    "B": 1, "byte": 1, "bytes": 1,
    "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30,
}
PACKET_UNITS: dict[str, int] = {"pkt": 1, "pkts": 1, "packet": 1, "packets": 1}
PERCENT_UNITS: dict[str, Decimal] = {"%": Decimal("0.01")}


class UnitError(ValueError):
    """A quantity string that does not parse, or whose value is out of range."""


MAX_TIME_NS = 10**18
"""Largest time a scenario may give: 10⁹ s (about 31 years). The engine keeps time in unsigned
64-bit nanoseconds (at most 1.8·10¹⁹); this bound leaves room for a start plus a duration plus a
delay to add up without overflow."""

MAX_RATE_BPS = 10**15
"""Largest bit rate: 1 Pbps. The engine's rates are unsigned 64-bit bits per second, and above
this a full-size packet serializes in less than the engine's 1 ns clock tick."""

MAX_SIZE_BYTES = 10**15
"""Largest size (a transfer, a buffer, a queue limit): 1 PB, so that sizes in bits (×8) and sums
of them stay within the engine's unsigned 64-bit counters."""

MAX_PACKETS = 10**9
"""Largest packet count (a queue limit, an initial window): 10⁹ packets."""

MIN_NONZERO_FRACTION = 1e-12
"""Smallest non-zero fraction (1e-10 %): smaller values would become 0 in a double or never
happen in any run the engine can finish; write 0% for none."""




def _split(text: object, what: str, units: dict, example: str) -> tuple[Decimal, str]:
    """Split ``text`` into (number, unit) and check that the unit is one of ``units``.

    Raises:
        UnitError: ``text`` is not a string, has no number, no unit, or an unknown unit.
    """
    unit_list = ", ".join(dict.fromkeys(units))
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise UnitError(f"expected {what} as a string with a unit such as '{example}', got {text!r}")
    if isinstance(text, (int, float)):
        raise UnitError(f"{text!r} has no unit: write {what} as a string such as '{example}'")
    match = _NUMBER_AND_UNIT.match(text)
    if match is None:
        raise UnitError(f"{text!r} is not {what}: use a number and one of {unit_list} (e.g. '{example}')")
    number_text, unit = match.group(1), match.group(2) or ""
    if unit == "":
        raise UnitError(f"{text!r} has no unit: use one of {unit_list} (e.g. '{example}')")
    if unit not in units:
        raise UnitError(f"{text!r} is not {what}: unknown unit '{unit}'; use one of {unit_list} (e.g. '{example}')")
    try:
        number = Decimal(number_text)
    except InvalidOperation as err:  # the regex admits only valid decimals; kept for safety
        raise UnitError(f"{text!r} is not {what}") from err
    return number, unit


def _whole(value: Decimal, text: str, unit_name: str) -> int:
    """``value`` as an int, or UnitError if it is not a whole number of ``unit_name``."""
    if value != value.to_integral_value():
        raise UnitError(f"{text!r} is not a whole number of {unit_name}")
    return int(value)


def parse_rate_bps(text: object) -> int:
    """Parse a bit rate such as ``"100Mbps"`` to bits per second (> 0).

    Raises:
        UnitError: not a rate, unknown unit, or not positive ("-5Mbps", "0bps").
    """
    number, unit = _split(text, "a rate", RATE_UNITS_BPS, "100Mbps")
    if number <= 0:
        raise UnitError(f"rate must be positive, got {text!r}")
    value = number * RATE_UNITS_BPS[unit]
    if value > MAX_RATE_BPS:
        raise UnitError(f"{text!r} is too large: a rate must be at most '1000Tbps'")
    return _whole(value, str(text), "bits per second")


def parse_time_ns(text: object) -> int:
    """Parse a time or duration such as ``"20ms"`` to nanoseconds (>= 0).

    Raises:
        UnitError: not a time, unknown unit, negative, a fraction of a nanosecond, or above
            :data:`MAX_TIME_NS`.
    """
    number, unit = _split(text, "a time", TIME_UNITS_NS, "20ms")
    if number < 0:
        raise UnitError(f"time must not be negative, got {text!r}")
    value = number * TIME_UNITS_NS[unit]
    if value > MAX_TIME_NS:
        raise UnitError(f"{text!r} is too large: a time must be at most '1e9s' (about 31 years)")
    return _whole(value, str(text), "nanoseconds")


def parse_size_bytes(text: object) -> int:
    """Parse a size such as ``"1.5MB"`` (1 500 000) or ``"64KiB"`` (65 536) to bytes (> 0).

    Raises:
        UnitError: not a size, unknown unit, not positive, a fraction of a byte, or above
            :data:`MAX_SIZE_BYTES`.
    """
    number, unit = _split(text, "a size", SIZE_UNITS_BYTES, "1.5MB")
    if number <= 0:
        raise UnitError(f"size must be positive, got {text!r}")
    value = number * SIZE_UNITS_BYTES[unit]
    if value > MAX_SIZE_BYTES:
        raise UnitError(f"{text!r} is too large: a size must be at most '1000TB'")
    return _whole(value, str(text), "bytes")


def parse_packets(text: object) -> int:
    """Parse a packet count such as ``"100pkt"`` to an int (> 0).

    Raises:
        UnitError: not a packet count, not positive, not whole, or above :data:`MAX_PACKETS`.
    """
    number, unit = _split(text, "a packet count", PACKET_UNITS, "100pkt")
    if number <= 0:
        raise UnitError(f"packet count must be positive, got {text!r}")
    if number > MAX_PACKETS:
        raise UnitError(f"{text!r} is too large: a packet count must be at most '1e9pkt'")
    return _whole(number, str(text), "packets")


def parse_fraction(text: object) -> float:
    """Parse a percentage such as ``"0.5%"`` to a fraction in [0, 1] (0.005).

    Raises:
        UnitError: not a percentage, outside 0%..100%, or non-zero but below
            :data:`MIN_NONZERO_FRACTION` (it would silently become 0).
    """
    number, unit = _split(text, "a percentage", PERCENT_UNITS, "0.5%")
    if number < 0 or number > 100:
        raise UnitError(f"{text!r} is outside 0%..100%")
    fraction = number * PERCENT_UNITS[unit]
    if 0 < fraction < Decimal(str(MIN_NONZERO_FRACTION)):
        raise UnitError(f"{text!r} is too small to represent: write '0%' for none, or at least "
                        f"'1e-10%'")
    return float(fraction)


@dataclass(frozen=True)
class QueueLimit:
    """A queue limit: exactly one of ``packets`` and ``bytes`` is set."""

    packets: int | None = None
    bytes: int | None = None


def parse_queue_limit(text: object) -> QueueLimit:
    """Parse a queue limit given in packets (``"100pkt"``) or bytes (``"150KB"``).

    Raises:
        UnitError: neither a packet count nor a size, or not positive.
    """
    if isinstance(text, str):
        match = _NUMBER_AND_UNIT.match(text)
        unit = (match.group(2) or "") if match else ""
        if unit in SIZE_UNITS_BYTES:
            return QueueLimit(bytes=parse_size_bytes(text))
        if unit in PACKET_UNITS or unit == "":
            return QueueLimit(packets=parse_packets(text))
        raise UnitError(
            f"{text!r} is not a queue limit: use packets ('100pkt') or bytes ('150KB', '1MiB')")
    return QueueLimit(packets=parse_packets(text))


def number_and_unit(text: object) -> tuple[float, str] | None:
    """The number and unit of a quantity string (``"0.5%"`` → ``(0.5, "%")``), or None.

    Plain numbers give ``(value, "")``. Used to put a swept parameter on a plot's x axis in the unit
    the user wrote it in. Returns None for anything that is not a number with an optional unit.
    """
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text), ""
    if not isinstance(text, str):
        return None
    match = _NUMBER_AND_UNIT.match(text)
    if match is None:
        return None
    return float(match.group(1)), match.group(2) or ""


_ALL_UNITS: dict[str, tuple[str, Decimal]] = {
    **{u: ("rate_bps", Decimal(m)) for u, m in RATE_UNITS_BPS.items()},
    **{u: ("time_s", Decimal(m) / Decimal(10**9)) for u, m in TIME_UNITS_NS.items()},
    **{u: ("size_bytes", Decimal(m)) for u, m in SIZE_UNITS_BYTES.items()},
    **{u: ("packets", Decimal(m)) for u, m in PACKET_UNITS.items()},
    **{u: ("fraction", m) for u, m in PERCENT_UNITS.items()},
}


def to_base_unit(text: object) -> tuple[float, str] | None:
    """A quantity in its base unit and the base unit's name, or None if it is not a quantity.

    ``"20ms"`` → ``(0.02, "time_s")``; ``"100Mbps"`` → ``(1e8, "rate_bps")``; ``"1%"`` →
    ``(0.01, "fraction")``; ``3`` → ``(3.0, "")``. Used to compare values written in different units.
    """
    parsed = number_and_unit(text)
    if parsed is None:
        return None
    number, unit = parsed
    if unit == "":
        return number, ""
    if unit not in _ALL_UNITS:
        return None
    kind, multiplier = _ALL_UNITS[unit]
    return float(Decimal(str(number)) * multiplier), kind


def format_rate(rate_bps: float) -> str:
    """A bit rate for people: ``12.3 Mbps``."""
    if rate_bps != rate_bps:  # NaN
        return "–"
    for unit, scale in (("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)):
        if abs(rate_bps) >= scale:
            return f"{rate_bps / scale:.3g} {unit}"
    return f"{rate_bps:.3g} bps"


def format_time(time_s: float) -> str:
    """A time for people: ``41.2 ms``."""
    if time_s != time_s:
        return "–"
    if abs(time_s) >= 1:
        return f"{time_s:.3g} s"
    if abs(time_s) >= 1e-3:
        return f"{time_s * 1e3:.3g} ms"
    return f"{time_s * 1e6:.3g} µs"


def format_bytes(size_bytes: float) -> str:
    """A size for people: ``1.5 MB`` (SI)."""
    if size_bytes != size_bytes:
        return "–"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(size_bytes) >= scale:
            return f"{size_bytes / scale:.3g} {unit}"
    return f"{size_bytes:.0f} B"


def _scaled(value: float, scales: tuple[tuple[str, float], ...], smallest: tuple[str, float]) -> tuple[str, float]:
    for unit, scale in scales:
        if abs(value) >= scale:
            return unit, scale
    return smallest


def format_mean_ci(formatter: Callable[[float], str], mean: float, half_width: float) -> str:
    """``mean ± half_width`` in one unit, the one ``formatter`` would pick for ``mean``:
    ``2.94 ± 0.222 Mbps`` (not ``2.94 Mbps ± 222 kbps``). ``formatter`` is one of
    :func:`format_rate`, :func:`format_time`, :func:`format_bytes`; any other formatter is applied
    to both numbers. A NaN half-width shows the mean alone."""
    if not math.isfinite(half_width) or not math.isfinite(mean):
        return formatter(mean)
    if formatter is format_rate:
        unit, scale = _scaled(mean, (("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)), ("bps", 1.0))
    elif formatter is format_time:
        unit, scale = _scaled(mean, (("s", 1.0), ("ms", 1e-3)), ("µs", 1e-6))
    elif formatter is format_bytes:
        unit, scale = _scaled(mean, (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)), ("B", 1.0))
    else:
        return f"{formatter(mean)} ± {formatter(half_width)}"
    return f"{mean_ci_numbers(mean / scale, half_width / scale)} {unit}"


def mean_ci_numbers(mean: float, half_width: float) -> str:
    """``mean ± half_width`` as bare numbers: the mean to 3 significant digits, the half-width to
    2 but never finer than the mean's last digit (``95.1 ± 0.0``, not ``± 0.000000000000045``)."""
    if not (math.isfinite(mean) and math.isfinite(half_width)):
        return f"{mean:.3g}"
    text = _two_significant(half_width)
    if mean == 0:
        return f"0 ± {text}"
    mean_decimals = max(0, 2 - math.floor(math.log10(abs(mean))))
    if len(text.partition(".")[2]) > mean_decimals:
        text = f"{round(half_width, mean_decimals):.{mean_decimals}f}"
    return f"{mean:.{mean_decimals}f} ± {text}"


def _two_significant(x: float) -> str:
    """``x`` to two significant digits without exponent notation (250, 2.5, 0.025)."""
    if x == 0:
        return "0"
    decimals = max(0, 1 - math.floor(math.log10(abs(x))))
    return f"{round(x, decimals - 0):.{decimals}f}" if decimals else f"{round(x, -int(math.floor(math.log10(abs(x)))) + 1):.0f}"
