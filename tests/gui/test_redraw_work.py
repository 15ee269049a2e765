"""What an edit makes the window redo: only what changed is laid out and painted again (no
timings here; ``benchmarks/gui.py`` measures them)."""

from __future__ import annotations

import pytest
from gui_helpers import DATA, EventCounts, close_window, make_project, open_window, settle_posted
from PySide6.QtCore import QCoreApplication, QSize
from PySide6.QtWidgets import QVBoxLayout, QWidget

from studio.core.layout import Layout
from studio.gui.panels.metrics_panel import MetricsPanel
from studio.gui.toolkit.layout_fence import LayoutFence
from studio.io.importers.hf_config import load_model_config
from studio.io.presets import load_catalog


@pytest.fixture
def panel(qtbot):
    p = MetricsPanel()
    qtbot.addWidget(p)
    return p


def _changes(panel) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    panel.why.document().contentsChange.connect(lambda pos, removed, added: out.append((pos, removed, added)))
    return out


def test_the_why_panel_replaces_only_the_figures_that_changed(panel):
    before = "latency.ttft = 247.7 ms\n  = queue 1.0 ms\n  + prefill 246.7 ms"
    after = "latency.ttft = 257.7 ms\n  = queue 1.0 ms\n  + prefill 256.7 ms"
    panel._set_why(before)
    changes = _changes(panel)
    panel._set_why(after)
    assert panel.why.toPlainText() == after
    # one edit from the first differing character to the last: the lines between are laid out again
    # only if they fall inside it (here they do; a result that changes one figure changes one line)
    assert changes == [(16, after.index("256") + 2 - 16, after.index("256") + 2 - 16)]
    panel._set_why(after)  # the same text: nothing happens
    assert len(changes) == 1


@pytest.mark.parametrize("after", [
    "",  # all of it goes
    "something else entirely",
    "latency.ttft = 247.7 ms",  # a prefix of the text shown
    "latency.ttft = 247.7 ms\n  = queue 1.0 ms\n  + prefill 246.7 ms\nAssumptions:\n  • one",  # grown
    "latency.ttft = 24\u00a07.7 ms 🙂 ms\n  = queue 1.0 ms",  # a no-break space, a character of two UTF-16 units
])
def test_the_why_panel_shows_exactly_the_new_text(panel, after):
    panel._set_why("latency.ttft = 247.7 ms 🙂\n  = queue 1.0 ms\n  + prefill 246.7 ms")
    panel._set_why(after)
    raw = panel.why.document().toRawText  # no-break spaces kept; a paragraph separator between lines
    assert raw() == after.replace("\n", "\u2029")
    panel._set_why("latency.ttft = 247.7 ms")
    assert raw() == "latency.ttft = 247.7 ms"


def test_the_why_panel_follows_a_document_changed_behind_its_back(panel):
    panel._set_why("one\ntwo")
    panel.why.setPlainText("three")
    panel._set_why("one\nfour")
    assert panel.why.toPlainText() == "one\nfour"


def _shown(qtbot, widget) -> None:
    """``widget`` shown, painted once (a widget never exposed is not repainted) and laid out."""
    widget.show()
    qtbot.waitExposed(widget)
    QCoreApplication.processEvents()
    settle_posted()


