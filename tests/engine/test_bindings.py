"""The engine boundary (`ccarena._engine`): the documented spec format in, columns out.

These tests write the resolved spec by hand, exactly as docs/engine-spec.md documents it, so
they check the format itself rather than the front end's resolver.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from ccarena import _engine

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

MS = 1_000_000
S = 1_000_000_000


def tcp_flow(name: str, src: int, dst: int, flavor: str = "cubic", **over) -> dict:
    flow = {
        "name": name, "kind": "tcp", "src": src, "dst": dst,
        "start_ns": 0, "stop_ns": None, "bytes": None,
        "flavor": flavor, "params": {}, "recovery": "prr",
        "mss_bytes": 1448, "header_bytes": 52, "ack_bytes": 52,
        "initial_cwnd_packets": 10, "min_rto_ns": 200 * MS, "initial_rto_ns": 1 * S,
        "max_rto_ns": 60 * S, "clock_granularity_ns": 1 * MS, "dupthresh": 3,
        "delayed_ack_ns": 40 * MS, "ack_every_segments": 2, "ecn": False,
    }
    flow.update(over)
    return flow


def single_link_spec(rate_bps: int = 10_000_000, duration_ns: int = 2 * S, loss: float = 0.0, seed: int = 42,
                     flows: list[dict] | None = None) -> dict:
    """Two hosts joined by one duplex link (two directed links)."""
    queue = {"discipline": "droptail", "limit_packets": 100, "limit_bytes": None}
    return {
        "format": _engine.SPEC_FORMAT,
        "seed": seed,
        "duration_ns": duration_ns,
        "sample_interval_ns": 100 * MS,
        "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}],
        "links": [
            {"name": "h1->h2", "from": 0, "to": 1, "rate_bps": rate_bps, "delay_ns": 10 * MS, "loss": loss, "queue": queue},
            {"name": "h2->h1", "from": 1, "to": 0, "rate_bps": rate_bps, "delay_ns": 10 * MS, "loss": 0.0, "queue": queue},
        ],
        "routes": [{"node": 0, "dst": 1, "link": 0}, {"node": 1, "dst": 0, "link": 1}],
        "flows": flows if flows is not None else [tcp_flow("f0", 0, 1)],
        "events": [],
    }


def column(table: dict, name: str) -> np.ndarray:
    return np.frombuffer(table[name], dtype="<f8")


def test_runs_in_chunks_and_returns_documented_columns():
    sim = _engine.Simulation(json.dumps(single_link_spec()))
    assert sim.duration_ns == 2 * S and sim.now_ns == 0 and not sim.finished
    sim.run_until(1 * S)
    assert sim.now_ns == 1 * S and not sim.finished
    sim.run_until(10 * S)  # clamped to the duration
    assert sim.now_ns == 2 * S and sim.finished
    res = sim.results()
    assert set(res) == {"flows", "samples", "queues", "links", "subflows"}
    assert res["flows"]["name"] == ["f0"]
    assert len(column(res["subflows"], "time_s")) == 0, "no MPTCP flow: no subflow rows"
    t = column(res["samples"], "time_s")
    assert len(t) == 20 and t[0] == pytest.approx(0.1) and t[-1] == pytest.approx(2.0)
    delivered = column(res["flows"], "bytes_delivered")[0]
    # 10 Mbps for ~2 s minus slow start: well over a megabyte, under the link's 2.5 MB.
    assert 1_000_000 < delivered < 2_500_000
    links = res["links"]
    conserved = (column(links, "packets_delivered") + column(links, "packets_dropped_queue")
                 + column(links, "packets_lost_wire") + column(links, "packets_queued_end")
                 + column(links, "packets_in_flight_end"))
    assert np.array_equal(column(links, "packets_in"), conserved)


def test_same_spec_gives_identical_bytes():
    spec = json.dumps(single_link_spec(loss=0.01))
    a, b = _engine.Simulation(spec), _engine.Simulation(spec)
    a.run_until(2 * S)
    b.run_until(2 * S)
    ra, rb = a.results(), b.results()
    for table in ra:
        for name, col in ra[table].items():
            assert col == rb[table][name], f"{table}.{name} differs"


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda s: s["flows"][0].update(flavor="cubik"), "flows[0].flavor: unknown flavor 'cubik' (did you mean 'cubic'?)"),
        (lambda s: s["flows"][0].update(recovery="fast"), "flows[0].recovery: unknown recovery mode 'fast'"),
        (lambda s: s["links"][0].update(loss=1.5), "links[0].loss: 1.5 is not a probability in [0, 1]"),
        (lambda s: s["links"][1].update(rate_bps=0), "links[1].rate_bps: must be positive"),
        (lambda s: s["flows"][0].update(dst=0), "flows[0].dst: a flow needs two different hosts"),
        (lambda s: s["routes"].pop(), "flows[0].dst: no route from 'h2' to 'h1'"),
        (lambda s: s.update(extra=1), "unknown field `extra`"),
        (lambda s: s.pop("seed"), "missing field `seed`"),
    ],
)
def test_bad_specs_raise_value_error_naming_the_field(mutate, message):
    spec = single_link_spec()
    mutate(spec)
    with pytest.raises(ValueError) as err:
        _engine.Simulation(json.dumps(spec))
    assert message in str(err.value)


def test_run_until_releases_the_gil():
    # 1 Gbps for 30 simulated seconds: long enough (hundreds of ms of wall time) to observe.
    sim = _engine.Simulation(json.dumps(single_link_spec(rate_bps=1_000_000_000, duration_ns=30 * S)))
    worker = threading.Thread(target=sim.run_until, args=(30 * S,))
    ticks = 0
    start = time.perf_counter()
    worker.start()
    while worker.is_alive():
        ticks += 1  # pure-Python work: only possible while the engine does not hold the GIL
    elapsed = time.perf_counter() - start
    worker.join()
    assert sim.finished
    assert elapsed > 0.05, "the run was too short to tell"
    assert ticks > 1000, f"main thread starved while the engine ran ({ticks} ticks in {elapsed:.3f} s)"


def test_engine_fault_becomes_engine_error_with_seed_and_blocks_the_run():
    sim = _engine.Simulation(json.dumps(single_link_spec(seed=4242)))
    sim.run_until(100 * MS)
    with pytest.raises(_engine.EngineError) as err:
        sim._inject_fault_for_tests()
    assert "seed 4242" in str(err.value) and "t = 100000000 ns" in str(err.value)
    with pytest.raises(_engine.EngineError):
        sim.run_until(1 * S)


def test_flavors_catalogue_lists_names_sources_and_parameters():
    cat = {f["name"]: f for f in _engine.flavors()}
    assert {"tahoe", "reno", "newreno", "cubic"} <= set(cat)
    cubic = cat["cubic"]
    assert cubic["default_recovery"] == "linux" and "RFC 9438" in cubic["source"]
    assert {p["name"]: p["default"] for p in cubic["params"]}["beta"] == 0.7


def test_an_engine_budget_stops_a_runaway_run_inside_one_run_until():
    """A spec sampled every microsecond fills memory fast; with a memory budget the engine stops
    it inside the one `run_until` call that would run to the end (issue 18)."""
    import resource

    from ccarena._engine import BudgetExceeded, Simulation
    from ccarena.experiment import expand
    from ccarena.scenario import load_scenario

    spec = expand(load_scenario(EXAMPLES / "quickstart.toml"))[0].resolved.spec
    runaway = json.loads(spec.to_json())
    runaway["sample_interval_ns"] = 1_000  # 20 million sample rows per flow over 20 s
    sim = Simulation(json.dumps(runaway))
    rss_now = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    sim.set_budget(max_memory_bytes=rss_now + 200 * 2**20)
    with pytest.raises(BudgetExceeded, match="over the memory budget"):
        sim.run_until(int(sim.duration_ns))
    assert sim.now_ns < sim.duration_ns
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert peak < rss_now + 600 * 2**20, "the budget is checked often enough to stop near it"
    with pytest.raises(BudgetExceeded):  # and it stays stopped
        sim.run_until(int(sim.duration_ns))


def test_a_stoppable_run_gives_the_same_bytes_publishes_its_clock_and_stops_on_request():
    """`run_until_stoppable` (one call on a thread of its own, the GIL released throughout): the
    same results as a run stepped with `run_until`; a clock readable meanwhile from another thread
    that only moves forward; a stop request honoured within one step, and the run resumable."""
    spec = json.dumps(single_link_spec(rate_bps=1_000_000_000, duration_ns=30 * S, loss=0.001))
    stepped = _engine.Simulation(spec)
    for t in range(1, 31):
        stepped.run_until(t * S)
    whole = _engine.Simulation(spec)
    assert whole.run_until_stoppable(30 * S) is True and whole.finished
    assert whole.progress_ns == 30 * S
    ra, rb = stepped.results(), whole.results()
    for table in ra:
        for name, col in ra[table].items():
            assert col == rb[table][name], f"{table}.{name} differs"

    long = 600 * S  # seconds of wall time: stopped long before its end
    sim = _engine.Simulation(json.dumps(single_link_spec(rate_bps=1_000_000_000, duration_ns=long)))
    outcome: list[bool] = []
    worker = threading.Thread(target=lambda: outcome.append(sim.run_until_stoppable(long)))
    worker.start()
    seen = []
    while len(seen) < 5 and worker.is_alive():  # the clock, read while the engine holds its lock
        seen.append(sim.progress_ns)
        time.sleep(0.02)
    asked = time.perf_counter()
    sim.request_stop()
    worker.join()
    assert time.perf_counter() - asked < 1.0, "a stop request is seen within one step (~10 ms)"
    assert outcome == [False] and 0 < sim.now_ns < long, "stopped before its end"
    assert seen == sorted(seen) and seen[-1] > 0
    assert sim.run_until_stoppable(long) is False, "a stopped run stays stopped"
    at = sim.now_ns
    sim.run_until(at + 1 * S)  # `run_until` still advances it
    assert sim.now_ns == at + 1 * S
