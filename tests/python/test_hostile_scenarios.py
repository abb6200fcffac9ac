"""Property tests of the front end's boundary (issue 18):

* generated scenario files — valid and broken, with hostile values (huge, tiny, negative, NaN,
  wrong units, unknown hosts and flavors, deep nesting) — either validate and run, or fail with a
  :class:`ccarena.errors.UserError` (one line, exit 2 at the CLI); never another exception, and
  within a time bound (hypothesis' deadline);
* mutated engine specs (valid specs with one field replaced by a hostile value) are either run or
  rejected by the engine with ``ValueError``; never a crash of the process, never a panic that
  escapes as anything else.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import ccarena
import pytest
from ccarena.errors import UserError
from ccarena.experiment import expand
from ccarena.experiment.budget import check_budget, estimate_run
from ccarena.scenario import load_scenario
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# ---------------------------------------------------------------------------- scenario files


def toml_value(v: Any) -> str:
    """A value as TOML (inline tables and arrays; enough for scenario files)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    if isinstance(v, str):
        return json.dumps(v)  # JSON string escapes are valid TOML basic strings
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def toml_document(doc: dict[str, Any]) -> str:
    lines = []
    for k, v in doc.items():
        if k == "flows":
            continue
        lines.append(f"{json.dumps(k)} = {toml_value(v)}")
    for flow in doc.get("flows", []):
        lines.append("[[flows]]")
        lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in flow.items()]
    return "\n".join(lines) + "\n"


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` nine times in ten, else ``bad``: most generated files then hold one or two hostile
    values, and some are entirely valid (and are run)."""
    return st.integers(0, 9).flatmap(lambda i: good if i else bad)


def quantity(units: list[str], good: list[str]) -> st.SearchStrategy[Any]:
    numbers = st.sampled_from(["0", "1", "-5", "0.5", "1e30", "1e-400", "18446744073709551616",
                               "1e309", "nan", "3.7", "100", "1e9", ""])
    return mostly(st.sampled_from(good), st.one_of(
        st.builds(lambda n, u: f"{n}{u}", numbers, st.sampled_from(units + ["parsecs", "", "%"])),
        st.integers(min_value=-10, max_value=10**20),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(), st.lists(st.integers(), max_size=2),
    ))


RATES = quantity(["bps", "kbps", "Mbps", "Gbps", "Tbps"], ["10Mbps", "100Mbps", "1Gbps"])
TIMES = quantity(["ns", "us", "ms", "s"], ["1ms", "10ms", "500ms", "1s"])
LOSSES = quantity(["%"], ["0%", "0.1%", "2%"])
LIMITS = quantity(["pkt", "B", "KB"], ["20pkt", "100pkt", "64KB"])
HOSTS = mostly(st.sampled_from(["left0", "right0", "left1", "right1", "a", "b"]),
               st.sampled_from(["nowhere", "", "r0", "left0\x00"]))
FLAVORS = mostly(st.sampled_from(["cubic", "reno", "bbr", "vegas", "dctcp", "udt", "udp-cbr"]),
                 st.sampled_from(["cubik", "", "CUBIC"]))


@st.composite
def scenarios(draw) -> dict[str, Any]:
    dumbbell = draw(st.booleans())
    link = {"rate": draw(RATES), "delay": draw(TIMES), "loss": draw(LOSSES),
            "queue": {"limit": draw(LIMITS)}}
    topology = ({"kind": "dumbbell", "pairs": draw(mostly(st.just(2), st.integers(-1, 3))), "bottleneck": link}
                if dumbbell else {"kind": draw(mostly(st.just("single_link"), st.just("donut"))), "link": link})
    flows = []
    pairs = [("left0", "right0"), ("left1", "right1")] if dumbbell else [("a", "b"), ("b", "a")]
    for i in range(draw(mostly(st.integers(1, 2), st.integers(0, 3)))):
        src, dst = pairs[i % 2]
        flow = {"from": draw(mostly(st.just(src), HOSTS)), "to": draw(mostly(st.just(dst), HOSTS)),
                "flavor": draw(FLAVORS)}
        if flow["flavor"] == "udp-cbr":
            flow["rate"] = draw(RATES)
        for key, values in (("start", TIMES), ("mss", LIMITS), ("initial_cwnd", LIMITS), ("bytes", LIMITS)):
            if draw(st.integers(0, 9)) == 0:
                flow[key] = draw(values)
        flows.append(flow)
    doc: dict[str, Any] = {"name": draw(mostly(st.just("ok-name"), st.sampled_from(["h/../x", "\x1b[2J", ""]))),
                           "duration": draw(TIMES), "seed": draw(mostly(st.integers(0, 99), st.integers(-1, 2**65))),
                           "topology": topology, "flows": flows}
    if draw(st.booleans()):
        doc["output"] = {"sample_interval": draw(TIMES)}
    if draw(st.booleans()):
        doc["sweep"] = {"topology.bottleneck.loss": draw(st.lists(LOSSES, max_size=3))}
    return doc


RUN_LIMIT_EVENTS = 3e6
"""Generated scenarios that validate are run when their estimate is small (a short test)."""


def assert_one_line_per_problem(err: UserError) -> None:
    """Every problem is one non-empty line, and the message is exactly those lines."""
    assert err.problems and all(p.strip() and "\n" not in p for p in err.problems), err.problems
    assert str(err) == "\n".join(err.problems)


@settings(max_examples=150, deadline=30_000,  # a hang bound that a loaded 2-core machine keeps
          suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(scenarios())
def test_generated_scenarios_validate_and_run_or_fail_with_one_line(doc: dict[str, Any]):
    text = toml_document(doc)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.toml"
        path.write_text(text)
        try:
            loaded = load_scenario(path)
            plans = expand(loaded)
            check_budget(plans)
        except UserError as err:
            assert_one_line_per_problem(err)
            return
        if all(estimate_run(p.resolved.spec, p.resolved.derived).events < RUN_LIMIT_EVENTS for p in plans):
            try:
                ccarena.run(path, Path(tmp) / "out", jobs=1)
            except UserError as err:
                assert_one_line_per_problem(err)


# ---------------------------------------------------------------------------- engine specs

BASE = Path(__file__).resolve().parents[2] / "examples" / "quickstart.toml"
HOSTILE = [None, -1, 0, 1, 2**64, 2**63, 10**30, -(2**63), 1.5, float("nan"), float("inf"), "x", "",
           [], {}, True, [1, 2], {"a": 1}, 2**32, 2**53 + 1]


def _base_spec() -> dict[str, Any]:
    loaded = load_scenario(BASE)
    spec = json.loads(expand(loaded)[0].resolved.spec.to_json())
    spec["duration_ns"] = 200_000_000
    return spec


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


SPEC = _base_spec()
PATHS = _paths(SPEC)


def _set(doc: Any, path: tuple, value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.fixture(scope="module")
def engine():
    from ccarena.backends.sim import engine_module

    return engine_module()


@settings(max_examples=300, deadline=30_000,  # a hang bound that a loaded 2-core machine keeps
          derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.sampled_from(PATHS), st.sampled_from(HOSTILE))
def test_mutated_engine_specs_run_or_are_rejected(engine, path: tuple, value: Any):
    mutated = _set(SPEC, path, value)
    text = json.dumps(mutated, allow_nan=True)
    try:
        sim = engine.Simulation(text)
    except ValueError:
        return
    # Accepted: it must run (a short bounded piece) without anything but its own error type.
    try:
        sim.run_until(min(int(sim.duration_ns), 50_000_000))
    except engine.EngineError:
        pass
