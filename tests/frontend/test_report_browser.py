"""The quickstart report in headless Chromium: no horizontal overflow at a laptop's width, every
figure present, the answer before the details, a screenshot and a PDF that print (issue 17; the
seed reports are checked the same way in test_seed_examples.py)."""

from __future__ import annotations

from pathlib import Path

from browser import assert_fits, print_pdf, screenshot
from conftest import EXAMPLES, ccarena


def test_quickstart_report_fits_the_screen_and_prints(tmp_path: Path) -> None:
    done = ccarena("run", str(EXAMPLES / "quickstart.toml"), "-o", str(tmp_path / "qs"), "-q",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = tmp_path / "qs" / "report.html"
    page = report.read_text()
    # The answer opens the page: the per-flavor table comes before the figures and the details.
    assert page.index('id="answer-table"') < page.index("<h2>Figures</h2>") < page.index('id="summary"')
    assert 'href="tables/summary.csv"' in page and (tmp_path / "qs" / "tables" / "summary.csv").exists()
    for width in (1280, 1024):
        measured = assert_fits(report, width)
        assert measured["images"] >= 5
    png = screenshot(report, tmp_path / "quickstart.png")
    assert png.stat().st_size > 50_000
    pdf = print_pdf(report, tmp_path / "quickstart.pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and data.count(b"/Type /Page") >= 3
