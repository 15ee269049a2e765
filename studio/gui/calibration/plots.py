"""Calibration charts: measured points against the fitted curve (log-log) with relative residuals,
and predicted against measured with the y = x line."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QVBoxLayout, QWidget

MEASURED = "#1c7ed6"
FITTED = "#e8590c"
DEFAULT = "#868e96"


def _plot(title: str, left: str, bottom: str, log: bool) -> pg.PlotWidget:
    w = pg.PlotWidget(background="w")
    pi = w.getPlotItem()
    pi.setTitle(title, size="9pt")
    pi.setLabel("left", left)
    pi.setLabel("bottom", bottom)
    pi.showGrid(x=True, y=True, alpha=0.25)
    pi.setLogMode(x=log, y=log)
    for side in ("left", "bottom"):
        pi.getAxis(side).enableAutoSIPrefix(False)
    pi.addLegend(offset=(6, 4), labelTextSize="8pt", brush=pg.mkBrush(255, 255, 255, 220))
    return w


class CurvePlot(QWidget):
    """Time against message size (log-log): measured points, fitted and default curves; residuals below."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.main = _plot("Measured vs fitted", "time (µs)", "message size (bytes)", True)
        self.resid = _plot("Residuals: (predicted − measured) / measured", "residual (%)", "message size (bytes)",
                           False)
        self.resid.getPlotItem().legend.anchor((1, 1), (1, 1), offset=(-6, -4))
        self.resid.getPlotItem().setLogMode(x=True, y=False)
        self.resid.setXLink(self.main)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.main, 3)
        lay.addWidget(self.resid, 2)

    def show_fit(self, sizes, times, grid, fitted, default, residuals, default_residuals) -> None:
        for w in (self.main, self.resid):
            w.getPlotItem().clear()
        self.main.plot(grid, default, pen=pg.mkPen(DEFAULT, width=1.5, style=pg.QtCore.Qt.PenStyle.DashLine),
                       name="engine defaults")
        self.main.plot(grid, fitted, pen=pg.mkPen(FITTED, width=2), name="fitted")
        self.main.plot(sizes, times, pen=None, symbol="o", symbolSize=6, symbolBrush=MEASURED, symbolPen=None,
                       name="measured")
        self.resid.addItem(pg.InfiniteLine(pos=0, angle=0, pen=pg.mkPen("#495057")))
        self.resid.plot(sizes, 100 * np.asarray(default_residuals), pen=None, symbol="t", symbolSize=6,
                        symbolBrush=DEFAULT, symbolPen=None, name="defaults")
        self.resid.plot(sizes, 100 * np.asarray(residuals), pen=None, symbol="o", symbolSize=6,
                        symbolBrush=FITTED, symbolPen=None, name="fitted")


class ScatterPlot(QWidget):
    """Predicted against measured (log-log) with the y = x line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = _plot("Predicted vs measured", "predicted", "measured", True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plot)

    def show_points(self, measured, default, fitted, unit: str) -> None:
        pi = self.plot.getPlotItem()
        pi.clear()
        pi.setLabel("left", f"predicted ({unit})")
        pi.setLabel("bottom", f"measured ({unit})")
        m = np.asarray(measured, dtype=float)
        lo, hi = float(min(m.min(), np.min(fitted), np.min(default))), float(max(m.max(), np.max(fitted), np.max(default)))
        line = np.array([lo / 1.2, hi * 1.2])
        self.plot.plot(line, line, pen=pg.mkPen("#495057", width=1), name="y = x")
        self.plot.plot(m, default, pen=None, symbol="t", symbolSize=7, symbolBrush=DEFAULT, symbolPen=None,
                       name="engine defaults")
        self.plot.plot(m, fitted, pen=None, symbol="o", symbolSize=7, symbolBrush=FITTED, symbolPen=None,
                       name="fitted")
