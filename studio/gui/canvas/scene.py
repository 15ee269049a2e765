"""The cluster scene: mirrors the document's cluster as items, turns gestures into edits.

Synchronisation is incremental: nodes whose content is unchanged keep their items (only moved),
so an edit on a 512-GPU cluster redraws only what changed.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QLineF, QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsSceneDragDropEvent,
    QGraphicsSceneMouseEvent,
)

from studio.core import edits
from studio.core.errors import StudioError
from studio.core.hardware import Cluster, Link, LinkKind, Node
from studio.core.project import Project
from studio.core.units import MIB
from studio.engine.plan.results import PlanResult
from studio.gui.canvas.free_spot import free_offset
from studio.gui.canvas.items import (
    BundleItem,
    ClusterSwitchItem,
    EmptySlot,
    Endpoint,
    GpuTile,
    LinkItem,
    NodeItem,
)
from studio.gui.canvas.kinds import applicable_kinds, refusal
from studio.gui.canvas.kv_badge import KvTierBadge
from studio.gui.canvas.mime import DragItem, from_mime
from studio.gui.canvas.pools import KvTransferArrow
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

KindChooser = Callable[[list[LinkKind], QPointF], "LinkKind | None"]
FLASH_MS = 700


class ClusterScene(QGraphicsScene):
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
        self._syncing_selection = False
        self._link_src: Endpoint | None = None
        self._link_press = QPointF()
        self._link_line: QGraphicsLineItem | None = None
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

    def _sync_nodes(self, cluster: Cluster) -> set[str]:
        old = self._cluster
        old_nodes = {n.id: n for n in old.nodes} if old else {}
        specs_changed = old is None or old.gpu_specs != cluster.gpu_specs
        rebuilt: set[str] = set()
        keep = {n.id for n in cluster.nodes}
        for nid in list(self.nodes):
            if nid not in keep:
                self._drop_node_item(nid)
                rebuilt.add(nid)
        for n in cluster.nodes:
            item = self.nodes.get(n.id)
            prev = old_nodes.get(n.id)
            if item is not None and prev is not None and not specs_changed and _same_content(prev, n):
                if item.pos() != QPointF(n.x, n.y):
                    item.setPos(n.x, n.y)
                item.node = n
                continue
            if item is not None:
                self._drop_node_item(n.id)
            item = NodeItem(n, cluster.gpu_specs)
            self.addItem(item)
            self.nodes[n.id] = item
            rebuilt.add(n.id)
        return rebuilt

    def _drop_node_item(self, nid: str) -> None:
        item = self.nodes.pop(nid)
        for lid in [lid for lid, li in self.links.items() if li.parentItem() is item]:
            del self.links[lid]
        self.removeItem(item)

    def _sync_switches(self, cluster: Cluster) -> bool:
        """Bring the cluster-switch items in line; returns whether one was added or removed."""
        want = {s.id: s for s in cluster.switches}
        changed = False
        for sid in list(self.switches):
            if sid not in want or want[sid].kind != self.switches[sid].switch.kind or want[sid].name != self.switches[sid].switch.name:
                self.removeItem(self.switches.pop(sid))
                changed = True
        for s in cluster.switches:
            item = self.switches.get(s.id)
            if item is None:
                item = ClusterSwitchItem(s)
                self.addItem(item)
                self.switches[s.id] = item
                changed = True
            else:
                item.switch = s
                if item.pos() != QPointF(s.x, s.y):
                    item.setPos(s.x, s.y)
        return changed

    def _endpoint(self, cluster: Cluster, eid: str, owner: dict[str, str] | None = None) -> QGraphicsItem | None:
        if eid in self.switches:
            return self.switches[eid]
        if owner is not None:
            nid = owner.get(eid)
        else:
            node = cluster.node_of(eid)
            nid = node.id if node is not None else None
        if nid is None or nid not in self.nodes:
            return None
        return self.nodes[nid].endpoints.get(eid)

    def _sync_links(self, cluster: Cluster, rebuilt: set[str]) -> bool:
        """Bring the link items in line with ``cluster.links``; returns whether any link between a
        node and a cluster switch may have changed (then the bundles are looked at again).

        Incremental: a link value that is the same object as before (edits keep unchanged parts),
        between endpoints that were not rebuilt and of a kind that did not change, keeps its item
        without being looked at again, so a one-link edit on a 512-GPU cluster touches one item.
        """
        old = self._cluster
        same_kinds = old is not None and _same_kinds(old.link_kinds, cluster.link_kinds)
        if old is None or rebuilt or not same_kinds or not _same_nodes(old.nodes, cluster.nodes):
            return self._sync_all_links(cluster, rebuilt)
        changed, old_links = _changed_links(old.links, cluster.links)
        if not changed and not old_links:
            return False
        endpoint_node = self._endpoint_node
        bundles_touched = False
        for lid, gone in old_links.items():  # links no longer in the cluster
            self._drop_link_item(lid)
            self._forget_ext(gone, endpoint_node)
            bundles_touched = bundles_touched or gone.a in self.switches or gone.b in self.switches
        for lk in changed:
            self._drop_link_item(lk.id)
            prev = self._link_values.get(lk.id)
            if prev is not None:
                self._forget_ext(prev, endpoint_node)
            self._add_link_item(cluster, lk, endpoint_node)
            bundles_touched = bundles_touched or lk.a in self.switches or lk.b in self.switches
            bundles_touched = bundles_touched or (prev is not None and (prev.a in self.switches or prev.b in self.switches))
        self._link_values = {lk.id: lk for lk in cluster.links}
        return bundles_touched

    def _sync_all_links(self, cluster: Cluster, rebuilt: set[str]) -> bool:
        """:meth:`_sync_links` after nodes, switches or link kinds changed: every link is checked."""
        old_links = self._link_values
        endpoint_node: dict[str, str] = {}
        for n in cluster.nodes:
            for ids in ([g.id for g in n.gpus], [s.id for s in n.switches], [x.id for x in n.nics]):
                endpoint_node.update(dict.fromkeys(ids, n.id))
        self._endpoint_node = endpoint_node
        want = {lk.id: lk for lk in cluster.links}
        for lid in list(self.links):
            lk = want.get(lid)
            item = self.links[lid]
            old = old_links.get(lid)
            stale = (
                lk is None
                or (lk is not old and lk != old)
                or endpoint_node.get(lk.a) in rebuilt
                or endpoint_node.get(lk.b) in rebuilt
                or _differs(cluster.link_kinds.get(lk.kind), item.kind)
            )
            if stale:
                self._drop_link_item(lid)
        self._ext_links = {}
        for lk in cluster.links:
            na, nb = endpoint_node.get(lk.a), endpoint_node.get(lk.b)
            if na is None or na != nb:
                for owner in (na or lk.a, nb or lk.b):
                    self._ext_links.setdefault(owner, set()).add(lk.id)
            if lk.id not in self.links:
                self._add_link_item(cluster, lk, endpoint_node, ext=False)
        self._link_values = want
        return True

    def _drop_link_item(self, lid: str) -> None:
        item = self.links.pop(lid, None)
        if item is not None and item.scene() is self:
            self.removeItem(item)

    def _forget_ext(self, lk, endpoint_node: dict[str, str]) -> None:
        for end in (lk.a, lk.b):
            owned = self._ext_links.get(endpoint_node.get(end) or end)
            if owned is not None:
                owned.discard(lk.id)

    def _add_link_item(self, cluster: Cluster, lk, endpoint_node: dict[str, str], ext: bool = True) -> None:
        """Draw link ``lk`` (inside its node when both ends are in one); with ``ext``, also note it
        as an external link of its nodes/switches (which :meth:`node_moved` keeps attached)."""
        na, nb = endpoint_node.get(lk.a), endpoint_node.get(lk.b)
        if ext and (na is None or na != nb):
            for owner in (na or lk.a, nb or lk.b):
                self._ext_links.setdefault(owner, set()).add(lk.id)
        ea, eb = self._endpoint(cluster, lk.a, endpoint_node), self._endpoint(cluster, lk.b, endpoint_node)
        if ea is None or eb is None:
            return
        item = LinkItem(lk.id, cluster.link_kinds.get(lk.kind), lk.lanes, ea, eb)
        if na is not None and na == nb:
            item.setParentItem(self.nodes[na])
            item.setZValue(1)
            item.refresh()
        else:
            self.addItem(item)
        self.links[lk.id] = item

    def _sync_bundles(self, cluster: Cluster) -> None:
        """Draw each node's links from its NICs or GPUs to the same cluster switch (same kind) as
        one bundle: 8 InfiniBand links of a DGX, or the 4 NVLink links of a GB200 tray to its rack
        switch (an NVL72 rack: 18 bundles instead of 72 crossing lines).

        Incremental: a bundle whose node, switch, kind, members and label are unchanged keeps its
        item, so an edit elsewhere repaints none of the long lines across the canvas."""
        nic_node = {x.id: n.id for n in cluster.nodes for x in n.nics}
        nic_node.update({g.id: n.id for n in cluster.nodes for g in n.gpus})
        groups: dict[tuple[str, str, str], list[str]] = {}
        for lk in cluster.links:
            for nic_end, sw_end in ((lk.a, lk.b), (lk.b, lk.a)):
                if nic_end in nic_node and sw_end in self.switches:
                    groups.setdefault((nic_node[nic_end], sw_end, lk.kind), []).append(lk.id)
        per_switch: dict[tuple[str, str], int] = {}
        for (nid, sid, kind), members in groups.items():
            if len(members) >= 2 and nid in self.nodes:
                per_switch[sid, kind] = per_switch.get((sid, kind), 0) + 1
        old = {(b.node.item_id, b.switch.item_id, getattr(b.kind, "id", None)): b for b in self.bundles}
        self.bundles = []
        for (nid, sid, kind), members in groups.items():
            if len(members) < 2 or nid not in self.nodes:
                continue
            link_kind = cluster.link_kinds.get(kind)
            # Above 8 bundles into one switch the labels would pile up; the tooltip and the legend
            # still name the link kind.
            show_label = per_switch[sid, kind] <= 8
            bundle = old.pop((nid, sid, getattr(link_kind, "id", None)), None)
            if bundle is not None and not _same_bundle(bundle, self.nodes[nid], self.switches[sid], link_kind, members, show_label):
                if bundle.scene() is self:
                    self.removeItem(bundle)
                bundle = None
            if bundle is None:
                bundle = BundleItem(self.nodes[nid], self.switches[sid], link_kind, members)
                bundle.show_label = show_label
                self.addItem(bundle)
            self.bundles.append(bundle)
            for lid in members:
                li = self.links.get(lid)
                if li is not None:
                    li.setVisible(li.isSelected())
        for gone in old.values():
            if gone.scene() is self:
                self.removeItem(gone)

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
        """The last plan, while its slow hops still hold for ``project`` (same TP)."""
        r = self.doc.result
        if r is not None and self.doc.result_is_current and r.layout.tp == project.layout.tp:
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

    def link_kind_choices(self, link_ids: tuple[str, ...] | list[str]) -> list[LinkKind]:
        """Kinds every link of ``link_ids`` may take (those that can join its two ends, best first)."""
        cluster = self.doc.project.cluster
        extra = dict(self.catalog.links) if self.catalog is not None else {}
        common: list[LinkKind] | None = None
        for lid in link_ids:
            try:
                lk = cluster.link(lid)
            except KeyError:
                return []
            kinds = applicable_kinds(cluster, extra, lk.a, lk.b)
            common = kinds if common is None else [k for k in common if any(k.id == o.id for o in kinds)]
        return common or []

    def set_link_kind(self, link_ids: tuple[str, ...] | list[str], kind: LinkKind) -> bool:
        """Give every link of ``link_ids`` the kind ``kind``: one undo step
        (:func:`studio.core.edits.set_link_kind` per link); no step when they already have it."""
        cluster = self.doc.project.cluster
        ids = [lid for lid in link_ids if lid in {lk.id for lk in cluster.links} and cluster.link(lid).kind != kind.id]
        if not ids:
            return False

        def change(c: Cluster) -> Cluster:
            for lid in ids:
                c = edits.set_link_kind(c, lid, kind)
            return c

        what = ids[0] if len(ids) == 1 else f"{len(ids)} links"
        return self.doc.edit_cluster(f"Link kind of {what} → {kind.name}", change)

    def change_link_kind(self, link_ids: tuple[str, ...] | list[str], screen_pos: QPointF) -> bool:
        """Ask the kind for ``link_ids`` (the kind menu, as after drawing a link) and set it."""
        kinds = self.link_kind_choices(link_ids)
        if not kinds:
            self.refuse(f"No other link kind can join the ends of {', '.join(link_ids[:3])}")
            return False
        kind = self.choose_kind(kinds, QPointF(screen_pos))
        return kind is not None and self.set_link_kind(link_ids, kind)

    def links_at(self, pos: QPointF) -> tuple[str, ...]:
        """The links a right-click at ``pos`` means: the link (or bundle) under it, with the other
        selected links when it is one of them."""
        ids: tuple[str, ...]
        for it in self.items(pos):
            if isinstance(it, LinkItem) and it.isVisible():
                ids = (it.item_id,)
                break
            if isinstance(it, BundleItem):
                ids = tuple(it.members)
                break
        else:
            return ()
        chosen = tuple(i for i in self.selected_ids() if i in self.links)
        return tuple(dict.fromkeys(chosen + ids)) if set(ids) <= set(chosen) else ids

    def contextMenuEvent(self, event) -> None:  # noqa: N802 - Qt API
        ids = self.links_at(event.scenePos())
        if ids:
            self.change_link_kind(ids, QPointF(event.screenPos()))
            event.accept()
            return
        super().contextMenuEvent(event)

    def add_link(self, a: str, b: str, kind: LinkKind) -> bool:
        return self.doc.edit_cluster(
            f"Add {kind.name} link", lambda c: edits.add_link(c, kind, a, b)[0]
        )

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

    # ---------------------------------------------------------- drag & drop
    def node_at(self, pos: QPointF) -> NodeItem | None:
        for item in self.items(pos):
            while item is not None and not isinstance(item, NodeItem):
                item = item.parentItem()
            if isinstance(item, NodeItem):
                return item
        return None

    def dragEnterEvent(self, event: QGraphicsSceneDragDropEvent) -> None:  # noqa: N802 - Qt API
        self._accept_drag(event)

    def dragMoveEvent(self, event: QGraphicsSceneDragDropEvent) -> None:  # noqa: N802 - Qt API
        self._accept_drag(event)

    def _accept_drag(self, event: QGraphicsSceneDragDropEvent) -> None:
        try:
            item = from_mime(event.mimeData())
        except StudioError:
            item = None
        if item is None:
            event.ignore()
            return
        event.setDropAction(Qt.DropAction.CopyAction)
        event.accept()

    def dropEvent(self, event: QGraphicsSceneDragDropEvent) -> None:  # noqa: N802 - Qt API
        try:
            item = from_mime(event.mimeData())
        except StudioError as exc:
            self.refuse(exc.message, at=event.scenePos())
            event.ignore()
            return
        if item is None:
            event.ignore()
            return
        ok = self.drop(item, event.scenePos())
        event.setDropAction(Qt.DropAction.CopyAction)
        event.setAccepted(ok)

    def drop(self, item: DragItem, pos: QPointF) -> bool:
        """Apply a palette item dropped at scene position ``pos``; False (with a visible
        refusal) when it cannot go there."""
        node = self.node_at(pos)
        if item.kind == "gpu":
            return self._drop_gpu(item.id, pos, node)
        if node is not None:
            self.refuse("Drop nodes on empty canvas, not on another node", node=node)
            return False
        if item.kind == "empty-node":
            return self.doc.edit_cluster(
                "Add empty node", lambda c: edits.add_empty_node(c, "Empty node", 8, pos.x(), pos.y())[0]
            )
        return self._drop_template(item.id, pos)

    def _spec(self, gpu_id: str):
        if self.catalog is not None and gpu_id in self.catalog.gpus:
            return self.catalog.gpus[gpu_id]
        return self.doc.project.cluster.gpu_specs.get(gpu_id)

    def _drop_gpu(self, gpu_id: str, pos: QPointF, node: NodeItem | None) -> bool:
        spec = self._spec(gpu_id)
        if spec is None:
            self.refuse(f"Unknown GPU type '{gpu_id}'", at=pos)
            return False
        if node is None:
            self.refuse(
                f"A {spec.name} needs a node: drop it onto a node with a free slot "
                "(drag a node template or an empty node onto the canvas first)",
                at=pos,
            )
            return False
        n = self.doc.project.cluster.node(node.item_id)
        if not n.free_slots():
            self.refuse(f"Node '{n.name}' is full ({n.slots} of {n.slots} slots used)", node=node)
            return False
        slot = None
        for it in self.items(pos):
            if isinstance(it, EmptySlot) and it.node_id == n.id:
                slot = it.slot
        template = self.catalog.nodes.get(n.template) if self.catalog is not None and n.template else None
        kinds = list(self.catalog.links.values()) if self.catalog is not None else []
        return self.doc.edit_cluster(  # wired as the node's template wires the GPU of that slot
            f"Add {spec.name} to {n.name}", lambda c: edits.add_gpu(c, n.id, spec, slot, template, kinds)[0]
        )

    def _drop_template(self, template_id: str, pos: QPointF) -> bool:
        cat = self.catalog
        if cat is None or template_id not in cat.nodes:
            self.refuse(f"Unknown node template '{template_id}'", at=pos)
            return False
        t = cat.nodes[template_id]
        if t.gpu_type not in cat.gpus:
            self.refuse(f"Node template '{t.name}' names unknown GPU type '{t.gpu_type}'", at=pos)
            return False
        names = {t.pcie_switch_link, t.host_link, t.socket_link, t.scale_up_link, t.nic_kind} - {None}
        missing = sorted(k for k in names if k not in cat.links)
        if missing:
            self.refuse(f"Node template '{t.name}' names unknown link kinds: {', '.join(missing)}", at=pos)
            return False
        kinds = [cat.links[k] for k in sorted(names)]
        spec = cat.gpus[t.gpu_type]
        def add(c: Cluster) -> tuple[Cluster, str]:
            before = {s.id for s in c.switches}
            c, ids = edits.add_template_node(c, t, spec, kinds, x=pos.x(), y=pos.y())
            new = set(ids) | {s.id for s in c.switches if s.id not in before}
            dx = free_offset(c, new)  # never on top of what is drawn
            if dx:
                moved = {n.id: (n.x + dx, n.y) for n in c.nodes if n.id in new}
                moved.update({s.id: (s.x + dx, s.y) for s in c.switches if s.id in new})
                c = edits.move_nodes(c, moved)
            c, joined = edits.join_fabric(c, ids)
            return c, (f"{joined} NIC{'s' if joined > 1 else ''} to the fabric" if joined else "")

        return self.doc.edit_cluster(f"Add {t.name}", add)

    # --------------------------------------------------------- link drawing
    def _endpoint_at(self, pos: QPointF) -> QGraphicsItem | None:
        for item in self.items(pos):
            if isinstance(item, Endpoint | ClusterSwitchItem):
                return item
        return None

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802 - Qt API
        if event.button() == Qt.MouseButton.LeftButton and not event.modifiers():
            item = self._endpoint_at(event.scenePos())
            if isinstance(item, Endpoint):
                self._link_src = item
                self._link_press = event.scenePos()
                event.accept()
                return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802 - Qt API
        if self._link_src is not None:
            start = self._link_src.center_in_scene()
            if self._link_line is None:
                if QLineF(self._link_press, event.scenePos()).length() < 6:
                    return
                self._link_line = QGraphicsLineItem()
                pen = QPen(QColor("#495057"), 2, Qt.PenStyle.DashLine)
                pen.setCosmetic(True)
                self._link_line.setPen(pen)
                self._link_line.setZValue(20)
                self.addItem(self._link_line)
            self._link_line.setLine(QLineF(start, event.scenePos()))
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802 - Qt API
        if self._link_src is not None:
            src, line = self._link_src, self._link_line
            self._link_src, self._link_line = None, None
            if line is not None:
                self.removeItem(line)
                target = self._endpoint_at(event.scenePos())
                self.finish_link(src, target, event.screenPos())
            else:
                if not (event.modifiers() & Qt.KeyboardModifier.ControlModifier):
                    self.clearSelection()
                src.setSelected(True)
            event.accept()
            return
        super().mouseReleaseEvent(event)
        if event.button() == Qt.MouseButton.LeftButton:
            self.commit_moves()

    def finish_link(self, src: QGraphicsItem, target: QGraphicsItem | None, screen_pos) -> bool:
        """End of a link drag: ask the kind and add the link, or refuse."""
        if target is None or target is src:
            self.refuse("Release a link on another GPU, switch or NIC", at=src.center_in_scene())  # type: ignore[attr-defined]
            return False
        a, b = src.item_id, target.item_id  # type: ignore[attr-defined]
        cluster = self.doc.project.cluster
        extra = dict(self.catalog.links) if self.catalog is not None else {}
        kinds = applicable_kinds(cluster, extra, a, b)
        if not kinds:
            self.refuse(refusal(cluster, a, b), at=src.center_in_scene())  # type: ignore[attr-defined]
            return False
        kind = self.choose_kind(kinds, QPointF(screen_pos))
        if kind is None:
            return False
        return self.add_link(a, b, kind)


def _same_ranks(a: Placement, b: Placement) -> bool:
    """Whether two placements put every GPU at the same stage, TP rank, group and replica."""
    return (a.stage_of == b.stage_of and a.tp_rank_of == b.tp_rank_of and a.group_of == b.group_of
            and a.dp_of == b.dp_of and a.pool_of == b.pool_of)


def _changed_links(old: tuple, new: tuple) -> tuple[list, dict]:
    """(links of ``new`` that are not the same object as before, {id: link} of ``old`` links that
    are gone). Edits keep unchanged links and their order, so most calls pair the tuples up."""
    if len(old) == len(new):
        pairs = [(a, b) for a, b in zip(old, new, strict=True) if a is not b]
        if all(a.id == b.id for a, b in pairs):
            return [b for _a, b in pairs], {}
    gone = {lk.id: lk for lk in old}
    changed = [lk for lk in new if gone.pop(lk.id, None) is not lk]
    return changed, gone


def _same_kinds(a: dict[str, LinkKind], b: dict[str, LinkKind]) -> bool:
    """Whether two link-kind catalogues hold the same kinds (same objects, or equal)."""
    return a is b or (a.keys() == b.keys() and all(not _differs(a[k], b[k]) for k in a))


def _same_nodes(a: tuple[Node, ...], b: tuple[Node, ...]) -> bool:
    """Whether two node tuples hold the same node values in the same order (by identity: edits
    keep unchanged nodes, and :meth:`ClusterScene._sync_nodes` handles the others)."""
    return a is b or (len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True)))


def _differs(a: LinkKind | None, b: LinkKind | None) -> bool:
    """``a != b``, without comparing every field when they are the same object."""
    return a is not b and a != b


def _same_bundle(b: BundleItem, node: NodeItem, switch: QGraphicsItem, kind: LinkKind | None, members: list[str], show_label: bool) -> bool:
    """Whether bundle item ``b`` already draws exactly this bundle."""
    return (
        b.node is node
        and b.switch is switch
        and (b.kind is kind or b.kind == kind)
        and b.members == members
        and b.show_label == show_label
    )


def _same_content(a: Node, b: Node) -> bool:
    return a is b or (
        a.name == b.name and a.slots == b.slots and a.gpus == b.gpus and a.switches == b.switches and a.nics == b.nics
    )


def _menu_chooser(kinds: list[LinkKind], screen_pos: QPointF) -> LinkKind | None:
    from PySide6.QtGui import QIcon, QPixmap
    from PySide6.QtWidgets import QMenu

    from studio.gui.canvas.style import link_color

    menu = QMenu()
    menu.setToolTipsVisible(True)
    menu.addSection("Link kind")
    chosen: dict[object, LinkKind] = {}
    for k in kinds:
        pm = QPixmap(14, 14)
        pm.fill(link_color(k))
        act = menu.addAction(QIcon(pm), f"{k.name}  ({k.bandwidth_gbps:g} GB/s, {k.latency_us:g} µs)")
        act.setToolTip(k.description or k.name)
        chosen[act] = k
    act = menu.exec(screen_pos.toPoint())
    return chosen.get(act)


