"""Guarding an experiment directory against hostile file systems and concurrent writers.

* :func:`check_tree` refuses symbolic links inside the results tree (``runs/``, ``.tmp/``,
  ``failed/`` and every run directory), so results never land outside the directory the user named;
  the experiment directory itself may be a link the user made, but not a dangling one.
* :class:`StoreError` turns an ``OSError`` met while writing (read-only file system, no space,
  permission, quota) into one line that names the directory and says what is kept and what to do.
* :func:`experiment_lock` takes an advisory lock (``fcntl``, through the ``filelock`` library) on
  the directory for the whole of a ``ccarena run``, and says who holds it when it is taken.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ccarena.errors import UserError, option

LOCK_NAME = ".lock"
"""The lock file in an experiment directory (the holder's pid, host and start time beside it)."""
OWNER_NAME = ".lock-owner.json"

_WHY = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}


class StoreError(UserError):
    """The results directory cannot be written; finished runs stay as they are."""

    @classmethod
    def from_os_error(cls, root: Path, err: OSError) -> "StoreError":
        """One line for ``err`` met while writing under ``root``: what failed and what to do."""
        why = _WHY.get(err.errno or 0, err.strerror or str(err))
        fix = ("free some space" if err.errno in (errno.ENOSPC, errno.EDQUOT)
               else f"choose a writable directory with {option('out')}")
        return cls(f"{root}: cannot write results ({why}); every finished run is kept — "
                   f"{fix} and run the same command again")


def check_tree(root: Path) -> None:
    """Refuse a dangling ``root`` and symbolic links inside the results tree.

    Raises:
        UserError: ``root`` is a link to nothing, or ``runs/``, ``.tmp/``, ``failed/`` or a run
            directory is a symbolic link.
    """
    if root.is_symlink() and not root.exists():
        raise UserError(f"{root}: is a symbolic link to {os.readlink(root)}, which does not exist; "
                        f"create the target or choose another directory with {option('out')}")
    if not root.is_dir():
        return
    for sub in ("runs", ".tmp", "failed"):
        path = root / sub
        if path.is_symlink():
            raise UserError(f"{path}: is a symbolic link (to {os.readlink(path)}); results stay inside "
                            f"{root}: replace the link with a directory")
    runs = root / "runs"
    if runs.is_dir():
        for entry in os.scandir(runs):
            if entry.is_symlink():
                raise UserError(f"{runs / entry.name}: is a symbolic link; results stay inside "
                                f"{root}: remove the link")


@contextmanager
def experiment_lock(root: Path) -> Iterator[None]:
    """Hold the experiment directory's lock while the block runs.

    Raises:
        UserError: another process holds the lock (its pid, host and start time are named).
        StoreError: the lock file cannot be created (read-only file system, no space).
    """
    from filelock import FileLock, Timeout  # loaded here: it brings asyncio (~30 ms)

    lock = FileLock(str(root / LOCK_NAME))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise UserError(f"{root}: another ccarena is writing this experiment ({_owner(root)}); "
                        f"wait for it to finish, or write to another directory with {option('out')}") from None
    except OSError as err:
        raise StoreError.from_os_error(root, err) from None
    try:
        try:
            (root / OWNER_NAME).write_text(json.dumps(
                {"pid": os.getpid(), "host": socket.gethostname(),
                 "started": time.strftime("%Y-%m-%d %H:%M:%S")}))
        except OSError:
            pass  # the lock holds without the note of who holds it
        yield
    finally:
        lock.release()


def _owner(root: Path) -> str:
    try:
        owner = json.loads((root / OWNER_NAME).read_text())
        return f"pid {owner['pid']} on {owner['host']}, since {owner['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"
