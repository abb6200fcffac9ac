"""What ``ccarena query`` may touch: the experiment's own files, read only (issue 37).

``ccarena query`` runs the user's SQL in DuckDB, which by default can read any file
(``read_text('/etc/shadow')``), write any file (``COPY … TO``), create databases (``ATTACH``), list
directories (``glob('/*')``) and install extensions. Its job is to read one experiment, so by
default the connection is confined (DuckDB's "Securing DuckDB" settings,
https://duckdb.org/docs/stable/operations_manual/securing_duckdb/overview):

* :func:`confine`, after the views are made: ``allowed_directories`` is the experiment directory
  alone, ``enable_external_access = false`` refuses every other path (and extensions), and
  ``lock_configuration = true`` keeps the SQL from setting them back;
* :func:`check_statements`: only SELECT statements (with SHOW, DESCRIBE, SUMMARIZE, VALUES and
  ``FROM …`` forms, which DuckDB parses as SELECT) run, since ``COPY … TO``, ``EXPORT`` or
  ``ATTACH`` would write inside the allowed directory, and an ``EXPLAIN ANALYZE`` or a ``PIVOT``
  wrapper can carry a ``COPY``;
* :func:`inside`: relative paths (``'runs/*/flows.parquet'``) are resolved against the experiment
  directory, as DuckDB checks a relative path against ``allowed_directories`` only once it is
  made absolute from the working directory.

``--unsafe-sql`` skips all three (the connection keeps DuckDB's full file access).
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ccarena.errors import UserError, printable

NOT_ALLOWED = "is not allowed: ccarena query reads only this experiment; --unsafe-sql allows any SQL"
"""The tail of every refusal: why, and the option that lifts it."""


def confine(con: Any, root: Path) -> None:
    """Confine the DuckDB connection ``con`` to reading files under the directory ``root``.

    Call it after the views are created (they keep working: their paths are under ``root``).
    Spilled intermediate results still go to ``.tmp`` of the working directory the command
    started in, as before (DuckDB's default), not into the experiment.

    Raises:
        UserError: the installed DuckDB lacks one of the settings (``allowed_directories`` came
            in DuckDB 1.1): the query is refused rather than run unconfined."""
    import duckdb

    directory = str(root.resolve())
    try:
        con.execute("SET temp_directory = ?", [str(Path.cwd() / ".tmp")])
        con.execute("SET allowed_directories = ?", [[directory.rstrip("/") + "/"]])
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except duckdb.Error as err:
        raise UserError(f"query: DuckDB {duckdb.__version__} cannot keep SQL to this experiment "
                        f"({printable(str(err).splitlines()[0])}): install duckdb 1.1 or later, "
                        "or pass --unsafe-sql to run it with full file access") from None


def check_statements(con: Any, sql: str) -> None:
    """Refuse ``sql`` unless each of its statements is a SELECT (DuckDB's statement type).

    Raises:
        UserError: ``query: COPY is not allowed: …`` naming the first statement of another type.
        duckdb.Error: ``sql`` does not parse (the caller reports it as any query error)."""
    import duckdb

    for statement in con.extract_statements(sql):
        if statement.type == duckdb.StatementType.SELECT:
            continue
        kind = statement.type.name
        if statement.type == duckdb.StatementType.MULTI:
            # DuckDB wraps a PIVOT that must first list its values (and what contains one).
            kind = "a PIVOT without an IN (…) list, or a statement holding one,"
        raise UserError(f"query: {kind} {NOT_ALLOWED}")


_DENIED_FILE = re.compile(r'Cannot access (?:file|directory) "(.*?)"')
_EXTENSION = re.compile(r"required extension '([^':\n]+)")
_DENIED = ("disabled by configuration", "disabled through configuration")
"""How DuckDB words a refusal of :func:`confine`'s settings (a PermissionException, or a plain
Error when it fails to autoload the extension a function needs)."""


def refusal(err: Exception) -> str | None:
    """The one-line refusal for a DuckDB error raised because :func:`confine` denied access
    (``query: reading "/etc/passwd" is not allowed: …``), or None for any other error."""
    full = str(err)
    if any(d in full for d in _DENIED):
        extension, found = _EXTENSION.search(full), _DENIED_FILE.search(full)
        if extension:
            what = f"loading the extension {printable(extension.group(1))}"
        elif found:
            what = f'reading "{printable(found.group(1))}"'
        elif "extension" in full.lower():
            what = "loading an extension"
        else:
            what = "this file access"
        return f"query: {what} {NOT_ALLOWED}"
    if "configuration has been locked" in full:
        return f"query: changing a setting {NOT_ALLOWED}"
    return None


@contextmanager
def inside(root: Path) -> Iterator[None]:
    """Run the block with ``root`` as the working directory, then return to the previous one
    (the query command is single-threaded; the change is process-wide while it lasts)."""
    before = os.getcwd()
    os.chdir(root)
    try:
        yield
    finally:
        os.chdir(before)
