"""What a search leaves in its directory, beside ``trials/`` (the runs):

- ``trials.csv`` and ``trials.parquet``: one row per trial (number, state, objective value,
  every searched parameter in its base unit, run id, wall time, why it failed);
- ``worst/NN-tNNNN.toml``: the ``keep`` best trials for the objective (the worst cases for the
  flavors under test) as ordinary scenario files, each run again by ``ccarena run``'s code into
  ``worst/NN-tNNNN/`` (an experiment directory) — the value is measured again there;
- ``objective.png``: each trial's value and the best so far, and the value against the most
  influential parameter;
- ``report.md``: the search, the worst cases, and the parameters' importance
  (Optuna's PED-ANOVA evaluator: Watanabe, Bansal and Hutter, "PED-ANOVA: Efficiently Quantifying
  Hyperparameter Importance in Arbitrary Subspaces", IJCAI 2023; needs no scikit-learn, unlike
  fANOVA).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ccarena.search.objectives import Objective, measure_run
from ccarena.search.space import SearchSpace
from ccarena.search.study import SearchResult, TrialOutcome


def show_value(value: Any, unit: str) -> str:
    """A parameter's value for people, in its unit (``12.3 Mbps``, ``35 ms``, ``17pkt``)."""
    from ccarena import units

    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    if unit == "rate_bps":
        return units.format_rate(value)
    if unit == "time_s":
        return units.format_time(value)
    if unit == "size_bytes":
        return units.format_bytes(value)
    if unit == "packets":
        return f"{int(value)}pkt"
    if unit == "fraction":
        return f"{100 * value:.3g}%"
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def trials_table(result: SearchResult, space: SearchSpace, objective: Objective) -> pd.DataFrame:
    """One row per trial: ``trial``, ``state``, ``value`` (the objective), one column per
    parameter (base unit: bit/s, s, bytes, packets, fraction), ``run_id``, ``wall_s``, ``error``."""
    names = list(space.units())
    rows = [{"trial": t.number, "state": t.state, "value": t.value,
             **{n: t.params.get(n) for n in names}, "run_id": t.run_id, "wall_s": t.wall_s,
             "error": t.error} for t in result.trials]
    table = pd.DataFrame(rows, columns=["trial", "state", "value", *names, "run_id", "wall_s",
                                        "error"])
    table.attrs["objective"] = objective.name
    return table


def ranked(result: SearchResult, objective: Objective) -> list[TrialOutcome]:
    """The complete trials, the best for the objective first (ties: the earlier trial first)."""
    sign = 1.0 if objective.direction == "minimize" else -1.0
    return sorted(result.complete(), key=lambda t: (sign * t.value, t.number))


def _case_key(raw: dict[str, Any]) -> str:
    """What makes two trials' scenarios the same case: ``raw`` as canonical JSON with every trace
    file (``{trace = "…"}``) replaced by the SHA-256 of its bytes — a GA child that copies its
    parent gets a trace file of its own with the same deliveries."""
    def resolve(node: Any) -> Any:
        if isinstance(node, list):
            return [resolve(v) for v in node]
        if not isinstance(node, dict):
            return node
        if isinstance(node.get("trace"), str) and set(node) <= {"trace", "loop"}:
            try:
                digest = hashlib.sha256(Path(node["trace"]).read_bytes()).hexdigest()
            except OSError:
                digest = node["trace"]
            return dict(node, trace=digest)
        return {k: resolve(v) for k, v in node.items()}

    return json.dumps(resolve(raw), sort_keys=True, default=str)


def distinct_cases(trials: list[TrialOutcome], keep: int) -> list[TrialOutcome]:
    """The first ``keep`` of ``trials`` (already ranked) whose scenarios differ: a trial whose
    scenario equals an earlier one's (:func:`_case_key`; its ``name``/``description`` aside) is
    skipped, so the worst-case list never shows one case twice."""
    seen: set[str] = set()
    out: list[TrialOutcome] = []
    for trial in trials:
        if len(out) == keep:
            break
        assert trial.raw is not None
        key = _case_key({k: v for k, v in trial.raw.items() if k not in ("name", "description")})
        if key not in seen:
            seen.add(key)
            out.append(trial)
    return out


