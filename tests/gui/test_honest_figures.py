"""Issue 34: a number on screen is never a lie. Each case is what a user does in the window (real
key presses, drops and clicks), asserted on what the widgets display. No latency value is pinned:
rates are taken from the plan on screen, so the step model's numbers may change."""

from __future__ import annotations

import pytest
from gui_helpers import run_events_until, send_drop
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from studio.core.layout import Layout

NBSP = "\u00a0"


@pytest.fixture
def window(editable_window):
    assert editable_window.doc.result_is_current, editable_window.doc.error
    return editable_window


def _card(win, key: str) -> tuple[str, str, str]:
    c = win.metrics.cards[key]
    return c.value.text().replace(NBSP, " "), c.caption.text(), c.value.property("status") or ""


def _type(spin, text: str) -> None:
    spin.setFocus()
    spin.selectAll()
    QTest.keyClicks(spin, text)
    QTest.keyClick(spin, Qt.Key.Key_Return)


def test_case1_above_saturation_the_cards_and_status_bar_say_saturated(window):
    doc, editor = window.doc, window.model_panel.load_editor
    editor.mode.setFocus()
    QTest.keyClick(editor.mode, Qt.Key.Key_Down)  # Users → Request rate
    doc.recompute_now()
    sat = doc.result.load.saturation_rate_per_s
    _type(editor.rate, f"{2 * sat:.4g}")
    doc.recompute_now()
    assert doc.result.load.saturated
    assert _card(window, "ttft") == (f"saturated at {sat:.3g} req/s", "queue grows: no TTFT", "warn")
    assert _card(window, "tpot")[2] == ""  # decoding at saturation keeps its pace
    assert f"Saturated at {sat:.3g} req/s" in window.engine_label.text() and "no TTFT" in window.engine_label.text()
    assert editor.summary.text().startswith("SATURATED")
    _type(editor.rate, f"{0.5 * sat:.4g}")
    doc.recompute_now()
    value, caption, status = _card(window, "ttft")
    assert value.endswith((" ms", " s")) and caption.startswith("end-to-end ") and status == ""
    assert "TTFT " in window.engine_label.text()


def test_case5_a_layout_that_does_not_fit_shows_no_latency_and_no_timeline(window):
    doc, panel = window.doc, window.layout_panel
    for key in ("tp", "pp"):  # TP 1 × PP 1: 70B in BF16 on each 80 GB GPU
        panel.combos[key].setFocus()
        QTest.keyClick(panel.combos[key], Qt.Key.Key_Home)
    doc.recompute_now()
    assert doc.project.layout.tp == doc.project.layout.pp == 1 and not doc.result.fits
    for key in ("ttft", "tpot", "throughput", "cost"):
        value, _caption, status = _card(window, key)
        assert (value, status) == ("does not fit", "warn"), key
    assert _card(window, "allreduce")[:2] == ("none", "TP 1: no all-reduce")
    assert window.engine_label.text().endswith("· does not fit") and "TTFT" not in window.engine_label.text()
    assert window.timeline.plot.timeline is None and "does not fit" in window.timeline.caption.text()


def test_case8_a_refused_plan_leaves_no_value_of_the_last_one(window):
    doc, panel = window.doc, window.model_panel
    QTest.mouseClick(panel.batch_auto, Qt.MouseButton.LeftButton)  # Batch: auto
    doc.recompute_now()
    assert doc.project.workload.batch == "auto" and panel.batch.text() == f"{doc.result.batch:,}"
    assert "saturation" in panel.load_editor.summary.text()
    doc.edit("Too big", "layout", lambda p: p.replace(layout=Layout(tp=8, pp=4, micro_batches=4)))
    doc.recompute_now()
    assert doc.error
    plot = window.timeline.plot
    assert plot.timeline is None
    assert plot.getPlotItem().getAxis("left")._tickLevels == [[]]  # no lane names of the last plan
    assert panel.batch.text() == "—"
    assert "not computed" in panel.load_editor.summary.text()
    assert all(_card(window, k)[0] == "—" for k in window.metrics.cards)
    assert window.engine_label.text() == "plan not computed"


