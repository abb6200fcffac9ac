"""The report's forked drawing (ccarena.report.forked): a child computes the value where the
process may fork, the parent computes it when the child fails or dies, and nothing forks while
another thread runs."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from ccarena.report import forked
from ccarena.report.forked import ForkedCall, can_fork


def _linux_with_two_cores() -> bool:
    return sys.platform.startswith("linux") and len(os.sched_getaffinity(0)) >= 2


@pytest.fixture
def alone(monkeypatch):
    """The forking tests run inside the whole suite's process, where an earlier test or a library
    may have left an idle daemon thread; ``can_fork`` would then (rightly) refuse and these tests
    would check nothing. Their functions take no lock, so they fork as if this thread were alone;
    ``test_no_fork_while_another_thread_runs`` checks the real rule."""
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)


def needs_fork(test):
    """A test of a forked child: skipped where no child can fork, run as if this thread were alone."""
    skip = pytest.mark.skipif(not _linux_with_two_cores(), reason="forking needs Linux and two cores")
    return skip(pytest.mark.usefixtures("alone")(test))


@needs_fork
def test_the_value_comes_from_a_child_process_and_again_on_a_second_call():
    parent = os.getpid()
    call = ForkedCall(lambda: os.getpid())
    assert call.forked
    child = call.result()
    assert child != parent, "the function ran in the parent, not in a forked child"
    assert call.result() == child, "a second result() must return the same value, not run fn again"


@needs_fork
def test_a_function_that_fails_in_the_child_is_run_in_the_parent_with_its_own_error():
    calls_here = []

    def fn():
        if os.getpid() == parent:
            calls_here.append(1)
        raise ValueError("the figure's own error")

    parent = os.getpid()
    call = ForkedCall(fn)
    with pytest.raises(ValueError, match="the figure's own error"):
        call.result()
    assert calls_here == [1], "after the child failed, the parent must run fn itself once"


@needs_fork
def test_a_child_that_dies_before_answering_leaves_the_value_to_the_parent():
    parent = os.getpid()
    call = ForkedCall(lambda: os.getpid() if os.getpid() == parent else os._exit(3))
    assert call.result() == parent


@needs_fork
def test_an_unpicklable_value_is_computed_in_the_parent():
    parent = os.getpid()
    call = ForkedCall(lambda: (lambda: None) if os.getpid() != parent else "here")
    assert call.result() == "here"


def test_no_fork_while_another_thread_runs():
    release = threading.Event()
    other = threading.Thread(target=release.wait, daemon=True)
    other.start()
    try:
        assert not can_fork()
        call = ForkedCall(lambda: os.getpid())
        assert not call.forked
        assert call.result() == os.getpid(), "without a child the value is computed here"
    finally:
        release.set()
        other.join()


def test_no_fork_on_one_core(monkeypatch):
    monkeypatch.setattr(forked.os, "sched_getaffinity", lambda pid: {0})
    assert not can_fork()
    assert not ForkedCall(lambda: 1).forked


@needs_fork
def test_stop_ends_a_child_that_is_still_working():
    call = ForkedCall(lambda: threading.Event().wait(60))
    call.stop()
    assert not call.forked
