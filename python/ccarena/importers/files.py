"""Reading a measurement file: its bytes, its hash, and JSON (plain or gzip'd) with one-line
problems for what is not (a truncated gzip stream, bad JSON, the wrong kind of file)."""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

from ccarena.importers.model import ImportProblem

GZIP_MAGIC = b"\x1f\x8b"


def read_bytes(path: Path) -> tuple[bytes, str]:
    """The file's content and its SHA-256 (hex).

    Raises:
        ImportProblem: the file cannot be read (missing, a directory, no permission).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ImportProblem("no such file") from None
    except IsADirectoryError:
        raise ImportProblem("is a directory, not a file") from None
    except OSError as err:
        raise ImportProblem(f"cannot be read ({err.strerror or err})") from None
    return data, hashlib.sha256(data).hexdigest()


def gunzip(data: bytes) -> bytes:
    """The decompressed content of a gzip file.

    Raises:
        ImportProblem: not gzip data, or the stream is truncated or corrupt.
    """
    if not data.startswith(GZIP_MAGIC):
        raise ImportProblem("is not gzip-compressed (a .flent.gz file is)")
    try:
        return gzip.decompress(data)
    except EOFError:
        raise ImportProblem("is truncated (the gzip stream ends early)") from None
    except (OSError, zlib.error) as err:
        raise ImportProblem(f"is a corrupt gzip stream ({err})") from None


def parse_json(data: bytes) -> Any:
    """The JSON document in ``data`` (UTF-8).

    Raises:
        ImportProblem: empty, not UTF-8, or not JSON (with the line and column of the problem;
            a document that stops early is called truncated).
    """
    if not data.strip():
        raise ImportProblem("is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ImportProblem(f"is not UTF-8 text (byte {err.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip()):
            raise ImportProblem(f"is truncated JSON (the document ends at line {err.lineno}, "
                                f"column {err.colno}, before it is complete)") from None
        raise ImportProblem(f"is not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
