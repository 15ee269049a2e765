"""Graphics items of the canvas. Each carries ``item_id`` (the domain id) and ``item_kind``."""

from __future__ import annotations

import atexit
from collections.abc import Sequence

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


def zoom_of(p: QPainter) -> float:
    """The painter's scale (scene units to pixels)."""
    return QStyleOptionGraphicsItem.levelOfDetailFromTransform(p.worldTransform())


def legible(font: QFont, p: QPainter | float) -> QFont:
    """``font``, enlarged when the painter's zoom (or the zoom ``p``) would draw it under
    :data:`MIN_TEXT_PX` pixels (fonts and their pixel sizes are cached: this runs in every paint)."""
    zoom = p if isinstance(p, float | int) else zoom_of(p)
    k = _key(font)
    px = _PIXELS.get(k)
    if px is None:
        px = _PIXELS[k] = QFontInfo(font).pixelSize()
    if zoom <= 0 or px * zoom >= MIN_TEXT_PX:
        return font
    size = round(font.pointSizeF() * MIN_TEXT_PX / (px * zoom) * 4 + 0.5) / 4  # quarter points, rounded up
    key = (*k, size)
    f = _SCALED.get(key)
    if f is None:
        f = _SCALED[key] = QFont(font)
        f.setPointSizeF(size)
    return f


def margin_at(zoom: float) -> float:
    """:data:`LABEL_MARGIN_PX` in scene units at ``zoom``."""
    return LABEL_MARGIN_PX / zoom if zoom > 0 else LABEL_MARGIN_PX


#: Room left free at the top of a GPU tile for its stage badge (the part of the badge inside the tile).
BADGE_BAND = 8.0

#: Horizontal room kept between a label and its tile's edges, on screen (px).
LABEL_MARGIN_PX = 3.0


def label_forms(label: str, sublabel: str) -> list[tuple[str, ...]]:
    """The ways to write a tile's label, fullest first, each a tuple of lines: both lines, then one
    line, then shorter ones (the slot number alone tells GPUs of one box apart; "PCIe sw" → "PCIe",
    "CPU 0" → "CPU"). Every form is whole text: a label is shortened by choice of form, never cut."""
    if sublabel:
        return [(label, sublabel), (f"{label} {sublabel}",), (sublabel,)]
    forms: list[tuple[str, ...]] = [(label,)] if label else []
    if " " in label:
        forms.append((label.split(" ")[0],))
    return forms


def fit_label(font: QFont, rect: QRectF, label: str, sublabel: str, margin: float = 2.0) -> list[tuple[QRectF, str]]:
    """Where to draw a tile's label in ``font``: the fullest of :func:`label_forms` whose lines all
    fit the tile (width less ``margin`` scene units each side, height), centred; nothing when none
    fits (a port too small to read is drawn as a plain box, its node counts it)."""
    fm = _metrics(font)
    h = fm.height()
    width = rect.width() - 2 * margin
    for lines in label_forms(label, sublabel):
        if len(lines) * h > rect.height() + 1 or any(fm.horizontalAdvance(t) > width for t in lines):
            continue
        top = rect.center().y() - len(lines) * h / 2
        return [(QRectF(rect.x(), top + k * h, rect.width(), h), t) for k, t in enumerate(lines)]
    return []


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

    def badge_shown(self, zoom: float) -> bool:
        """Whether the stage badge is drawn at ``zoom``: only where its text can be read (further out
        the tile's stage tint and the legend's stage colours tell the stage)."""
        if not (self.badge and self.badge_color is not None):
            return False
        return QFontInfo(SMALL).pixelSize() * zoom >= MIN_TEXT_PX - 0.5

    def text_rect(self, zoom: float) -> QRectF:
        """Where the label may go at ``zoom``: the tile, less the band its badge covers."""
        return self._rect.adjusted(0, BADGE_BAND, 0, 0) if self.badge_shown(zoom) else self._rect

    def own_label(self, zoom: float) -> list[tuple[QRectF, str]]:
        """The lines of this box's own label that fit at ``zoom`` (:func:`fit_label`)."""
        font = legible(SMALL, zoom)
        if font.pointSizeF() > SMALL.pointSizeF() * MAX_LABEL_SCALE:
            return []
        return fit_label(font, self.text_rect(zoom), self.label, self.sublabel, margin_at(zoom))

    def drawn_label(self, zoom: float) -> list[tuple[QRectF, str]]:
        """The lines this box draws at ``zoom`` (scene units to pixels), and where: whole words
        only, nothing for a port whose row its node shows as a count instead (:class:`PortRow`)."""
        row = getattr(self, "port_row", None)
        if row is not None and row.collapsed(zoom):
            return []
        return self.own_label(zoom)

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        pen = QPen(self.outline, 1.0)
        if self.ring is not None:
            pen = QPen(self.ring, 2.6)
        if self.isSelected():
            pen = QPen(QColor(SELECT_COLOR), 3.0)
        if self.flash:
            pen = QPen(QColor(SLOW_LINK_COLOR), 3.0)
        zoom = zoom_of(p)
        row = getattr(self, "port_row", None)
        if row is not None and row.collapsed(zoom) and not (self.isSelected() or self.flash):
            return  # its row is drawn as one bar with the count (PortRow)
        p.setPen(pen)
        p.setBrush(QBrush(self.fill))
        p.drawRoundedRect(self._rect, 5, 5)
        p.setPen(self.text_color)
        font = legible(SMALL, zoom)
        if font.pointSizeF() <= SMALL.pointSizeF() * MAX_LABEL_SCALE:  # else too far out to read at all
            p.setFont(font)
            for rect, text in self.drawn_label(zoom):
                p.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
        p.setFont(SMALL)
        if self.badge_shown(zoom):
            r = QRectF(self._rect.right() - 20, self._rect.top() - 5, 24, 13)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(self.badge_color)
            p.drawRoundedRect(r, 4, 4)
            p.setPen(QColor("white"))
            p.drawText(r, Qt.AlignmentFlag.AlignCenter, self.badge)


