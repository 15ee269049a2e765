"""Persistent settings (window geometry, dock layout, recent files) via QSettings.

With ``LAYOUT_STUDIO_NO_SETTINGS=1`` (tests, snapshots) a throw-away file in a temporary folder is
used, so runs never read or change the user's settings.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings

ORG, APP = "LayoutStudio", "Layout Studio"
MAX_RECENT = 8
_TEMP_DIR: tempfile.TemporaryDirectory | None = None


def make_settings() -> QSettings:
    """The user's settings, or a temporary INI file when ``LAYOUT_STUDIO_NO_SETTINGS=1``."""
    global _TEMP_DIR
    if os.environ.get("LAYOUT_STUDIO_NO_SETTINGS") == "1":
        if _TEMP_DIR is None:
            _TEMP_DIR = tempfile.TemporaryDirectory(prefix="layout-studio-settings-")
        return QSettings(str(Path(_TEMP_DIR.name) / "settings.ini"), QSettings.Format.IniFormat)
    return QSettings(ORG, APP)


def recent_files(settings: QSettings) -> list[str]:
    value = settings.value("recentFiles", [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        value = []
    return [str(v) for v in value if v]


def push_recent(settings: QSettings, path: str | Path) -> list[str]:
    """Put ``path`` first in the recent list (no duplicates, at most :data:`MAX_RECENT`)."""
    p = str(Path(path).resolve())
    files = [p] + [f for f in recent_files(settings) if f != p]
    files = files[:MAX_RECENT]
    settings.setValue("recentFiles", files)
    return files
