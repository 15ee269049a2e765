"""The cluster scene: mirrors the document's cluster as items, turns gestures into edits.

Synchronisation is incremental (:mod:`studio.gui.canvas.scene_parts.item_sync`): nodes whose content is
unchanged keep their items (only moved), so an edit on a 512-GPU cluster redraws only what changed.
Link drawing and link kinds are in :mod:`studio.gui.canvas.scene_parts.link_drawing`, palette drops in
:mod:`studio.gui.canvas.scene_parts.palette_drops`; this module holds the scene itself: the placement overlay,
the selection, the node edits and the visible refusals.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QTimer, Signal
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsRectItem,
    QGraphicsScene,
)

from studio.core import edits
from studio.core.hardware import Cluster, Link
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.units import MIB
from studio.engine.plan.results import PlanResult
from studio.gui.canvas.items import BundleItem, ClusterSwitchItem, GpuTile, LinkItem, NodeItem
from studio.gui.canvas.kv_badge import KvTierBadge
from studio.gui.canvas.pools import KvTransferArrow
from studio.gui.canvas.scene_parts.item_sync import ItemSync
from studio.gui.canvas.scene_parts.link_drawing import KindChooser, LinkDrawing, _menu_chooser
from studio.gui.canvas.scene_parts.palette_drops import PaletteDrops
from studio.gui.canvas.style import SLOW_LINK_COLOR, stage_color
from studio.gui.document import ProjectDocument
from studio.service.kv_tiers import node_tier_limits
from studio.service.placement_overlay import (
    EMPTY,
    Placement,
    layout_overlay,
    plan_overlay,
    pool_overlay,
    pool_tile_text,
    rank_tile_text,
)

FLASH_MS = 700


class ClusterScene(ItemSync, LinkDrawing, PaletteDrops, QGraphicsScene):
    """Scene of one document's cluster.

    Parameters
    ----------
    doc:
        The document; every gesture becomes one undo step on it.
    catalog:
        The preset :class:`~studio.io.presets.Catalog` that palette drags refer to (``None``: only
        the cluster's own GPU specs and link kinds are available).

    Attributes
    ----------
    choose_kind:
        ``(kinds, screen_pos) -> LinkKind | None``; asks which kind a drawn link gets (a menu by
        default; tests replace it).
    last_refusal:
        Message of the last refused drop or link ("" if none).
    """

    refused = Signal(str)

    def __init__(self, doc: ProjectDocument, catalog=None, parent=None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.catalog = catalog
        self.choose_kind: KindChooser = _menu_chooser
        self.last_refusal = ""
        self.nodes: dict[str, NodeItem] = {}
        self.switches: dict[str, ClusterSwitchItem] = {}
        self.links: dict[str, LinkItem] = {}
        self._ext_links: dict[str, set[str]] = {}  # node/switch id -> top-level links touching it
        self._endpoint_node: dict[str, str] = {}  # GPU/switch/NIC id inside a node -> node id
        self._link_values: dict[str, Link] = {}  # link id -> the Link value its item draws
        self._slow_drawn: set[str] = set()  # links drawn as slow hops
        self._drawn_placement: Placement | None = None  # the placement the tiles were last given
        self.bundles: list[BundleItem] = []
        self._cluster: Cluster | None = None
        self._placement: Placement | None = None
        #: The last plan and the cluster and layout it was computed for (see _current_plan).
        self._costed: tuple[PlanResult, Cluster, Layout] | None = None
        self._syncing_selection = False
        self._link_src = None
        self._link_press = QPointF()
        self._link_line = None
        #: The KV-transfer arrow of a costed disaggregated plan (None when aggregated).
        self.kv_arrow: KvTransferArrow | None = None
        self.kv_badges: dict[str, KvTierBadge] = {}  # each node's KV-tier band (see _sync_tiers)
        self._disagg = None  # the DisaggResult the arrow shows
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        self.setBackgroundBrush(QColor("#f8f9fa"))
        self.sync(doc.project)
        doc.projectChanged.connect(self._on_project)
        doc.resultReady.connect(self._on_result)
        doc.errorChanged.connect(self._on_error)
        doc.selectionChanged.connect(self.select_ids)
        self.selectionChanged.connect(self._on_scene_selection)

    # ------------------------------------------------------------- syncing
    def _on_project(self, project: Project, kind: str) -> None:
        if kind in ("cluster", "file"):
            self.sync(project)
        elif kind == "serving":
            self._sync_tiers(project)
        if kind in ("layout", "serving"):
            self._placement = self._placement_of(project, self._current_plan(project))
            self._paint_overlay()
        if not project.serving_mode.disaggregated:
            self.set_disagg(None)

    def sync(self, project: Project) -> None:
        """Bring the items in line with ``project.cluster`` (incremental)."""
        cluster = project.cluster
        self._syncing_selection = True
        try:
            rebuilt = self._sync_nodes(cluster)
            switches_changed = self._sync_switches(cluster)
            if self._sync_links(cluster, rebuilt) or switches_changed:
                self._sync_bundles(cluster)
        finally:
            self._syncing_selection = False
        self._cluster = cluster
        self._sync_tiers(project)
        placement = self._placement_of(project, self._current_plan(project))
        if placement == self._placement and not rebuilt:
            self._paint_links(placement)  # the tiles show it already; new link items need it
        else:
            self._placement = placement
            self._paint_overlay(every_tile=bool(rebuilt))
        if self.kv_arrow is not None:
            self._place_arrow()  # its tiles may have moved or gone

    def _sync_tiers(self, project: Project) -> None:
        """Each node's KV-tier band: the project's host / NVMe KV per node against the node's own."""
        t = project.serving.kv_tiers
        limits = node_tier_limits(project) if (t.host_gib or t.disk_gib) else {}
        badges: dict[str, KvTierBadge] = {}
        for nid, item in self.nodes.items():
            badge = self.kv_badges.get(nid)
            if badge is None or badge.owner is not item:  # a new or rebuilt node: its band went with it
                badge = KvTierBadge(item.geometry.size.width(), item.geometry.size.bottom(), item)
            host, nvme = limits.get(nid, (None, None))
            badge.set_tiers(t.host_gib, t.disk_gib, host, nvme)
            badges[nid] = badge
        self.kv_badges = badges

    def node_moved(self, item: QGraphicsItem) -> None:
        """Called by node/switch items while they move: keep their external links attached."""
        for lid in self._ext_links.get(item.item_id, ()):  # type: ignore[attr-defined]
            li = self.links.get(lid)
            if li is not None:
                li.refresh()
        for b in self.bundles:
            if b.node is item or b.switch is item:
                b.refresh()
        if self.kv_arrow is not None:
            self._place_arrow()

    # ------------------------------------------------------------- overlay
    def _current_plan(self, project: Project) -> PlanResult | None:
        """The last plan, while its slow hops still hold for ``project`` (same TP): the plan of
        ``project`` itself, or, while an edit that moves no rank and no link (the micro-batch
        count) is being costed, the plan before it. (Without the latter, every such edit on a
        cluster with a slow hop took the hop's marks off its link and GPU tiles until the engine
        answered, and put them back then: the tiles flickered, and were drawn twice per edit.)"""
        r = self.doc.result
        if r is None or r.layout.tp != project.layout.tp:
            return None
        if self.doc.result_is_current:
            return r
        costed = self._costed
        if costed is not None and costed[0] is r and project.cluster is costed[1]:
            layout = costed[2]
            if project.layout.micro_batches != layout.micro_batches:
                layout = layout.model_copy(update={"micro_batches": project.layout.micro_batches})  # compared only
            if layout == project.layout:
                return r
        return None

    def _placement_of(self, project: Project, plan: PlanResult | None) -> Placement:
        """The overlay: the disaggregated pools when the project has them, else the layout's ranks."""
        pools = pool_overlay(project)
        if pools is not None:
            return pools
        return layout_overlay(project.layout, project.cluster, plan)

    def set_disagg(self, result) -> None:
        """Show the KV-transfer arrow of a costed disaggregated plan (None removes it)."""
        self._disagg = result
        self._place_arrow()

    def _place_arrow(self) -> None:
        res = self._disagg
        t = getattr(res, "transfer", None)
        src = self.item_by_id(t.src_gpu) if t is not None and t.src_gpu else None
        dst = self.item_by_id(t.dst_gpu) if t is not None and t.dst_gpu else None
        if res is None or t is None or src is None or dst is None:
            if self.kv_arrow is not None:
                self.removeItem(self.kv_arrow)
                self.kv_arrow = None
            return
        if self.kv_arrow is None:
            self.kv_arrow = KvTransferArrow()
            self.addItem(self.kv_arrow)
        over = t.bottleneck_name or "the same GPU"
        text = f"KV transfer {t.time_ms:.3g} ms"
        tip = (
            f"KV cache of one request, prefill → decode: {t.bytes_per_request / MIB:,.1f} MiB in "
            f"{t.flows} rank-to-rank flows, {t.time_ms:.3g} ms; slowest hop {over} "
            f"({t.src_gpu} → {t.dst_gpu})"
        )
        tops = [item.sceneBoundingRect().top() for item in (src.parentItem(), dst.parentItem()) if item is not None]
        self.kv_arrow.set_ends(src.sceneBoundingRect().center(), dst.sceneBoundingRect().center(), text, tip,
                               clear_top=min(tops) if tops else None)

    def _on_result(self, result, revision: int) -> None:
        project = self.doc.project
        self._costed = (result, project.cluster, project.layout)
        if project.serving_mode.disaggregated and pool_overlay(project) is not None:
            return  # the tiles show the pools, not the aggregated layout
        placement = plan_overlay(result)
        if placement == self._placement:
            return  # the tiles already show it (painted when the project changed)
        self._placement = placement
        self._paint_overlay()

    def _on_error(self, message: str) -> None:
        """The engine refused the project: the last plan's stage badges and slow links go."""
        if not message or self._placement is None:
            return
        self._placement = EMPTY
        self._paint_overlay()

    @property
    def placement(self) -> Placement | None:
        return self._placement

    def _paint_overlay(self, every_tile: bool = False) -> None:
        """Show the placement on the GPU tiles and links; only tiles whose rank changed repaint.

        When only the slow-hop marks changed since the tiles were last drawn (a link-kind edit),
        only the GPUs that gained or lost the mark are looked at; ``every_tile`` (new tiles were
        made) looks at all of them."""
        pl = self._placement
        if pl is None:
            return
        drawn, self._drawn_placement = self._drawn_placement, pl
        if not every_tile and drawn is not None and _same_ranks(drawn, pl):
            tiles = []
            for gid in drawn.slow_gpus ^ pl.slow_gpus:
                node = self.nodes.get(self._endpoint_node.get(gid, ""))
                ep = node.endpoints.get(gid) if node is not None else None
                if ep is not None:
                    tiles.append((gid, ep))
        else:
            tiles = [(eid, ep) for node in self.nodes.values() for eid, ep in node.endpoints.items()]
        for eid, ep in tiles:
            if not isinstance(ep, GpuTile):
                continue
            stage = pl.stage_of.get(eid)
            idle = stage is None and bool(pl.stage_of)  # a layout runs, without this GPU
            key = (stage, pl.dp_of.get(eid), pl.group_of.get(eid), pl.tp_rank_of.get(eid), eid in pl.slow_gpus,
                   pl.pool_of.get(eid), idle)
            if key == getattr(ep, "rank_key", None):
                continue  # same rank as drawn: skip building its label, colour and tooltip
            ep.rank_key = key
            if stage is None:
                ep.show_placement(None, None, "", None, "\n— idle: not used by this layout" if idle else "")
                ep.set_idle(idle)
                continue
            ep.set_idle(False)
            if eid in pl.pool_of:
                label, note = pool_tile_text(pl, eid, self.doc.project)
                ep.show_placement(stage, pl.group_of[eid], label, stage_color(stage).darker(130), note)
                continue
            label, note = rank_tile_text(pl, eid)
            ring = QColor(SLOW_LINK_COLOR) if eid in pl.slow_gpus else stage_color(stage).darker(130)
            ep.show_placement(stage, pl.group_of[eid], label, ring, note)
        self._paint_links(pl)

    def _paint_links(self, pl: Placement) -> None:
        """Mark the slow hops a TP group crosses: only the links marked before or now are looked
        at (a new link item starts unmarked), and only those whose mark changes repaint."""
        for lid in self._slow_drawn | pl.slow_links:
            li = self.links.get(lid)
            if li is not None:
                li.set_slow(lid in pl.slow_links)
        self._slow_drawn = set(pl.slow_links)

    # ----------------------------------------------------------- selection
    def item_by_id(self, ident: str) -> QGraphicsItem | None:
        """The item showing node/GPU/switch/NIC/link ``ident`` (None when not drawn)."""
        if ident in self.nodes:
            return self.nodes[ident]
        if ident in self.links:
            return self.links[ident]
        if self._cluster is None:
            return None
        return self._endpoint(self._cluster, ident)

    def selected_ids(self) -> tuple[str, ...]:
        return tuple(sorted(getattr(i, "item_id", "") for i in self.selectedItems() if hasattr(i, "item_id")))

    def select_ids(self, ids: tuple[str, ...]) -> None:
        """Select exactly the items of ``ids`` (from a warning click or the document)."""
        if set(ids) == set(self.selected_ids()):
            return
        self._syncing_selection = True
        try:
            self.clearSelection()
            for i in ids:
                item = self.item_by_id(i)
                if item is not None:
                    item.setVisible(True)
                    item.setSelected(True)
        finally:
            self._syncing_selection = False
        self.doc.set_selection(self.selected_ids())

    def _on_scene_selection(self) -> None:
        for b in self.bundles:
            for lid in b.members:
                li = self.links.get(lid)
                if li is not None:
                    li.setVisible(li.isSelected())
        if not self._syncing_selection:
            self.doc.set_selection(self.selected_ids())

    # --------------------------------------------------------------- edits
    def delete_selected(self) -> bool:
        ids = self.selected_ids()
        if not ids:
            return False
        n = len(ids)
        return self.doc.edit_cluster(
            f"Delete {n} item{'s' if n > 1 else ''}", lambda c: edits.remove_items(c, set(ids))
        )

    def duplicate_selected(self) -> bool:
        nodes = [i for i in self.selected_ids() if i in self.nodes]
        if not nodes:
            self.refuse("Select a node to duplicate")
            return False

        def dup(c: Cluster) -> Cluster:
            for nid in nodes:
                c, _ = edits.duplicate_node(c, nid)
            return c

        return self.doc.edit_cluster(f"Duplicate {len(nodes)} node{'s' if len(nodes) > 1 else ''}", dup)

    def rename_node(self, node_id: str, name: str) -> bool:
        return self.doc.edit_cluster(f"Rename node to '{name}'", lambda c: edits.rename_node(c, node_id, name))

    def commit_moves(self) -> bool:
        """Store the positions of moved nodes/switches as one undo step (on mouse release)."""
        cluster = self.doc.project.cluster
        moved: dict[str, tuple[float, float]] = {}
        for n in cluster.nodes:
            item = self.nodes.get(n.id)
            if item is not None and (item.x(), item.y()) != (n.x, n.y):
                moved[n.id] = (round(item.x(), 1), round(item.y(), 1))
        for s in cluster.switches:
            sw_item = self.switches.get(s.id)
            if sw_item is not None and (sw_item.x(), sw_item.y()) != (s.x, s.y):
                moved[s.id] = (round(sw_item.x(), 1), round(sw_item.y(), 1))
        if not moved:
            return False
        what = next(iter(moved)) if len(moved) == 1 else f"{len(moved)} items"
        return self.doc.edit_cluster(f"Move {what}", lambda c: edits.move_nodes(c, moved))

    def refuse(self, message: str, at: QPointF | None = None, node: NodeItem | None = None) -> None:
        """Say no visibly: status message and a short red flash (on the node, else at ``at``)."""
        self.last_refusal = message
        self.doc.message.emit(message)
        self.refused.emit(message)
        if node is not None:
            node.set_flash(True)
            QTimer.singleShot(FLASH_MS, lambda: node.set_flash(False) if node.scene() is self else None)
        elif at is not None:
            mark = QGraphicsRectItem(at.x() - 30, at.y() - 30, 60, 60)
            mark.setPen(QPen(QColor(SLOW_LINK_COLOR), 3))
            mark.setZValue(10)
            self.addItem(mark)
            QTimer.singleShot(FLASH_MS, lambda: self.removeItem(mark) if mark.scene() is self else None)


def _same_ranks(a: Placement, b: Placement) -> bool:
    """Whether two placements put every GPU at the same stage, TP rank, group and replica."""
    return (a.stage_of == b.stage_of and a.tp_rank_of == b.tp_rank_of and a.group_of == b.group_of
            and a.dp_of == b.dp_of and a.pool_of == b.pool_of)
