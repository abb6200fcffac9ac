"""The verdict: which flavors differ, on which metric, beyond the noise.

Input is the summary table (summary.parquet: one row per run and flow, with ``run_id``,
``flavor``, the swept parameters and the metric columns of :mod:`ccarena.analysis.metrics`).
For every sweep point and every metric that matters for the scenario (goodput, or FCT slowdown
for finite flows; mean RTT; loss or retransmissions; Jain's index when each run holds one flavor
and several flows), the flavors are compared pairwise:

- sample unit: with repeats, the per-run mean of the flavor's flows (flows of one run share its
  queues and are not independent); with one run (or repeats that are all identical), the flows;
- test: Welch's unequal-variance t-test (Welch, Biometrika 1947; ``scipy.stats.ttest_ind`` with
  ``equal_var=False``) where both sides have at least :data:`MIN_TEST_SAMPLES` samples, the
  p-values of a metric's pairs at a point corrected with Holm's step-down procedure (Holm, "A simple
  sequentially rejective multiple test procedure", Scand. J. Statistics 6(2), 1979) at
  :data:`ALPHA`; with 2 samples a side, non-overlapping 95% Student-t intervals; with 1, no test;
- practical size: a relative difference under :data:`PRACTICAL_FRACTION` (or an absolute one under
  the metric's floor) is "equal" even when significant, so tiny deterministic differences are not
  called wins.

The result is a :class:`Verdict` (dataclasses all the way down) with rendering helpers: one
headline sentence per metric, one trade-off sentence per point, a summary over sweep points, and
notes (identical repeats; defaults that differ between the compared flows; ECN flavors on paths
that never mark).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from ccarena import units
from ccarena.analysis import catalogue

ALPHA = 0.05
"""Family-wise error rate of the pairwise tests of one metric at one sweep point (Holm)."""

MIN_TEST_SAMPLES = 3
"""Samples each side needs for Welch's test; with fewer, 95% intervals are compared."""

PRACTICAL_FRACTION = 0.05
"""Relative differences below this are "equal" whatever the test says."""

MATRIX_KEYS = ("matrix_row", "matrix_col")
"""The parameters of a flavor matrix's runs (:class:`ccarena.scenario.schema.Matrix`)."""

IDENTICAL_HERE = "its repeats are identical: nothing varies between seeds at this point"
"""The advice of a sentence at a point whose repeats gave identical numbers."""


@dataclass(frozen=True)
class MetricSpec:
    """A metric the verdict compares.

    Attributes:
        column: summary column (``goodput_mean_bps``, ``rtt_mean_s`` …).
        label: its name in sentences (``Goodput``, ``RTT``).
        higher_is_better: the direction of "better".
        kind: ``rate`` (bit/s), ``time`` (s), ``fraction`` (0–1, shown in %), ``index`` (0–1) or
            ``ratio`` (dimensionless ≥ 0): chooses the formatter.
        per_run: one value per run (Jain's index), not per flow.
        floor: absolute differences below this are "equal" (in the column's unit).
    """

    column: str
    label: str
    higher_is_better: bool
    kind: str
    per_run: bool = False
    floor: float = 0.0

    def format(self, value: float) -> str:
        """``value`` in readable units (``604 Mbps``, ``0.56 ms``, ``8.95%``)."""
        return _FORMAT[self.kind](value)

    def format_ci(self, mean: float, half: float) -> str:
        """``mean ± half`` in one unit (the mean alone when ``half`` is NaN)."""
        if self.kind == "fraction":
            if not (math.isfinite(mean) and math.isfinite(half)):
                return _pct(mean)
            return f"{units.mean_ci_numbers(100 * mean, 100 * half)}%"
        if self.kind in ("index", "ratio"):
            if not (math.isfinite(mean) and math.isfinite(half)):
                return self.format(mean)
            return units.mean_ci_numbers(mean, half)
        return units.format_mean_ci(_FORMAT[self.kind], mean, half)


def _pct(x: float) -> str:
    if not math.isfinite(x):
        return "–"
    return "0%" if x == 0 else f"{100 * x:.3g}%"


_FORMAT: dict[str, Callable[[float], str]] = {
    "rate": units.format_rate, "time": units.format_time, "fraction": _pct,
    "index": lambda x: "–" if not math.isfinite(x) else f"{x:.3f}",
    "ratio": lambda x: "–" if not math.isfinite(x) else f"{x:.3g}",
}


def _spec(column: str, label: str, kind: str, **options: Any) -> MetricSpec:
    """The verdict's view of ``column``: its direction of "better" from the metric catalogue
    (:attr:`ccarena.analysis.catalogue.Metric.higher_is_better`), the sentence label, formatter
    kind and ``options`` (``per_run``, ``floor``) the verdict's own.

    Raises:
        ValueError: the catalogue gives ``column`` no better side (a model's prediction).
    """
    higher_is_better = catalogue.metric(column).higher_is_better
    if higher_is_better is None:
        raise ValueError(f"{column}: the verdict compares only metrics with a better side")
    return MetricSpec(column, label, higher_is_better, kind, **options)


GOODPUT = _spec("goodput_mean_bps", "Goodput", "rate")
FCT_SLOWDOWN = _spec("fct_slowdown", "FCT slowdown", "ratio")
FCT = _spec("fct_s", "Flow completion time", "time")
RTT = _spec("rtt_mean_s", "RTT", "time", floor=1e-6)
LOSS = _spec("loss_rate", "Loss", "fraction", floor=1e-4)
RETRANSMISSIONS = _spec("retransmission_rate", "Retransmissions", "fraction", floor=1e-4)
JAIN = _spec("jain_index", "Jain's fairness index", "index", per_run=True, floor=0.01)


