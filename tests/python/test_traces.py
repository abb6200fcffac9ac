"""Trace-driven links in the front end: ``rate = { trace = … }`` on a link reads a Mahimahi file or
a CSV of rate steps (relative to the scenario file) into the run spec, bad files give one line
naming the field, the synthetic generators are seeded and carry the rates they are given, and
examples/variable-link.toml runs."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import ccarena
import pytest
from ccarena.errors import UserError
from ccarena.experiment import resolve_run
from ccarena.scenario import load_scenario
from ccarena.traces import generate, read_trace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "variable-link.toml"


def scenario_file(tmp_path: Path, rate: str, topology: str = "dumbbell") -> Path:
    """A scenario in ``tmp_path/scenarios`` whose bottleneck (or single link) has ``rate`` (TOML)."""
    where = tmp_path / "scenarios"
    where.mkdir(exist_ok=True)
    if topology == "dumbbell":
        topo = f'kind = "dumbbell"\npairs = 1\nbottleneck = {{ rate = {rate}, delay = "10ms" }}\n'
        flow = 'from = "left0"\nto = "right0"\n'
    else:
        topo = f'kind = "single_link"\nlink = {{ rate = {rate}, delay = "10ms" }}\n'
        flow = 'from = "a"\nto = "b"\n'
    path = where / "s.toml"
    path.write_text(f'name = "t"\nduration = "2s"\n[topology]\n{topo}[[flows]]\n{flow}flavor = "cubic"\n')
    return path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def spec_links(path: Path) -> list:
    return list(resolve_run(load_scenario(path).scenario, seed=1).spec.links)


def test_a_mahimahi_trace_relative_to_the_scenario_reaches_both_directions_of_the_link(tmp_path, monkeypatch):
    write(tmp_path / "scenarios" / "traces" / "t.mahi", "1\n1\n2\n4\n")
    path = scenario_file(tmp_path, '{ trace = "traces/t.mahi" }')
    monkeypatch.chdir(tmp_path)  # not the scenario's directory: the path is still found
    links = spec_links(path)
    traced = [link for link in links if link.trace is not None]
    assert [link.name for link in traced] == ["r0->r1", "r1->r0"]
    trace = traced[0].trace
    assert trace.opportunities_ms == (1, 1, 2, 4) and trace.steps is None and trace.loop is True
    # The quoted rate is the mean: 4 opportunities of 12 000 bits every 4 ms.
    assert traced[0].rate_bps == 12_000_000
    # Written to the engine's spec JSON (and left out on the links without a trace).
    dumped = [link.model_dump(by_alias=True) for link in links]
    assert dumped[0]["trace"] == {"opportunities_ms": (1, 1, 2, 4), "steps": None, "loop": True}
    assert all("trace" not in d for d, link in zip(dumped, links) if link.trace is None)


def test_rate_steps_from_csv_with_a_header_or_with_units_and_loop_false(tmp_path):
    write(tmp_path / "scenarios" / "steps.csv", "# a comment\ntime_s,rate_mbps\n0,10\n1.5,2\n3,10\n")
    links = spec_links(scenario_file(tmp_path, '{ trace = "steps.csv", loop = false }', "single_link"))
    trace = links[0].trace
    assert trace.steps == ((0, 10_000_000), (1_500_000_000, 2_000_000), (3_000_000_000, 10_000_000))
    assert trace.loop is False and trace.opportunities_ms is None
    assert links[0].rate_bps == 6_000_000  # 1.5 s at 10, 1.5 s at 2
    units = read_trace(write(tmp_path / "u.csv", "0s,12Mbps\n500ms,0\n1s,1Mbps\n"))
    assert units.trace_spec.steps == ((0, 12_000_000), (500_000_000, 0), (1_000_000_000, 1_000_000))


def test_the_engine_runs_a_trace_link_at_the_traces_capacity(tmp_path):
    # 10 opportunities per 10 ms (12 Mbps) for 1 s, then 5 per 10 ms: a CBR flow at 20 Mbps
    # gets what the trace carries, each second.
    times = [t for t in range(1, 1001)] + [1000 + 2 * k for k in range(1, 501)]
    write(tmp_path / "scenarios" / "two.mahi", "".join(f"{t}\n" for t in times))
    raw = tomllib.loads(scenario_file(tmp_path, '{ trace = "two.mahi", loop = false }').read_text())
    raw["flows"] = [{"from": "left0", "to": "right0", "flavor": "udp-cbr", "rate": "20Mbps", "packet_size": "1472B"}]
    raw["topology"]["bottleneck"]["rate"]["trace"] = str(tmp_path / "scenarios" / "two.mahi")
    raw["duration"] = "2s"
    result = ccarena.run(raw, tmp_path / "out", jobs=1)
    samples = result.samples
    per_s = [samples[(samples.time_s > k + 0.05) & (samples.time_s <= k + 1)]["goodput_bps"].mean()
             for k in (0, 1)]
    payload = 1472 / 1500
    assert abs(per_s[0] / (12e6 * payload) - 1) < 0.03, per_s
    assert abs(per_s[1] / (6e6 * payload) - 1) < 0.03, per_s


@pytest.mark.parametrize("rate, files, message", [
    ('{ trace = "missing.mahi" }', {}, r"topology\.bottleneck\.rate\.trace: .*missing\.mahi: no such trace file"),
    ('{ trace = "bad.mahi" }', {"bad.mahi": "1\n2\nx3\n"}, r"rate\.trace: bad\.mahi line 3: not a millisecond timestamp"),
    ('{ trace = "down.mahi" }', {"down.mahi": "5\n3\n"}, r"rate\.trace: down\.mahi line 2: its timestamp is smaller than line 1's"),
    ('{ trace = "empty.mahi" }', {"empty.mahi": "\n"}, r"rate\.trace: empty\.mahi: no timestamps"),
    ('{ trace = "zero.mahi" }', {"zero.mahi": "0\n0\n"}, r"rate\.trace: zero\.mahi: a looped trace needs a last timestamp"),
    ('{ trace = "nounit.csv" }', {"nounit.csv": "0,5\n1,6\n"}, r"rate\.trace: nounit\.csv line 1: the rate has no unit"),
    ('{ trace = "late.csv" }', {"late.csv": "time_s,rate_mbps\n1,5\n"}, r"late\.csv line 2: the first step must be at time 0"),
    ('{ trace = "back.csv" }', {"back.csv": "time_s,rate_mbps\n0,5\n2,1\n1,3\n"}, r"back\.csv line 4: step times must increase"),
    ('{ trace = "head.csv" }', {"head.csv": "time_s,speed\n0,5\n"}, r"head\.csv line 1: a header must name the columns one of time_s"),
    ('{ trace = "dead.csv" }', {"dead.csv": "0s,0\n1s,0\n"}, r"dead\.csv: a looped trace needs a positive rate"),
    ('{ trace = "a.mahi", speed = 2 }', {"a.mahi": "1\n"}, r"topology\.bottleneck\.rate: give a rate .*unknown key 'speed'"),
    ('{ trace = "a.mahi", loop = "yes" }', {"a.mahi": "1\n"}, r"topology\.bottleneck\.rate\.loop: must be true or false"),
    ('"fast"', {}, r"topology\.bottleneck\.rate: "),
])
def test_a_bad_trace_is_one_line_naming_the_field(tmp_path, rate, files, message):
    for name, text in files.items():
        write(tmp_path / "scenarios" / name, text)
    with pytest.raises(UserError) as err:
        load_scenario(scenario_file(tmp_path, rate))
    assert len(err.value.problems) == 1, err.value.problems
    assert "\n" not in str(err.value)
    assert re.search(message, str(err.value)), str(err.value)


def test_a_bad_trace_exits_2_from_the_cli(tmp_path):
    write(tmp_path / "scenarios" / "bad.mahi", "7\n6\n")
    path = scenario_file(tmp_path, '{ trace = "bad.mahi" }')
    done = subprocess.run([sys.executable, "-m", "ccarena", "validate", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "topology.bottleneck.rate.trace: bad.mahi line 2" in lines[0], done.stderr


def test_generators_are_seeded_and_carry_the_rates_they_are_given():
    second = 1_000_000_000
    walk = dict(duration_ns=20 * second, rate_bps=6_000_000, min_rate_bps=1_000_000, max_rate_bps=16_000_000)
    a = generate.generate("random-walk", seed=3, **walk)
    assert a == generate.generate("random-walk", seed=3, **walk)
    assert a != generate.generate("random-walk", seed=4, **walk)
    # Every 100 ms step lies within the bounds: 1 to 16 Mbps = 8⅓ to 133⅓ opportunities a step.
    counts = [sum(1 for t in a if k * 100 < t <= (k + 1) * 100) for k in range(200)]
    assert min(counts) >= 8 and max(counts) <= 134, (min(counts), max(counts))
    # Gilbert–Elliott at 24 / 3 Mbps with P(good→bad) 0.05 and P(bad→good) 0.2: mean
    # (0.2·24 + 0.05·3) / 0.25 = 19.8 Mbps; over 200 s the sample mean is within a few percent.
    ge = generate.generate("gilbert-elliott", duration_ns=200 * second, seed=1, good_rate_bps=24_000_000,
                           bad_rate_bps=3_000_000)
    mean = len(ge) * 12_000 / 200
    assert abs(mean / 19.8e6 - 1) < 0.08, mean
    # On/off at 12 Mbps: gaps of at least 10 ms with no opportunity (the off periods), and the
    # on periods carry exactly 12 Mbps.
    oo = generate.generate("on-off", duration_ns=20 * second, seed=2, rate_bps=12_000_000)
    gaps = [b - a for a, b in zip(oo, oo[1:])]
    assert max(gaps) >= 10 and gaps.count(1) > 0.8 * len(gaps)
    # A constant rate converts exactly: 12 Mbps is one opportunity per ms.
    assert generate.to_mahimahi([12_000_000] * 10, 100_000_000) == list(range(1, 1001))
    with pytest.raises(ValueError, match="unknown trace kind"):
        generate.generate("sine", duration_ns=second, seed=1)


def test_trace_gen_cli_writes_a_trace_the_scenario_reads_and_refuses_a_foreign_option(tmp_path):
    out = tmp_path / "scenarios" / "ge.mahi"
    out.parent.mkdir()
    done = subprocess.run([sys.executable, "-m", "ccarena", "trace", "gen", "gilbert-elliott", "--out", str(out),
                           "--duration", "5s", "--seed", "9", "--good-rate", "10Mbps", "--bad-rate", "1Mbps"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rate = read_trace(out)
    assert 1_000_000 <= int(rate) <= 10_000_000
    assert spec_links(scenario_file(tmp_path, '{ trace = "ge.mahi" }'))[0].trace is not None
    bad = subprocess.run([sys.executable, "-m", "ccarena", "trace", "gen", "on-off", "--out", str(out),
                          "--sigma", "1"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == ["error: --sigma: not an option of on-off (its options: "
                                               "--rate, --off-rate, --on, --off)"]


def test_the_variable_link_example_runs_short(tmp_path):
    raw = tomllib.loads(EXAMPLE.read_text())
    raw["duration"] = "9s"
    raw["topology"]["bottleneck"]["rate"]["trace"] = str(EXAMPLE.parent / "traces" / "cellular.mahi")
    result = ccarena.run(raw, tmp_path / "vl", jobs=2)
    summary = result.summary.set_index("flows[0].flavor")
    mean_bps = int(read_trace(EXAMPLE.parent / "traces" / "cellular.mahi"))
    goodput, rtt = summary["goodput_mean_bps"], summary["rtt_mean_s"]
    print(goodput.to_dict(), rtt.to_dict(), mean_bps)
    # Nobody carries more than the trace, and each uses most of it.
    assert (goodput < mean_bps).all() and (goodput > 0.6 * mean_bps).all()
    # Throughput vs delay: loss-based CUBIC fills the 300-packet buffer, the delay-based ones do not.
    assert rtt["cubic"] > 2 * rtt["vegas"] and rtt["cubic"] > rtt["ledbat"]


def test_a_rate_event_on_a_trace_link_is_refused_in_one_line(tmp_path):
    write(tmp_path / "scenarios" / "t.mahi", "1\n2\n")
    path = scenario_file(tmp_path, '{ trace = "t.mahi" }')
    path.write_text(path.read_text() + '[[events]]\nat = "1s"\nlink = "bottleneck"\nset = { rate = "5Mbps" }\n')
    with pytest.raises(UserError) as err:
        resolve_run(load_scenario(path).scenario, seed=1)
    assert len(err.value.problems) == 1
    assert "s.toml: events[0].set.rate: the link's rate follows a trace" in str(err.value), str(err.value)


def test_a_trace_rate_is_described_as_a_trace_with_its_spread_not_as_a_constant(tmp_path):
    from ccarena.traces.trace_files import describe_rate

    # 1 s at 12 Mbps then 1 s at 2 Mbps: the mean (7 Mbps) is neither, and the text says so.
    (tmp_path / "steps.csv").write_text("time_s,rate_mbps\n0,12\n1,2\n2,2\n")
    rate = read_trace(tmp_path / "steps.csv")
    assert int(rate) == 7_000_000
    assert describe_rate(rate) == "trace steps.csv, mean 7 Mbps (2–12 Mbps per 100 ms)"
    # Mahimahi: 10 opportunities in the first 100 ms (1.2 Mbps), then one per 100 ms (0.12 Mbps).
    stamps = [0] * 10 + [100 * k for k in range(1, 10)] + [1000]
    (tmp_path / "two.mahi").write_text("\n".join(map(str, stamps)) + "\n")
    text = describe_rate(read_trace(tmp_path / "two.mahi"))
    assert text.startswith("trace two.mahi, mean ") and "per 100 ms" in text
    assert describe_rate(20_000_000) == "20 Mbps"
    done = subprocess.run([sys.executable, "-m", "ccarena", "validate", "examples/variable-link.toml"],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2],
                          env={**__import__("os").environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert re.search(r"bottleneck: trace cellular\.mahi, mean [\d.]+ Mbps \([\d.]+–[\d.]+ Mbps per 100 ms\)",
                     done.stdout), done.stdout
