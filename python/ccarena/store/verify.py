"""Stored results verified on read: a file of the experiment directory that cannot be read as
what it should be — a Parquet file cut short, overwritten or of another table's schema, a JSON
record cut short or of the wrong shape, a device or FIFO where a file should be — is a
:class:`DamagedFile` naming the file (and its run) and what is wrong, never a pyarrow, DuckDB or
``json`` traceback.

Checks, cheapest first:

* :func:`parquet_frame_problem` (12 bytes read): the file is a regular file (a FIFO is never
  opened) that starts and ends with Parquet's magic ``PAR1`` and whose footer length fits in it
  (Apache Parquet file format, "File Format": a file is ``PAR1``, the column chunks, the footer,
  its 4-byte little-endian length and ``PAR1``). A file cut anywhere but exactly after a footer,
  or overwritten, fails here.
* :func:`parquet_problem` (the footer parsed, 0.2–0.4 ms): also the table's key columns
  (:data:`REQUIRED_COLUMNS`) are there with the right kind of type.
* :func:`read_parquet`: the whole file read (a data page damaged inside an intact frame is found
  only here), key columns checked when the table is named.
* :func:`read_record`: a JSON object (not a list, a string, a document nested beyond Python's
  recursion limit), in a layout this ccarena reads (:func:`ccarena.store.format.upgrade_record`),
  with the keys readers index by the right types when a check is given
  (:func:`experiment_problem`, :func:`run_problem`).

Messages name the file and a position (line and column) in it, never the file's text.
"""

from __future__ import annotations

import json
import os
import stat
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ccarena.errors import UserError
from ccarena.store.format import upgrade_record

if TYPE_CHECKING:
    import pyarrow as pa

PARQUET_MAGIC = b"PAR1"

REQUIRED_COLUMNS: dict[str, dict[str, str]] = {
    "flows": {"run_id": "string", "flow": "number", "name": "string", "flavor": "string"},
    "samples": {"run_id": "string", "time_s": "number", "flow": "number"},
    "queues": {"run_id": "string", "time_s": "number", "link": "number"},
    "links": {"run_id": "string", "link": "number", "name": "string"},
    "regions": {"run_id": "string", "region": "number", "start_s": "number", "end_s": "number"},
    "summary": {"run_id": "string", "point": "number", "flow": "number", "name": "string",
                "flavor": "string"},
}
"""Per stored table: the columns every reader indexes (name → ``"string"`` or ``"number"``). A
table with no rows may have no columns at all (a run with nothing to sample writes one so)."""


class DamagedFile(UserError):
    """A stored file that cannot be read as what it should be.

    Attributes:
        path: the file.
        why: what is wrong with it (a few words, no text of the file).
        run_id: the run it belongs to (None for an experiment-level file).
    """

    def __init__(self, path: Path, why: str, run_id: str | None = None) -> None:
        self.path = Path(path)
        self.why = why
        self.run_id = run_id
        fix = "" if run_id is None else (f"; to redo run {run_id}, delete its directory and run "
                                         "the scenario again")
        super().__init__(f"{self.path}: {why}{fix}")

    def __reduce__(self) -> tuple[Callable[..., DamagedFile], tuple[Path, str, str | None]]:
        # Raised in a report's worker process, it crosses back pickled.
        return (DamagedFile, (self.path, self.why, self.run_id))

    def left_out(self) -> str:
        """The one-line warning of a run left out because of this file: which run, which file,
        what is wrong and how to get the run back."""
        return (f"run {self.run_id} left out: {self.path}: {self.why}; to redo the run, delete "
                "its directory and run the scenario again")


