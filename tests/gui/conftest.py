"""Fixtures of the GUI tests: a small real project (2 × DGX H100 from the bundled presets,
Llama-3.1-70B from its Hugging Face config.json in tests/data/gui) and a document around it."""

from __future__ import annotations

import pytest
from gui_helpers import (
    DATA,
    close_worker_docks,
    dispose,
    engine_evaluate,
    make_project,
    run_events_until,
)

from studio.core.project import Project
from studio.io.importers.hf_config import load_model_config
from studio.io.presets import load_catalog


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def model():
    return load_model_config(DATA / "llama-3.1-70b.config.json")


@pytest.fixture
def project(catalog, model) -> Project:
    return make_project(catalog, model)


@pytest.fixture
def doc(qtbot, project):
    """A synchronous document (engine on the GUI thread after the debounce) around the project."""
    from studio.gui.document import ProjectDocument

    d = ProjectDocument(project, evaluate=engine_evaluate_or_none(), threaded=False)
    qtbot.addWidget  # noqa: B018 - the qtbot fixture creates the QApplication
    yield d
    d.wait_idle()


def engine_evaluate_or_none():
    import studio.engine as engine

    return getattr(engine, "evaluate", None)


@pytest.fixture
def canvas(qtbot, doc, catalog):
    """Scene + view around ``doc``, shown offscreen at a fixed size and fitted."""
    from studio.gui.canvas import CanvasView, ClusterScene

    scene = ClusterScene(doc, catalog)
    view = CanvasView(scene)
    qtbot.addWidget(view)
    view.resize(1000, 700)
    view.show()
    qtbot.waitExposed(view)
    view.fit()
    return view


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path, monkeypatch):
    """Autosave snapshots and error logs of GUI tests go to a temporary folder, never the user's."""
    data = tmp_path / "data-dir"
    monkeypatch.setenv("LAYOUT_STUDIO_DATA_DIR", str(data))
    return data


@pytest.fixture(scope="module")
def _module_window(qapp, catalog, model):
    """One main window on the GUI test project per test module, at 1280×800, shown, its plan
    computed and settled: :func:`read_only_window` hands it out.

    Settled means nothing is left to arrive: the window is exposed (its canvas fitted), and the
    Explorer's first sweep (started in a worker thread once the window shows) has been delivered,
    with the recommended layout it previews on the canvas."""
    engine_evaluate()
    from studio.gui.window.app import build_window

    win = build_window(make_project(catalog, model), threaded=False)
    win.ask_save = lambda: "discard"
    win.show_error = lambda title, text: pytest.fail(f"{title}: {text}")
    win.resize(1280, 800)
    win.show()
    run_events_until(lambda: win.windowHandle() is not None and win.windowHandle().isExposed(), "exposed")
    win.doc.recompute_now()
    assert win.doc.result_is_current, win.doc.error
    ex = win.explorer
    run_events_until(lambda: ex.result is not None and not ex.running and not ex.jobs.pending, "swept")
    yield win
    dispose(win)


def _window_state(win) -> dict:
    """What a test could change in a window: the document (project, revision, file, undo history,
    selection, result) and the view (size, docks, the Plan tab shown, the canvas's zoom and scroll)."""
    doc, view = win.doc, win.canvas
    t = view.transform()
    return {
        "project": id(doc.project), "revision": doc.revision, "path": doc.path, "dirty": doc.is_dirty,
        "undo": (doc.undo_stack.count(), doc.undo_stack.index()), "selection": doc.selection,
        "result": id(doc.result), "error": doc.error, "modified": win.isWindowModified(),
        "size": (win.width(), win.height()), "visible": win.isVisible(),
        # a dock tabbed away is parked outside the window, where Qt may re-lay it out at will
        "docks": {k: (d.isVisible(), d.isFloating(), d.geometry().getRect() if win.rect().intersects(d.geometry()) else "parked")
                  for k, d in win.docks.items()},
        "tab": win.setup_tabs.currentIndex(),
        "canvas": (t.m11(), t.m22(), t.dx(), t.dy(), view.horizontalScrollBar().value(), view.verticalScrollBar().value()),
    }


