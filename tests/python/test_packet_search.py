"""``ccarena search --over trace:LINK=packets[:MS]`` (issue 34, item 4, "packet-level trace
mutation"): the genome is the Mahimahi trace itself, evolved by ccarena's own genetic algorithm
(CC-Fuzz, HotNets 2022). Every mutation and the crossover keep a trace valid (sorted, within the
run, on the granularity, its mean rate within the band); the same seed gives the same traces and
another seed others; on Reno under a capacity trace of the same mean rate, the packet-level search
finds a lower utilization than the equal-budget grid over the shrew-shaped square wave and than
the steps genome at the same budget; the written worst case re-runs with ``ccarena run`` to the
same value; bad options are one line naming them, exit 2."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ccarena.cli.typer_app import app
from ccarena.errors import UserError
from ccarena.scenario import ExecutorOptions, load_scenario
from ccarena.search import search
from ccarena.search import packet_traces as pt
from ccarena.search.objectives import measure_run, parse_objective
from ccarena.search.space import parse_space
from ccarena.search.study import run_search
from ccarena.store import ExperimentStore

RENO = {
    "name": "reno-trace", "duration": "4s", "seed": 1,
    "topology": {"kind": "dumbbell", "pairs": 1,
                 "bottleneck": {"rate": "10Mbps", "delay": "10ms", "queue": {"limit": "20pkt"}},
                 "access": {"rate": "1Gbps", "delay": "1ms"}},
    "flows": [{"from": "left0", "to": "right0", "flavor": "reno"}],
    "output": {"sample_interval": "100ms"},
}
"""One Reno flow, 4 s over a 10 Mbps, 20 pkt bottleneck (a run takes tens of ms)."""

OBJECTIVE = "min:bottleneck_utilization"
"""Delivered over the trace's own capacity: a slower trace is not by itself a worse one."""

shapes = st.builds(
    lambda duration, slot, nominal, low, width: pt.TraceShape(
        duration_ms=duration, slot_ms=min(slot, duration - 1), nominal=nominal,
        band_low=low, band_high=low + width),
    st.integers(50, 5000), st.sampled_from([1, 2, 7, 10, 100]), st.integers(2, 3000),
    st.floats(0.05, 1.0), st.floats(0.0, 0.5))


@settings(max_examples=60, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1))
def test_every_operator_keeps_the_trace_valid(shape: pt.TraceShape, seed: int) -> None:
    # A band parse_space takes: it holds a whole number of opportunities (the pinned last one
    # and at least one more).
    assume(math.ceil(shape.band_low * shape.nominal) <= math.floor(shape.band_high * shape.nominal))
    assume(math.floor(shape.band_high * shape.nominal) >= 2)
    rng = np.random.default_rng(seed)
    a, b = pt.random_trace(rng, shape), pt.random_trace(rng, shape)
    assert pt.is_valid(a, shape) and pt.is_valid(b, shape)
    children = {name: op(a, rng, shape) for name, op in pt.MUTATIONS.items()}
    children["crossover"] = pt.crossover(a, b, rng, shape)
    children["mutate"] = pt.mutate(a, rng, shape)[0]
    for name, child in children.items():
        assert pt.is_valid(child, shape), name
        mean = shape.mean_fraction(child)  # the written trace's mean rate / the nominal rate
        assert shape.band_low - 1e-9 <= mean <= shape.band_high + 1e-9, name
    # Moving and outages keep the count (only add-drop and crossover's repair change it).
    assert len(children["move"]) == len(a) and len(children["outage"]) == len(a)


def test_is_valid_catches_broken_traces() -> None:
    shape = pt.TraceShape(duration_ms=1000, slot_ms=10, nominal=100)
    good = np.arange(0, 1000, 10, dtype=np.int64)[:95]
    assert pt.is_valid(good, shape)
    assert not pt.is_valid(good[::-1].copy(), shape)            # not sorted
    assert not pt.is_valid(np.append(good[:-1], 1000), shape)   # past the run
    assert not pt.is_valid(good + 1, shape)                     # off the granularity
    assert not pt.is_valid(good[:50], shape)                    # mean rate under the band


