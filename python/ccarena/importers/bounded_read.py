"""Reading a measurement file within bounds (:mod:`ccarena.inputs`): its bytes and hash, and JSON
(plain or gzip'd), with one-line problems for what is not (not a regular file, too large for the
memory budget, a gzip bomb or a truncated gzip stream, JSON nested too deep, bad JSON, the wrong
kind of file).

An import holds about :data:`MEMORY_PER_FILE_BYTE` bytes of memory per byte of JSON it parses (the
parsed document, its samples and the tables made from them), so a file may be at most the memory
budget divided by that (``--max-memory``; default half this machine's memory), before and after
decompression.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ccarena import inputs
from ccarena.importers.model import ImportProblem

GZIP_MAGIC = inputs.GZIP_MAGIC

MEMORY_PER_FILE_BYTE = 8
"""Peak memory of an import per byte of its JSON, with room to spare (measured: a 184 MB iperf3
file of 0.1 s intervals, -P 2 with the server's output, peaks at 1.0 GB in ``ccarena import``:
5.4 bytes per byte, of which the parsed document is about 4)."""


def limit_bytes() -> int:
    """The largest file (and decompressed content) an import reads within the memory budget."""
    return inputs.memory_budget_bytes() // MEMORY_PER_FILE_BYTE


def _fix() -> str:
    return (f"an import reads at most 1/{MEMORY_PER_FILE_BYTE} of {inputs.describe_budget()}; "
            "raise it with --max-memory, or import a shorter measurement")


def read_bytes(path: Path) -> tuple[bytes, str]:
    """The file's content and its SHA-256 (hex), if it is a regular file within
    :func:`limit_bytes`.

    Raises:
        ImportProblem: the file cannot be read (missing, a directory, a FIFO or device, no
            permission) or is larger than :func:`limit_bytes`.
    """
    try:
        data = inputs.read_bytes(path, limit_bytes(), _fix())
    except inputs.InputRefused as err:
        raise ImportProblem(str(err)) from None
    return data, hashlib.sha256(data).hexdigest()


def gunzip(data: bytes) -> bytes | bytearray:
    """The decompressed content of a gzip file, at most :func:`limit_bytes` of it.

    Raises:
        ImportProblem: not gzip data, the stream is truncated or corrupt, or it inflates past
            :func:`limit_bytes`.
    """
    if not data.startswith(GZIP_MAGIC):
        raise ImportProblem("is not gzip-compressed (a .flent.gz file is)")
    try:
        return inputs.gunzip(data, limit_bytes(), _fix())
    except inputs.InputRefused as err:
        raise ImportProblem(str(err)) from None


def read_json(path: Path, gzip_refused: str | None = None) -> tuple[Any, str]:
    """The JSON document in the file ``path`` and the file's SHA-256, the file read within
    bounds (:func:`read_bytes`) and its bytes let go before the text is parsed (the parsed
    document is the most an import holds: about 4 bytes per byte of JSON).

    Args:
        path: the file: JSON, or gzip'd JSON (by its first bytes, or a name ending ``.gz``).
        gzip_refused: the problem a gzip'd file is (None: it is decompressed, :func:`gunzip`).

    Raises:
        ImportProblem: as :func:`read_bytes` and :func:`gunzip`; empty, not UTF-8, nested
            deeper than :data:`ccarena.inputs.MAX_JSON_DEPTH` (counted before parsing), not
            JSON (with the line and column; a document that stops early is called truncated);
            or ``gzip_refused``.
    """
    data: bytes | bytearray
    data, sha = read_bytes(path)
    if data.startswith(GZIP_MAGIC) or (gzip_refused is None and path.name.endswith(".gz")):
        if gzip_refused is not None:
            raise ImportProblem(gzip_refused)
        data = gunzip(data)
    text = _text(data)
    del data
    return _loads(text), sha


def _text(data: bytes | bytearray) -> str:
    """``data`` checked (not empty, not nested too deep) and decoded from UTF-8."""
    if not data or data.isspace():
        raise ImportProblem("is empty")
    try:
        inputs.check_json_depth(data)
    except inputs.InputRefused as err:
        raise ImportProblem(str(err)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ImportProblem(f"is not UTF-8 text (byte {err.start})") from None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip()):
            raise ImportProblem(f"is truncated JSON (the document ends at line {err.lineno}, "
                                f"column {err.colno}, before it is complete)") from None
        raise ImportProblem(f"is not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    except RecursionError:
        # Invalid JSON can hide its depth from the count; the parser's own limit then holds.
        raise ImportProblem(f"nests objects and lists more than {inputs.MAX_JSON_DEPTH} deep; give "
                            "the tool's own output, unedited") from None
    except ValueError:
        # The one other failure of the parser: an integer of more than 4,300 digits (Python's
        # limit on converting text to int, sys.get_int_max_str_digits).
        raise ImportProblem("holds a number of more than 4,300 digits, which no measurement "
                            "has; give the tool's own output, unedited") from None
