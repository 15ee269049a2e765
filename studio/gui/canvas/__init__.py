"""The topology canvas: nodes with GPU tiles, switches, NICs and links, plus the placement overlay."""

from studio.gui.canvas.scene import ClusterScene
from studio.gui.canvas.view import CanvasView

__all__ = ["CanvasView", "ClusterScene"]
