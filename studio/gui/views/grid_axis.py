"""A pyqtgraph axis grid blended a whole pixel row at a time.

Qt's raster engine blends a semi-transparent vertical line one one-pixel span per row: about 45 µs
for a line 120 px tall, so the timeline's ~50 faint grid lines cost ~2 ms on every paint (most of
the chart's paint, and the chart repaints on every result). :func:`blend_grid_by_rows` makes an
axis draw the same lines as one image row, holding each line's colour in its column, stretched
over the lines' rows: Qt blends that a row at a time, for a fraction of the cost, onto the same
pixels.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QImage, QPainter, QPen, QTransform


def blend_grid_by_rows(axis: pg.AxisItem) -> None:
    """Make horizontal ``axis`` (its grid shown) draw its grid lines as one stretched image row.

    The lines are pixel-aligned as Qt aligns an aliased one-pixel line (the column and rows its
    device coordinates fall in), from the axis's device transform when its picture is drawn
    (pyqtgraph draws it again when the axis is resized or its range changes); a transform that
    scales or rotates leaves the lines to pyqtgraph. (The axis keeps its class: an axis made here
    and handed to a plot would be owned twice, by Python and by the plot.)"""
    draw: Callable[..., None] = axis.drawPicture

    def draw_picture(p: QPainter, axis_spec: tuple, tick_specs: list, text_specs: list) -> None:
        view = axis.getViewWidget()
        t = axis.sceneTransform() * view.viewportTransform() if view is not None else None
        if t is not None and t.type() in _TRANSLATIONS:
            lines = [(pen, a, b) for pen, a, b in tick_specs if _is_grid_line(a, b)]
            if lines:
                _draw_vertical_lines(p, lines, t.dx(), t.dy())
                tick_specs = [spec for spec in tick_specs if not _is_grid_line(spec[1], spec[2])]
        draw(p, axis_spec, tick_specs, text_specs)

    setattr(axis, "drawPicture", draw_picture)  # noqa: B010 - an instance's own drawing, not a class's


_TRANSLATIONS = (QTransform.TransformationType.TxNone, QTransform.TransformationType.TxTranslate)


def _is_grid_line(a: QPointF, b: QPointF) -> bool:
    """A tick drawn across the chart (vertical, longer than a pixel)."""
    return a.x() == b.x() and abs(b.y() - a.y()) > 1


def _draw_vertical_lines(p: QPainter, lines: list[tuple[QPen, QPointF, QPointF]], dx: float, dy: float) -> None:
    """Blend aliased one-pixel vertical lines as one image row stretched over their rows: each
    line's colour in the column its device x falls in, over the rows from its top's to its
    bottom's (lines drawn later win a shared column, as they would painted one by one). ``dx``,
    ``dy``: the device translation the picture is played at."""
    columns = [math.floor(a.x() + dx) for _pen, a, _b in lines]
    left, right = min(columns), max(columns) + 1
    top = math.floor(min(min(a.y(), b.y()) for _pen, a, b in lines) + dy)
    bottom = math.floor(max(max(a.y(), b.y()) for _pen, a, b in lines) + dy)
    row = QImage(right - left, 1, QImage.Format.Format_ARGB32)
    row.fill(QColor(0, 0, 0, 0))
    for (pen, _a, _b), x in zip(lines, columns, strict=True):
        row.setPixelColor(x - left, 0, pen.color())
    p.drawImage(QRectF(left - dx, top - dy, right - left, bottom - top + 1), row)
