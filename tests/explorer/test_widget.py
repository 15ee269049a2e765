"""pytest-qt tests of the Explorer dock: selection → canvas selection + timeline, plot click → table,
pin/compare, undoable apply, filters, cancel and stale results."""

from __future__ import annotations

import threading

import pytest

from studio.engine import evaluate, sweep
from studio.gui.document import ProjectDocument
from studio.gui.explorer import ExplorerWidget
from studio.service.explore.explorer_analysis import best_rows
from tests.gui.gui_helpers import dispose


@pytest.fixture
def editable_explorer(qtbot, dgx405):
    """A swept Explorer of the test's own, for a test that edits the project (pins, applies)."""
    doc = ProjectDocument(dgx405, threaded=False)
    w = ExplorerWidget(doc, threaded=False)
    qtbot.addWidget(w)
    w.resize(1400, 800)
    w.run_sweep()
    return w


@pytest.fixture(scope="module")
def _module_explorer(qapp, dgx405):
    """One swept Explorer on ``dgx405`` for the module's tests that never edit the project (see
    :func:`explorer`): building and sweeping one costs ~0.2 s of CPU, and six tests only look."""
    doc = ProjectDocument(dgx405, threaded=False)
    w = ExplorerWidget(doc, threaded=False)
    w.resize(1400, 800)
    w.run_sweep()
    yield w, w.tabs.currentIndex()
    dispose(w)


@pytest.fixture
def explorer(_module_explorer):
    """The module's swept Explorer, for a test that selects rows, clicks points, filters or switches
    tabs but never edits the project. Put back afterwards as a fresh one is (no filter, the first
    tab, the recommended row selected, as on a sweep's arrival), and checked: a test that edited the
    project or swept again fails here rather than leaving its change to the next one."""
    w, tab = _module_explorer
    project, steps, result = w.doc.project, w.doc.undo_stack.count(), w.result
    assert w.selected_row() == w.model.recommended and w.tabs.currentIndex() == tab
    yield w
    w.filter.clear()
    w.hide_unfit.setChecked(False)
    w.tabs.setCurrentIndex(tab)
    w.show_recommended()
    assert (w.doc.project, w.doc.undo_stack.count(), w.result) == (project, steps, result), \
        "a test of the shared Explorer edited the project or swept again"


def test_sweep_fills_table_and_plot_best_first(explorer):
    r = explorer.result
    assert r is not None
    assert explorer.proxy.rowCount() == r.candidates
    first = explorer.proxy.index(0, 0)
    assert explorer.proxy.data(first, explorer.proxy.sortRole()) == r.layout(int(r.order[0])).tp
    assert set(explorer.plot.rows.tolist()) == set(map(int, r.columns["fits"].nonzero()[0]))
    assert "Recommended" in explorer.reasons.toPlainText()
    assert explorer.selected_row() == r.recommended  # the recommendation is shown on arrival


def test_selecting_a_row_previews_on_canvas_and_draws_its_timeline(explorer, qtbot):
    r = explorer.result
    tp16 = best_rows(r)[(16, 1, 1, 1)]
    previews = []
    explorer.layoutPreview.connect(previews.append)
    project_before = explorer.doc.project
    explorer.table.selectRow(explorer.index_of_row(tp16).row())
    plan = r.plan(tp16)
    assert explorer.doc.selection == plan.layout.placement[:16]  # the TP group on the canvas
    assert explorer.timeline.plot.timeline is plan.timelines["decode"]
    assert previews and previews[-1] is plan
    assert "ib-ndr" in explorer.why.text()
    assert explorer.doc.project is project_before  # a preview never edits


def test_clicking_a_plot_point_selects_its_row(explorer):
    r = explorer.result
    row = int(r.pareto[-1])
    explorer.plot.rowClicked.emit(row)
    assert explorer.selected_row() == row
    assert explorer.plot.selected == row


