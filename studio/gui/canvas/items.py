"""Graphics items of the canvas. Each carries ``item_id`` (the domain id) and ``item_kind``."""

from __future__ import annotations

import atexit

from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontInfo,
    QFontMetrics,
    QFontMetricsF,
    QPainter,
    QPainterPath,
    QPen,
)
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsObject,
    QStyleOptionGraphicsItem,
    QWidget,
)

from studio.core.hardware import NVLINK_SWITCH_KINDS, GpuSpec, LinkKind, Node, Switch
from studio.gui.canvas.geometry import NodeGeometry, node_geometry
from studio.gui.canvas.style import (
    HEADER_H,
    SELECT_COLOR,
    SLOW_LINK_COLOR,
    link_pen,
    short_gpu_name,
    stage_color,
)

SMALL = QFont()
SMALL.setPointSizeF(7.5)
BOLD = QFont()
BOLD.setPointSizeF(9.0)
BOLD.setBold(True)

#: Smallest text on screen, px: labels grow when the view is zoomed out so that they stay readable.
MIN_TEXT_PX = 9.0
#: Largest enlargement of a label; further out a tile's label is not drawn (it could not be read).
MAX_LABEL_SCALE = 3.0


_PIXELS: dict[tuple[str, float, bool], int] = {}
_SCALED: dict[tuple[str, float, bool, float], QFont] = {}
_METRICS: dict[tuple[str, float, bool], QFontMetricsF] = {}


@atexit.register
def _drop_font_caches() -> None:
    """Free the cached fonts and metrics before Qt's own exit clean-up: destroying them after the
    application object is gone crashes the interpreter at exit."""
    _SCALED.clear()
    _METRICS.clear()


def _key(font: QFont) -> tuple[str, float, bool]:
    return (font.family(), font.pointSizeF(), font.bold())


def _metrics(font: QFont) -> QFontMetricsF:
    k = _key(font)
    fm = _METRICS.get(k)
    if fm is None:
        fm = _METRICS[k] = QFontMetricsF(font)
    return fm


def legible(font: QFont, p: QPainter) -> QFont:
    """``font``, enlarged when the painter's zoom would draw it under :data:`MIN_TEXT_PX` pixels
    (fonts and their pixel sizes are cached: this runs in every paint)."""
    zoom = QStyleOptionGraphicsItem.levelOfDetailFromTransform(p.worldTransform())
    k = _key(font)
    px = _PIXELS.get(k)
    if px is None:
        px = _PIXELS[k] = QFontInfo(font).pixelSize()
    if zoom <= 0 or px * zoom >= MIN_TEXT_PX:
        return font
    size = round(font.pointSizeF() * MIN_TEXT_PX / (px * zoom) * 4 + 0.5) / 4  # quarter points, rounded up
    f = _SCALED.get((*k, size))
    if f is None:
        f = _SCALED[(*k, size)] = QFont(font)
        f.setPointSizeF(size)
    return f


def fit_label(font: QFont, rect: QRectF, label: str, sublabel: str) -> list[tuple[QRectF, str]]:
    """Where to draw a tile's label and sub-label in ``font``: both lines when they fit the tile,
    else the sub-label alone (the slot number tells GPUs of one box apart), elided to the tile's
    width."""
    fm = _metrics(font)
    if sublabel and 2 * fm.height() <= rect.height() + 1 and fm.horizontalAdvance(label) <= rect.width():
        top = QRectF(rect.x(), rect.center().y() - fm.height(), rect.width(), fm.height())
        bottom = QRectF(rect.x(), rect.center().y(), rect.width(), fm.height())
        return [(top, fm.elidedText(label, Qt.TextElideMode.ElideRight, rect.width())),
                (bottom, fm.elidedText(sublabel, Qt.TextElideMode.ElideRight, rect.width()))]
    text = sublabel or label
    if fm.horizontalAdvance(text) > rect.width() and " " in text:
        text = text.split(" ")[0]  # "PCIe sw" -> "PCIe", "CPU 0" -> "CPU"
    return [(rect, fm.elidedText(text, Qt.TextElideMode.ElideRight, rect.width()))]


SWITCH_LABELS = {
    "nvswitch": "NVSwitch",
    "nvlink-switch": "NVLink switch",
    "pcie-switch": "PCIe sw",
    "cpu": "CPU",
    "fabric": "Fabric",
}