def importance(result: SearchResult) -> dict[str, float]:
    """Each parameter's importance (summing to 1) by PED-ANOVA, most important first; empty when
    too few trials completed (fewer than 4) or the evaluator cannot tell."""
    import optuna
    from optuna.importance import PedAnovaImportanceEvaluator

    if len(result.complete()) < 4:
        return {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = optuna.importance.get_param_importances(
                result.study, evaluator=PedAnovaImportanceEvaluator())
    except (ValueError, RuntimeError, ZeroDivisionError):
        return {}
    total = sum(found.values())
    return {k: v / total for k, v in found.items()} if total > 0 else {}


AXIS_UNITS = {"rate_bps": "bit/s", "time_s": "s", "size_bytes": "bytes", "packets": "packets",
              "fraction": "fraction"}
"""A parameter's base unit as an axis label writes it."""


@dataclass
class WorstCase:
    """One kept trial: its ``trial``, the scenario ``file``, the experiment directory ``run_dir``
    it was run into, and the objective measured there (``rerun_value``; NaN if the run failed)."""

    trial: TrialOutcome
    file: Path
    run_dir: Path
    rerun_value: float


def _relative_traces(node: Any, base: Path) -> Any:
    """``node`` with trace file paths (``{trace = "…"}``) made relative to ``base`` (so the search
    directory can be moved as a whole)."""
    if isinstance(node, list):
        return [_relative_traces(v, base) for v in node]
    if not isinstance(node, dict):
        return node
    if isinstance(node.get("trace"), str) and set(node) <= {"trace", "loop"}:
        return dict(node, trace=os.path.relpath(node["trace"], base))
    return {k: _relative_traces(v, base) for k, v in node.items()}


def write_worst(result: SearchResult, objective: Objective, out: Path, keep: int, *,
                name: str, seed: int) -> list[WorstCase]:
    """Write the ``keep`` best distinct trials (:func:`distinct_cases`) as scenario files in ``out/worst`` and run each as an
    ordinary experiment (:func:`ccarena.executor.run_experiment`, in this process) into
    ``out/worst/<file stem>/``.

    Raises:
        UserError: a kept scenario cannot be run here (it ran as a trial, so only a changed
            machine would refuse it).
    """
    import tomli_w

    from ccarena.executor import run_experiment
    from ccarena.scenario import load_scenario
    from ccarena.store import ExperimentStore

    folder = out / "worst"
    folder.mkdir(parents=True, exist_ok=True)
    kept: list[WorstCase] = []
    for rank, trial in enumerate(distinct_cases(ranked(result, objective), keep), start=1):
        stem = f"{rank:02d}-t{trial.number:04d}"
        raw = {"name": f"{name}-worst{rank}",
               "description": f"ccarena search: {objective.name} = {trial.value:.6g} "
                              f"(trial {trial.number}, seed {seed})",
               **{k: v for k, v in _relative_traces(trial.raw, folder).items()
                  if k not in ("name", "description")}}
        path = folder / f"{stem}.toml"
        header = (f"# Found by ccarena search ({objective.name}): trial {trial.number}, "
                  f"value {trial.value:.6g}.\n# Run it: ccarena run {path}\n")
        path.write_text(header + tomli_w.dumps(raw), encoding="utf-8")
        run_dir = folder / stem
        outcome = run_experiment(load_scenario(path), run_dir, jobs=1, force=True,
                                 show_progress=False)
        value = math.nan
        if outcome.completed:
            value = measure_run(objective, ExperimentStore(run_dir), outcome.completed[0])
        kept.append(WorstCase(trial=trial, file=path, run_dir=run_dir, rerun_value=value))
    return kept


def draw_figure(result: SearchResult, objective: Objective, space: SearchSpace,
                ranking: dict[str, float], path: Path) -> Path:
    """``objective.png``: left, each complete trial's value (dots), the best so far (a step
    line) and failed trials (crosses under the axis); right, the value against the most
    influential parameter (the first searched one without a ranking). Legends above the axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ccarena.report.palette import PALETTE

    done = result.complete()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    xs = [t.number for t in done]
    ys = [t.value for t in done]
    left.scatter(xs, ys, s=16, color=PALETTE[0], label="trial", zorder=3)
    best_x, best_y, best = [], [], None
    for t in result.trials:
        if t.state == "complete" and (best is None or objective.better(t.value, best)):
            best = t.value
        if best is not None:
            best_x.append(t.number)
            best_y.append(best)
    left.step(best_x, best_y, where="post", color=PALETTE[1], label="best so far", lw=2)
    failed = [t.number for t in result.trials if t.state != "complete"]
    if failed:
        left.scatter(failed, [0.0] * len(failed), marker="x", color="#999999",
                     transform=left.get_xaxis_transform(), clip_on=False,
                     label=f"failed ({len(failed)})")
    left.set_xlabel("trial")
    left.set_ylabel(objective.label)
    left.legend(loc="lower left", bbox_to_anchor=(0, 1.01), ncols=3, frameon=False)
    left.grid(alpha=0.3)
    units = space.units()
    top = next(iter(ranking), next(iter(units)))
    values = [t.params.get(top) for t in done]
    numeric = all(isinstance(v, (int, float)) for v in values)
    shown = values if numeric else [str(v) for v in values]
    right.scatter(shown, ys, s=16, color=PALETTE[0], zorder=3)
    if numeric and units.get(top) == "rate_bps":
        right.set_xscale("log")
    unit = AXIS_UNITS.get(units.get(top, ""), "")
    right.set_xlabel(f"{top}" + (f" ({unit})" if unit else ""))
    right.set_ylabel(objective.label)
    share = f" — importance {ranking[top]:.2f}" if top in ranking else ""
    right.set_title(f"most influential: {top}{share}", fontsize=9, loc="left")
    right.grid(alpha=0.3)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def searched_line(space: SearchSpace) -> str:
    """The report's line naming what was searched: the parameters, or for ``packets`` traces the
    links whose packet-level traces were evolved (their columns are features of each trace)."""
    if space.packet_traces():
        links = ", ".join(f"`{t.path}`" for t in space.packet_traces())
        names = ", ".join(f"`{n}`" for n in space.units())
        return (f"- searched: the packet-level capacity trace of {links} (one gene per delivery "
                f"opportunity); the columns {names} are features of each trace")
    return "- searched: " + ", ".join(f"`{n}`" for n in space.units())


def write_report(result: SearchResult, objective: Objective, space: SearchSpace,
                 ranking: dict[str, float], worst: list[WorstCase], out: Path, *,
                 settings: dict[str, Any]) -> Path:
    """``report.md``: the settings, the counts, the worst cases with their parameters and files,
    the importance ranking, the failures' reasons, and the figure."""
    units = space.units()
    done = result.complete()
    lines = [f"# Search: {objective.name} on {settings['scenario']}", "",
             f"- objective: {objective.label} ({objective.direction})",
             f"- sampler: {settings['sampler']}, seed {settings['seed']}, "
             f"{settings['jobs']} trials per batch, on {result.where}",
             f"- trials: {len(result.trials)} ({len(done)} complete, "
             f"{len(result.trials) - len(done)} failed), {result.wall_s:.1f} s",
             searched_line(space), "",
             "![objective over trials](objective.png)", "", "## Worst cases", ""]
    names = list(units)
    lines.append("| rank | trial | value | rerun | " + " | ".join(f"`{n}`" for n in names)
                 + " | file |")
    lines.append("|---" * (5 + len(names)) + "|")
    for rank, case in enumerate(worst, start=1):
        t = case.trial
        cells = [show_value(t.params.get(n), units[n]) for n in names]
        lines.append(f"| {rank} | {t.number} | {t.value:.4g} | {case.rerun_value:.4g} | "
                     + " | ".join(cells) + f" | `{case.file.relative_to(out)}` |")
    lines += ["", "## Most influential fields", "",
              "PED-ANOVA importance (Optuna's `PedAnovaImportanceEvaluator`; sums to 1):", ""]
    if ranking:
        lines += ["| field | importance |", "|---|---|"]
        lines += [f"| `{n}` | {v:.2f} |" for n, v in ranking.items()]
    else:
        lines.append("(too few complete trials to rank)")
    reasons: dict[str, int] = {}
    for t in result.trials:
        if t.state != "complete":
            reasons[t.error] = reasons.get(t.error, 0) + 1
    if reasons:
        lines += ["", "## Failed trials", ""]
        lines += [f"- {n} × {why}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
