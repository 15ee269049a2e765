"""Legible at a glance: the legend never covers the drawing, the window fits 1366×768, new nodes
land where nothing else is, and nodes with long names stay told apart."""

from __future__ import annotations

from pathlib import Path

import pytest
from gui_helpers import close_window, send_drop
from PySide6.QtCore import QPointF, QRect

from studio.io.project_file import load_project

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "presets" / "examples").glob("*.json"))


@pytest.fixture
def window(editable_window):
    """The module's shared window at 1280×800 on a fresh document (zoomed, panned or edited by one
    test, started over for the next)."""
    return editable_window


def _global_rect(w) -> QRect:
    return QRect(w.mapToGlobal(w.rect().topLeft()), w.size())


def test_the_legend_is_a_strip_under_the_canvas_not_on_it(window, qtbot):
    legend, view = window.canvas.legend, window.canvas
    assert legend.isVisible() and legend.entries
    assert not _global_rect(legend).intersects(_global_rect(view.viewport()))
    for _ in range(6):  # zoom in and pan: the drawing never runs under the legend
        view.zoom_by(1.3)
    assert not _global_rect(legend).intersects(_global_rect(view.viewport()))
    assert legend.font_pixel_size >= 9
    heads = [e.text for e in legend.entries if e.sample == "heading"]
    assert heads == ["Links", "Stages (TP group = 8 GPUs)"]


def test_the_exported_canvas_puts_the_legend_below_the_drawing(read_only_window):
    window = read_only_window
    view = window.canvas
    rect = view.scene().itemsBoundingRect().adjusted(-20, -20, 20, 20)
    img = view.render_image(scale=1.0)
    assert img.width() == int(rect.width())
    assert img.height() > int(rect.height()) + 20  # the legend rows are added under the drawing


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_window_fits_a_1366x768_screen(qtbot, path):
    from studio.gui.window.app import build_window

    win = build_window(load_project(path), threaded=False)
    win.ask_save = lambda: "discard"
    qtbot.addWidget(win)
    win.show()
    hint = win.minimumSizeHint()
    assert hint.width() <= 1366 and hint.height() <= 700, hint  # 768 less a task bar and a title bar
    win.resize(1366, 700)
    assert (win.width(), win.height()) == (1366, 700)
    close_window(win)


def test_a_node_dropped_over_the_drawing_moves_to_free_canvas(window):
    from studio.gui.canvas.free_spot import free_offset

    doc, scene = window.doc, window.scene
    first = scene.nodes[doc.project.cluster.nodes[0].id]
    near = first.mapToScene(first.boundingRect().bottomRight()) + QPointF(10, 10)  # just off its corner
    item = window.palette.items[("node-template", "dgx-h100")]
    window.canvas.centerOn(near)
    _, dropped = send_drop(window.canvas, window.palette.tree.mimeData([item]), near)
    assert dropped
    c = doc.project.cluster
    new = c.nodes[-1]
    assert (new.x, new.y) != (near.x(), near.y())  # moved off the other nodes
    assert free_offset(c, {new.id}) == 0.0
    assert doc.undo_stack.count() == 1


def test_long_node_names_keep_their_distinguishing_end(qtbot):
    from PySide6.QtGui import QFont, QFontMetrics

    from studio.gui.canvas.items import header_text

    gb = load_project(next(p for p in EXAMPLES if "gb200" in p.stem))
    fm = QFontMetrics(QFont())
    texts = {header_text(n, fm, 200) for n in gb.cluster.nodes}
    assert len(texts) == len(gb.cluster.nodes)  # 18 trays, 18 different headers
    assert all(t.split("   ")[0].endswith(f"tray {k}") for k, t in enumerate(header_text(n, fm, 200) for n in gb.cluster.nodes))


