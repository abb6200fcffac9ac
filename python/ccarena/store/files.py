"""Durable file writes: a temporary file in the same directory, fsync, rename (atomic on one file
system); JSON that has no NaN; Parquet through pyarrow."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


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


def json_dumps(value: Any) -> str:
    """Indented JSON; NaN and infinities become null (JSON has no such numbers)."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            return None
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        if hasattr(v, "item") and callable(v.item):  # numpy scalars
            return clean(v.item())
        return v

    return json.dumps(clean(value), indent=2, sort_keys=False, allow_nan=False) + "\n"


def write_parquet(df: pd.DataFrame, path: Path) -> None:
    """Write a DataFrame as a Parquet file (no index)."""
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