# ----------------------------------------------------------------------------- results

@dataclass(frozen=True)
class FlavorStats:
    """One flavor's samples of one metric at one sweep point.

    ``mean``, ``sd`` (ddof = 1; NaN for n < 2) and ``half_width`` of the 95% Student-t interval
    (NaN for n < 2) over ``n`` samples, each a run (``unit = "runs"``) or a flow (``"flows"``).
    """

    flavor: str
    mean: float
    sd: float
    half_width: float
    n: int
    unit: str


@dataclass(frozen=True)
class PairTest:
    """The comparison of two flavors on one metric: ``better`` has the better mean.

    ``method``: ``welch`` (Welch's t-test, ``p_value`` Holm-adjusted), ``intervals``
    (non-overlapping 95% intervals) or ``none`` (a side has one sample). ``significant``: the test
    (or the intervals) separate them; ``practical``: the difference is at least
    :data:`PRACTICAL_FRACTION` of the larger mean and above the metric's floor.
    """

    better: str
    worse: str
    method: str
    p_value: float
    significant: bool
    practical: bool

    @property
    def distinguishable(self) -> bool:
        """Both significant and of practical size."""
        return self.significant and self.practical

    @property
    def status(self) -> str:
        """``better`` (distinguishable), ``equal`` (significant but under the practical size),
        ``noise`` (not significant) or ``untested`` (no test possible)."""
        if self.method == "none":
            return "untested"
        if not self.significant:
            return "noise"
        return "better" if self.practical else "equal"


