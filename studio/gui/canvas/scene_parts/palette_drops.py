"""Palette drops on the cluster scene: a GPU onto a node's free slot, a node template or an empty
node onto empty canvas; each one undo step, or a visible refusal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QGraphicsScene, QGraphicsSceneDragDropEvent

from studio.core import edits
from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.gui.canvas.free_spot import free_offset
from studio.gui.canvas.items import EmptySlot, NodeItem
from studio.gui.canvas.mime import DragItem, from_mime

if TYPE_CHECKING:
    from studio.gui.document import ProjectDocument

    _SceneBase = QGraphicsScene
else:
    _SceneBase = object


class PaletteDrops(_SceneBase):
    """Mixin of :class:`studio.gui.canvas.scene.ClusterScene`: accepts palette drags and applies
    the drops."""

    doc: ProjectDocument
    catalog: Any  # a studio.io.presets.Catalog, or None

    if TYPE_CHECKING:
        def refuse(self, message: str, at: QPointF | None = None, node: NodeItem | None = None) -> None: ...

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
