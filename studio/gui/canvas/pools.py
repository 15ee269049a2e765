"""Disaggregated serving on the canvas: the KV-transfer arrow from the prefill GPU to the decode
GPU of the slowest flow, labelled with its time and hop, drawn once the disaggregated plan is
costed (:class:`studio.engine.disagg.results.DisaggResult`). The pools' GPUs, in each pool's
colour, are the overlay of :func:`studio.service.placement_overlay.pool_overlay`.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

ARROW_COLOR = "#c92a2a"
ARC_RISE = 40.0  # scene units the arrow's arc rises above the higher GPU
HEADER_CLEARANCE = 16.0  # scene units between the label's centre and the top of the nodes it joins


class KvTransferArrow(QGraphicsItem):
    """An arrow between two scene points with the KV transfer's time and hop as its label."""

    def __init__(self) -> None:
        super().__init__()
        self.setZValue(40)  # above nodes and links
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.src = QPointF()
        self.dst = QPointF()
        self.text = ""
        self.clear_top: float | None = None
        self._font = QFont()
        self._font.setPointSizeF(9)
        self._font.setBold(True)

    def set_ends(self, src: QPointF, dst: QPointF, text: str, tip: str, clear_top: float | None = None) -> None:
        """Join ``src`` to ``dst``; with ``clear_top`` (the scene y of the top of the nodes they sit in)
        the arc's apex and label go above it, so neither covers a node's header text."""
        self.prepareGeometryChange()
        self.src, self.dst, self.text = QPointF(src), QPointF(dst), text
        self.clear_top = clear_top
        self.setToolTip(tip)
        self.update()

    def _controls(self) -> tuple[QPointF, QPointF]:
        """Control points of the arc (a cubic): straight above each end, so the arc leaves the
        prefill GPU and reaches the decode GPU vertically, crossing a node's header only over the
        tile it joins; high enough that the apex clears the node headers (``clear_top``)."""
        mid_y = (self.src.y() + self.dst.y()) / 2
        rise = max(ARC_RISE, 0.25 * QLineF(self.src, self.dst).length())
        y = min(self.src.y(), self.dst.y()) - rise
        if self.clear_top is not None:
            # the apex (the curve at t = 1/2) is at mid_y / 4 + 3/4 · y: put it HEADER_CLEARANCE above
            # the nodes' top
            y = min(y, (self.clear_top - HEADER_CLEARANCE - mid_y / 4) / 0.75)
        return QPointF(self.src.x(), y), QPointF(self.dst.x(), y)

    def _apex(self) -> QPointF:
        c1, c2 = self._controls()
        return (self.src + self.dst) / 8 + (c1 + c2) * 3 / 8  # the cubic at t = 1/2

    def _label_rect(self) -> QRectF:
        from PySide6.QtGui import QFontMetricsF

        fm = QFontMetricsF(self._font)
        w, h = fm.horizontalAdvance(self.text) + 10, fm.height() + 4
        apex = self._apex()
        return QRectF(apex.x() - w / 2, apex.y() - h / 2, w, h)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        c1, c2 = self._controls()
        r = QRectF(self.src, self.dst).normalized().united(QRectF(c1, c2).normalized())
        return r.adjusted(-16, -16, 16, 16).united(self._label_rect().adjusted(-2, -2, 2, 2))

    def paint(self, p: QPainter, _opt: QStyleOptionGraphicsItem, _w: QWidget | None = None) -> None:
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        color = QColor(ARROW_COLOR)
        pen = QPen(color, 3)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        p.setPen(pen)
        p.setBrush(Qt.BrushStyle.NoBrush)
        c1, c2 = self._controls()
        arc = QPainterPath(self.src)
        arc.cubicTo(c1, c2, self.dst)
        p.drawPath(arc)
        line = QLineF(c2, self.dst)  # the curve's direction where it ends
        angle = math.atan2(line.dy(), line.dx())
        head = QPolygonF([
            self.dst,
            self.dst - QPointF(math.cos(angle - 0.4) * 14, math.sin(angle - 0.4) * 14),
            self.dst - QPointF(math.cos(angle + 0.4) * 14, math.sin(angle + 0.4) * 14),
        ])
        p.setBrush(QBrush(color))
        p.drawPolygon(head)
        rect = self._label_rect()
        path = QPainterPath()
        path.addRoundedRect(rect, 4, 4)
        p.fillPath(path, QColor(255, 255, 255, 235))
        p.setPen(QPen(color, 1.2))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawPath(path)
        p.setFont(self._font)
        p.drawText(rect, Qt.AlignmentFlag.AlignCenter, self.text)
