"""The cluster scene's items kept in line with the document's cluster, incrementally: nodes whose
content is unchanged keep their items (only moved), a link value that is the same object as before
keeps its item, and bundles are looked at again only when a node-to-switch link may have changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

from studio.core.hardware import Cluster, Link, LinkKind, Node
from studio.gui.canvas.items import BundleItem, ClusterSwitchItem, LinkItem, NodeItem

if TYPE_CHECKING:
    _SceneBase = QGraphicsScene
else:
    _SceneBase = object


class ItemSync(_SceneBase):
    """Mixin of :class:`studio.gui.canvas.scene.ClusterScene`: its node, switch, link and bundle
    items (the scene sets these attributes up and calls :meth:`_sync_nodes`, :meth:`_sync_switches`,
    :meth:`_sync_links` and :meth:`_sync_bundles` on every cluster change)."""

    nodes: dict[str, NodeItem]
    switches: dict[str, ClusterSwitchItem]
    links: dict[str, LinkItem]
    bundles: list[BundleItem]
    _cluster: Cluster | None
    _ext_links: dict[str, set[str]]  # node/switch id -> top-level links touching it
    _endpoint_node: dict[str, str]  # GPU/switch/NIC id inside a node -> node id
    _link_values: dict[str, Link]  # link id -> the Link value its item draws

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
