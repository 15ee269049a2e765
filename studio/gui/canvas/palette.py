"""The palette: GPU types, node templates and an empty node, dragged onto the canvas."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLineEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.gui.canvas.mime import DragItem, to_mime
from studio.gui.toolkit.resources import icon

ROLE = Qt.ItemDataRole.UserRole


class PaletteTree(QTreeWidget):
    """Tree whose leaves drag a :class:`DragItem` (MIME ``application/x-layout-studio-item``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("palette")
        self.setHeaderHidden(True)
        self.setDragEnabled(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        self.setIndentation(12)
        self.setIconSize(self.iconSize() * 1.3)

    def mimeTypes(self) -> list[str]:  # noqa: N802 - Qt API
        from studio.gui.canvas.mime import MIME_TYPE

        return [MIME_TYPE]

    def mimeData(self, items) -> QMimeData:  # noqa: N802 - Qt API
        for it in items:
            drag = it.data(0, ROLE)
            if isinstance(drag, DragItem):
                return to_mime(drag)
        return QMimeData()


class Palette(QWidget):
    """Searchable palette built from the preset catalogue."""

    def __init__(self, catalog=None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = PaletteTree()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter GPUs and nodes…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._filter)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.search)
        lay.addWidget(self.tree)
        self.items: dict[tuple[str, str], QTreeWidgetItem] = {}
        self._build(catalog)

    def _section(self, title: str) -> QTreeWidgetItem:
        sec = QTreeWidgetItem([title])
        sec.setFlags(Qt.ItemFlag.ItemIsEnabled)
        f = sec.font(0)
        f.setBold(True)
        sec.setFont(0, f)
        self.tree.addTopLevelItem(sec)
        return sec

    def _leaf(self, parent: QTreeWidgetItem, text: str, tip: str, drag: DragItem, ic: str) -> None:
        it = QTreeWidgetItem([text])
        it.setToolTip(0, tip)
        it.setIcon(0, icon(ic))
        it.setData(0, ROLE, drag)
        it.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsDragEnabled)
        parent.addChild(it)
        self.items[(drag.kind, drag.id)] = it

    def _build(self, catalog) -> None:
        nodes = self._section("Servers (drop on empty canvas)")
        self._leaf(nodes, "Empty node (8 slots)", "A server without GPUs; drop GPUs into it", DragItem("empty-node", "empty"), "empty-node")
        if catalog is not None:
            for t in catalog.nodes.values():
                gpus = t.gpus_per_node * t.trays
                tip = f"{t.name}: {gpus} GPUs, {t.fabric} fabric" + (f"\n{t.description}" if t.description else "")
                self._leaf(nodes, t.name, tip, DragItem("node-template", t.id), "rack" if t.trays > 1 else "node")
            gpus = self._section("GPUs (drop into a node)")
            for g in catalog.gpus.values():
                tip = (
                    f"{g.name}: {g.memory_gb:g} GB, {g.hbm_bandwidth_gbps / 1000:g} TB/s, "
                    f"{g.tflops_bf16:g} BF16 TFLOPS, ${g.price_per_gpu_hour:g}/h"
                )
                self._leaf(gpus, f"{g.name}  ·  {g.memory_gb:g} GB", tip, DragItem("gpu", g.id), "gpu" if g.vendor == "nvidia" else "gpu-amd")
        self.tree.expandAll()

    def _filter(self, text: str) -> None:
        low = text.lower().strip()
        for i in range(self.tree.topLevelItemCount()):
            sec = self.tree.topLevelItem(i)
            if sec is None:
                continue
            for j in range(sec.childCount()):
                ch = sec.child(j)
                if ch is None:
                    continue
                ch.setHidden(bool(low) and low not in ch.text(0).lower() and low not in ch.toolTip(0).lower())
