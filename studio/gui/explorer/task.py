"""Run :func:`studio.engine.sweep` off the GUI thread; progress and cancel through a flag."""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, QRunnable, Signal
from shiboken6 import isValid

from studio.core.errors import StudioError
from studio.core.project import Project

Sweeper = Callable[..., object]


class _Relay(QObject):
    """Queued signals back to the GUI thread."""

    progress = Signal(float, int)  # fraction done, revision
    done = Signal(object, int, str)  # SweepResult or None, revision, error ("" on success)


class SweepTask(QRunnable):
    """One sweep of a frozen project for a given revision.

    ``cancel()`` may be called from any thread: the engine's ``progress`` callback then returns
    False and the sweep stops at its next layout; the task reports ``cancelled`` as its error.

    When the window (and with it the relay) is destroyed while the sweep runs, the task stops at
    the next layout and emits nothing: there is no one left to tell.
    """

    def __init__(self, sweeper: Sweeper, project: Project, revision: int, **kwargs: object) -> None:
        super().__init__()
        self.relay = _Relay()
        self._sweeper = sweeper
        self._project = project
        self._kwargs = kwargs
        self.revision = revision
        self._cancel = threading.Event()
        self.finished = threading.Event()
        self.setAutoDelete(False)

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _emit(self, name: str, *args: object) -> bool:
        """Emit ``relay.<name>(*args)``; False (and the task cancels itself) when the relay is gone."""
        relay = self.relay
        try:
            if relay is not None and isValid(relay):
                getattr(relay, name).emit(*args)
                return True
        except RuntimeError:  # deleted between the check and the emit ("Signal source has been deleted")
            pass
        self._cancel.set()
        return False

    def _progress(self, fraction: float) -> bool:
        if self._cancel.is_set():
            return False
        return self._emit("progress", float(fraction), self.revision)

    def run(self) -> None:  # noqa: D102 - QRunnable API
        try:
            result = self._sweeper(self._project, progress=self._progress, **self._kwargs)
            err = "cancelled" if self._cancel.is_set() or getattr(result, "cancelled", False) else ""
            self._emit("done", None if err else result, self.revision, err)
        except StudioError as exc:
            self._emit("done", None, self.revision, exc.message)
        except Exception as exc:  # noqa: BLE001 - an engine bug must not take the window down
            self._emit("done", None, self.revision, f"the sweep failed: {type(exc).__name__}: {exc}")
        finally:
            self.finished.set()
