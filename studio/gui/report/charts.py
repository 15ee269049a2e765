"""The report's pictures, drawn offscreen by the GUI's own chart code at 2× for print.

Cluster: the canvas scene (:class:`~studio.gui.canvas.ClusterScene` in a
:class:`~studio.gui.canvas.CanvasView`); memory: :func:`studio.gui.views.memory_bars.paint_memory_bars`;
timelines: :class:`~studio.gui.views.timeline.TimelinePlot`; Pareto: :class:`ParetoPlot`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from studio.engine.plan.results import PlanResult
from studio.service.report.report_content import Option, ReportData

SCALE = 2.0
LANE_AXIS_WIDTH = 64
CHART_WIDTH = 780  # logical pixels; images are SCALE × this


def ensure_app() -> None:
    """A QApplication exists; without a display, Qt runs offscreen."""
    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is None and sys.platform.startswith("linux"):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from studio.gui.toolkit.resources import application

    application()


def png_bytes(img: QImage) -> bytes:
    """``img`` encoded as PNG."""
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    img.save(buf, "PNG")  # type: ignore[call-overload]  # PySide6 takes the format as str (its stubs say bytes, which it refuses)
    buf.close()
    return bytes(data.data())


def _grab(view, size: tuple[int, int]) -> QImage:
    """Render the graphics view ``view`` (a pyqtgraph plot) at ``size`` logical pixels into a
    SCALE× image; the scene is vector-drawn again at the higher resolution, not upscaled."""
    view.resize(*size)
    view.grab()  # lays the widget out (pyqtgraph sizes its view box on the resize event)
    w, h = int(size[0] * SCALE), int(size[1] * SCALE)
    img = QImage(w, h, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(QColor("white"))
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    view.render(p, QRectF(0, 0, w, h), view.viewport().rect(), Qt.AspectRatioMode.IgnoreAspectRatio)
    p.end()
    img.setDevicePixelRatio(SCALE)
    return img


def cluster_image(data: ReportData, max_width: int = 2400) -> QImage:
    """The canvas picture of the cluster with the chosen layout's placement overlay and legend;
    above :data:`~studio.service.report.report_nodes.CANVAS_MAX_GPUS` GPUs or
    :data:`~studio.service.report.report_nodes.CANVAS_MAX_NODES` nodes, the node map (a box per node, a cell
    per GPU), whose size does not grow with the cluster."""
    from studio.service.report.report_nodes import draws_links

    plan = data.chosen.plan
    if not draws_links(data.project.cluster):
        from studio.gui.report.node_map import node_map_image

        return node_map_image(data.project.cluster, plan, CHART_WIDTH, SCALE)
    from studio.gui.canvas import CanvasView, ClusterScene
    from studio.gui.document import ProjectDocument

    doc = ProjectDocument(data.project, evaluate=lambda _p: plan, threaded=False)
    doc.recompute_now()
    scene = ClusterScene(doc)
    view = CanvasView(scene)
    view.resize(1200, 800)
    scene._on_result(plan, doc.revision)
    view.refresh_legend()
    img = view.render_image(scale=SCALE)
    if img.width() > max_width:
        img = img.scaledToWidth(max_width, Qt.TransformationMode.SmoothTransformation)
    view.deleteLater()
    scene.deleteLater()
    doc.deleteLater()
    return img


def memory_image(plan: PlanResult, width: int = CHART_WIDTH, height: int = 300) -> QImage:
    """Stacked per-GPU memory bars of ``plan`` (weights, KV cache, activations, overhead, free)."""
    from studio.gui.views.render import memory_image as render_memory

    return render_memory(plan, (width, height), SCALE)


def _timeline_plot(option: Option, phase: str, x_max: float, width: int):
    from studio.gui.views.timeline import TimelinePlot

    tl = option.plan.timelines[phase]
    plot = TimelinePlot(legend=False)
    plot.set_timeline(tl)
    plot.getPlotItem().getAxis("left").setWidth(LANE_AXIS_WIDTH)
    plot.setXRange(0, x_max, padding=0)
    plot.note.setPos(x_max * 0.995, len(tl.lanes) - 0.4 + 0.5)
    height = 56 + 26 * len(tl.lanes)
    return plot, (width, height)


def _paint_key(p: QPainter, x: float, y: float) -> float:
    """The segment colours once for all stacked timelines (the GUI's own colours); returns height."""
    from studio.engine.plan.views import REQUEST_ONLY_KINDS, SEGMENT_KINDS
    from studio.gui.toolkit.colors import SEGMENT_COLORS, SEGMENT_LABELS

    font = QFont()
    font.setPointSizeF(9)
    p.setFont(font)
    for kind in SEGMENT_KINDS:
        if kind in REQUEST_ONLY_KINDS:
            continue  # the report stacks layout steps; a disaggregated request is not one
        label = SEGMENT_LABELS.get(kind, kind)
        p.fillRect(QRectF(x, y + 5, 12, 12), QColor(SEGMENT_COLORS.get(kind, "#999999")))
        p.setPen(QColor("#212529"))
        p.drawText(QPointF(x + 16, y + 15), label)
        x += 16 + p.fontMetrics().horizontalAdvance(label) + 18
    return 22.0


def timelines_image(options: Sequence[Option], phase: str, width: int = CHART_WIDTH) -> QImage:
    """The timelines of ``options`` stacked on ONE shared time axis (same ms per pixel)."""
    shown = [o for o in options if phase in o.plan.timelines]
    x_max = max((o.plan.timelines[phase].total_ms for o in shown), default=1.0) * 1.04
    title_h = 22
    parts: list[tuple[str, QImage]] = []
    for o in shown:
        plot, size = _timeline_plot(o, phase, x_max, width)
        parts.append((f"{'Chosen: ' if o.origin == 'chosen' else ''}{o.name}", _grab(plot, size)))
        plot.deleteLater()
    key_h = 24
    total_h = key_h + sum(title_h + int(img.height() / SCALE) for _t, img in parts)
    out = QImage(int(width * SCALE), int(total_h * SCALE), QImage.Format.Format_ARGB32_Premultiplied)
    out.setDevicePixelRatio(SCALE)
    out.fill(QColor("white"))
    p = QPainter(out)
    p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    _paint_key(p, LANE_AXIS_WIDTH, 0)
    font = QFont()
    font.setPointSizeF(10)
    font.setBold(True)
    y = float(key_h)
    for title, img in parts:
        p.setFont(font)
        p.setPen(QColor("#212529"))
        p.drawText(QRectF(8, y, width - 16, title_h), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)
        y += title_h
        p.drawImage(QPointF(0, y), img)
        y += img.height() / SCALE
    p.end()
    return out


def pareto_image(data: ReportData, width: int = CHART_WIDTH, height: int = 420) -> QImage:
    """The sweep's Pareto plot with the chosen layout (star) and the alternatives (diamonds)."""
    from studio.gui.report.pareto import Marked, ParetoPlot

    marked = [
        Marked(("Chosen " if o.origin == "chosen" else "") + o.plan.layout.label,
               o.plan.tokens_per_s_per_user, o.plan.output_tokens_per_s_per_gpu, o.origin == "chosen")
        for o in reversed(data.options)
    ]
    plot = ParetoPlot()
    plot.set_sweep(data.sweep, marked)
    img = _grab(plot, (width, height))
    plot.deleteLater()
    return img
