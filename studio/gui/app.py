"""Start the studio: ``run(path)`` opens the window on a project (default: the bundled example)."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.gui.document import ProjectDocument
from studio.gui.main_window import MainWindow
from studio.gui.resources import icon, is_dark, style_sheet
from studio.io.presets import example_paths, load_catalog
from studio.io.project_file import load_project, project_from_json

DEFAULT_EXAMPLE = "dgx-h100-2node-llama-405b"


def application() -> QApplication:
    """The running QApplication, created (and themed) if needed."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
        app.setApplicationName("Layout Studio")
        app.setOrganizationName("LayoutStudio")
        app.setWindowIcon(icon("app"))
    apply_theme(app)
    return app  # type: ignore[return-value]


def apply_theme(app: QApplication) -> None:
    """Light or dark style sheet, following the system palette."""
    app.setStyleSheet(style_sheet(is_dark(app)))


def example_project() -> tuple[Project, str]:
    """The bundled example project and a label for it."""
    examples = example_paths()
    node = examples.get(DEFAULT_EXAMPLE) or (examples[sorted(examples)[0]] if examples else None)
    if node is None:
        raise StudioError("no bundled example project was found in presets/examples")
    return project_from_json(node.read_text(encoding="utf-8"), f"presets/examples/{node.name}"), node.name


def build_window(project: Project | None = None, path: str | Path | None = None, threaded: bool = True) -> MainWindow:
    """A main window on ``project`` (or the file ``path``, or the bundled example)."""
    catalog = load_catalog()
    if project is None:
        if path is not None:
            project = load_project(path)
        else:
            project, _name = example_project()
    doc = ProjectDocument(project, path=path, threaded=threaded)
    return MainWindow(doc, catalog)


def run(path: str | None = None) -> int:
    """Open the studio window and run the event loop; returns the exit code."""
    app = application()
    try:
        win = build_window(path=path)
    except StudioError as exc:
        print(f"layout-studio: {exc}", file=sys.stderr)
        return 2
    win.show()
    return int(app.exec())
