"""An edit lays out neither the main window nor its toolbar: the metric cards' pane keeps steady
width hints, and the toolbar's Undo and Redo keep their text and width (no timings here;
``benchmarks/gui.py`` measures them)."""

from __future__ import annotations

import pytest
from gui_helpers import DATA, EventCounts, close_window, make_project, open_window, settle_posted
from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QToolBar, QToolButton

from studio.core.layout import Layout
from studio.gui.panels.metrics_panel import WIDTH_SLACK, MetricsPanel, steady_width
from studio.io.importers.hf_config import load_model_config
from studio.io.presets import load_catalog


def _undo_button(win) -> QToolButton:
    bar = win.findChild(QToolBar, "toolbar-main")
    undo = next(a for a in win.menuBar().actions()[1].menu().actions() if a.text().startswith("&Undo"))
    return next(b for b in bar.findChildren(QToolButton) if b.defaultAction() is undo)


def _edits(win, rounds: int) -> None:
    """``rounds`` pairs of edits a user makes: the micro-batch count, then a link's kind."""
    from studio.core import edits

    cat = load_catalog()
    nvl, pcie = cat.link("nvlink4-nvswitch"), cat.link("pcie-gen5-switch")
    doc = win.doc
    link = next(lk.id for lk in doc.project.cluster.links if lk.kind == nvl.id)
    for i in range(rounds):
        m = 3 + i % 2
        doc.edit("M", "layout", lambda q, m=m: q.replace(layout=q.layout.replace(micro_batches=m)))
        doc.recompute_now()
        settle_posted(6)
        kind = pcie if i % 2 == 0 else nvl
        doc.edit_cluster("kind", lambda c, k=kind: edits.set_link_kind(c, link, k))
        doc.recompute_now()
        settle_posted(6)


@pytest.fixture
def window(qtbot):
    project = make_project(load_catalog(), load_model_config(DATA / "llama-3.1-70b.config.json"), layout=Layout(tp=8, pp=2))
    win = open_window(qtbot, project)
    qtbot.waitExposed(win)
    QCoreApplication.processEvents()
    settle_posted(6)
    yield win
    close_window(win)


def test_edits_lay_out_neither_the_window_nor_its_toolbar(window):
    _edits(window, 2)  # the cards' pane has asked for the widest of these values
    before = window.metrics.cards["bubble"].value.text()
    win_layouts, bar_layouts = EventCounts(window), EventCounts(window.findChild(QToolBar, "toolbar-main"))
    _edits(window, 2)
    assert window.metrics.cards["bubble"].value.text() == before  # the edits were applied and shown
    assert window.doc.undo_stack.count() == 8
    assert (win_layouts.layouts, bar_layouts.layouts) == (0, 0)


def test_the_toolbar_undo_keeps_its_text_and_width_and_names_the_edit_in_its_tooltip(window):
    button = _undo_button(window)
    width = button.width()
    assert (button.text(), button.isEnabled()) == ("Undo", False)
    _edits(window, 1)
    assert (button.text(), button.width(), button.isEnabled()) == ("Undo", width, True)
    assert button.toolTip() == "Undo kind" and button.defaultAction().text() == "&Undo kind"  # the menu names it
    button.click()
    assert window.doc.undo_stack.undoText() == "M"
    assert button.toolTip() == "Undo M" and button.width() == width


def test_steady_width_follows_up_at_once_and_down_past_the_slack():
    assert steady_width(0, 150) == 150
    assert steady_width(150, 160) == 160  # up: at once
    assert steady_width(160, 160 - WIDTH_SLACK) == 160  # down within the slack: kept
    assert steady_width(160, 159 - WIDTH_SLACK) == 159 - WIDTH_SLACK  # further down: followed


def test_the_cards_pane_keeps_its_width_hints_within_the_slack(qtbot):
    panel = MetricsPanel()
    qtbot.addWidget(panel)
    panel.resize(330, 600)
    panel.show()
    settle_posted(6)
    value = panel.cards["ttft"].value
    pane = panel.cards["ttft"].parentWidget()

    def widths(text: str) -> tuple[int, int]:
        value.setText(text)
        settle_posted(6)
        return pane.minimumSizeHint().width(), panel.minimumSizeHint().width()

    short = widths("1.0 ms")
    wide = widths("12,345,678.9 ms")
    assert wide[0] > short[0] + WIDTH_SLACK and wide[1] > short[1]  # a wider value widens the panel
    assert value.minimumSizeHint().width() <= value.width()  # and is legible at once
    value.setText("12,345,670 ms")
    assert widths("12,345,670 ms") == wide  # a little narrower: the panel keeps its width
    assert widths("1.0 ms") == short  # much narrower: the panel may narrow again