def _regular_file_problem(path: Path) -> str | None:
    """Why ``path`` is not a regular file one can read (missing, a directory, FIFO or device),
    or None. Read through ``stat`` only: a FIFO is never opened (opening one blocks)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "is missing"
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a device, FIFO or socket)"
    return None


def parquet_frame_problem(path: Path) -> str | None:
    """Why ``path`` is not framed as a Parquet file (a regular file with the magic at both ends
    and a footer length that fits), or None. Reads 12 bytes."""
    problem = _regular_file_problem(path)
    if problem is not None:
        return problem
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 12:
                return f"is not a Parquet file ({size} bytes: empty or cut short)"
            head = f.read(4)
            f.seek(size - 8)
            tail = f.read(8)
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    if head != PARQUET_MAGIC:
        return "is not a Parquet file (it does not start with Parquet's magic bytes)"
    (footer,) = struct.unpack("<I", tail[:4])
    if tail[4:] != PARQUET_MAGIC or footer > size - 12:
        return "is not a complete Parquet file (cut short: its footer is missing)"
    return None


def _kind(dtype: pa.DataType) -> str:
    import pyarrow.types as t

    if t.is_string(dtype) or t.is_large_string(dtype) or t.is_dictionary(dtype):
        return "string"
    if t.is_integer(dtype) or t.is_floating(dtype) or t.is_decimal(dtype):
        return "number"
    return str(dtype)


def schema_problem(schema: pa.Schema, rows: int, table: str) -> str | None:
    """Why a table of ``rows`` rows with ``schema`` is not a ``table`` (one of
    :data:`REQUIRED_COLUMNS`): a key column missing or of another kind of type; or None."""
    required = REQUIRED_COLUMNS.get(table, {})
    if rows == 0 and len(schema) == 0:
        return None
    missing = [c for c in required if schema.get_field_index(c) < 0]
    if missing:
        return (f"has another schema (no column {', '.join(repr(c) for c in missing)} of a "
                f"{table} table)")
    for column, kind in required.items():
        dtype = schema.field(column).type
        if rows and _kind(dtype) != kind and not _null(dtype):
            return f"has another schema (column {column!r} is {dtype}, not a {kind})"
    return None


def _null(dtype: pa.DataType) -> bool:
    import pyarrow.types as t

    return t.is_null(dtype)


def parquet_problem(path: Path, table: str) -> str | None:
    """Why ``path`` cannot be read as the stored table ``table`` (its framing, its footer, its
    key columns: see the module doc), or None. Reads the footer only (~0.2 ms)."""
    problem = parquet_frame_problem(path)
    if problem is not None:
        return problem
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_metadata(path)
        schema = metadata.schema.to_arrow_schema()
    except (OSError, pa.ArrowException, ValueError) as err:
        return f"is a damaged Parquet file ({_first_line(err)})"
    return schema_problem(schema, metadata.num_rows, table)


def read_parquet(path: Path, table: str | None = None, run_id: str | None = None) -> pa.Table:
    """The Parquet file at ``path``, read in full; with ``table`` (a :data:`REQUIRED_COLUMNS`
    key), its key columns checked too.

    Raises:
        DamagedFile: it cannot be read, or (with ``table``) has another schema.
    """
    problem = parquet_frame_problem(path)
    if problem is not None:
        raise DamagedFile(path, problem, run_id)
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # One file: its reader alone, not read_table's dataset layer (pyarrow.dataset, ~55 ms to
        # import in every process that reads a table: each forked figure child too).
        with pq.ParquetFile(path) as file:
            data = file.read()
    except (OSError, pa.ArrowException, ValueError) as err:
        raise DamagedFile(path, f"is a damaged Parquet file ({_first_line(err)})", run_id) from None
    problem = None if table is None else schema_problem(data.schema, data.num_rows, table)
    if problem is not None:
        raise DamagedFile(path, problem, run_id)
    return data


def _first_line(err: BaseException) -> str:
    """The first line of an error's message without the path it repeats (the caller names it)."""
    text = (str(err).splitlines() or [type(err).__name__])[0]
    return text if len(text) <= 160 else text[:157] + "..."


# ---------------------------------------------------------------------------- JSON records