def test_hide_unfit_and_filter(explorer):
    r = explorer.result
    fits = int(r.columns["fits"].sum())
    explorer.hide_unfit.setChecked(True)
    assert explorer.proxy.rowCount() == fits
    explorer.filter.setText("tp16")
    shown = {int(explorer.proxy.data(explorer.proxy.index(k, 0), explorer.proxy.sortRole()))
             for k in range(explorer.proxy.rowCount())}
    assert shown == {16}
    explorer.hide_unfit.setChecked(False)
    explorer.filter.clear()
    assert explorer.proxy.rowCount() == r.candidates


def test_unfit_rows_are_greyed_with_the_reason(explorer):
    from PySide6.QtCore import Qt

    r = explorer.result
    unfit = int((~r.columns["fits"]).nonzero()[0][0])
    idx = explorer.index_of_row(unfit)
    assert explorer.proxy.data(idx, Qt.ItemDataRole.ForegroundRole) is not None
    assert r.reasons_unfit[unfit] in explorer.proxy.data(idx, Qt.ItemDataRole.ToolTipRole)


def test_pin_compare_and_apply_is_one_undo_step(editable_explorer):
    explorer = editable_explorer
    r = explorer.result
    doc = explorer.doc
    original = doc.project
    rec, tp16 = int(r.recommended), best_rows(r)[(16, 1, 1, 1)]
    assert explorer.pin_row(rec) and explorer.pin_row(tp16)
    assert [lay.tp for lay in doc.project.pinned] == [r.layout(rec).tp, 16]
    assert len(explorer.compare.plans) == 2
    assert explorer.compare.winners()["tok/s per GPU"] == 0
    assert "★" in explorer.compare.table.item(
        [explorer.compare.table.verticalHeaderItem(k).text() for k in range(explorer.compare.table.rowCount())]
        .index("tok/s per GPU"), 0).text()
    before_apply = doc.project
    explorer.compare.applyRequested.emit(1)
    assert doc.project.layout == r.layout(tp16)
    batch = int(r.columns["batch"][tp16])
    # the batch it was pinned at comes along ("auto" stays when it gives that batch: issue 34)
    assert doc.project.workload.batch == batch or evaluate(doc.project, details=False).batch == batch
    assert doc.undo_stack.undoText() == f"Apply layout TP16×PP1 M=1 batch {batch}"
    doc.undo_stack.undo()
    assert doc.project is before_apply  # exactly the previous project
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert doc.project is original
    assert explorer.compare.plans == []


def test_pinning_is_limited_to_four(editable_explorer):
    explorer = editable_explorer
    r = explorer.result
    rows = list(best_rows(r).values())
    messages = []
    explorer.doc.message.connect(messages.append)
    fitting = [i for i in rows if r.columns["fits"][i]][:5]
    assert [explorer.pin_row(i) for i in fitting] == [True] * 4 + [False]
    assert "at most 4" in messages[-1]


def test_placement_tab_applies_a_placement(qtbot, bridge70):
    from tests.explorer.conftest import rewire_bridges

    project = rewire_bridges(bridge70, [(0, 5), (1, 4), (2, 7), (3, 6)])
    doc = ProjectDocument(project, threaded=False)
    w = ExplorerWidget(doc, threaded=False)
    qtbot.addWidget(w)
    w.run_sweep()
    row = best_rows(w.result)[(2, 4, 1, 1)]
    w.select_row(row)
    w.tabs.setCurrentWidget(w.placement)
    comp = w.placement.comparison
    assert comp is not None and comp.layout.tp == 2 and comp.differs
    w.placement.table.selectRow(0)
    w.placement.apply_button.click()
    assert doc.project.layout.placement == comp.options[0].placement
    assert doc.undo_stack.count() == 1


def test_small_multiples_share_one_time_axis(editable_explorer):
    explorer = editable_explorer  # its plots are built on this test's tab switch, with pyqtgraph's menus
    explorer.tabs.setCurrentWidget(explorer.multiples)
    titles = [t for t, _p in explorer.multiples.plans]
    assert [t.split(" ")[0] for t in titles] == ["TP1×PP16", "TP2×PP8", "TP4×PP4", "TP8×PP2", "TP16×PP1"]
    longest = explorer.multiples.shared_range()
    for plot in explorer.multiples.plots[:5]:
        lo, hi = plot.getPlotItem().getViewBox().viewRange()[0]
        assert lo == pytest.approx(0, abs=1e-6) and hi == pytest.approx(longest * 1.02, rel=1e-6)


