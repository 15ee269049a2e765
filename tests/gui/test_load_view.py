"""Load editor and Load view: each edit is one undo step on the document (real key events), the
curve is computed in the worker and drawn with the saturation rate and the plan's operating point,
an older revision's curve is dropped."""

from __future__ import annotations

import numpy as np
import pytest
from gui_helpers import engine_evaluate
from PySide6.QtCore import Qt


@pytest.fixture(scope="module")
def _curves():
    """The load curves this module computed, by project: most tests start from the same project,
    and a curve is a pure function of it (its simulation is seeded)."""
    return {}


@pytest.fixture(autouse=True)
def _curve_once_per_project(monkeypatch, _curves):
    """Every LoadView of this module (the windows' too) computes each project's curve once."""
    from studio.core.project import Project
    from studio.gui.views import load_view
    from studio.io.project_file import project_to_json

    real = load_view.default_curve

    def once(project: Project):
        key = project_to_json(project)
        if key not in _curves:
            _curves[key] = real(project)
        return _curves[key]

    monkeypatch.setattr(load_view, "default_curve", once)


@pytest.fixture
def live_doc(qtbot, project):
    """A synchronous document with the real engine, its first result published."""
    from studio.gui.document import ProjectDocument

    d = ProjectDocument(project.replace(workload=project.workload.replace(batch="auto")),
                        evaluate=engine_evaluate(), threaded=False)
    d.recompute_now()
    yield d
    d.wait_idle()


@pytest.fixture
def editor(qtbot, live_doc):
    from studio.gui.editors.load_editor import LoadEditor

    e = LoadEditor(live_doc)
    qtbot.addWidget(e)
    e.show()
    qtbot.waitExposed(e)
    return e


def _type(qtbot, spin, text: str) -> None:
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, text)
    qtbot.keyClick(spin, Qt.Key.Key_Return)


def test_mode_rate_and_requests_are_one_undo_step_each(qtbot, editor, live_doc):
    stack = live_doc.undo_stack
    start = stack.count()
    editor.mode.setFocus()
    qtbot.keyClick(editor.mode, Qt.Key.Key_Down)  # Users → Request rate
    ld = live_doc.project.workload.load
    assert ld.mode == "rate" and ld.rate_per_s is not None and ld.rate_per_s > 0
    assert stack.count() == start + 1
    assert editor.rate.isEnabled() and not editor.users.isEnabled()
    _type(qtbot, editor.rate, "0.75")
    assert live_doc.project.workload.load.rate_per_s == pytest.approx(0.75)
    _type(qtbot, editor.requests, "2500")
    assert live_doc.project.workload.load.num_requests == 2500
    assert stack.count() == start + 3
    stack.undo()
    assert live_doc.project.workload.load.num_requests == 1000
    assert editor.requests.value() == 1000  # the editor follows the document
    stack.undo()
    stack.undo()
    assert live_doc.project.workload.load.mode == "concurrency"
    assert editor.mode.currentData() == "concurrency"


def test_users_and_token_budget(qtbot, editor, live_doc):
    _type(qtbot, editor.users, "48")
    assert live_doc.project.workload.load.concurrency == 48
    _type(qtbot, editor.budget, "4096")
    assert live_doc.project.serving.max_num_batched_tokens == 4096
    live_doc.recompute_now()
    assert live_doc.result.load.token_budget == 4096
    assert "saturation" in editor.summary.text()


def test_refused_budget_snaps_back_and_says_why(qtbot, editor, live_doc):
    messages: list[str] = []
    live_doc.message.connect(messages.append)
    count = live_doc.undo_stack.count()
    _type(qtbot, editor.budget, "8")  # below the 16 tokens an iteration needs
    assert live_doc.undo_stack.count() == count
    assert live_doc.project.serving.max_num_batched_tokens is None
    assert editor.budget.value() == 0
    assert messages and "max_num_batched_tokens" in messages[-1]


@pytest.fixture
def view(qtbot, live_doc):
    from studio.gui.views.load_view import LoadView

    v = LoadView(live_doc)
    qtbot.addWidget(v)
    v.resize(1000, 360)
    with qtbot.waitSignal(v.curveReady, timeout=60_000):
        v.show()  # shown: the curve is computed in the worker
    yield v
    v.wait_idle()


