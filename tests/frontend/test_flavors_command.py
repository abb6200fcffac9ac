"""`ccarena flavors` fits an 80-column terminal with every flavor's name and family whole, and
`ccarena flavors NAME` gives one flavor's parameters (issue 29, item 7)."""

from __future__ import annotations

import os
import subprocess
import sys

from ccarena.flavors import all_flavors


def _flavors(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "ccarena", "flavors", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_the_list_fits_80_columns_with_every_name_and_family_whole():
    done = _flavors()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, done.stdout
    catalogue = all_flavors()
    assert len(lines) <= len(catalogue) + 8  # one line per flavor (the old table took 178)
    rows = {words[0]: words[1] for words in map(str.split, lines) if words and words[0] in catalogue}
    assert rows == {name: f["family"] for name, f in catalogue.items()}
    assert "ccarena flavors NAME" in done.stdout


def test_one_flavor_lists_its_parameters_with_their_defaults():
    done = _flavors("cubic")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, done.stdout
    assert lines[0].startswith("cubic: loss family")
    for p in all_flavors()["cubic"]["params"]:
        assert f"  {p['name']} = {p['default']:g}" in lines, p["name"]
    assert 'flavor = { name = "cubic", c = 0.4 }' in done.stdout
    assert "RFC 9438" in done.stdout


def test_an_unknown_flavor_is_one_line_naming_the_closest():
    done = _flavors("cubik")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["error: unknown flavor 'cubik' (did you mean 'cubic'?)"]
