"""Pareto chart of a sweep (pyqtgraph): tokens/s per GPU against tokens/s per user.

Fitting layouts are dots, the frontier is a line through the non-dominated ones, and named layouts
(the chosen one, alternatives) get a marker and a label. The widget takes plain arrays so the
explorer can show the same chart live.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from studio.engine import SweepResult

FIT_COLOR = "#74c0fc"
UNFIT_COLOR = "#dee2e6"
FRONTIER_COLOR = "#1864ab"
CHOSEN_COLOR = "#e03131"
ALTERNATIVE_COLOR = "#f08c00"


@dataclass(frozen=True)
class Marked:
    """A named point drawn on top of the cloud."""

    label: str
    per_user: float
    per_gpu: float
    chosen: bool = False


class ParetoPlot(pg.PlotWidget):
    """Scatter of sweep rows with the frontier and marked layouts."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, background="w", enableMenu=False)
        self.setMenuEnabled(False)
        self.hideButtons()
        pi = self.getPlotItem()
        pi.showGrid(x=True, y=True, alpha=0.25)
        pi.setLabel("bottom", "output tokens/s per user (interactivity →)")
        pi.setLabel("left", "output tokens/s per GPU (efficiency →)")
        for side in ("bottom", "left"):
            pi.getAxis(side).enableAutoSIPrefix(False)
        self.legend = pi.addLegend(offset=(-6, 6), labelTextSize="10pt", brush=pg.mkBrush(255, 255, 255, 230),
                                   pen=pg.mkPen("#ced4da"))
        self.unfit = pg.ScatterPlotItem(size=5, pen=None, brush=pg.mkBrush(UNFIT_COLOR))
        self.fit = pg.ScatterPlotItem(size=6, pen=None, brush=pg.mkBrush(FIT_COLOR))
        self.frontier = pg.PlotDataItem(pen=pg.mkPen(FRONTIER_COLOR, width=2), symbol="o", symbolSize=7,
                                        symbolBrush=pg.mkBrush(FRONTIER_COLOR), symbolPen=None)
        self.marks = pg.ScatterPlotItem(size=16, pxMode=True)
        for item in (self.unfit, self.fit, self.frontier, self.marks):
            self.addItem(item)
        self.legend.addItem(self.fit, "layout × batch that fits")
        self.legend.addItem(self.frontier, "Pareto frontier")
        self._labels: list[pg.TextItem] = []

    def set_points(
        self,
        per_user: np.ndarray,
        per_gpu: np.ndarray,
        fits: np.ndarray,
        frontier: np.ndarray,
        marked: Sequence[Marked] = (),
    ) -> None:
        """Show the rows (``frontier`` = row indices on the front) and the ``marked`` layouts."""
        fits = np.asarray(fits, dtype=bool)
        ok = fits & np.isfinite(per_user) & np.isfinite(per_gpu)
        self.fit.setData(per_user[ok], per_gpu[ok])
        self.unfit.setData(np.zeros(0), np.zeros(0))
        front = np.asarray(frontier, dtype=int)
        if len(front):
            front = front[np.argsort(per_user[front])]
        self.frontier.setData(per_user[front], per_gpu[front])
        for t in self._labels:
            self.removeItem(t)
        self._labels = []
        spots = []
        for m in marked:
            color = CHOSEN_COLOR if m.chosen else ALTERNATIVE_COLOR
            spots.append({"pos": (m.per_user, m.per_gpu), "symbol": "star" if m.chosen else "d",
                          "brush": pg.mkBrush(color), "pen": pg.mkPen("#212529", width=1),
                          "size": 20 if m.chosen else 14})
            text = pg.TextItem(m.label, color=color, anchor=(0, 1), fill=pg.mkBrush(255, 255, 255, 200))
            text.setPos(m.per_user, m.per_gpu)
            self.addItem(text)
            self._labels.append(text)
        self.marks.setData(spots)
        xs = np.concatenate([per_user[ok], [m.per_user for m in marked]]) if ok.any() or marked else np.zeros(1)
        ys = np.concatenate([per_gpu[ok], [m.per_gpu for m in marked]]) if ok.any() or marked else np.zeros(1)
        if len(xs):
            self.setXRange(0, float(np.nanmax(xs)) * 1.18 or 1.0, padding=0)
            self.setYRange(0, float(np.nanmax(ys)) * 1.12 or 1.0, padding=0)

    def set_sweep(self, result: SweepResult, marked: Sequence[Marked] = ()) -> None:
        """Show every row of ``result`` with its Pareto front."""
        col = result.columns
        self.set_points(col["tokens_per_s_per_user"], col["tokens_per_s_per_gpu"], col["fits"], result.pareto, marked)
