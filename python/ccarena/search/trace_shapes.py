"""Parameterized capacity traces for ``ccarena search --over trace:LINK=GENERATOR``: each
generator turns a few searched numbers into a link capacity trace (a rate-steps CSV,
:mod:`ccarena.traces.trace_files`) scaled to the link's nominal rate.

- ``square``: the rate alternates between the nominal rate (a fraction ``duty`` of each
  ``period``) and ``(1 − depth)`` of it — the shape of the low-rate (shrew) attack on TCP's
  retransmission timer (Kuzmanovic and Knightly, "Low-Rate TCP-Targeted Denial of Service
  Attacks", SIGCOMM 2003), which CC-Fuzz rediscovered.
- ``on-off``: :func:`ccarena.traces.generate.on_off` (exponential on and off periods of mean
  ``on`` and ``off``, outages while off), its ``seed`` searched too.
- ``random-walk``: :func:`ccarena.traces.generate.random_walk` (a log-rate random walk of step
  ``sigma`` between ``floor`` × and 1 × the nominal rate; Winstein et al., NSDI 2013).
- ``steps`` (or ``steps:N``): eight (N, 2 to :data:`MAX_STEP_GENES`) equal steps over the run,
  each at its own fraction ``level0`` … ``level7`` of the nominal rate: the trace itself is the
  genome, so the genetic sampler (``--sampler ga``, NSGA-II's crossover and mutation) mutates and
  recombines traces as CC-Fuzz does (Agarwal et al., "CC-Fuzz: Genetic algorithm-based fuzzing for
  stress testing congestion control algorithms", HotNets 2022), at the resolution of a step: with
  ``steps:1000`` over a 10 s run, 10 ms, a few packets' time at tens of Mbit/s, where CC-Fuzz's
  genome is each packet's delivery time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccarena.errors import UserError
from ccarena.search.value_ranges import NumberRange

if TYPE_CHECKING:
    import optuna

STEP_GENES = 8
"""Steps of the ``steps`` generator when its name gives no count."""

MAX_STEP_GENES = 1000
"""Most steps ``steps:N`` takes: each is a searched dimension, and NSGA-II's mutation touches
each with probability 1/N, so a longer genome changes more slowly per generation."""


@dataclass(frozen=True)
class TraceParam:
    """One searched parameter of a generator: ``low``..``high`` in ``unit`` (``time_s`` or ``""``),
    on a log scale when ``log``, whole numbers when ``integer``."""

    name: str
    low: float
    high: float
    unit: str = ""
    log: bool = False
    integer: bool = False

    def suggest(self, trial: optuna.trial.BaseTrial, name: str) -> float | int:
        """The trial's value for Optuna parameter ``name``."""
        if self.integer:
            return trial.suggest_int(name, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(name, self.low, self.high, log=self.log)

    def with_range(self, spec: str, where: str) -> TraceParam:
        """This parameter over the range ``spec`` (``LO:HI`` or ``log:LO:HI``,
        :class:`ccarena.search.value_ranges.NumberRange`) instead of its default.

        Raises:
            UserError: a bad range, or one in another unit, or outside the parameter's limits.
        """
        given = NumberRange.parse(spec, where)
        if given.unit != self.unit:
            unit = "a time such as 100ms:2s" if self.unit == "time_s" else "plain numbers"
            raise UserError(f"{where}: '{spec}': give {unit}")
        if self.unit == "" and not self.integer and (given.low < 0 or given.high > 1):
            raise UserError(f"{where}: '{spec}': a fraction within 0:1")
        return replace(self, low=given.low, high=given.high, log=given.log)


GENERATORS: dict[str, tuple[TraceParam, ...]] = {
    "square": (TraceParam("period", 0.05, 4.0, "time_s", log=True), TraceParam("depth", 0.0, 1.0),
               TraceParam("duty", 0.1, 0.9)),
    "on-off": (TraceParam("on", 0.1, 5.0, "time_s", log=True),
               TraceParam("off", 0.02, 2.0, "time_s", log=True),
               TraceParam("seed", 0, 9999, integer=True)),
    "random-walk": (TraceParam("sigma", 0.05, 1.0), TraceParam("floor", 0.05, 0.9),
                    TraceParam("seed", 0, 9999, integer=True)),
    "steps": tuple(TraceParam(f"level{i}", 0.0, 1.0) for i in range(STEP_GENES)),
}
"""Each generator's parameters and their default ranges (the module docs say what they mean)."""


def generator_params(name: str, where: str) -> tuple[str, tuple[TraceParam, ...]]:
    """The generator ``name`` names (``square``, ..., ``steps`` or ``steps:N``) and its
    parameters at their default ranges.

    Raises:
        UserError: ``where: problem`` for an unknown generator or a step count outside
        2..:data:`MAX_STEP_GENES`.
    """
    kind, _, count = name.partition(":")
    if kind not in GENERATORS or (count and kind != "steps"):
        raise UserError(f"{where}: unknown generator '{name}'; one of {', '.join(GENERATORS)} "
                        "(or steps:N, packets[:MS])")
    if not count:
        return kind, GENERATORS[kind]
    if not count.isdigit() or not 2 <= int(count) <= MAX_STEP_GENES:
        raise UserError(f"{where}: steps:{count}: give a whole number of steps from 2 to "
                        f"{MAX_STEP_GENES}, e.g. steps:64")
    return kind, tuple(TraceParam(f"level{i}", 0.0, 1.0) for i in range(int(count)))


def rate_steps(generator: str, params: dict[str, Any], rate_bps: float,
               duration_s: float) -> list[tuple[float, float]]:
    """The trace as ``(time_s, rate_bps)`` rows: each rate holds until the next row's time; the
    last row marks the end of one loop (:mod:`ccarena.traces.trace_files`' rate steps).

    Raises:
        ValueError: an unknown generator, or parameters its generator refuses.
    """
    from ccarena.traces import generate as gen

    duration_ns = max(1_000_000, round(duration_s * 1e9))
    if generator == "square":
        period = float(params["period"])
        high_s = period * float(params["duty"])
        low_rate = rate_bps * (1.0 - float(params["depth"]))
        return [(0.0, rate_bps), (high_s, low_rate), (period, rate_bps)]
    if generator == "steps":
        count = sum(1 for name in params if name.startswith("level"))
        step_s = duration_ns / 1e9 / count
        rows = [(i * step_s, rate_bps * float(params[f"level{i}"])) for i in range(count)]
        return rows + [(duration_ns / 1e9, rows[0][1])]
    if generator == "on-off":
        step_ns = 10_000_000
        rates = gen.on_off(duration_ns=duration_ns, seed=int(params["seed"]), rate_bps=round(rate_bps),
                           on_ns=round(float(params["on"]) * 1e9),
                           off_ns=round(float(params["off"]) * 1e9), step_ns=step_ns)
    elif generator == "random-walk":
        step_ns = 100_000_000
        low = max(1, round(rate_bps * float(params["floor"])))
        rates = gen.random_walk(duration_ns=duration_ns, seed=int(params["seed"]),
                                rate_bps=round(rate_bps), min_rate_bps=low,
                                max_rate_bps=round(rate_bps), sigma=float(params["sigma"]),
                                step_ns=step_ns)
    else:
        raise ValueError(f"unknown generator '{generator}'")
    rows: list[tuple[float, float]] = []
    for i, rate in enumerate(rates):
        if not rows or rows[-1][1] != rate:  # one row per change of rate
            rows.append((i * step_ns / 1e9, float(rate)))
    return rows + [(len(rates) * step_ns / 1e9, float(rates[0]))]


def write_trace(path: Path, generator: str, params: dict[str, Any], rate_bps: float,
                duration_s: float) -> Path:
    """Write :func:`rate_steps` to ``path`` as a rate-steps CSV (``time_s,rate_bps``) and return
    it (parent directories created).

    Raises:
        ValueError: see :func:`rate_steps`.
    """
    rows = rate_steps(generator, params, rate_bps, duration_s)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["time_s,rate_bps"] + [f"{t:.9f},{round(r)}" for t, r in rows if math.isfinite(r)]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return path
