"""The warnings list reuses the style's icons: a link-kind edit changes the warnings, and each new
row asked the style for its icon again (loaded anew, and rendered anew when painted)."""

from __future__ import annotations

from PySide6.QtWidgets import QStyleFactory

from studio.engine.plan.results import PlanWarning
from studio.gui.panels.warnings_panel import WarningsPanel

BUBBLE = PlanWarning(code="BUBBLE_HIGH", severity="info", message="bubble 33%", fix="more micro-batches")
SLOW = PlanWarning(code="TP_OVER_SLOW_LINK", severity="warning", message="TP over PCIe", fix="TP on NVLink")


def test_new_rows_reuse_the_styles_icons_until_the_style_changes(qtbot):
    panel = WarningsPanel()
    qtbot.addWidget(panel)
    panel.set_warnings((SLOW,))
    first = panel.list.item(0).icon().cacheKey()
    panel.set_warnings((BUBBLE,))
    panel.set_warnings((SLOW, BUBBLE))
    assert panel.list.item(0).icon().cacheKey() == first  # the same warning icon
    assert panel.list.item(0).icon().cacheKey() != panel.list.item(1).icon().cacheKey()  # info: its own
    fusion = QStyleFactory.create("Fusion")  # another style: its own icons
    panel.setStyle(fusion)
    panel.set_warnings((SLOW,))
    assert panel.list.item(0).icon().cacheKey() != first
    panel.setStyle(None)  # the application's style again, before this one goes
