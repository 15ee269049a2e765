"""The report's picture of a cluster too big to draw link by link: a box per node, a cell per GPU
coloured by the pipeline stage that runs on it (the canvas's stage colours).

Its cost is one rectangle per GPU, so the documented maximum (65,536 GPUs) draws in well under a
second into a picture of bounded size (:data:`MAX_HEIGHT`), where the canvas picture grew with the
cluster (61,800 pixels tall at 512 nodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QImage, QPainter, QPen

from studio.core.hardware import Cluster
from studio.engine.plan.results import PlanResult

MAX_HEIGHT = 900  # logical pixels of the drawing, legend excluded
MAX_CELL = 16.0  # a GPU cell is never drawn larger than this
IDLE_COLOR = "#dee2e6"
NODE_FILL = "#f8f9fa"
NODE_EDGE = "#868e96"
LEGEND_STAGES = 16  # stage swatches shown before "…"


@dataclass(frozen=True)
class Grid:
    """Geometry of the map (logical pixels)."""

    node_cols: int  # nodes per row
    gpu_cols: int  # GPU cells per row inside a node
    gpu_rows: int
    cell: float  # side of a GPU cell
    cell_gap: float
    pad: float  # inside a node box
    node_gap: float
    label_h: float  # node name above the cells (0: no names)

    @property
    def box_w(self) -> float:
        return 2 * self.pad + self.gpu_cols * self.cell + (self.gpu_cols - 1) * self.cell_gap

    @property
    def box_h(self) -> float:
        return (
            self.label_h
            + 2 * self.pad
            + self.gpu_rows * self.cell
            + (self.gpu_rows - 1) * self.cell_gap
        )

    def height(self, nodes: int) -> float:
        rows = math.ceil(nodes / self.node_cols)
        return rows * self.box_h + (rows - 1) * self.node_gap

    def width(self, nodes: int) -> float:
        cols = min(self.node_cols, nodes)
        return cols * self.box_w + (cols - 1) * self.node_gap


def gpu_grid(gpus: int) -> tuple[int, int]:
    """(columns, rows) of a node's GPU cells: the divisor of ``gpus`` nearest above its square
    root as columns (8 → 4 × 2, 72 → 9 × 8, 1024 → 32 × 32), else a near square."""
    gpus = max(gpus, 1)
    root = math.ceil(math.sqrt(gpus))
    for c in range(root, min(gpus, 2 * root) + 1):
        if gpus % c == 0:
            return c, gpus // c
    return root, math.ceil(gpus / root)


def layout_grid(nodes: int, slots: int, width: float, max_height: float = MAX_HEIGHT) -> Grid:
    """The grid with the largest GPU cells that fits ``nodes`` boxes of ``slots`` GPU cells in
    ``width`` × ``max_height``.

    Spacious boxes with names first; when nothing fits, tight boxes without gaps (65,536
    single-GPU nodes still fit, at about 3 pixels a node)."""
    gc, gr = gpu_grid(slots)
    nodes = max(nodes, 1)
    g = _grid(1, gc, gr, width, 0.0, 0.0, 0.0, 0.0)
    for cell_gap, pad, node_gap, label_h in (
        (1.0, 3.0, 6.0, 13.0),
        (1.0, 2.0, 4.0, 0.0),
        (0.0, 0.5, 1.0, 0.0),
    ):
        # the fewest node columns whose height fits gives the largest cells
        lo, hi = 1, nodes
        while lo < hi:
            mid = (lo + hi) // 2
            if (
                _grid(mid, gc, gr, width, cell_gap, pad, node_gap, label_h).height(nodes)
                <= max_height
            ):
                hi = mid
            else:
                lo = mid + 1
        g = _grid(lo, gc, gr, width, cell_gap, pad, node_gap, label_h)
        if g.cell >= (4.0 if label_h else 1.0) and g.height(nodes) <= max_height:
            if label_h and g.box_w < 64:  # names need room
                continue
            return g
    return g  # the tightest grid, even if taller than max_height (cannot happen within the cluster limits)


def _grid(
    node_cols: int,
    gc: int,
    gr: int,
    width: float,
    cell_gap: float,
    pad: float,
    node_gap: float,
    label_h: float,
) -> Grid:
    box_w = (width - (node_cols - 1) * node_gap) / node_cols
    cell = (box_w - 2 * pad - (gc - 1) * cell_gap) / gc
    return Grid(node_cols, gc, gr, max(min(cell, MAX_CELL), 0.0), cell_gap, pad, node_gap, label_h)


def node_map_image(cluster: Cluster, plan: PlanResult, width: int, scale: float) -> QImage:
    """Every node of ``cluster`` as a box of GPU cells coloured by the stage ``plan`` runs there,
    with a legend of the stage colours on top; ``scale`` × the logical size."""
    from studio.gui.canvas.style import stage_color

    stage_of = {m.gpu_id: m.stage for m in plan.memory}
    per_node = max((n.slots for n in cluster.nodes), default=1)
    grid = layout_grid(len(cluster.nodes), per_node, width - 2)
    font = QFont()
    font.setPointSizeF(8)
    fm = QFontMetricsF(font)
    pp = plan.layout.pp
    idle = any(g.id not in stage_of for n in cluster.nodes for g in n.gpus)
    legend_h = fm.height() + 10
    draw_h = grid.height(len(cluster.nodes))
    img = QImage(
        int(width * scale),
        int((legend_h + draw_h + 4) * scale),
        QImage.Format.Format_ARGB32_Premultiplied,
    )
    img.setDevicePixelRatio(scale)
    img.fill(QColor("white"))
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    p.setFont(font)
    # legend: stage swatches (the first LEGEND_STAGES), idle
    x = 2.0
    entries: list[tuple[QColor | None, str]] = [(stage_color(s), f"S{s}") for s in range(min(pp, LEGEND_STAGES))]
    if pp > LEGEND_STAGES:
        entries.append((None, f"… S{pp - 1} (colours repeat every 8 stages)"))
    if idle:
        entries.append((QColor(IDLE_COLOR), "idle GPU"))
    p.drawText(QPointF(x, 4 + fm.ascent()), "Pipeline stage:")
    x += fm.horizontalAdvance("Pipeline stage:") + 8
    for color, text in entries:
        if color is not None:
            p.fillRect(QRectF(x, 4 + (fm.height() - 10) / 2, 10, 10), color)
            x += 13
        p.setPen(QColor("#212529"))
        p.drawText(QPointF(x, 4 + fm.ascent()), text)
        x += fm.horizontalAdvance(text) + 10
    # nodes
    top = legend_h
    edge = QPen(QColor(NODE_EDGE), 0.5 if grid.pad >= 1 else 0)
    fill = QColor(NODE_FILL)
    idle_color = QColor(IDLE_COLOR)
    colors: dict[int, QColor] = {}
    step_c = grid.cell + grid.cell_gap
    for k, node in enumerate(cluster.nodes):
        r, c = divmod(k, grid.node_cols)
        bx = 1 + c * (grid.box_w + grid.node_gap)
        by = top + r * (grid.box_h + grid.node_gap)
        if grid.pad >= 1:
            p.setPen(edge)
            p.setBrush(fill)
            p.drawRect(QRectF(bx, by, grid.box_w, grid.box_h))
        if grid.label_h:
            p.setPen(QColor("#495057"))
            name = fm.elidedText(node.name, Qt.TextElideMode.ElideRight, grid.box_w - 2 * grid.pad)
            p.drawText(QPointF(bx + grid.pad, by + grid.pad + fm.ascent() - 1), name)
        cy0 = by + grid.label_h + grid.pad
        for g in node.gpus:
            gr, gc = divmod(min(g.slot, grid.gpu_cols * grid.gpu_rows - 1), grid.gpu_cols)
            stage = stage_of.get(g.id)
            if stage is None:
                color = idle_color
            elif stage in colors:
                color = colors[stage]
            else:
                color = colors[stage] = stage_color(stage)
            p.fillRect(
                QRectF(bx + grid.pad + gc * step_c, cy0 + gr * step_c, grid.cell, grid.cell), color
            )
    p.end()
    return img
