"""Look at a report as a person does: in headless Chromium (Debian's ``chromium``, installed by
scripts/test.sh). :func:`layout` loads the page at a desktop width with every ``<details>`` open
and returns what a reader would notice: horizontal overflow of the page or of any table, and
figures that did not load; :func:`print_pdf` prints it; :func:`screenshot` captures it."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

MEASURE = """<script>
window.addEventListener('load', () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const root = document.documentElement;
  const images = [...document.images];
  const wide = [...document.querySelectorAll('.scroll')]
    .filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => { const t = e.querySelector('table'); return (t ? t.id : '?') + ' ' + e.scrollWidth + '>' + e.clientWidth; });
  document.body.setAttribute('data-measure', JSON.stringify({
    page_width: root.scrollWidth, viewport_width: root.clientWidth, images: images.length,
    broken: images.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt), wide_tables: wide}));
});
</script>"""


def chromium() -> str:
    """The Chromium binary; skips the test where none is installed, except in CI (scripts/test.sh
    installs it, so its absence there is a failure)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed (scripts/test.sh installs Debian's chromium)")
    pytest.skip("chromium is not installed (scripts/test.sh installs it)")


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", *args], capture_output=True, text=True, timeout=timeout)


def layout(report: Path, width: int = 1280) -> dict:
    """The page's layout at ``width`` px: ``page_width``/``viewport_width``, ``images``, the
    ``broken`` images' alt texts and the ``wide_tables`` that scroll sideways."""
    probe = report.with_name(report.stem + ".measure.html")
    probe.write_text(report.read_text().replace("</body>", MEASURE + "</body>"))
    try:
        done = _run(f"--window-size={width},900", "--virtual-time-budget=10000", "--dump-dom",
                    probe.resolve().as_uri())
    finally:
        probe.unlink()
    found = re.search(r'data-measure="([^"]*)"', done.stdout)
    assert found, f"Chromium did not measure the page: {done.stderr[-500:]}"
    return json.loads(html.unescape(found.group(1)))


def assert_fits(report: Path, width: int = 1280) -> dict:
    """Assert nothing is cut off at ``width`` px and every figure loads; returns the layout."""
    measured = layout(report, width)
    assert measured["page_width"] <= measured["viewport_width"], measured
    assert not measured["wide_tables"], measured
    assert not measured["broken"], measured
    return measured


def print_pdf(report: Path, out: Path) -> Path:
    """Print ``report`` to the PDF ``out`` (A4, as Chromium's print dialog would)."""
    done = _run(f"--print-to-pdf={out}", "--no-pdf-header-footer", report.resolve().as_uri())
    assert out.exists(), done.stderr[-500:]
    return out


def screenshot(report: Path, out: Path, width: int = 1280, height: int = 2400) -> Path:
    """A PNG of the top ``height`` px of the page at ``width`` px."""
    done = _run(f"--window-size={width},{height}", f"--screenshot={out}", report.resolve().as_uri())
    assert out.exists(), done.stderr[-500:]
    return out


TEXT = """<script>
window.addEventListener('load', () => {
  const found = document.querySelector(%s);
  document.body.setAttribute('data-text', JSON.stringify(found ? found.innerText : null));
});
</script>"""


def inner_text(report: Path, selector: str, width: int = 1280) -> str | None:
    """The text a reader sees in the first element matching the CSS ``selector`` (its
    ``innerText`` as Chromium lays the page out), None when nothing matches."""
    probe = report.with_name(report.stem + ".text.html")
    probe.write_text(report.read_text().replace("</body>", TEXT % json.dumps(selector) + "</body>"))
    try:
        done = _run(f"--window-size={width},900", "--virtual-time-budget=10000", "--dump-dom",
                    probe.resolve().as_uri())
    finally:
        probe.unlink()
    found = re.search(r'data-text="([^"]*)"', done.stdout)
    assert found, f"Chromium did not load the page: {done.stderr[-500:]}"
    return json.loads(html.unescape(found.group(1)))