def test_written_trace_reads_back_at_its_mean_rate(tmp_path: Path) -> None:
    from ccarena.traces import read_trace

    shape = pt.TraceShape(duration_ms=4000, slot_ms=1, nominal=pt.nominal_count(10e6, 4.0))
    genome = pt.random_trace(np.random.default_rng(3), shape)
    path = pt.write_mahimahi(tmp_path / "t.mahi", genome, shape)
    rate = read_trace(path)
    assert rate.trace_spec.opportunities_ms[-1] == 4000  # the period is the run
    assert int(rate) == pytest.approx(10e6 * shape.mean_fraction(genome), rel=1e-3)
    assert np.array_equal(pt.read_genome(path, shape), genome)


def _traces(out: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((out / "traces").glob("*.mahi"))]


def test_same_seed_same_traces_other_seed_others(tmp_path: Path) -> None:
    loaded = load_scenario(dict(RENO))
    space = parse_space(["trace:bottleneck=packets:5"], loaded.parts[0].raw, 4.0)
    goal = parse_objective(OBJECTIVE, 1)
    runs = {}
    for label, seed in (("a", 4), ("b", 4), ("c", 5)):
        runs[label] = run_search(loaded, space, goal, out=tmp_path / label, trials=6,
                                 sampler="ga", seed=seed, jobs=2, workers=1,
                                 executor=ExecutorOptions())
    a, b, c = (runs[k] for k in "abc")
    assert [t.state for t in a.trials] == ["complete"] * 6
    assert [(t.params, t.value) for t in a.trials] == [(t.params, t.value) for t in b.trials]
    assert _traces(tmp_path / "a") == _traces(tmp_path / "b") and len(_traces(tmp_path / "a")) == 6
    assert _traces(tmp_path / "a") != _traces(tmp_path / "c")
    assert [t.value for t in a.trials] != [t.value for t in c.trials]
    # Trial 4 on is bred from the first four (the population): its origin says how.
    origins = [t.user_attrs["origin"] for t in a.study.trials]
    assert origins[:4] == ["random"] * 4 and all("mutation" in o for o in origins[4:])
    # Every trace is on the 5 ms granularity and within the default band (0.9–1.1).
    for t in a.trials:
        assert 0.9 - 1e-3 <= t.params["trace:bottleneck.mean"] <= 1.1
    ms = np.loadtxt(next((tmp_path / "a" / "traces").glob("t0005-*.mahi")), dtype=np.int64)
    assert (ms[:-1] % 5 == 0).all() and ms[-1] == 4000


def test_fields_are_genes_beside_the_trace(tmp_path: Path) -> None:
    loaded = load_scenario(dict(RENO))
    over = ["trace:bottleneck=packets:10", "topology.bottleneck.queue.limit=2pkt:100pkt",
            "flows.0.flavor=reno|cubic"]
    outcome = search(loaded, objective=OBJECTIVE, over=over, out=tmp_path / "s", trials=8,
                     seed=3, jobs=2, keep=1, executor=ExecutorOptions(), workers=1)
    trials = outcome.result.trials
    assert [t.state for t in trials] == ["complete"] * 8
    limits = [t.params["topology.bottleneck.queue.limit"] for t in trials]
    assert all(isinstance(v, int) and 2 <= v <= 100 for v in limits)
    assert len(set(limits)) > 3  # drawn, then inherited or nudged
    assert {t.params["flows[0].flavor"] for t in trials} <= {"reno", "cubic"}
    # Each trial ran what its row says: the queue limit and flavor are in its scenario.
    for t in trials:
        assert t.raw["topology"]["bottleneck"]["queue"]["limit"] == f"{t.params['topology.bottleneck.queue.limit']}pkt"
        assert t.raw["flows"][0]["flavor"] == t.params["flows[0].flavor"]
    table = outcome.table
    assert list(table.columns[3:8]) == ["topology.bottleneck.queue.limit", "flows[0].flavor",
                                        "trace:bottleneck.mean", "trace:bottleneck.longest_gap",
                                        "trace:bottleneck.spread"]
    assert outcome.worst[0].rerun_value == pytest.approx(outcome.worst[0].trial.value, abs=1e-12)


