"""One recompute/sweep scheduler: a frozen request in, a response with its revision out.

Every background computation of the application (the plan recompute on every edit, the Explorer's
sweep, the load curve) follows the same rules, kept here once and without Qt:

* a **request** is a frozen payload (an immutable :class:`~studio.core.project.Project`) and the
  **revision** of the inputs it was made from; the work function cannot see later edits;
* a newer request **supersedes** older ones: the job in flight is cancelled (work that polls
  :meth:`Job.progress` stops at its next step) and its result is **dropped** when it arrives;
* :meth:`Scheduler.supersede` marks the inputs as changed *before* the next request is made (a
  debounce is pending), so a result of the old inputs finishing meanwhile is dropped as well;
* a **response** carries the result, or the error as one line (an engine bug never escapes the
  worker), or the fact that the job was cancelled;
* the **runner** decides where jobs run: :class:`SyncRunner` (the synchronous switch for tests and
  benchmarks: the job runs inside :meth:`Scheduler.submit`), :class:`ThreadRunner` (a plain Python
  worker thread, for headless use) or the Qt binding :class:`studio.gui.worker.JobRunner`, which
  hands responses back on the GUI thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from studio.core.errors import StudioError

P = TypeVar("P")
R = TypeVar("R")

#: ``work(payload, job) -> result``; long work calls ``job.progress(fraction)`` and stops when it
#: returns False.
Work = Callable[[Any, "Job"], Any]


@dataclass(frozen=True)
class Request(Generic[P]):
    """What one job computes: a frozen payload made at ``revision`` of the inputs."""

    revision: int
    payload: P
    ticket: int  # the scheduler's running count of submitted jobs (newest wins)


@dataclass(frozen=True)
class Response(Generic[R]):
    """What one job produced.

    Attributes
    ----------
    revision:
        The revision of the request.
    result:
        The work function's value; ``None`` when it failed or was cancelled.
    error:
        ``""`` on success, else one line saying why it failed.
    cancelled:
        The job was cancelled before it finished (its partial result is not kept).
    """

    revision: int
    result: R | None
    error: str = ""
    cancelled: bool = False
    ticket: int = 0

    @property
    def ok(self) -> bool:
        """True when the work finished and gave a result."""
        return not self.error and not self.cancelled


class Job:
    """One request being worked on: its cancel flag, its progress and its end.

    ``cancel()`` may be called from any thread. The work function sees it through
    :meth:`progress` (returns False) or :attr:`cancelled`.
    """

    def __init__(self, request: Request, work: Work, name: str) -> None:
        self.request = request
        self._work = work
        self._name = name
        self._cancel = threading.Event()
        self.finished = threading.Event()
        #: Called with each progress fraction (in the worker's thread); set by the runner.
        self.report: Callable[[float], object] | None = None

    @property
    def revision(self) -> int:
        return self.request.revision

    def cancel(self) -> None:
        """Ask the work to stop at its next :meth:`progress` call."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def progress(self, fraction: float) -> bool:
        """Report ``fraction`` done (0…1); False when the job is cancelled and must stop."""
        if self._cancel.is_set():
            return False
        if self.report is not None:
            self.report(float(fraction))
        return not self._cancel.is_set()

    def run(self) -> Response:
        """Do the work; never raises. A :class:`StudioError` becomes its message, any other
        exception a line naming it ("the sweep failed: KeyError: 'x'")."""
        req = self.request
        try:
            if self.cancelled:  # superseded before it started: skip the work
                return Response(req.revision, None, "cancelled", True, req.ticket)
            result = self._work(req.payload, self)
            if self.cancelled or getattr(result, "cancelled", False) is True:
                return Response(req.revision, None, "cancelled", True, req.ticket)
            return Response(req.revision, result, "", False, req.ticket)
        except StudioError as exc:
            return Response(req.revision, None, exc.message, False, req.ticket)
        except Exception as exc:  # noqa: BLE001 - a bug in the work must not take the caller down
            return Response(
                req.revision,
                None,
                f"{self._name} failed: {type(exc).__name__}: {exc}",
                False,
                req.ticket,
            )
        finally:
            self.finished.set()


class Runner(Protocol):
    """Where jobs run. ``start`` runs ``job`` and calls ``done(response)`` once, on the thread the
    scheduler's owner expects responses on."""

    def start(self, job: Job, done: Callable[[Response], object]) -> None: ...

    def wait(self, timeout_s: float | None = None) -> bool: ...


class SyncRunner:
    """The synchronous switch: the job runs inside :meth:`Scheduler.submit` (tests, benchmarks)."""

    def start(self, job: Job, done: Callable[[Response], object]) -> None:
        done(job.run())

    def wait(self, timeout_s: float | None = None) -> bool:
        return True


