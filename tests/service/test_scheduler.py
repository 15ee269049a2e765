"""The one recompute/sweep scheduler, without Qt: revisions, newest-wins, stale drop, cancel,
errors as lines, and the synchronous switch. Threaded cases hold the worker on an Event, so no
test depends on the machine's speed."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from studio.core.errors import StudioError
from studio.service.scheduler import Job, Response, Scheduler, SyncRunner, ThreadRunner

WAIT_S = 30  # a safety net only: every test releases what it holds


def _collect():
    got: list[Response] = []
    lock = threading.Lock()

    def on_response(r: Response) -> None:
        with lock:
            got.append(r)

    return got, on_response


def test_sync_mode_answers_inside_submit_in_order():
    got, on = _collect()
    s = Scheduler(lambda x, job: x * 2, on_response=on)
    assert isinstance(s.runner, SyncRunner) and s.revision == -1
    s.submit(1)
    assert [(r.result, r.revision, r.ok) for r in got] == [(2, 0, True)]
    s.submit(5)
    s.submit(7, revision=9)  # a caller's own revision count (the document's)
    assert [(r.result, r.revision) for r in got] == [(2, 0), (10, 1), (14, 9)]
    assert s.revision == 9 and s.delivered == 3 and s.dropped == 0 and not s.running


def test_revisions_only_go_forward():
    s = Scheduler(lambda x, job: x)
    s.submit(0, revision=4)
    assert s.supersede(4) == 4  # the same inputs again: nothing superseded
    with pytest.raises(ValueError, match="revision 3 is older than the current 4"):
        s.supersede(3)


def test_a_newer_request_supersedes_the_one_in_flight_and_its_result_is_dropped():
    entered, gate = threading.Event(), threading.Event()
    calls: list[str] = []

    def work(name: str, job: Job) -> str:
        calls.append(name)
        if name == "old":
            entered.set()
            assert gate.wait(WAIT_S)
        return f"result of {name}"

    got, on = _collect()
    runner = ThreadRunner(max_workers=2)
    s = Scheduler(work, runner=runner, on_response=on)
    old = s.submit("old")
    assert entered.wait(WAIT_S)
    new = s.submit("new")
    assert old.cancelled and not new.cancelled  # newest wins
    assert new.finished.wait(WAIT_S)
    gate.set()
    assert runner.wait(WAIT_S)
    assert [(r.result, r.revision) for r in got] == [("result of new", 1)]
    assert s.dropped == 1 and s.delivered == 1 and sorted(calls) == ["new", "old"]
    runner.shutdown()


def test_supersede_drops_the_result_of_old_inputs_before_the_next_request():
    """A debounce is pending: the inputs changed, no new request yet; the old answer is stale."""
    entered, gate = threading.Event(), threading.Event()

    def work(x: int, job: Job) -> int:
        entered.set()
        assert gate.wait(WAIT_S)
        return x

    got, on = _collect()
    runner = ThreadRunner()
    s = Scheduler(work, runner=runner, on_response=on)
    job = s.submit(1)
    assert entered.wait(WAIT_S) and s.running
    assert s.supersede() == 1
    assert job.cancelled and not s.running  # nothing current is in flight
    gate.set()
    assert runner.wait(WAIT_S)
    assert got == [] and s.dropped == 1
    runner.shutdown()


def test_cancel_stops_the_work_at_its_next_step_and_is_delivered():
    at_first, gate = threading.Event(), threading.Event()
    answers: list[bool] = []

    def work(steps: int, job: Job) -> int:
        for k in range(steps):
            if k == 1:
                at_first.set()
                assert gate.wait(WAIT_S)
            go_on = job.progress(k / steps)
            answers.append(go_on)
            if not go_on:
                return -1
        return steps

    got, on = _collect()
    progress: list[tuple[float, int]] = []
    runner = ThreadRunner()
    s = Scheduler(
        work, runner=runner, on_response=on, on_progress=lambda f, rev: progress.append((f, rev))
    )
    job = s.submit(100)
    assert at_first.wait(WAIT_S)  # certainly running, held before its second step
    assert s.cancel()
    gate.set()
    assert job.finished.wait(WAIT_S) and runner.wait(WAIT_S)
    assert answers == [True, False]  # stopped at the next step, not after 100
    assert progress == [(0.0, 0)]
    (r,) = got
    assert r.cancelled and r.result is None and r.error == "cancelled" and not r.ok
    assert not s.cancel()  # nothing in flight any more
    runner.shutdown()


def test_a_job_cancelled_while_queued_never_runs():
    entered, gate = threading.Event(), threading.Event()
    ran: list[int] = []

    def work(x: int, job: Job) -> int:
        ran.append(x)
        if x == 1:
            entered.set()
            assert gate.wait(WAIT_S)
        return x

    got, on = _collect()
    runner = ThreadRunner(max_workers=1)
    s = Scheduler(work, runner=runner, on_response=on)
    s.submit(1)
    assert entered.wait(WAIT_S)
    s.submit(2)  # queued behind 1 ...
    s.submit(3)  # ... and superseded before it started
    gate.set()
    assert runner.wait(WAIT_S)
    assert ran == [1, 3]
    assert [r.result for r in got] == [3] and s.dropped == 2
    runner.shutdown()


@dataclass(frozen=True)
class _Partial:
    cancelled: bool


def test_errors_become_one_line_and_never_escape():
    got, on = _collect()

    def work(kind: str, job: Job) -> object:
        if kind == "studio":
            raise StudioError("layout TP8×PP4 needs 32 GPUs; the cluster has 16")
        if kind == "bug":
            raise KeyError("tp")
        return _Partial(cancelled=kind == "partial")

    s = Scheduler(work, on_response=on, name="the sweep")
    for kind in ("studio", "bug", "partial", "whole"):
        s.submit(kind)
    studio, bug, partial, whole = got
    assert (
        studio.error == "layout TP8×PP4 needs 32 GPUs; the cluster has 16" and studio.result is None
    )
    assert bug.error == "the sweep failed: KeyError: 'tp'" and not bug.cancelled
    assert partial.cancelled and partial.result is None  # a result that says it was cut short
    assert whole.ok and whole.result == _Partial(False)


def test_a_synchronous_job_can_overtake_a_threaded_one():
    """``submit(..., runner=SyncRunner())``: compute now on this thread (a snapshot); the threaded
    job of the same revision still in flight is superseded."""
    entered, gate = threading.Event(), threading.Event()

    def work(x: str, job: Job) -> str:
        if threading.current_thread() is not threading.main_thread():
            entered.set()
            assert gate.wait(WAIT_S)
        return x

    got, on = _collect()
    runner = ThreadRunner()
    s = Scheduler(work, runner=runner, on_response=on)
    s.submit("threaded", revision=3)
    assert entered.wait(WAIT_S)
    s.submit("now", revision=3, runner=SyncRunner())
    assert [r.result for r in got] == ["now"]
    gate.set()
    assert runner.wait(WAIT_S)
    assert [r.result for r in got] == ["now"] and s.dropped == 1
    runner.shutdown()
