"""Pipeline timeline (pyqtgraph): a lane per stage, one ``BarGraphItem`` per segment kind.

Bars are updated in place with ``setOpts`` (no items created per edit), so a redraw costs the same
for 2 stages or 64.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QRadioButton, QVBoxLayout, QWidget

from studio.engine.results import SEGMENT_KINDS, Timeline
from studio.gui.colors import SEGMENT_COLORS, SEGMENT_LABELS

BAR_HEIGHT = 0.64


class TimelinePlot(pg.PlotWidget):
    """The chart: lanes on the y axis (stage 0 on top), time in ms on the x axis."""

    def __init__(self, parent: QWidget | None = None, legend: bool = True) -> None:
        super().__init__(parent, background="w")
        self.timeline: Timeline | None = None
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=True, y=False)
        self.hideButtons()
        pi = self.getPlotItem()
        pi.showGrid(x=True, y=False, alpha=0.25)
        pi.setLabel("bottom", "time", units="ms")
        pi.getAxis("bottom").enableAutoSIPrefix(False)
        pi.getViewBox().invertY(True)
        self.legend = (
            pi.addLegend(offset=(4, 2), colCount=4, labelTextSize="8pt", brush=pg.mkBrush(255, 255, 255, 230))
            if legend
            else None
        )
        self._headroom = 0.9 if legend else 0.0
        self.bars: dict[str, pg.BarGraphItem] = {}
        for kind in SEGMENT_KINDS:
            color = SEGMENT_COLORS.get(kind, "#999999")
            bar = pg.BarGraphItem(
                x0=np.zeros(0), y=np.zeros(0), width=np.zeros(0), height=BAR_HEIGHT,
                brush=pg.mkBrush(color), pen=pg.mkPen("w", width=0.6), name=SEGMENT_LABELS.get(kind, kind),
            )
            self.addItem(bar)
            if self.legend is not None:
                self.legend.addItem(bar, SEGMENT_LABELS.get(kind, kind))
            self.bars[kind] = bar
        self.note = pg.TextItem("", color="#212529", anchor=(1, 1))
        self.addItem(self.note, ignoreBounds=True)
        self.hover = pg.TextItem("", color="#212529", fill=pg.mkBrush(255, 255, 255, 235), border=pg.mkPen("#adb5bd"), anchor=(0, 1))
        self.hover.setZValue(50)
        self.hover.hide()
        self.addItem(self.hover, ignoreBounds=True)
        self.scene().sigMouseMoved.connect(self._on_mouse)

    def set_timeline(self, tl: Timeline | None) -> None:
        """Show ``tl`` (``None`` empties the chart)."""
        self.timeline = tl
        if tl is None:
            for bar in self.bars.values():
                bar.setOpts(x0=np.zeros(0), y=np.zeros(0), width=np.zeros(0))
            self.note.setText("")
            return
        for kind, bar in self.bars.items():
            m = tl.segments_of(kind)
            bar.setOpts(x0=tl.start[m], y=tl.lane[m].astype(float), width=tl.duration[m], height=BAR_HEIGHT)
        axis = self.getPlotItem().getAxis("left")
        axis.setTicks([[(i, name) for i, name in enumerate(tl.lanes)]])
        n = len(tl.lanes)
        total = max(tl.total_ms, 1e-9)
        self.setXRange(0, total * 1.02, padding=0)
        self.setYRange(-0.6 - self._headroom, n - 0.4 + 0.5, padding=0)
        self.note.setText(f"bubble {tl.bubble_fraction:.0%} of the step · step {total:,.2f} ms")
        self.note.setPos(total * 1.01, n - 0.4 + 0.5)

    def segment_at(self, x: float, y: float) -> int | None:
        """Index of the segment under data point (x ms, y lane), or None."""
        tl = self.timeline
        if tl is None or len(tl.start) == 0:
            return None
        lane = int(round(y))
        hit = np.nonzero((tl.lane == lane) & (tl.start <= x) & (x <= tl.start + tl.duration) & (abs(y - lane) <= BAR_HEIGHT / 2))[0]
        return int(hit[-1]) if len(hit) else None

    def describe(self, i: int) -> str:
        tl = self.timeline
        assert tl is not None
        kind = SEGMENT_KINDS[int(tl.kind[i])]
        s, d = float(tl.start[i]), float(tl.duration[i])
        mb = int(tl.micro_batch[i])
        who = f"micro-batch {mb}" if mb >= 0 else ""
        return (
            f"{tl.lanes[int(tl.lane[i])]} · {SEGMENT_LABELS.get(kind, kind)} {who}\n"
            f"{s:,.3f} → {s + d:,.3f} ms  ({d:,.3f} ms)"
        )

    def _on_mouse(self, pos: QPointF) -> None:
        vb = self.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            self.hover.hide()
            return
        p = vb.mapSceneToView(pos)
        i = self.segment_at(p.x(), p.y())
        if i is None:
            self.hover.hide()
            return
        self.hover.setText(self.describe(i))
        self.hover.setPos(p.x(), p.y())
        self.hover.show()


class TimelinePanel(QWidget):
    """Timeline with a prefill / decode switch and a caption."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = TimelinePlot(self, legend=False)
        self.timelines: dict[str, Timeline] = {}
        self.phase = "decode"
        self.caption = QLabel("")
        self.caption.setObjectName("hint")
        top = QHBoxLayout()
        top.setContentsMargins(6, 2, 6, 0)
        self._group = QButtonGroup(self)
        for phase, text in (("prefill", "Prefill"), ("decode", "Decode step")):
            b = QRadioButton(text)
            b.setObjectName(f"phase-{phase}")
            b.setChecked(phase == self.phase)
            b.toggled.connect(lambda on, ph=phase: on and self.set_phase(ph))
            self._group.addButton(b)
            top.addWidget(b)
        top.addSpacing(12)
        top.addWidget(self.caption)
        top.addStretch(1)
        keyrow = QHBoxLayout()
        keyrow.setContentsMargins(6, 0, 6, 0)
        key = QLabel(
            "  ".join(
                f'<span style="color:{SEGMENT_COLORS[k]}">■</span> {SEGMENT_LABELS[k]}' for k in SEGMENT_KINDS
            )
        )
        key.setObjectName("timelineKey")
        key.setWordWrap(True)
        keyrow.addWidget(key, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(top)
        lay.addLayout(keyrow)
        lay.addWidget(self.plot, 1)

    def set_timelines(self, timelines: dict[str, Timeline], micro_batches: int | None = None) -> None:
        self.timelines = dict(timelines)
        tl = self.timelines.get(self.phase)
        self.plot.set_timeline(tl)
        if tl is not None:
            mb = f"M = {micro_batches} · " if micro_batches else ""
            self.caption.setText(f"{mb}bubble {tl.bubble_fraction:.0%}")
        else:
            self.caption.setText("no timeline")

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self.plot.set_timeline(self.timelines.get(phase))

    def clear(self, reason: str = "") -> None:
        self.timelines = {}
        self.plot.set_timeline(None)
        self.caption.setText(reason)