def test_dask_executor_gives_the_same_traces(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    loaded = load_scenario(dict(RENO))
    space = parse_space(["trace:bottleneck=packets:10"], loaded.parts[0].raw, 4.0)
    goal = parse_objective(OBJECTIVE, 1)
    common = dict(trials=6, sampler="ga", seed=2, jobs=2)
    here = run_search(loaded, space, goal, out=tmp_path / "here", workers=1,
                      executor=ExecutorOptions(), **common)
    dask = run_search(loaded, space, goal, out=tmp_path / "dask", workers=2,
                      executor=ExecutorOptions(kind="dask-local", workers=2), **common)
    assert dask.where == "2 Dask workers"
    assert [(t.params, t.value) for t in dask.trials] == [(t.params, t.value) for t in here.trials]
    assert _traces(tmp_path / "dask") == _traces(tmp_path / "here")


def test_packet_search_beats_grid_and_steps_and_its_worst_case_reruns(tmp_path: Path) -> None:
    # Measured (a budget of 24 trials each, one process, this scenario): the packet-level GA's
    # lowest utilization is 0.479 / 0.396 / 0.404 with seeds 0 / 1 / 2 (its own 6 random first
    # traces: 0.620 / 0.639 / 0.550); the equal-budget grid over the square wave (period × depth
    # × duty, 2 values each: 8 points, the largest k³ ≤ 24) gives 0.791; NSGA-II over steps:8
    # 0.567 / 0.680 (seeds 0 / 1); TPE over the square wave 0.603. The worst case found (seed 1)
    # keeps 0.95 × the link's mean rate but offers 3-6 Mbps for 1.2 s, nearly nothing from 2.0 s
    # to 2.7 s (a delivery every ~0.1-0.3 s) and 38 Mbps bursts at 3.5 s: Reno sits in RTO
    # backoff while most of the capacity passes.
    loaded = load_scenario(dict(RENO))
    budget = 24
    packets = search(loaded, objective=OBJECTIVE, over=["trace:bottleneck=packets"],
                     out=tmp_path / "packets", trials=budget, seed=1, jobs=1, keep=1)
    grid = search(loaded, objective=OBJECTIVE, over=["trace:bottleneck=square"],
                  out=tmp_path / "grid", trials=budget, sampler="grid", jobs=1, keep=0)
    steps = search(loaded, objective=OBJECTIVE, over=["trace:bottleneck=steps"],
                   out=tmp_path / "steps", trials=budget, sampler="ga", seed=1, jobs=1, keep=0)
    found = min(t.value for t in packets.result.complete())
    grid_best = min(t.value for t in grid.result.complete())
    steps_best = min(t.value for t in steps.result.complete())
    assert len(packets.result.complete()) == budget == len(steps.result.complete())
    assert found < grid_best - 0.15, (found, grid_best)
    assert found < steps_best - 0.15, (found, steps_best)
    assert found == pytest.approx(0.396, abs=0.01)
    # The worst case re-runs with `ccarena run`, unchanged, to the same value.
    case = packets.worst[0]
    assert case.trial.value == found and case.rerun_value == pytest.approx(found, abs=1e-12)
    assert "../traces/t00" in case.file.read_text() and ".mahi" in case.file.read_text()
    rerun = tmp_path / "rerun"
    done = CliRunner().invoke(app, ["run", str(case.file), "--out", str(rerun), "-j", "1",
                                    "--no-report", "-q"])
    assert done.exit_code == 0, done.output
    store = ExperimentStore(rerun)
    (run_id,) = store.complete_runs()
    again = measure_run(parse_objective(OBJECTIVE, 1), store, run_id)
    assert again == pytest.approx(found, abs=1e-12)
    assert "packet traces" in (tmp_path / "packets" / "report.md").read_text()


SCENARIO_TOML = ('name = "s"\nduration = "2s"\n[topology]\nkind = "dumbbell"\npairs = 1\n'
                 'bottleneck = { rate = "10Mbps", delay = "10ms" }\n'
                 '[[flows]]\nfrom = "left0"\nto = "right0"\nflavor = "reno"\n')


@pytest.mark.parametrize("args, named", [
    (["--over", "trace:bottleneck=packets:0"], "--over trace:bottleneck: packets:0: give the granularity"),
    (["--over", "trace:bottleneck=packets:5000"], "from 1 to 1000"),
    (["--over", "trace:bottleneck=packets:x"], "--over trace:bottleneck: packets:x"),
    (["--over", "trace:bottleneck=packetz"], "--over trace:bottleneck: unknown generator"),
    (["--over", "trace:bottleneck=packets,depth=0:1"], "packets has no parameter 'depth'"),
    (["--over", "trace:bottleneck=packets,mean=0:1"], "--over trace:bottleneck.mean: '0:1'"),
    (["--over", "trace:bottleneck=packets", "--sampler", "tpe"],
     "--sampler tpe: trace:bottleneck=packets"),
    (["--over", "trace:bottleneck=packets", "--over", "trace:bottleneck=square"],
     "--over topology.bottleneck: given twice"),
])
def test_bad_packet_options_are_one_line_exit_2(tmp_path: Path, args: list[str],
                                                named: str) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO_TOML)
    done = CliRunner().invoke(app, ["search", str(scenario), "--objective", "min-jain", *args,
                                    "--out", str(tmp_path / "o")], env={"COLUMNS": "80"})
    assert done.exit_code == 2, done.output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], lines
    assert not (tmp_path / "o").exists()


