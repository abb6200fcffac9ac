"""The results format's version, and the reader's upgrade of older layouts.

``experiment.json`` and every ``run.json`` carry ``format_version`` (:data:`FORMAT_VERSION`). A
reader passes every record it loads through :func:`upgrade_record`, which brings an older layout
up to the current one step by step (flent's ``resultset.py`` does the same), so ``ccarena report``
and the Python API read results written by any earlier ccarena; a record from a newer ccarena is
refused with one line.

History:
    1: ``"format": 1``; no engine git revision in ``software``.
    2: ``"format_version": 2``; ``software.engine_git_revision`` (the commit the engine was built
       from, or ``"unknown"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ccarena.errors import UserError, option

FORMAT_VERSION = 2
"""Version of the results layout this ccarena writes."""


def _v1_to_v2(record: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in record.items() if k != "format"}
    if isinstance(out.get("software"), dict):
        out["software"] = dict(out["software"])
        out["software"].setdefault("engine_git_revision", "unknown")
    out["format_version"] = 2
    return out


_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2}
"""Version n → the function that turns a version-n record into version n + 1."""


def record_version(record: dict[str, Any]) -> int:
    """The layout version of a stored record (``format_version``, or version 1's ``format``)."""
    return int(record.get("format_version", record.get("format", 1)))


def upgrade_record(record: dict[str, Any], where: str = "results") -> dict[str, Any]:
    """``record`` (experiment.json or run.json content) in the current layout.

    Raises:
        UserError: the record was written by a newer ccarena (its version is above
            :data:`FORMAT_VERSION`) or has a version this reader does not know.
    """
    version = record_version(record)
    if version > FORMAT_VERSION:
        raise UserError(f"{where}: written by a newer ccarena (results format {version}; this one "
                        f"reads up to {FORMAT_VERSION}); upgrade ccarena (pip install -U .)")
    while version < FORMAT_VERSION:
        step = _UPGRADES.get(version)
        if step is None:
            raise UserError(f"{where}: results format {version} cannot be read; rerun the "
                            f"experiment with {option('force')}")
        record = step(record)
        version += 1
    return record
