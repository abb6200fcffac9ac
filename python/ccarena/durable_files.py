"""Durable file writes: a temporary file in the same directory, fsync, rename (atomic on one file
system), so a reader never sees half a file. Used by the results store (:mod:`ccarena.store.file_formats`)
and by the link relay's process for its stats (:mod:`ccarena.backends.kernel.relay_main`)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


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
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename.

    Raises:
        OSError: the directory or the file cannot be written (the temporary file is removed).
    """
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
