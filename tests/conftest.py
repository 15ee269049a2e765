"""Shared test setup: Qt runs offscreen (CI has no display)."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LAYOUT_STUDIO_NO_SETTINGS", "1")
