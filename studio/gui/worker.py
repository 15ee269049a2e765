"""Run the cost engine off the GUI thread on a frozen request (project + revision)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QRunnable, Signal

from studio.core.errors import StudioError
from studio.core.project import Project

Evaluator = Callable[[Project], object]


class _Relay(QObject):
    """Carries the outcome back to the GUI thread (queued signal)."""

    done = Signal(object, int, str)  # result or None, revision, error message


class EvaluateTask(QRunnable):
    """Evaluate one immutable project; report ``(result, revision, error)`` through ``relay``.

    The project is frozen, so the worker cannot see later edits; the document drops the result if
    its revision is older than the current one.
    """

    def __init__(self, evaluate: Evaluator, project: Project, revision: int) -> None:
        super().__init__()
        self.relay = _Relay()
        self._evaluate = evaluate
        self._project = project
        self._revision = revision
        self.setAutoDelete(True)

    def run(self) -> None:  # noqa: D102 - QRunnable API
        result, error = run_evaluate(self._evaluate, self._project)
        self.relay.done.emit(result, self._revision, error)


def run_evaluate(evaluate: Evaluator, project: Project) -> tuple[object | None, str]:
    """Call the engine; a :class:`StudioError` becomes its message, any other failure a short
    message naming the exception (the GUI shows it instead of crashing)."""
    try:
        return evaluate(project), ""
    except StudioError as exc:
        return None, exc.message
    except Exception as exc:  # noqa: BLE001 - an engine bug must not take the window down
        return None, f"the engine failed: {type(exc).__name__}: {exc}"


def default_evaluator() -> Evaluator:
    """``studio.engine.evaluate``, or a function that raises a clear error if it is missing."""
    try:
        from studio.engine import evaluate  # type: ignore[attr-defined]
    except ImportError:

        def evaluate(project: Project) -> object:
            raise StudioError("the cost engine (studio.engine.evaluate) is not installed")

    return evaluate
