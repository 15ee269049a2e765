"""Autosave and crash recovery, without Qt.

Each running window owns an *autosave session* (a random id). While it has unsaved changes the GUI
calls :meth:`AutosaveStore.save` after a few seconds of idle time (:class:`IdleTimer` decides
when); the snapshot is written atomically to ``<data dir>/autosave/<session>.json`` together with
the time, the file the project came from and the process id. A clean close calls
:meth:`AutosaveStore.discard`. After a crash the snapshot is still there, so the next start lists
it with :meth:`AutosaveStore.sessions` (skipping sessions whose process is still running) and
offers :meth:`AutosaveStore.restore`.

The data folder is ``$LAYOUT_STUDIO_DATA_DIR`` when set (tests use it), else the platform's user
data folder (``$XDG_DATA_HOME/layout-studio`` or ``~/.local/share/layout-studio`` on Linux,
``~/Library/Application Support/Layout Studio`` on macOS, ``%LOCALAPPDATA%\\Layout Studio`` on
Windows).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from studio.core.errors import StudioError
from studio.core.project import PinnedLayoutError, Project
from studio.io.project_file import (
    MAX_PROJECT_BYTES,
    MAX_PROJECT_DEPTH,
    project_from_data,
    project_to_json,
    write_text_atomic,
)
from studio.io.safe import loads_json_limited, read_text_limited

DATA_DIR_ENV = "LAYOUT_STUDIO_DATA_DIR"
AUTOSAVE_FORMAT = "layout-studio-autosave"
AUTOSAVE_VERSION = 1
_SESSION_CHARS = set("0123456789abcdef-")


def user_data_dir() -> Path:
    """The folder Layout Studio keeps per-user state in (not created here)."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    home = Path.home()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return (Path(base) if base else home / "AppData" / "Local") / "Layout Studio"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Layout Studio"
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else home / ".local" / "share") / "layout-studio"