class ThreadRunner:
    """Jobs run on Python worker threads; ``done`` is called on the worker thread (the
    scheduler's bookkeeping is locked, the ``on_response`` callback must be thread-safe)."""

    def __init__(self, max_workers: int = 1) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="studio-job")
        self._handled: dict[Job, threading.Event] = {}
        self._lock = threading.Lock()

    def start(self, job: Job, done: Callable[[Response], object]) -> None:
        handled = threading.Event()
        with self._lock:
            self._handled[job] = handled

        def run() -> None:
            try:
                done(job.run())
            finally:
                with self._lock:
                    self._handled.pop(job, None)
                handled.set()

        self._pool.submit(run)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until every job started so far has finished and its response was handed to the
        scheduler (True), or ``timeout_s`` passed (False)."""
        with self._lock:
            pending = list(self._handled.values())
        return all(e.wait(timeout_s) for e in pending)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)


class Scheduler(Generic[P, R]):
    """Runs ``work`` on the newest request only and delivers only current responses.

    Parameters
    ----------
    work:
        ``work(payload, job) -> result``.
    runner:
        Where jobs run; default :class:`SyncRunner`.
    on_response:
        Called with each response that is still current when it arrives (results, errors, and the
        cancellation of the newest job); stale responses are counted in :attr:`dropped`.
    name:
        Names the work in error lines ("the engine failed: …").
    on_progress:
        Called with ``(fraction, revision)`` when a job reports progress, on the job's thread
        (a runner may route it elsewhere, as the Qt binding does).
    """

    def __init__(
        self,
        work: Work,
        *,
        runner: Runner | None = None,
        on_response: Callable[[Response], None] | None = None,
        on_progress: Callable[[float, int], None] | None = None,
        name: str = "the work",
    ) -> None:
        self._work = work
        self.runner: Runner = runner or SyncRunner()
        self.on_response = on_response
        self.on_progress = on_progress
        self.name = name
        self._lock = threading.RLock()
        self._revision = -1
        self._ticket = 0
        self._job: Job | None = None
        self.dropped = 0
        self.delivered = 0

    # ------------------------------------------------------------------ state
    @property
    def revision(self) -> int:
        """The revision of the newest inputs the scheduler was told about (-1: none yet)."""
        return self._revision

    @property
    def job(self) -> Job | None:
        """The newest job (running or finished), or None."""
        return self._job

    @property
    def running(self) -> bool:
        """A current job is in flight."""
        job = self._job
        return job is not None and not job.finished.is_set() and job.revision == self._revision

    def is_current(self, response: Response) -> bool:
        """Whether ``response`` answers the newest request of the newest inputs."""
        return response.ticket == self._ticket and response.revision == self._revision

    # ------------------------------------------------------------------ requests
    def supersede(self, revision: int | None = None) -> int:
        """The inputs changed (to ``revision``, default the next one): cancel the job in flight
        for older inputs; its response will be dropped. Returns the current revision.

        Raises
        ------
        ValueError
            If ``revision`` is older than the current one (revisions only go forward).
        """
        with self._lock:
            if revision is None:
                revision = self._revision + 1
            if revision < self._revision:
                raise ValueError(f"revision {revision} is older than the current {self._revision}")
            if revision > self._revision:
                self._revision = revision
                if self._job is not None:
                    self._job.cancel()
            return self._revision

    def submit(
        self, payload: P, revision: int | None = None, *, runner: Runner | None = None
    ) -> Job:
        """Start a job for ``payload`` made at ``revision`` (default: a new revision). Any older
        job is cancelled and its response dropped. ``runner`` overrides the scheduler's for this
        job (``SyncRunner()`` computes now, on this thread)."""
        with self._lock:
            rev = self.supersede(revision)
            if self._job is not None:
                self._job.cancel()
            self._ticket += 1
            job = Job(Request(rev, payload, self._ticket), self._work, self.name)
            if self.on_progress is not None:
                report = self.on_progress
                job.report = lambda f: report(f, rev)
            self._job = job
        (runner or self.runner).start(job, self.deliver)
        return job

    def cancel(self) -> bool:
        """Cancel the job in flight; its response arrives with ``cancelled`` set. Returns
        whether there was one."""
        job = self._job
        if job is None or job.finished.is_set():
            return False
        job.cancel()
        return True

    def deliver(self, response: Response) -> bool:
        """Pass ``response`` to ``on_response`` if it is current, else drop it. Returns whether it
        was delivered (runners call this; tests may too)."""
        with self._lock:
            current = self.is_current(response)
            if current:
                self.delivered += 1
            else:
                self.dropped += 1
        if current and self.on_response is not None:
            self.on_response(response)
        return current

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the runner's jobs finished (responses may still be on their way to a GUI
        thread's event loop)."""
        return self.runner.wait(timeout_s)
