"""The Qt binding of :mod:`studio.service.scheduler`: jobs on a thread pool, answers on the GUI thread.

:class:`JobRunner` is a scheduler runner that runs each job as a :class:`QRunnable` and hands its
response (and progress) back through queued signals, so the scheduler's stale-result check and the
owner's slots run on the GUI thread. :class:`ScheduledWork` wraps a scheduler with the debounce the
views need: :meth:`ScheduledWork.schedule` marks the inputs as changed at once (a result of the old
inputs is dropped) and submits the current payload when the edits pause.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal
from shiboken6 import isValid

from studio.core.project import Project
from studio.service.scheduler import Job, Response, Scheduler, SyncRunner, Work

Evaluator = Callable[[Project], object]

#: Least time between two progress signals of one job (its first and its completion always go).
#: Each signal costs the GUI thread a turn at the interpreter, which a busy worker hands over only
#: once per switch interval (:data:`studio.gui.window.app.SWITCH_INTERVAL_S`). A 512-GPU sweep that
#: reported every layout (50 signals in 0.3 s) left a click handled 38–39 ms late; at most one
#: signal per 50 ms, 21–28 ms late (``benchmarks/explorer.py``). Twenty updates a second still move
#: the bar smoothly.
PROGRESS_INTERVAL_S = 0.05


class _Relay(QObject):
    """Carries one job's progress and response to the GUI thread (queued signals)."""

    progress = Signal(float, int)  # fraction, revision
    done = Signal(object)  # Response


class _Task(QRunnable):
    """Runs one :class:`Job`; when its relay is gone (the window closed), the job cancels itself
    and nothing is emitted: there is no one left to tell."""

    def __init__(self, job: Job, relay: _Relay) -> None:
        super().__init__()
        self.job = job
        self.relay = relay
        self.setAutoDelete(False)
        self._last_report = -float("inf")
        job.report = self._report

    def _report(self, fraction: float) -> None:
        """Hand ``fraction`` to the GUI thread, at most once per :data:`PROGRESS_INTERVAL_S`."""
        now = time.monotonic()
        if fraction < 1.0 and now - self._last_report < PROGRESS_INTERVAL_S:
            return
        self._last_report = now
        self._emit("progress", fraction, self.job.revision)

    def _emit(self, name: str, *args: object) -> bool:
        relay = self.relay
        try:
            if relay is not None and isValid(relay):
                getattr(relay, name).emit(*args)
                return True
        except RuntimeError:
            pass  # deleted between the check and the emit ("Signal source has been deleted")
        self.job.cancel()
        return False

    def run(self) -> None:
        self._emit("done", self.job.run())


class JobRunner(QObject):
    """Runs scheduler jobs on a :class:`QThreadPool`; responses reach ``done`` on this object's
    (the GUI) thread.

    Signals
    -------
    progressed(float, int)
        A job's progress fraction and revision (every job's; the owner checks the revision).
    """

    progressed = Signal(float, int)

    def __init__(self, max_threads: int = 1, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(max_threads)
        self._tasks: set[_Task] = set()  # keep the Python wrappers alive until they report

    def start(self, job: Job, done: Callable[[Response], object]) -> None:
        relay = _Relay(self)
        task = _Task(job, relay)
        self._tasks.add(task)

        def finished(response: Response) -> None:
            self._tasks.discard(task)
            relay.deleteLater()
            done(response)

        relay.progress.connect(self.progressed)
        relay.done.connect(finished)
        self.pool.start(task)

    def wait(self, timeout_s: float | None = None) -> bool:
        return self.pool.waitForDone(-1 if timeout_s is None else int(timeout_s * 1000))


class ScheduledWork(QObject):
    """A :class:`Scheduler` for one view: debounced, threaded (or synchronous), Qt signals out.

    Parameters
    ----------
    work:
        ``work(payload, job) -> result`` (see :mod:`studio.service.scheduler`).
    payload:
        Returns the current frozen payload (called when the debounce fires).
    threaded:
        Run jobs on a worker thread; ``False`` runs them synchronously when they start (tests).
    debounce_ms:
        Quiet time after :meth:`schedule` before the job starts.
    name:
        Names the work in error lines.

    Signals
    -------
    responded(object)
        A current :class:`Response` (result, error or the cancellation of the newest job); never
        a stale one.
    progressed(float, int)
        Progress fraction of the current job and its revision.
    started(int)
        A job starts for this revision (emitted before it runs, so a synchronous job's response
        comes after it).
    """

    responded = Signal(object)
    progressed = Signal(float, int)
    started = Signal(int)

    def __init__(
        self,
        work: Work,
        payload: Callable[[], object],
        *,
        threaded: bool = True,
        debounce_ms: int = 0,
        max_threads: int = 1,
        name: str = "the work",
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._payload = payload
        self.threaded = threaded
        self.runner = JobRunner(max_threads, self)
        self.runner.progressed.connect(self._on_progress)
        self.scheduler: Scheduler = Scheduler(
            work,
            runner=self.runner if threaded else SyncRunner(),
            on_response=self.responded.emit,
            on_progress=self._on_progress,
            name=name,
        )
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(debounce_ms)
        # the debounce starts the revision schedule() already moved to, not a further one
        self.timer.timeout.connect(lambda: self.start(self.scheduler.revision))

    @property
    def revision(self) -> int:
        return self.scheduler.revision

    @property
    def running(self) -> bool:
        """A job for the current inputs is in flight."""
        return self.scheduler.running

    @property
    def pending(self) -> bool:
        """The debounce is waiting to start a job."""
        return self.timer.isActive()

    def schedule(self, revision: int | None = None) -> int:
        """The inputs changed: drop what is computed for older ones now, start a job for the
        current payload after the debounce (restarted on every call). Returns the revision."""
        rev = self.scheduler.supersede(revision)
        self.timer.start()
        return rev

    def start(self, revision: int | None = None) -> Job:
        """Start a job for the current payload now (a new revision unless ``revision`` is given)."""
        self.timer.stop()
        payload = self._payload()
        rev = self.scheduler.supersede(revision)
        self.started.emit(rev)
        return self.scheduler.submit(payload, rev)

    def run_now(self, revision: int | None = None) -> Job:
        """Compute the current payload on this thread, now, and deliver it (snapshots, benchmarks)."""
        self.timer.stop()
        payload = self._payload()
        rev = self.scheduler.supersede(revision)
        self.started.emit(rev)
        return self.scheduler.submit(payload, rev, runner=SyncRunner())

    def stop(self) -> bool:
        """Stop the pending debounce and cancel the job in flight (its cancellation is then
        delivered). Returns whether a job was cancelled."""
        self.timer.stop()
        return self.scheduler.cancel()

    def cancel(self) -> bool:
        """Cancel the job in flight; ``responded`` then carries its cancellation."""
        return self.scheduler.cancel()

    def wait_idle(self, msecs: int = 30_000) -> bool:
        """Block until the jobs started so far finished (tests, shutdown); their responses are
        delivered when the event loop runs next."""
        return self.runner.wait(msecs / 1000)

    def _on_progress(self, fraction: float, revision: int) -> None:
        job = self.scheduler.job
        if job is not None and revision == self.scheduler.revision and not job.cancelled:
            self.progressed.emit(fraction, revision)


def evaluate_work(evaluate: Evaluator) -> Work:
    """``work(project, job)`` of a ``Project -> result`` function (it is not cancellable)."""
    return lambda project, _job: evaluate(project)


def default_evaluator() -> Evaluator:
    """``studio.engine.evaluate``."""
    from studio.engine import evaluate

    return evaluate
