"""The canvas view: zoom (wheel), pan (middle button or space + drag), fit, keyboard edits."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QImage, QKeyEvent, QKeySequence, QMouseEvent, QPainter, QWheelEvent
from PySide6.QtWidgets import QGraphicsView, QInputDialog, QWidget

from studio.gui.canvas.items import NodeItem
from studio.gui.canvas.legend import CanvasPane, Legend
from studio.gui.canvas.scene import ClusterScene

MIN_ZOOM, MAX_ZOOM = 0.05, 6.0


class CanvasView(QGraphicsView):
    """Shows a :class:`ClusterScene`; owns the legend (shown under it by :meth:`pane`)."""

    def __init__(self, scene: ClusterScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.cluster_scene = scene
        self.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        self.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        # Only the changed items' rectangles repaint: a one-link edit on a 512-GPU cluster redraws
        # that link, where the "smart" mode repainted the whole viewport.
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontSavePainterState, True)
        self.setDragMode(QGraphicsView.DragMode.RubberBandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setAcceptDrops(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setMouseTracking(True)
        self._space = False
        self._panning = False
        self._pan_from: QPointF | None = None
        #: The view shows the whole cluster (fit) and keeps doing so when resized, until the user
        #: zooms or pans.
        self.follows_size = True
        self.legend = Legend(self)  # a hidden child until pane() puts it under the view
        self.legend.hide()
        scene.doc.projectChanged.connect(self._on_change)
        scene.doc.resultReady.connect(self._on_change)
        self.refresh_legend()

    # ---------------------------------------------------------------- legend
    def _on_change(self, *_args) -> None:
        self.refresh_legend()

    def refresh_legend(self) -> None:
        p = self.cluster_scene.doc.project
        pl = self.cluster_scene.placement
        m = p.serving_mode
        pools = None
        if pl is not None and pl.pool_of and m.prefill is not None and m.decode is not None:
            pools = (m.prefill.label("P"), m.decode.label("D"))
        arrow = self.cluster_scene.kv_arrow is not None
        self.legend.set_content(p.cluster, p.layout.pp, p.layout.tp, bool(pl and pl.slow_links), pools, arrow)

    def pane(self) -> CanvasPane:
        """This view with the legend strip under it (the window's central widget)."""
        return CanvasPane(self, self.legend)

    # ------------------------------------------------------------- zoom/pan
    @property
    def zoom(self) -> float:
        return self.transform().m11()

    def zoom_by(self, factor: float) -> None:
        z = self.zoom * factor
        if MIN_ZOOM <= z <= MAX_ZOOM:
            self.scale(factor, factor)
            self.follows_size = False

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        if self.follows_size:  # a fitted cluster stays fitted in a window made larger or smaller
            self.fit()

    def fit(self) -> None:
        """Fit the whole cluster in view (the legend is under the view, not on it), capped at
        1.5× zoom."""
        rect = self.scene().itemsBoundingRect()
        if rect.isEmpty():
            return
        rect = rect.adjusted(-20, -20, 20, 20)
        vw, vh = self.viewport().width(), self.viewport().height()
        scale = min(vw / rect.width(), vh / rect.height(), 1.5)
        margin = max(vw, vh) / max(scale, 1e-3)
        self.setSceneRect(rect.adjusted(-margin, -margin, margin, margin))
        self.resetTransform()
        self.scale(scale, scale)
        self.centerOn(rect.center())
        self.follows_size = True

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt API
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom_by(1.15**steps)
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        if event.button() == Qt.MouseButton.MiddleButton or (self._space and event.button() == Qt.MouseButton.LeftButton):
            self._panning = True
            self.follows_size = False
            self._pan_from = event.position()
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        if self._panning and self._pan_from is not None:
            d = event.position() - self._pan_from
            self._pan_from = event.position()
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - int(d.x()))
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - int(d.y()))
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        if self._panning:
            self._panning = False
            self.viewport().unsetCursor()
            event.accept()
            return
        super().mouseReleaseEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        item = self.itemAt(event.position().toPoint())
        while item is not None and not isinstance(item, NodeItem):
            item = item.parentItem()
        if isinstance(item, NodeItem):
            self.rename_dialog(item.item_id)
            event.accept()
            return
        super().mouseDoubleClickEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space = True
            self.setDragMode(QGraphicsView.DragMode.NoDrag)
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor)
            return
        if event.matches(QKeySequence.StandardKey.Delete) or event.key() == Qt.Key.Key_Backspace:
            self.cluster_scene.delete_selected()
            return
        if event.key() == Qt.Key.Key_F2:
            nodes = [i for i in self.cluster_scene.selected_ids() if i in self.cluster_scene.nodes]
            if nodes:
                self.rename_dialog(nodes[0])
            return
        super().keyPressEvent(event)

    def keyReleaseEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space = False
            self.setDragMode(QGraphicsView.DragMode.RubberBandDrag)
            self.viewport().unsetCursor()
            return
        super().keyReleaseEvent(event)

    def rename_dialog(self, node_id: str) -> None:
        node = self.cluster_scene.doc.project.cluster.node(node_id)
        name, ok = QInputDialog.getText(self, "Rename node", "Name:", text=node.name)
        if ok:
            self.cluster_scene.rename_node(node_id, name)

    # ---------------------------------------------------------------- export
    def render_image(self, scale: float = 2.0) -> QImage:
        """The whole cluster (not just the visible part) as an image, with the legend under the
        drawing (never on it)."""
        rect = self.scene().itemsBoundingRect().adjusted(-20, -20, 20, 20)
        w, h = max(1, int(rect.width() * scale)), max(1, int(rect.height() * scale))
        probe = QImage(1, 1, QImage.Format.Format_ARGB32_Premultiplied)
        lp = QPainter(probe)
        legend_h = self.legend.paint_into(lp, rect.width())  # measured at the drawing's width
        lp.end()
        img = QImage(w, h + int(legend_h * scale), QImage.Format.Format_ARGB32_Premultiplied)
        img.fill(self.scene().backgroundBrush().color())
        p = QPainter(img)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        self.scene().render(p, QRectF(0, 0, w, h), rect)
        p.translate(0, h)
        p.scale(scale, scale)
        self.legend.paint_into(p, rect.width())
        p.end()
        return img
