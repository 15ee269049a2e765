"""The open document: one frozen :class:`Project` (the single truth), undo stack, file state.

Every edit is one :class:`QUndoCommand` that swaps the project for a new value made by a pure
function (``studio.core.edits`` or ``Project.replace``); undo swaps the exact previous value back.
After each change a recompute is scheduled (debounced) and run in a worker thread on the frozen
project by the application's one scheduler (:mod:`studio.service.scheduler`, bound to Qt by
:class:`studio.gui.worker.ScheduledWork`); results for an older revision are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from studio.core.errors import StudioError, first_error_message
from studio.core.project import Project
from studio.gui.worker import Evaluator, ScheduledWork, default_evaluator, evaluate_work
from studio.io.project_file import load_project, save_project
from studio.service.project_edits.hardware_edits import follow_cluster
from studio.service.scheduler import Response

if TYPE_CHECKING:
    from studio.engine.plan.results import PlanResult

DEBOUNCE_MS = 30


class SwapProject(QUndoCommand):
    """Replace the document's project by ``new``; undo puts ``old`` back (the same object)."""

    def __init__(self, doc: ProjectDocument, old: Project, new: Project, text: str, kind: str) -> None:
        super().__init__(text)
        self._doc = doc
        self._old = old
        self._new = new
        self._kind = kind

    def redo(self) -> None:
        self._doc._set_project(self._new, self._kind)

    def undo(self) -> None:
        self._doc._set_project(self._old, self._kind)


