"""The parts of :class:`~studio.gui.explorer.widget.ExplorerWidget`, one idea each, mixed into the widget:
targets and SLO, row selection, disaggregated rows, detail tabs, pins and applies, the narrow-dock
layout, and the texts of its reasons."""
