"""Where an experiment directory is: a local path or an ``fsspec`` URL (docs/distributed.md).

A run directory is made complete by one ``rename`` (:class:`ccarena.store.ExperimentStore`), so
the results must live on a file system with an atomic rename that every worker sees at the same
path: a local disk for one machine, a shared POSIX file system (NFS, Lustre, GPFS, BeeGFS) mounted
alike on every node for a cluster. Of fsspec's URLs that means ``file://`` (and its alias
``local://``); object stores (``s3://``, ``gs://``, ``az://``) and ``memory://`` have no atomic
rename of a directory, or are not shared between processes, and are refused with one line rather
than written half-safely.
"""

from __future__ import annotations

import re
from pathlib import Path

from ccarena.errors import UserError

LOCAL_PROTOCOLS = ("file", "local")
"""fsspec protocols the store accepts: both name the local (or a shared, mounted) file system."""

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def is_url(text: str) -> bool:
    """True when ``text`` starts with ``scheme://``."""
    return _URL.match(text) is not None


def results_path(text: str | Path) -> Path:
    """The local path of a results location given as a path or an fsspec URL.

    Raises:
        UserError: a URL whose file system has no atomic rename shared by every worker.
    """
    if isinstance(text, Path) or not is_url(text):
        return Path(text)
    from fsspec.utils import get_protocol, stringify_path

    url = stringify_path(text)
    protocol = get_protocol(url)
    if protocol not in LOCAL_PROTOCOLS:
        raise UserError(f"{text}: results must be on a file system with an atomic rename that every "
                        "worker mounts at the same path: a local path or a file:// URL (a shared "
                        f"POSIX file system such as NFS or Lustre); {protocol}:// is not supported")
    from fsspec.implementations.local import LocalFileSystem

    return Path(LocalFileSystem._strip_protocol(url))
