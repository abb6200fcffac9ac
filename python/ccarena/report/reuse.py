"""Reusing a report whose inputs did not change: re-running a finished experiment should not draw
its figures again.

:func:`write_report <ccarena.report.html.write_report>` leaves beside ``report.html`` a small
JSON file (``report.html.inputs.json``) holding a fingerprint of what the page was drawn from and
the files it wrote. :func:`is_current` recomputes the fingerprint and checks those files; when both
agree, the page on disk is the page a new drawing would give, and the caller may keep it.

The fingerprint (SHA-256) covers:

- the report code: the contents of ``ccarena/report``, ``ccarena/analysis``, ``ccarena/store`` and
  ``ccarena/results.py`` (a changed figure or metric redraws), ccarena's and matplotlib's versions;
- the figure formats asked for (``--formats``) and where the page goes;
- the experiment's top-level files (``experiment.json`` without its ``updated`` time,
  ``summary.parquet``, experiment tables such as ``calibration.parquet``) by content;
- every stored run file (``runs/<id>/*``) by name, size and modification time (stat only: a
  400-run sweep is checked in milliseconds; a run done again is a new file).

This module reads files only (no pandas, no matplotlib), so checking costs milliseconds where
drawing costs seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

INPUTS_SUFFIX = ".inputs.json"
"""Suffix added to the report's file name for its record (``report.html.inputs.json``)."""

RECORD_VERSION = 1
"""Layout of the record; a record of another layout is never current."""

_CODE_PARTS = ("report", "analysis", "store", "results.py")
"""What of the ccarena package shapes a page drawn from stored results (relative to the package)."""

_OUTPUT_DIRS = ("figures", "tables")
"""Directories beside the page that hold what the page links to."""


def record_path(report: Path) -> Path:
    """The record kept beside ``report`` (``report.html`` → ``report.html.inputs.json``)."""
    return report.with_name(report.name + INPUTS_SUFFIX)


def _package_dir() -> Path:
    return Path(__file__).resolve().parent.parent


def _code_digest() -> str:
    """SHA-256 of the report code's sources (:data:`_CODE_PARTS`) and the versions of ccarena and
    matplotlib (read from the installed distribution's metadata: importing matplotlib costs
    half a second)."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    package = _package_dir()
    files: list[Path] = []
    for part in _CODE_PARTS:
        where = package / part
        if where.is_file():
            files.append(where)
        elif where.is_dir():
            files.extend(p for p in where.rglob("*") if p.is_file() and p.suffix in (".py", ".j2"))
    for path in sorted(files):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in ("ccarena", "matplotlib"):
        try:
            digest.update(f"{name}={version(name)}\0".encode())
        except PackageNotFoundError:
            digest.update(f"{name}=none\0".encode())
    return digest.hexdigest()


def _experiment_bytes(path: Path) -> bytes:
    """experiment.json without its ``updated`` time (a re-run of finished runs rewrites it with a
    new time and nothing else new), in a canonical form."""
    try:
        meta = json.loads(path.read_bytes())
    except ValueError:
        return path.read_bytes()
    if isinstance(meta, dict):
        meta.pop("updated", None)
    return json.dumps(meta, sort_keys=True).encode()


def _is_report_output(name: str) -> bool:
    """A top-level file a report (or a lock) writes, not an input of the page."""
    return name.startswith(".") or name.endswith(".html") or name.endswith(INPUTS_SUFFIX)


def fingerprint(root: Path, report: Path, formats: Sequence[str]) -> str:
    """SHA-256 (hex) of everything the page of the experiment at ``root`` written to ``report``
    with figure ``formats`` is drawn from (see the module's description).

    Raises:
        OSError: a file vanished or cannot be read while it is read.
    """
    root = Path(root)
    digest = hashlib.sha256()
    digest.update(f"record={RECORD_VERSION}\0code={_code_digest()}\0".encode())
    digest.update(f"formats={','.join(sorted(set(formats)))}\0".encode())
    digest.update(f"report={Path(report).resolve()}\0".encode())
    with os.scandir(root) as entries:
        top = sorted((e.name, e.path) for e in entries if e.is_file() and not _is_report_output(e.name))
    for name, path in top:
        data = _experiment_bytes(Path(path)) if name == "experiment.json" else Path(path).read_bytes()
        digest.update(f"file={name}\0".encode() + hashlib.sha256(data).digest())
    runs = root / "runs"
    if runs.is_dir():
        with os.scandir(runs) as entries:
            run_dirs = sorted((e.name, e.path) for e in entries if e.is_dir())
        for run_id, path in run_dirs:
            with os.scandir(path) as files:
                stats = sorted((f.name, f.stat()) for f in files if f.is_file())
            for name, st in stats:
                digest.update(f"run={run_id}/{name}:{st.st_size}:{st.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _outputs(report: Path) -> dict[str, int]:
    """The page and the files beside it it links to (figures, tables): relative name → size."""
    out = {report.name: report.stat().st_size}
    for directory in _OUTPUT_DIRS:
        where = report.parent / directory
        if where.is_dir():
            for path in sorted(where.iterdir()):
                if path.is_file() and not path.name.startswith("."):
                    out[f"{directory}/{path.name}"] = path.stat().st_size
    return out


def record(report: Path, inputs: str) -> None:
    """Note beside ``report`` (just written) that it was drawn from inputs of fingerprint
    ``inputs`` (:func:`fingerprint`, taken before drawing: inputs that change while the page is
    drawn make the record stale, never a stale page current), with the files it wrote."""
    from ccarena.store import atomic_write_bytes

    report = Path(report)
    st = report.stat()
    data = {"version": RECORD_VERSION, "inputs": inputs, "report_mtime_ns": st.st_mtime_ns,
            "outputs": _outputs(report)}
    atomic_write_bytes(record_path(report), json.dumps(data, indent=1).encode())


def forget(report: Path) -> None:
    """Remove ``report``'s record (before the page is redrawn: a drawing that fails half-way
    must not leave an old record that calls the half-written files current)."""
    record_path(Path(report)).unlink(missing_ok=True)


def is_current(root: Path, report: Path, formats: Sequence[str]) -> bool:
    """Whether the page at ``report`` was drawn from the experiment at ``root`` as it is now, with
    ``formats``, by this report code, and every file it wrote is still there unchanged in size
    (the page itself also in its modification time). False when anything cannot be read."""
    report = Path(report)
    try:
        data: Any = json.loads(record_path(report).read_bytes())
        if not isinstance(data, dict) or data.get("version") != RECORD_VERSION:
            return False
        if report.stat().st_mtime_ns != data.get("report_mtime_ns"):
            return False
        for name, size in (data.get("outputs") or {}).items():
            if (report.parent / name).stat().st_size != size:
                return False
        return data.get("inputs") == fingerprint(root, report, formats)
    except (OSError, ValueError):
        return False