class Endpoint(QGraphicsItem):
    """A link end drawn as a rounded box: GPU tile, switch or NIC (child of its node).

    Its picture is cached in device coordinates (a pixmap per item): repainting the canvas after
    an edit elsewhere, or panning, copies the pixmap instead of drawing the box and its text
    again; :meth:`update` (a new colour, badge or selection) redraws it.
    """

    def __init__(self, item_id: str, item_kind: str, rect: QRectF, parent: QGraphicsItem | None) -> None:
        super().__init__(parent)
        self.item_id = item_id
        self.item_kind = item_kind
        self._rect = QRectF(0, 0, rect.width(), rect.height())
        # 3 px for the widest outline (selection, flash); the badge sticks out 5 px above and 4 px
        # to the right of the box, and a cached item shows only what lies inside this rectangle.
        # Computed once: Qt asks for it on every repaint of every item.
        self._bounds = self._rect.adjusted(-3, -5, 4, 3)
        self.setPos(rect.topLeft())
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, True)
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.setZValue(2)
        self.label = ""
        self.sublabel = ""
        self.fill = QColor("#e9ecef")
        self.text_color = QColor("#212529")
        self.outline = QColor("#868e96")
        self.badge = ""
        self.badge_color: QColor | None = None
        self.ring: QColor | None = None  # overlay outline (TP group / slow link)
        self.flash = False

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def center_in_scene(self) -> QPointF:
        return self.mapToScene(self._rect.center())

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        pen = QPen(self.outline, 1.0)
        if self.ring is not None:
            pen = QPen(self.ring, 2.6)
        if self.isSelected():
            pen = QPen(QColor(SELECT_COLOR), 3.0)
        if self.flash:
            pen = QPen(QColor(SLOW_LINK_COLOR), 3.0)
        p.setPen(pen)
        p.setBrush(QBrush(self.fill))
        p.drawRoundedRect(self._rect, 5, 5)
        p.setPen(self.text_color)
        font = legible(SMALL, p)
        if font.pointSizeF() <= SMALL.pointSizeF() * MAX_LABEL_SCALE:  # else too far out to read at all
            p.setFont(font)
            for rect, text in fit_label(font, self._rect, self.label, self.sublabel):
                p.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
        p.setFont(SMALL)
        if self.badge and self.badge_color is not None:
            r = QRectF(self._rect.right() - 20, self._rect.top() - 5, 24, 13)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(self.badge_color)
            p.drawRoundedRect(r, 4, 4)
            p.setPen(QColor("white"))
            p.drawText(r, Qt.AlignmentFlag.AlignCenter, self.badge)


class GpuTile(Endpoint):
    """A GPU in a slot."""

    def __init__(self, gpu_id: str, slot: int, spec: GpuSpec | None, rect: QRectF, parent: QGraphicsItem) -> None:
        super().__init__(gpu_id, "gpu", rect, parent)
        self.slot = slot
        name = short_gpu_name(spec.name) if spec else "?"
        self.label = name
        self.sublabel = f"#{slot}"
        self.fill = QColor("#d3f9d8") if spec and spec.vendor == "nvidia" else QColor("#ffe8cc")
        self.outline = QColor("#2b8a3e") if spec and spec.vendor == "nvidia" else QColor("#d9480f")
        self.base_tip = (
            f"{gpu_id}\n{spec.name}: {spec.memory_gb:.0f} GB, {spec.tflops_bf16:.0f} BF16 TFLOPS"
            if spec
            else gpu_id
        )
        self.setToolTip(self.base_tip)
        self._shown: tuple | None = None  # what show_placement last drew

    def show_placement(self, stage: int | None, tp_group: int | None, label: str, ring: QColor | None, note: str) -> bool:
        """Show a layout's rank on the tile: stage tint and badge, outline ``ring``, and ``note``
        (lines starting with "—") under the tooltip's GPU description.

        Returns
        -------
        bool
            False, with nothing repainted, when the tile shows exactly this already (an edit
            elsewhere in a big cluster repaints only the tiles whose rank changed).
        """
        state = (stage, tp_group, label, None if ring is None else ring.rgba(), note)
        if state == self._shown:
            return False
        self._shown = state
        self.ring = ring
        self.setToolTip(self.base_tip + note)
        self.set_placement(stage, tp_group, label)
        return True

    def set_placement(self, stage: int | None, tp_group: int | None, label: str) -> None:
        """Show the rank's stage colour as the fill tint and ``label`` (e.g. ``S1``) as a badge."""
        if stage is None:
            self.badge, self.badge_color = "", None
            self.fill = QColor("#f1f3f5")
        else:
            c = stage_color(stage)
            self.badge, self.badge_color = label, c
            tint = QColor(c)
            tint.setAlpha(60)
            self.fill = _blend(QColor("white"), tint)
        self.update()


