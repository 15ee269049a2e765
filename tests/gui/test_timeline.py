"""Pipeline timeline: lanes per stage or per GPU (labelled with GPU ids), hover text with the times
of the segment under the cursor, and a legend listing each segment kind once."""

from __future__ import annotations

import numpy as np
import pytest
from gui_helpers import engine_evaluate

from studio.engine.plan.views import SEGMENT_KINDS
from studio.gui.toolkit.colors import SEGMENT_LABELS


@pytest.fixture
def result(project):
    from studio.core.layout import Layout

    return engine_evaluate()(project.replace(layout=Layout(tp=4, pp=2, dp=2, micro_batches=2)))


@pytest.fixture
def panel(qtbot, result):
    from studio.gui.views.timeline import TimelinePanel

    p = TimelinePanel()
    qtbot.addWidget(p)
    p.resize(900, 420)
    p.show()
    qtbot.waitExposed(p)
    p.set_result(result)
    return p


def test_lanes_per_stage_then_per_gpu(panel, result):
    assert panel.plot.timeline.lanes == ("stage 0", "stage 1")
    panel.set_lane_mode("tp")
    tl = panel.plot.timeline
    first_tp = [g for s in result.stages for g in s.gpus]
    assert len(first_tp) == 8  # TP4 × PP2, first replica
    assert [lane.split(" ", 1)[1] for lane in tl.lanes] == first_tp
    assert tl.lanes[0].startswith("S0 ") and tl.lanes[-1].startswith("S1 ")
    stage = result.timelines["decode"]
    # every GPU lane carries exactly its stage's segments at the same times
    for lane, name in enumerate(tl.lanes):
        s = int(name[1])
        mine, theirs = tl.lane == lane, stage.lane == s
        assert np.array_equal(tl.start[mine], stage.start[theirs])
        assert np.array_equal(tl.kind[mine], stage.kind[theirs])
    panel.lanes.setCurrentIndex(panel.lanes.findData("all"))  # the toggle in the panel
    assert panel.lane_mode == "all"
    assert len(panel.plot.timeline.lanes) == result.gpus == 16
    assert {lane.split(" ", 1)[1] for lane in panel.plot.timeline.lanes} == {m.gpu_id for m in result.memory}
    panel.set_lane_mode("stage")
    assert panel.plot.timeline is result.timelines["decode"]
    with pytest.raises(ValueError, match="stage, tp, all"):
        panel.set_lane_mode("node")


def _move(plot, scene_pt):
    """A real mouse-move event (no button) at ``scene_pt`` on the plot's viewport."""
    from PySide6.QtCore import QEvent, QPointF, Qt
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication

    local = QPointF(plot.mapFromScene(scene_pt))
    glob = QPointF(plot.viewport().mapToGlobal(local.toPoint()))
    ev = QMouseEvent(QEvent.Type.MouseMove, local, glob, Qt.MouseButton.NoButton, Qt.MouseButton.NoButton,
                     Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(plot.viewport(), ev)


def test_hover_shows_the_times_of_the_segment_under_the_cursor(qtbot, panel):
    plot = panel.plot
    tl = plot.timeline
    ar = np.nonzero(tl.segments_of("allreduce"))[0]
    i = int(ar[np.argmax(tl.duration[ar])])  # the widest all-reduce: several pixels wide
    s, d, lane = float(tl.start[i]), float(tl.duration[i]), int(tl.lane[i])
    from PySide6.QtCore import QPointF

    qtbot.wait(50)  # let the view box apply the new range before mapping data to pixels
    vb = plot.getPlotItem().getViewBox()

    scene_pt = vb.mapViewToScene(QPointF(s + d / 2, lane))
    _move(plot, scene_pt)
    qtbot.waitUntil(plot.hover.isVisible, timeout=30_000)
    text = plot.hover.toPlainText()
    assert text.startswith(f"{tl.lanes[lane]} · {SEGMENT_LABELS['allreduce']}")
    assert f"{s:,.3f} → {s + d:,.3f} ms  ({d:,.3f} ms)" in text
    off = vb.mapViewToScene(QPointF(tl.total_ms * 0.5, len(tl.lanes) - 0.5))  # between lanes
    qtbot.wait(60)  # pyqtgraph drops mouse moves closer together than its rate limit
    _move(plot, off)
    qtbot.waitUntil(lambda: not plot.hover.isVisible(), timeout=30_000)


def test_legend_lists_each_segment_kind_once(qtbot, result):
    from studio.gui.views.timeline import TimelinePlot

    plot = TimelinePlot(legend=True)
    qtbot.addWidget(plot)
    plot.set_timeline(result.timelines["prefill"])
    names = [label.text for _sample, label in plot.legend.items]
    assert names == [SEGMENT_LABELS.get(k, k) for k in SEGMENT_KINDS]


def test_caption_says_what_each_phase_draws(panel, result):
    per = -(-result.batch // result.micro_batches)
    panel.set_phase("prefill")
    text = panel.plot.note.textItem.toPlainText()
    assert f"prompts of the whole batch ({result.batch})" in text and f"{per} per micro-batch" in text
    assert panel.caption.toolTip() in text
    panel.set_phase("decode")
    assert f"one token for each of {result.batch} sequences" in panel.plot.note.textItem.toPlainText()
    assert panel.caption.text().startswith(f"M = {result.micro_batches} · bubble")


@pytest.mark.parametrize(("pp", "height"), [(2, 140), (8, 160), (8, 400)])
def test_the_note_never_sits_on_the_bars(qtbot, project, pp, height):
    from PySide6.QtCore import QPointF

    from studio.core.layout import Layout
    from studio.gui.views.timeline import BAR_HEIGHT, TimelinePlot

    r = engine_evaluate()(project.replace(layout=Layout(tp=2, pp=pp, dp=8 // pp, micro_batches=pp)))
    plot = TimelinePlot(legend=False)
    qtbot.addWidget(plot)
    plot.resize(900, height)
    plot.show()
    qtbot.waitExposed(plot)
    plot.set_timeline(r.timelines["decode"])
    plot.set_detail("one token for each of 8 sequences")
    qtbot.wait(20)
    vb = plot.getPlotItem().getViewBox()
    last_lane_bottom = vb.mapViewToScene(QPointF(0, len(r.stages) - 1 + BAR_HEIGHT / 2)).y()
    note = plot.note.mapRectToScene(plot.note.boundingRect())
    assert note.top() >= last_lane_bottom - 0.5, (note.top(), last_lane_bottom)
    assert note.bottom() <= vb.mapRectToScene(vb.boundingRect()).bottom() + 0.5  # and stays in the chart
