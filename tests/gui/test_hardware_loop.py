"""The what-if loop holds: hardware edits in the real window keep a live plan (issue 11, part 1).

Every gesture is a real Qt event: a drop of the palette's own drag payload, the Delete key, a
click on "Use best layout". Assertions are on the document and on what the window shows.
"""

from __future__ import annotations

import pytest
from gui_helpers import send_drop
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest

from studio.core.layout import Layout
from studio.core.parallelism import layout_reason
from studio.service import units


@pytest.fixture
def window(editable_window):
    """The module's shared window on a fresh document (the edits of one test are not the next one's)."""
    assert editable_window.doc.result_is_current, editable_window.doc.error
    return editable_window


def _drop_template(win, template_id: str) -> bool:
    item = win.palette.items[("node-template", template_id)]
    mime = win.palette.tree.mimeData([item])  # the palette's own drag payload
    scene = win.scene
    pos = scene.itemsBoundingRect().topRight() + QPointF(400, 0)  # empty canvas right of the drawing
    win.canvas.centerOn(pos)
    _, dropped = send_drop(win.canvas, mime, pos)
    return dropped


def _shown_numbers(win) -> None:
    win.doc.recompute_now()
    assert win.doc.error == "" and win.doc.result_is_current
    r = win.doc.result
    assert win.metrics.cards["ttft"].value.text() == units.duration_ms(r.ttft_ms)
    assert r.layout.label in win.engine_label.text()
    assert not win.metrics.best.isVisibleTo(win.metrics)


def test_dropping_a_server_keeps_a_live_plan_in_one_named_undo_step(window):
    doc = window.doc
    start = doc.project
    assert _drop_template(window, "hgx-h200")
    p = doc.project
    assert p.cluster.num_gpus == 24
    assert layout_reason(p.model, p.layout, 24) is None
    assert doc.undo_stack.count() == 1
    assert doc.undo_stack.undoText() == f"Add HGX H200 (8× H200 SXM) · 8 NICs to the fabric · layout re-split to {p.layout.label}"
    new_node = p.cluster.nodes[-1]
    nics = {x.id for x in new_node.nics}
    fabric = {lk.kind for lk in p.cluster.links if lk.a in nics and lk.b == "fabric"}
    assert fabric == {"ib-ndr"}  # the kind of the existing inter-node links
    _shown_numbers(window)
    dp = window.layout_panel.combos["dp"]
    assert dp.currentData() == p.layout.dp and not dp.isEnabled()  # DP fills the rest
    doc.undo_stack.undo()
    assert doc.project is start


def test_deleting_one_gpu_keeps_a_live_plan(window):
    doc = window.doc
    scene = window.scene
    gpu = doc.project.cluster.nodes[1].gpus[3].id
    scene.item_by_id(gpu).setSelected(True)
    window.canvas.setFocus()
    QTest.keyClick(window.canvas, Qt.Key.Key_Delete)
    p = doc.project
    # issue 34: the re-split may leave GPUs idle when that serves better (15 GPUs allow only TP1
    # when every one must be used); the undo text and the status bar count them
    assert p.cluster.num_gpus == 15 and p.layout.world_size <= 15
    assert doc.undo_stack.undoText().startswith("Delete 1 item · layout re-split to ")
    _shown_numbers(window)
    idle = 15 - p.layout.world_size
    if idle:
        assert doc.undo_stack.undoText().endswith(f"on {p.layout.world_size} GPUs, {idle} idle")
        assert window.engine_label.text().endswith(f"{idle} GPU{'s' if idle > 1 else ''} idle")


def test_a_plan_that_cannot_be_computed_says_why_in_one_line_and_offers_the_best_layout(window, qtbot):
    doc = window.doc
    doc.edit("Too big", "layout", lambda p: p.replace(layout=Layout(tp=8, pp=4, micro_batches=4)))
    doc.recompute_now()
    assert doc.error and "e.g." in doc.error  # the engine's full message lists alternatives
    status = window.metrics.status.text()
    assert status.startswith("Cannot compute this plan: ") and "e.g." not in status
    assert window.warnings.list.item(0).text() == status.removeprefix("Cannot compute this plan: ")
    assert window.engine_label.text() == "plan not computed"
    assert all(not t.badge for n in window.scene.nodes.values() for t in n.endpoints.values()
               if hasattr(t, "badge"))  # the last plan's stage badges are gone
    best = window.metrics.best
    assert best.isVisibleTo(window.metrics)
    QTest.mouseClick(best, Qt.MouseButton.LeftButton)
    assert doc.project.layout.world_size == 16
    assert doc.undo_stack.undoText().startswith("Best layout ")
    _shown_numbers(window)
