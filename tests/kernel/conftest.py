"""The ``tag`` fixture of the kernel backend's tests (helpers are in kernelutil.py).

Every test gets a unique run tag (``$CCARENA_RUN_TAG``), so everything it creates is named
``cca-<tag>…``; the finalizer asserts that no namespace and no process of that tag is left — after
a normal end, an error, a SIGTERM, or a SIGKILL followed by ``ccarena doctor --cleanup``.
"""

from __future__ import annotations

import secrets
import time

import pytest
from kernelutil import leftovers


@pytest.fixture
def tag(monkeypatch: pytest.MonkeyPatch) -> str:
    """A unique run tag for this test; afterwards nothing of it may remain."""
    value = "t" + secrets.token_hex(4)
    monkeypatch.setenv("CCARENA_RUN_TAG", value)
    yield value
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline and any(leftovers(value)):
        time.sleep(0.1)
    ns, procs = leftovers(value)
    assert not ns, f"namespaces left behind: {ns}"
    assert not procs, f"processes left behind: {procs}"