@pytest.fixture
def read_only_window(_module_window):
    """The module's shared main window, for a test that only looks at it (reads panels, renders
    images). Building a window costs ~0.7 s of CPU; tests that edit, click, zoom or resize use
    :func:`gui_helpers.open_window` instead. The window is checked after the test: a test that
    changed it fails here rather than leaving its change to the next one."""
    before = _window_state(_module_window)
    yield _module_window
    assert _window_state(_module_window) == before, "a read-only test changed the shared window"


@pytest.fixture(scope="module")
def _module_editable_window(qapp, catalog, model):
    """The module's main window for :func:`editable_window`, at 1280×800, shown, with the Explorer
    and Load docks closed (:func:`gui_helpers.close_worker_docks`), and the state a fresh one has."""
    engine_evaluate()
    from studio.gui.window.app import build_window

    win = build_window(make_project(catalog, model), threaded=False)
    win.resize(1280, 800)
    win.show()
    close_worker_docks(win)
    run_events_until(lambda: win.windowHandle() is not None and win.windowHandle().isExposed(), "exposed")
    win.doc.recompute_now()
    assert win.doc.result_is_current, win.doc.error
    run_events_until(lambda: True, "laid out")
    yield win, _fresh_state(win), win.saveState()
    dispose(win)


def _fresh_state(win) -> dict:
    """What a test may leave behind in an editable window, less what a fresh document changes
    anyway (the project's and the result's identity, the revision): the document's file, undo
    history, selection and error, the view (size, docks, Plan tab, canvas zoom and scroll), the
    timeline's phase, the figure explained in Live metrics, what is selected on the canvas."""
    state = _window_state(win)
    for key in ("project", "revision", "result"):
        state.pop(key)
    return state | {
        "current": win.doc.result_is_current, "title": win.windowTitle(), "phase": win.timeline.phase,
        "why": win.metrics.why.toPlainText(), "canvas selection": sorted(win.scene.selected_ids()),
        "workers": tuple(v is not None and v.isVisible() for v in win.built_views),
    }


@pytest.fixture
def editable_window(_module_editable_window, project):
    """The module's shared main window on a fresh document of ``project``, for a test that edits,
    clicks, selects, zooms or resizes but neither closes the window nor needs the Explorer or the
    Load view (their docks are closed). Building a window costs ~0.7 s of CPU; starting over costs
    what File > Open does: the document is replaced (undo history cleared, no file, clean), the
    plan recomputed, the canvas fitted, the window resized to 1280×800, its docks and Plan tab put
    back as they were. The window must then be in the state of a fresh one (:func:`_fresh_state`): anything a
    test left that starting over does not undo fails the next test's setup instead of leaking
    into it."""
    win, fresh, docks = _module_editable_window
    assert win.isVisible(), "a test closed the shared editable window"
    win.ask_save = lambda: "discard"
    win.show_error = lambda title, text: pytest.fail(f"{title}: {text}")
    win.doc.set_selection(())
    win.doc.replace_document(project, None)
    win.doc.recompute_now()
    if (win.width(), win.height()) != (1280, 800):
        win.resize(1280, 800)
    run_events_until(lambda: True, "laid out")
    if _fresh_state(win)["docks"] != fresh["docks"]:
        win.restoreState(docks)
        run_events_until(lambda: True, "laid out")
    win.setup_tabs.setCurrentIndex(fresh["tab"])
    win.canvas.fit()
    now = _fresh_state(win)
    left = {k: (now[k], fresh[k]) for k in fresh if now[k] != fresh[k]}
    assert not left, f"starting over did not give the shared window a fresh state (an earlier test left {left})"
    return win
