"""Bottom docks that grow while their tab is raised: the Explorer and the Load view beside the timeline.

The timeline needs ~230 px; the Explorer's targets, recommendation and table, and the Load view's two
plots, need twice that. On a laptop screen (1366×768) a tab area sized for the timeline left the
Explorer's table a few pixels tall and the Load plots' axis titles cut. :class:`GrowWhenRaised` gives
the tab area a share of the window's height when one of its tall docks is raised (if it is shorter)
and gives the canvas its height back when a tab that is not tall covers them or they are floated out
(*Own window*), unless the user resized the area in between (then the user's height stays).
Switching between two tall tabs keeps the height.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabBar

#: Share of the main window's height the raised dock gets (when it has less).
DEFAULT_SHARE = 0.55


class GrowWhenRaised(QObject):
    """Grow the tab area to ``share`` of ``window``'s height while one of ``docks`` is raised.

    Heights are read back once the layout has applied them (the next turn of the event loop), and
    what is compared is the central widget's height, the one a user sees change.

    Parameters
    ----------
    window:
        The main window holding the dock (with a central widget).
    docks:
        The tall docks of one tab group on the top or bottom dock area.
    share:
        Fraction of the window's height the dock gets when raised while shorter.
    """

    def __init__(self, window: QMainWindow, docks: list[QDockWidget], share: float = DEFAULT_SHARE) -> None:
        super().__init__(window)
        self.window = window
        self.docks = list(docks)
        self.share = share
        #: The central widget's height before growing, and once grown (-1 until the layout applied it).
        self.central_before: int | None = None
        self.central_grown = -1
        #: The docks sharing the tab area when the dock grew (one of them takes the area back).
        self._group: list[QDockWidget] = []
        #: The central widget's height before the dock was floated out (see :meth:`_on_top_level`).
        self._before_float: int | None = None
        #: The central widget's height a give-back in flight is restoring (see :meth:`_restore`).
        self._restoring_to: int | None = None
        for dock in self.docks:
            dock.visibilityChanged.connect(lambda shown, d=dock: self._on_visibility(d, shown))
            dock.topLevelChanged.connect(lambda floating, d=dock: self._on_top_level(d, floating))

    @property
    def grown(self) -> bool:
        """The dock was grown and has not given the height back yet."""
        return self.central_before is not None

    def _docked(self, dock: QDockWidget) -> bool:
        return not dock.isFloating() and self.window.dockWidgetArea(dock) in (
            Qt.DockWidgetArea.BottomDockWidgetArea, Qt.DockWidgetArea.TopDockWidgetArea)

    def _tall_raised(self) -> bool:
        """One of the tall docks is raised in the tab area (docked and on screen)."""
        return any(not d.isFloating() and d.isVisible() and not d.visibleRegion().isEmpty() for d in self.docks)

    def _on_top_level(self, dock: QDockWidget, floating: bool) -> None:
        """Floated out (*Own window*) while grown: the first short tab left behind is raised and the
        canvas gets its height back, as when that tab is raised by hand. Docked back: Qt gives the dock the height it had as a
        window, as much as the canvas leaves; that counts as grown from the canvas's height before
        the float, so raising another tab gives it back."""
        central = self.window.centralWidget()
        if floating:
            self._before_float = self.central_before if self.grown else (central.height() if central else None)
            if self.grown:
                # Qt raises the next tab, maybe the other tall one; the user floated the dock out to
                # get room, so the first short tab (the timeline) is raised and the canvas gets it
                short = next((d for d in self._group if d not in self.docks and not d.isFloating()), None)
                if short is not None:
                    QTimer.singleShot(0, short.raise_)
                QTimer.singleShot(0, self.give_back)
        elif self._before_float is not None:
            before, self._before_float = self._before_float, None
            QTimer.singleShot(0, lambda: self._docked_back(dock, before))

    def _docked_back(self, dock: QDockWidget, before: int) -> None:
        if not shiboken6.isValid(self.window):
            return
        central = self.window.centralWidget()
        if central is None or dock.isFloating() or self.grown or central.height() >= before:
            return
        self.central_before, self.central_grown = before, central.height()
        self._group = [dock, *self.window.tabifiedDockWidgets(dock)]

    def _on_visibility(self, dock: QDockWidget, shown: bool) -> None:
        if not shiboken6.isValid(self.window) or not self._docked(dock) or not self.window.isVisible():
            return
        if shown:
            self.grow(dock)
        else:
            QTimer.singleShot(0, self.give_back)  # once the other tab's geometry is in place

    def grow(self, dock: QDockWidget) -> None:
        """Give ``dock``'s tab area ``share`` of the window's height if it has less."""
        central = self.window.centralWidget()
        if self.grown or central is None:
            return
        # a tall tab raised while a give-back is in flight (Qt raises the Load tab when the Explorer
        # floats out): the give-back stops and the height it was restoring is still the one to return to
        resuming, self._restoring_to = self._restoring_to, None
        target = round(self.window.height() * self.share)
        if resuming is None and dock.height() >= target:
            return
        self.central_before = resuming if resuming is not None else central.height()
        self.central_grown = -1
        self._group = [dock, *self.window.tabifiedDockWidgets(dock)]
        if dock.height() < target:
            self.window.resizeDocks([dock], [target], Qt.Orientation.Vertical)
        QTimer.singleShot(0, self._settled)

    def _settled(self) -> None:
        if not shiboken6.isValid(self.window):
            return
        central = self.window.centralWidget()
        if self.grown and central is not None:
            self.central_grown = central.height()

    def give_back(self) -> None:
        """Give the central widget its height from before :meth:`grow` (the tab now raised in the
        dock's place shrinks by as much), unless the user resized the area since."""
        if not shiboken6.isValid(self.window):
            return  # the window closed meanwhile
        central = self.window.centralWidget()
        before, grown = self.central_before, self.central_grown
        self._forget()
        group, self._group = self._group, []
        if before is None or central is None:
            return  # not grown
        if self._tall_raised():
            self.central_before, self.central_grown = before, grown
            self._group = group
            return  # a tall tab is raised (again, or another one): the height stays
        if grown >= 0 and abs(central.height() - grown) > 2:
            return  # the user dragged the splitter (or the window changed): their height stays
        # (grown < 0: covered again before the growth was laid out, so nobody could drag since)
        if central.height() < before:
            self._restoring_to = before
            QTimer.singleShot(0, lambda: self._restore(group, before, tries=4))

    def _restore(self, group: list[QDockWidget], before: int, tries: int) -> None:
        """Resize the tab area of ``group`` so the central widget is ``before`` px tall again,
        reading the heights once the last change is laid out (a few turns of the event loop at
        most: right after a float Qt raises another tab, whose geometry comes a turn later)."""
        if self._restoring_to != before or not shiboken6.isValid(self.window):
            return  # stopped: a tall tab was raised again
        central = self.window.centralWidget()
        docked = [d for d in group if d not in self.docks and not d.isFloating() and d.isVisible()]
        raised = next((d for d in docked if not d.visibleRegion().isEmpty()), None)
        if central is None or not docked or tries <= 0:
            self._restoring_to = None
            return
        if raised is None:  # not laid out yet
            QTimer.singleShot(0, lambda: self._restore(group, before, tries - 1))
            return
        error = before - central.height()  # > 0: the canvas still lacks that much
        if abs(error) <= 1:
            self._restoring_to = None
            return
        # resizeDocks sizes the tab area with its tab bar, height() is the dock's own
        asked = max(raised.height() - error + self._tab_bar_height(raised), 0)
        self.window.resizeDocks([raised], [asked], Qt.Orientation.Vertical)
        QTimer.singleShot(0, lambda: self._restore(group, before, tries - 1))

    def _tab_bar_height(self, dock: QDockWidget) -> int:
        """Height of the tab bar that lists ``dock`` (0 when it is not in a tab group)."""
        for bar in self.window.findChildren(QTabBar):
            if bar.isVisible() and any(bar.tabText(i) == dock.windowTitle() for i in range(bar.count())):
                return bar.height()
        return 0

    def _forget(self) -> None:
        self.central_before, self.central_grown = None, -1
