"""The confusion matrix of ``ccarena identify`` on simulated traces of every catalogue flavor,
on held-out paths (none of them was used to set the features' scales, TAU, UNKNOWN_DISTANCE,
SPREAD_RATIO or FAMILY_SLACK).

Each trace is the flavor alone on a single link of the path, sampled every 10 ms for 15 s, with
seed 7 (the replays use seed 1, so random losses differ); its samples go through the same
:func:`ccarena.identify.identify_series` as a measured trace. Prints a markdown table (rows: the
true flavor; columns: the answers), the overall accuracy, the accuracy counting a flavor tied
with the truth on that path (``equivalent``) as right, and the wall time.

    PYTHONPATH=python python3 scripts/identify_confusion.py [--paths N] [--leave-out]
    PYTHONPATH=python python3 scripts/identify_confusion.py --tune | --select
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict

from ccarena.backends.sim import run_spec
from ccarena.experiment.expand import expand
from ccarena.flavors import tcp_flavors
from ccarena.identify import identify_series
from ccarena.identify.series import from_frame
from ccarena.scenario import load_scenario

# (rate Mbit/s, one-way delay ms, buffer in BDP, loss %): paths not used in tuning.
HELD_OUT_PATHS = [(24, 15, 1.2, 0.0), (70, 35, 0.7, 0.05), (15, 8, 2.5, 0.2)]

TUNING_PATHS = [(30, 12, 1.0, 0.0), (50, 25, 0.5, 0.1)]
"""Paths of ``--tune``, which prints the best distances UNKNOWN_DISTANCE and TAU were set from."""


def simulated_trace(flavor: str, rate: float, delay_ms: float, bdp: float, loss: float):
    """The series of ``flavor`` alone on the path, as a measured trace would give it."""
    limit = max(4, round(bdp * rate * 1e6 * 2 * delay_ms * 1e-3 / 8 / 1514))
    raw = {"name": "confusion", "duration": "15s", "seed": 7,
           "topology": {"kind": "single_link", "link": {
               "rate": f"{rate}Mbps", "delay": f"{delay_ms}ms", "loss": f"{loss}%",
               "queue": {"limit": f"{limit}pkt"}}},
           "flows": [{"from": "a", "to": "b", "flavor": flavor}],
           "output": {"sample_interval": "10ms"}}
    samples = run_spec(expand(load_scenario(raw))[0].resolved.spec)["samples"]
    return from_frame(samples[samples["flow"] == 0], label=flavor, source=f"sim {flavor}")


def _gates(result) -> tuple[float, float, float]:
    """The open-set statistics of an identification: best distance, best distance over the best
    variant's own round-trip spread (floored), best over the first untied flavor's distance."""
    from ccarena.identify.classify import SPREAD_FLOOR

    d0 = min(c.distance for c in result.ranking)
    untied = [c for c in result.ranking if c.flavor not in [result.ranking[0].flavor, *result.equivalent]]
    return (d0, d0 / max(result.own_spread, SPREAD_FLOOR),
            d0 / untied[0].distance if untied else 0.0)


def tune(flavors: list[str]) -> None:
    """On :data:`TUNING_PATHS`, each trace with its flavor in the library and left out: the
    open-set statistics (:func:`_gates`) of the answers that are right (or a flavor tied with the
    truth) and of those that name another flavor; UNKNOWN_DISTANCE and SPREAD_RATIO were set
    above the 95th percentile of the right ones (the runner-up ratio only lowers confidence)."""
    import numpy as np

    from ccarena.identify.classify import SPREAD_RATIO, UNKNOWN_DISTANCE

    right, other = [], []
    for path in TUNING_PATHS:
        for flavor in flavors:
            series = simulated_trace(flavor, *path)
            within = identify_series(series, threads=1)
            without = identify_series(series, exclude=[flavor], threads=1)
            tied = [within.ranking[0].flavor, *within.equivalent]
            if flavor in tied:
                right.append(_gates(within))
            (right if without.ranking[0].flavor in tied else other).append(_gates(without))
            print(f"{flavor:10} {path}: named {within.best:9}; left out: {without.best:9} "
                  f"(nearest {without.ranking[0].flavor})", flush=True)
    for name, rows in (("right or tied", right), ("another flavor", other)):
        a = np.array(rows).reshape(-1, 3)
        past = (a[:, 0] > UNKNOWN_DISTANCE) | (a[:, 1] > SPREAD_RATIO)
        print(f"{name}, {len(a)} answers: " + "; ".join(
            f"{label} p50 {np.percentile(a[:, i], 50):.2f} p95 {np.percentile(a[:, i], 95):.2f}"
            for i, label in enumerate(("distance", "distance/spread", "distance/runner-up")))
            + f"; past a gate: {int(past.sum())}")


def select(flavors: list[str]) -> None:
    """The grid SPREAD_RATIO and FAMILY_SLACK were chosen on: every flavor on
    :data:`TUNING_PATHS`, identified with its flavor in the library and left out, for each pair
    of values; printed best first by (right answers with a confidence >= LOW_CONFIDENCE) − 3 ×
    (wrong names with a confidence >= it). Each trace is replayed once; only the ranking is redone
    per pair. A right answer names the truth or a flavor of its family (``equivalent``); with its
    flavor left out, one of the family the full library gave."""
    import itertools

    from ccarena.identify import classify, own_spread, replay_table
    from ccarena.identify.features import features
    from ccarena.identify.path import estimate_path
    from ccarena.identify.replay import library

    traces = []
    for path in TUNING_PATHS:
        for flavor in flavors:
            series = simulated_trace(flavor, *path)
            estimate = estimate_path(series)
            table, series_of = replay_table(estimate, library(), threads=1)
            traces.append((flavor, estimate, features(series, estimate), table, series_of, {}))
            print(f"replayed {flavor} on {path}", flush=True)

    def identified(trace, exclude):
        flavor, estimate, measured, table, series_of, spreads = trace
        kept = {k: v for k, v in table.items() if v[0] not in exclude}
        order = [f for f in flavors if f not in exclude]
        label = classify.rank(measured, kept, estimate, order).ranking[0].variant
        if label not in spreads:
            spreads[label] = own_spread(series_of[label][1], series_of[label][0],
                                        series_of[label][2], 1)
        return classify.rank(measured, kept, estimate, order, own_spread=spreads[label])

    rows = []
    for ratio, slack in itertools.product((1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0),
                                          (0.25, 0.3, 0.35, 0.4)):
        classify.SPREAD_RATIO, classify.FAMILY_SLACK = ratio, slack
        right = wrong = 0
        for trace in traces:
            flavor = trace[0]
            within = identified(trace, ())
            family = [within.best, *within.equivalent]
            right += within.confident and flavor in family
            wrong += within.confident and flavor not in family
            without = identified(trace, (flavor,))
            wrong += without.confident and without.best not in family
        rows.append((right - 3 * wrong, ratio, slack, right, wrong))
    print("score  SPREAD_RATIO  FAMILY_SLACK  right confident  wrong confident")
    for score, ratio, slack, right, wrong in sorted(rows, reverse=True):
        print(f"{score:5}  {ratio:12}  {slack:12}  {right:15}  {wrong:15}")


def leave_out(flavors: list[str], paths: list[tuple[float, float, float, float]]) -> None:
    """Each flavor's trace identified with that flavor left out of the library: the share of
    ``unknown`` answers, of answers tied with the truth on the path (an equivalent flavor), and
    the confidence of the other (wrong) answers."""
    import numpy as np

    from ccarena.identify.classify import LOW_CONFIDENCE

    unknown = equivalent = 0
    wrong: list[float] = []
    named: list[str] = []
    started = time.perf_counter()
    for path in paths:
        for flavor in flavors:
            series = simulated_trace(flavor, *path)
            within = identify_series(series, threads=1)
            result = identify_series(series, exclude=[flavor], threads=1)
            if result.best == "unknown":
                unknown += 1
            elif result.best in within.equivalent or within.best == result.best:
                equivalent += 1  # it behaves as the truth on this path: not a wrong answer
            else:
                wrong.append(result.confidence)
                named.append(f"{flavor}→{result.best} {result.confidence:.2f}")
    total = len(paths) * len(flavors)
    shown = [c for c in wrong if c >= LOW_CONFIDENCE]  # named as an answer, not "unknown, closest"
    print(f"flavor left out, {total} traces: unknown {unknown}, an equivalent flavor "
          f"{equivalent}, another flavor {len(wrong)}, of them {len(shown)} with a confidence "
          f">= {LOW_CONFIDENCE} (median {np.median(shown) if shown else float('nan'):.2f}, max "
          f"{max(shown) if shown else float('nan'):.2f}); "
          f"{time.perf_counter() - started:.0f} s")
    print("named wrongly: " + ", ".join(named))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--paths", type=int, default=len(HELD_OUT_PATHS))
    parser.add_argument("--leave-out", action="store_true", help="identify each held-out trace "
                        "with its own flavor left out of the library: how often unknown, and how "
                        "confident the wrong answers are")
    parser.add_argument("--tune", action="store_true", help="on the tuning paths, print the best "
                        "distance of each trace with its flavor in the library and left out")
    parser.add_argument("--select", action="store_true", help="on the tuning paths, score each "
                        "pair of SPREAD_RATIO and FAMILY_SLACK (how they were chosen)")
    args = parser.parse_args()
    flavors = list(tcp_flavors())
    if args.select:
        select(flavors)
        return
    if args.tune:
        tune(flavors)
        return
    if args.leave_out:
        leave_out(flavors, HELD_OUT_PATHS[: args.paths])
        return
    started = time.perf_counter()
    answers: dict[str, Counter] = defaultdict(Counter)
    right = equivalent_right = confident_right = total = 0
    wrong_shown: list[str] = []
    for path in HELD_OUT_PATHS[: args.paths]:
        for flavor in flavors:
            result = identify_series(simulated_trace(flavor, *path), threads=1)
            answers[flavor][result.best] += 1
            total += 1
            right += result.best == flavor
            good = result.best == flavor or flavor in result.equivalent
            equivalent_right += good
            confident_right += good and result.confident
            if result.confident and not good:
                wrong_shown.append(f"{flavor}→{result.best} {result.confidence:.2f}")
    wall = time.perf_counter() - started
    columns = flavors + (["unknown"] if any(a["unknown"] for a in answers.values()) else [])
    short = {f: f[:5] for f in columns}
    print("| true \\ answer | " + " | ".join(short[c] for c in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for flavor in flavors:
        cells = [str(answers[flavor][c]) if answers[flavor][c] else "·" for c in columns]
        print(f"| {flavor} | " + " | ".join(cells) + " |")
    print()
    print(f"paths: {HELD_OUT_PATHS[: args.paths]} (Mbit/s, one-way ms, BDP, loss %)")
    print(f"accuracy: {right}/{total} = {right / total:.1%}; counting a flavor tied with the "
          f"truth on its path as right: {equivalent_right}/{total} = {equivalent_right / total:.1%}")
    print(f"confident (>= LOW_CONFIDENCE) and right or tied: {confident_right}; confident and "
          f"wrong: {len(wrong_shown)} ({', '.join(wrong_shown)})")
    print(f"wall time: {wall:.0f} s for {total} identifications ({wall / total:.1f} s each)")


if __name__ == "__main__":
    main()
