"""Reading the files a user hands ccarena (measurement imports, link trace files) within bounds.

Every such file is untrusted input: it may be a named pipe with no writer, a device such as
``/dev/zero``, a gigabyte of text, a gzip stream that inflates a thousandfold, or JSON nested a
hundred thousand deep. The readers here refuse each in one line, before memory or time run out:

- :func:`open_regular`: regular files only (a FIFO, device, socket or directory is refused without
  blocking: the file is checked with ``stat`` before it is opened, and opened non-blocking);
- :func:`read_bytes`: a size limit checked before reading, and kept while reading (a file that
  grows, or a ``/proc`` file whose size reads 0, stops at the limit);
- :func:`gunzip`: decompression that stops at a size limit or a ratio to the compressed size
  (a gzip bomb costs the limit, not its inflated size);
- :func:`check_json_depth`: the nesting depth of a JSON document, counted before it is parsed;
- :func:`read_lines`: a text file line by line, with limits on the number and length of lines.

The limits scale with the memory budget (:func:`memory_budget_bytes`: ``--max-memory`` where the
command has it, via :func:`memory_budget`; else half this machine's memory, or half the process's
address-space limit when that is smaller). Every refusal is an :class:`InputRefused` whose message
says what is wrong and the fix, without the file's name (the caller names the file).
"""

from __future__ import annotations

import os
import resource
import stat
import zlib
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO, Iterator

from ccarena.units import format_bytes

GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of a gzip stream (RFC 1952, section 2.3.1)."""

MAX_JSON_DEPTH = 64
"""Deepest nesting of objects and lists a JSON input may have: iperf3's and Flent's files nest
about 7 deep; Python's parser and encoder recurse once per level (about 1,000 levels at most)."""


class InputRefused(ValueError):
    """A file refused before or while it is read: the message is one line saying why and the fix,
    without the file's name (the caller prefixes it)."""


_BUDGET: ContextVar[int | None] = ContextVar("ccarena_input_budget", default=None)
"""The memory budget given on the command line (``--max-memory``), None when not given."""


