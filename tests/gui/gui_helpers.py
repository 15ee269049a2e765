"""Helpers of the GUI tests: the test project and real Qt input events."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QObject

from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import Workload

DATA = Path(__file__).resolve().parents[1] / "data" / "gui"


def engine_evaluate():
    """The real engine's ``evaluate``, or skip the test while it is not installed."""
    import studio.engine as engine

    fn = getattr(engine, "evaluate", None)
    if fn is None:
        pytest.skip("studio.engine.evaluate is not available yet")
    return fn


def open_window(qtbot, project, *, workers: bool = False):
    """The studio's main window on ``project``: synchronous recompute, no save prompt, any error
    dialog failing the test, shown offscreen and with its plan computed.

    Unless ``workers``, the Explorer and Load docks are closed once the window shows (before its
    plan is computed), as a user closes them: the Explorer sweeps and the Load view computes its
    curve only while shown, so neither runs in a worker thread behind the test. Both re-ran on
    every edit (a sweep and a 600-request simulation, ~0.2 s of CPU each) for tests that look at
    neither, and their results landed whenever the test's event loop happened to run."""
    engine_evaluate()
    from studio.gui.window.app import build_window

    win = build_window(project, threaded=False)
    win.ask_save = lambda: "discard"
    win.show_error = lambda title, text: pytest.fail(f"{title}: {text}")
    qtbot.addWidget(win)
    win.show()
    if not workers:
        close_worker_docks(win)
    win.doc.recompute_now()
    return win


def close_worker_docks(win) -> None:
    """Close ``win``'s Explorer and Load docks (the dock's close button): the Explorer's sweep and
    the Load view's curve, the two computations a window runs in worker threads, stop and are not
    started again while the docks stay closed."""
    for name in ("Explorer", "Load"):
        win.docks[name].close()
    explorer, load_view = win.built_views  # built only once their tab was shown
    assert explorer is None or (not explorer.isVisible() and not explorer.running and not explorer.jobs.pending)
    assert load_view is None or not load_view.isVisible()


def close_window(win) -> None:
    """Close ``win`` at the end of a test that has no use for the Explorer's sweep: the sweep the
    window schedules when it shows (in a worker thread, seconds of CPU on a big cluster) is
    cancelled first, as closing the Explorer's dock does, so the close does not wait for it."""
    explorer, _ = win.built_views
    if explorer is not None:
        explorer.close_down()
    assert win.close()


def run_events_until(condition, what: str, timeout_s: float = 60) -> None:
    """Run the event loop until ``condition()`` holds (at least one pass), for fixtures wider than
    a test, which have no ``qtbot``. The loop is a ``QEventLoop``, as ``qtbot.wait`` runs one: the
    worker threads get the GIL while it waits, which ``QTest.qWait`` and
    ``QTest.qWaitForWindowExposed`` hardly give them (a window shown while another was being
    deleted hung in the latter for minutes, its Explorer and Load view workers waiting for the
    GIL). The timeout only guards against a hang."""
    import time

    from PySide6.QtCore import QEventLoop, QTimer

    deadline = time.monotonic() + timeout_s
    loop = QEventLoop()
    while True:
        QTimer.singleShot(10, loop.quit)
        loop.exec()
        if condition():
            return
        assert time.monotonic() < deadline, f"never {what} in {timeout_s:.0f} s"


def dispose(win) -> None:
    """Close and delete ``win`` now (a fixture wider than a test; ``qtbot`` does this for the
    windows of a test), in an event loop that lets worker threads finish."""
    gone: list[bool] = []
    win.destroyed.connect(lambda *_: gone.append(True))
    win.close()
    win.deleteLater()
    run_events_until(lambda: bool(gone), "deleted")


def make_project(catalog, model, nodes: int = 2, template: str = "dgx-h100", layout: Layout | None = None) -> Project:
    t = catalog.node(template)
    cluster = build_cluster(t, nodes, catalog.gpu(t.gpu_type), catalog.links, name=f"{nodes}× {t.name}")
    return Project(
        name="GUI test plan",
        cluster=cluster,
        model=model,
        workload=Workload(isl=1024, osl=256, batch=8),
        layout=layout or Layout(tp=8, pp=2, micro_batches=2),
    )


def send_drop(view, mime, scene_pos):
    """Drag ``mime`` over the view and drop it at ``scene_pos`` (real Qt drag events)."""
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
    from PySide6.QtWidgets import QApplication

    pt = view.mapFromScene(scene_pos)
    actions = Qt.DropAction.CopyAction
    btn, mod = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    with warnings.catch_warnings():  # the QPoint constructors are the only ones PySide6 offers
        warnings.simplefilter("ignore", DeprecationWarning)
        enter = QDragEnterEvent(pt, actions, mime, btn, mod)
        move = QDragMoveEvent(pt, actions, mime, btn, mod)
    QApplication.sendEvent(view.viewport(), enter)
    QApplication.sendEvent(view.viewport(), move)
    drop = QDropEvent(QPointF(pt), actions, mime, btn, mod)
    QApplication.sendEvent(view.viewport(), drop)
    return enter.isAccepted(), drop.isAccepted()


def send_mouse(view, kind, scene_pos, button=None, buttons=None, modifiers=None):
    """Send one mouse event at ``scene_pos`` to the view's viewport."""
    from PySide6.QtCore import QEvent, QPointF, Qt
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication

    types = {"press": QEvent.Type.MouseButtonPress, "move": QEvent.Type.MouseMove, "release": QEvent.Type.MouseButtonRelease}
    button = button if button is not None else (Qt.MouseButton.LeftButton if kind != "move" else Qt.MouseButton.NoButton)
    if buttons is None:
        buttons = Qt.MouseButton.NoButton if kind == "release" else Qt.MouseButton.LeftButton
    local = QPointF(view.mapFromScene(scene_pos))
    glob = QPointF(view.viewport().mapToGlobal(local.toPoint()))
    ev = QMouseEvent(types[kind], local, glob, button, buttons, modifiers or Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(view.viewport(), ev)


def drag_mouse(view, start, end, steps: int = 5, modifiers=None):
    """Press at ``start``, move in ``steps`` to ``end``, release (scene coordinates)."""
    from PySide6.QtCore import QPointF, Qt

    send_mouse(view, "press", start, modifiers=modifiers)
    for i in range(1, steps + 1):
        t = i / steps
        p = QPointF(start.x() + (end.x() - start.x()) * t, start.y() + (end.y() - start.y()) * t)
        send_mouse(view, "move", p, button=Qt.MouseButton.NoButton, modifiers=modifiers)
    send_mouse(view, "release", end, modifiers=modifiers)


class EventCounts(QObject):
    """Counts the layout requests and paints ``widget`` receives (an event filter that lets every
    event through)."""

    def __init__(self, widget) -> None:
        super().__init__()
        self.layouts = self.paints = 0
        widget.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.LayoutRequest:
            self.layouts += 1
        elif event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def settle_posted(rounds: int = 4) -> None:
    """Deliver the posted events ``rounds`` times over: each layout hop posts the next request."""
    for _ in range(rounds):
        QCoreApplication.sendPostedEvents()
