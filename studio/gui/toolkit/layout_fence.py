"""A frame around one widget that lays its surroundings out again only when that widget's size
hints change.

Qt lays a widget's layout out again whenever a child asks (``updateGeometry``: a label given a new
text, whatever its width), and every layout it lays out asks its own parent the same, whether or not
its size hints changed: the timeline's caption laid out the timeline panel, its dock and the whole
main window on every edit, the status bar's plan line the status bar and the main window. (A
metric card is not fenced: most edits change some card's hints, and the fence's extra hop cost
more than it saved.) A :class:`LayoutFence` has no layout: it keeps its
one widget filling its contents rect and, when that widget asks to be laid out, passes the request
on only if the widget's hints (size hint, minimum size hint, minimum and maximum size, size policy,
height for width, hidden) are not the ones its parent last saw: the parent's layout can change only
when they do. The fence takes the widget's size policy and explicit minimum and maximum sizes, so
that a layout treats it as it treated the widget, and compares hints as a layout reads them: a
direction whose policy is ``Ignored`` has no size hint (a caption that may be cut at the right
lays nothing out when its text changes).

It also remembers the widget's height for each width asked until the widget next asks to be laid
out: a word-wrapped rich-text QLabel lays its text out again, and repaints itself, every time a
layout asks it that, even for the width it has (the metrics panel's plan line was repainted twice
per edit, whenever a card's hints moved the cards' grid).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import QFrame, QSizePolicy, QWidget

#: Qt's QWIDGETSIZE_MAX: no explicit maximum.
UNBOUNDED = (1 << 24) - 1
_IGNORED = QSizePolicy.Policy.Ignored


class LayoutFence(QFrame):
    """Holds one widget (:meth:`set_child`) in its contents rect; its size hints are the widget's
    plus its contents margins (a frame's width)."""

    def __init__(self, child: QWidget | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._child: QWidget | None = None
        self._hints: tuple = ()
        self._heights: dict[int, int] = {}  # the child's height for a width, until it asks again
        if child is not None:
            self.set_child(child)

    def child(self) -> QWidget | None:
        """The widget held."""
        return self._child

    def set_child(self, child: QWidget) -> None:
        """Hold ``child`` (reparented here), filling the contents rect."""
        child.setParent(self)
        self._child = child
        self._hints = self._child_hints()
        self._take_bounds()
        child.setGeometry(self.contentsRect())
        self.updateGeometry()

    def _child_hints(self) -> tuple:
        """What the parent's layout reads of the child, through this frame."""
        c = self._child
        if c is None:
            return ()
        hfw = c.hasHeightForWidth()
        policy = c.sizePolicy()
        self._heights.clear()
        hint, min_hint = c.sizeHint(), c.minimumSizeHint()
        if policy.horizontalPolicy() == _IGNORED:  # as a layout reads them
            hint, min_hint = QSize(0, hint.height()), QSize(0, min_hint.height())
        if policy.verticalPolicy() == _IGNORED:
            hint, min_hint = QSize(hint.width(), 0), QSize(min_hint.width(), 0)
        return (hint, min_hint, c.minimumSize(), c.maximumSize(), policy, hfw,
                c.heightForWidth(c.width()) if hfw else -1, c.isHidden())

    def _take_bounds(self) -> None:
        """The child's size policy and explicit minimum and maximum sizes, as the fence's own."""
        c = self._child
        if c is None:
            return
        if self.sizePolicy() != c.sizePolicy():
            self.setSizePolicy(c.sizePolicy())
        m = self._margins()
        low, high = c.minimumSize(), c.maximumSize()
        low = QSize(low.width() + m.width() if low.width() > 0 else 0, low.height() + m.height() if low.height() > 0 else 0)
        high = QSize(min(high.width() + m.width(), UNBOUNDED) if high.width() < UNBOUNDED else UNBOUNDED,
                     min(high.height() + m.height(), UNBOUNDED) if high.height() < UNBOUNDED else UNBOUNDED)
        if self.minimumSize() != low:
            self.setMinimumSize(low)
        if self.maximumSize() != high:
            self.setMaximumSize(high)

    def _margins(self) -> QSize:
        m = self.contentsMargins()
        return QSize(m.left() + m.right(), m.top() + m.bottom())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        c = self._child
        return c.sizeHint() + self._margins() if c is not None else super().sizeHint()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        c = self._child
        return c.minimumSizeHint() + self._margins() if c is not None else super().minimumSizeHint()

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt API
        c = self._child
        return c.hasHeightForWidth() if c is not None else super().hasHeightForWidth()

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt API
        c = self._child
        if c is None or not c.hasHeightForWidth():
            return super().heightForWidth(width)
        m = self._margins()
        inner = width - m.width()
        height = self._heights.get(inner)
        if height is None:
            if len(self._heights) > 16:
                self._heights.clear()
            height = self._heights[inner] = c.heightForWidth(inner)
        return height + m.height()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        if self._child is not None:
            self._child.setGeometry(self.contentsRect())

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - hidden, the child's requests were not posted
        super().showEvent(event)
        self._pass_on()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest and self._child is not None:
            self._heights.clear()  # the child asks: its text, font or bounds changed
            self._pass_on()
            return True
        return super().event(event)

    def _pass_on(self) -> None:
        """Ask the parent to lay out again if the child's hints changed; refit the child."""
        if self._child is None:
            return
        hints = self._child_hints()
        if hints != self._hints:
            self._hints = hints
            self._take_bounds()
            self.updateGeometry()
        rect = self.contentsRect()
        if self._child.geometry() != rect:
            self._child.setGeometry(rect)
