"""The timeline's bar items keep their bounding rect until their data or the view changes, and it
is always the one pyqtgraph works out."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication

from studio.gui.views.timeline import BAR_HEIGHT, TimelinePlot


def _fresh(bar) -> object:
    return pg.BarGraphItem.boundingRect(bar)


def test_segment_bars_keep_their_rect_until_data_or_view_change(qtbot):
    plot = TimelinePlot(legend=False)
    qtbot.addWidget(plot)
    plot.resize(600, 200)
    plot.show()
    qtbot.waitExposed(plot)
    bar = plot.bars["compute"]
    bar.setOpts(x0=np.array([0.0, 5.0]), y=np.array([0.0, 1.0]), width=np.array([4.0, 3.0]), height=BAR_HEIGHT)
    plot.setRange(xRange=(0, 10), yRange=(-1, 2), padding=0)
    QCoreApplication.processEvents()
    measured = []
    pixel_vectors = bar.pixelVectors
    bar.pixelVectors = lambda *a: measured.append(1) or pixel_vectors(*a)
    first = bar.boundingRect()
    assert first == _fresh(bar) and first.width() > 8  # padded by half the outline, in pixels
    measured.clear()
    for _ in range(5):
        assert bar.boundingRect() == first
    assert measured == []  # kept: not measured again
    plot.setXRange(0, 40, padding=0)  # a new view transform: the padding in data units changes
    QCoreApplication.processEvents()
    assert bar.boundingRect() == _fresh(bar) != first
    bar.setOpts(x0=np.array([0.0]), y=np.array([0.0]), width=np.array([30.0]), height=BAR_HEIGHT)
    assert bar.boundingRect() == _fresh(bar) and bar.boundingRect().width() > 30
    plot.resize(300, 200)  # the view box resized: pixels of another size
    QCoreApplication.processEvents()
    assert bar.boundingRect() == _fresh(bar)