def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def experiment_problem(record: dict[str, Any]) -> str | None:
    """Why an experiment.json ``record`` (upgraded) is not of the shape readers index, or None:
    ``name`` a string; ``runs`` a list of objects each with a string ``run_id``, a ``spec``
    object (and a string ``part`` when present); ``sweep.parameters`` an object or a list of
    names; ``parts``, when present, a list of objects with a string ``name``, a list of
    ``parameters`` and ``report`` and ``matrix`` objects (or null); ``scenario`` an object."""
    if not isinstance(record.get("name"), str):
        return "wrong shape: 'name' must be a string"
    runs = record.get("runs")
    if not isinstance(runs, list):
        return "wrong shape: 'runs' must be a list"
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("run_id"), str):
            return f"wrong shape: runs[{i}] must be an object with a string 'run_id'"
        if not isinstance(run.get("part", ""), str):
            return f"wrong shape: runs[{i}].part must be a string"
        if not isinstance(run.get("spec"), dict):
            return f"wrong shape: runs[{i}].spec must be an object"
    sweep = record.get("sweep")
    if not isinstance(sweep, dict) or not isinstance(sweep.get("parameters"), (dict, list)):
        return "wrong shape: 'sweep.parameters' must be an object"
    parts = record.get("parts")
    if parts is not None:
        if not isinstance(parts, list):
            return "wrong shape: 'parts' must be a list"
        for i, part in enumerate(parts):
            if not isinstance(part, dict) or not isinstance(part.get("name", ""), str):
                return f"wrong shape: parts[{i}] must be an object with a string 'name'"
            if not _is_str_list(part.get("parameters", [])):
                return f"wrong shape: parts[{i}].parameters must be a list of names"
            for key in ("report", "matrix"):
                if not isinstance(part.get(key) or {}, dict):
                    return f"wrong shape: parts[{i}].{key} must be an object"
    if not isinstance(record.get("scenario"), dict):
        return "wrong shape: 'scenario' must be an object"
    for key in ("software", "defaults"):
        if not isinstance(record.get(key, {}), dict):
            return f"wrong shape: '{key}' must be an object"
    return None


def run_problem(record: dict[str, Any]) -> str | None:
    """Why a run.json ``record`` (upgraded) is not of the shape readers index, or None:
    ``point``, ``repeat`` and ``seed`` integers; ``params``, ``summary``, ``spec`` objects when
    present."""
    for key in ("point", "repeat", "seed"):
        value = record.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            return f"wrong shape: '{key}' must be an integer"
    for key in ("params", "summary", "spec", "derived", "scenario"):
        if not isinstance(record.get(key) or {}, dict):
            return f"wrong shape: '{key}' must be an object"
    return None


def read_record(path: Path, check: Callable[[dict[str, Any]], str | None] | None = None,
                run_id: str | None = None) -> dict[str, Any]:
    """The JSON object stored at ``path`` (experiment.json or a run.json), upgraded to the
    current layout (:func:`ccarena.store.format.upgrade_record`) and checked by ``check``
    (:func:`experiment_problem` or :func:`run_problem`) when given.

    Raises:
        DamagedFile: not a regular file, not UTF-8, not JSON (the message gives the line and
            column), not an object, or (``check``) of the wrong shape.
        UserError: written by a newer ccarena.
    """
    problem = _regular_file_problem(path)
    if problem is not None:
        raise DamagedFile(path, problem, run_id)
    try:
        record = json.loads(Path(path).read_bytes())
    except OSError as err:
        raise DamagedFile(path, f"cannot be read ({err.strerror or err})", run_id) from None
    except UnicodeDecodeError as err:
        raise DamagedFile(path, f"is not UTF-8 text (byte {err.start})", run_id) from None
    except json.JSONDecodeError as err:
        raise DamagedFile(path, f"is not valid JSON (line {err.lineno}, column {err.colno}: "
                                f"{err.msg}; cut short?)", run_id) from None
    except RecursionError:
        raise DamagedFile(path, "is not a results record (JSON nested too deep)", run_id) from None
    if not isinstance(record, dict):
        raise DamagedFile(path, f"wrong shape: a JSON {type(record).__name__}, not an object",
                          run_id)
    try:
        record = upgrade_record(record, str(path))
    except (TypeError, ValueError):
        raise DamagedFile(path, "wrong shape: 'format_version' must be an integer", run_id) from None
    problem = None if check is None else check(record)
    if problem is not None:
        raise DamagedFile(path, problem, run_id)
    return record
