"""Stacked memory bars per GPU (weights, KV, activations, overhead, free) against capacity.

:func:`paint_memory_bars` draws on any QPainter (widget, image, PDF), so the report reuses it via
:mod:`studio.gui.views.render`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from studio.core.units import GIB
from studio.engine.plan.results import GpuMemory
from studio.gui.toolkit.colors import FREE_COLOR, MEMORY_PARTS, OVER_COLOR

MAX_BARS = 64


@dataclass(frozen=True)
class Bar:
    """One bar: a GPU, or the most loaded GPU of a stage when there are too many GPUs."""

    label: str
    memory: GpuMemory
    count: int = 1


def bars_for(memory: Sequence[GpuMemory], max_bars: int = MAX_BARS) -> list[Bar]:
    """A bar per GPU; above ``max_bars`` GPUs, one bar per stage (its most loaded GPU)."""
    if len(memory) <= max_bars:
        return [Bar(f"{m.stage}.{m.tp_rank}" if len(memory) > 8 else f"GPU {m.rank}", m) for m in memory]
    by_stage: dict[int, list[GpuMemory]] = {}
    for m in memory:
        by_stage.setdefault(m.stage, []).append(m)
    return [Bar(f"S{s}", max(ms, key=lambda m: m.total), len(ms)) for s, ms in sorted(by_stage.items())]


def paint_memory_bars(p: QPainter, rect: QRectF, bars: Sequence[Bar], font: QFont | None = None) -> list[QRectF]:
    """Draw ``bars`` in ``rect`` with a GiB axis and a legend; returns each bar's rectangle."""
    font = font or QFont()
    fm = QFontMetrics(font)
    p.save()
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    p.setFont(font)
    line = fm.height()
    entries = [*MEMORY_PARTS, ("free", "Free", FREE_COLOR)]
    widths = [13 + fm.horizontalAdvance(label) + 12 for _k, label, _c in entries]
    rows_needed, x = 1, 0.0  # the legend wraps as drawn below (three rows in a narrow dock)
    for w in widths:
        if x + w > rect.width() - 4 and x > 0:
            rows_needed, x = rows_needed + 1, 0.0
        x += w
    legend_h = rows_needed * (line + 2) + 4
    # too short for the legend and a plot of at least 3 lines (the dock shares its height with the KV
    # tier bars): the bars alone, their parts named in each bar's tooltip
    show_legend = rect.height() - legend_h - line - 10 >= 3 * line
    if not show_legend:
        legend_h = 0
    axis_w = fm.horizontalAdvance("000 GiB") + 6
    plot = QRectF(rect.left() + axis_w, rect.top() + legend_h + 4, rect.width() - axis_w - 4, rect.height() - legend_h - line - 10)
    out: list[QRectF] = []
    if not bars or plot.width() < 10 or plot.height() < 10:
        p.restore()
        return out
    top = max(max(b.memory.capacity, b.memory.total) for b in bars) / GIB
    scale = plot.height() / top if top > 0 else 1.0
    # legend
    x, y0 = rect.left() + 4, rect.top() + 4
    for (_key, label, color), w in zip(entries, widths, strict=True) if show_legend else ():
        if x + w > rect.right() and x > rect.left() + 4:
            x, y0 = rect.left() + 4, y0 + line + 2
        p.fillRect(QRectF(x, y0 + (line - 10) / 2, 10, 10), QColor(color))
        p.setPen(QColor("#212529"))
        p.drawText(QPointF(x + 13, y0 + fm.ascent()), label)
        x += w
    # axis
    p.setPen(QPen(QColor("#adb5bd"), 1))
    step = _nice_step(top)
    while step * scale < line and step < top:  # a short plot: fewer ticks, their labels apart
        step *= 2
    v = 0.0
    while v <= top + 1e-9:
        y = plot.bottom() - v * scale
        p.setPen(QPen(QColor("#e9ecef"), 1))
        p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
        p.setPen(QColor("#495057"))
        p.drawText(QRectF(rect.left(), y - line / 2, axis_w - 4, line), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, f"{v:.0f} GiB")
        v += step
    n = len(bars)
    slot = plot.width() / n
    bw = max(2.0, min(46.0, slot * 0.72))
    show_labels = fm.horizontalAdvance(bars[0].label) + 4 <= slot
    for i, b in enumerate(bars):
        m = b.memory
        x0 = plot.left() + i * slot + (slot - bw) / 2
        y = plot.bottom()
        for key, _label, color in MEMORY_PARTS:
            h = getattr(m, key) / GIB * scale
            p.fillRect(QRectF(x0, y - h, bw, h), QColor(color))
            y -= h
        cap_y = plot.bottom() - m.capacity / GIB * scale
        if y > cap_y:
            p.fillRect(QRectF(x0, cap_y, bw, y - cap_y), QColor(FREE_COLOR))
        p.setPen(QPen(QColor(OVER_COLOR if m.total > m.usable else "#495057"), 1.4))
        p.drawLine(QPointF(x0 - 2, cap_y), QPointF(x0 + bw + 2, cap_y))
        out.append(QRectF(x0, min(cap_y, y), bw, plot.bottom() - min(cap_y, y)))
        if show_labels:
            p.setPen(QColor("#495057"))
            p.drawText(QRectF(plot.left() + i * slot, plot.bottom() + 2, slot, line), Qt.AlignmentFlag.AlignCenter, b.label)
    p.restore()
    return out


