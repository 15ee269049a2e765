"""The Explorer's way to the fleet objective: a *Cost per day…* button beside Apply that ranks the
sweep's layouts by cost per day at the SLO for a day of traffic.

The ranking itself is the Fleet view's (:meth:`studio.gui.views.fleet_view.FleetView.rank`: the
project's traffic, p99 targets, headroom and prices, each replica shape of the sweep planned by
request simulation), so the two never disagree; the button raises the Fleet tab and starts it.
Kept apart from the Explorer widget so the Explorer's own objectives stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

__all__ = ["add_cost_rank_button"]

TEXT = "Cost per day…"


def add_cost_rank_button(explorer: QWidget, rank: Callable[[], None]) -> QPushButton:
    """Put the button in ``explorer``'s row of Apply / Pin buttons (after *Apply pools*), calling
    ``rank`` when clicked, and return it."""
    button = QPushButton(TEXT)
    button.setToolTip("rank this sweep's layouts by cost per day at the p99 SLO for the Fleet tab's traffic "
                      "(request simulation per layout: seconds); the ranking opens in the Fleet tab")
    button.clicked.connect(lambda _checked=False: rank())
    anchor = explorer.apply_pools_button  # type: ignore[attr-defined]
    for row in explorer.findChildren(QHBoxLayout):
        k = row.indexOf(anchor)
        if k >= 0:
            row.insertWidget(k + 1, button)
            break
    else:
        raise RuntimeError("the Explorer has no Apply pools button row")
    return button
