"""Rank the library's flavors by how closely their replays match a trace
(:func:`rank`), with a confidence and an ``unknown`` answer when none fits.

Scores are a softmax over −distance/:data:`TAU` across flavors (each flavor's distance is its
best variant's). The answer is ``unknown`` when the best distance exceeds
:data:`UNKNOWN_DISTANCE`. Both constants were set on simulated traces only, never on the kernel
traces of tests/data/identify/: ``scripts/identify_confusion.py --tune`` (every catalogue flavor
on two tuning paths, with its flavor in the library and left out) gave best distances up to
1.03 for the 32 of 52 traces it named right (median 0.25), so :data:`UNKNOWN_DISTANCE` is 1.5 (about
1.5 × that); :data:`TAU` is set by hand so that a margin of 0.5 distance units between the first
and the second flavor gives odds of about 4 : 1.

Open-set recognition (a flavor not in the library): the best match is also compared with its
own round-trip spread (:func:`ccarena.identify.own_spread`); past :data:`SPREAD_RATIO` × that
spread the confidence is 0, and any answer under :data:`LOW_CONFIDENCE` is shown by the CLI as
"unknown, closest: FLAVOR" (``confident`` false in the JSON). Flavors within
:data:`FAMILY_SLACK` of the best are its family: a near-twin of a flavor missing from the
library shares the confidence with it instead of taking it alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from ccarena.identify.features import distance
from ccarena.identify.path import PathEstimate

TAU = 0.35
"""Softmax temperature, distance units (tuned on simulated traces)."""

UNKNOWN_DISTANCE = 1.5
"""Best distance above which the answer is ``unknown`` (tuned on simulated traces)."""

SPREAD_RATIO = 2.0
"""The confidence is 0 when the best distance exceeds SPREAD_RATIO × the best flavor's own
round-trip spread (:func:`ccarena.identify.own_spread`, at least :data:`SPREAD_FLOOR`), and it
falls as (distance / (SPREAD_RATIO × spread))² before that: a trace farther from its best match
than that flavor's replays are from each other after the same path estimate is not that flavor
(open-set recognition by a per-class residual gate, as in Bendale and Boult, "Towards Open Set
Deep Networks", CVPR 2016, with a parametric bootstrap for the class's spread). Set with
:data:`FAMILY_SLACK` on simulated traces of the tuning paths only
(``scripts/identify_confusion.py --select``), as the pair maximising (right answers with a
confidence ≥ :data:`LOW_CONFIDENCE`) − 3 × (wrong names with a confidence ≥ it), with the trace's
flavor in the library and left out, over ratios 1.25–4 and slacks 0.25–0.4 (docs/identify.md)."""

LOW_CONFIDENCE = 0.2
"""Below this confidence an answer is a guess: the CLI prints "unknown, closest: FLAVOR" and
``--json`` has ``confident: false`` (``best`` still names the closest flavor). Set on simulated
traces (``scripts/identify_confusion.py --tune``)."""

SPREAD_FLOOR = 0.2
"""Least own spread the gate divides by, distance units (a deterministic lossless replay can
reproduce itself exactly)."""

TIE_SLACK = 0.1
"""Flavors within TIE_SLACK + 0.3 × the best distance (at most 2.5 × TIE_SLACK, and never past
:data:`UNKNOWN_DISTANCE`) of the best are indistinguishable on this path (e.g. HyBla is Reno
below a 25 ms RTT, DCTCP is Reno without ECN marks): among them the widely deployed come first
(:data:`DEPLOYED_FIRST`), then the catalogue's order (:func:`ccarena.flavors.tcp_flavors`); the
first is the answer's name."""

FAMILY_SLACK = 0.4
"""Flavors within FAMILY_SLACK of the best distance (and not past :data:`UNKNOWN_DISTANCE`) are
the answer's family: a trace of a flavor lies a median 0.31 (upper quartile 0.44) from that
flavor's nearest replay on the simulated tuning paths, so a trace of any of them could land that
near. They are listed as ``equivalent`` after the tied ones (:data:`TIE_SLACK`, which still
picks the name), their scores count in the confidence, and the runner-up margin is taken to the
first flavor outside the family. So a near-twin of the trace's flavor (HyBla for Reno at a 30 ms
RTT) is a family member, not a confident single answer. Set with :data:`SPREAD_RATIO` on the
tuning paths (``scripts/identify_confusion.py --select``)."""

DEPLOYED_FIRST = ("cubic", "bbr", "reno", "newreno", "bbr3", "dctcp", "prague")
"""The tie-break's first names: the default controllers of Linux, Windows and macOS (CUBIC), of
Google's services (BBR) and the Reno family as stacks ship it, before historical ones (Tahoe,
listed first by the catalogue) that behave the same on a loss-free path."""


def tie_order(catalogue_order: Sequence[str]) -> list[str]:
    """``catalogue_order`` with :data:`DEPLOYED_FIRST`'s names (those present) moved to the front."""
    first = [f for f in DEPLOYED_FIRST if f in catalogue_order]
    return first + [f for f in catalogue_order if f not in first]


@dataclass(frozen=True)
class Candidate:
    """One flavor's place in the ranking: its catalogue name, the variant that matched best,
    the distance of that variant's replay (feature-scale units) and its softmax score (0–1)."""

    flavor: str
    variant: str
    distance: float
    score: float


@dataclass
class Identification:
    """What ``ccarena identify`` found.

    Attributes:
        best: the catalogue flavor, or ``unknown`` when no replay is within
            :data:`UNKNOWN_DISTANCE`.
        confidence: 0–1: the summed score of the best flavor and its family
            (:data:`FAMILY_SLACK`), lowered as the best distance nears a limit (:func:`rank`),
            or, for ``unknown``, how far the best distance is past the threshold.
        ranking: every flavor, best first (the tied ones first, in the catalogue's order, then
            the rest of the family, then the others, nearest first).
        equivalent: flavors indistinguishable from the best on this path: the tied ones
            (:data:`TIE_SLACK`), then the rest of the family (:data:`FAMILY_SLACK`).
        features: the trace's own feature vector (:func:`ccarena.identify.features.features`).
        path: the estimated path.
        evidence: one line saying why.
        source: the trace and flow; label: the flavor the trace itself names (never read).
        wall_s: the identification's wall time, seconds.
        own_spread: the best variant's round-trip spread (:data:`SPREAD_RATIO`), distance
            units; NaN when not measured.
    """

    best: str
    confidence: float
    ranking: list[Candidate]
    features: dict[str, float]
    path: PathEstimate
    evidence: str
    source: str = ""
    label: str = "unknown"
    wall_s: float = math.nan
    equivalent: list[str] = field(default_factory=list)
    replay_features: dict[str, dict[str, float]] = field(default_factory=dict)
    own_spread: float = math.nan

    @property
    def confident(self) -> bool:
        """True when ``best`` is a flavor with a confidence of at least :data:`LOW_CONFIDENCE`."""
        return self.best != "unknown" and self.confidence >= LOW_CONFIDENCE

    def as_json(self) -> dict[str, Any]:
        """The JSON object ``--json`` prints: ``best``, ``confidence``, ``confident``
        (:attr:`confident`), ``own_spread``, ``ranking`` (list of
        {flavor, variant, score, distance}), ``features``, ``path``, ``evidence``, ``source``,
        ``wall_s``; NaN becomes null."""
        def clean(v: float) -> float | None:
            return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else round(v, 4)

        return {
            "best": self.best,
            "confidence": clean(self.confidence),
            "confident": self.confident,
            "ranking": [{"flavor": c.flavor, "variant": c.variant, "score": clean(c.score),
                         "distance": clean(c.distance)} for c in self.ranking],
            "features": {k: clean(v) for k, v in self.features.items()},
            "path": {k: clean(v) for k, v in self.path.as_dict().items()},
            "equivalent": list(self.equivalent),
            "evidence": self.evidence,
            "source": self.source,
            "own_spread": clean(self.own_spread),
            "wall_s": clean(self.wall_s),
        }


def evidence(measured: dict[str, float]) -> str:
    """The measured behaviour in words, e.g. ``decrease factor 0.70 ± 0.02, cubic growth with
    K = 3.1 s, RTT +35 % over base``."""
    parts = []
    factor = measured.get("decrease_factor", math.nan)
    if math.isfinite(factor):
        parts.append(f"decrease factor {factor:.2f} ± {measured.get('decrease_spread', 0) / 2:.2f}")
    else:
        parts.append("no loss response seen")
    share = measured.get("no_backoff_share", math.nan)
    if math.isfinite(share) and share >= 0.3:
        parts.append(f"no backoff at {share:.0%} of loss events")
    fit, k = measured.get("cubic_fit", math.nan), measured.get("cubic_k_s", math.nan)
    growth = measured.get("growth_mss_per_rtt", math.nan)
    if math.isfinite(fit) and fit >= 0.5 and math.isfinite(k):
        parts.append(f"cubic growth with K = {k:.1f} s")
    elif math.isfinite(growth):
        parts.append(f"linear growth {10 ** growth:.1f} MSS/RTT")
    queue = measured.get("queue_delay", math.nan)
    if math.isfinite(queue):
        parts.append(f"RTT +{max(10 ** queue - 0.02, 0) * 100:.0f} % over base")
    mark = measured.get("mark_decrease_factor", math.nan)
    if math.isfinite(mark):
        ce = measured.get("ce_per_100_packets", math.nan)
        marked = f", {max(10 ** ce - 0.1, 0):.1f} % of packets CE" if math.isfinite(ce) else ""
        parts.append(f"cwnd trough/crest {mark:.2f} under ECN marks{marked}")
    dips = measured.get("probe_dips_per_10s", 0.0)
    if dips >= 0.3:
        parts.append(f"{dips:.1f} ProbeRTT dips per 10 s")
    return ", ".join(parts)


def rank(measured: dict[str, float], replays: dict[str, tuple[str, dict[str, float]]],
         path: PathEstimate, catalogue_order: list[str], *, tau: float = TAU,
         unknown_distance: float = UNKNOWN_DISTANCE, own_spread: float = math.nan) -> Identification:
    """Rank flavors by the distance of their replays' features to ``measured``; ``unknown``
    when the best is past :data:`UNKNOWN_DISTANCE`; a confidence of 0 when it is past
    :data:`SPREAD_RATIO` × ``own_spread`` (the open-set gate; below :data:`LOW_CONFIDENCE` the
    CLI answers "unknown, closest: …").

    Args:
        measured: the trace's features.
        replays: variant label → (catalogue flavor, the replay's features).
        path: the estimated path (kept in the result).
        catalogue_order: flavor names in the catalogue's order, the tie-break after
            :data:`DEPLOYED_FIRST` (:data:`TIE_SLACK`, :func:`tie_order`).
        tau: softmax temperature; unknown_distance: the ``unknown`` threshold.
        own_spread: the best variant's round-trip spread (:func:`ccarena.identify.own_spread`),
            distance units; NaN leaves the :data:`SPREAD_RATIO` gate out.

    Returns:
        An :class:`Identification` (``wall_s`` and ``source`` left for the caller). For
        ``unknown`` the confidence is 1 − 1/e (below), at least 0.5 (a gate itself is an even
        call); otherwise it is the summed score of the best flavor's family (the flavors
        tied with it, :data:`TIE_SLACK`, and those within :data:`FAMILY_SLACK`; ``equivalent``
        names them) times max(0, 1 − e²), e the largest of best distance / unknown_distance
        (past 1: ``unknown``, with confidence 1 − 1/e, at least 0.5), best distance / (own
        spread × :data:`SPREAD_RATIO`) and best distance / the distance of the first flavor
        outside the family, so a best match near a limit or with an unlike runner-up almost as
        near is never a confident one.

    Raises:
        ValueError: ``replays`` is empty.
    """
    if not replays:
        raise ValueError("no replays to rank against")
    best_of: dict[str, tuple[float, str]] = {}
    for label, (flavor, feats) in replays.items():
        d = distance(measured, feats)
        if flavor not in best_of or d < best_of[flavor][0]:
            best_of[flavor] = (d, label)
    prior = {name: i for i, name in enumerate(tie_order(catalogue_order))}
    d0 = min(d for d, _ in best_of.values())
    slack = min(TIE_SLACK + 0.3 * d0, 2.5 * TIE_SLACK)
    tied = sorted((f for f in best_of if best_of[f][0] <= min(d0 + slack, max(d0, unknown_distance))),
                  key=lambda f: (prior.get(f, len(prior)), best_of[f][0]))
    # The family: flavors a trace of the named one could be as near as (FAMILY_SLACK), after
    # the tied ones, nearest first.
    family = [f for f in best_of if f not in tied
              and best_of[f][0] <= min(d0 + FAMILY_SLACK, max(d0, unknown_distance))]
    tied = tied + sorted(family, key=lambda f: best_of[f][0])
    rest = sorted((f for f in best_of if f not in tied), key=lambda f: best_of[f][0])
    order = tied + rest
    weights = {f: math.exp(-(best_of[f][0] - d0) / tau) for f in order}
    total = sum(weights.values())
    ranking = [Candidate(f, best_of[f][1], best_of[f][0], weights[f] / total) for f in order]
    top = ranking[0]
    group_share = sum(c.score for c in ranking[: len(tied)])
    following = ranking[len(tied)] if len(ranking) > len(tied) else None
    # How near the best match is to each open-set limit (> 1: past it); only the distance gate
    # answers ``unknown``, the others take the confidence to 0 (the CLI then says "closest").
    excess = {"distance": d0 / unknown_distance}
    if math.isfinite(own_spread):
        excess["spread"] = d0 / max(own_spread, SPREAD_FLOOR) / SPREAD_RATIO
    if following is not None and following.distance > 0:
        excess["runner-up"] = d0 / following.distance  # an unlike flavor almost as near
    limit = max(excess, key=excess.get)
    if excess["distance"] > 1:
        best, confidence = "unknown", max(0.5, 1 - 1 / excess["distance"])
    else:
        best, confidence = top.flavor, group_share * max(0.0, 1 - excess[limit] ** 2)
    line = evidence(measured)
    if best == "unknown":
        verdict = f"unknown (nearest {top.flavor}, distance {d0:.1f} > {unknown_distance:.1f})"
    elif excess.get("spread", 0.0) > 1:
        verdict = (f"closest {best}, but {d0 / max(own_spread, SPREAD_FLOOR):.1f} × its own "
                   "replays' spread: a flavor not in the library?")
    else:
        same = f" (as {', '.join(tied[1:4])}{' …' if len(tied) > 4 else ''} here)" if len(tied) > 1 else ""
        verdict = f"{best}{same}" + (f"; next: {following.flavor} at {following.score:.2f}"
                                     if following else "")
    return Identification(best=best, confidence=confidence, ranking=ranking, features=measured,
                          path=path, evidence=f"{line}: {verdict}", equivalent=tied[1:],
                          replay_features={k: v[1] for k, v in replays.items()},
                          own_spread=own_spread)