class _Sized(QWidget):
    """A widget whose size hint is set by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.hint = QSize(40, 20)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return self.hint


def test_a_fence_passes_a_layout_request_on_only_when_the_hints_change(qtbot):
    outer = QWidget()
    qtbot.addWidget(outer)
    inner = _Sized()
    fence = LayoutFence(inner)
    QVBoxLayout(outer).addWidget(fence)
    outer.show()
    settle_posted()
    seen = EventCounts(outer)
    inner.updateGeometry()  # asks, its hints unchanged (a label's new text of the same width)
    settle_posted()
    assert seen.layouts == 0
    inner.hint = QSize(90, 20)
    inner.updateGeometry()
    settle_posted()
    assert seen.layouts == 1
    assert fence.sizeHint() == QSize(90, 20)
    assert inner.geometry() == fence.contentsRect()  # the child fills the fence as laid out again


def test_a_repainted_card_does_not_repaint_the_window_and_dock_under_it(qtbot):
    project = make_project(load_catalog(), load_model_config(DATA / "llama-3.1-70b.config.json"), layout=Layout(tp=8, pp=2))
    win = open_window(qtbot, project)
    settle_posted()
    dock, window = EventCounts(win.docks["Live metrics"]), EventCounts(win)
    card = win.metrics.cards["ttft"]
    card.value.update()
    QCoreApplication.sendPostedEvents()
    assert (dock.paints, window.paints) == (0, 0)
    assert win.metrics.autoFillBackground() and win.timeline.autoFillBackground()
    close_window(win)


def test_a_value_label_remeasures_when_its_text_or_font_changes(qtbot):
    """Its widths are kept per text and font (the size hints ask for them again and again)."""
    from PySide6.QtGui import QFont

    from studio.gui.panels.value_label import ValueLabel

    label = ValueLabel("63.4k tok/s")
    qtbot.addWidget(label)
    first = (label.text_width(1.0), label.sizeHint(), label.minimumSizeHint())
    assert (label.text_width(1.0), label.sizeHint(), label.minimumSizeHint()) == first
    label.setText("1,063.4k tok/s")
    fresh = ValueLabel("1,063.4k tok/s")
    qtbot.addWidget(fresh)
    assert label.text_width(1.0) == fresh.text_width(1.0) > first[0]
    assert label.minimumSizeHint() == fresh.minimumSizeHint()
    font = QFont(label.font())
    font.setPointSizeF(font.pointSizeF() * 2)
    label.setFont(font)
    fresh.setFont(font)
    assert label.text_width(0.7) == fresh.text_width(0.7)
    assert label.sizeHint() == fresh.sizeHint() and label.sizeHint().height() > first[1].height()


def test_a_fence_takes_its_widgets_policy_and_bounds(qtbot):
    from PySide6.QtWidgets import QLabel, QSizePolicy

    label = QLabel("M = 4 · bubble 36%")
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    label.setMinimumWidth(80)
    fence = LayoutFence(label)
    qtbot.addWidget(fence)
    assert fence.sizePolicy() == label.sizePolicy()
    assert fence.minimumSize().width() == 80 and fence.maximumSize() == label.maximumSize()
    fence.show()
    label.setMaximumHeight(30)
    settle_posted()
    assert fence.maximumSize().height() == 30


def test_a_new_timeline_caption_or_plan_line_lays_out_no_panel_or_window(qtbot):
    project = make_project(load_catalog(), load_model_config(DATA / "llama-3.1-70b.config.json"), layout=Layout(tp=8, pp=2))
    win = open_window(qtbot, project)
    _shown(qtbot, win)
    panel, bar, window = EventCounts(win.timeline), EventCounts(win.statusBar()), EventCounts(win)
    win.timeline.caption.setText("M = 7 · bubble 42%")  # the room left is its width
    win.engine_label.setText(win.engine_label.text().replace("1", "2"))  # as wide (digits of one width)
    settle_posted()
    assert (panel.layouts, bar.layouts, window.layouts) == (0, 0, 0)
    win.engine_label.setText(win.engine_label.text() + " · and a much longer line")
    settle_posted()
    assert bar.layouts == 1  # wider: the status bar makes room for it
    close_window(win)


def test_cards_laid_out_again_do_not_repaint_the_plan_line(qtbot, panel):
    """A word-wrapped rich-text label repaints itself whenever asked its height for a width; the
    plan line's fence answers for it until its text changes."""
    panel.resize(330, 600)
    _shown(qtbot, panel)
    panel.status.setText("<b>TP8×PP2</b> on 16 GPUs — fits: KV cache holds 268 sequences")
    settle_posted()
    for text in ("12,345.6 ms", "1.0 ms"):  # the heights for the widths these lay the grid out at
        panel.cards["ttft"].value.setText(text)
        settle_posted()
    seen, grid = EventCounts(panel.status), EventCounts(panel.cards["ttft"].parentWidget())
    width = panel.status.width()
    for text in ("12,345.6 ms", "1.0 ms"):  # the card's hints change: the grid is laid out again
        panel.cards["ttft"].value.setText(text)
        settle_posted()
    assert grid.layouts == 2 and panel.status.width() == width
    assert seen.paints == 0
    panel.status.setText("<b>TP8×PP2</b> on 16 GPUs — does not fit")
    settle_posted()
    assert seen.paints >= 1


def test_the_legend_is_made_again_only_from_another_cluster_or_figures(qtbot, monkeypatch):
    from studio.gui.canvas import legend as legend_module

    project = make_project(load_catalog(), load_model_config(DATA / "llama-3.1-70b.config.json"))
    legend = legend_module.Legend()
    qtbot.addWidget(legend)
    made: list[str] = []
    real = legend_module._kind_text
    monkeypatch.setattr(legend_module, "_kind_text", lambda k: made.append(k.id) or real(k))
    legend.set_content(project.cluster, 2, 8, False)
    first = list(legend.entries)
    assert made
    made.clear()
    legend.set_content(project.cluster, 2, 8, False)  # the same cluster object and figures
    assert not made and legend.entries == first
    legend.set_content(project.cluster, 4, 8, False)  # more stages: made again
    assert made and len(legend.entries) == len(first) + 2