def test_case4_a_gpu_deleted_and_dropped_back_returns_with_its_links(window):
    doc, scene = window.doc, window.scene
    links, layout = len(doc.project.cluster.links), doc.project.layout
    node = doc.project.cluster.nodes[0]
    scene.item_by_id(node.gpus[3].id).setSelected(True)
    window.canvas.setFocus()
    QTest.keyClick(window.canvas, Qt.Key.Key_Delete)
    assert len(doc.project.cluster.links) < links
    item = window.palette.items[("gpu", "h100-sxm")]
    mime = window.palette.tree.mimeData([item])
    target = scene.nodes[node.id].mapToScene(scene.nodes[node.id].boundingRect().center())
    window.canvas.centerOn(target)
    assert send_drop(window.canvas, mime, target)[1]
    assert len(doc.project.cluster.links) == links
    doc.recompute_now()
    assert doc.error == "" and doc.result.status.ok
    assert doc.project.layout.world_size == layout.world_size
    assert _card(window, "ttft")[0].endswith((" ms", " s"))


def _link_centre(win, link_id):
    item = win.scene.links[link_id]
    return item.mapToScene(item.line().center())


def test_case7_a_links_kind_changes_from_its_context_menu_in_one_undo_step(window):
    doc, scene = window.doc, window.scene
    link = next(lk for lk in doc.project.cluster.links if lk.id.endswith("~pcie0") and "/gpu0" in lk.a)
    offered = []

    def choose(kinds, _pos):
        offered.extend(k.id for k in kinds)
        return next(k for k in kinds if k.id != link.kind)

    scene.choose_kind = choose
    pos = _link_centre(window, link.id)
    window.canvas.centerOn(pos)
    view_pt = window.canvas.mapFromScene(pos)
    from PySide6.QtGui import QContextMenuEvent
    from PySide6.QtWidgets import QApplication

    event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, view_pt, window.canvas.viewport().mapToGlobal(view_pt))
    QApplication.sendEvent(window.canvas.viewport(), event)
    assert link.kind in offered and len(offered) > 1
    new = doc.project.cluster.link(link.id).kind
    assert new != link.kind
    assert doc.undo_stack.count() == 1 and doc.undo_stack.undoText().startswith(f"Link kind of {link.id} → ")
    doc.undo_stack.undo()
    assert doc.project.cluster.link(link.id).kind == link.kind


def test_case7_the_link_kind_box_edits_the_selected_link(window):
    doc, box = window.doc, window.link_kind
    assert not box.kind.isEnabled()
    link = next(lk for lk in doc.project.cluster.links if lk.id.endswith("~pcie0") and "/gpu0" in lk.a)
    doc.set_selection((link.id,))
    assert box.kind.isEnabled() and box.kind.currentData() == link.kind
    box.kind.setFocus()
    QTest.keyClick(box.kind, Qt.Key.Key_Down)
    assert doc.project.cluster.link(link.id).kind == box.kind.currentData() != link.kind
    assert doc.undo_stack.count() == 1


def test_case6_a_gpu_deleted_leaves_the_rest_idle_hatched_and_counted(window):
    doc, scene = window.doc, window.scene
    gpu = doc.project.cluster.nodes[1].gpus[3].id
    scene.item_by_id(gpu).setSelected(True)
    window.canvas.setFocus()
    QTest.keyClick(window.canvas, Qt.Key.Key_Delete)
    doc.recompute_now()
    p, r = doc.project, doc.result
    assert r.status.ok and r.idle_gpus and p.layout.world_size + len(r.idle_gpus) == 15
    hatched = {t.item_id for n in scene.nodes.values() for t in n.endpoints.values() if getattr(t, "idle", False)}
    assert hatched == set(r.idle_gpus)
    n = len(r.idle_gpus)
    assert window.engine_label.text().endswith(f"{n} GPU{'s' if n > 1 else ''} idle")
    assert f"{n} idle" in window.layout_panel.summary.text()
    assert f"({n} idle)" in window.metrics.status.text()
    doc.undo_stack.undo()
    doc.recompute_now()
    assert not any(getattr(t, "idle", False) for nd in scene.nodes.values() for t in nd.endpoints.values())


