"""Re-running a finished experiment keeps its report when nothing it is drawn from changed
(issue 29, item 7): the page is not drawn again, the command says so, and it is drawn again when
a run changed, a file it links to is gone, or with --force."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import EXAMPLES, ccarena

from ccarena.report import reuse


def _scenario(tmp_path: Path) -> Path:
    text = (EXAMPLES / "quickstart.toml").read_text().replace('duration = "20s"', 'duration = "3s"')
    path = tmp_path / "quickstart.toml"
    path.write_text(text)
    return path


def _identity(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


def test_a_finished_experiment_run_again_reuses_its_report_until_something_changes(tmp_path: Path):
    scenario = _scenario(tmp_path)
    out = tmp_path / "out"
    first = ccarena("run", str(scenario), "--out", str(out), "-q", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    report = out / "report.html"
    assert report.is_file() and reuse.record_path(report).is_file()
    assert "reused" not in first.stdout
    page, summary = _identity(report), _identity(out / "summary.parquet")

    again = ccarena("run", str(scenario), "--out", str(out), "-q", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"report: {report} (reused" in again.stdout, again.stdout
    assert _identity(report) == page  # not written again, not even with the same bytes
    assert _identity(out / "summary.parquet") == summary  # no run read back for the summary
    assert "summary" in again.stdout  # the summary table is still printed

    # A run done again (a new file in its directory) draws the page again.
    (run,) = [p for p in (out / "runs").iterdir() if p.is_dir()]
    os.utime(run / "flows.parquet", ns=(run.stat().st_mtime_ns, run.stat().st_mtime_ns + 10**9))
    changed = ccarena("run", str(scenario), "--out", str(out), "-q", cwd=tmp_path)
    assert changed.returncode == 0, changed.stderr
    assert "reused" not in changed.stdout and f"report: {report}" in changed.stdout
    assert _identity(report) != page
    page = _identity(report)

    # A figure the page links to went missing: drawn again.
    figure = next((out / "figures").glob("*.png"))
    figure.unlink()
    missing = ccarena("run", str(scenario), "--out", str(out), "-q", cwd=tmp_path)
    assert "reused" not in missing.stdout and figure.is_file()
    page = _identity(report)

    # --force redoes the runs and the page.
    forced = ccarena("run", str(scenario), "--out", str(out), "-q", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert "reused" not in forced.stdout
    assert _identity(report) != page


def test_the_fingerprint_follows_formats_runs_and_the_scenario_but_not_the_update_time(tmp_path: Path):
    root = tmp_path / "exp"
    (root / "runs" / "r0").mkdir(parents=True)
    (root / "experiment.json").write_text('{"name": "x", "updated": "2026-01-01T00:00:00+00:00"}')
    (root / "summary.parquet").write_bytes(b"summary")
    (root / "runs" / "r0" / "flows.parquet").write_bytes(b"flows")
    report = root / "report.html"
    report.write_text("<html></html>")
    base = reuse.fingerprint(root, report, ["png"])
    assert reuse.fingerprint(root, report, ["png"]) == base
    reuse.record(report, base)
    assert reuse.is_current(root, report, ["png"])
    assert not reuse.is_current(root, report, ["png", "svg"])  # the SVG files were not drawn

    (root / "experiment.json").write_text('{"name": "x", "updated": "2026-02-02T00:00:00+00:00"}')
    assert reuse.is_current(root, report, ["png"])  # a re-run rewrites only the time
    (root / "experiment.json").write_text('{"name": "y", "updated": "2026-02-02T00:00:00+00:00"}')
    assert not reuse.is_current(root, report, ["png"])
    (root / "experiment.json").write_text('{"name": "x"}')
    assert reuse.is_current(root, report, ["png"])

    (root / "runs" / "r1").mkdir()
    (root / "runs" / "r1" / "flows.parquet").write_bytes(b"more")
    assert not reuse.is_current(root, report, ["png"])  # a new run
    (root / "runs" / "r1" / "flows.parquet").unlink()
    (root / "runs" / "r1").rmdir()
    assert reuse.is_current(root, report, ["png"])

    report.write_text("<html>edited</html>")
    assert not reuse.is_current(root, report, ["png"])  # the page is not the one recorded
    reuse.forget(report)
    assert not reuse.is_current(root, report, ["png"])