def test_canvas_labels_are_at_least_9_px_on_screen_at_1280x800(read_only_window):
    window = read_only_window
    assert (window.width(), window.height()) == (1280, 800)
    from PySide6.QtGui import QFontInfo, QImage, QPainter

    from studio.gui.canvas.items import BOLD, MIN_TEXT_PX, SMALL, fit_label, legible

    zoom = window.canvas.zoom
    assert zoom < 0.9  # the two boxes are fitted smaller than life: the labels must grow
    img = QImage(10, 10, QImage.Format.Format_ARGB32)
    p = QPainter(img)
    p.scale(zoom, zoom)
    for font in (SMALL, BOLD):
        assert QFontInfo(legible(font, p)).pixelSize() * zoom >= MIN_TEXT_PX - 0.5
    tile = next(iter(window.scene.nodes.values())).endpoints
    gpu = next(t for t in tile.values() if getattr(t, "sublabel", ""))
    parts = fit_label(legible(SMALL, p), gpu._rect, gpu.label, gpu.sublabel)
    p.end()
    assert parts[-1][1] == gpu.sublabel  # the slot number is always shown
    assert all("…" not in text for _r, text in parts)


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)], ids=["1366x768", "1920x1080"])
def test_no_canvas_label_is_cut_at_the_default_zoom_of_the_bundled_example(qtbot, size):
    """Every label the canvas draws as the window opens is whole text inside its box (level of
    detail: a tile too small for "H100 #0" shows "#0"; a row of ports too small for "NIC0" shows
    "8 NICs"), and every GPU shows its slot number."""
    from PySide6.QtGui import QFontMetricsF

    from studio.gui.canvas.items import BOLD, SMALL, GpuTile, header_text, legible
    from studio.gui.window.app import build_window

    win = build_window(threaded=False)
    win.ask_save = lambda: "discard"
    qtbot.addWidget(win)
    win.resize(*size)
    win.show()
    qtbot.waitExposed(win)
    win.doc.recompute_now()
    win.canvas.fit()
    zoom = win.canvas.zoom
    # the drawing fills the view along the side that limits it (no blank band but the one the
    # drawing's own shape leaves), and lies wholly inside it
    drawn_rect = win.canvas.mapFromScene(win.scene.itemsBoundingRect()).boundingRect()
    view_rect = win.canvas.viewport().rect()
    assert view_rect.contains(drawn_rect), (drawn_rect, view_rect)
    assert max(drawn_rect.width() / view_rect.width(), drawn_rect.height() / view_rect.height()) >= 0.9
    fm = QFontMetricsF(legible(SMALL, zoom))
    drawn = 0
    for node in win.scene.nodes.values():
        for e in node.endpoints.values():
            lines = e.drawn_label(zoom)
            if isinstance(e, GpuTile):
                assert lines and lines[-1][1].endswith(e.sublabel), (e.item_id, lines)
            for rect, text in lines:
                assert "…" not in text and fm.horizontalAdvance(text) <= rect.width(), (e.item_id, text)
                assert text in (e.label, e.sublabel, f"{e.label} {e.sublabel}", e.label.split(" ")[0])
                drawn += 1
        for row in node.port_rows:
            if row.collapsed(zoom):
                ((rect, text),) = row.drawn_label(zoom)
                assert fm.horizontalAdvance(text) <= rect.width() and text in row.forms
                drawn += 1
        head = QFontMetricsF(legible(BOLD, zoom))
        box = node.geometry.size.width() - 20
        assert "…" not in header_text(node.node, head, box), header_text(node.node, head, box)
    assert drawn >= 16 + 2  # every GPU, and each node's NVSwitch
    # the Plan panel's common fields fit without scrolling: the advanced sections are folded
    from PySide6.QtWidgets import QScrollArea

    scroll = win.model_panel.parentWidget().parentWidget()
    assert isinstance(scroll, QScrollArea)
    assert not win.model_panel.load_section.expanded and not win.model_panel.spec_section.expanded
    qtbot.waitUntil(lambda: scroll.verticalScrollBar().maximum() == 0)
    win.model_panel.load_section.header.click()  # a click shows the load's settings
    assert win.model_panel.load_editor.isVisible()
    close_window(win)


def test_the_fleet_tab_raised_keeps_the_window_within_1366x768(qtbot):
    """The Fleet view's controls wrap into short rows: raising its tab must not force the window
    wider than a 1366 × 768 screen (its single rows of controls once made it 1,818 px wide)."""
    from studio.gui.window.app import build_window

    win = build_window(load_project(EXAMPLES[0]), threaded=False)
    win.ask_save = lambda: "discard"
    qtbot.addWidget(win)
    win.resize(1366, 700)
    win.show()
    win.docks["Fleet"].raise_()
    qtbot.waitUntil(lambda: win.docks["Fleet"].widget().isVisible())
    assert win.minimumSizeHint().width() <= 1366, win.minimumSizeHint()
    assert win.width() == 1366
    view = win.docks["Fleet"].widget()
    for plot in (view.demand, view.power, view.cost):  # a plot's key wider than the plot pushes its day out of view
        assert plot.getPlotItem().geometry().width() <= plot.viewport().width() + 1
    close_window(win)
