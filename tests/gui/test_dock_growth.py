"""The Explorer's dock grows while its tab is raised and gives the canvas its height back after,
unless the user resized the area meanwhile (real tab raises, heights read once the layout applied
them: every wait is on a condition, none on the clock)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication


def _settle() -> None:
    """Apply the layout requests already posted (no waiting on the clock)."""
    for _ in range(3):
        QApplication.sendPostedEvents()
        QApplication.processEvents()


@pytest.fixture
def window(qtbot, doc, catalog, tmp_path):
    from studio.gui.window.main_window import MainWindow

    w = MainWindow(doc, catalog, settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1366, 768)  # a laptop screen: the tab area is sized for the timeline
    w.show()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: w.centralWidget().height() > 0)
    yield w
    w.explorer.close_down()
    w.explorer.wait_idle()
    w.load_view.wait_idle()
    doc.undo_stack.setClean()


def _raise_tall(qtbot, window, name: str) -> tuple:
    """Raise the tall tab ``name`` once the window has settled; returns the central widget, the
    dock and the central widget's height before, once the dock has grown."""
    central, dock = window.centralWidget(), window.docks[name]
    _settle()
    before = central.height()
    dock.raise_()
    qtbot.waitUntil(lambda: dock.height() >= 0.45 * window.height())
    return central, dock, before


def test_the_explorer_gets_room_when_raised_and_the_canvas_gets_it_back(qtbot, window):
    central, _explorer, before = _raise_tall(qtbot, window, "Explorer")
    assert window.explorer.table.height() > 5 * window.explorer.table.verticalHeader().defaultSectionSize()
    assert central.height() < before
    window.docks["Pipeline timeline"].raise_()
    qtbot.waitUntil(lambda: central.height() == before)
    assert not window.explorer_growth.grown


def test_a_height_the_user_chose_stays(qtbot, window):
    central, explorer = window.centralWidget(), window.docks["Explorer"]
    explorer.raise_()
    qtbot.waitUntil(lambda: explorer.height() >= 0.45 * window.height())
    qtbot.waitUntil(lambda: window.explorer_growth.central_grown > 0)
    window.resizeDocks([explorer], [300], Qt.Orientation.Vertical)  # the user drags the splitter
    qtbot.waitUntil(lambda: abs(central.height() - window.explorer_growth.central_grown) > 2)
    chosen = central.height()
    window.docks["Pipeline timeline"].raise_()
    qtbot.waitUntil(lambda: not window.explorer_growth.grown)
    _settle()
    assert central.height() == chosen


def test_own_window_and_back_leave_the_canvas_its_height(qtbot, window):
    """Floated out (Own window) the tabs left behind shrink back; docked back the Explorer takes
    its room again and gives it back when the timeline is raised."""
    central, explorer = window.centralWidget(), window.docks["Explorer"]
    _settle()
    before = central.height()
    explorer.raise_()
    qtbot.waitUntil(lambda: window.explorer_growth.central_grown > 0)
    window.explorer_own_window(True)
    qtbot.waitUntil(lambda: explorer.isFloating() and central.height() == before)
    window.explorer_own_window(False)
    qtbot.waitUntil(lambda: not explorer.isFloating() and window.explorer_growth.central_grown > 0)
    assert central.height() < before
    window.docks["Pipeline timeline"].raise_()
    qtbot.waitUntil(lambda: central.height() == before)


def test_the_load_tab_is_tall_too_and_switching_between_the_two_keeps_the_height(qtbot, window):
    central, _load, before = _raise_tall(qtbot, window, "Load")
    grown = central.height()
    window.docks["Explorer"].raise_()
    qtbot.waitUntil(lambda: window.explorer_growth.central_grown > 0)
    _settle()
    assert central.height() == grown and window.explorer_growth.grown  # tall to tall: no jump
    window.docks["Pipeline timeline"].raise_()
    qtbot.waitUntil(lambda: central.height() == before)
