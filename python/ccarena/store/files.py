"""Durable file writes: a temporary file in the same directory, fsync, rename (atomic on one file
system); JSON that has no NaN; Parquet through pyarrow."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


def fsync_dir(path: Path) -> None:
    """Make a rename inside ``path`` durable (best effort: not every file system allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def _clean(v: Any) -> Any:
    """``v`` with NaN and infinities as None and numpy scalars as Python numbers."""
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return None
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if hasattr(v, "item") and callable(v.item):  # numpy scalars
        return _clean(v.item())
    return v


def _compact(v: Any) -> str:
    """One JSON value on one line through the C encoder; cleaned first only if it needs it (a
    10,000-flow spec has a million items: the pure-Python indenting encoder took seconds)."""
    try:
        return json.dumps(v, allow_nan=False, separators=(", ", ": "))
    except (ValueError, TypeError):
        return json.dumps(_clean(v), allow_nan=False, separators=(", ", ": "))


def json_dumps(value: Any) -> str:
    """JSON with one top-level key per line (each value on its line); NaN and infinities become
    null (JSON has no such numbers)."""
    if not isinstance(value, dict):
        return _compact(value) + "\n"
    if not value:
        return "{}\n"
    lines = [f"  {json.dumps(str(k))}: {_compact(v)}" for k, v in value.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_parquet(df: pd.DataFrame, path: Path) -> pa.Table:
    """Write a DataFrame as a Parquet file (no index); returns the Arrow table written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table, path)
    return table