def test_case9_the_explorers_pool_line_names_targets_only_when_there_are_some(project):
    from types import SimpleNamespace

    from studio.gui.explorer.widget_parts.reasons_text import no_pools_text

    none = SimpleNamespace(project=project, rows=(), combinations=0, skipped={})
    assert "targets" not in no_pools_text(none) and "can be costed" in no_pools_text(none)
    skipped = SimpleNamespace(project=project, rows=(), combinations=12, skipped={"the KV cache holds 0 sequences": 12})
    assert no_pools_text(skipped).endswith("the KV cache holds 0 sequences")
    wl = project.workload.replace(ttft_ms=200.0)
    missed = SimpleNamespace(project=project.replace(workload=wl), rows=(object(),) * 3, combinations=3, skipped={})
    assert no_pools_text(missed).endswith("meets the targets (TTFT ≤ 200 ms)")


def test_case9_the_fitted_canvas_refits_when_the_window_is_resized(window):
    view = window.canvas
    view.fit()
    before = view.transform().m11()
    window.resize(1000, 640)
    run_events_until(lambda: view.transform().m11() < before, "refitted")
    rect = view.scene().itemsBoundingRect()
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.contains(rect.center()) and view.follows_size
    view.zoom_by(1.15)  # the user zooms: a resize no longer refits
    zoom = view.transform().m11()
    window.resize(1280, 800)
    run_events_until(lambda: True, "laid out")
    assert view.transform().m11() == zoom
    view.fit()


def test_random_hardware_edits_leave_no_value_of_an_earlier_plan_on_screen(window):
    """The GUI check of the hardware-edit property (tests/service/test_hardware_edit_property.py):
    after each of a fixed run of random edits, every card, the timeline and the status bar show the
    current plan, its status, or nothing."""
    import random

    from random_edits import KINDS, cluster_edit

    from studio.service import units

    rng = random.Random(34)
    doc, m = window.doc, window.metrics
    for _ in range(12):
        kind = rng.choice(KINDS)
        change = cluster_edit(doc.project, kind, rng.randrange(10_000))
        if change is None:
            continue
        doc.edit_cluster(kind, change)
        doc.recompute_now()
        if doc.error:
            assert doc.result is None and window.engine_label.text() == "plan not computed"
            assert all(c.value.text() == "—" for c in m.cards.values())
            assert window.timeline.plot.timeline is None
            continue
        r = doc.result
        assert m.result is r and window.engine_label.text() == m.status_line()
        ttft = _card(window, "ttft")[0]
        assert ttft == (units.duration_ms(r.ttft_ms) if r.status.shows("ttft") else r.status.headline)
        if r.status.code == "DOES_NOT_FIT":
            assert window.timeline.plot.timeline is None
        else:
            assert window.timeline.result is r


def test_case1_the_why_of_a_voided_figure_gives_the_reason_not_a_number(window):
    doc, editor = window.doc, window.model_panel.load_editor
    editor.mode.setFocus()
    QTest.keyClick(editor.mode, Qt.Key.Key_Down)
    doc.recompute_now()
    _type(editor.rate, f"{3 * doc.result.load.saturation_rate_per_s:.4g}")
    doc.recompute_now()
    QTest.mouseClick(window.metrics.cards["ttft"], Qt.MouseButton.LeftButton)
    why = window.metrics.why.toPlainText()
    assert why.startswith("TTFT: saturated at") and " ms" not in why
    assert "saturated at" in window.metrics.cards["ttft"].toolTip()