def _slow_sweeper(gate: threading.Event, calls: list[float] | None = None):
    """A sweep whose progress callback waits up to 50 ms per layout for ``gate`` (set = full speed),
    recording each callback in ``calls``."""
    def run(project, progress=None, **kw):
        def slow(f):
            gate.wait(0.05)
            if calls is not None:
                calls.append(f)
            return progress(f) if progress else True
        return sweep(project, progress=slow, **kw)
    return run


class _HeldSweeper:
    """A sweeper whose worker waits at its first layout until ``release`` is set, and which records
    the engine's go-on answers: a test can cancel a sweep that is certainly still running and see
    where it stopped, whatever the machine's speed."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.answers: list[bool] = []

    def __call__(self, project, progress=None, **kw):
        def held(f):
            self.started.set()
            self.release.wait(60)  # a safety net only: every test sets it
            go_on = progress(f) if progress else True
            self.answers.append(go_on)
            return go_on
        return sweep(project, progress=held, **kw)


def test_cancel_stops_the_worker(qtbot, dgx405):
    sweeper = _HeldSweeper()
    doc = ProjectDocument(dgx405, threaded=False)
    w = ExplorerWidget(doc, sweeper=sweeper)
    qtbot.addWidget(w)
    w.run_sweep()
    assert sweeper.started.wait(30)  # the worker is inside the sweep, held at its first layout
    assert w.running and w.cancel_button.isEnabled()
    with qtbot.waitSignal(w.jobs.responded, timeout=30_000) as done:
        w.cancel()
        assert w.status.text() == "cancelling…"
        sweeper.release.set()
    response = done.args[0]
    assert response.cancelled and response.result is None and response.revision == w.jobs.revision
    assert sweeper.answers == [False]  # stopped at the next layout, not after the whole sweep
    assert w.status.text() == "sweep cancelled" and not w.cancel_button.isEnabled()
    assert w.result is None and not w.running


def test_stale_results_are_dropped(qtbot, dgx405, l40s70):
    gate = threading.Event()
    doc = ProjectDocument(dgx405, threaded=False)
    w = ExplorerWidget(doc, sweeper=_slow_sweeper(gate), debounce_ms=1)
    qtbot.addWidget(w)
    shown = []
    w.resultShown.connect(shown.append)
    w.run_sweep()
    first = w.jobs.scheduler.job
    with qtbot.waitSignal(w.resultShown, timeout=30_000):
        doc.replace_document(l40s70, None)  # a new project while the first sweep runs
        assert first.cancelled  # superseded at once, before the debounce starts the next one
        gate.set()
    assert first.finished.wait(30)
    qtbot.waitUntil(lambda: w.jobs.scheduler.dropped == 1, timeout=30_000)  # the first one's answer
    assert [r.project for r in shown] == [l40s70]
    assert w.result.project is l40s70


def _docked(qtbot, explorer):
    """A window with the explorer in a dock tabbed with another one, shown (the window's layout)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow

    win = QMainWindow()
    qtbot.addWidget(win)
    win.setCentralWidget(QLabel("canvas"))
    other = QDockWidget("Pipeline timeline", win)
    other.setWidget(QLabel("timeline"))
    dock = QDockWidget("Explorer", win)
    dock.setWidget(explorer)
    win.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, other)
    win.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    win.tabifyDockWidget(other, dock)
    dock.raise_()
    win.resize(1280, 800)
    win.show()
    qtbot.waitExposed(win)
    return win, dock, other


