"""What ``ccarena search`` optimizes: one number per stored run, and whether lower or higher is
the case sought ("worse" for the flavors under test).

- ``min-jain``: Jain's fairness index over the flows' mean goodputs (Jain, Chiu and Hawe, DEC-TR-301,
  1984; :func:`ccarena.analysis.metrics.jain_index`, the run summary's ``jain_index``), minimized.
- ``max-starvation``: ``1 − min goodput / mean goodput`` over the flows (0: every flow has the
  equal share; 1: one flow has nothing), maximized.
- ``max-p99-delay``: the largest p99 queueing delay of any flow, ``rtt_p99_s − base_rtt_s`` (the
  99th percentile of the per-ACK RTT samples above the path's propagation RTT), in s, maximized.
- ``max-stall``: the longest run of consecutive sample intervals in which some flow, while
  active, delivered nothing (goodput 0), in s, maximized.
- ``max:EXPR`` / ``min:EXPR``: an arithmetic expression (``pandas.eval``) over the run's summary
  metrics (``jain_index``, ``bottleneck_queueing_delay_s``, … :data:`ccarena.analysis.metrics.SUMMARY_METRICS`)
  and the per-flow metrics of the catalogue (:data:`ccarena.analysis.metrics.FLOW_METRICS`),
  each as ``min_<m>``, ``max_<m>``, ``mean_<m>`` over the flows and ``<m>_<i>`` of flow ``i``
  (``max:rtt_p99_s_1 - rtt_p99_s_0``, ``min:goodput_mean_bps_1 / goodput_mean_bps_0``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from ccarena.errors import UserError

RunTables = dict[str, Any]
"""What an objective reads of one run: ``flows`` (the flows table), ``summary`` (run.json's
summary), ``samples`` (the samples table; read only when :attr:`Objective.needs_samples`),
``duration_s`` and ``interval_s`` (the sample interval)."""


@dataclass(frozen=True)
class Objective:
    """One objective.

    Attributes:
        name: as given (``min-jain``, ``max:EXPR``).
        direction: ``minimize`` or ``maximize`` (Optuna's study direction).
        label: what the value is, for tables and axes (``Jain's index``).
        measure: stored run → the value (NaN when the run does not define it).
        needs_samples: ``measure`` reads the samples table.
    """

    name: str
    direction: str
    label: str
    measure: Callable[[RunTables], float]
    needs_samples: bool = False

    def better(self, a: float, b: float) -> bool:
        """Whether ``a`` is further in the sought direction than ``b``."""
        return a < b if self.direction == "minimize" else a > b


def jain(run: RunTables) -> float:
    """The run's Jain's fairness index over its flows' mean goodputs."""
    return float(run["summary"].get("jain_index", math.nan))


def starvation(run: RunTables) -> float:
    """``1 − min/mean`` of the flows' mean goodputs (NaN without goodput)."""
    goodput = run["flows"]["goodput_mean_bps"].to_numpy(dtype=float)
    mean = float(np.nanmean(goodput)) if len(goodput) else math.nan
    return 1.0 - float(np.nanmin(goodput)) / mean if mean > 0 else math.nan


def p99_delay(run: RunTables) -> float:
    """The largest ``rtt_p99_s − base_rtt_s`` of the flows, in s."""
    flows = run["flows"]
    return float(np.nanmax((flows["rtt_p99_s"] - flows["base_rtt_s"]).to_numpy(dtype=float)))


def longest_stall(run: RunTables) -> float:
    """The longest run of sample intervals with zero goodput of any flow while it is active
    (between its start and its end or the run's), in s."""
    samples, flows = run["samples"], run["flows"]
    interval_s, duration_s = float(run["interval_s"]), float(run["duration_s"])
    worst = 0.0
    for flow in flows.itertuples():
        end_s = float(flow.end_s) if math.isfinite(float(flow.end_s)) else duration_s
        mine = samples[(samples["flow"] == flow.flow) & (samples["time_s"] > float(flow.start_s))
                       & (samples["time_s"] <= min(end_s, duration_s) + 1e-9)]
        idle = (mine.sort_values("time_s")["goodput_bps"].to_numpy(dtype=float) <= 0)
        run_length = best = 0
        for zero in idle:
            run_length = run_length + 1 if zero else 0
            best = max(best, run_length)
        worst = max(worst, best * interval_s)
    return worst


NAMED: dict[str, tuple[str, str, Callable[[RunTables], float], bool]] = {
    "min-jain": ("minimize", "Jain's index", jain, False),
    "max-starvation": ("maximize", "starvation (1 − min/mean goodput)", starvation, False),
    "max-p99-delay": ("maximize", "p99 queueing delay (s)", p99_delay, False),
    "max-stall": ("maximize", "longest stall (s)", longest_stall, True),
}
"""The named objectives: name → (direction, label, measure, reads the samples)."""


def expression_names(flows: int) -> list[str]:
    """Every name a ``max:`` / ``min:`` expression may use, for a scenario of ``flows`` flows."""
    from ccarena.analysis.metrics import FLOW_METRICS, SUMMARY_METRICS

    per_flow = [m for m in FLOW_METRICS if m != "active_s"]
    names = [m for m in SUMMARY_METRICS if m not in per_flow] + ["bottleneck_drops"]
    for m in per_flow:
        names += [f"min_{m}", f"max_{m}", f"mean_{m}"] + [f"{m}_{i}" for i in range(flows)]
    return list(dict.fromkeys(names))


def expression_values(run: RunTables) -> dict[str, float]:
    """The values of :func:`expression_names` for one run (NaN where a metric is missing)."""
    from ccarena.analysis.metrics import FLOW_METRICS

    out = {k: float(v) for k, v in run["summary"].items() if isinstance(v, (int, float))}
    flows = run["flows"].sort_values("flow")
    for m in FLOW_METRICS:
        if m not in flows.columns:
            continue
        values = pd.to_numeric(flows[m], errors="coerce").to_numpy(dtype=float)
        finite = values[np.isfinite(values)]
        out[f"min_{m}"] = float(finite.min()) if len(finite) else math.nan
        out[f"max_{m}"] = float(finite.max()) if len(finite) else math.nan
        out[f"mean_{m}"] = float(finite.mean()) if len(finite) else math.nan
        out.update({f"{m}_{i}": float(v) for i, v in enumerate(values)})
    return out


def _evaluate(expression: str, values: dict[str, float]) -> float:
    """``expression`` over ``values`` (``pandas.eval``: arithmetic and comparisons only, no
    attribute access or calls)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        result = pd.eval(expression, local_dict=values, engine="python", parser="pandas")
    return float(result)


def parse_objective(text: str, flows: int) -> Objective:
    """``--objective`` as an :class:`Objective` for a scenario of ``flows`` flows.

    Raises:
        UserError: an unknown name, or an expression that does not evaluate over the known
        names (checked now, on ones).
    """
    text = text.strip()
    if text in NAMED:
        direction, label, measure, samples = NAMED[text]
        return Objective(text, direction, label, measure, samples)
    kind, colon, expression = text.partition(":")
    if not colon or kind not in ("max", "min") or not expression.strip():
        raise UserError(f"--objective: unknown objective '{text}'; one of {', '.join(NAMED)}, "
                        "or max:EXPR / min:EXPR over metrics, e.g. max:rtt_p99_s_1")
    names = expression_names(flows)
    try:
        _evaluate(expression, dict.fromkeys(names, 1.0))
    except Exception as err:  # noqa: BLE001 - any failure of a user's expression is theirs
        unknown = str(err).split("'")[1] if "'" in str(err) else str(err)
        raise UserError(f"--objective: cannot evaluate '{expression}' ({unknown}); names: "
                        "jain_index, bottleneck_queueing_delay_s, min_/max_/mean_<metric>, "
                        "<metric>_<flow> (docs/search.md)") from None

    def measure(run: RunTables) -> float:
        return _evaluate(expression, expression_values(run))

    return Objective(text, "maximize" if kind == "max" else "minimize", expression, measure)


def measure_run(objective: Objective, store: Any, run_id: str) -> float:
    """The objective's value for the stored run ``run_id`` of ``store``
    (:class:`ccarena.store.ExperimentStore`); NaN when the run does not define it."""
    record = store.read_run_record(run_id)
    spec = record.get("spec", {})
    run: RunTables = {
        "flows": store.read_table(run_id, "flows"), "summary": record.get("summary", {}),
        "duration_s": spec.get("duration_ns", 0) / 1e9,
        "interval_s": spec.get("sample_interval_ns", 0) / 1e9,
    }
    if objective.needs_samples:
        run["samples"] = store.read_table(run_id, "samples")
    try:
        return float(objective.measure(run))
    except (ValueError, ZeroDivisionError, KeyError):
        return math.nan
