"""The Explorer's objective and targets are the project's; Apply applies the row as shown;
"Best layout for my targets" recommends what the Explorer recommends; the Explorer has room."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from studio.engine import evaluate
from studio.gui.document import ProjectDocument
from studio.gui.explorer import ExplorerWidget
from studio.gui.panels.layout_panel import LayoutPanel
from studio.io.project_file import load_project


@pytest.fixture
def explorer(qtbot, dgx405):
    doc = ProjectDocument(dgx405, threaded=False)
    w = ExplorerWidget(doc, threaded=False)
    qtbot.addWidget(w)
    w.resize(1400, 800)
    w.run_sweep()
    return w


def test_objective_is_a_saved_undoable_project_edit(explorer, tmp_path):
    doc = explorer.doc
    start = doc.project
    explorer.objective.setFocus()
    QTest.keyClick(explorer.objective, Qt.Key.Key_Down)  # throughput -> cost
    assert doc.project.explorer.objective == "cost"
    assert doc.undo_stack.undoText() == "Objective: Min $ per M tokens"
    explorer.run_sweep()
    assert explorer.result.objective == "cost"
    hh = explorer.table.horizontalHeader()
    assert explorer.model.headerData(hh.logicalIndex(0), Qt.Orientation.Horizontal) == "$/M tok"
    doc.save(tmp_path / "plan.json")
    assert load_project(tmp_path / "plan.json").explorer.objective == "cost"
    doc.undo_stack.undo()
    assert doc.project is start
    assert explorer.objective.currentData() == "throughput"  # the box follows the project


def test_targets_are_the_workloads(explorer):
    doc = explorer.doc
    explorer.tpot.setFocus()
    explorer.tpot.lineEdit().selectAll()
    QTest.keyClicks(explorer.tpot, "60")
    QTest.keyClick(explorer.tpot, Qt.Key.Key_Return)
    assert doc.project.workload.tpot_ms == 60
    explorer.run_sweep()
    assert explorer.result.tpot_ms == 60
    doc.undo_stack.undo()
    assert doc.project.workload.tpot_ms is None and explorer.tpot.value() == 0


def test_apply_sets_layout_micro_batches_and_batch_in_one_step(explorer):
    doc = explorer.doc
    r = explorer.result
    row = next(int(i) for i in r.order if r.columns["fits"][i] and r.columns["micro_batches"][i] > 1
               and r.layout(int(i)) != doc.project.layout)
    explorer.select_row(row)
    QTest.mouseClick(explorer.apply_button, Qt.MouseButton.LeftButton)
    p = doc.project
    assert p.layout == r.layout(row)
    assert p.layout.micro_batches == int(r.columns["micro_batches"][row])
    # issue 34: a Batch of "auto" stays "auto" when the row's batch is what "auto" gives
    if p.workload.batch == "auto":
        doc.recompute_now()
        assert doc.result.batch == int(r.columns["batch"][row])
    else:
        assert p.workload.batch == int(r.columns["batch"][row])
    assert doc.undo_stack.count() == 1


def test_best_layout_button_recommends_what_the_explorer_recommends(explorer, qtbot):
    doc = explorer.doc
    panel = LayoutPanel(doc)
    qtbot.addWidget(panel)
    doc.apply(doc.project.replace(explorer=doc.project.explorer.replace(objective="latency")), "latency", "explorer")
    explorer.run_sweep()
    r = explorer.result
    rec = int(r.recommended)
    QTest.mouseClick(panel.best, Qt.MouseButton.LeftButton)
    assert doc.project.layout == r.layout(rec)
    want = int(r.columns["batch"][rec])  # "auto" stays when it gives the row's batch (issue 34)
    assert doc.project.workload.batch == want or evaluate(doc.project, details=False).batch == want


def test_run_is_visible_at_1280x800_and_the_explorer_gets_its_own_window(qtbot, dgx405):
    from studio.gui.window.app import build_window

    win = build_window(dgx405, threaded=False)
    win.ask_save = lambda: "discard"
    qtbot.addWidget(win)
    win.show()
    win.resize(1280, 800)
    win.docks["Explorer"].raise_()
    qtbot.waitExposed(win)
    run = win.explorer.run_button
    qtbot.waitUntil(lambda: run.isVisible())
    top_left = run.mapTo(win, run.rect().topLeft())
    bottom_right = run.mapTo(win, run.rect().bottomRight())
    assert win.rect().contains(top_left) and win.rect().contains(bottom_right)
    assert not run.visibleRegion().isEmpty()
    own = win.explorer.own_window
    assert not own.visibleRegion().isEmpty() and win.rect().contains(own.mapTo(win, own.rect().bottomRight()))
    QTest.mouseClick(win.explorer.own_window, Qt.MouseButton.LeftButton)
    dock = win.docks["Explorer"]
    assert dock.isFloating()
    screen = win.screen().availableGeometry()  # the whole screen but a margin, not the dock's strip
    assert dock.width() >= screen.width() - 48 and dock.height() >= screen.height() - 48
    QTest.mouseClick(win.explorer.own_window, Qt.MouseButton.LeftButton)
    assert not dock.isFloating()


def test_snapshot_renders_the_explorer_in_its_own_window(qapp, qtlog, tmp_path):
    """The documented call (docs/gui.md) on the bundled example; an unknown view is refused by name.
    The walk it makes (window shown, plan computed, Explorer raised and swept, floated into its own
    window and docked again, window closed) leaves Qt nothing to warn about.
    (The studio in a process of its own, as a user starts it: tests/gui/test_app_exit_after.py.)"""
    from PySide6.QtGui import QImage

    from studio.core.errors import StudioError
    from studio.gui.toolkit.qt_messages import is_noise
    from studio.gui.window.snapshot import render_main_window

    out = render_main_window(None, tmp_path / "x.png", (1280, 800), "explorer-window")
    img = QImage(str(out))
    assert (img.width(), img.height()) == (1280, 800)
    assert [r.message for r in qtlog.records if not is_noise(r.message, qapp.platformName())] == []
    with pytest.raises(StudioError, match="snapshot view 'pareto' is not one of main, explorer, explorer-window"):
        render_main_window(None, tmp_path / "bad.png", (1280, 800), "pareto")


def test_the_report_ranks_alternatives_by_the_projects_objective(dgx405):
    from studio.service.report.report_content import gather

    p = dgx405.replace(explorer=dgx405.explorer.replace(objective="cost"))
    assert gather(p).objective == "cost"
    assert gather(p, objective="latency").objective == "latency"  # the CLI's --objective wins


def test_the_pinned_batch_is_the_projects_saved_and_undone(qtbot, explorer, tmp_path):
    """Pin stores the row's batch in the project: the comparison and Apply use it after the file
    is opened again, and undo takes it away with the pin."""
    doc = explorer.doc
    r = explorer.result
    row = next(int(i) for i in r.order if r.columns["fits"][i] and int(r.columns["batch"][i]) != 1)
    lay, batch = r.layout(row), int(r.columns["batch"][row])
    start = doc.project
    assert explorer.pin_row(row)
    assert doc.project.pinned_batch(lay) == batch
    doc.save(tmp_path / "plan.json")
    doc.undo_stack.undo()
    assert doc.project is start and doc.project.pinned_batch(lay) is None
    doc.undo_stack.redo()
    assert doc.project.pinned_batch(lay) == batch
    assert explorer.compare.plans[0].batch == batch

    doc2 = ProjectDocument(load_project(tmp_path / "plan.json"), threaded=False)
    again = ExplorerWidget(doc2, threaded=False)
    qtbot.addWidget(again)
    assert again.pinned_plans()[0][0].endswith(f"batch {batch}")
    assert again.pinned_plans()[0][1].batch == batch
    again.apply_pinned(0)
    assert doc2.project.layout == lay
    if doc2.project.workload.batch == "auto":  # issue 34: "auto" stays when it gives the pinned batch
        doc2.recompute_now()
        assert doc2.result.batch == batch
    else:
        assert doc2.project.workload.batch == batch


def test_the_docked_explorer_fits_a_1366x768_window_without_scrolling_sideways(qtbot):
    """At 1366×768 the docked Explorer's control rows wrap and its reasons and table become tabs
    beside the plots, so nothing hides behind a scroll bar; a wide dock keeps them side by side."""
    from studio.gui.window.app import build_window
    from tests.gui.gui_helpers import close_window

    win = build_window(threaded=False)
    win.ask_save = lambda: "discard"
    qtbot.addWidget(win)
    win.resize(1366, 768)
    win.show()
    qtbot.waitExposed(win)
    win.docks["Explorer"].raise_()
    explorer = win.explorer
    qtbot.waitUntil(lambda: explorer.isVisible())
    holder = win._explorer_holder
    assert explorer.compact and [explorer.tabs.tabText(i) for i in (0, 1, 2)] == ["Recommended", "Layouts", "Pareto"]
    qtbot.waitUntil(lambda: holder.horizontalScrollBar().maximum() == 0)  # once the layouts settle
    qtbot.waitUntil(lambda: holder.verticalScrollBar().maximum() == 0)
    assert explorer.minimumSizeHint().width() <= holder.viewport().width()
    explorer._set_compact(False)  # as in a wide dock: the table back beside the plots
    assert explorer.tabs.indexOf(explorer._left) == -1 and explorer._split.indexOf(explorer._left) == 0
    assert explorer.tabs.indexOf(explorer.reasons) == -1 and explorer.reasons.isVisible()
    close_window(win)
