"""A bottom dock that grows while its tab is raised: the Explorer beside the timeline.

The timeline needs ~230 px; the Explorer's targets, recommendation and table need twice that. On a
laptop screen (1366×768) a tab area sized for the timeline left the Explorer's table a few pixels
tall. :class:`GrowWhenRaised` gives the dock a share of the window's height when its tab is raised
(if it is shorter) and gives the canvas its height back when another tab covers it or the dock is
floated out (*Own window*), unless the user resized the area in between (then the user's height
stays).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabBar

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
        #: The docks sharing the tab area when the dock grew (one of them takes the area back).
        self._group: list[QDockWidget] = []
        #: The central widget's height before the dock was floated out (see :meth:`_on_top_level`).
        self._before_float: int | None = None
        dock.visibilityChanged.connect(self._on_visibility)
        dock.topLevelChanged.connect(self._on_top_level)

    @property
    def grown(self) -> bool:
        """The dock was grown and has not given the height back yet."""
        return self.central_before is not None

    def _docked(self) -> bool:
        return not self.dock.isFloating() and self.window.dockWidgetArea(self.dock) in (
            Qt.DockWidgetArea.BottomDockWidgetArea, Qt.DockWidgetArea.TopDockWidgetArea)

    def _on_top_level(self, floating: bool) -> None:
        """Floated out (*Own window*) while grown: the tabs left behind give the canvas its height
        back, as when another tab is raised. Docked back: Qt gives the dock the height it had as a
        window, as much as the canvas leaves; that counts as grown from the canvas's height before
        the float, so raising another tab gives it back."""
        central = self.window.centralWidget()
        if floating:
            self._before_float = self.central_before if self.grown else (central.height() if central else None)
            if self.grown:
                QTimer.singleShot(0, self.give_back)
        elif self._before_float is not None:
            before, self._before_float = self._before_float, None
            QTimer.singleShot(0, lambda: self._docked_back(before))

    def _docked_back(self, before: int) -> None:
        central = self.window.centralWidget()
        if central is None or self.dock.isFloating() or self.grown or central.height() >= before:
            return
        self.central_before, self.central_grown = before, central.height()
        self._group = list(self.window.tabifiedDockWidgets(self.dock))

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
        self._group = list(self.window.tabifiedDockWidgets(self.dock))
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
        group, self._group = self._group, []
        if before is None or central is None:
            return  # not grown
        if not self.dock.isFloating() and not self.dock.visibleRegion().isEmpty():
            return  # raised again meanwhile
        if grown < 0 or abs(central.height() - grown) > 2:
            return  # the user dragged the splitter (or the window changed): their height stays
        if central.height() < before:
            QTimer.singleShot(0, lambda: self._restore(group, before, tries=4))

    def _restore(self, group: list[QDockWidget], before: int, tries: int) -> None:
        """Resize the tab area of ``group`` so the central widget is ``before`` px tall again,
        reading the heights once the last change is laid out (a few turns of the event loop at
        most: right after a float Qt raises another tab, whose geometry comes a turn later)."""
        central = self.window.centralWidget()
        docked = [d for d in group if not d.isFloating() and d.isVisible()]
        raised = next((d for d in docked if not d.visibleRegion().isEmpty()), None)
        if central is None or not docked or tries <= 0:
            return
        if raised is None:  # not laid out yet
            QTimer.singleShot(0, lambda: self._restore(group, before, tries - 1))
            return
        error = before - central.height()  # > 0: the canvas still lacks that much
        if abs(error) <= 1:
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
