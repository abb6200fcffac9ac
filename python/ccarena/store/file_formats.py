"""The store's file formats: JSON that has no NaN, Parquet through pyarrow (durable writes of
whole files: :mod:`ccarena.durable_files`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


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


def check_output_file(path: Path, option: str, example: str = "report.html") -> None:
    """Refuse ``path`` as a file to write (a report page, a figure) unless it is, or can become, a
    regular file: ccarena writes it whole under a temporary name and renames it into place, which
    would replace a symbolic link (to ``/dev/stdout``, say) or a device node with a regular file
    and fail on a directory. A missing parent directory is created (as the writer would), then a
    temporary file is made and removed there to see that files can be written in it (``/proc``,
    a read-only file system cannot).

    ``example`` is a file name suggested inside a directory given as ``path``.

    Raises:
        UserError: ``path`` (given as ``option``) is a symbolic link, a directory, a device, FIFO
            or socket, or files cannot be written where it would go.
    """
    import stat
    import tempfile

    from ccarena.errors import UserError, printable

    shown = printable(str(path))
    if path.is_symlink():
        raise UserError(f"{option}: {shown} is a symbolic link; give the path of a regular file, "
                        "not a link")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as err:
        raise UserError(f"{option}: {shown} cannot be written ({err.strerror or err})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UserError(f"{option}: {shown} is a directory; give a file name inside it, e.g. "
                        f"{printable(str(path / example))}")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UserError(f"{option}: {shown} is not a regular file (a device, FIFO or socket); "
                        "give the path of a regular file")
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".ccarena-probe-"):
            pass
    except OSError as err:
        raise UserError(f"{option}: cannot write files in {printable(str(parent))} "
                        f"({err.strerror or err}); choose another place") from None
