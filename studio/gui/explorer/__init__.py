"""Layout Explorer: the sweep of the drawn cluster as a ranked table, Pareto plot, timelines,
pinned comparisons and placements (issue 4)."""

from studio.gui.explorer.widget import ExplorerWidget

__all__ = ["ExplorerWidget"]
