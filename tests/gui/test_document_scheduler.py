"""The Qt binding of the scheduler (studio.gui.worker.ScheduledWork): debounce, answers on the GUI
thread, progress of the current job only, stale answers dropped. Workers are held on events and the
tests wait on signals, so nothing depends on the machine's speed."""

from __future__ import annotations

import threading

from PySide6.QtCore import QCoreApplication, QThread

from studio.gui.worker import ScheduledWork

WAIT_MS = 30_000


def test_debounce_starts_one_job_with_the_payload_of_that_moment(qtbot):
    state = {"value": 1}
    calls = []

    def work(payload, job):
        calls.append(payload)
        return payload * 10

    w = ScheduledWork(work, lambda: state["value"], debounce_ms=5)
    for v in (2, 3, 4):  # three edits in a row
        state["value"] = v
        w.schedule()
    assert w.pending and calls == []
    with qtbot.waitSignal(w.responded, timeout=WAIT_MS) as sig:
        pass
    r = sig.args[0]
    assert (r.result, r.revision) == (40, 2) and calls == [4]  # one job, for the last revision
    assert w.wait_idle()


def test_answers_and_progress_arrive_on_the_gui_thread(qtbot):
    gui = QCoreApplication.instance().thread()
    where = []

    def work(payload, job):
        where.append(QThread.currentThread() is gui)
        job.progress(0.5)
        return "done"

    w = ScheduledWork(work, lambda: None)
    seen = []
    w.progressed.connect(
        lambda f, rev: seen.append(("progress", f, rev, QThread.currentThread() is gui))
    )
    w.responded.connect(
        lambda r: seen.append(("done", r.result, r.revision, QThread.currentThread() is gui))
    )
    with qtbot.waitSignal(w.responded, timeout=WAIT_MS):
        w.start()
    assert where == [False]  # the work ran on the pool
    assert seen == [("progress", 0.5, 0, True), ("done", "done", 0, True)]


def test_schedule_drops_the_answer_of_the_job_in_flight(qtbot):
    entered, gate = threading.Event(), threading.Event()
    state = {"value": "old"}

    def work(payload, job):
        if payload == "old":
            entered.set()
            assert gate.wait(30)
            job.progress(1.0)  # a late progress of a superseded job: not shown
        return payload

    w = ScheduledWork(work, lambda: state["value"], debounce_ms=1, max_threads=2)
    progress = []
    w.progressed.connect(lambda f, rev: progress.append(rev))
    answers = []
    w.responded.connect(answers.append)
    old = w.start()
    assert entered.wait(30) and w.running
    with qtbot.waitSignal(w.responded, timeout=WAIT_MS):
        state["value"] = "new"
        w.schedule()
        assert old.cancelled and not w.running  # dropped at once, before the debounce fires
        gate.set()
    qtbot.waitUntil(lambda: w.scheduler.dropped == 1, timeout=WAIT_MS)
    assert [(r.result, r.revision) for r in answers] == [("new", 1)]
    assert progress == []


def test_run_now_answers_before_it_returns(qtbot):
    w = ScheduledWork(lambda p, job: p + 1, lambda: 41, debounce_ms=10_000)
    got = []
    w.responded.connect(got.append)
    w.schedule()
    job = w.run_now()
    assert [r.result for r in got] == [42] and job.finished.is_set() and not w.pending


def test_stop_cancels_the_job_and_its_cancellation_is_delivered(qtbot):
    entered, gate = threading.Event(), threading.Event()
    answers = []

    def work(payload, job):
        entered.set()
        assert gate.wait(30)
        return None if not job.progress(0.1) else "finished"

    w = ScheduledWork(work, lambda: 0)
    w.responded.connect(answers.append)
    w.start()
    assert entered.wait(30)
    with qtbot.waitSignal(w.responded, timeout=WAIT_MS):
        assert w.stop()
        gate.set()
    (r,) = answers
    assert r.cancelled and r.result is None
    assert not w.stop()  # nothing in flight any more


def test_progress_reaches_the_gui_thread_at_most_once_per_interval(monkeypatch):
    """A worker reporting every layout would cost the GUI thread a turn at the interpreter per
    report; the task passes its first report, then one per ``PROGRESS_INTERVAL_S``, and always the
    completion. The clock is the test's, so the outcome does not depend on the machine's speed."""
    import studio.gui.worker as worker
    from studio.service.scheduler import Job, Request

    now = [100.0]
    monkeypatch.setattr(worker.time, "monotonic", lambda: now[0])
    job = Job(Request(3, None, 1), lambda payload, job: None, "the work")
    relay = worker._Relay()
    seen = []
    relay.progress.connect(lambda f, rev: seen.append((f, rev)))  # same thread: a direct call
    worker._Task(job, relay)
    step = worker.PROGRESS_INTERVAL_S * 0.3  # off the interval's multiples: no float ties
    for k in range(10):  # ten reports, 0.3 intervals apart: every fourth passes
        job.progress(k / 10)
        now[0] += step
    job.progress(1.0)
    assert seen == [(0.0, 3), (0.4, 3), (0.8, 3), (1.0, 3)]


def test_the_window_process_switches_threads_more_often(monkeypatch):
    """``layout-studio`` lowers the interpreter's switch interval once its window is shown, so the
    GUI thread is not kept waiting by a sweeping worker (benchmarks/explorer.py). The window and the
    event loop are stand-ins: this checks what ``run`` sets, not Qt."""
    import sys

    import studio.gui.window.app as app_module

    class Stub:
        def show(self):
            shown.append(sys.getswitchinterval())

        def exec(self):
            return 0

    shown: list[float] = []
    before = sys.getswitchinterval()
    monkeypatch.setattr(app_module, "application", Stub)
    monkeypatch.setattr(app_module, "build_window", lambda **_kw: Stub())
    monkeypatch.setattr(app_module, "settle_memory", lambda: None)
    monkeypatch.setattr(app_module, "_exit_after_env", lambda app, win: None)
    monkeypatch.setattr(app_module.GuiExceptHook, "install", lambda self: self)
    monkeypatch.setattr(app_module.GuiExceptHook, "uninstall", lambda self: None)
    monkeypatch.setenv("LAYOUT_STUDIO_EXIT_AFTER_MS", "1")  # no recovery offer
    try:
        assert app_module.run() == 0
        assert shown == [before]  # start-up runs at the interval it found
        assert sys.getswitchinterval() == app_module.SWITCH_INTERVAL_S < 0.005
    finally:
        sys.setswitchinterval(before)
