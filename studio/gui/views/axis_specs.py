"""The layout of a pyqtgraph time axis (its ticks, grid lines and labels), computed quickly.

A result redraws the timeline's time axis (its range follows the step's length), and pyqtgraph's
``AxisItem.generateDrawSpecs`` took a millisecond of a 16-GPU edit to lay it out: a Python
``Point`` per tick (~65 ticks with the grid's), every candidate label of every tick level measured
with ``QPainter.boundingRect`` (~40 labels: a level is measured before it is found too crowded to
show) and NumPy reductions over lists of a few numbers. :func:`quick_draw_specs` gives a
horizontal axis the same computation with ``QPointF`` ticks, labels measured once per font and
string, and plain sums; it returns what pyqtgraph returns, value for value (``tests/gui`` compares
the two over many ranges and widths), for the pyqtgraph versions it was checked against; any other
version, a vertical axis, ticks set by hand or axis stops keep pyqtgraph's own.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen

#: pyqtgraph versions whose ``AxisItem.generateDrawSpecs`` the quick layout reproduces.
CHECKED_VERSIONS = ("0.14.0",)

_MEASURE_RECT = QRectF(0, 0, 100, 100)
_TEXT_FLAGS = Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextDontClip


def quick_draw_specs(axis: pg.AxisItem) -> None:
    """Lay ``axis`` (horizontal, at the bottom) out as pyqtgraph does, quickly (see the module)."""
    generate: Callable[[QPainter], object] = axis.generateDrawSpecs
    sizes: dict[tuple, tuple[float, float]] = {}

    def generate_draw_specs(p: QPainter) -> object:
        if not supported(axis):
            return generate(p)
        return draw_specs(axis, p, sizes)

    setattr(axis, "generateDrawSpecs", generate_draw_specs)  # noqa: B010 - an instance's own drawing


def supported(axis: pg.AxisItem) -> bool:
    """Whether :func:`draw_specs` reproduces pyqtgraph's layout of ``axis``."""
    return (pg.__version__ in CHECKED_VERSIONS and axis.orientation == "bottom" and axis._tickLevels is None
            and not any(axis.style["stopAxisAtTick"]))


def draw_specs(axis: pg.AxisItem, p: QPainter, sizes: dict[tuple, tuple[float, float]]) -> tuple | None:
    """``axis.generateDrawSpecs(p)`` of pyqtgraph (a bottom axis, ticks from ``tickValues``), with
    label sizes looked up in (and added to) ``sizes``."""
    style = axis.style
    if style["tickFont"] is not None:
        p.setFont(style["tickFont"])
    bounds = axis.mapRectFromParent(axis.geometry())
    view = axis.linkedView()
    tick_bounds = bounds if view is None or axis.grid is False else view.mapRectToItem(axis, view.boundingRect())
    span = (bounds.topLeft() + pg.Point(-1.0, 1.0), bounds.topRight() + pg.Point(1.0, 1.0))
    tick_start, tick_stop = tick_bounds.top(), bounds.top()
    points = list(map(axis.mapToDevice, span))
    if None in points:
        return None
    length_px = pg.Point(points[1] - points[0]).length()
    if length_px == 0:
        return None
    levels = axis.tickValues(axis.range[0], axis.range[1], length_px)

    lo, hi = axis.range
    dif = hi - lo
    if dif == 0:
        scale, offset = 1, 0
    else:
        scale = bounds.width() / dif
        offset = lo * scale
    ends = [lo * scale - offset, hi * scale - offset]
    x_min, x_max = min(ends), max(ends)

    positions: list[list[float | None]] = []
    tick_specs: list[tuple[QPen, QPointF, QPointF]] = []
    for i, (_spacing, ticks) in enumerate(levels):
        at: list[float | None] = []
        positions.append(at)
        tick_length = style["tickLength"] / ((i * 0.5) + 1.0)
        pen = _tick_pen(axis, i, len(ticks), length_px)
        bottom = tick_stop if axis.grid is not False else tick_stop + tick_length
        for v in ticks:
            x = (v * scale) - offset
            if x < x_min or x > x_max:
                at.append(None)
                continue
            at.append(x)
            tick_specs.append((pen, QPointF(x, tick_start), QPointF(x, bottom)))
    axis_spec = (axis.pen(), span[0], span[1])

    text_offset = style["tickTextOffset"][1]
    last_size2 = 0.0
    widths: list[float] = []  # of every label measured so far, all levels (as pyqtgraph sums them)
    heights: list[float] = []
    text_specs: list[tuple[QRectF, Qt.AlignmentFlag, str]] = []
    if not style["showValues"]:
        return axis_spec, tick_specs, text_specs
    font: tuple | None = None
    room = axis.boundingRect()
    for i in range(min(len(levels), style["maxTextLevel"] + 1)):
        spacing, values = levels[i]
        strings = axis.tickStrings(values, axis.autoSIPrefixScale * axis.scale, spacing)
        if len(strings) == 0:
            continue
        shown: list[tuple[float, float, float, str]] = []  # (x, width, height, text)
        for j, s in enumerate(strings):
            x = positions[i][j]
            if x is None:
                continue
            if font is None:
                device = p.device()
                font = (p.font().key(), device.logicalDpiX(), device.logicalDpiY())
            size = sizes.get((font, s))
            if size is None:
                if len(sizes) > 1024:  # labels of ranges long gone
                    sizes.clear()
                br = p.boundingRect(_MEASURE_RECT, Qt.AlignmentFlag.AlignCenter, s)
                size = sizes[(font, s)] = (br.width(), br.height() * 0.8)
            widths.append(size[0])
            heights.append(size[1])
            shown.append((x, size[0], size[1], s))
        size2 = max(heights) if heights else 0
        if i > 0:  # always draw top level; stop when this level's labels would crowd the axis
            fill = float(np.sum(widths) if widths else 0) / length_px
            if any(len(text_specs) >= n and fill >= limit for n, limit in style["textFillLimits"]):
                break
        last_size2 = size2
        top = tick_stop + (max(0, style["tickLength"]) + text_offset)  # summed as pyqtgraph sums it
        for x, width, height, s in shown:
            rect = QRectF(x - width / 2.0, top, width, height)
            if room & rect != rect:
                continue
            text_specs.append((rect, _TEXT_FLAGS, s))
    axis._updateMaxTextSize(last_size2)
    return axis_spec, tick_specs, text_specs


def _tick_pen(axis: pg.AxisItem, level: int, count: int, length_px: float) -> QPen:
    """The pen of tick level ``level`` (``count`` ticks), its alpha faded as pyqtgraph fades it."""
    alpha = axis.style["tickAlpha"]
    if alpha is None:
        alpha = 255 / (level + 1)
        if axis.grid is not False:
            alpha *= axis.grid / 255.0 * pg.functions.clip_scalar((0.05 * length_px / (count + 1)), 0.0, 1.0)
    elif isinstance(alpha, float):
        alpha = min(255, max(0, int(round(alpha * 255))))
    elif isinstance(alpha, int):
        if alpha > 255 or alpha < 0:
            raise ValueError("lineAlpha should be [0..255]")
    else:
        raise TypeError("Line Alpha should be of type None, float or int")
    pen = axis.tickPen()
    if pen.brush().style() == Qt.BrushStyle.SolidPattern:
        pen = QPen(pen)
        color = QColor(pen.color())
        color.setAlpha(int(alpha))
        pen.setColor(color)
    return pen
