"""Legend of the canvas: link kinds in use (colour + style) and pipeline stages.

It is a strip under the canvas (:class:`CanvasPane`), never an overlay on it, so it cannot cover
the drawing however the user zooms or pans; exported pictures put it under the drawing too.
Entries flow left to right and wrap to the width they get.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QVBoxLayout, QWidget

from studio.core.hardware import Cluster, LinkKind
from studio.gui.canvas.style import SLOW_LINK_COLOR, link_pen, stage_color

ROW = 18
SAMPLE = 28  # width of a line or swatch sample, px
GAP = 16  # between entries, px
PAD = 6
#: Legend text size in points: 9 pt is 12 px at 96 dpi, readable at 1280×800.
FONT_PT = 9.0


@dataclass(frozen=True)
class Entry:
    """One legend entry: a sample (``kind`` link, ``stage`` swatch, ``slow`` mark or a ``heading``)."""

    sample: str
    text: str
    link: LinkKind | None = None
    stage: int = 0


class Legend(QWidget):
    """Flowing strip of legend entries; its height follows the width it is given."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._font = QFont()
        self._font.setPointSizeF(FONT_PT)
        self._bold = QFont(self._font)
        self._bold.setBold(True)
        self.entries: list[Entry] = []
        self._rows = 1
        self._shown_cluster: Cluster | None = None  # what the entries were last made from
        self._shown_args: tuple = ()

    @property
    def font_pixel_size(self) -> float:
        """Height of the legend's text in pixels (tests: ≥ 9 px)."""
        return QFontMetricsF(self._font).ascent()

    def set_content(self, cluster: Cluster, pp: int, tp: int, slow: bool,
                    pools: tuple[str, str] | None = None, kv_arrow: bool = False) -> None:
        """Show the link kinds the cluster uses, ``pp`` stage swatches, and the slow-link mark;
        with ``pools`` (the prefill and decode pool labels of disaggregated serving) the pool
        swatches instead of the stages, and the KV-transfer arrow when ``kv_arrow``.

        Asked on every edit and result (two or three times each) with the same frozen cluster
        most of the time: the entries are made again only from another cluster or other figures."""
        args = (pp, tp, slow, pools, kv_arrow)
        if cluster is self._shown_cluster and args == self._shown_args:
            return
        self._shown_cluster, self._shown_args = cluster, args
        used = {lk.kind for lk in cluster.links}
        kinds = sorted((k for k in cluster.link_kinds.values() if k.id in used), key=lambda k: -k.bandwidth_gbps)
        entries = [Entry("heading", "Links")] + [Entry("link", _kind_text(k), link=k) for k in kinds]
        if slow:
            entries.append(Entry("slow", "slow hop inside a TP group"))
        if pools is not None:
            from studio.service.placement_overlay import POOL_INDEX

            entries.append(Entry("heading", "Pools"))
            entries.append(Entry("stage", f"prefill {pools[0]}", stage=POOL_INDEX["prefill"]))
            entries.append(Entry("stage", f"decode {pools[1]}", stage=POOL_INDEX["decode"]))
            if kv_arrow:
                entries.append(Entry("arrow", "KV transfer (slowest flow)"))
        else:
            entries.append(Entry("heading", f"Stages (TP group = {tp} GPUs)"))
            entries += [Entry("stage", f"S{s}", stage=s) for s in range(min(pp, 8))]
            if pp > 8:
                entries.append(Entry("heading", f"… {pp} stages"))
        if entries == self.entries:
            return  # an edit that changes none of it (most do) repaints no legend
        self.entries = entries
        self._relayout(self.width() or 800)
        self.update()

    def _entry_width(self, e: Entry, fm: QFontMetricsF) -> float:
        if e.sample == "heading":
            return QFontMetricsF(self._bold).horizontalAdvance(e.text) + 2
        return fm.horizontalAdvance(e.text) + SAMPLE + 6

    def _positions(self, width: float) -> list[tuple[float, int]]:
        """(x, row) of every entry when flowed into ``width`` pixels."""
        fm = QFontMetricsF(self._font)
        x, row, out = float(PAD), 0, []
        for e in self.entries:
            w = self._entry_width(e, fm)
            if x > PAD and x + w > width - PAD:
                x, row = float(PAD), row + 1
            out.append((x, row))
            x += w + GAP
        return out

    def _relayout(self, width: float) -> None:
        pos = self._positions(width)
        rows = (max(r for _x, r in pos) + 1) if pos else 1
        if rows != self._rows or self.height() != rows * ROW + 2 * PAD:
            self._rows = rows
            self.setFixedHeight(rows * ROW + 2 * PAD)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._relayout(self.width())

    def paint_into(self, p: QPainter, width: float) -> float:
        """Draw the legend at the painter's origin, flowed into ``width``; returns its height."""
        p.setFont(self._font)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        fm = QFontMetricsF(self._font)
        rows = 0
        for e, (x, row) in zip(self.entries, self._positions(width), strict=True):
            rows = max(rows, row + 1)
            y = PAD + row * ROW
            mid = y + ROW / 2
            if e.sample == "link" and e.link is not None:
                pen = link_pen(e.link)
                pen.setWidthF(pen.widthF() + 0.6)
                p.setPen(pen)
                p.drawLine(QLineF(x, mid, x + SAMPLE, mid))
            elif e.sample == "slow":
                p.setPen(QPen(QColor(SLOW_LINK_COLOR), 4))
                p.drawLine(QLineF(x, mid, x + SAMPLE, mid))
            elif e.sample == "arrow":
                from studio.gui.canvas.pools import ARROW_COLOR

                p.setPen(QPen(QColor(ARROW_COLOR), 3))
                p.drawLine(QLineF(x, mid, x + SAMPLE - 6, mid))
                p.drawLine(QLineF(x + SAMPLE - 12, mid - 5, x + SAMPLE - 6, mid))
                p.drawLine(QLineF(x + SAMPLE - 12, mid + 5, x + SAMPLE - 6, mid))
            elif e.sample == "stage":
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(stage_color(e.stage))
                p.drawRoundedRect(QRectF(x + 2, y + 3, SAMPLE - 4, ROW - 6), 3, 3)
            heading = e.sample == "heading"
            tx = x if heading else x + SAMPLE + 6
            p.setFont(self._bold if heading else self._font)
            p.setPen(QColor("#212529"))
            p.drawText(QRectF(tx, y, self._entry_width(e, fm) + 8, ROW), Qt.AlignmentFlag.AlignVCenter, e.text)
        return rows * ROW + 2 * PAD

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("#f8f9fa"))
        p.setPen(QPen(QColor("#dee2e6")))
        p.drawLine(0, 0, self.width(), 0)
        self.paint_into(p, self.width())


def _kind_text(k: LinkKind) -> str:
    return f"{k.name.split('(')[0].strip()}: {k.bandwidth_gbps:g} GB/s"


class CanvasPane(QWidget):
    """The canvas view with its legend strip underneath (the window's central widget)."""

    def __init__(self, view: QWidget, legend: Legend, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(view, 1)
        lay.addWidget(legend)
        legend.show()
