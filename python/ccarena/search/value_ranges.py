"""Value ranges of ``ccarena search``'s ``--over`` options: ``LO:HI`` (numbers or quantities
with units, linear or log scale, integers where the bounds are) and ``a|b|c`` choices, each
suggested through an Optuna trial and written back as the scenario writes values."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ccarena.errors import UserError

if TYPE_CHECKING:
    import optuna

LOG_RATIO = 100.0
"""A range whose bounds are this far apart (HI/LO, both > 0) is searched on a log scale."""

UNIT_SUFFIX = {"rate_bps": "bps", "time_s": "s", "size_bytes": "B", "packets": "pkt",
               "fraction": "%", "": ""}
"""The unit a searched value is written back into the scenario with, per base unit of
:func:`ccarena.units.to_base_unit`."""


def _quantity(text: str, where: str) -> tuple[float, str]:
    """``text`` as (value in its base unit, base unit name); plain numbers give ``""``.

    Raises:
        UserError: not a number or a quantity.
    """
    from ccarena.units import to_base_unit

    parsed = to_base_unit(text.strip())
    if parsed is None:
        raise UserError(f"{where}: '{text}' is not a number or a quantity; write e.g. 10Mbps:1Gbps, "
                        "5ms:200ms, 5pkt:100pkt, 0%:5% or bbr|cubic")
    return parsed


@dataclass(frozen=True)
class NumberRange:
    """A numeric range: ``low``..``high`` in the base unit ``unit`` (bit/s, s, bytes, packets, a
    fraction, or ``""`` for a plain number); ``log``: searched on a log scale; ``integer``:
    whole values only (plain whole numbers and packet counts)."""

    low: float
    high: float
    unit: str
    log: bool
    integer: bool

    @classmethod
    def parse(cls, spec: str, where: str) -> NumberRange:
        """``LO:HI`` or ``log:LO:HI`` (see the module docs).

        Raises:
            UserError: not two bounds, bounds of different units, LO ≥ HI, or log with LO ≤ 0.
        """
        text = spec.strip()
        forced_log = text.startswith("log:")
        if forced_log:
            text = text[4:]
        bounds = text.split(":")
        if len(bounds) != 2:
            raise UserError(f"{where}: '{spec}' is not a range; write LO:HI, e.g. 5ms:200ms")
        (low, unit_lo), (high, unit_hi) = (_quantity(b, where) for b in bounds)
        if unit_lo != unit_hi:
            raise UserError(f"{where}: '{spec}' mixes units; give both bounds in one kind of "
                            "unit, e.g. 10Mbps:1Gbps")
        if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
            raise UserError(f"{where}: '{spec}': the low bound must be below the high bound")
        if forced_log and low <= 0:
            raise UserError(f"{where}: '{spec}': a log range needs a low bound above 0")
        log = forced_log or (low > 0 and high / low >= LOG_RATIO)
        integer = unit_lo == "packets" or (unit_lo == "" and all(
            re.fullmatch(r"\s*[+-]?\d+\s*", b) for b in bounds))
        return cls(low=low, high=high, unit=unit_lo, log=log, integer=integer)

    def suggest(self, trial: optuna.trial.BaseTrial, name: str) -> float | int:
        """The trial's value for parameter ``name`` (an Optuna float or int distribution)."""
        if self.integer:
            return trial.suggest_int(name, math.ceil(self.low), math.floor(self.high), log=self.log)
        return trial.suggest_float(name, self.low, self.high, log=self.log)

    def written(self, value: float) -> Any:
        """``value`` (base unit) as the scenario writes it, to 6 significant digits:
        ``"12.3457Mbps"``, ``"12.5ms"``, ``"20pkt"``, ``"1.5%"``, or a plain number."""
        if self.unit == "":
            return int(value) if self.integer else float(value)
        if self.unit == "fraction":
            return f"{value * 100:.6g}%"
        if self.unit == "time_s":  # 6 digits: what the trial ran is what the file says
            return f"{value * 1e3:.6g}ms"
        if self.unit == "rate_bps":
            return f"{value / 1e6:.6g}Mbps"
        if self.unit in ("size_bytes", "packets"):
            return f"{round(value)}{UNIT_SUFFIX[self.unit]}"
        return f"{value:.9g}{UNIT_SUFFIX[self.unit]}"


@dataclass(frozen=True)
class Choice:
    """One of ``values`` (strings, or numbers where every value is one), an Optuna categorical."""

    values: tuple[Any, ...]

    @classmethod
    def parse(cls, spec: str, where: str) -> Choice:
        """``a|b|c``.

        Raises:
            UserError: an empty or repeated value.
        """
        values = [v.strip() for v in spec.split("|")]
        if any(not v for v in values) or len(set(values)) != len(values):
            raise UserError(f"{where}: '{spec}': list distinct values separated by '|', e.g. "
                            "bbr|cubic|reno")
        try:
            numbers = [float(v) for v in values]
            return cls(tuple(int(n) if n.is_integer() and "." not in v else n
                             for n, v in zip(numbers, values)))
        except ValueError:
            return cls(tuple(values))

    def suggest(self, trial: optuna.trial.BaseTrial, name: str) -> Any:
        """The trial's value for parameter ``name``."""
        return trial.suggest_categorical(name, list(self.values))

    def written(self, value: Any) -> Any:
        """``value`` as written in the scenario (unchanged)."""
        return value
