"""A bottom dock that grows while its tab is raised: the Explorer beside the timeline.

The timeline needs ~230 px; the Explorer's targets, recommendation and table need twice that. On a
laptop screen (1366×768) a tab area sized for the timeline left the Explorer's table a few pixels
tall. :class:`GrowWhenRaised` gives the dock a share of the window's height when its tab is raised
(if it is shorter) and gives the canvas its height back when another tab covers it, unless the user
resized the area in between (then the user's height stays).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QMainWindow

#: Share of the main window's height the raised dock gets (when it has less).
DEFAULT_SHARE = 0.55


class GrowWhenRaised(QObject):
    """Grow ``dock`` to ``share`` of ``window``'s height while its tab is raised.

    Heights are read back once the layout has applied them (the next turn of the event loop), and
    what is compared is the central widget's height, the one a user sees change.

    Parameters
    ----------
    window:
        The main window holding the dock (with a central widget).
    dock:
        A dock in a tab group (or alone) on the top or bottom dock area.
    share:
        Fraction of the window's height the dock gets when raised while shorter.
    """

    def __init__(self, window: QMainWindow, dock: QDockWidget, share: float = DEFAULT_SHARE) -> None:
        super().__init__(dock)
        self.window = window
        self.dock = dock
        self.share = share
        #: The central widget's height before growing, and once grown (-1 until the layout applied it).
        self.central_before: int | None = None
        self.central_grown = -1
        dock.visibilityChanged.connect(self._on_visibility)
        dock.topLevelChanged.connect(lambda _floating: self._forget())

    @property
    def grown(self) -> bool:
        """The dock was grown and has not given the height back yet."""
        return self.central_before is not None

    def _docked(self) -> bool:
        return not self.dock.isFloating() and self.window.dockWidgetArea(self.dock) in (
            Qt.DockWidgetArea.BottomDockWidgetArea, Qt.DockWidgetArea.TopDockWidgetArea)

    def _on_visibility(self, shown: bool) -> None:
        if not self._docked() or not self.window.isVisible():
            return
        if shown:
            self.grow()
        else:
            QTimer.singleShot(0, self.give_back)  # once the other tab's geometry is in place

    def grow(self) -> None:
        """Give the dock ``share`` of the window's height if it has less."""
        central = self.window.centralWidget()
        target = round(self.window.height() * self.share)
        if self.grown or central is None or self.dock.height() >= target:
            return
        self.central_before, self.central_grown = central.height(), -1
        self.window.resizeDocks([self.dock], [target], Qt.Orientation.Vertical)
        QTimer.singleShot(0, self._settled)

    def _settled(self) -> None:
        central = self.window.centralWidget()
        if self.grown and central is not None:
            self.central_grown = central.height()

    def give_back(self) -> None:
        """Give the central widget its height from before :meth:`grow` (the tab now raised in the
        dock's place shrinks by as much), unless the user resized the area since."""
        central = self.window.centralWidget()
        before, grown = self.central_before, self.central_grown
        self._forget()
        if before is None or central is None or self.dock.visibleRegion().isEmpty() is False:
            return  # not grown, or raised again meanwhile
        if grown < 0 or abs(central.height() - grown) > 2:
            return  # the user dragged the splitter (or the window changed): their height stays
        delta = before - central.height()
        group = [self.dock, *self.window.tabifiedDockWidgets(self.dock)]
        raised = next((d for d in group if d is not self.dock and not d.visibleRegion().isEmpty()), None)
        if delta > 0 and raised is not None:
            asked = max(raised.height() - delta, 0)
            self.window.resizeDocks([raised], [asked], Qt.Orientation.Vertical)
            QTimer.singleShot(0, lambda: self._correct(raised, asked, before))

    def _correct(self, raised: QDockWidget, asked: int, before: int) -> None:
        """``resizeDocks`` sizes the tab group with its tab bar, ``height()`` is the dock's own:
        once the first resize is applied, ask again for what leaves the central widget exactly its
        old height."""
        central = self.window.centralWidget()
        if central is None or raised.visibleRegion().isEmpty():
            return
        error = central.height() - before  # > 0: the canvas got more than it had
        if error:
            offset = asked - raised.height()  # what resizeDocks counts beyond the dock's height
            self.window.resizeDocks([raised], [raised.height() + error + offset], Qt.Orientation.Vertical)

    def _forget(self) -> None:
        self.central_before, self.central_grown = None, -1
