"""Canvas gestures with real Qt events: drops from the palette, link drawing, delete, move."""

from __future__ import annotations

from gui_helpers import drag_mouse, send_drop
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest

from studio.core import edits
from studio.gui.canvas.items import GpuTile
from studio.gui.canvas.mime import DragItem, to_mime


def _free_one_slot(doc, node_index=0):
    node = doc.project.cluster.nodes[node_index]
    gpu = max(node.gpus, key=lambda g: g.slot)
    doc.edit_cluster("Remove GPU", lambda c: edits.remove_items(c, {gpu.id}))
    doc.undo_stack.clear()
    return node.id, gpu.slot


def test_drag_gpu_from_palette_into_node_snaps_into_free_slot(qtbot, doc, canvas, catalog):
    from studio.gui.canvas.palette import Palette

    node_id, slot = _free_one_slot(doc)
    scene = canvas.cluster_scene
    palette = Palette(catalog)
    qtbot.addWidget(palette)
    item = palette.items[("gpu", "h100-sxm")]
    mime = palette.tree.mimeData([item])  # the palette's own drag payload
    target = scene.nodes[node_id].mapToScene(scene.nodes[node_id].boundingRect().center())
    entered, dropped = send_drop(canvas, mime, target)
    assert entered and dropped
    node = doc.project.cluster.node(node_id)
    assert len(node.gpus) == node.slots
    new = next(g for g in node.gpus if g.slot == slot)
    assert new.type == "h100-sxm"
    assert isinstance(scene.item_by_id(new.id), GpuTile)
    assert doc.undo_stack.count() == 1


def test_gpu_dropped_on_empty_canvas_or_full_node_is_refused(qtbot, doc, canvas):
    scene = canvas.cluster_scene
    before = doc.project
    empty = scene.itemsBoundingRect().bottomRight() + QPointF(-5, -5)
    assert scene.node_at(empty) is None
    _, dropped = send_drop(canvas, to_mime(DragItem("gpu", "h100-sxm")), empty)
    assert not dropped
    assert "needs a node" in scene.last_refusal
    node = scene.nodes[doc.project.cluster.nodes[0].id]
    _, dropped = send_drop(canvas, to_mime(DragItem("gpu", "h100-sxm")), node.mapToScene(node.boundingRect().center()))
    assert not dropped
    assert "is full" in scene.last_refusal
    assert node.flash  # the node flashes red
    assert doc.project is before
    assert doc.undo_stack.count() == 0


def test_node_template_dropped_on_empty_canvas_adds_node_with_links(qtbot, doc, canvas):
    scene = canvas.cluster_scene
    n_nodes, n_links = len(doc.project.cluster.nodes), len(doc.project.cluster.links)
    pos = scene.itemsBoundingRect().bottomRight() + QPointF(-5, -5)
    _, dropped = send_drop(canvas, to_mime(DragItem("node-template", "dgx-h100")), pos)
    assert dropped
    c = doc.project.cluster
    assert len(c.nodes) == n_nodes + 1
    new = c.nodes[-1]
    assert len(new.gpus) == 8
    inner = {g.id for g in new.gpus} | {s.id for s in new.switches}
    assert sum(1 for lk in c.links if lk.a in inner and lk.b in inner) > 8
    assert len(c.links) > n_links
    assert new.id in scene.nodes


def test_draw_link_between_two_gpus_and_pick_the_kind(qtbot, doc, canvas, catalog):
    scene = canvas.cluster_scene
    n0 = doc.project.cluster.nodes[0]
    a, b = n0.gpus[0].id, n0.gpus[1].id
    offered = []

    def choose(kinds, _pos):
        offered.extend(k.id for k in kinds)
        return next(k for k in kinds if k.family.value == "pcie")

    scene.choose_kind = choose
    start = scene.item_by_id(a).center_in_scene()
    end = scene.item_by_id(b).center_in_scene()
    drag_mouse(canvas, start, end)
    link = doc.project.cluster.links[-1]
    assert {link.a, link.b} == {a, b}
    assert doc.project.cluster.link_kinds[link.kind].family.value == "pcie"
    families = {catalog.links[k].family.value if k in catalog.links else doc.project.cluster.link_kinds[k].family.value for k in offered}
    assert families == {"nvlink", "pcie"}  # two H100 SXM of one box: their NVLink or PCIe
    assert offered[0] == "nvlink4-nvswitch" and "xgmi-mi300x" not in offered
    assert link.id in scene.links
    assert doc.undo_stack.undoText().startswith("Add ")