@pytest.mark.parametrize("closer", ["dock", "window"])
def test_closing_the_dock_or_window_cancels_the_sweep(qtbot, dgx405, closer):
    sweeper = _HeldSweeper()
    doc = ProjectDocument(dgx405, threaded=False)
    w = ExplorerWidget(doc, sweeper=sweeper, debounce_ms=1)
    win, dock, other = _docked(qtbot, w)
    qtbot.waitUntil(sweeper.started.is_set, timeout=30_000)  # the sweep started on show, held at its first layout
    other.raise_()  # tabbed away behind the timeline (moved off-screen or hidden): the sweep goes on
    qtbot.wait(20)
    job = w.jobs.scheduler.job
    assert w.running and not job.cancelled
    dock.raise_()
    with qtbot.waitSignal(w.jobs.responded, timeout=30_000) as done:
        (dock if closer == "dock" else win).close()
        assert job.cancelled
        sweeper.release.set()
    assert done.args[0].cancelled
    assert sweeper.answers == [False]  # stopped at the next layout, not after 500+ of them
    assert not w.running
    assert w.result is None and w.status.text() == "sweep cancelled"
    doc.edit("Rename plan", "project", lambda p: p.replace(name="Renamed"))
    doc.edit("Longer prompts", "workload", lambda p: p.replace(workload=p.workload.replace(isl=2048)))
    assert not w.jobs.pending and not w.running  # a closed Explorer does not sweep on edits (nor schedules one)
    (dock if closer == "dock" else win).show()
    qtbot.waitUntil(lambda: w.result is not None, timeout=20_000)  # reopened: sweeps the current project
    assert w.result.project is doc.project


def test_closing_the_main_window_cancels_the_sweep_before_waiting_for_it(qtbot, dgx405, monkeypatch):
    """The window's close waits for its workers; the Explorer's sweep must be cancelled before
    that wait, not when the window hides after it (the close then froze for the whole sweep)."""
    from studio.gui.window.app import build_window

    sweeper = _HeldSweeper()
    monkeypatch.setattr("studio.gui.explorer.widget.sweep", sweeper)
    win = build_window(dgx405, threaded=False)
    win.ask_save = lambda: "discard"
    qtbot.addWidget(win)
    win.show()
    win.docks["Explorer"].raise_()  # built and shown: it sweeps
    qtbot.waitUntil(sweeper.started.is_set, timeout=30_000)  # held at its first layout
    job = win.explorer.jobs.scheduler.job
    cancelled_when_waited: list[bool] = []
    real_wait = win.explorer.wait_idle

    def wait_idle(msecs: int = 30_000) -> bool:
        cancelled_when_waited.append(job.cancelled)
        sweeper.release.set()
        return real_wait(msecs)

    monkeypatch.setattr(win.explorer, "wait_idle", wait_idle)
    assert win.close()
    assert cancelled_when_waited == [True]
    assert sweeper.answers == [False]  # stopped at the next layout, not after the whole sweep


def test_cancel_with_no_sweep_in_flight_keeps_the_status(explorer):
    before = explorer.status.text()
    assert "candidates" in before and not explorer.running
    explorer.cancel()
    assert explorer.status.text() == before


def test_a_row_the_rules_refuse_is_not_pinned(qtbot, dgx405):
    """Llama-4-Scout's 40 heads: the sweep shows TP16 rows (unfit, with the reason) but pinning one
    would save a project that cannot be opened again, so it is refused with the rule."""
    from studio.core.project import pinned_problem
    from studio.io.presets import load_catalog

    scout = dgx405.replace(model=load_catalog().model("llama-4-scout").architecture, pinned=())
    doc = ProjectDocument(scout, threaded=False)
    widget = ExplorerWidget(doc, threaded=False)
    qtbot.addWidget(widget)
    widget.run_sweep()
    r = widget.result
    bad = next(i for i in range(r.candidates) if r.layout(i).tp == 16)
    assert pinned_problem(scout.replace(pinned=(r.layout(bad),)), 0) is not None
    messages: list[str] = []
    doc.message.connect(messages.append)
    assert not widget.pin_row(bad)
    assert doc.project.pinned == ()
    assert "cannot be pinned" in messages[-1] and "40 attention heads" in messages[-1]
