"""The main window with the real engine: live metrics, warnings, timeline, files, snapshot."""

from __future__ import annotations

import pytest
from gui_helpers import engine_evaluate, make_project
from PySide6.QtGui import QImage

from studio.core import edits
from studio.core.layout import Layout
from studio.service.messages import one_line


@pytest.fixture
def window(editable_window):
    """The module's shared window on a fresh document (the edits of one test are not the next one's)."""
    assert editable_window.doc.result_is_current, editable_window.doc.error
    return editable_window


def _recompute(win):
    win.doc.recompute_now()
    assert win.doc.result_is_current, win.doc.error
    return win.doc.result


def test_window_opens_with_every_panel_filled(read_only_window):
    window = read_only_window
    r = window.doc.result
    assert window.metrics.cards["ttft"].value.text() == f"{r.ttft_ms:,.1f} ms"
    assert window.metrics.memory.bars and len(window.metrics.memory.bars) == r.gpus
    assert window.timeline.plot.bars["compute"].opts["width"].size > 0
    assert window.warnings.list.count() >= 1
    assert "TP8×PP2" in window.engine_label.text()
    assert len(window.scene.nodes) == 2


def test_metrics_change_when_a_link_goes_from_nvlink_to_pcie(window, catalog):
    before = window.doc.result
    c = window.doc.project.cluster
    pcie = catalog.link("pcie-gen5-switch")
    nvl = [lk.id for lk in c.links if c.link_kinds[lk.kind].family.value == "nvlink"]
    assert nvl

    def downgrade(cluster):
        for lid in nvl:
            cluster = edits.set_link_kind(cluster, lid, pcie)
        return cluster

    window.doc.edit_cluster("NVLink → PCIe", downgrade)
    after = _recompute(window)
    assert after.allreduce_us_per_layer_decode > before.allreduce_us_per_layer_decode
    assert after.tpot_ms > before.tpot_ms
    card = window.metrics.cards["allreduce"].value.text()
    assert card == f"{after.allreduce_us_per_layer_decode:,.1f} µs"
    assert any(window.scene.links[lid].pen().color().name() != "#76b900" for lid in nvl)


def test_warning_click_selects_its_gpus_and_links(window, qtbot):
    # TP16 over two nodes crosses InfiniBand: the engine warns and names the GPUs/links
    window.layout_panel.set_field("pp", 1)
    window.layout_panel.set_field("tp", 16)
    r = _recompute(window)
    rows = [i for i, w in enumerate(window.warnings.warnings) if w.gpus or w.links]
    assert rows, [w.code for w in r.warnings]
    w = window.warnings.warnings[rows[0]]
    window.warnings.click_row(rows[0])
    selected = set(window.scene.selected_ids())
    expected = {i for i in (*w.gpus, *w.links) if window.scene.item_by_id(i) is not None}
    assert expected and selected == expected
    assert set(window.doc.selection) == expected


def test_timeline_updates_when_micro_batches_change(window):
    bars = window.timeline.plot.bars["compute"]
    before = bars.opts["width"].size
    bubble_before = window.doc.result.timelines["decode"].bubble_fraction
    window.layout_panel.micro.setValue(6)
    assert window.doc.project.layout.micro_batches == 6
    r = _recompute(window)
    assert bars.opts["width"].size > before
    assert r.timelines["decode"].bubble_fraction < bubble_before
    assert f"{r.timelines['decode'].bubble_fraction:.0%}" in window.timeline.plot.note.toPlainText()
    assert "M = 6" in window.timeline.caption.text()


def test_layout_panel_offers_only_valid_values(read_only_window):
    window = read_only_window
    tp = [window.layout_panel.combos["tp"].itemData(i) for i in range(window.layout_panel.combos["tp"].count())]
    assert tp == [1, 2, 4, 8, 16]  # divisors of 128 heads up to the 16 drawn GPUs
    ep = window.layout_panel.combos["ep"]
    assert ep.count() == 1 and not ep.isEnabled()  # dense model


def test_title_shows_unsaved_mark_and_close_asks(window, tmp_path):
    assert not window.isWindowModified()
    window.model_panel.isl.setValue(4096)
    assert window.doc.project.workload.isl == 4096
    assert window.isWindowModified()
    asked = []
    window.ask_save = lambda: asked.append(1) or "cancel"
    assert not window.close()
    assert asked and window.isVisible()
    assert window._save_to(tmp_path / "p.json")
    assert not window.isWindowModified()
    assert "p.json" in window.windowTitle()


def test_undo_restores_exact_project_after_panel_edits(window):
    start = window.doc.project
    window.model_panel.osl.setValue(1000)
    window.layout_panel.set_field("pp", 1)
    window.model_panel.kv.setCurrentIndex(window.model_panel.kv.findData("fp8"))
    assert window.doc.undo_stack.count() == 3
    while window.doc.undo_stack.canUndo():
        window.doc.undo_stack.undo()
    assert window.doc.project is start
    assert window.model_panel.osl.value() == start.workload.osl


def test_engine_error_is_shown_not_raised(window):
    window.doc.edit("Too big", "layout", lambda p: p.replace(layout=Layout(tp=8, pp=4)))
    window.doc.recompute_now()
    assert window.doc.error
    assert window.metrics.cards["ttft"].value.text() == "—"
    assert one_line(window.doc.error) in window.metrics.status.text()
    assert window.metrics.status.toolTip() == window.doc.error  # the full message on hover


def test_export_canvas_and_timeline_images(read_only_window, tmp_path):
    window = read_only_window
    for what in ("canvas", "timeline"):
        out = window.export_image(what, tmp_path / f"{what}.png")
        img = QImage(str(out))
        assert not img.isNull() and img.width() > 200


def test_snapshot_renders_png_of_requested_size(qtbot, qtlog, catalog, model, tmp_path):
    engine_evaluate()
    from studio.gui.toolkit.qt_messages import is_noise
    from studio.gui.window.snapshot import render_main_window

    out = render_main_window(make_project(catalog, model), tmp_path / "w.png", (1366, 768))
    img = QImage(str(out))
    assert (img.width(), img.height()) == (1366, 768)
    from PySide6.QtGui import QGuiApplication

    platform = QGuiApplication.platformName()
    # Qt says nothing but the one message the offscreen plugin prints for nothing (studio.gui.toolkit.qt_messages)
    assert [r.message for r in qtlog.records if not is_noise(r.message, platform)] == []


def test_offscreen_chart_renders_for_the_report(read_only_window):
    window = read_only_window
    from studio.gui.views.render import memory_image, timeline_image

    r = window.doc.result
    mem = memory_image(r, (600, 240))
    tl = timeline_image(r.timelines["prefill"], (600, 200))
    assert mem.width() == 1200 and mem.height() == 480  # 2× for print
    assert tl.width() >= 600 and not tl.isNull()
    # the bars are drawn: the weights colour appears in the memory chart
    from PySide6.QtGui import QColor

    from studio.gui.toolkit.colors import MEMORY_PARTS

    weights = QColor(MEMORY_PARTS[0][2]).rgb()
    assert any(mem.pixel(x, y) == weights for x in range(0, 1200, 7) for y in range(0, 480, 7))
