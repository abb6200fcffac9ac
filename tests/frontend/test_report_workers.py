"""The report's workers start before the page is asked for (issue 29, item 7: the report no slower
than the runs): ``ccarena report`` and ``ccarena run`` spawn them from experiment.json alone, hand
them the other parts while the summary is printed, and the page they help draw is the page a
serial build gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import EXAMPLES, TWO_PARTS, ccarena

from ccarena.report import html, report_pool
from ccarena.results import Result


def _runs(points: int, flows: int = 2, part: str = "", repeats: int = 1) -> list[dict]:
    return [{"run_id": f"{part}{p}_r{r}", "point": p, "repeat": r, "part": part,
             "spec": {"flows": [{}] * flows}} for p in range(points) for r in range(repeats)]


@pytest.mark.parametrize("runs, cores, expected", [
    (_runs(1), 2, 0),                                    # the quickstart: one run, drawn here
    (_runs(1, part="a") + _runs(3, part="b"), 2, 1),     # two parts: the smaller in a worker
    (_runs(1, part="a") + _runs(3, part="b") + _runs(2, part="c"), 8, 2),
    (_runs(1, part="a") + _runs(3, part="b"), 1, 0),     # one core: nothing to share
    (_runs(100, repeats=4), 2, 2),                       # 4 runs' series + 5 pages: 9 tasks
    (_runs(5), 4, 0),                                    # 4 runs' series + 1 page: too few
    (_runs(100, flows=100), 2, 0),                       # many flows: distributions, no series
])
def test_the_workers_a_report_wants_are_known_from_its_planned_runs(runs, cores, expected):
    assert report_pool.expected_workers({"runs": runs}, cores=cores) == expected


def test_an_unreadable_experiment_spawns_nothing(tmp_path: Path):
    assert report_pool.spawn_for(tmp_path) is None
    (tmp_path / "experiment.json").write_text("{not json")
    assert report_pool.spawn_for(tmp_path) is None


def _page(path: Path) -> str:
    """The page without its embedded PNG bytes."""
    return re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "PNG", path.read_text())


def test_a_page_drawn_with_early_workers_is_the_serial_page(tmp_path: Path, monkeypatch):
    text = (EXAMPLES / "quickstart.toml").read_text().replace('duration = "20s"', 'duration = "3s"')
    scenario = tmp_path / "parts.toml"
    scenario.write_text(text + TWO_PARTS)
    done = ccarena("run", str(scenario), "--out", "out", "-q", "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    root = tmp_path / "out"

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    pool = report_pool.spawn_for(root)
    assert pool is not None, "two parts: one worker, spawned before the results are read"
    result = Result(root)
    workers = html.start_workers(result, tmp_path / "early" / "report.html", pool=pool)
    assert workers is not None and list(workers.parts) == ["pair"]  # "sweep" (4 runs) here
    early = html.write_report(result, tmp_path / "early" / "report.html", workers=workers)

    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert html.start_workers(Result(root), tmp_path / "serial" / "report.html") is None
    serial = html.write_report(Result(root), tmp_path / "serial" / "report.html")

    assert _page(early) == _page(serial)
    names = sorted(p.name for p in (tmp_path / "early" / "figures").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "serial" / "figures").iterdir())
    assert any(n.startswith("sweep__sweep-") for n in names), "the sweep part's figures are there"
