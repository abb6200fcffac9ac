"""A report of several parts builds them side by side (issue 29, item 7: the report no slower
than the runs): the part of most runs in this process, the others in worker processes. The
sections must be those a serial build gives: same order, same figures, same flavor colours."""

from __future__ import annotations

from pathlib import Path

from conftest import EXAMPLES, TWO_PARTS, ccarena

from ccarena.report import html, plots
from ccarena.results import Result

def _describe(sections: list) -> list:
    return [(s.key, s.title, [(f.file, f.flavor_colors) for f in s.figures]) for s in sections]


def test_parts_built_in_workers_match_a_serial_build(tmp_path: Path, monkeypatch):
    text = (EXAMPLES / "quickstart.toml").read_text().replace('duration = "20s"', 'duration = "3s"')
    scenario = tmp_path / "parts.toml"
    scenario.write_text(text + TWO_PARTS)
    done = ccarena("run", str(scenario), "--out", "out", "-q", "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = Result(tmp_path / "out")
    plots.set_flavor_order(result.summary["flavor"].astype(str).tolist())
    description = "CUBIC vs Reno"

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    parallel = html._sections(result, tmp_path / "parallel" / "figures", description)
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    serial = html._sections(result, tmp_path / "serial" / "figures", description)

    assert [s.title for s in parallel] == ["pair", "sweep"]
    assert _describe(parallel) == _describe(serial)
    for a, b in zip(parallel, serial):
        assert a.verdict == b.verdict and a.summary == b.summary
        assert [len(f.png) > 0 for f in a.figures] == [True] * len(b.figures)
    written = sorted(p.name for p in (tmp_path / "parallel" / "figures").iterdir())
    assert written == sorted(p.name for p in (tmp_path / "serial" / "figures").iterdir())
