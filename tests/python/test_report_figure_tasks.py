"""Figure tasks shared between the report's process and its workers
(:class:`ccarena.report.figures._Stealable`): a task a worker has not started is drawn by
whichever process claims it first, once."""

from __future__ import annotations

from ccarena.report import figures


class _Queued:
    """A future the pool has put in its workers' queue: it can no longer be cancelled."""

    def __init__(self, value: object = None) -> None:
        self.value = value

    def cancel(self) -> bool:
        return False

    def result(self) -> object:
        return self.value


def _double(x: int, slots: object) -> int:
    assert slots is None or isinstance(slots, dict)
    return 2 * x


def test_a_queued_task_is_drawn_here_when_this_process_claims_it_first(tmp_path):
    task = figures._Stealable(_Queued("the worker's"), _double, (21,), tmp_path / "0")
    task.steal()
    assert task.taken and task.result() == 42
    # The worker then meets the task and passes.
    assert figures._drawn_in_worker(_double, (5,), {}, [], str(tmp_path / "0")) is None


def test_a_task_the_worker_claimed_is_left_to_it(tmp_path):
    assert figures._drawn_in_worker(_double, (5,), {}, [], str(tmp_path / "1")) == 10
    task = figures._Stealable(_Queued("the worker's"), _double, (5,), tmp_path / "1")
    task.steal()
    assert not task.taken and task.result() == "the worker's"


def test_a_claim_is_granted_once_and_never_without_its_directory(tmp_path):
    assert figures.claim(tmp_path / "2")
    assert not figures.claim(tmp_path / "2")
    assert not figures.claim(tmp_path / "gone" / "3")
