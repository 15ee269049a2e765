"""Render the main window offscreen to a PNG (docs, CI, slides; ``layout-studio snapshot``)."""

from __future__ import annotations

import os
from pathlib import Path

from studio.core.errors import StudioError
from studio.core.project import Project

VIEWS = ("main", "explorer", "explorer-window")


def render_main_window(project: Project | None, out: Path, size: tuple[int, int] = (1280, 800),
                       view: str = "main") -> Path:
    """Build the window on ``project`` (None: the bundled example), compute the plan, and save a
    PNG of it at ``size`` pixels to ``out``.

    ``view`` = "main" (the window as it opens), "explorer" (the window with the Explorer tab raised
    and its sweep done) or "explorer-window" (the Explorer in its own window of ``size``).

    Raises
    ------
    StudioError
        The PNG cannot be written.
    """
    if view not in VIEWS:
        raise StudioError(f"snapshot view '{view}' is not one of {', '.join(VIEWS)}")
    from PySide6.QtWidgets import QApplication, QWidget

    if QApplication.instance() is None:
        # a snapshot needs no display: without this Qt aborts on a machine with no X/Wayland
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from studio.gui.toolkit.resources import application
    from studio.gui.window.app import build_window

    app = application()
    # the window's default dock layout, not the user's saved one (and leave the user's alone)
    saved = os.environ.get("LAYOUT_STUDIO_NO_SETTINGS")
    os.environ["LAYOUT_STUDIO_NO_SETTINGS"] = "1"
    try:
        win = build_window(project, threaded=False)
    finally:
        if saved is None:
            os.environ.pop("LAYOUT_STUDIO_NO_SETTINGS", None)
        else:
            os.environ["LAYOUT_STUDIO_NO_SETTINGS"] = saved
    win.resize(*size)
    win.show()
    app.processEvents()
    win.doc.recompute_now()
    app.processEvents()
    win.serving_mode_panel.jobs.wait_idle()  # the disaggregated plan (pools, KV arrow, request lanes)
    app.processEvents()
    win.canvas.fit()
    app.processEvents()
    target: QWidget = win
    if view != "main":
        dock = win.docks["Explorer"]
        dock.raise_()
        win.explorer.run_sweep()
        win.explorer.wait_idle()
        app.processEvents()
        if view == "explorer-window":
            win.explorer_own_window(True)
            dock.resize(*size)
            target = dock
        app.processEvents()
    from studio.gui.toolkit.png_file import save_png

    out = Path(out)
    failed: StudioError | None = None
    try:
        save_png(target.grab(), out, what="snapshot")
    except StudioError as exc:
        failed = exc  # raised once the window is closed
    if view == "explorer-window":
        win.explorer_own_window(False)  # docked again, so that closing the window deletes it with it
    win.doc.undo_stack.setClean()
    win.close()
    win.deleteLater()
    QApplication.processEvents()
    if failed is not None:
        raise failed
    return out