def new_session_id() -> str:
    """A fresh, file-name-safe session id."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class RecoverableSession:
    """One autosave snapshot found on disk.

    ``error`` is set (and the other fields may be empty) when the snapshot cannot be read; the GUI
    can still offer to discard it.
    """

    session_id: str
    path: Path
    saved_at: datetime | None
    original_path: str | None
    project_name: str
    pid: int | None
    host: str
    error: str | None = None
    pid_started: int | None = None

    @property
    def saved_at_text(self) -> str:
        """Local time of the snapshot, e.g. ``2025-03-01 14:05:09``."""
        if self.saved_at is None:
            return "unknown time"
        return self.saved_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")


class AutosaveStore:
    """Snapshots in ``root`` (default ``user_data_dir() / "autosave"``)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else user_data_dir() / "autosave"
        self._last_text: dict[str, str] = {}

    # ------------------------------------------------------------------ paths
    def path_of(self, session_id: str) -> Path:
        """Snapshot file of ``session_id``."""
        if not session_id or set(session_id) - _SESSION_CHARS or len(session_id) > 64:
            raise StudioError(f"invalid autosave session id {session_id!r} (hex digits and '-' only)")
        return self.root / f"{session_id}.json"

    # ------------------------------------------------------------------ writing
    def save(
        self,
        project: Project,
        session_id: str,
        original_path: str | os.PathLike[str] | None = None,
        now: datetime | None = None,
    ) -> Path:
        """Write a snapshot atomically; skipped (same path returned) when nothing changed since
        this store's last snapshot of the session.

        Raises
        ------
        StudioError
            The data folder cannot be created or written.
        """
        path = self.path_of(session_id)
        project_text = project_to_json(project)
        if self._last_text.get(session_id) == project_text and path.exists():
            return path
        meta: dict[str, Any] = {
            "format": AUTOSAVE_FORMAT,
            "version": AUTOSAVE_VERSION,
            "saved_at": (now or datetime.now(timezone.utc)).isoformat(),
            "original_path": str(original_path) if original_path is not None else None,
            "pid": os.getpid(),
            "pid_started": process_start(os.getpid()),
            "host": socket.gethostname(),
        }
        # The project text is valid JSON already: splice it in instead of decoding it again.
        envelope = json.dumps(meta, ensure_ascii=False)[:-1] + ', "project": ' + project_text.rstrip() + "}\n"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StudioError(f"cannot create the autosave folder ({exc.strerror or exc})", str(self.root)) from None
        write_text_atomic(envelope, path)
        self._last_text[session_id] = project_text
        return path

    def discard(self, session_id: str) -> None:
        """Delete a snapshot (after a clean save or close, or when the user declines recovery)."""
        self._last_text.pop(session_id, None)
        with contextlib.suppress(FileNotFoundError):
            self.path_of(session_id).unlink()

    # ------------------------------------------------------------------ reading
    def sessions(self, include_running: bool = False, exclude: str | None = None) -> list[RecoverableSession]:
        """Snapshots on disk, newest first.

        Parameters
        ----------
        include_running:
            Also list snapshots whose process still runs on this host (another open window).
        exclude:
            Session id to leave out (the caller's own).
        """
        if not self.root.is_dir():
            return []
        found: list[RecoverableSession] = []
        for path in self.root.glob("*.json"):
            sid = path.stem
            if sid == exclude or set(sid) - _SESSION_CHARS:
                continue
            info = self._read_info(path)
            running = info.error is None and _is_running(info.pid, info.host)
            if running and not include_running and not _pid_reused(info.pid, info.pid_started):
                continue
            found.append(info)
        epoch = datetime.min.replace(tzinfo=timezone.utc)
        return sorted(found, key=lambda s: s.saved_at or epoch, reverse=True)

    def restore(self, session_id: str) -> Project:
        """The project saved in a snapshot (migrated and validated like a project file).

        Raises
        ------
        StudioError
            The snapshot is missing, damaged or not a Layout Studio autosave.
        """
        path = self.path_of(session_id)
        envelope = self._envelope(path)
        try:
            return project_from_data(envelope["project"], f"{path} (project)")
        except PinnedLayoutError as exc:  # unsaved work is never lost to a stale pinned layout
            return exc.without

    # ------------------------------------------------------------------ internals
    def _envelope(self, path: Path) -> dict[str, Any]:
        text = read_text_limited(path, MAX_PROJECT_BYTES + 4096, "autosave file")
        data = loads_json_limited(text, str(path), max_depth=MAX_PROJECT_DEPTH + 1, what="autosave file")
        if not isinstance(data, dict) or data.get("format") != AUTOSAVE_FORMAT:
            raise StudioError("not a Layout Studio autosave file", str(path))
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise StudioError(f"field 'version' is {version!r}; expected an integer ≥ 1", str(path))
        if version > AUTOSAVE_VERSION:
            raise StudioError(
                f"this autosave was written by a newer Layout Studio (version {version}); "
                f"this one reads up to {AUTOSAVE_VERSION}",
                str(path),
            )
        if not isinstance(data.get("project"), dict):
            raise StudioError("field 'project' is missing or not an object", str(path))
        return data

    def _read_info(self, path: Path) -> RecoverableSession:
        sid = path.stem
        try:
            data = self._envelope(path)
        except StudioError as exc:
            return RecoverableSession(sid, path, None, None, "", None, "", error=exc.message)
        saved_at = _parse_time(data.get("saved_at"))
        original = data.get("original_path")
        pid = data.get("pid")
        host = data.get("host")
        name = data["project"].get("name")
        return RecoverableSession(
            session_id=sid,
            path=path,
            saved_at=saved_at,
            original_path=original if isinstance(original, str) else None,
            project_name=name if isinstance(name, str) else "Untitled plan",
            pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
            pid_started=_int_or_none(data.get("pid_started")),
            host=host if isinstance(host, str) else "",
        )


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux ``/proc/PID/stat`` field 22),
    or ``None`` where that cannot be read. A PID that was reused by a later process has a later
    start, so an autosave of a crashed window is not mistaken for one of a running window."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
    fields = raw[raw.rfind(b")") + 2:].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _pid_reused(pid: int | None, started: int | None) -> bool:
    """Whether ``pid`` now belongs to a later process than the one that wrote the snapshot (its
    recorded start time differs); ``False`` when either start time is unknown."""
    if pid is None or started is None:
        return False
    now = process_start(pid)
    return now is not None and now != started


def _is_running(pid: int | None, host: str) -> bool:
    """Whether ``pid`` is alive on this host (a different host: assume not)."""
    if pid is None or pid <= 0 or host != socket.gethostname():
        return False
    if pid == os.getpid():
        return True
    if sys.platform == "win32":  # os.kill(pid, 0) would terminate the process on Windows
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: a recorded PID no process can have
        return False
    except (PermissionError, OSError):
        return True
    return True


class IdleTimer:
    """Decides when to autosave: ``idle_s`` seconds after the last change, at most every
    ``min_interval_s`` seconds while edits keep coming. Times are plain floats (``time.monotonic``),
    so the GUI drives it from a ``QTimer`` and tests drive it by hand."""

    def __init__(self, idle_s: float = 3.0, min_interval_s: float = 30.0) -> None:
        if idle_s <= 0 or min_interval_s <= 0:
            raise StudioError("autosave intervals must be positive")
        self.idle_s = idle_s
        self.min_interval_s = min_interval_s
        self._last_change: float | None = None
        self._first_unsaved: float | None = None

    def changed(self, now: float) -> None:
        """Record an edit at ``now``."""
        self._last_change = now
        if self._first_unsaved is None:
            self._first_unsaved = now

    def saved(self) -> None:
        """Record that the current state was saved (autosave or a real save)."""
        self._last_change = None
        self._first_unsaved = None

    def due(self, now: float) -> bool:
        """Whether a snapshot should be written now."""
        if self._last_change is None or self._first_unsaved is None:
            return False
        idle = now - self._last_change >= self.idle_s
        overdue = now - self._first_unsaved >= self.min_interval_s
        return idle or overdue