def test_too_many_opportunities_is_refused() -> None:
    raw = dict(RENO, duration="20s")
    raw["topology"] = dict(RENO["topology"], bottleneck={"rate": "1Gbps", "delay": "10ms"})
    with pytest.raises(UserError, match=r"--over trace:bottleneck: packets: .* over 1,000,000"):
        parse_space(["trace:bottleneck=packets"], raw, 20.0)
    assert math.isfinite(pt.nominal_count(1e9, 20.0))


def test_the_worst_case_list_shows_one_case_once_even_when_a_child_copied_its_parent(
        tmp_path: Path) -> None:
    """A GA child that copies its parent has its own trace file with the same deliveries: the
    kept worst cases skip it (by the trace's bytes, not its path) and take the next distinct
    trial instead."""
    from ccarena.search.outputs import distinct_cases
    from ccarena.search.study import TrialOutcome

    def trial(number: int, trace: str, value: float) -> TrialOutcome:
        raw = {"name": f"t{number}", "links": {"b": {"rate": {"trace": str(tmp_path / trace)}}}}
        return TrialOutcome(number=number, params={}, state="complete", value=value, raw=raw)

    (tmp_path / "parent.trace").write_text("1\n2\n3\n")
    (tmp_path / "child.trace").write_text("1\n2\n3\n")  # the same deliveries
    (tmp_path / "other.trace").write_text("1\n1\n3\n")
    ranked = [trial(4, "parent.trace", 0.30), trial(9, "child.trace", 0.30),
              trial(2, "other.trace", 0.35)]
    assert [t.number for t in distinct_cases(ranked, 2)] == [4, 2]
    assert [t.number for t in distinct_cases(ranked, 5)] == [4, 2]
    assert [t.number for t in distinct_cases(ranked, 0)] == []