def test_link_between_gpus_of_two_servers_is_refused_without_a_menu(qtbot, doc, canvas):
    scene = canvas.cluster_scene
    n0, n1 = doc.project.cluster.nodes[:2]
    a, b = n0.gpus[0].id, n1.gpus[0].id
    scene.choose_kind = lambda kinds, _pos: (_ for _ in ()).throw(AssertionError(f"menu offered {kinds}"))
    drag_mouse(canvas, scene.item_by_id(a).center_in_scene(), scene.item_by_id(b).center_in_scene())
    assert scene.last_refusal == f"No link kind can join gpu '{a}' and gpu '{b}' in different servers"
    assert doc.undo_stack.count() == 0


def test_link_released_on_nothing_is_refused(qtbot, doc, canvas):
    scene = canvas.cluster_scene
    gpu = doc.project.cluster.nodes[0].gpus[0].id
    start = scene.item_by_id(gpu).center_in_scene()
    drag_mouse(canvas, start, scene.itemsBoundingRect().bottomRight() + QPointF(-3, -3))
    assert "Release a link" in scene.last_refusal
    assert doc.undo_stack.count() == 0


def test_delete_key_removes_selection(qtbot, doc, canvas):
    scene = canvas.cluster_scene
    gpu = doc.project.cluster.nodes[1].gpus[3].id
    scene.item_by_id(gpu).setSelected(True)
    assert doc.selection == (gpu,)
    canvas.setFocus()
    QTest.keyClick(canvas, Qt.Key.Key_Delete)
    assert gpu not in {g.id for g in doc.project.cluster.gpus}
    assert not any(gpu in (lk.a, lk.b) for lk in doc.project.cluster.links)
    assert scene.item_by_id(gpu) is None
    doc.undo_stack.undo()
    assert gpu in {g.id for g in doc.project.cluster.gpus}
    assert scene.item_by_id(gpu) is not None


def test_moving_a_node_is_one_undo_step(qtbot, doc, canvas):
    scene = canvas.cluster_scene
    node = doc.project.cluster.nodes[0]
    item = scene.nodes[node.id]
    header = item.mapToScene(QPointF(item.boundingRect().width() / 2, 10))
    drag_mouse(canvas, header, header + QPointF(120, 80), steps=8)
    moved = doc.project.cluster.node(node.id)
    assert doc.undo_stack.count() == 1
    assert (moved.x, moved.y) != (node.x, node.y)
    assert abs((moved.x - node.x) - 120) < 2 and abs((moved.y - node.y) - 80) < 2
    doc.undo_stack.undo()
    assert doc.project.cluster.node(node.id) == node
    assert (item.x(), item.y()) == (node.x, node.y)


def test_duplicate_and_rename_node(qtbot, doc, canvas):
    scene = canvas.cluster_scene
    node = doc.project.cluster.nodes[0]
    scene.nodes[node.id].setSelected(True)
    assert scene.duplicate_selected()
    copy = doc.project.cluster.nodes[-1]
    assert copy.name == f"{node.name} copy" and len(copy.gpus) == len(node.gpus)
    assert scene.rename_node(copy.id, "Spare box")
    assert doc.project.cluster.node(copy.id).name == "Spare box"
    assert doc.undo_stack.count() == 2


def test_zoom_and_fit(qtbot, doc, canvas):
    z = canvas.zoom
    canvas.zoom_by(2.0)
    assert abs(canvas.zoom - 2 * z) < 1e-9
    canvas.fit()
    rect = canvas.mapFromScene(canvas.scene().itemsBoundingRect()).boundingRect()
    assert canvas.viewport().rect().adjusted(-2, -2, 2, 2).contains(rect)