class GpuTile(Endpoint):
    """A GPU in a slot."""

    #: What the tile's rank overlay was last drawn from (the scene skips an unchanged one).
    rank_key: tuple | None = None

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
        #: The plan leaves this GPU unused (drawn hatched).
        self.idle = False

    def set_idle(self, idle: bool) -> None:
        """Hatch the tile when the layout leaves the GPU idle."""
        if idle != self.idle:
            self.idle = idle
            self.update()

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        super().paint(p, option, widget)
        if self.idle:
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QBrush(QColor("#868e96"), Qt.BrushStyle.BDiagPattern))
            p.drawRoundedRect(self._rect, 5, 5)

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


class PortRow(QGraphicsItem):
    """A node's row of ports (PCIe switches and CPUs, or NICs) drawn as one bar with their count
    when the view is zoomed out so far that a port's own label no longer fits its box (level of
    detail): "8 PCIe switches · 2 CPUs", "8 NICs". Zoomed in, it draws nothing and each port is
    drawn with its name. Above the node's internal links, so that they end at the bar."""

    def __init__(self, ports: list[Endpoint], forms: list[str], parent: QGraphicsItem) -> None:
        super().__init__(parent)
        self.ports = ports
        self.forms = forms
        rect = QRectF(ports[0].pos(), ports[0]._rect.size())
        for e in ports[1:]:
            rect = rect.united(QRectF(e.pos(), e._rect.size()))
        self._rect = rect
        self.setZValue(1.5)
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        for e in ports:
            e.port_row = self  # type: ignore[attr-defined]
        self._zoom: tuple[float, bool] | None = None

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._rect

    def collapsed(self, zoom: float) -> bool:
        """Whether at ``zoom`` some port's own label does not fit: the row shows its count."""
        if self._zoom is None or self._zoom[0] != zoom:
            self._zoom = (zoom, any(not e.own_label(zoom) for e in self.ports))
        return self._zoom[1]

    def drawn_label(self, zoom: float) -> list[tuple[QRectF, str]]:
        """The count this row draws at ``zoom`` (the fullest form that fits), nothing zoomed in."""
        if not self.collapsed(zoom):
            return []
        font = legible(SMALL, zoom)
        for text in self.forms:
            parts = fit_label(font, self._rect, text, "", margin_at(zoom))
            if parts and parts[0][1] == text:
                return parts
        return []

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        zoom = zoom_of(p)
        if not self.collapsed(zoom):
            return
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setPen(QPen(QColor("#868e96"), 1.0))
        p.setBrush(QBrush(self.ports[0].fill))
        p.drawRoundedRect(self._rect, 5, 5)
        p.setPen(QColor("#212529"))
        p.setFont(legible(SMALL, zoom))
        for rect, text in self.drawn_label(zoom):
            p.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def port_row_forms(switch_kinds: Sequence[str], nics: int) -> tuple[list[str], list[str]]:
    """The count texts of a node's middle row (PCIe switches, CPUs, fabric ports) and NIC row,
    fullest first."""
    pcie = switch_kinds.count("pcie-switch")
    cpus = switch_kinds.count("cpu")
    other = len(switch_kinds) - pcie - cpus
    long_parts = [t for t in (pcie and _plural(pcie, "PCIe switch", "PCIe switches"), cpus and _plural(cpus, "CPU"),
                              other and _plural(other, "port")) if t]
    short_parts = [t for t in (pcie and f"{pcie} PCIe", cpus and f"{cpus} CPU", other and f"{other} other") if t]
    mid = [" · ".join(long_parts), " · ".join(short_parts)] if long_parts else []
    return mid, ([_plural(nics, "NIC"), str(nics)] if nics else [])


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
        mid_kinds = [sw.kind for sw in node.switches if sw.kind in ("pcie-switch", "cpu", "fabric")]
        mid_forms, nic_forms = port_row_forms(mid_kinds, len(node.nics))
        mid = [self.endpoints[sw.id] for sw in node.switches if sw.kind in ("pcie-switch", "cpu", "fabric")]
        nics = [self.endpoints[nic.id] for nic in node.nics]
        self.port_rows = [PortRow(ports, forms, self) for ports, forms in ((mid, mid_forms), (nics, nic_forms)) if ports]
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

    def __init__(self, node: NodeItem, switch: ClusterSwitchItem, kind: LinkKind | None, members: list[str]) -> None:
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
        self.setLine(QLineF(QPointF(r.center().x(), r.bottom() - 4), self.switch.center_in_scene()))


def _blend(base: QColor, over: QColor) -> QColor:
    a = over.alphaF()
    return QColor.fromRgbF(
        base.redF() * (1 - a) + over.redF() * a,
        base.greenF() * (1 - a) + over.greenF() * a,
        base.blueF() * (1 - a) + over.blueF() * a,
    )