def test_curve_drawn_with_saturation_and_operating_point(view, live_doc):
    c = view.curve
    x, y = view.ttft_mean.getData()
    assert np.allclose(x, c.rate_per_s) and np.allclose(y, c.ttft_ms)
    assert np.all(np.diff(y) > 0), "mean TTFT grows with the rate"
    _, p99 = view.ttft_p99.getData()
    assert p99 is not None and len(p99) == len(x)
    # the tail is not below the mean (within simulation noise) while well below saturation; near it
    # the closed form's M/D/1 queue and a 600-request run part ways (see docs/load.md)
    light = x <= 0.7 * c.saturation_rate_per_s
    assert light.sum() >= 8 and np.all(p99[light] >= 0.9 * y[light])
    assert view.saturation.isVisible() and view.saturation.value() == pytest.approx(c.saturation_rate_per_s)
    assert x.max() < c.saturation_rate_per_s
    plan = live_doc.result
    (px,), (py,) = (list(a) for a in view.point_throughput.getData())
    assert (px, py) == pytest.approx((plan.tokens_per_s_per_user, plan.output_tokens_per_s_per_gpu))
    (lx,), (ly,) = (list(a) for a in view.point_latency.getData())
    assert ly == pytest.approx(plan.ttft_ms) and lx == pytest.approx(plan.load.request_rate_per_s)
    assert "of saturation" in view.status.text()


def test_rate_edit_moves_the_point_and_recomputes(qtbot, view, live_doc):
    sat = view.curve.saturation_rate_per_s
    old_revision = view.curve_revision
    with qtbot.waitSignal(view.curveReady, timeout=60_000) as sig:
        live_doc.edit("Request rate", "workload", lambda p: p.replace(workload=p.workload.replace(
            load=p.workload.load.replace(mode="rate", rate_per_s=round(sat * 0.5, 3)))))
        live_doc.recompute_now()
    assert sig.args[1] == live_doc.revision > old_revision
    (lx,), _ = view.point_latency.getData()
    assert lx == pytest.approx(round(sat * 0.5, 3))
    assert "50 % of saturation" in view.status.text() or "% of saturation" in view.status.text()


def test_saturated_rate_is_said(qtbot, view, live_doc):
    sat = view.curve.saturation_rate_per_s
    live_doc.edit("Request rate", "workload", lambda p: p.replace(workload=p.workload.replace(
        load=p.workload.load.replace(mode="rate", rate_per_s=sat * 3))))
    live_doc.recompute_now()
    assert "SATURATED" in view.status.text()


def test_curve_for_an_older_revision_is_dropped(view, live_doc):
    drawn = view.curve
    live_doc.edit("Input length", "workload", lambda p: p.replace(workload=p.workload.replace(isl=2048)))
    view._on_curve(object(), live_doc.revision - 1, "")  # a late answer for the previous project
    assert view.curve is drawn


def test_engine_error_clears_the_view(view):
    view._on_curve(None, view.doc.revision, "the layout does not fit")
    assert view.curve is None
    assert view.ttft_mean.getData()[0] is None or len(view.ttft_mean.getData()[0]) == 0
    assert "does not fit" in view.status.text()


def test_main_window_has_the_load_tab_and_editor(qtbot, live_doc, catalog, tmp_path):
    from PySide6.QtCore import QSettings

    from studio.gui.window.main_window import MainWindow

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    w = MainWindow(live_doc, catalog, settings=settings)
    qtbot.addWidget(w)
    assert "Load" in w.docks and w.built_views == (None, None)  # built when their tab is first shown
    assert w.model_panel.load_editor.doc is live_doc
    w.show()
    qtbot.waitExposed(w)
    assert w.built_views == (None, None)  # behind the timeline's tab: nothing built, nothing computed
    w.docks["Load"].raise_()
    assert w.built_views[1] is not None and w.docks["Load"].widget() is w.load_view
    qtbot.waitUntil(lambda: w.load_view.curve_revision == live_doc.revision, timeout=60_000)
    assert w.load_view.curve is not None and w.built_views[0] is None
    w.load_view.wait_idle()