class ProjectDocument(QObject):
    """Holds the current project and tells views when it or its plan result changes.

    Parameters
    ----------
    project:
        The project to start with.
    path:
        The file it came from, if any.
    evaluate:
        ``Project -> PlanResult``; defaults to ``studio.engine.evaluate``.
    threaded:
        Run the engine in a worker thread (the GUI); ``False`` evaluates synchronously after the
        debounce (deterministic tests and benchmarks).

    Signals
    -------
    projectChanged(Project, str)
        New project value and the kind of change ("cluster", "model", "workload", "layout",
        "serving", "file", ...).
    resultReady(PlanResult, int)
        A result for the given revision (never an outdated one).
    errorChanged(str)
        The engine's error message, for every revision it refuses; "" once when it succeeds again.
    selectionChanged(tuple)
        Ids (GPUs, links, nodes, switches, NICs) the user selected or a warning pointed at.
    message(str)
        A one-line notice for the status bar (refused edits, saves).
    problem(str, str)
        Title and text of an error the user must see (a file that cannot be loaded): the window
        shows it as a dialog.
    """

    projectChanged = Signal(object, str)
    resultReady = Signal(object, int)
    errorChanged = Signal(str)
    selectionChanged = Signal(tuple)
    message = Signal(str)
    fileChanged = Signal()
    problem = Signal(str, str)

    def __init__(
        self,
        project: Project,
        path: str | Path | None = None,
        evaluate: Evaluator | None = None,
        threaded: bool = True,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._project = project
        self._path = Path(path) if path else None
        self._revision = 0
        self._result: PlanResult | None = None
        self._result_revision = -1
        self._error = ""
        self._selection: tuple[str, ...] = ()
        self.undo_stack = QUndoStack(self)
        # Signal to signal: Qt itself relays it and cuts the connection when the document dies.
        # (QUndoStack emits cleanChanged from its destructor; a Python slot there would run on a
        # half-destroyed document: "Signal source has been deleted".)
        self.undo_stack.cleanChanged.connect(self.fileChanged)
        #: The recompute: the current project at the current revision, newest only.
        self._evaluate = evaluate or default_evaluator()  # looked up per run (benchmarks wrap it)
        self.recompute = ScheduledWork(evaluate_work(lambda p: self._evaluate(p)), lambda: self._project,
                                       threaded=threaded, debounce_ms=DEBOUNCE_MS, name="the engine", parent=self)
        self.recompute.responded.connect(self._publish)
        self.schedule_recompute()

    # ------------------------------------------------------------------ state
    @property
    def project(self) -> Project:
        """The current project (immutable)."""
        return self._project

    @property
    def revision(self) -> int:
        """Counts project changes; results carry the revision they were computed for."""
        return self._revision

    @property
    def result(self) -> PlanResult | None:
        """The latest plan result, or ``None`` (not computed yet, or the engine refused)."""
        return self._result

    @property
    def result_is_current(self) -> bool:
        return self._result is not None and self._result_revision == self._revision

    @property
    def error(self) -> str:
        return self._error

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def is_dirty(self) -> bool:
        return not self.undo_stack.isClean()

    @property
    def selection(self) -> tuple[str, ...]:
        return self._selection

    @property
    def display_name(self) -> str:
        return self._path.name if self._path else f"{self._project.name} (not saved)"

    # ------------------------------------------------------------------ edits
    def apply(self, new: Project, text: str, kind: str = "cluster") -> None:
        """Push one undo step that swaps in ``new`` (no-op when equal to the current project)."""
        if new == self._project:
            return
        self.undo_stack.push(SwapProject(self, self._project, new, text, kind))

    def edit(self, text: str, kind: str, fn: Callable[[Project], Project]) -> bool:
        """Apply ``fn(project)`` as one undo step; a :class:`StudioError` is reported via
        :attr:`message` and leaves the project unchanged. Returns whether the edit happened."""
        new = self._attempt(text, fn)
        if new is None:
            return False
        self.apply(new, text, kind)
        return True

    def _attempt(self, text: str, fn: Callable[[Project], Project]) -> Project | None:
        try:
            return fn(self._project)
        except StudioError as exc:
            self.message.emit(f"{text} refused: {exc.message}")
        except ValueError as exc:  # pydantic validation of a Project.replace
            self.message.emit(f"{text} refused: {first_error_message(exc, quote_field=True)}")
        return None

    def edit_cluster(self, text: str, fn: Callable) -> bool:
        """Like :meth:`edit` for a ``Cluster -> Cluster`` function (or ``Cluster -> (Cluster,
        note)``, the note added to the undo text). When the GPUs change, the
        layout follows them in the same undo step (:func:`studio.service.project_edits.hardware_edits.follow_cluster`)
        and the undo text names the new layout ("Add HGX H200 · DP follows the GPUs: layout …")."""
        notes: list[str] = []

        def change(p: Project) -> Project:
            out = fn(p.cluster)
            if isinstance(out, tuple):  # (cluster, what else the edit did)
                out, did = out
                notes.append(did)
            new, why = follow_cluster(p, out)
            notes.append(why)
            return new

        new = self._attempt(text, change)
        if new is None:
            return False
        notes = [n for n in notes if n]
        if notes:
            text = " · ".join([text, *notes])
            self.message.emit(text)
        self.apply(new, text, "cluster")
        return True

    def report_problem(self, title: str, text: str) -> None:
        """Ask the window to show an error dialog (``problem`` signal); the project is unchanged."""
        self.problem.emit(title, text)

    def mark_dirty(self) -> None:
        """Mark the document as having unsaved changes (a restored autosave) without an undo step."""
        self.undo_stack.resetClean()
        self.fileChanged.emit()

    def set_selection(self, ids: tuple[str, ...] | list[str]) -> None:
        ids = tuple(ids)
        if ids != self._selection:
            self._selection = ids
            self.selectionChanged.emit(ids)

    def _set_project(self, project: Project, kind: str) -> None:
        self._project = project
        self._revision += 1
        self.projectChanged.emit(project, kind)
        self.schedule_recompute()

    # -------------------------------------------------------------- recompute
    def schedule_recompute(self) -> None:
        """Start the engine after the debounce interval (restarting it on every call); a result of
        an older revision still in flight is dropped from now on."""
        self.recompute.schedule(self._revision)

    def recompute_now(self) -> None:
        """Evaluate synchronously on this thread and publish the result (benchmarks, snapshot)."""
        self.recompute.run_now(self._revision)

    def _publish(self, response: Response) -> None:
        """Show a current response (the scheduler already dropped stale ones)."""
        if response.cancelled:
            return
        error = response.error
        if error != self._error or error:  # every refused revision is reported (views settle)
            self._error = error
            self.errorChanged.emit(error)
        if response.result is None:
            self._result = None
            return
        self._result = response.result
        self._result_revision = response.revision
        self.resultReady.emit(response.result, response.revision)

    def wait_idle(self, msecs: int = 30_000) -> bool:
        """Block until queued engine runs finish (tests, shutdown)."""
        return self.recompute.wait_idle(msecs)

    # ------------------------------------------------------------------ files
    def replace_document(self, project: Project, path: str | Path | None) -> None:
        """Start over on ``project`` (New/Open): clears undo history and marks clean."""
        self.undo_stack.clear()
        self._path = Path(path) if path else None
        self._selection = ()
        self._set_project(project, "file")
        self.undo_stack.setClean()
        self.fileChanged.emit()

    def open(self, path: str | Path) -> None:
        """Load ``path`` (raises :class:`StudioError` with the file and field on bad input)."""
        self.replace_document(load_project(path), path)

    def save(self, path: str | Path | None = None) -> Path:
        """Write the project to ``path`` (or the current path) and mark the document clean."""
        target = Path(path) if path else self._path
        if target is None:
            raise StudioError("this project has no file yet; use Save As")
        written = save_project(self._project, target)
        self._path = written
        self.undo_stack.setClean()
        self.fileChanged.emit()
        self.message.emit(f"Saved {written}")
        return written
