"""A layout that places its widgets left to right and starts a new line when the next one would
not fit: a row of controls that wraps in a narrow dock instead of being clipped or widening the
window (the Explorer's toolbar at 1366×768)."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QHBoxLayout, QLayout, QLayoutItem, QWidget, QWidgetItem


class FlowLayout(QLayout):
    """Items in reading order, wrapped to the layout's width; its height follows the width
    (``heightForWidth``), so a scroll area or dock gives it the lines it needs."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self.setContentsMargins(4, 2, 4, 2)

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 - Qt API
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt API
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt API
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 - Qt API
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt API
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt API
        return self._arrange(QRect(0, 0, width, 0), place=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 - Qt API
        super().setGeometry(rect)
        self._arrange(rect, place=True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """One line of everything (what it takes when there is room)."""
        m = self.contentsMargins()
        shown = [i for i in self._items if not i.isEmpty()]
        w = sum(i.sizeHint().width() for i in shown) + self._spacing * max(0, len(shown) - 1)
        h = max((i.sizeHint().height() for i in shown), default=0)
        return QSize(w + m.left() + m.right(), h + m.top() + m.bottom())

    def minimumSize(self) -> QSize:  # noqa: N802 - Qt API
        """As wide as the widest item: narrower than that the items would be cut."""
        m = self.contentsMargins()
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _arrange(self, rect: QRect, place: bool) -> int:
        """Lay the items out in ``rect`` (moving them when ``place``); returns the height used."""
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line_h = area.x(), area.y(), 0
        for item in self._items:
            if item.isEmpty():
                continue
            hint = item.sizeHint()
            if x > area.x() and x + hint.width() > area.right() + 1:
                x, y, line_h = area.x(), y + line_h + self._spacing, 0
            if place:
                item.setGeometry(QRect(QPoint(x, y), QSize(min(hint.width(), area.width()), hint.height())))
            x += hint.width() + self._spacing
            line_h = max(line_h, hint.height())
        return y + line_h - rect.y() + m.bottom()


class FlowRow(QWidget):
    """A widget holding a :class:`FlowLayout`, whose minimum height is the height of the lines its
    items take at its current width. It does not report a height-for-width: a scroll area or a
    box layout that sees one sizes everything in it to its preferred height (the Explorer's table
    and plot then ran past the bottom of a 1920 × 1080 dock)."""

    def __init__(self, *widgets: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.flow = add_all(FlowLayout(self), *widgets)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt API
        return False

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        need = self.flow.heightForWidth(event.size().width())
        if need != self.minimumHeight():
            self.setMinimumHeight(need)


def group(*widgets: QWidget, spacing: int = 4) -> QWidget:
    """``widgets`` side by side in one widget, so a :class:`FlowLayout` never puts a label on one
    line and its field on the next."""
    box = QWidget()
    lay = QHBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(spacing)
    for w in widgets:
        lay.addWidget(w)
    return box


def add_all(layout: FlowLayout, *widgets: QWidget) -> FlowLayout:
    """Add ``widgets`` to ``layout`` in order; returns it."""
    for w in widgets:
        layout.addItem(QWidgetItem(w))
        layout.addChildWidget(w)
    return layout
