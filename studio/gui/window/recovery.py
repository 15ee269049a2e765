"""Autosave of the open document and the offer to restore unsaved work after a crash.

:class:`Autosaver` writes a snapshot of a dirty document a few seconds after the last edit
(:class:`studio.io.autosave.IdleTimer` decides; a ``QTimer`` polls it) and deletes it when the
document becomes clean (saved, reopened, undone back to the saved state) or the window closes
cleanly. After a crash the snapshot stays on disk; :func:`offer_recovery` lists those of dead
processes at the next start and asks Restore / Discard / Later for each.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QAbstractButton, QMessageBox, QWidget

from studio.core.errors import StudioError
from studio.gui.document import ProjectDocument
from studio.io.autosave import AutosaveStore, IdleTimer, RecoverableSession, new_session_id

POLL_MS = 500
Chooser = Callable[[RecoverableSession], str]  # -> "restore", "discard" or "later"
CHOICES = ("restore", "discard", "later")


class Autosaver(QObject):
    """Keeps one session's snapshot of ``doc`` up to date in ``store``.

    Parameters
    ----------
    doc:
        The document to watch.
    store:
        Where snapshots go.
    idle:
        The policy (default: 3 s after the last edit, at least every 30 s while editing).
    clock:
        ``time.monotonic`` or a test clock.
    """

    def __init__(
        self,
        doc: ProjectDocument,
        store: AutosaveStore,
        idle: IdleTimer | None = None,
        clock: Callable[[], float] = time.monotonic,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.doc = doc
        self.store = store
        self.idle = idle or IdleTimer()
        self.clock = clock
        self.session_id = new_session_id()
        self.last_error = ""
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.tick)
        doc.projectChanged.connect(self._on_change)
        doc.fileChanged.connect(self._on_file)

    @property
    def path(self) -> Path:
        """This session's snapshot file (it exists only while there is unsaved work)."""
        return self.store.path_of(self.session_id)

    def _on_change(self, _project: object, _kind: str) -> None:
        if self.doc.is_dirty:
            self.idle.changed(self.clock())
            self._timer.start()

    def _on_file(self) -> None:
        if self.doc.is_dirty:
            self.idle.changed(self.clock())
            self._timer.start()
        else:
            self.discard()

    def tick(self) -> bool:
        """Write the snapshot if the policy says it is due; returns whether one was written."""
        if not self.doc.is_dirty:
            self._timer.stop()
            return False
        if not self.idle.due(self.clock()):
            return False
        return self.save_now()

    def save_now(self) -> bool:
        """Write the snapshot now (small JSON, atomic). A failure goes to the status bar once and
        is retried at the next edit; the window keeps working."""
        try:
            self.store.save(self.doc.project, self.session_id, self.doc.path)
        except (StudioError, ValueError) as exc:  # ValueError: a serialisation error (invalid text)
            if str(exc) != self.last_error:
                self.last_error = str(exc)
                self.doc.message.emit(f"Autosave failed: {exc}")
            self.idle.saved()
            self._timer.stop()
            return False
        self.last_error = ""
        self.idle.saved()
        self._timer.stop()
        return True

    def discard(self) -> None:
        """Delete the snapshot (clean save or close) and forget pending changes."""
        self._timer.stop()
        self.idle.saved()
        try:
            self.store.discard(self.session_id)
        except OSError as exc:  # e.g. the data folder became unreachable; closing must still work
            self.doc.message.emit(f"Could not delete the autosave {self.path}: {exc.strerror or exc}")


def recovery_question(session: RecoverableSession) -> tuple[str, str]:
    """Main text and details of the restore question for ``session``."""
    if session.error:
        return (
            "A saved copy of unsaved work cannot be read.",
            f"{session.path}: {session.error}\n\nDiscard it, or keep it for later?",
        )
    origin = f"It was opened from {session.original_path}." if session.original_path else "It was never saved to a file."
    return (
        f"Restore unsaved work from {session.saved_at_text}?",
        f"Layout Studio did not close normally. Unsaved changes to “{session.project_name}” were "
        f"saved automatically at {session.saved_at_text}. {origin}",
    )


def ask_recovery_dialog(parent: QWidget | None, session: RecoverableSession) -> str:
    """The Restore / Discard / Later message box; returns one of :data:`CHOICES`."""
    text, info = recovery_question(session)
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Recover unsaved work")
    box.setText(text)
    box.setInformativeText(info)
    buttons: dict[QAbstractButton, str] = {}
    if not session.error:
        buttons[box.addButton("Restore", QMessageBox.ButtonRole.AcceptRole)] = "restore"
    buttons[box.addButton("Discard", QMessageBox.ButtonRole.DestructiveRole)] = "discard"
    later = box.addButton("Later", QMessageBox.ButtonRole.RejectRole)
    buttons[later] = "later"
    box.setEscapeButton(later)
    box.exec()
    return buttons.get(box.clickedButton(), "later")


def offer_recovery(
    doc: ProjectDocument,
    store: AutosaveStore,
    choose: Chooser,
    show_error: Callable[[str, str], None],
    own_session: str | None = None,
) -> RecoverableSession | None:
    """Offer each snapshot left by a crashed session, newest first, until one is restored.

    ``restore`` puts the exact project in ``doc`` (with the file it came from, marked unsaved) and
    deletes its snapshot (``doc`` autosaves it again under its own session); ``discard`` deletes
    it; ``later`` keeps it for the next start. Returns the restored session, if any.
    """
    for session in store.sessions(exclude=own_session):
        answer = choose(session)
        if answer == "discard":
            _discard(store, session.session_id)
            continue
        if answer != "restore" or session.error:
            continue
        try:
            project = store.restore(session.session_id)
        except StudioError as exc:
            show_error("Cannot restore unsaved work", str(exc))
            continue
        original = session.original_path
        doc.replace_document(project, original)
        doc.mark_dirty()
        _discard(store, session.session_id)
        doc.message.emit(f"Restored unsaved work from {session.saved_at_text}")
        return session
    return None


def _discard(store: AutosaveStore, session_id: str) -> None:
    with contextlib.suppress(OSError):  # a read-only data folder: the question comes back next time
        store.discard(session_id)
