"""Backends declare themselves (:mod:`ccarena.backends.declaration`) and every other layer reads
the declarations: the scenario's ``backend`` and options tables, the run ids and twins, the run
record's options tables. And the store builds the run record for the executor and the importers
alike (:mod:`ccarena.store.run_record`), in the key order stored records have always had."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccarena import backends
from ccarena.errors import UserError
from ccarena.executor.run import backend_fields, execute_run, run_record
from ccarena.experiment import apply_backends, expand
from ccarena.experiment.runids import REAL_TCP_BACKENDS, run_id_for
from ccarena.scenario import Scenario, load_scenario

DATA = Path(__file__).resolve().parents[1] / "data"

SCENARIO = {"name": "declared", "duration": "200ms",
            "topology": {"kind": "single_link", "link": {"rate": "10Mbps", "delay": "5ms"}},
            "flows": [{"from": "a", "to": "b", "flavor": "reno"}]}

RECORD_KEYS = ["format_version", "run_id", "experiment", "point", "repeat", "seed", "params", "part",
               "matrix", "spec_sha256", "spec", "derived", "scenario", "backend", "engine", "kernel"]
"""A simulated run's record before it runs, in its stored order."""


def test_every_backend_is_declared_once_and_built_by_its_name() -> None:
    declared = backends.declarations()
    assert tuple(declared) == backends.backend_names() == ("sim", "kernel", "udp")
    for name, declaration in declared.items():
        assert declaration.name == name
        module, cls = declaration.implementation.split(":")
        assert __import__(module, fromlist=[cls]).__dict__[cls].name == name
    assert [d.name for d in declared.values() if d.reference] == ["sim"]
    assert backends.get_backend("sim").name == "sim"


def test_the_layers_read_the_declarations() -> None:
    assert Scenario.model_fields["backend"].default == backends.reference_backend() == "sim"
    assert REAL_TCP_BACKENDS == backends.real_tcp_backends() == ("kernel",)
    assert backends.calibration_backends() == ("sim", "kernel")
    assert run_id_for("r0", "sim") == "r0" and run_id_for("r0", "udp") == "r0@udp"
    for table, model in backends.options_models().items():
        assert Scenario.model_fields[table].annotation is model
    assert {d.options_table for d in backends.declarations().values()} == {"engine", "kernel"}
    assert list(backends.compared_backends()) == ["kernel", "udp"]
    from ccarena.backends.kernel.capabilities import available_congestion_controls

    assert backends.offered_flavors("kernel") == available_congestion_controls()
    assert backends.offered_flavors("sim") == backends.offered_flavors("udp") == []


def test_an_unknown_backend_is_refused_with_the_declared_names() -> None:
    with pytest.raises(UserError) as err:
        load_scenario({**SCENARIO, "backend": "ns3"})
    assert "backend" in str(err.value) and "'sim', 'kernel' or 'udp'" in str(err.value)
    with pytest.raises(UserError, match="choose sim, kernel, udp"):
        backends.get_backend("ns3")


def test_the_record_holds_every_options_table_whatever_the_backend() -> None:
    plans = apply_backends(expand(load_scenario({**SCENARIO, "kernel": {"emulation": "relay"}})),
                           ["sim", "udp"])
    for plan in plans:
        record = run_record(plan, "declared")
        assert list(record) == RECORD_KEYS
        assert record["kernel"] == {"emulation": "relay", "udt_impl": "ccarena"}
        assert record["engine"] == {}  # one thread, the default, is left out
        assert backend_fields(plan) == {"backend": plan.backend, "engine": {}, "kernel": record["kernel"]}


def test_a_stored_run_record_keeps_its_key_order(tmp_path: Path) -> None:
    plan = expand(load_scenario(SCENARIO))[0]
    outcome = execute_run(str(tmp_path), run_record(plan, "declared"))
    assert outcome["status"] == "complete"
    stored = json.loads((tmp_path / "runs" / plan.run_id / "run.json").read_text())
    assert list(stored) == [*RECORD_KEYS, "status", "summary", "timing", "software"]


def test_an_imported_run_record_keeps_its_key_order(tmp_path: Path) -> None:
    from ccarena.importers.iperf3 import parse as parse_iperf3
    from ccarena.importers.writer import import_files

    outcome = import_files("iperf3", parse_iperf3, [DATA / "iperf3" / "tcp-default.json"],
                           tmp_path, "imported")
    assert not outcome.problems
    (run_id,) = outcome.written
    stored = json.loads((tmp_path / "runs" / run_id / "run.json").read_text())
    assert list(stored) == ["format_version", "run_id", "experiment", "point", "repeat", "seed",
                            "params", "part", "matrix", "backend", "spec_sha256", "spec", "derived",
                            "scenario", "source", "status", "summary", "timing", "software"]
    assert stored["backend"] == "iperf3" and stored["spec_sha256"] is None


EXPERIMENT_KEYS = ["format_version", "name", "updated", "scenario_file", "scenario_text", "scenario",
                   "sweep", "parts", "defaults", "runs", "software"]
"""experiment.json of a scenario's runs, in its stored order (an import adds ``imported`` before
``runs``)."""


def test_both_writers_build_experiment_json_through_the_store(tmp_path: Path) -> None:
    from ccarena.executor import experiment_meta
    from ccarena.importers.iperf3 import parse as parse_iperf3
    from ccarena.importers.writer import import_files

    loaded = load_scenario(SCENARIO)
    meta = experiment_meta(loaded, expand(loaded))
    assert list(meta) == EXPERIMENT_KEYS
    assert meta["name"] == "declared" and meta["runs"][0]["backend"] == "sim"
    assert meta["software"]["ccarena"]

    import_files("iperf3", parse_iperf3, [DATA / "iperf3" / "tcp-default.json"], tmp_path, "imported")
    stored = json.loads((tmp_path / "experiment.json").read_text())
    assert list(stored) == [*EXPERIMENT_KEYS[:-2], "imported", "runs", "software"]
    assert stored["imported"]["tool"] == "iperf3" and stored["scenario_file"] is None
