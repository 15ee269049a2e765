"""Errors in the window never abort it: a dialog says what happened, a log keeps the details.

* :func:`error_text` turns an exception into the text of a dialog: a :class:`StudioError`'s own
  message (file, place, what is allowed), or for anything else the exception and where the
  traceback was logged.
* :class:`GuiExceptHook` replaces ``sys.excepthook`` while the window runs. PySide6 hands
  exceptions raised in slots and in Python overrides of Qt methods to ``sys.excepthook``; the hook
  logs the traceback (to stderr and ``<data dir>/logs/layout-studio.log``) and shows a dialog, and
  the event loop keeps running.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import TracebackType

from studio.core.errors import StudioError
from studio.io.autosave import user_data_dir

LOG = logging.getLogger("studio.gui")
LOG_NAME = "layout-studio.log"
MAX_LOG_BYTES = 1 << 20  # the log starts over past 1 MiB

ShowError = Callable[[str, str], None]


def default_log_path() -> Path:
    """``<user data dir>/logs/layout-studio.log``."""
    return user_data_dir() / "logs" / LOG_NAME


def error_text(exc: BaseException, log_path: Path | None = None) -> str:
    """Text of the dialog for ``exc``."""
    if isinstance(exc, StudioError):
        return str(exc)
    where = f"\n\nThe details were written to {log_path}." if log_path is not None else ""
    return (
        f"Layout Studio hit an unexpected error and kept running:\n{type(exc).__name__}: {exc}{where}\n\n"
        "Your plan is still open; saving it under a new name is a good idea."
    )


def append_log(text: str, path: Path) -> bool:
    """Append ``text`` to the log file (started over when it grows past :data:`MAX_LOG_BYTES`);
    False when it cannot be written (the dialog still shows)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = "w" if path.exists() and path.stat().st_size > MAX_LOG_BYTES else "a"
        with path.open(mode, encoding="utf-8") as f:
            f.write(text)
    except OSError:
        return False
    return True


class GuiExceptHook:
    """A ``sys.excepthook`` for the GUI: log, then show a dialog; never re-enters itself.

    Parameters
    ----------
    show:
        ``show(title, text)``: the dialog (the main window's ``show_error``; tests pass a recorder).
    log_path:
        Where tracebacks are appended (default :func:`default_log_path`).
    """

    def __init__(self, show: ShowError, log_path: Path | None = None) -> None:
        self.show = show
        self.log_path = log_path if log_path is not None else default_log_path()
        self.previous: Callable | None = None
        self._busy = False

    def install(self) -> GuiExceptHook:
        """Make this the process's ``sys.excepthook`` (remembering the previous one)."""
        if sys.excepthook is not self:
            self.previous = sys.excepthook
            sys.excepthook = self
        return self

    def uninstall(self) -> None:
        """Put the previous hook back."""
        if sys.excepthook is self:
            sys.excepthook = self.previous or sys.__excepthook__

    def __call__(self, kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt | SystemExit):
            (self.previous or sys.__excepthook__)(kind, exc, tb)
            return
        if isinstance(exc, StudioError):
            LOG.warning("%s", exc)
            self._show("Cannot do that", error_text(exc))
            return
        lines = "".join(traceback.format_exception(kind, exc, tb))
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        LOG.error("unexpected error in the window:\n%s", lines)
        logged = append_log(f"--- {stamp}\n{lines}", self.log_path)
        self._show("Unexpected error", error_text(exc, self.log_path if logged else None))

    def _show(self, title: str, text: str) -> None:
        if self._busy:  # the dialog itself failed, or an error came in while it was open
            return
        self._busy = True
        try:
            self.show(title, text)
        except Exception as exc:  # noqa: BLE001 - nothing may escape the hook
            with contextlib.suppress(Exception):
                print(f"layout-studio: {title}: {text} (and the dialog failed: {exc})", file=sys.stderr)
        finally:
            self._busy = False