class EmptySlot(QGraphicsItem):
    """A free slot: dashed outline where a dropped GPU will snap in."""

    def __init__(self, node_id: str, slot: int, rect: QRectF, parent: QGraphicsItem) -> None:
        super().__init__(parent)
        self.item_id = f"{node_id}#slot{slot}"
        self.item_kind = "slot"
        self.node_id = node_id
        self.slot = slot
        self._rect = QRectF(0, 0, rect.width(), rect.height())
        self.setPos(rect.topLeft())
        self.setZValue(1)
        self.setToolTip(f"Free slot {slot}: drop a GPU here")

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._rect

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        pen = QPen(QColor("#adb5bd"), 1.0, Qt.PenStyle.DashLine)
        p.setPen(pen)
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRoundedRect(self._rect.adjusted(1, 1, -1, -1), 5, 5)
        p.setFont(SMALL)
        p.setPen(QColor("#adb5bd"))
        p.drawText(self._rect, Qt.AlignmentFlag.AlignCenter, f"slot {self.slot}")


class NodeItem(QGraphicsObject):
    """A server: header with its name, GPU tiles, switches and NICs; movable and selectable."""

    def __init__(self, node: Node, specs: dict[str, GpuSpec]) -> None:
        super().__init__()
        self.item_id = node.id
        self.item_kind = "node"
        self.node = node
        self.geometry: NodeGeometry = node_geometry(node)
        self._bounds = self.geometry.size.adjusted(-4, -4, 4, 4)
        self.flash = False
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, True)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsMovable, True)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemSendsGeometryChanges, True)
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.setPos(node.x, node.y)
        self.setZValue(0)
        self.endpoints: dict[str, Endpoint] = {}
        self.slots: dict[int, EmptySlot] = {}
        used = {g.slot: g for g in node.gpus}
        for s, rect in enumerate(self.geometry.slots):
            g = used.get(s)
            if g is None:
                self.slots[s] = EmptySlot(node.id, s, rect, self)
            else:
                self.endpoints[g.id] = GpuTile(g.id, s, specs.get(g.type), rect, self)
        for sw in node.switches:
            rect = self.geometry.switches[sw.id]
            e = Endpoint(sw.id, "switch", rect, self)
            e.label = sw.name if sw.kind in NVLINK_SWITCH_KINDS else SWITCH_LABELS.get(sw.kind, sw.kind)
            if sw.kind == "cpu":
                e.label = sw.name or "CPU"
            e.fill = QColor("#e7f5ff") if sw.kind != "nvswitch" else QColor("#ebfbee")
            e.setToolTip(f"{sw.name or sw.kind} ({sw.kind})\n{sw.id}")
            self.endpoints[sw.id] = e
        for nic in node.nics:
            e = Endpoint(nic.id, "nic", self.geometry.nics[nic.id], self)
            e.label = nic.name.replace("NIC ", "NIC") if nic.name else "NIC"
            e.fill = QColor("#f3f0ff")
            e.setToolTip(f"{nic.name or nic.id}: speaks {nic.kind}\nDrag to another NIC or a fabric switch to link")
            self.endpoints[nic.id] = e
        self.setToolTip(f"{node.name} ({node.id}): {len(node.gpus)} of {node.slots} slots used")

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        r = self.geometry.size
        pen = QPen(QColor("#495057"), 1.2)
        if self.isSelected():
            pen = QPen(QColor(SELECT_COLOR), 3.0)
        if self.flash:
            pen = QPen(QColor(SLOW_LINK_COLOR), 3.5)
        p.setPen(pen)
        p.setBrush(QColor("#ffffff"))
        p.drawRoundedRect(r, 8, 8)
        head = QPainterPath()
        head.addRoundedRect(QRectF(r.x(), r.y(), r.width(), HEADER_H), 8, 8)
        p.fillPath(head, QColor("#343a40"))
        p.setPen(QColor("white"))
        font = legible(BOLD, p)
        p.setFont(font if font.pointSizeF() <= BOLD.pointSizeF() * MAX_LABEL_SCALE else BOLD)
        n = self.node
        box = r.adjusted(10, 0, -10, 0).adjusted(0, 0, 0, HEADER_H - r.height())
        p.drawText(box, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, header_text(n, p.fontMetrics(), box.width()))

    def set_flash(self, on: bool) -> None:
        self.flash = on
        self.update()

    def itemChange(self, change: QGraphicsItem.GraphicsItemChange, value):  # noqa: N802 - Qt API
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionHasChanged and self.scene() is not None:
            self.scene().node_moved(self)  # type: ignore[attr-defined]
        return super().itemChange(change, value)


