"""Start the studio: ``run(path)`` opens the window on a project (default: the bundled example)."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.gui.document import ProjectDocument
from studio.gui.toolkit.resources import application
from studio.gui.window.errors import GuiExceptHook
from studio.gui.window.main_window import MainWindow
from studio.io.autosave import AutosaveStore
from studio.io.presets import example_paths, load_catalog
from studio.io.project_file import load_project, project_from_json
from studio.service.plan_summary import headline

DEFAULT_EXAMPLE = "dgx-h100-2node-llama-405b"

#: Allocations between two young-generation collections (CPython's default is 700). Each edit of a
#: 512-GPU plan allocates tens of thousands of short-lived objects, and every tenth collection of
#: the older generations walked the whole window (~135,000 objects): about a third of an edit's
#: time went to the garbage collector. Cycles are still collected, in larger batches.
GC_THRESHOLD = (20_000, 10, 10)


#: The interpreter's thread switch interval in the window (CPython's default is 5 ms). The GUI
#: thread needs the interpreter many times over to handle one event (every Python slot, every
#: Python paint), and while a worker thread sweeps it waits up to a whole interval for each: a click
#: during a 512-GPU sweep was handled ~200 ms late, and Cancel arrived after the sweep had finished.
#: At 1 ms the same click waits ~35 ms and Cancel stops the sweep (``benchmarks/explorer.py``).
SWITCH_INTERVAL_S = 0.001


def share_the_interpreter() -> None:
    """Let the GUI thread take the interpreter from a busy worker thread sooner
    (:data:`SWITCH_INTERVAL_S`). Called once the window is shown; headless commands keep
    CPython's interval."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def settle_memory() -> None:
    """Tune the cyclic garbage collector for editing (:data:`GC_THRESHOLD`) and move what exists
    now (the modules, the window and its project: long-lived) out of its reach (``gc.freeze``),
    so that a collection during an edit walks only what the edit made. Called once the window is
    built; refcounting still frees every frozen object that is dropped."""
    gc.set_threshold(*GC_THRESHOLD)
    gc.collect()
    gc.freeze()


def example_project(name: str = DEFAULT_EXAMPLE) -> tuple[Project, str]:
    """The bundled example project ``name`` (default: the one the studio opens on) and a label
    for it."""
    examples = example_paths()
    node = examples.get(name) or (examples[sorted(examples)[0]] if examples else None)
    if node is None:
        raise StudioError("no bundled example project was found in presets/examples")
    return project_from_json(node.read_text(encoding="utf-8"), f"presets/examples/{node.name}"), node.name


def build_window(
    project: Project | None = None,
    path: str | Path | None = None,
    threaded: bool = True,
    autosave: bool = False,
) -> MainWindow:
    """A main window on ``project`` (or the file ``path``, or the bundled example); with
    ``autosave`` its unsaved work is snapshotted to the user's data folder (the real app)."""
    catalog = load_catalog()
    if project is None:
        if path is not None:
            project = load_project(path)
        else:
            project, _name = example_project()
    doc = ProjectDocument(project, path=path, threaded=threaded)
    return MainWindow(doc, catalog, autosave=AutosaveStore() if autosave else None)


def run(path: str | None = None, example: str | None = None) -> int:
    """Open the studio window on the file ``path`` (or the bundled example ``example``, or the
    default example) and run the event loop; returns the exit code."""
    app = application()
    try:
        if example is not None:
            win = build_window(project=example_project(example)[0], autosave=True)
        else:
            win = build_window(path=path, autosave=True)
    except StudioError as exc:
        print(f"layout-studio: {exc}", file=sys.stderr)
        return 2
    hook = GuiExceptHook(lambda title, text: win.show_error(title, text)).install()
    win.show()
    settle_memory()
    share_the_interpreter()  # once shown: start-up itself runs at CPython's interval (~2 % quicker)
    if not os.environ.get("LAYOUT_STUDIO_EXIT_AFTER_MS", "").strip():
        QTimer.singleShot(0, win.offer_recovery)  # after a crash: "Restore unsaved work from …?"
    _exit_after_env(app, win)
    try:
        return int(app.exec())
    finally:
        hook.uninstall()


#: With LAYOUT_STUDIO_EXIT_AFTER_MS, how long past N ms the run waits for its first plan at most.
EXIT_GUARD_MS = 120_000


def _exit_after_env(app: QApplication, win: MainWindow) -> None:
    """Headless runs (CI, smoke tests): with ``LAYOUT_STUDIO_EXIT_AFTER_MS=N`` print the first
    computed plan's headline and close the window after N ms, or when that plan arrives if it
    takes longer."""
    raw = os.environ.get("LAYOUT_STUDIO_EXIT_AFTER_MS", "").strip()
    if not raw:
        return
    try:
        msecs = max(0, int(raw))
    except ValueError:
        print(f"layout-studio: ignoring LAYOUT_STUDIO_EXIT_AFTER_MS={raw!r} (expected milliseconds)", file=sys.stderr)
        return
    doc = win.doc
    state = {"reported": False, "due": False, "closed": False}

    def report(result: PlanResult, _revision: int) -> None:
        print(f"layout-studio: {doc.display_name}: {headline(result)}", flush=True)
        doc.resultReady.disconnect(report)
        state["reported"] = True
        if state["due"]:  # the N ms ran out before the first plan arrived: close now
            close()

    doc.resultReady.connect(report)
    if doc.result is not None and doc.result_is_current:
        report(doc.result, doc.revision)

    def close() -> None:
        if state["closed"]:
            return
        state["closed"] = True
        win.close()
        app.quit()

    def due() -> None:
        """N ms are up: close once the first plan is printed, however slow the machine (a plan that
        never comes, e.g. an engine error, still ends the run after EXIT_GUARD_MS)."""
        state["due"] = True
        if state["reported"]:
            close()
        else:
            QTimer.singleShot(EXIT_GUARD_MS, close)

    QTimer.singleShot(msecs, due)