def test_offline_mode_shows_no_rate_or_users(qtbot, editor, live_doc):
    editor.mode.setFocus()
    qtbot.keyClick(editor.mode, Qt.Key.Key_End)  # the last mode: offline
    assert live_doc.project.workload.load.mode == "offline"
    assert editor.driver.currentWidget() is editor.offline_note
    assert not editor.rate.isEnabled() and not editor.users.isEnabled()
    live_doc.recompute_now()
    assert live_doc.result.load.mode == "offline"


def test_an_edit_starts_the_curve_once_the_edits_pause(qtbot, view, live_doc):
    """The curve of an edited project waits for the debounce (no event loop runs between the
    edits here, so none can start early); a second edit restarts the wait and the one curve drawn
    is the newest project's."""
    started: list[int] = []
    view.jobs.started.connect(started.append)
    for isl in (3000, 3500):
        live_doc.edit("Input length", "workload", lambda p, isl=isl: p.replace(workload=p.workload.replace(isl=isl)))
        live_doc.recompute_now()
        assert view.pending and not view.jobs.running and started == []
        assert view.busy.isVisibleTo(view)
    with qtbot.waitSignal(view.curveReady, timeout=60_000) as sig:
        pass
    assert started == [live_doc.revision] and sig.args[1] == live_doc.revision
    assert not view.pending and not view.busy.isVisibleTo(view)


def test_hiding_the_view_drops_the_waiting_curve_and_showing_it_computes_at_once(qtbot, view, live_doc):
    live_doc.edit("Input length", "workload", lambda p: p.replace(workload=p.workload.replace(isl=3000)))
    live_doc.recompute_now()
    assert view.pending
    view.hide()
    assert not view.pending and not view.jobs.running
    started: list[int] = []
    view.jobs.started.connect(started.append)
    with qtbot.waitSignal(view.curveReady, timeout=60_000) as sig:
        view.show()
        assert started == [live_doc.revision] and not view.pending  # started at once, not waiting
    assert sig.args[1] == live_doc.revision


def test_a_load_tab_behind_the_timeline_computes_nothing_until_raised(qtbot, live_doc, catalog, tmp_path):
    """Qt keeps a dock tab behind another visible; the curve waits for the tab to be raised."""
    from PySide6.QtCore import QSettings

    from studio.gui.window.main_window import MainWindow

    w = MainWindow(live_doc, catalog, settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    started: list[int] = []
    w.load_view.jobs.started.connect(started.append)
    w.resize(1600, 1000)
    w.show()
    qtbot.waitExposed(w)
    assert w.load_view.isVisible() and not w.load_view.seen()  # the timeline's tab is raised
    live_doc.edit("Input length", "workload", lambda p: p.replace(workload=p.workload.replace(isl=3000)))
    live_doc.recompute_now()
    assert started == [] and not w.load_view.pending
    with qtbot.waitSignal(w.load_view.curveReady, timeout=60_000) as sig:
        w.docks["Load"].raise_()
        assert started == [live_doc.revision]  # at once, not after the debounce
    assert sig.args[1] == live_doc.revision
    w.docks["Pipeline timeline"].raise_()  # behind again: an edit's curve waits for the next raise
    live_doc.edit("Input length", "workload", lambda p: p.replace(workload=p.workload.replace(isl=3500)))
    live_doc.recompute_now()
    assert started == [live_doc.revision - 1] and not w.load_view.pending
    w.load_view.wait_idle()
    live_doc.undo_stack.setClean()  # closing asks nothing


def test_floating_the_load_tab_out_computes_its_curve(qtbot, live_doc, catalog, tmp_path):
    """A tab behind the timeline has no curve; floated out as a window of its own it is on screen
    and computes one at once (its dock then says nothing to go by)."""
    from PySide6.QtCore import QSettings

    from studio.gui.window.main_window import MainWindow

    w = MainWindow(live_doc, catalog, settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    w.show()
    qtbot.waitExposed(w)
    assert not w.load_view.seen() and w.load_view.curve is None
    dock = w.docks["Load"]
    with qtbot.waitSignal(w.load_view.curveReady, timeout=60_000) as sig:
        dock.setFloating(True)
        dock.show()
    assert w.load_view.seen() and sig.args[1] == live_doc.revision
    w.load_view.wait_idle()