def describe_bar(b: Bar) -> str:
    """Tooltip text of a bar: every part in GiB."""
    m = b.memory
    head = f"{m.gpu_id} (rank {m.rank}, stage {m.stage}, TP rank {m.tp_rank})"
    if b.count > 1:
        head = f"Stage {m.stage}: most loaded of {b.count} GPUs, {head}"
    rows = [head]
    for key, label, _c in MEMORY_PARTS:
        rows.append(f"{label}: {getattr(m, key) / GIB:,.2f} GiB")
    rows.append(f"Free: {m.free / GIB:,.2f} GiB of {m.capacity / GIB:,.1f} GiB capacity")
    rows.append(f"Usable (memory utilisation): {m.usable / GIB:,.1f} GiB")
    return "\n".join(rows)


def _nice_step(top: float) -> float:
    for s in (5, 10, 20, 25, 40, 50, 100, 200, 250, 500, 1000):
        if top / s <= 5:
            return float(s)
    return top / 4


class MemoryBarsWidget(QWidget):
    """Widget showing :func:`paint_memory_bars`; hovering a bar shows its breakdown."""

    #: Least height, px: the window must fit a 1366×768 screen.
    MIN_HEIGHT = 110

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bars: list[Bar] = []
        self._rects: list[QRectF] = []
        self.setMinimumHeight(self.MIN_HEIGHT)  # the window must fit a 1366×768 screen
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMouseTracking(True)
        self._font = QFont()
        self._font.setPointSizeF(8.0)

    def set_memory(self, memory: Sequence[GpuMemory]) -> None:
        self.set_bars(bars_for(memory))

    def set_bars(self, bars: Sequence[Bar]) -> None:
        """Show ``bars`` as given (labels chosen by the caller: a disaggregated plan's pools); the
        same bars as shown are not painted again (an edit that moves no GPU's memory)."""
        bars = list(bars)
        if bars == self.bars:
            return
        self.bars = bars
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("white"))
        if not self.bars:
            p.setPen(QColor("#868e96"))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "No memory figures (the plan could not be computed)")
        else:
            self._rects = paint_memory_bars(p, QRectF(self.rect()).adjusted(4, 2, -4, -2), self.bars, self._font)
        p.end()

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 - Qt API
        pos = event.position()
        for r, b in zip(self._rects, self.bars, strict=False):
            if r.adjusted(-2, -2, 2, 2).contains(pos):
                QToolTip.showText(event.globalPosition().toPoint(), describe_bar(b), self)
                return
        QToolTip.hideText()
