"""Sweep and repeat expansion: grids over field paths, stable readable run ids, derived seeds."""

from __future__ import annotations

import copy

import pytest
from ccarena.errors import UserError
from ccarena.experiment import derive_seed, expand
from ccarena.scenario import load_scenario
from ccarena.scenario.paths import parse_path, set_path

BASE = {
    "name": "grid", "duration": "1s", "seed": 9,
    "topology": {"kind": "single_link", "link": {"rate": "10Mbps", "delay": "5ms"}},
    "flows": [{"from": "a", "to": "b", "flavor": "reno"}, {"from": "a", "to": "b", "flavor": "cubic"}],
}


def with_sweep(sweep: dict) -> dict:
    raw = copy.deepcopy(BASE)
    raw["sweep"] = sweep
    return raw


def test_paths():
    assert parse_path("flows[1].flavor") == ["flows", 1, "flavor"]
    assert parse_path("topology.link.loss") == ["topology", "link", "loss"]
    for bad in ("flows[x]", ".a", "a..b", "a.", "[0]"):
        with pytest.raises(UserError):
            parse_path(bad)


def test_set_path_creates_tables_and_checks_indices():
    raw = set_path(BASE, "topology.link.queue.limit", "10pkt")
    assert raw["topology"]["link"]["queue"] == {"limit": "10pkt"}
    assert "queue" not in BASE["topology"]["link"], "the original must not change"
    with pytest.raises(UserError, match=r"there is no flows\[5\]"):
        set_path(BASE, "flows[5].flavor", "reno")
    with pytest.raises(UserError, match="cannot be swept"):
        set_path(BASE, "name", "x")


def test_grid_times_repeats_with_stable_ids_and_common_seeds():
    plans = expand(load_scenario(with_sweep({"topology.link.loss": ["0%", "0.5%"],
                                             "flows[1].flavor": ["cubic", "vegas"], "repeats": 3})))
    assert len(plans) == 2 * 2 * 3
    ids = [p.run_id for p in plans]
    assert len(set(ids)) == len(ids)
    assert ids[0] == "loss=0pct_flavor=cubic_r0"
    assert "loss=0.5pct_flavor=vegas_r2" in ids
    # Repeat r has the same seed at every point (common random numbers); repeat 0 is the scenario's.
    for plan in plans:
        assert plan.seed == derive_seed(9, plan.repeat)
    assert {p.seed for p in plans if p.repeat == 0} == {9}
    assert len({p.seed for p in plans}) == 3
    vegas = [p for p in plans if p.params["flows[1].flavor"] == "vegas"][0]
    assert vegas.resolved.spec.flows[1].flavor == "vegas"
    lossy = [p for p in plans if p.params["topology.link.loss"] == "0.5%"][0]
    assert lossy.resolved.spec.links[0].loss == pytest.approx(0.005)
    # Ids do not depend on the position of a value in the list.
    again = expand(load_scenario(with_sweep({"topology.link.loss": ["0.5%"],
                                             "flows[1].flavor": ["vegas"], "repeats": 3})))
    assert {p.run_id for p in again} <= set(ids)


def test_clashing_field_names_use_the_whole_path():
    plans = expand(load_scenario(with_sweep({"flows[0].flavor": ["reno"], "flows[1].flavor": ["vegas"]})))
    assert plans[0].run_id == "flows0.flavor=reno_flows1.flavor=vegas_r0"


def test_derived_seeds_are_deterministic_and_distinct():
    assert derive_seed(1, 0) == 1
    assert derive_seed(1, 1) == derive_seed(1, 1)
    assert len({derive_seed(1, r) for r in range(50)}) == 50
    assert derive_seed(1, 1) != derive_seed(2, 1)


def test_nested_sweep_tables_are_dotted_paths():
    raw = with_sweep({"topology": {"link": {"delay": ["5ms", "50ms"]}}})
    assert [p.params for p in expand(load_scenario(raw))] == [
        {"topology.link.delay": "5ms"}, {"topology.link.delay": "50ms"}]


@pytest.mark.parametrize("sweep, fragment", [
    ({"flows[1].flavor": ["cubic", "cubik"]}, "sweep.\"flows[1].flavor\"[1]: unknown flavor 'cubik' (did you mean 'cubic'?)"),
    ({"topology.link.loss": ["1%", "200%"]}, "sweep.\"topology.link.loss\"[1]"),
    ({"topology.link.loss": []}, "non-empty list"),
    ({"topology.link.loss": "1%"}, "non-empty list"),
    ({"flows[3].flavor": ["reno"]}, "there is no flows[3]"),
    ({"repeats": 0}, "sweep.repeats"),
])
def test_bad_sweeps_name_the_value(sweep, fragment):
    with pytest.raises(UserError) as err:
        load_scenario(with_sweep(sweep))
    assert fragment in str(err.value)
