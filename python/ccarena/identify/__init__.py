"""Which congestion controller produced a trace? (``ccarena identify``)

The trace's flow (:mod:`~ccarena.identify.series`) tells the path it crossed
(:mod:`~ccarena.identify.path`); the simulator replays that path with every catalogue flavor
(:mod:`~ccarena.identify.replay`); the same features (:mod:`~ccarena.identify.features`) are
computed on the trace and on each replay, and flavors are ranked by distance
(:mod:`~ccarena.identify.classify`).

Prior work: Gordon (Mishra et al., "The Great Internet TCP Congestion Control Census",
SIGMETRICS 2019 / POMACS 3(3)) classifies by the window's decrease factor and growth between
losses, measured under a path it controls; CCAnalyzer (Ware et al., "CCAnalyzer: An Efficient and
Nearly-Passive Congestion Control Classifier", SIGCOMM 2024) compares a bottleneck queue's
occupancy trace with reference traces of known controllers; Nebby (Mishra et al., "Keeping an
Eye on Congestion Control in the Wild with Nebby", SIGCOMM 2024) adds BBR's probing cycles and
delay response; CClinguist (SIGCOMM 2025) reaches ~97 % on Linux's controllers. ccarena's
reference library is its simulator: every flavor is replayed on the path the trace itself saw
rather than on a path chosen for the probe.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable

from ccarena.identify.classify import Identification, rank
from ccarena.identify.features import features
from ccarena.identify.path import PathEstimate, estimate_path
from ccarena.identify.replay import Variant, library, replay_library
from ccarena.identify.series import FlowSeries, load_series

__all__ = ["FlowSeries", "Identification", "PathEstimate", "Variant", "identify",
           "identify_series", "library", "load_series", "own_spread", "replay_table"]


def loss_alternatives(path: PathEstimate) -> list[tuple[str, PathEstimate]]:
    """The paths each flavor is replayed on: the estimate, and, when it has random loss, the
    same with a quarter of it (labelled `` loss/4``). Losses that come while the queue looks
    short are counted as random, but a flavor that overflows a shallow buffer in short bursts
    (BBR's probing) makes some of them: the flavor's better fit of the two is kept."""
    from dataclasses import replace

    if path.loss <= 0:
        return [("", path)]
    return [("", path), (" loss/4", replace(path, loss=path.loss / 4))]


def own_spread(replayed: FlowSeries, variant: Variant, quarter_loss: bool, seed: int) -> float:
    """How far a flavor's replay is from itself after one more trip through the pipeline: the
    path estimated from ``replayed`` (``variant``'s replay of the trace's path), replayed again
    with ``variant`` at ``seed`` + 1, and the distance between the two series' features on that
    estimate. A parametric bootstrap (Efron and Tibshirani, "An Introduction to the Bootstrap",
    1993, ch. 6) of the distance a trace of this very flavor would have from its match: the
    path estimate's error plus the run-to-run variation. ``quarter_loss``: the variant was
    matched on the path with a quarter of its random loss (:func:`loss_alternatives`)."""
    from dataclasses import replace

    from ccarena.identify.features import distance
    from ccarena.identify.replay import replay

    estimate = estimate_path(replayed)
    again = replace(estimate, loss=estimate.loss / 4) if quarter_loss else estimate
    return distance(features(replayed, estimate), features(replay(again, variant, seed + 1), estimate))


def replay_table(path: PathEstimate, variants: list[Variant], seed: int = 1,
                 threads: int | None = None) -> tuple[dict[str, tuple[str, dict[str, float]]],
                                                      dict[str, tuple[Variant, FlowSeries, bool]]]:
    """Every variant replayed on ``path`` (and on its :func:`loss_alternatives`): (label →
    (catalogue flavor, the replay's features on ``path``), what :func:`ccarena.identify.classify.rank`
    takes; label → (variant, the replayed series, whether it is the quarter-loss replay), what
    :func:`own_spread` takes). Labels are the variant's, with `` loss/4`` for the second path."""
    table, series_of = {}, {}
    for loss_label, replayed_path in loss_alternatives(path):
        replays = replay_library(replayed_path, variants, seed, threads)
        for v in variants:
            table[v.label + loss_label] = (v.flavor, features(replays[v.label], path))
            series_of[v.label + loss_label] = (v, replays[v.label], bool(loss_label))
    return table, series_of


def identify_series(series: FlowSeries, *, exclude: Iterable[str] = (),
                    seed: int = 1, threads: int | None = None) -> Identification:
    """Identify the controller of one flow's series (see the package docstring).

    Args:
        series: the flow (:func:`load_series`, or :func:`ccarena.identify.series.from_frame`).
        exclude: catalogue flavors left out of the library (to see what an unknown flavor gets).
        seed: the replays' seed (their random loss).
        threads: replays run side by side (default: the CPUs this process may use).

    Raises:
        UserError: the series has no RTT or goodput to estimate a path from, or ``exclude``
            names an unknown flavor.
    """
    started = time.perf_counter()
    path = estimate_path(series)
    measured = features(series, path)
    table, series_of = replay_table(path, library(exclude), seed, threads)
    from ccarena.flavors import tcp_flavors

    order = list(tcp_flavors())
    first = rank(measured, table, path, order)
    variant, replayed, quarter = series_of[first.ranking[0].variant]
    result = rank(measured, table, path, order,
                  own_spread=own_spread(replayed, variant, quarter, seed))
    result.source, result.label = series.source, series.label
    result.wall_s = time.perf_counter() - started
    return result


def identify(trace: str | Path, flow: str | int | None = None, *, exclude: Iterable[str] = (),
             seed: int = 1, threads: int | None = None) -> Identification:
    """Identify the controller of one flow of ``trace`` (a run or experiment directory, an
    iperf3 JSON, a pcap/pcapng, a directory of the captures of one capture point such as a
    run's ``pcap/``, or a samples table .parquet/.csv).

    Raises:
        UserError: the trace or flow cannot be read, or has too little to go on.
    """
    return identify_series(load_series(trace, flow), exclude=exclude, seed=seed, threads=threads)