def header_text(node: Node, fm: QFontMetrics, width: float) -> str:
    """Node header: name and used slots. A long name is cut in the middle, so the end that tells
    nodes apart ("… tray 7", "… #1") stays readable."""
    count = f"   {len(node.gpus)}/{node.slots} GPUs"
    room = max(0, int(width - fm.horizontalAdvance(count)))
    return fm.elidedText(node.name, Qt.TextElideMode.ElideMiddle, room) + count


class ClusterSwitchItem(QGraphicsObject):
    """A cluster-level switch (network fabric, rack NVLink switch); movable."""

    W, H = 180.0, 40.0

    def __init__(self, sw: Switch) -> None:
        super().__init__()
        self.item_id = sw.id
        self.item_kind = "switch"
        self.switch = sw
        self.flash = False
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, True)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsMovable, True)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemSendsGeometryChanges, True)
        self.setPos(sw.x, sw.y)
        self.setZValue(0)
        self.setToolTip(f"{sw.name or sw.kind} ({sw.kind})\n{sw.id}")

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return QRectF(-self.W / 2 - 3, -self.H / 2 - 3, self.W + 6, self.H + 6)

    def center_in_scene(self) -> QPointF:
        return self.scenePos()

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        r = QRectF(-self.W / 2, -self.H / 2, self.W, self.H)
        pen = QPen(QColor(SELECT_COLOR), 3.0) if self.isSelected() else QPen(QColor("#5f3dc4"), 1.4)
        p.setPen(pen)
        p.setBrush(QColor("#e5dbff") if self.switch.kind == "fabric" else QColor("#ebfbee"))
        p.drawRoundedRect(r, 10, 10)
        p.setPen(QColor("#212529"))
        font = legible(BOLD, p)
        p.setFont(font)
        name = self.switch.name or SWITCH_LABELS.get(self.switch.kind, "")
        p.drawText(r, Qt.AlignmentFlag.AlignCenter, _metrics(font).elidedText(name, Qt.TextElideMode.ElideMiddle, r.width() - 8))

    def itemChange(self, change: QGraphicsItem.GraphicsItemChange, value):  # noqa: N802 - Qt API
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionHasChanged and self.scene() is not None:
            self.scene().node_moved(self)  # type: ignore[attr-defined]
        return super().itemChange(change, value)


