"""The canvas repaints only what an edit changed (issue 14: big clusters under 100 ms).

Each GPU tile, switch and NIC box is cached as a pixmap, so Qt calls its ``paint`` only when the
item itself was marked changed; these tests count those calls around real edits.
"""

from __future__ import annotations

import pytest

from studio.core import edits
from studio.gui.canvas.items import Endpoint, GpuTile


@pytest.fixture
def painted(monkeypatch):
    """Ids of the link ends (tiles, switches, NICs) Qt asked to draw, in order."""
    calls: list[str] = []
    real = Endpoint.paint

    def counting(self, p, option, widget=None):
        calls.append(self.item_id)
        return real(self, p, option, widget)

    monkeypatch.setattr(Endpoint, "paint", counting)
    return calls


def _settle(qtbot, canvas):
    """Let the document compute and the view paint whatever is pending."""
    canvas.cluster_scene.doc.recompute_now()
    qtbot.wait(1)
    canvas.viewport().repaint()


def _link(doc, kind: str, inside_node: bool):
    cluster = doc.project.cluster
    owner = {e.id: n.id for n in cluster.nodes for e in (*n.gpus, *n.switches, *n.nics)}
    return next(
        lk for lk in cluster.links
        if lk.kind == kind and (owner.get(lk.a) is not None and owner.get(lk.a) == owner.get(lk.b)) == inside_node
    )


def test_a_full_repaint_draws_every_box_once_then_none_again(qtbot, canvas, painted):
    _settle(qtbot, canvas)
    painted.clear()
    canvas.viewport().repaint()  # nothing changed: every box comes from its cached pixmap
    assert painted == []


def test_a_link_kind_edit_redraws_no_gpu_tile_and_keeps_the_bundles(qtbot, doc, canvas, catalog, painted):
    scene = canvas.cluster_scene
    _settle(qtbot, canvas)
    bundles = list(scene.bundles)
    assert bundles  # 8 InfiniBand links per DGX drawn as one line each
    link = _link(doc, "nvlink4-nvswitch", inside_node=True)
    painted.clear()
    # a faster link: no TP group crosses a slow hop because of it, so no tile changes
    doc.edit_cluster("kind", lambda c: edits.set_link_kind(c, link.id, catalog.link("nvlink5-nvswitch")))
    _settle(qtbot, canvas)
    assert scene.links[link.id].kind.id == "nvlink5-nvswitch"  # the link itself is redrawn
    assert [b for b in scene.bundles] == bundles and all(a is b for a, b in zip(scene.bundles, bundles, strict=True))
    tiles = {e for n in scene.nodes.values() for e, ep in n.endpoints.items() if isinstance(ep, GpuTile)}
    assert not tiles & set(painted)


def test_a_bundle_member_edit_replaces_only_its_nodes_bundle(qtbot, doc, canvas, catalog):
    scene = canvas.cluster_scene
    _settle(qtbot, canvas)
    link = _link(doc, "ib-ndr", inside_node=False)
    owner = doc.project.cluster.node_of(link.a) or doc.project.cluster.node_of(link.b)
    before = {b.node.item_id: b for b in scene.bundles}
    doc.edit_cluster("kind", lambda c: edits.set_link_kind(c, link.id, catalog.link("ib-xdr")))
    _settle(qtbot, canvas)
    after = {b.node.item_id: b for b in scene.bundles}
    assert after[owner.id] is not before[owner.id]
    assert link.id not in after[owner.id].members  # the edited link left its bundle
    others = [nid for nid in before if nid != owner.id]
    assert others and all(after[nid] is before[nid] for nid in others)
    doc.undo_stack.undo()
    _settle(qtbot, canvas)
    assert link.id in {m for b in scene.bundles for m in b.members}


def _ranks(scene, tiles):
    pl = scene.placement
    return {
        g: (pl.stage_of.get(g), pl.dp_of.get(g), pl.group_of.get(g), pl.tp_rank_of.get(g), g in pl.slow_gpus)
        for g in tiles
    }


def test_a_layout_edit_redraws_exactly_the_tiles_whose_rank_changed(qtbot, doc, canvas, painted):
    scene = canvas.cluster_scene
    tiles = {e for n in scene.nodes.values() for e, ep in n.endpoints.items() if isinstance(ep, GpuTile)}
    _settle(qtbot, canvas)
    painted.clear()
    doc.edit("M", "layout", lambda p: p.replace(layout=p.layout.replace(micro_batches=4)))
    _settle(qtbot, canvas)
    assert painted == []  # same rank on every GPU: no tile redrawn
    before = _ranks(scene, tiles)
    doc.edit("DP", "layout", lambda p: p.replace(layout=p.layout.replace(pp=1, dp=2, micro_batches=1)))
    _settle(qtbot, canvas)
    after = _ranks(scene, tiles)
    changed = {g for g in tiles if before[g] != after[g]}
    assert changed and changed != tiles  # the second node's GPUs become replica 1 of stage 0
    assert set(painted) & tiles == changed


