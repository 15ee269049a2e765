"""The plain look every data plot of the studio shares: white, gridded, no context menu, no
auto-range button and no SI prefix scaling of the axes (their titles carry the units)."""

from __future__ import annotations

import pyqtgraph as pg


def style_plain(w: pg.PlotWidget) -> pg.PlotItem:
    """Give ``w`` the studio's plain plot look; returns its plot item."""
    w.setMenuEnabled(False)
    w.hideButtons()
    pi = w.getPlotItem()
    pi.showGrid(x=True, y=True, alpha=0.2)
    for ax in ("bottom", "left"):
        pi.getAxis(ax).enableAutoSIPrefix(False)
    return pi


def plain_plot(x_label: str, y_label: str) -> pg.PlotWidget:
    """A new white plot in the plain look with its axis titles. Made without the view's context
    menu (``enableMenu=False``), which :func:`style_plain` would build only to drop: a third of the
    cost of making a plot, and the studio makes a few per window, report and Explorer."""
    w = pg.PlotWidget(background="w", enableMenu=False)
    pi = style_plain(w)
    pi.setLabel("bottom", x_label)
    pi.setLabel("left", y_label)
    return w
