"""A scenario file with several kinds of mistakes gets all of them listed in one pass (issue 29,
item 7): fields that fail, unknown hosts and times past the end together, every bad sweep value,
every failing part — one line each, with the words the single-mistake messages use."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, ccarena

from ccarena.errors import UserError
from ccarena.scenario import load_scenario

QUICKSTART = (EXAMPLES / "quickstart.toml").read_text()

SEVERAL = """
name = "several"
duration = "20s"
[topology]
kind = "dumbbell"
pairs = 2
bottleneck = { rate = "20Mbps", delay = "18ms", queue = { limit = "100pkt" } }
[[flows]]
from = "left0"
to = "right9"
flavor = "cubik"
[[flows]]
from = "left1"
to = "right1"
flavor = "reno"
start = "30s"
window = 3
[[flows]]
from = "lef1"
to = "r0"
flavor = "reno"
[output]
sample_interval = "0ms"
"""


def test_a_file_with_several_kinds_of_mistakes_lists_them_all(tmp_path: Path):
    path = tmp_path / "several.toml"
    path.write_text(SEVERAL)
    done = ccarena("validate", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    expected = [
        "flows[0].flavor: unknown flavor 'cubik' (did you mean 'cubic'?)",
        "flows[1].window: unknown field",
        "output.sample_interval",
        "flows[0].to: unknown node 'right9' (did you mean 'right1'?); hosts of this dumbbell are",
        "flows[2].from: unknown node 'lef1' (did you mean 'left1'?)",
        "flows[2].to: 'r0' is a router; flows run between hosts",
        "flows[1].start: 30 s is not before the end of the run (duration 20 s)",
    ]
    for fragment in expected:
        assert sum(fragment in line for line in lines) == 1, (fragment, done.stderr)
    assert len(lines) == len(expected), done.stderr
    assert all(line.startswith(f"error: {path}: ") for line in lines)


def test_when_every_field_is_valid_every_cross_table_problem_is_listed():
    text = (QUICKSTART.replace('to = "right0"', 'to = "right7"')
            .replace('to = "right1"', 'to = "right8"').replace('start = "2s"', 'start = "25s"'))
    with pytest.raises(UserError) as caught:
        load_scenario(_toml(text))
    problems = caught.value.problems
    assert [p.split(":")[0] for p in problems] == ["flows[0].to", "flows[1].to", "flows[1].start"]


def test_every_bad_sweep_value_is_listed_and_a_bad_path_once():
    text = QUICKSTART + '\n[sweep]\n"topology.bottleneck.loss" = ["0%", "120%", "1%", "-3%"]\n'
    with pytest.raises(UserError) as caught:
        load_scenario(_toml(text))
    assert [p.split(":")[0] for p in caught.value.problems] == [
        'sweep."topology.bottleneck.loss"[1]', 'sweep."topology.bottleneck.loss"[3]']
    text = QUICKSTART + '\n[sweep]\n"topology.bottleneck.colour" = ["1", "2", "3"]\n'
    with pytest.raises(UserError) as caught:
        load_scenario(_toml(text))
    assert len(caught.value.problems) == 1


def test_every_failing_part_is_listed():
    text = QUICKSTART + ('\n[[parts]]\nname = "a"\nduration = "0s"\n[[parts]]\nname = "ok"\n'
                         '[[parts]]\nname = "b"\nseed = -1\n')
    with pytest.raises(UserError) as caught:
        load_scenario(_toml(text))
    heads = [p.split(":")[0] for p in caught.value.problems]
    assert heads == ["parts[0] (a)", "parts[2] (b)"], caught.value.problems


def _toml(text: str) -> dict:
    import tomllib

    return tomllib.loads(text)