def test_a_selected_link_is_drawn_directly_for_its_halo(qtbot, doc, canvas):
    from PySide6.QtWidgets import QGraphicsItem

    item = canvas.cluster_scene.links[_link(doc, "nvlink4-nvswitch", inside_node=True).id]
    cached = QGraphicsItem.CacheMode.DeviceCoordinateCache
    assert item.cacheMode() == cached
    item.setSelected(True)
    assert item.cacheMode() == QGraphicsItem.CacheMode.NoCache  # the halo is wider than the cache
    item.setSelected(False)
    assert item.cacheMode() == cached


class _PaintedRects:
    """Event filter: the rectangles of the paint events a widget receives."""

    def __init__(self, widget):
        from PySide6.QtCore import QEvent, QObject

        class _Filter(QObject):
            def eventFilter(inner, obj, event):  # noqa: N802 - Qt API
                if event.type() == QEvent.Type.Paint:
                    self.rects.extend(event.region())
                return False

        self.rects: list = []
        self._filter = _Filter()
        widget.installEventFilter(self._filter)


def test_a_link_kind_edit_repaints_that_links_rectangle_not_the_canvas(qtbot, doc, canvas, catalog):
    from PySide6.QtCore import QRect

    scene = canvas.cluster_scene
    _settle(qtbot, canvas)
    viewport = canvas.viewport()
    painted = _PaintedRects(viewport)
    link = _link(doc, "nvlink4-nvswitch", inside_node=True)
    line = scene.links[link.id].sceneBoundingRect()
    doc.edit_cluster("kind", lambda c: edits.set_link_kind(c, link.id, catalog.link("pcie-gen5-switch")))
    doc.recompute_now()
    qtbot.waitUntil(lambda: bool(painted.rects))
    qtbot.wait(20)  # anything else the edit queued paints too
    whole = viewport.rect().width() * viewport.rect().height()
    area = sum(r.width() * r.height() for r in painted.rects)
    assert area < 0.05 * whole  # not the whole canvas
    shown = canvas.mapFromScene(line).boundingRect()
    hit = QRect()
    for r in painted.rects:
        hit = hit.united(r)
    assert hit.intersects(shown)  # the edited link is among what was repainted


def _link_state(scene):
    return (
        {lid: (li.kind.id if li.kind else None, li.slow, li.parentItem() is not None) for lid, li in scene.links.items()},
        {k: set(v) for k, v in scene._ext_links.items() if v},
        sorted((b.node.item_id, b.switch.item_id, tuple(b.members)) for b in scene.bundles),
    )


def test_link_edits_synced_incrementally_match_a_scene_built_from_scratch(qtbot, doc, canvas, catalog):
    from studio.gui.canvas.scene import ClusterScene

    scene = canvas.cluster_scene
    _settle(qtbot, canvas)
    inside = _link(doc, "nvlink4-nvswitch", inside_node=True)
    outside = _link(doc, "ib-ndr", inside_node=False)
    others = {lid: li for lid, li in scene.links.items() if lid not in (inside.id, outside.id)}
    doc.edit_cluster("kind", lambda c: edits.set_link_kind(c, inside.id, catalog.link("pcie-gen5-switch")))
    doc.edit_cluster("kind", lambda c: edits.set_link_kind(c, outside.id, catalog.link("ib-xdr")))
    doc.edit_cluster("delete", lambda c: edits.remove_items(c, {outside.id}))
    _settle(qtbot, canvas)
    assert all(scene.links.get(lid) is li for lid, li in others.items())  # untouched links kept their items
    assert outside.id not in scene.links and outside.id not in {m for b in scene.bundles for m in b.members}
    fresh = ClusterScene(doc)
    fresh._on_result(doc.result, 0)
    assert _link_state(scene) == _link_state(fresh)
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    _settle(qtbot, canvas)
    fresh = ClusterScene(doc)
    fresh._on_result(doc.result, 0)
    assert _link_state(scene) == _link_state(fresh)


def test_a_micro_batch_edit_keeps_the_slow_hop_marks_while_it_is_costed(qtbot, doc, canvas, catalog, painted):
    """The slow hops of the last plan hold for an edit that moves no rank and no link: their marks
    stay on the link and the tiles while the engine costs it (no flicker), and nothing is redrawn."""
    from studio.core.layout import Layout

    doc.apply(doc.project.replace(layout=Layout(tp=8, pp=2, micro_batches=2)), "TP8×PP2", "layout")
    link = _link(doc, "nvlink4-nvswitch", inside_node=True)
    doc.edit_cluster("kind", lambda c: edits.set_link_kind(c, link.id, catalog.link("pcie-gen5-switch")))
    _settle(qtbot, canvas)
    scene = canvas.cluster_scene
    slow = set(scene.placement.slow_gpus)
    assert slow and scene.links[link.id].slow  # the TP group crosses a PCIe hop
    painted.clear()
    doc.edit("M", "layout", lambda p: p.replace(layout=p.layout.replace(micro_batches=3)))
    assert not doc.result_is_current  # being costed: the marks are the last plan's
    assert set(scene.placement.slow_gpus) == slow and scene.links[link.id].slow
    _settle(qtbot, canvas)
    assert set(scene.placement.slow_gpus) == slow
    assert painted == []
    doc.edit("TP", "layout", lambda p: p.replace(layout=Layout(tp=4, pp=4, micro_batches=3)))
    assert not doc.result_is_current  # other TP groups: the last plan's hops do not hold for them
    assert scene.placement.slow_gpus == frozenset()
