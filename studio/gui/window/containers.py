"""The containers the main window builds its toolbar buttons and its setup panels in: a tool
button pinned at its size, and a scroll-area tab whose width follows its panel."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFrame, QScrollArea, QTabWidget, QToolBar, QToolButton, QWidget

from studio.gui.toolkit.pinned_size import pin_to_hint


def tool_button(bar: QToolBar, action: QAction) -> QToolButton:
    """A button showing ``action`` as ``bar`` shows its own actions (raised on hover, no focus, the
    bar's icon size and button style), pinned at its size hint (:func:`pin_to_hint`): a change of the
    action lays out neither the bar nor the window. The action's icon text must not change."""
    button = QToolButton(bar)
    button.setAutoRaise(True)
    button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    button.setIconSize(bar.iconSize())
    button.setToolButtonStyle(bar.toolButtonStyle())
    button.setDefaultAction(action)
    button.triggered.connect(bar.actionTriggered)
    pin = pin_to_hint(button)
    for changed, apply in ((bar.iconSizeChanged, button.setIconSize), (bar.toolButtonStyleChanged, button.setToolButtonStyle)):
        changed.connect(apply)
        changed.connect(pin.pin)  # after the button took the change: its hint is the new one
    return button


class WidthFollowingScrollArea(QScrollArea):
    """A vertical scroll area whose minimum width is always its panel's current one (values,
    fonts and style sheet change it after construction), so a dock never squeezes the panel."""

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        hint = super().minimumSizeHint()
        panel = self.widget()
        if panel is None:
            return hint
        bar = self.verticalScrollBar().sizeHint().width() if self.verticalScrollBar().isVisible() else 0
        return QSize(panel.minimumSizeHint().width() + bar, hint.height())

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if obj is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()
        return super().eventFilter(obj, event)


def scrolled_tab(tabs: QTabWidget, title: str) -> QWidget:
    """A new tab ``title`` of ``tabs``: a frameless vertical scroll area that takes its panel's width;
    returns the area's viewport, the parent to build the panel in (then :func:`adopt_scrolled`)."""
    area = WidthFollowingScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    tabs.addTab(area, title)
    return area.viewport()


def adopt_scrolled(panel: QWidget) -> None:
    """Make ``panel``, built in a :func:`scrolled_tab` viewport, that scroll area's widget."""
    viewport = panel.parentWidget()
    area = viewport.parentWidget() if viewport is not None else None
    assert isinstance(area, WidthFollowingScrollArea)
    area.setWidget(panel)
    panel.installEventFilter(area)
