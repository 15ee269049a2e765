"""The KV tiers beyond HBM drawn on a node: a band under the node box naming the host-DRAM and NVMe
KV cache the engine keeps there, against the node's own memory and disk (from its template).

It is a child of the :class:`~studio.gui.canvas.items.NodeItem`, so it moves with the node; the
scene makes one per node and sets its tiers on every project change, and it hides itself when the
project keeps no KV off HBM. Zoomed out it grows with its text, which stays legible as the canvas's
other labels do (:func:`~studio.gui.canvas.items.legible`), up to the same largest scale.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from studio.gui.canvas.items import MAX_LABEL_SCALE, legible

#: Height of the band (scene units) and its gap below the node box.
BAND_H = 17.0
BAND_GAP = 3.0
HOST_COLOR = "#fff3bf"
DISK_COLOR = "#e3fafc"

FONT = QFont()
FONT.setPointSizeF(7.5)


def _gib(x: float) -> str:
    return f"{x / 1024:,.1f} TiB" if x >= 1024 else f"{x:,.0f} GiB"


def tier_text(host_gib: float, disk_gib: float, host_node: float | None, nvme_node: float | None) -> tuple[str, str]:
    """The two halves of the band: the host-DRAM tier and the NVMe tier, each against the node's own."""
    def part(name: str, gib: float, node: float | None) -> str:
        if gib <= 0:
            return f"{name} —"
        return f"{name} {_gib(gib)}" + (f" / {_gib(node)}" if node is not None else "")

    return part("KV host", host_gib, host_node), part("NVMe", disk_gib, nvme_node)


class KvTierBadge(QGraphicsItem):
    """A band under a node: the KV kept in its host DRAM and on its NVMe."""

    def __init__(self, width: float, top: float, parent: QGraphicsItem) -> None:
        super().__init__(parent)
        #: The node item it belongs to (the scene makes a new band for a rebuilt node).
        self.owner = parent
        self._rect = QRectF(0.0, top + BAND_GAP, width, BAND_H)
        self.host_text = ""
        self.disk_text = ""
        self.setVisible(False)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)

    def set_tiers(self, host_gib: float, disk_gib: float, host_node: float | None, nvme_node: float | None) -> None:
        """Show the tiers (hidden when both are 0)."""
        shown = host_gib > 0 or disk_gib > 0
        host, disk = tier_text(host_gib, disk_gib, host_node, nvme_node)
        if (host, disk, shown) == (self.host_text, self.disk_text, self.isVisible()):
            return
        self.host_text, self.disk_text = host, disk
        self.setToolTip(
            "KV cache beyond HBM on this node (per node, against the node's own memory and disk):\n"
            f"{host} host DRAM, loaded over the GPUs' host links\n{disk} local NVMe" if shown else "")
        self.setVisible(shown)
        self.update()

    def text(self) -> str:
        """What the band says."""
        return f"{self.host_text} · {self.disk_text}" if self.isVisible() else ""

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        r = self._rect
        return QRectF(r.left(), r.top(), r.width(), BAND_H * MAX_LABEL_SCALE).adjusted(-1, -1, 1, 1)

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        font = legible(FONT, p)
        readable = font.pointSizeF() <= FONT.pointSizeF() * MAX_LABEL_SCALE  # else too far out to read at all
        if not readable:
            font = FONT
        height = min(max(BAND_H, QFontMetricsF(font).height() + 4), BAND_H * MAX_LABEL_SCALE)
        r = QRectF(self._rect.left(), self._rect.top(), self._rect.width(), height)
        half = r.width() / 2
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setPen(QPen(QColor("#868e96"), 0.8))
        for k, (text, color) in enumerate(((self.host_text, HOST_COLOR), (self.disk_text, DISK_COLOR))):
            box = QRectF(r.left() + k * half, r.top(), half, r.height())
            p.setBrush(QColor(color))
            p.drawRoundedRect(box.adjusted(0.5, 0, -0.5, 0), 4, 4)
            if not readable:  # the colours only; the tooltip says it
                continue
            p.setFont(font)
            p.setPen(QColor("#343a40"))
            shown = p.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, int(box.width() - 8))
            p.drawText(box.adjusted(4, 0, -4, 0), Qt.AlignmentFlag.AlignCenter, shown)
            p.setPen(QPen(QColor("#868e96"), 0.8))
