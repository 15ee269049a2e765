"""Offscreen drawings of the charts (timeline, memory bars) for files and reports.

The report reuses these, so the HTML/PDF shows the same pictures as the window.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from studio.engine.plan.results import PlanResult
from studio.engine.plan.views import Timeline
from studio.gui.toolkit.resources import application
from studio.gui.views.memory_bars import bars_for, paint_memory_bars


def _app() -> None:
    application()


def memory_image(result: PlanResult, size: tuple[int, int] = (900, 360), scale: float = 2.0) -> QImage:
    """Stacked memory bars of ``result`` as an image (``scale`` × ``size`` pixels)."""
    _app()
    w, h = size
    img = QImage(int(w * scale), int(h * scale), QImage.Format.Format_ARGB32_Premultiplied)
    img.setDevicePixelRatio(scale)
    img.fill(QColor("white"))
    p = QPainter(img)
    font = QFont()
    font.setPointSizeF(9)
    paint_memory_bars(p, QRectF(6, 4, w - 12, h - 8), bars_for(result.memory), font)
    p.end()
    return img


def timeline_image(timeline: Timeline, size: tuple[int, int] = (900, 300)) -> QImage:
    """The pipeline timeline chart of one phase as an image."""
    _app()
    from studio.gui.views.timeline import TimelinePlot

    plot = TimelinePlot()
    plot.resize(*size)
    plot.set_timeline(timeline)
    img = plot.grab().toImage()
    plot.deleteLater()
    return img


