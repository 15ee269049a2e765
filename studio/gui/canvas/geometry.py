"""Where things sit inside a node box (pure arithmetic, node-local coordinates)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QRectF

from studio.core.hardware import NVLINK_SWITCH_KINDS, Node
from studio.gui.canvas.style import GAP, HEADER_H, MAX_COLS, PAD, ROW_H, TILE_H, TILE_W


@dataclass(frozen=True)
class NodeGeometry:
    """Rectangles of a node's parts, relative to its top-left corner."""

    size: QRectF
    slots: tuple[QRectF, ...]
    switches: dict[str, QRectF]
    nics: dict[str, QRectF]


def _row(ids: list[str], y: float, width: float, item_w: float) -> dict[str, QRectF]:
    """Spread ``ids`` evenly over a row of ``width`` (items shrink when crowded)."""
    if not ids:
        return {}
    n = len(ids)
    avail = width - 2 * PAD
    w = min(item_w, (avail - GAP * (n - 1)) / n)
    step = (avail - w) / (n - 1) if n > 1 else 0.0
    x0 = PAD if n > 1 else (width - w) / 2
    return {i: QRectF(x0 + k * step, y, w, ROW_H - 6) for k, i in enumerate(ids)}


def node_geometry(node: Node) -> NodeGeometry:
    """Lay out a node: header, GPU slot grid (≤ 8 per row), NVSwitch bar, PCIe switches and CPUs,
    then NICs."""
    cols = min(node.slots, MAX_COLS)
    rows = -(-node.slots // cols)
    width = max(2 * PAD + cols * TILE_W + (cols - 1) * GAP, 200.0)
    grid_w = cols * TILE_W + (cols - 1) * GAP
    gx = (width - grid_w) / 2
    y = HEADER_H
    slots = tuple(
        QRectF(gx + (s % cols) * (TILE_W + GAP), y + (s // cols) * (TILE_H + GAP), TILE_W, TILE_H)
        for s in range(node.slots)
    )
    y += rows * (TILE_H + GAP) + 4
    switches: dict[str, QRectF] = {}
    nv = [s.id for s in node.switches if s.kind in NVLINK_SWITCH_KINDS]
    if nv:
        for i in nv:
            switches[i] = QRectF(PAD, y, width - 2 * PAD, ROW_H - 8)
            y += ROW_H - 4
        y += 6
    mid = [s.id for s in node.switches if s.kind == "pcie-switch"] + [
        s.id for s in node.switches if s.kind in ("cpu", "fabric")
    ]
    if mid:
        switches.update(_row(mid, y, width, 64.0))
        y += ROW_H + 4
    nics = _row([x.id for x in node.nics], y, width, 52.0)
    if nics:
        y += ROW_H + 2
    return NodeGeometry(QRectF(0, 0, width, y + PAD / 2), slots, switches, nics)
