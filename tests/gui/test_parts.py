"""Smaller parts: drag payloads, bundles of network links, palette filter, settings, placement."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.gui.canvas.kinds import applicable_kinds
from studio.gui.canvas.mime import MIME_TYPE, DragItem, from_mime, to_mime
from studio.service.placement_overlay import layout_overlay


def test_mime_round_trip_and_bad_payloads():
    assert from_mime(to_mime(DragItem("node-template", "dgx-h100"))) == DragItem("node-template", "dgx-h100")
    assert from_mime(QMimeData()) is None
    bad = QMimeData()
    bad.setData(MIME_TYPE, b'{"kind": "rack", "id": "x"}')
    with pytest.raises(StudioError, match="gpu, node-template, empty-node"):
        from_mime(bad)
    bad.setData(MIME_TYPE, b"not json")
    with pytest.raises(StudioError, match="not JSON"):
        from_mime(bad)


def test_network_links_are_bundled_and_shown_when_selected(qtbot, doc, canvas):
    scene = canvas.cluster_scene
    assert len(scene.bundles) == 2  # one per node, 8 InfiniBand links each
    b = scene.bundles[0]
    assert len(b.members) == 8
    hidden = scene.links[b.members[0]]
    assert not hidden.isVisible()
    scene.select_ids((b.members[0],))
    assert hidden.isVisible() and hidden.isSelected()
    scene.select_ids(())
    assert not hidden.isVisible()


def test_palette_lists_presets_and_filters(qtbot, catalog):
    from studio.gui.canvas.palette import Palette

    pal = Palette(catalog)
    qtbot.addWidget(pal)
    assert ("gpu", "h100-sxm") in pal.items and ("node-template", "dgx-h100") in pal.items
    pal.search.setText("mi300")
    visible = [k for k, it in pal.items.items() if not it.isHidden()]
    assert visible and all("mi300" in (it.text(0) + it.toolTip(0)).lower() for k, it in pal.items.items() if k in visible)
    assert pal.items[("gpu", "h100-sxm")].isHidden()


def test_link_kind_menu_offers_network_kinds_between_nics_only(project):
    c = project.cluster
    n0, n1 = c.nodes[:2]
    kinds = applicable_kinds(c, {}, n0.nics[0].id, n1.nics[0].id)
    assert kinds[0].id == n0.nics[0].kind  # the NIC's own network first
    gpu_kinds = applicable_kinds(c, {}, n0.gpus[0].id, n0.gpus[1].id)
    assert all(not k.family.is_network for k in gpu_kinds)


def test_placement_overlay_follows_rank_order(project):
    lay = Layout(tp=4, pp=2, dp=2)
    pl = layout_overlay(lay, project.cluster)
    gpus = [g.id for g in project.cluster.gpus]
    assert pl.stage_of[gpus[0]] == 0 and pl.stage_of[gpus[4]] == 1 and pl.stage_of[gpus[8]] == 0
    assert pl.dp_of[gpus[8]] == 1 and pl.tp_rank_of[gpus[5]] == 1
    assert gpus[15] in pl.stage_of


def test_window_geometry_and_docks_persist(qtbot, project, tmp_path, monkeypatch):
    from studio.gui.window.app import build_window
    from studio.gui.window.settings import make_settings, push_recent, recent_files

    s = make_settings()
    assert "layout-studio-settings" in s.fileName()  # LAYOUT_STUDIO_NO_SETTINGS=1 in conftest
    win = build_window(project, threaded=False)
    qtbot.addWidget(win)
    win.docks["Warnings"].hide()
    win.save_settings()
    again = build_window(project, threaded=False)
    qtbot.addWidget(again)
    assert again.docks["Warnings"].isHidden()
    again.reset_layout()
    assert not again.docks["Warnings"].isHidden()
    files = push_recent(s, tmp_path / "a.json")
    push_recent(s, tmp_path / "b.json")
    push_recent(s, tmp_path / "a.json")
    assert recent_files(s)[:2] == [str((tmp_path / "a.json").resolve()), str((tmp_path / "b.json").resolve())]
    assert files
    s.clear()  # leave no state for later tests
    s.sync()