class LinkItem(QGraphicsLineItem):
    """A link between two endpoints, styled by its kind; red and thick when it is a slow hop a TP
    group crosses."""

    def __init__(self, link_id: str, kind: LinkKind | None, lanes: float, a: QGraphicsItem, b: QGraphicsItem) -> None:
        super().__init__()
        self.item_id = link_id
        self.item_kind = "link"
        self.kind = kind
        self.a = a
        self.b = b
        self.base_pen = link_pen(kind, lanes)
        self.slow = False
        self.setPen(self.base_pen)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, True)
        # Cached like the boxes: a big cluster has thousands of links inside its nodes, and
        # drawing each from Python on every repaint costs more than copying its pixmap.
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.setZValue(0.5)
        name = kind.name if kind else "unknown kind"
        bw = f", {kind.bandwidth_gbps * lanes:g} GB/s per direction" if kind else ""
        self.setToolTip(f"{name}{bw}\n{link_id}")
        self.refresh()

    def refresh(self) -> None:
        """Follow the endpoints (after a node moved)."""
        pa = self.a.center_in_scene()  # type: ignore[attr-defined]
        pb = self.b.center_in_scene()  # type: ignore[attr-defined]
        parent = self.parentItem()
        if parent is not None:
            pa, pb = parent.mapFromScene(pa), parent.mapFromScene(pb)
        self.setLine(QLineF(pa, pb))

    def set_slow(self, slow: bool) -> None:
        if slow == self.slow:
            return
        self.slow = slow
        if slow:
            pen = QPen(QColor(SLOW_LINK_COLOR), self.base_pen.widthF() + 2.5, self.base_pen.style())
            pen.setCosmetic(True)
            self.setPen(pen)
        else:
            self.setPen(self.base_pen)

    def itemChange(self, change: QGraphicsItem.GraphicsItemChange, value):  # noqa: N802 - Qt API
        if change == QGraphicsItem.GraphicsItemChange.ItemSelectedHasChanged:
            # the selection halo is wider than the line's bounding rectangle, which a cached item
            # would cut it to: a selected link is drawn directly
            mode = QGraphicsItem.CacheMode.NoCache if value else QGraphicsItem.CacheMode.DeviceCoordinateCache
            self.setCacheMode(mode)
        return super().itemChange(change, value)

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        if self.isSelected():
            pen = QPen(QColor(SELECT_COLOR), self.pen().widthF() + 3)
            pen.setCosmetic(True)
            p.setPen(pen)
            p.drawLine(self.line())
        p.setPen(self.pen())
        p.drawLine(self.line())


class BundleItem(QGraphicsLineItem):
    """Several parallel links from one node to one cluster switch, drawn as one thick line
    (behind the nodes) so a 64-node cluster stays readable; the member links remain selectable
    through warnings and reappear when selected."""

    def __init__(self, node: NodeItem, switch: QGraphicsItem, kind: LinkKind | None, members: list[str]) -> None:
        super().__init__()
        self.item_kind = "bundle"
        self.node = node
        self.switch = switch
        self.kind = kind
        self.members = members
        pen = link_pen(kind)
        pen.setWidthF(min(4.0, 1.5 + 0.3 * len(members)))
        pen.setStyle(Qt.PenStyle.SolidLine)
        self.setPen(pen)
        self.setZValue(-1)
        name = kind.name if kind else "links"
        bw = f" = {kind.bandwidth_gbps * len(members):g} GB/s per direction" if kind else ""
        self.setToolTip(f"{len(members)}× {name}{bw}\nfrom {node.node.name} to {getattr(switch, 'item_id', '')}")
        short = name.split("(")[0].strip()
        self.label = f"{len(members)}× {short}"
        self.show_label = True  # the scene turns labels off when many bundles share a switch
        self.refresh()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        if not self.show_label:
            return super().boundingRect()
        return super().boundingRect().united(self._label_rect(QFont(SMALL), MAX_LABEL_SCALE))

    def _label_rect(self, font: QFont = SMALL, scale: float = 1.0) -> QRectF:
        fm = _metrics(font)
        w, h = (fm.horizontalAdvance(self.label) + 8) * scale, (fm.height() + 2) * scale
        line = self.line()
        mid = line.pointAt(0.35)
        return QRectF(mid.x() - w / 2, mid.y() - h / 2, w, h)

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        p.setPen(self.pen())
        p.drawLine(self.line())
        if not self.show_label:
            return
        font = legible(SMALL, p)
        if font.pointSizeF() > SMALL.pointSizeF() * MAX_LABEL_SCALE:  # the tooltip and legend name it
            return
        r = self._label_rect(font)
        p.setPen(QPen(self.pen().color(), 1))
        p.setBrush(QColor(255, 255, 255, 230))
        p.drawRoundedRect(r, 3, 3)
        p.setFont(font)
        p.setPen(QColor("#212529"))
        p.drawText(r, Qt.AlignmentFlag.AlignCenter, self.label)

    def refresh(self) -> None:
        self.prepareGeometryChange()
        r = self.node.sceneBoundingRect()
        self.setLine(QLineF(QPointF(r.center().x(), r.bottom() - 4), self.switch.center_in_scene()))  # type: ignore[attr-defined]


def _blend(base: QColor, over: QColor) -> QColor:
    a = over.alphaF()
    return QColor.fromRgbF(
        base.redF() * (1 - a) + over.redF() * a,
        base.greenF() * (1 - a) + over.greenF() * a,
        base.blueF() * (1 - a) + over.blueF() * a,
    )
