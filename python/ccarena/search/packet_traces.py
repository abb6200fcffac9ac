"""Packet-level capacity traces for ``ccarena search --over trace:LINK=packets[:MS]``: the genome is
the Mahimahi trace itself — one delivery opportunity of one MTU (1500 bytes) per entry, at a
millisecond timestamp (:mod:`ccarena.traces.trace_files`) — mutated and recombined as CC-Fuzz does
(Agarwal et al., "CC-Fuzz: Genetic algorithm-based fuzzing for stress testing congestion control
algorithms", HotNets 2022, its link-trace fuzzing: a link trace is a list of packet delivery
times; the genetic algorithm moves, adds and drops deliveries, splices two traces at a time point,
and keeps the trace's mean rate within bounds so that a worse score is not merely a slower link).
The operators here are ccarena's own, written from that description; their parameters (how many
deliveries a mutation touches, the window sizes) are this module's choices, not the paper's.

Shapes and units: a genome (:class:`PacketTrace`) is a sorted ``int64`` numpy array of
timestamps in ms, each a multiple of the granularity ``slot_ms`` (``packets:MS``; 1 ms by default,
the file format's resolution), within ``[0, duration_ms)``; several equal timestamps are several
opportunities in that millisecond. Written, one more opportunity is pinned at ``duration_ms`` so
the looped trace's period is the run (:func:`mahimahi_lines`). Its count (with the pinned one) is
kept within ``[band_low, band_high] × nominal`` where ``nominal`` is the link's nominal rate ×
the run's length in MTUs (:func:`nominal_count`).

Every operator takes a seeded :class:`numpy.random.Generator` and returns a new valid genome
(:func:`is_valid`); none changes its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

MTU_BITS = 1500 * 8
"""Bits one delivery opportunity carries (Mahimahi's MTU)."""

MAX_SLOT_MS = 1000
"""The coarsest granularity ``packets:MS`` takes (ms)."""

MAX_PACKETS = 1_000_000
"""The most opportunities a genome may hold (a 1 Gbit/s link for 12 s): more is refused when the
option is parsed (give ``steps:N``)."""

DEFAULT_BAND = (0.9, 1.1)
"""The mean rate's default band, as fractions of the link's nominal rate."""


@dataclass(frozen=True)
class TraceShape:
    """What every genome of one searched link shares: the run's length ``duration_ms``, the
    granularity ``slot_ms`` (timestamps are multiples of it), the ``nominal`` count of
    opportunities (the link's rate over the run, in MTUs, :func:`nominal_count`) and the band
    ``[band_low, band_high]`` (fractions of ``nominal``) the count is kept in."""

    duration_ms: int
    slot_ms: int
    nominal: int
    band_low: float = DEFAULT_BAND[0]
    band_high: float = DEFAULT_BAND[1]

    @property
    def slots(self) -> int:
        """Slots of ``slot_ms`` in the run (the last may be shorter)."""
        return -(-self.duration_ms // self.slot_ms)

    @property
    def count_range(self) -> tuple[int, int]:
        """The fewest and most opportunities of a free genome (without the pinned last one)."""
        low = max(1, int(np.ceil(self.band_low * self.nominal))) - 1
        high = max(low, int(np.floor(self.band_high * self.nominal)) - 1)
        return max(low, 0), high

    def mean_fraction(self, genome: np.ndarray) -> float:
        """The genome's mean rate as a fraction of the nominal rate (the pinned one counted)."""
        return (len(genome) + 1) / self.nominal


PacketTrace = np.ndarray
"""A genome: a sorted ``int64`` array of ms timestamps (see the module docs)."""


def nominal_count(rate_bps: float, duration_s: float) -> int:
    """Opportunities of one MTU that carry ``rate_bps`` for ``duration_s`` (at least 2)."""
    return max(2, int(round(rate_bps * duration_s / MTU_BITS)))


def is_valid(genome: np.ndarray, shape: TraceShape) -> bool:
    """Whether ``genome`` is a genome of ``shape``: int64, sorted, within ``[0, duration_ms)``,
    multiples of ``slot_ms``, its count within :attr:`TraceShape.count_range`."""
    low, high = shape.count_range
    g = np.asarray(genome)
    return bool(g.dtype == np.int64 and g.ndim == 1 and low <= len(g) <= high
                and (len(g) == 0 or (g[0] >= 0 and g[-1] < shape.duration_ms))
                and np.all(np.diff(g) >= 0) and np.all(g % shape.slot_ms == 0))


def _times(rng: np.random.Generator, shape: TraceShape, count: int,
           weights: np.ndarray | None = None) -> np.ndarray:
    """``count`` timestamps drawn over the slots (uniformly, or in proportion to ``weights``, one
    per slot), unsorted."""
    if count <= 0:
        return np.empty(0, dtype=np.int64)
    if weights is None:
        slots = rng.integers(0, shape.slots, size=count)
    else:
        slots = rng.choice(shape.slots, size=count, p=weights / weights.sum())
    return slots.astype(np.int64) * shape.slot_ms


def _fit_count(genome: np.ndarray, rng: np.random.Generator, shape: TraceShape) -> np.ndarray:
    """``genome`` sorted, with random opportunities dropped or added (uniformly over the run)
    until its count is within the band."""
    low, high = shape.count_range
    g = np.sort(genome.astype(np.int64))
    if len(g) > high:
        keep = np.sort(rng.choice(len(g), size=high, replace=False))
        g = g[keep]
    elif len(g) < low:
        g = np.sort(np.concatenate([g, _times(rng, shape, low - len(g))]))
    return g


def random_trace(rng: np.random.Generator, shape: TraceShape) -> np.ndarray:
    """A first-generation genome: the run cut at 1–16 random points into segments, each with a
    random weight (an outage with probability 1/4, else log-uniform over 1/10 to 10), and a count
    drawn uniformly within the band placed in proportion (CC-Fuzz starts from random traces;
    segments make some of them far from a constant rate)."""
    low, high = shape.count_range
    count = int(rng.integers(low, high + 1))
    cuts = np.sort(rng.integers(1, max(2, shape.slots), size=int(rng.integers(1, 17))))
    edges = np.unique(np.concatenate([[0], cuts, [shape.slots]]))
    levels = np.where(rng.random(len(edges) - 1) < 0.25, 0.0,
                      np.exp(rng.uniform(np.log(0.1), np.log(10.0), len(edges) - 1)))
    if levels.sum() == 0:
        levels[:] = 1.0
    weights = np.repeat(levels, np.diff(edges)).astype(float)
    return np.sort(_times(rng, shape, count, weights))


def move(genome: np.ndarray, rng: np.random.Generator, shape: TraceShape) -> np.ndarray:
    """Move 1 to 1% of the opportunities (at least 1) each by a random offset of up to a tenth of
    the run either way, clipped to the run (CC-Fuzz: moving deliveries). The count is kept."""
    g = genome.copy()
    if len(g) == 0:
        return g
    k = int(rng.integers(1, max(2, len(g) // 100 + 1)))
    which = rng.choice(len(g), size=min(k, len(g)), replace=False)
    reach = max(1, shape.slots // 10)
    slots = g[which] // shape.slot_ms + rng.integers(-reach, reach + 1, size=len(which))
    g[which] = np.clip(slots, 0, shape.slots - 1) * shape.slot_ms
    return np.sort(g)


def add_drop(genome: np.ndarray, rng: np.random.Generator, shape: TraceShape) -> np.ndarray:
    """Add or drop (even odds) 1 to 2% of the opportunities at random, as far as the band allows
    (CC-Fuzz: adding and removing deliveries; the mean rate stays within the band)."""
    low, high = shape.count_range
    k = int(rng.integers(1, max(2, len(genome) // 50 + 1)))
    if rng.random() < 0.5 and len(genome) > low:
        keep = rng.choice(len(genome), size=len(genome) - min(k, len(genome) - low), replace=False)
        return np.sort(genome[keep])
    k = min(k, high - len(genome))
    return np.sort(np.concatenate([genome, _times(rng, shape, k)])) if k > 0 else genome.copy()


def outage(genome: np.ndarray, rng: np.random.Generator, shape: TraceShape) -> np.ndarray:
    """Empty a window of the run (log-uniform from one slot to a quarter of the run) and put its
    opportunities at random times outside it: an outage and a burst elsewhere, the count kept
    (the shape of CC-Fuzz's stall-inducing traces and of the low-rate attack's pulses)."""
    g = genome.copy()
    width = int(np.exp(rng.uniform(0.0, np.log(max(1.0, shape.slots / 4)))))
    width = max(1, min(width, shape.slots - 1))
    start = int(rng.integers(0, shape.slots - width + 1))
    slots = g // shape.slot_ms
    inside = (slots >= start) & (slots < start + width)
    n = int(inside.sum())
    if n == 0:
        return g
    outside = np.ones(shape.slots, dtype=float)
    outside[start:start + width] = 0.0
    g[inside] = _times(rng, shape, n, outside)
    return np.sort(g)


MUTATIONS = {"move": move, "add-drop": add_drop, "outage": outage}
"""The mutation operators by name."""


def crossover(a: np.ndarray, b: np.ndarray, rng: np.random.Generator,
              shape: TraceShape) -> np.ndarray:
    """``a`` before a random time point and ``b`` from it on (CC-Fuzz: splicing two traces at
    a time point), then opportunities dropped or added at random until the count is in the band."""
    cut = int(rng.integers(1, max(2, shape.slots))) * shape.slot_ms
    child = np.concatenate([a[a < cut], b[b >= cut]])
    return _fit_count(child, rng, shape)


def mutate(genome: np.ndarray, rng: np.random.Generator, shape: TraceShape) -> tuple[np.ndarray, list[str]]:
    """1 to 3 mutation operators drawn from :data:`MUTATIONS` applied in turn; the new genome and
    the operators' names."""
    names = list(MUTATIONS)
    applied = [names[int(i)] for i in rng.integers(0, len(names), size=int(rng.integers(1, 4)))]
    for name in applied:
        genome = MUTATIONS[name](genome, rng, shape)
    return genome, applied


def mahimahi_lines(genome: np.ndarray, shape: TraceShape) -> list[str]:
    """The genome as Mahimahi's lines, with the pinned last opportunity at ``duration_ms`` (the
    looped trace's period is the run)."""
    return [str(int(t)) for t in genome] + [str(shape.duration_ms)]


def write_mahimahi(path: Path, genome: np.ndarray, shape: TraceShape) -> Path:
    """Write the genome to ``path`` in Mahimahi's format (:func:`mahimahi_lines`), parents made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(mahimahi_lines(genome, shape)) + "\n", encoding="ascii")
    return path


def read_genome(path: Path, shape: TraceShape) -> np.ndarray:
    """A genome read back from a file :func:`write_mahimahi` wrote (the pinned last line
    dropped)."""
    values = np.array([int(line) for line in path.read_text().split()], dtype=np.int64)
    return values[:-1]


def features(genome: np.ndarray, shape: TraceShape) -> dict[str, float]:
    """What the trials table shows of a genome: ``mean`` (its mean rate, a fraction of the nominal
    rate), ``longest_gap`` (the longest time without an opportunity, s) and ``spread`` (the
    coefficient of variation of the opportunities per 100 ms window)."""
    ends = np.concatenate([[0], genome, [shape.duration_ms]])
    gap = float(np.diff(ends).max()) / 1000.0
    window = max(shape.slot_ms, 100)
    counts = np.bincount(genome // window, minlength=max(1, shape.duration_ms // window))
    spread = float(counts.std() / counts.mean()) if counts.mean() > 0 else 0.0
    return {"mean": shape.mean_fraction(genome), "longest_gap": gap, "spread": spread}
