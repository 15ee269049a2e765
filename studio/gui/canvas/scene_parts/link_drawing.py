"""Links on the cluster scene: drawn by dragging from a GPU, switch or NIC to another (the kind
asked from a menu), and their kind changed from the context menu; each one undo step."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QLineF, QPointF, Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsScene,
    QGraphicsSceneMouseEvent,
)

from studio.core import edits
from studio.core.hardware import Cluster, LinkKind
from studio.gui.canvas.items import BundleItem, ClusterSwitchItem, Endpoint, LinkItem, NodeItem
from studio.gui.canvas.kinds import applicable_kinds, refusal

if TYPE_CHECKING:
    from studio.gui.document import ProjectDocument

    _SceneBase = QGraphicsScene
else:
    _SceneBase = object

KindChooser = Callable[[list[LinkKind], QPointF], "LinkKind | None"]


class LinkDrawing(_SceneBase):
    """Mixin of :class:`studio.gui.canvas.scene.ClusterScene`: link drawing with the mouse and
    link-kind changes."""

    doc: ProjectDocument
    catalog: Any  # a studio.io.presets.Catalog, or None
    choose_kind: KindChooser
    links: dict[str, LinkItem]
    _link_src: Endpoint | None
    _link_press: QPointF
    _link_line: QGraphicsLineItem | None

    if TYPE_CHECKING:
        def refuse(self, message: str, at: QPointF | None = None, node: NodeItem | None = None) -> None: ...

        def selected_ids(self) -> tuple[str, ...]: ...

        def commit_moves(self) -> bool: ...

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
