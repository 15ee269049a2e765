"""Colours, pen styles and sizes of the canvas (one place, so the legend matches the drawing)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPen

from studio.core.hardware import LinkFamily, LinkKind

TILE_W = 52.0
TILE_H = 42.0
GAP = 6.0
PAD = 12.0
HEADER_H = 28.0
ROW_H = 26.0
MAX_COLS = 8

#: Default colour of each link family when a link kind has no colour of its own.
FAMILY_COLORS: dict[LinkFamily, str] = {
    LinkFamily.NVLINK: "#76b900",
    LinkFamily.NVLINK_BRIDGE: "#4f8a10",
    LinkFamily.XGMI: "#d9480f",
    LinkFamily.PCIE: "#1c7ed6",
    LinkFamily.INFINIBAND: "#ae3ec9",
    LinkFamily.ROCE: "#e8590c",
    LinkFamily.CPU: "#868e96",
}

#: Pen style per family: scale-up solid, PCIe/CPU dashed, networks dash-dot.
FAMILY_STYLES: dict[LinkFamily, Qt.PenStyle] = {
    LinkFamily.NVLINK: Qt.PenStyle.SolidLine,
    LinkFamily.NVLINK_BRIDGE: Qt.PenStyle.SolidLine,
    LinkFamily.XGMI: Qt.PenStyle.SolidLine,
    LinkFamily.PCIE: Qt.PenStyle.DashLine,
    LinkFamily.CPU: Qt.PenStyle.DotLine,
    LinkFamily.INFINIBAND: Qt.PenStyle.DashDotLine,
    LinkFamily.ROCE: Qt.PenStyle.DashDotLine,
}

FAMILY_LABELS: dict[LinkFamily, str] = {
    LinkFamily.NVLINK: "NVLink / NVSwitch",
    LinkFamily.NVLINK_BRIDGE: "NVLink bridge",
    LinkFamily.XGMI: "xGMI (Infinity Fabric)",
    LinkFamily.PCIE: "PCIe",
    LinkFamily.CPU: "CPU socket link",
    LinkFamily.INFINIBAND: "InfiniBand",
    LinkFamily.ROCE: "RoCE / Ethernet",
}

#: Stage colours of the placement overlay (colour-blind friendly, Okabe–Ito order).
STAGE_COLORS: tuple[str, ...] = (
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000",
)
SLOW_LINK_COLOR = "#e03131"
SELECT_COLOR = "#ffa94d"


def link_color(kind: LinkKind | None) -> QColor:
    """The colour a link of ``kind`` is drawn in."""
    if kind is None:
        return QColor("#adb5bd")
    return QColor(kind.color or FAMILY_COLORS.get(kind.family, "#adb5bd"))


def link_pen(kind: LinkKind | None, lanes: float = 1.0, cosmetic: bool = True) -> QPen:
    """Pen of a link: family colour and style; bonded links (more lanes) drawn a little wider."""
    pen = QPen(link_color(kind))
    width = 1.6 + min(2.0, 0.25 * max(0.0, lanes - 1.0))
    if kind is not None and kind.family.is_network:
        width += 0.6
    pen.setWidthF(width)
    pen.setStyle(FAMILY_STYLES.get(kind.family, Qt.PenStyle.SolidLine) if kind else Qt.PenStyle.DotLine)
    pen.setCosmetic(cosmetic)
    return pen


def stage_color(stage: int) -> QColor:
    return QColor(STAGE_COLORS[stage % len(STAGE_COLORS)])


def short_gpu_name(name: str) -> str:
    """Tile label of a GPU spec name: drop the vendor word, keep the model (``H100 SXM``)."""
    for prefix in ("NVIDIA ", "AMD ", "Intel "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    words = name.split()
    if not words:
        return "GPU"
    two = " ".join(words[:2])
    return two if len(two) <= 8 else words[0][:9]