@dataclass(frozen=True)
class MetricVerdict:
    """One metric at one sweep point: per-flavor statistics (best first), the pairwise tests and
    the tiers (groups of flavors not distinguishable from the tier's best, best tier first)."""

    metric: MetricSpec
    stats: tuple[FlavorStats, ...]
    pairs: tuple[PairTest, ...]
    tiers: tuple[tuple[str, ...], ...]
    advice: str = "add repeats, with start_jitter so that they differ"
    """What to do when no pair could be tested (shown in the sentence; "" for nothing)."""

    def stat(self, flavor: str) -> FlavorStats:
        """The statistics of ``flavor``. Raises KeyError when it has none."""
        for s in self.stats:
            if s.flavor == flavor:
                return s
        raise KeyError(flavor)

    def pair(self, a: str, b: str) -> PairTest:
        """The test of ``a`` against ``b`` (either order). Raises KeyError for an unknown pair."""
        for p in self.pairs:
            if {p.better, p.worse} == {a, b}:
                return p
        raise KeyError((a, b))

    def distinguishable(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` differ beyond the noise and the practical size."""
        return a != b and self.pair(a, b).distinguishable

    def better_than(self, a: str, b: str) -> bool:
        """Whether ``a`` is distinguishably better than ``b``."""
        if a == b:
            return False
        p = self.pair(a, b)
        return p.distinguishable and p.better == a

    @property
    def separated(self) -> bool:
        """Whether any two flavors are distinguishable."""
        return len(self.tiers) > 1

    @property
    def untested(self) -> bool:
        """Whether no pair could be tested (one sample per flavor)."""
        return not self.separated and {p.status for p in self.pairs} == {"untested"}

    def sentence(self, caveat: bool = True) -> str:
        """The headline: ``Goodput: not distinguishable between dctcp, cubic and bbr (604 ± 73,
        593 ± 80, 588 ± 97 Mbps over 5 repeats).`` or ``RTT: dctcp lowest (0.56 ms), 2.8× lower
        than cubic (1.57 ms) and 3.9× lower than bbr (2.21 ms); cubic and bbr not
        distinguishable.``; ``caveat=False`` leaves out the untested metric's "one sample per
        flavor" clause (said once for all metrics by :meth:`PointVerdict.lines`)."""
        return _metric_sentence(self, caveat)


@dataclass(frozen=True)
class PointVerdict:
    """The verdict at one sweep point: ``point`` is ``((parameter, value), …)`` (empty without
    a sweep), ``repeats`` the most runs of any flavor, ``identical`` whether those repeats gave
    identical numbers."""

    point: tuple[tuple[str, Any], ...]
    metrics: tuple[MetricVerdict, ...]
    repeats: int
    identical: bool

    def metric(self, column: str) -> MetricVerdict | None:
        """The verdict on ``column``, None when it was not compared."""
        return next((m for m in self.metrics if m.metric.column == column), None)

    def tradeoff(self) -> str:
        """One sentence on the trade-off between the primary metric (goodput or FCT) and the
        others: ``dctcp keeps RTT 2.8× lower than cubic at indistinguishable goodput.`` (``equal``
        when the primary metric's differences are significant but under the practical size);
        ``""`` when there is none to state."""
        return _tradeoff(self)

    def lines(self) -> list[str]:
        """Headline sentences, one per metric, then the trade-off; when no metric could be tested
        (one sample per flavor), the sentences give the values and one line says so, once."""
        if self.metrics and all(m.untested for m in self.metrics):
            advice = self.metrics[0].advice
            return [m.sentence(caveat=False) for m in self.metrics] + [
                "One sample per flavor: these differences cannot be told from noise"
                + (f" ({advice})." if advice else ".")]
        out = [m.sentence() for m in self.metrics]
        trade = self.tradeoff()
        return out + ([trade] if trade else [])


@dataclass
class Verdict:
    """The verdict of one part of an experiment.

    Attributes:
        points: one :class:`PointVerdict` per sweep point, in the summary's order.
        parameters: the swept parameters that define the points (the flavor excluded).
        repeats: runs per flavor and point (the largest).
        identical_repeats: every point's repeats gave identical numbers.
        notes: sentences to show next to the verdict (identical repeats, differing defaults,
            ECN flavors on paths that never mark).
    """

    points: list[PointVerdict]
    parameters: list[str]
    repeats: int
    identical_repeats: bool
    notes: list[str] = field(default_factory=list)

    def sweep_summary(self, names: dict[str, str] | None = None) -> list[str]:
        """Over several points, one line per metric: ``bbr has higher goodput than cubic at 4
        of 5 loss points.`` (pairs never separated are left out; a metric with none at all gets
        ``Goodput: no flavor distinguishable at any of the 5 loss points.``)."""
        return _sweep_summary(self, names or {})

    def lines(self, names: dict[str, str] | None = None, max_points: int = 3) -> list[str]:
        """Every line to print: :meth:`sentences`, then the notes."""
        return self.sentences(names, max_points) + list(self.notes)

    def sentences(self, names: dict[str, str] | None = None, max_points: int = 3,
                  more: str = "(each of the {n} points has its verdict in the report)") -> list[str]:
        """A single point's headlines and trade-off; for a sweep, the summary over points and
        then each point's lines prefixed by the point (beyond ``max_points`` points, the summary
        and ``more`` with ``{n}`` the number of points). ``names``: parameter path → the short
        name to show."""
        names = names or {}
        if not self.points:
            return []
        if len(self.points) == 1:
            return self.points[0].lines()
        out = self.sweep_summary(names)
        if len(self.points) > max_points:  # the summary alone
            return out + [more.format(n=len(self.points))]
        for p in self.points:
            out += [f"At {self.point_label(p, names)}: {line}" for line in p.lines()]
        return out

    def point_label(self, point: PointVerdict, names: dict[str, str] | None = None) -> str:
        """How a point is named: ``loss = 1%``; a flavor matrix's pair as ``cubic vs reno``
        (row flavor first)."""
        values = dict(point.point)
        if self.parameters == list(MATRIX_KEYS):
            return f"{values['matrix_row']} vs {values['matrix_col']}"
        return ", ".join(f"{(names or {}).get(k, k)} = {v}" for k, v in point.point)


# ----------------------------------------------------------------------------- statistics

def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input's order.

    Sorted ascending p_(1) ≤ … ≤ p_(m), the adjusted value of p_(i) is
    max_{j ≤ i} min(1, (m − j + 1)·p_(j)); rejecting where the adjusted value is ≤ α controls the
    family-wise error rate at α (Holm, Scand. J. Statistics 6(2):65–70, 1979). NaN stays NaN
    (and does not count in m).
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    running = 0.0
    for rank, i in enumerate(ok[np.argsort(p[ok], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * float(p[i])))
        out[i] = running
    return out.tolist()


def welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of Welch's t-test of equal means (Welch, "The generalization of
    'Student's' problem when several different population variances are involved", Biometrika
    34, 1947): t = (ā − b̄) / √(s_a²/n_a + s_b²/n_b) on the Welch–Satterthwaite degrees of freedom;
    the value ``scipy.stats.ttest_ind(a, b, equal_var=False)`` gives, computed with scipy's
    Student-t ufunc (``scipy.special.stdtr``) without its per-call overhead (a sweep makes
    thousands). Both sides without spread: 0 when the means differ, 1 when they are equal (t is
    undefined). Each side needs at least 2 values."""
    return welch_p_from_stats(float(np.mean(a)), float(np.std(a, ddof=1)), a.size,
                              float(np.mean(b)), float(np.std(b, ddof=1)), b.size)


def welch_p_from_stats(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float,
                       n_b: int) -> float:
    """:func:`welch_p` from each side's mean, sample SD (ddof = 1) and count (n ≥ 2)."""
    from scipy import special

    na, nb = n_a, n_b
    va, vb = sd_a * sd_a, sd_b * sd_b
    diff = mean_a - mean_b
    if va == 0 and vb == 0:
        return 0.0 if diff != 0 else 1.0
    qa, qb = va / na, vb / nb
    se2 = qa + qb
    df = se2 * se2 / (qa * qa / (na - 1) + qb * qb / (nb - 1))
    t = abs(diff) / math.sqrt(se2)
    return float(min(1.0, 2.0 * special.stdtr(df, -t)))


def flavor_stats(flavor: str, x: np.ndarray, unit: str) -> FlavorStats:
    """Mean, SD (ddof = 1) and 95% Student-t half-width t_{0.975, n−1}·s/√n of the finite values
    of ``x`` (as :func:`ccarena.analysis.metrics.mean_ci`, with scipy's Student-t inverse ufunc
    ``scipy.special.stdtrit``); SD and half-width NaN for fewer than 2 values."""
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return FlavorStats(flavor, math.nan, math.nan, math.nan, 0, unit)
    mean = float(np.mean(x))
    if n < 2:
        return FlavorStats(flavor, mean, math.nan, math.nan, 1, unit)
    # Imported only when there is an interval to compute: scipy.special takes ~0.4 s to import
    # (its array-API layer loads numpy.f2py), and a run with one flow per flavor (the
    # quickstart) has none.
    from scipy import special

    sd = float(np.std(x, ddof=1))
    return FlavorStats(flavor, mean, sd, float(special.stdtrit(n - 1, 0.975)) * sd / math.sqrt(n), n, unit)


def compare_flavors(samples: dict[str, np.ndarray], metric: MetricSpec, unit: str = "runs",
                    alpha: float = ALPHA, practical: float = PRACTICAL_FRACTION) -> MetricVerdict:
    """Compare flavors on one metric.

    Args:
        samples: flavor → its samples (1-D, NaNs ignored; flavors left with none are dropped),
            in the order flavors are to be listed when tied.
        metric: what the samples measure.
        unit: what one sample is: ``runs`` or ``flows``.
        alpha: family-wise error rate for Holm's correction over this metric's Welch tests.
        practical: relative difference under which two flavors are "equal".

    Returns:
        The :class:`MetricVerdict` (flavors best first).
    """
    clean = {f: np.asarray(x, dtype=float)[np.isfinite(np.asarray(x, dtype=float))]
             for f, x in samples.items()}
    clean = {f: x for f, x in clean.items() if x.size}
    stats = [flavor_stats(f, x, unit) for f, x in clean.items()]
    sign = -1.0 if metric.higher_is_better else 1.0
    order = sorted(range(len(stats)), key=lambda i: (sign * stats[i].mean, i))
    stats = [stats[i] for i in order]
    pairs: list[tuple[str, str, str, float, bool | None]] = []
    for i, a in enumerate(stats):
        for b in stats[i + 1:]:
            xa, xb = clean[a.flavor], clean[b.flavor]
            if xa.size >= MIN_TEST_SAMPLES and xb.size >= MIN_TEST_SAMPLES:
                p = welch_p_from_stats(a.mean, a.sd, a.n, b.mean, b.sd, b.n)
                pairs.append((a.flavor, b.flavor, "welch", p, None))
            elif xa.size >= 2 and xb.size >= 2:
                apart = (a.mean + a.half_width < b.mean - b.half_width
                         or b.mean + b.half_width < a.mean - a.half_width)
                # Zero-width intervals (no spread) separate any two different means.
                pairs.append((a.flavor, b.flavor, "intervals", math.nan, bool(apart)))
            else:
                pairs.append((a.flavor, b.flavor, "none", math.nan, False))
    adjusted = holm([p for _, _, m, p, _ in pairs if m == "welch"])
    tests, k = [], 0
    means = {s.flavor: s.mean for s in stats}
    for a, b, method, _, apart in pairs:
        if method == "welch":
            p, significant = adjusted[k], adjusted[k] <= alpha
            k += 1
        else:
            p, significant = math.nan, bool(apart)
        ma, mb = means[a], means[b]
        big = max(abs(ma), abs(mb))
        size = abs(ma - mb)
        tests.append(PairTest(a, b, method, p, bool(significant),
                              bool(size > metric.floor and (big > 0 and size >= practical * big))))
    verdict = MetricVerdict(metric, tuple(stats), tuple(tests), ())
    return MetricVerdict(metric, tuple(stats), tuple(tests), _tiers(verdict))


def _tiers(v: MetricVerdict) -> tuple[tuple[str, ...], ...]:
    """Flavors (best first) cut into groups: a flavor joins the current group unless it is
    distinguishable from the group's best."""
    tiers: list[list[str]] = []
    for s in v.stats:
        if tiers and not v.distinguishable(tiers[-1][0], s.flavor):
            tiers[-1].append(s.flavor)
        else:
            tiers.append([s.flavor])
    return tuple(tuple(t) for t in tiers)


# ----------------------------------------------------------------------------- samples

def point_keys(summary: pd.DataFrame, params: Sequence[str]) -> list[str]:
    """The swept parameters that are not the flavor itself (a flavor sweep is the flavor
    column), and ``backend`` when the runs are on several: the columns that tell points apart."""
    flavors = summary["flavor"].astype(str)
    keys = [p for p in params if p in summary.columns and not (summary[p].astype(str) == flavors).all()]
    # Runs of one point on several backends (--backend sim,kernel) are twins, not repeats: each
    # backend gets its own verdict.
    if "backend" in summary.columns and summary["backend"].nunique(dropna=True) > 1:
        keys.append("backend")
    return keys


def scenario_metrics(summary: pd.DataFrame) -> list[MetricSpec]:
    """The metrics that matter for these runs: FCT slowdown (or FCT) when flows are finite,
    else goodput; mean RTT; loss (retransmissions when no loss is counted); Jain's index when
    each run holds one flavor and several flows (a run's index belongs to no flavor otherwise)."""
    def has(col: str, nonzero: bool = False) -> bool:
        if col not in summary.columns:
            return False
        x = pd.to_numeric(summary[col], errors="coerce")
        return bool((x.notna() & (x != 0 if nonzero else True)).any())

    out = []
    if has("fct_s"):
        out.append(FCT_SLOWDOWN if has("fct_slowdown") else FCT)
    elif has("goodput_mean_bps"):
        out.append(GOODPUT)
    if has("rtt_mean_s"):
        out.append(RTT)
    if has("loss_rate", nonzero=True):
        out.append(LOSS)
    elif has("retransmission_rate", nonzero=True):
        out.append(RETRANSMISSIONS)
    one_flavor_per_run = bool((summary.groupby("run_id")["flavor"].nunique() == 1).all())
    several_flows = bool(summary.groupby("run_id").size().max() > 1)
    if has("jain_index") and one_flavor_per_run and several_flows:
        out.append(JAIN)
    return out


def _per_run(x: np.ndarray, run: np.ndarray, per_run: bool) -> np.ndarray:
    """One value per run (``run`` holds each row's run code): the mean of the finite values
    over the run's flows, or, for a per-run metric, the run's first row's value."""
    codes, first, inverse = np.unique(run, return_index=True, return_inverse=True)
    if per_run:
        return x[first]
    finite = np.isfinite(x)
    sums = np.bincount(inverse, weights=np.where(finite, x, 0.0), minlength=codes.size)
    counts = np.bincount(inverse, weights=finite.astype(float), minlength=codes.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts


def _identical(values: np.ndarray) -> bool:
    """Whether two or more runs gave the same value (to 1e-12 relative)."""
    x = values[np.isfinite(values)]
    if x.size < 2:
        return False
    return float(np.ptp(x)) <= 1e-12 * max(1.0, float(np.max(np.abs(x))))


def point_verdict(rows: pd.DataFrame, metrics_: Sequence[MetricSpec],
                  point: tuple[tuple[str, Any], ...] = ()) -> PointVerdict:
    """The verdict at one sweep point from its summary rows (one per run and flow; ``run_id``,
    ``flavor`` and the metrics' columns).

    The sample unit is the run (the per-run mean of the flavor's flows) when a flavor has
    several runs that are not all identical; else the flows of the flavor's first run (identical
    repeats add nothing the first run does not say).
    """
    values = {m.column: pd.to_numeric(rows[m.column], errors="coerce").to_numpy(dtype=float)
              for m in metrics_}
    run = pd.factorize(rows["run_id"].astype(str), sort=False)[0]
    return _point_verdict(rows["flavor"].astype(str).to_numpy(), run, values, metrics_, point)


def _point_verdict(flavor: np.ndarray, run: np.ndarray, values: dict[str, np.ndarray],
                   metrics_: Sequence[MetricSpec], point: tuple[tuple[str, Any], ...]) -> PointVerdict:
    """:func:`point_verdict` on the point's columns as arrays (``run``: integer run codes,
    increasing in the order runs appear)."""
    flavors = list(dict.fromkeys(flavor.tolist()))
    masks = {f: flavor == f for f in flavors}
    runs = {f: int(np.unique(run[mask]).size) for f, mask in masks.items()}
    repeats = max(runs.values()) if runs else 0
    per_run = {(f, m.column): _per_run(values[m.column][mask], run[mask], m.per_run)
               for f, mask in masks.items() if runs[f] > 1 for m in metrics_}
    # Identical repeats: every flavor with several runs gave the same per-run numbers on every
    # compared metric.
    identical = repeats > 1 and all(_identical(x) for x in per_run.values() if np.isfinite(x).any())
    out = []
    for m in metrics_:
        samples: dict[str, np.ndarray] = {}
        unit = "runs"
        for f, mask in masks.items():
            if runs[f] > 1 and not identical:
                samples[f] = per_run[(f, m.column)]
                continue
            mine = run[mask]
            x = values[m.column][mask][mine == mine[0]]  # the flavor's first run
            samples[f] = x[:1] if m.per_run else x
            unit = "runs" if m.per_run else "flows"
        found = compare_flavors(samples, m, unit)
        if identical:
            found = replace(found, advice=IDENTICAL_HERE)
        if len(found.stats) >= 2:
            out.append(found)
    return PointVerdict(point, tuple(out), repeats, identical)


def verdict(summary: pd.DataFrame, params: Sequence[str],
            runs: Iterable[dict[str, Any]] | None = None,
            ecn_notes: Sequence[str] = ()) -> Verdict:
    """The verdict of a part's runs.

    Args:
        summary: the part's summary rows (one per run and flow; ``run_id``, ``flavor`` and the
            metric columns).
        params: the part's swept parameters; those other than the flavor define the points.
        runs: the part's run records (experiment.json ``runs`` entries, each with its resolved
            ``spec``), for :func:`differing_defaults`; None: not checked.
        ecn_notes: sentences on ECN flavors without marking (:func:`ccarena.analysis.plan_checks.
            ecn_warnings`), added to the notes.

    Returns:
        The :class:`Verdict`; its ``points`` is empty when fewer than two flavors were compared.
    """
    keys = point_keys(summary, params) if len(summary) else []
    metrics_ = scenario_metrics(summary) if len(summary) else []
    points = []
    alone = []  # points with one flavor: nothing to compare, but identical repeats are said
    if metrics_:
        # Columns read once as arrays; each point is a slice of them (a sweep of hundreds of
        # points asked pandas for thousands of small frames).
        values = {m.column: pd.to_numeric(summary[m.column], errors="coerce").to_numpy(dtype=float)
                  for m in metrics_}
        flavor = summary["flavor"].astype(str).to_numpy()
        run = pd.factorize(summary["run_id"].astype(str), sort=False)[0]
        if keys:
            codes, labels = pd.MultiIndex.from_frame(summary[keys].astype(object)).factorize(sort=False) \
                if len(keys) > 1 else pd.factorize(summary[keys[0]], sort=False)
        else:
            codes, labels = np.zeros(len(summary), dtype=np.int64), [()]
        order = np.argsort(codes, kind="stable")
        bounds = np.flatnonzero(np.r_[True, codes[order][1:] != codes[order][:-1], True])
        for a, b in zip(bounds[:-1], bounds[1:]):
            idx = order[a:b]
            label = labels[int(codes[idx[0]])]
            label = label if isinstance(label, tuple) else (label,)
            label = tuple(v.item() if isinstance(v, np.generic) else v for v in label)
            pv = _point_verdict(flavor[idx], run[idx], {c: v[idx] for c, v in values.items()},
                                metrics_, tuple(zip(keys, label)))
            if pv.metrics:
                points.append(pv)
            elif pv.repeats > 1:
                alone.append(pv)
    repeats = max((p.repeats for p in points), default=0)
    identical = bool(points) and repeats > 1 and all(p.identical for p in points if p.repeats > 1)
    notes: list[str] = []
    if not points and alone:
        same = [p for p in alone if p.identical]
        if len(same) == len(alone):
            identical, repeats = True, max(p.repeats for p in alone)
        elif same:
            where = "; ".join(", ".join(f"{_short_path(k)} = {v}" for k, v in p.point) for p in same)
            notes.append(f"At {where}, the repeats are identical: nothing there varies between "
                         "seeds, so its ± 0 measures no noise.")
    if identical:
        notes.append(identical_repeats_note(repeats, summary, params))
        # The note says it once for every point and what to do.
        points = [replace(p, metrics=tuple(replace(m, advice="") for m in p.metrics)) for p in points]
    if runs is not None:
        notes += differing_defaults(list(runs))
        notes += host_model_note(list(runs))
    notes += list(ecn_notes)
    return Verdict(points, keys, repeats, identical, notes)


# ----------------------------------------------------------------------------- notes

HOST_MODEL_WORDS = {"linux": "Linux 6.x hosts: Linux's recovery and CUBIC/BBR module defaults, the "
                             "handshake's RTT sample, the testbed's start and link timing jitter",
                    "rfc": "each flavor as its RFC or paper describes it"}
"""What each host model means, in the note beside the verdict (:mod:`ccarena.experiment.host_model`)."""


def host_model_note(runs: Sequence[dict[str, Any]]) -> list[str]:
    """One sentence naming the host model the simulated runs used (``host``), read from their
    resolved specs: a TCP flow with the handshake's RTT sample is a ``linux`` host's, one without
    an ``rfc`` host's; runs on a backend (ids with ``@``) are left out. Empty with no TCP flow."""
    models: dict[str, set[str]] = {}
    for run in runs:
        if "@" in str(run.get("run_id", "")):
            continue
        for flow in run.get("spec", {}).get("flows", []):
            if flow.get("kind") == "tcp":
                model = "linux" if flow.get("handshake_rtt") else "rfc"
                models.setdefault(model, set()).add(str(flow.get("flavor")))
    if len(models) == 1:
        (model,) = models
        return [f"Host model: {model} ({HOST_MODEL_WORDS[model]}); set host = "
                f"\"{'rfc' if model == 'linux' else 'linux'}\" in the scenario for the other."]
    if models:
        parts = "; ".join(f"{m} for {', '.join(sorted(f))}" for m, f in sorted(models.items()))
        return [f"Host models: {parts} (linux: {HOST_MODEL_WORDS['linux']}; rfc: {HOST_MODEL_WORDS['rfc']})."]
    return []

def _short_path(path: str) -> str:
    """A swept field's path as a note names it: its last two parts (``link.loss``)."""
    return ".".join(str(path).split(".")[-2:])


def identical_repeats_note(repeats: int, summary: pd.DataFrame, params: Sequence[str]) -> str:
    """The plain statement that ``repeats`` repeats gave identical numbers, with the fields of
    this project that add variation between seeds (README "Scenario reference"): the scenario's
    ``start_jitter`` (each flow's start drawn from the repeat's seed), random ``loss`` on a link
    (drawn from the repeat's seed), and, with ``[[traffic]]``, sweeping ``traffic[0].seed``."""
    ways = ['start jitter (start_jitter = "10ms" in the scenario: each flow starts at a random '
            "offset drawn from the repeat's seed)",
            'random loss on a link (loss = "0.1%")']
    generated = any("traffic[" in str(p) for p in params) or (
        "name" in summary.columns and summary["name"].astype(str).str.match(
            r"^(perm|incast|poisson|all2all|stride|a2a)-\d+$").any())
    if generated:
        ways.append('other traffic (sweep "traffic[0].seed" = [1, 2, 3])')
    return (f"The {repeats} repeats are identical: nothing in this scenario varies between seeds, "
            "so they cannot measure the noise. Add variation with " + ", ".join(ways[:-1])
            + f" or {ways[-1]}.")


DEFAULT_FIELDS = (
    ("recovery", "loss recovery", None),
    ("ecn", "ECN", lambda v: "on" if v else "off"),
    ("delayed_ack_ns", "delayed ACK", lambda v: units.format_time(v / 1e9) if v else "off"),
    ("ack_every_segments", "ACK every", lambda v: f"{v} segments"),
    ("initial_cwnd_packets", "initial window", lambda v: f"{v} packets"),
    ("mss_bytes", "MSS", lambda v: f"{v} B"),
    ("min_rto_ns", "minimum RTO", lambda v: units.format_time(v / 1e9)),
    ("initial_rto_ns", "initial RTO", lambda v: units.format_time(v / 1e9)),
    ("dupthresh", "duplicate-ACK threshold", None),
    ("rwnd_bytes", "receive window", lambda v: units.format_bytes(v) if v else "unlimited"),
    ("sndbuf_bytes", "send buffer", lambda v: units.format_bytes(v) if v else "unlimited"),
)
"""Resolved TCP flow fields (:class:`ccarena.runspec.TcpFlowSpec`) compared between flavors:
(field, words, formatter)."""

RECOVERY_WORDS = {"linux": "linux (SACK + RACK-TLP + PRR)", "prr": "prr (SACK + PRR)",
                  "sack": "sack (RFC 6675)", "newreno": "newreno (RFC 6582)",
                  "reno": "reno (RFC 5681)", "tahoe": "tahoe"}
"""How a recovery mode is named in notes (README "Flavors")."""


def differing_defaults(runs: Sequence[dict[str, Any]]) -> list[str]:
    """Settings whose value differs between the compared flavors, from the runs' resolved
    specs: ``Note: the flows differ in loss recovery: cubic uses linux (SACK + RACK-TLP + PRR),
    reno uses reno (RFC 5681).`` — one sentence per field of :data:`DEFAULT_FIELDS` where every
    flavor has one value over its TCP flows in ``runs`` and not all flavors the same (a field
    that varies within a flavor is swept, and the sweep shows it).

    Args:
        runs: run records, each with ``spec`` (a :meth:`ccarena.runspec.RunSpec.to_dict`).
    """
    values: dict[str, dict[str, set[Any]]] = {}
    for record in runs:
        for flow in (record.get("spec") or {}).get("flows", []):
            if flow.get("kind", "tcp") != "tcp" or "flavor" not in flow:
                continue
            per = values.setdefault(str(flow["flavor"]), {})
            for name, _, _ in DEFAULT_FIELDS:
                per.setdefault(name, set()).add(_hashable(flow.get(name)))
    if len(values) < 2:
        return []
    notes = []
    for name, words, fmt in DEFAULT_FIELDS:
        sets = {f: v.get(name, set()) for f, v in values.items()}
        if any(len(s) != 1 for s in sets.values()):
            continue
        single = {f: next(iter(s)) for f, s in sets.items()}
        if len(set(single.values())) < 2:
            continue
        show = fmt or (lambda v: RECOVERY_WORDS.get(str(v), str(v)) if name == "recovery" else str(v))
        by_value: dict[Any, list[str]] = {}
        for f, v in single.items():
            by_value.setdefault(v, []).append(f)
        if name == "recovery":
            parts = [f"{_join(fs)} use{'s' if len(fs) == 1 else ''} {show(v)}" for v, fs in by_value.items()]
        else:
            parts = [f"{_join(fs)} {show(v)}" for v, fs in by_value.items()]
        notes.append(f"Note: the flows differ in {words}: " + "; ".join(parts) + ".")
    return notes


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


# ----------------------------------------------------------------------------- sentences

def _join(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _values(v: MetricVerdict, flavors: Sequence[str], with_ci: bool = True) -> str:
    """The flavors' means (± half-width) in one unit: ``604 ± 73, 593 ± 80, 588 ± 97 Mbps``."""
    texts = [v.metric.format_ci(v.stat(f).mean, v.stat(f).half_width) if with_ci
             else v.metric.format(v.stat(f).mean) for f in flavors]
    suffixes = {t.rsplit(" ", 1)[-1] for t in texts if " " in t and not t.rsplit(" ", 1)[-1][0].isdigit()}
    if len(suffixes) == 1 and len(texts) > 1 and all(t.endswith(" " + next(iter(suffixes))) for t in texts):
        unit = next(iter(suffixes))
        return ", ".join(t[: -len(unit) - 1] for t in texts) + f" {unit}"
    return ", ".join(texts)


def _over(v: MetricVerdict, flavors: Sequence[str]) -> str:
    """``over 5 repeats`` / ``over 16 flows of one run`` / ``over 3–5 repeats``."""
    ns = sorted({v.stat(f).n for f in flavors})
    unit = v.stats[0].unit
    count = str(ns[0]) if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
    if unit == "runs":
        return f"over {count} repeat{'s' if ns[-1] != 1 else ''}"
    return f"over {count} flow{'s' if ns[-1] != 1 else ''} of one run"


def factor_text(metric: MetricSpec, better: float, worse: float) -> str:
    """How much better ``better`` is than ``worse``: ``2.8× lower`` / ``12% higher``."""
    word = "higher" if metric.higher_is_better else "lower"
    big, small = (better, worse) if metric.higher_is_better else (worse, better)
    if small <= 0 or not (math.isfinite(big) and math.isfinite(small)):
        return word
    ratio = big / small
    if ratio >= 10:
        return f"{ratio:.0f}× {word}"
    if ratio >= 1.5:
        return f"{ratio:.2g}× {word}"
    pct = (1 - small / big) * 100 if not metric.higher_is_better else (ratio - 1) * 100
    return f"{pct:.2g}% {word}"


def _metric_sentence(v: MetricVerdict, caveat: bool = True) -> str:
    m = v.metric
    names = [s.flavor for s in v.stats]
    if not v.separated:
        statuses = {p.status for p in v.pairs}
        values = f"({_values(v, names)} {_over(v, names)})"
        if statuses == {"untested"}:
            best, worst = v.stats[0], v.stats[-1]
            gap = (f" ({best.flavor} {factor_text(m, best.mean, worst.mean)})"
                   if len(v.stats) == 2 and best.mean != worst.mean else "")
            listed = ", ".join(f"{s.flavor} {m.format(s.mean)}" for s in v.stats)
            if not caveat:
                return f"{m.label}: {listed}{gap}."
            advice = f" ({v.advice})" if v.advice else ""
            return (f"{m.label}: {listed}{gap}, but one sample per flavor cannot tell a difference "
                    f"from noise{advice}.")
        if statuses == {"equal"}:
            return (f"{m.label}: equal within {PRACTICAL_FRACTION:.0%} for {_join(names)} "
                    f"{values}.")
        return f"{m.label}: not distinguishable between {_join(names)} {values}."
    word = "highest" if m.higher_is_better else "lowest"
    top = v.tiers[0]
    head = (f"{m.label} ({_over(v, names)}): {_join(top)} {word} ({_values(v, top, False)}"
            + ("; not distinguishable from each other" if len(top) > 1 else "") + ")")
    best = v.stat(top[0])
    others = [f for tier in v.tiers[1:] for f in tier]
    compared = [f"{factor_text(m, best.mean, v.stat(f).mean)} than {f} ({m.format(v.stat(f).mean)})"
                for f in others if v.better_than(top[0], f)]
    text = head + (", " + _join(compared) if compared else "")
    rest = v.tiers[1:]
    if len(others) >= 2:
        if len(rest) == 1:
            text += f"; {_join(rest[0])} not distinguishable"
        else:  # the next tiers as a chain: "cubic 1.4× lower than bbr"
            links = []
            for a, b in zip(rest, rest[1:]):
                fa, fb = v.stat(a[0]), v.stat(b[0])
                links.append(f"{_join(a)} {factor_text(m, fa.mean, fb.mean)} than {_join(b)}")
            text += "; " + "; ".join(links)
    return text + "."


def _tradeoff(p: PointVerdict) -> str:
    if not p.metrics:
        return ""
    primary, secondary = p.metrics[0], [m for m in p.metrics[1:] if m.metric is not JAIN]
    pname = _label_in_sentence(primary.metric)
    if not primary.separated:
        for s in secondary:
            if not s.separated:
                continue
            leader = s.tiers[0][0]
            beaten = [f for f in (x.flavor for x in s.stats) if s.better_than(leader, f)]
            if not beaten:
                continue
            claims = _join([f"{factor_text(s.metric, s.stat(leader).mean, s.stat(f).mean)} than {f}"
                            for f in beaten])
            also = [_label_in_sentence(o.metric) for o in secondary
                    if o is not s and all(o.better_than(leader, f) for f in beaten)]
            extra = f" (and its {_join(also)} too)" if also else ""
            # "equal" only where the difference is below the practical size; else it is noise.
            level = "equal" if {t.status for t in primary.pairs} == {"equal"} else "indistinguishable"
            return f"{leader} keeps {_label_in_sentence(s.metric)} {claims}{extra} at {level} {pname}."
        return ""
    leader = primary.tiers[0][0]
    for s in secondary:
        rivals = [x.flavor for x in s.stats if s.better_than(x.flavor, leader)
                  and primary.better_than(leader, x.flavor)]
        if rivals:
            f = rivals[0]
            gain = factor_text(primary.metric, primary.stat(leader).mean, primary.stat(f).mean)
            return (f"Trade-off: {leader} has {gain} {pname} than {f}, but {f} keeps "
                    f"{_label_in_sentence(s.metric)} "
                    f"{factor_text(s.metric, s.stat(f).mean, s.stat(leader).mean)}.")
    wins = [_label_in_sentence(s.metric) for s in secondary
            if s.separated and s.tiers[0][0] == leader and len(s.tiers[0]) == 1]
    if wins:
        return f"{leader} leads on {pname} and on {_join(wins)}: no trade-off."
    return ""


def _label_in_sentence(m: MetricSpec) -> str:
    """The metric's label inside a sentence: lower case but for names (RTT, FCT, Jain's)."""
    return m.label if m.label.split()[0] in ("RTT", "FCT", "Jain's") else m.label[0].lower() + m.label[1:]


def _sweep_summary(v: Verdict, names: dict[str, str]) -> list[str]:
    n = len(v.points)
    if n < 2:
        return []
    if v.parameters == list(MATRIX_KEYS):
        what = "flavor"  # "at 2 of 12 flavor pairs"
    elif len(v.parameters) == 1:
        what = names.get(v.parameters[0], v.parameters[0].split(".")[-1])
    else:
        what = "sweep"
    noun = "pairs" if v.parameters == list(MATRIX_KEYS) else "points"
    out = []
    columns = list(dict.fromkeys(m.metric.column for p in v.points for m in p.metrics))
    for col in columns:
        counts: dict[tuple[str, str], int] = {}
        met: dict[frozenset[str], int] = {}  # points where the two flavors were compared
        metric = None
        for p in v.points:
            mv = p.metric(col)
            if mv is None:
                continue
            metric = mv.metric
            for t in mv.pairs:
                both = frozenset((t.better, t.worse))
                met[both] = met.get(both, 0) + 1
                if t.distinguishable:
                    counts[(t.better, t.worse)] = counts.get((t.better, t.worse), 0) + 1
        if metric is None:
            continue
        word = "higher" if metric.higher_is_better else "lower"
        if not counts:
            out.append(f"{metric.label}: no flavor distinguishable at any of the {n} {what} {noun}.")
            continue
        # Out of the points where the two met (a matrix pair holds two of its flavors, a sweep
        # point usually all): "at 2 of 2 flavor pairs where both ran", "at 4 of 5 loss points".
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1] / met[frozenset(kv[0])], -kv[1]))[:3]

        def where(a: str, b: str) -> str:
            both = met[frozenset((a, b))]
            return f"{both} {what} {noun}" + ("" if both == n else " where both ran")

        out.append(f"{metric.label}: " + "; ".join(
            f"{a} has {word} {_label_in_sentence(metric)} than {b} at {k} of {where(a, b)}"
            for (a, b), k in ranked) + ".")
    return out


# ----------------------------------------------------------------------------- a part's runs

def part_verdict(part: Any) -> Verdict:
    """The verdict of one part of stored results (a :class:`ccarena.results.PartResult` or a
    :class:`ccarena.results.Result`: ``summary``, ``parameters``, ``run_ids``, ``experiment``
    and ``store``), with the notes on differing defaults from the runs' resolved specs and the
    ECN warnings (:func:`ccarena.analysis.plan_checks.ecn_warnings`; the path of each flow from the
    run's run.json, read only for runs with a flavor that needs ECN)."""
    from ccarena.errors import UserError
    from ccarena.analysis.plan_checks import ecn_warnings
    from ccarena.flavors import engine_flavors

    ids = set(part.run_ids)
    records = [r for r in part.experiment.get("runs", []) if r.get("run_id") in ids and r.get("spec")]
    needs = {name for name, f in engine_flavors().items() if f.get("needs_ecn")}
    checked: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
    for r in records:
        if r.get("spec_sha256") in checked or not any(
                f.get("flavor") in needs for f in r["spec"].get("flows", [])):
            continue
        try:
            derived = part.store.read_run_record(r["run_id"]).get("derived")
        except (OSError, ValueError, KeyError, UserError):
            derived = None  # then any marking queue in the network counts
        checked[str(r.get("spec_sha256", r["run_id"]))] = (r["spec"], derived)
    ecn = [f"Warning: {w}" for w in ecn_warnings(checked.values())]
    summary = part.summary
    if not len(summary):
        return Verdict([], [], 0, False, ecn)
    return verdict(summary, part.parameters, records, ecn)