def _machine_memory() -> tuple[int, str]:
    """The memory this process may use and what sets it, in words."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        physical = 8 * 10**9
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft < physical:
        return soft, "this process's address-space limit (ulimit -v)"
    return physical, "this machine's memory"


def machine_memory_bytes() -> int:
    """The memory this process may use: the machine's physical memory, or the process's
    address-space limit (``RLIMIT_AS``, ``ulimit -v``) when that is smaller; 8 GB when neither
    can be read."""
    return _machine_memory()[0]


@contextmanager
def memory_budget(max_memory_bytes: int | None) -> Iterator[None]:
    """Within the block, inputs are read within ``max_memory_bytes`` (``--max-memory``); None
    keeps the default (:func:`memory_budget_bytes`)."""
    token = _BUDGET.set(max_memory_bytes)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def parse_max_memory(text: str | None) -> int | None:
    """A ``--max-memory`` option's value in bytes (None when not given).

    Raises:
        UserError: not a size such as ``8GB``, as one line naming the option.
    """
    if text is None:
        return None
    from ccarena.errors import UserError
    from ccarena.units import UnitError, parse_size_bytes

    try:
        return parse_size_bytes(text)
    except UnitError as err:
        raise UserError(f"--max-memory: {err}") from None


def memory_budget_bytes() -> int:
    """The memory budget inputs are read within, bytes: ``--max-memory`` inside
    :func:`memory_budget`, else half of :func:`machine_memory_bytes` (the engine's default
    budget, ``ccarena.experiment.budget``)."""
    given = _BUDGET.get()
    return given if given is not None else machine_memory_bytes() // 2


def describe_budget() -> str:
    """The budget in words, for messages: ``the memory budget of 2 GB (--max-memory)``, ``the
    memory budget of 12 GB (half this machine's memory)`` or ``… (half this process's
    address-space limit (ulimit -v))``."""
    where = "--max-memory" if _BUDGET.get() is not None else f"half {_machine_memory()[1]}"
    return f"the memory budget of {format_bytes(memory_budget_bytes())} ({where})"


_KINDS = ((stat.S_ISDIR, "is a directory, not a file"),
          (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file: save what it carries to a "
                          "file and give that file"),
          (stat.S_ISCHR, "is a device, not a regular file: give a file"),
          (stat.S_ISBLK, "is a block device, not a regular file: give a file"),
          (stat.S_ISSOCK, "is a socket, not a regular file: give a file"))


def _refuse_unless_regular(mode: int) -> None:
    for test, why in _KINDS:
        if test(mode):
            raise InputRefused(why)
    if not stat.S_ISREG(mode):
        raise InputRefused("is not a regular file: give a file")


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading in binary, if it is a regular file (symbolic links followed).

    The file is checked before it is opened (opening a FIFO blocks until a writer comes; opening
    some devices acts on them) and again after (it may have been replaced in between), and it is
    opened non-blocking, so no call here waits on another process.

    Raises:
        InputRefused: no such file, a directory, FIFO, device or socket, or unreadable.
    """
    try:
        _refuse_unless_regular(os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputRefused("no such file") from None
    except NotADirectoryError:
        raise InputRefused("no such file (a part of its path is not a directory)") from None
    except OSError as err:
        raise InputRefused(f"cannot be read ({err.strerror or err})") from None
    try:
        _refuse_unless_regular(os.fstat(fd).st_mode)
    except InputRefused:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_bytes(path: str | Path, limit_bytes: int, too_large: str) -> bytes:
    """The content of the regular file ``path``, at most ``limit_bytes`` of it.

    Args:
        path: the file.
        limit_bytes: the largest file read; a larger one is refused before it is read (by its
            size) or as soon as the read passes the limit (a file that grows, or reports size 0).
        too_large: what follows ``is N B, more than the limit of L B`` in the refusal: why the
            limit is what it is, and the fix.

    Raises:
        InputRefused: as :func:`open_regular`, or the file is larger than ``limit_bytes``.
    """
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit_bytes:
            raise InputRefused(f"is {format_bytes(size)}, more than the limit of "
                               f"{format_bytes(limit_bytes)}: {too_large}")
        try:
            data = f.read(limit_bytes + 1)
        except OSError as err:
            raise InputRefused(f"cannot be read ({err.strerror or err})") from None
    if len(data) > limit_bytes:
        raise InputRefused(f"is more than the limit of {format_bytes(limit_bytes)}: {too_large}")
    return data


_GUNZIP_STEP = 1 << 20
"""Bytes of output decompressed per step (the most held beyond the limit)."""


MAX_GZIP_RATIO = 100
"""Most a gzip'd measurement may inflate, times its compressed size (beyond
:data:`GZIP_RATIO_FLOOR_BYTES`): JSON of measurements compresses 5 to 20 times; a stream of
zeros, the usual gzip bomb, 1,000 times."""

GZIP_RATIO_FLOOR_BYTES = 64 * 2**20
"""Any gzip'd input may inflate to this much, whatever its ratio."""


def gunzip(data: bytes, limit_bytes: int, too_large: str,
           max_ratio: float = MAX_GZIP_RATIO) -> bytearray:
    """The decompressed content of the gzip stream ``data`` (one member or several, RFC 1952),
    decompressed in steps and stopped as soon as it passes ``limit_bytes``, or ``max_ratio``
    times its compressed size once past :data:`GZIP_RATIO_FLOOR_BYTES` (a gzip bomb costs the
    smaller of the two, never its inflated size).

    Args:
        data: the compressed bytes (starting with :data:`GZIP_MAGIC`).
        limit_bytes: the largest decompressed size accepted.
        too_large: what follows ``inflates to more than L B`` in the refusal by size (the fix).
        max_ratio: the largest ratio of decompressed to compressed size accepted.

    Raises:
        InputRefused: not gzip data, a truncated or corrupt stream (a bad CRC-32 or length
            included), or more than either limit once decompressed.
    """
    if not data.startswith(GZIP_MAGIC):
        raise InputRefused("is not gzip-compressed")
    by_ratio = max(GZIP_RATIO_FLOOR_BYTES, int(max_ratio * len(data)))
    if by_ratio < limit_bytes:
        limit_bytes = by_ratio
        too_large = (f"over {max_ratio:.0f} times its compressed size, which no measurement "
                     "inflates to (a gzip bomb?)")
    out = bytearray()
    rest = data
    while rest:
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # a gzip header and trailer
        pending = rest
        try:
            while not inflate.eof:
                # Bounded steps: with no input left, zlib may still hold output (never flush()).
                piece = inflate.decompress(pending, _GUNZIP_STEP)
                pending = inflate.unconsumed_tail
                out += piece
                if len(out) > limit_bytes:
                    raise InputRefused(f"inflates to more than {format_bytes(limit_bytes)}: {too_large}")
                if not piece and not pending:
                    raise InputRefused("is truncated (the gzip stream ends early)")
        except zlib.error as err:
            raise InputRefused(f"is a corrupt gzip stream ({err})") from None
        # As Python's gzip module: zero bytes may pad the end; anything else is another member.
        rest = inflate.unused_data.lstrip(b"\x00")
        if rest and not rest.startswith(GZIP_MAGIC):
            raise InputRefused("is a corrupt gzip stream (bytes after its end are not gzip data)")
    return out  # not copied into bytes: the caller decodes it


_CLASSES = bytes(1 if c == ord('"') else 2 if c in b"[{" else 3 if c in b"]}" else 0
                 for c in range(256))
"""Byte → 1 (a quote), 2 (opens an object or list), 3 (closes one), 0 (anything else)."""
_DEPTH_CHUNK = 1 << 24


def json_depth(data: bytes | bytearray) -> int:
    """The deepest nesting of objects and lists in the JSON text ``data`` (UTF-8; ``{}`` is 1),
    counted without parsing it: brackets inside strings are not counted.

    Escapes are removed first (``\\\\`` pairs, then ``\\"``: in valid JSON a backslash always
    starts a two-character escape, so pairing from the left is exact); every remaining quote
    then opens or closes a string, and a bracket is structural where the count of quotes before
    it is even. Linear time, in chunks of 16 MiB with numpy over the quotes and brackets only.
    For invalid JSON the count is an estimate (the parser then refuses the text anyway).
    """
    import numpy as np

    depth = deepest = 0
    inside = 0  # 1 while a string is open at the end of the previous chunk
    carry = b""
    for start in range(0, len(data), _DEPTH_CHUNK):
        chunk = carry + bytes(data[start:start + _DEPTH_CHUNK])
        # A run of backslashes at the end may pair with the next chunk's first byte.
        stripped = chunk.rstrip(b"\\")
        carry = chunk[len(stripped):]
        if b"\\" in stripped:
            stripped = stripped.replace(b"\\\\", b"").replace(b'\\"', b"")
        classes = np.frombuffer(stripped.translate(_CLASSES), dtype=np.uint8)
        marks = classes[np.flatnonzero(classes)]
        if not marks.size:
            continue
        quotes = np.cumsum(marks == 1, dtype=np.int64) + inside
        outside = (quotes & 1) == 0
        step = (marks == 2).astype(np.int32) - (marks == 3).astype(np.int32)
        levels = np.cumsum(step * outside, dtype=np.int64) + depth
        deepest = max(deepest, int(levels.max()))
        depth = int(levels[-1])
        inside = int(quotes[-1] & 1)
    return deepest


def check_json_depth(data: bytes | bytearray, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse JSON text nested deeper than ``max_depth`` (:func:`json_depth`), before parsing.

    Raises:
        InputRefused: nested deeper than ``max_depth``.
    """
    depth = json_depth(data)
    if depth > max_depth:
        raise InputRefused(f"nests objects and lists {depth} deep, more than the {max_depth} levels "
                           "a measurement file has; give the tool's own output, unedited")


_LINES_CHUNK = 1 << 20
"""Bytes read at a time by :func:`read_lines` and :func:`_count_lines`."""
_NL = b"\n"


def _count_lines(f: BinaryIO, stop: int) -> int:
    """Line ends in ``f`` from where it is, counted in chunks up to ``stop`` (then ``stop``);
    ``f`` is left at its start."""
    count = 0
    while count < stop:
        chunk = f.read(_LINES_CHUNK)
        if not chunk:
            break
        count += chunk.count(b"\n")
    f.seek(0)
    return min(count, stop)


def read_lines(path: str | Path, max_lines: int, max_line_bytes: int, too_many: str,
               max_bytes: int | None = None) -> Iterator[tuple[int, str]]:
    """The lines of the UTF-8 text file ``path``, one at a time with their numbers (from 1),
    without their line ends; at most ``max_lines`` lines of at most ``max_line_bytes`` each.
    Memory is one chunk of 1 MiB and the caller's; a file over the limits is refused by its size
    before reading, or by its count of line ends (counted in chunks first, for a file larger than
    a chunk), or when reading passes a limit.

    Args:
        path: the file (a regular file: :func:`open_regular`).
        max_lines: the most lines read (blank lines and comments count).
        max_line_bytes: the longest line accepted.
        too_many: what follows ``has more than N lines`` / ``is S, more than the limit of L`` in
            a refusal (why the limit is what it is, and the fix).
        max_bytes: refuse a file larger than this by its size before reading (default
            ``max_lines × max_line_bytes``).

    Raises:
        InputRefused: as :func:`open_regular`; larger than ``max_bytes``; more than ``max_lines``
            lines; a line longer than ``max_line_bytes`` or not UTF-8 (named by its number, never
            quoted: the file may be anyone's).
    """
    limit = max_bytes if max_bytes is not None else max_lines * max_line_bytes
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise InputRefused(f"is {format_bytes(size)}, more than the limit of "
                               f"{format_bytes(limit)}: {too_many}")
        try:
            if size > _LINES_CHUNK and _count_lines(f, max_lines + 1) > max_lines:
                raise InputRefused(f"has more than {max_lines:,} lines: {too_many}")
            done = 0  # lines yielded
            carry = b""
            while True:
                chunk = f.read(_LINES_CHUNK)
                block = carry + chunk
                cut = block.rfind(b"\n") + 1 if chunk else len(block)
                block, carry = block[:cut], block[cut:]  # whole lines; the unfinished last one
                if len(carry) > max_line_bytes + 1:
                    raise InputRefused(f"line {done + block.count(_NL) + 1} is longer than "
                                       f"{max_line_bytes} bytes (is this a text file of the "
                                       "expected format?)")
                try:
                    text = block.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise InputRefused(f"line {done + block.count(_NL, 0, err.start) + 1} is not "
                                       "UTF-8 text (is this a text file of the expected format?)") from None
                lines = text.split("\n")
                if chunk or not lines[-1]:
                    lines.pop()  # after the last line end: nothing, or the carried line
                if done + len(lines) > max_lines:
                    raise InputRefused(f"has more than {max_lines:,} lines: {too_many}")
                if "\r" in text:
                    lines = [line.rstrip("\r") for line in lines]
                longest = max(map(len, lines), default=0)
                if longest > max_line_bytes:
                    first = next(i for i, line in enumerate(lines) if len(line) > max_line_bytes)
                    raise InputRefused(f"line {done + first + 1} is longer than {max_line_bytes} "
                                       "characters (is this a text file of the expected format?)")
                yield from zip(range(done + 1, done + len(lines) + 1), lines)
                done += len(lines)
                if not chunk:
                    return
        except OSError as err:
            raise InputRefused(f"cannot be read ({err.strerror or err})") from None
