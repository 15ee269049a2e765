"""Legend drawn over the canvas: link kinds in use (colour + style) and pipeline stages."""

from __future__ import annotations

from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QWidget

from studio.core.hardware import Cluster, LinkKind
from studio.gui.canvas.style import SLOW_LINK_COLOR, link_pen, stage_color

ROW = 17


class Legend(QWidget):
    """Small translucent box in a corner of the canvas view."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self._kinds: list[LinkKind] = []
        self._stages = 0
        self._tp = 1
        self._slow = False
        self._font = QFont()
        self._font.setPointSizeF(8.5)

    def set_content(self, cluster: Cluster, pp: int, tp: int, slow: bool) -> None:
        """Show the link kinds the cluster uses, ``pp`` stage swatches, and the slow-link mark."""
        used = {lk.kind for lk in cluster.links}
        self._kinds = sorted(
            (k for k in cluster.link_kinds.values() if k.id in used), key=lambda k: -k.bandwidth_gbps
        )
        self._stages, self._tp, self._slow = pp, tp, slow
        rows = len(self._kinds) + min(pp, 8) + (1 if slow else 0) + 2
        fm = QFontMetrics(self._font)
        texts = [self._kind_text(k) for k in self._kinds] + ["slow hop inside a TP group"]
        width = max([fm.horizontalAdvance(t) for t in texts] + [fm.horizontalAdvance("Pipeline stages (TP group = 8 GPUs)")])
        self.resize(int(width) + 64, rows * ROW + 12)
        self.update()

    @staticmethod
    def _kind_text(k: LinkKind) -> str:
        return f"{k.name.split('(')[0].strip()}: {k.bandwidth_gbps:g} GB/s"

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setPen(QPen(QColor("#ced4da")))
        p.setBrush(QColor(255, 255, 255, 235))
        p.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6)
        p.setFont(self._font)
        y = 8
        p.setPen(QColor("#212529"))
        p.drawText(QRectF(10, y, self.width() - 14, ROW), Qt.AlignmentFlag.AlignVCenter, "Links")
        y += ROW
        for k in self._kinds:
            pen = link_pen(k)
            pen.setWidthF(pen.widthF() + 0.6)
            p.setPen(pen)
            p.drawLine(QLineF(12, y + ROW / 2, 42, y + ROW / 2))
            p.setPen(QColor("#212529"))
            p.drawText(QRectF(50, y, self.width() - 54, ROW), Qt.AlignmentFlag.AlignVCenter, self._kind_text(k))
            y += ROW
        if self._slow:
            p.setPen(QPen(QColor(SLOW_LINK_COLOR), 4))
            p.drawLine(QLineF(12, y + ROW / 2, 42, y + ROW / 2))
            p.setPen(QColor("#212529"))
            p.drawText(QRectF(50, y, self.width() - 54, ROW), Qt.AlignmentFlag.AlignVCenter, "slow hop inside a TP group")
            y += ROW
        p.drawText(QRectF(10, y, self.width() - 14, ROW), Qt.AlignmentFlag.AlignVCenter, f"Pipeline stages (TP group = {self._tp} GPUs)")
        y += ROW
        for s in range(min(self._stages, 8)):
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(stage_color(s))
            p.drawRoundedRect(QRectF(14, y + 3, 26, ROW - 6), 3, 3)
            p.setPen(QColor("#212529"))
            p.drawText(QRectF(50, y, self.width() - 54, ROW), Qt.AlignmentFlag.AlignVCenter, f"S{s}: stage {s}")
            y += ROW
