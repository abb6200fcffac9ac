"""Synthetic capacity traces, seeded, in Mahimahi's format: for tests, examples, and links whose
capacity should vary the way a wireless one does.

Each generator gives the capacity as a rate held for one ``step`` at a time (a list of rates,
bits per second); :func:`to_mahimahi` turns that into delivery opportunities.

- :func:`on_off`: the link alternates between ``rate`` and ``off_rate`` (0: an outage), each
  period exponentially distributed with mean ``on`` / ``off`` (a renewal on/off source).
- :func:`gilbert_elliott`: a two-state Markov chain (Gilbert 1960, Elliott 1963), here over the
  rate rather than the loss: each step a good link turns bad with probability ``p_bad`` and a
  bad one good with ``p_good``; the good state runs at ``good_rate``, the bad at ``bad_rate``.
  The chain starts in its stationary distribution; the mean rate is ``(p_good · good + p_bad ·
  bad) / (p_bad + p_good)``.
- :func:`random_walk`: the log of the rate takes a Gaussian step of standard deviation
  ``sigma`` each step, reflected into ``[min_rate, max_rate]`` (a cellular-like rate that
  wanders, as in Winstein et al.'s Sprout model of a varying link, NSDI 2013, §3).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

MTU_BITS = 1500 * 8
"""Bits one Mahimahi delivery opportunity carries."""

KINDS = ("on-off", "gilbert-elliott", "random-walk")
"""The generators ``ccarena trace gen`` knows."""


def _steps(duration_ns: int, step_ns: int) -> int:
    if step_ns <= 0 or step_ns % 1_000_000:
        raise ValueError("the step must be a positive whole number of milliseconds")
    if duration_ns < step_ns:
        raise ValueError("the duration must be at least one step")
    return duration_ns // step_ns


def on_off(*, duration_ns: int, seed: int, rate_bps: int, off_rate_bps: int = 0,
           on_ns: int = 2_000_000_000, off_ns: int = 500_000_000, step_ns: int = 10_000_000) -> list[int]:
    """Rates per step of an on/off link (see the module docs); starts on."""
    n = _steps(duration_ns, step_ns)
    rng = np.random.default_rng(seed)
    out: list[int] = []
    on = True
    while len(out) < n:
        mean = on_ns if on else off_ns
        length = max(1, round(rng.exponential(mean) / step_ns))
        out.extend([rate_bps if on else off_rate_bps] * length)
        on = not on
    return out[:n]


def gilbert_elliott(*, duration_ns: int, seed: int, good_rate_bps: int, bad_rate_bps: int,
                    p_bad: float = 0.05, p_good: float = 0.2, step_ns: int = 100_000_000) -> list[int]:
    """Rates per step of a Gilbert–Elliott two-state link (see the module docs)."""
    if not (0 < p_bad <= 1 and 0 < p_good <= 1):
        raise ValueError("p_bad and p_good must be probabilities in (0, 1]")
    n = _steps(duration_ns, step_ns)
    rng = np.random.default_rng(seed)
    bad = rng.random() < p_bad / (p_bad + p_good)
    out: list[int] = []
    for u in rng.random(n):
        out.append(bad_rate_bps if bad else good_rate_bps)
        bad = (u >= p_good) if bad else (u < p_bad)
    return out


def random_walk(*, duration_ns: int, seed: int, rate_bps: int, min_rate_bps: int, max_rate_bps: int,
                sigma: float = 0.2, step_ns: int = 100_000_000) -> list[int]:
    """Rates per step of a log-rate random walk from ``rate_bps`` (see the module docs)."""
    if not (0 < min_rate_bps <= rate_bps <= max_rate_bps):
        raise ValueError("need 0 < min_rate ≤ rate ≤ max_rate")
    if not (sigma >= 0 and math.isfinite(sigma)):
        raise ValueError("sigma must be a number ≥ 0")
    n = _steps(duration_ns, step_ns)
    rng = np.random.default_rng(seed)
    lo, hi = math.log(min_rate_bps), math.log(max_rate_bps)
    x = math.log(rate_bps)
    out: list[int] = []
    for z in rng.normal(0.0, sigma, n):
        out.append(round(math.exp(x)))
        x += z
        while x < lo or x > hi:  # reflect at the bounds
            x = 2 * lo - x if x < lo else 2 * hi - x
    return out


def to_mahimahi(rates_bps: list[int], step_ns: int) -> list[int]:
    """Delivery opportunities (millisecond timestamps) for a link holding ``rates_bps[i]`` during
    step i: each millisecond adds its bits to a running credit, and every 1500 bytes of credit is
    an opportunity at the end of that millisecond. A rounding credit of less than one packet is
    carried on, so the count over any span is within one opportunity of the rate's integral.

    Raises:
        ValueError: the whole trace carries less than one packet.
    """
    per_step_ms = step_ns // 1_000_000
    out: list[int] = []
    credit_bits = 0.0
    ms = 0
    for rate in rates_bps:
        per_ms = rate / 1000.0
        for _ in range(per_step_ms):
            ms += 1
            credit_bits += per_ms
            k = int(credit_bits // MTU_BITS)
            if k:
                out.extend([ms] * k)
                credit_bits -= k * MTU_BITS
    if not out:
        raise ValueError("the trace carries less than one 1500-byte packet; raise the rates or the duration")
    return out


def write_mahimahi(path: str | Path, times_ms: list[int]) -> None:
    """Write ``times_ms`` one per line (Mahimahi's trace format)."""
    Path(path).write_text("".join(f"{t}\n" for t in times_ms), encoding="ascii")


def generate(kind: str, *, duration_ns: int, seed: int, step_ns: int | None = None, **params: object) -> list[int]:
    """Delivery opportunities of a ``kind`` trace (:data:`KINDS`) with ``params`` (the keyword
    arguments of that generator, rates in bits per second, times in ns).

    Raises:
        ValueError: an unknown kind, or parameters the generator refuses.
    """
    makers = {"on-off": (on_off, 10_000_000), "gilbert-elliott": (gilbert_elliott, 100_000_000),
              "random-walk": (random_walk, 100_000_000)}
    if kind not in makers:
        raise ValueError(f"unknown trace kind '{kind}'; one of {', '.join(KINDS)}")
    make, default_step = makers[kind]
    step = step_ns or default_step
    rates = make(duration_ns=duration_ns, seed=seed, step_ns=step, **params)  # type: ignore[operator]
    return to_mahimahi(rates, step)
