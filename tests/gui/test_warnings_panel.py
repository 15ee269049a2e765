"""The warnings list: most severe first, rows kept when an edit leaves the warnings as they were."""

from __future__ import annotations

from studio.engine.plan.results import PlanWarning
from studio.gui.panels.warnings_panel import WarningsPanel

BUBBLE = PlanWarning(code="BUBBLE_HIGH", severity="info", message="bubble 33%", fix="more micro-batches")
SLOW = PlanWarning(code="TP_OVER_SLOW_LINK", severity="warning", message="TP over PCIe", fix="TP on NVLink",
                   gpus=("n0/gpu0", "n0/gpu1"), links=("n0/l0",))


def _rows(panel: WarningsPanel) -> list[str]:
    return [panel.list.item(i).text() for i in range(panel.list.count())]


def test_the_same_warnings_again_keep_the_rows_and_the_selection(qtbot) -> None:
    panel = WarningsPanel()
    qtbot.addWidget(panel)
    panel.set_warnings((BUBBLE, SLOW))
    assert _rows(panel) == ["TP over PCIe\n→ TP on NVLink", "bubble 33%\n→ more micro-batches"]
    with qtbot.waitSignal(panel.selectItems) as picked:
        panel.click_row(0)
    assert picked.args == [("n0/gpu0", "n0/gpu1", "n0/l0")]
    first = panel.list.item(0)
    panel.set_warnings((SLOW, BUBBLE))  # the same warnings, in another order
    assert panel.list.item(0) is first and panel.list.currentRow() == 0
    panel.set_warnings((BUBBLE,))  # changed: listed anew
    assert _rows(panel) == ["bubble 33%\n→ more micro-batches"]
    panel.set_warnings(())
    assert _rows(panel) == ["No warnings for this plan."]


def test_an_error_is_replaced_by_the_warnings_that_follow_it(qtbot) -> None:
    panel = WarningsPanel()
    qtbot.addWidget(panel)
    panel.set_warnings((BUBBLE,))
    panel.set_error("Cannot compute this plan: TP=3 does not divide 64 heads")
    assert _rows(panel) == ["Cannot compute this plan: TP=3 does not divide 64 heads"]
    panel.set_warnings((BUBBLE,))  # the same warnings as before the error
    assert _rows(panel) == ["bubble 33%\n→ more micro-batches"]
