"""Pin a widget at its size hint, so that a change inside it lays nothing out around it.

A widget that calls ``updateGeometry()`` has its parent's layout laid out again, and that layout
asks its own parent the same, up to the window, whether or not any size hint changed. A
``QToolButton`` calls it on every change of its action, whatever changed: it reads the whole action
again and sets its icon again (text, tooltip, enabled state). The toolbar's Undo button changes on
every edit (its tooltip names the edit, it becomes enabled), so every edit laid out the toolbar and
the whole main window (its docks, their separators, the window's minimum size). Qt passes
``updateGeometry()`` on only for a widget whose size can change: one whose minimum and maximum sizes
are equal (a fixed size) lays out nothing around it. :func:`pin_to_hint` fixes a widget at its size
hint, and fixes it again when what the hint depends on changes (font, style), after the widget has
taken the change in.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget

_REPIN = (QEvent.Type.FontChange, QEvent.Type.StyleChange, QEvent.Type.Polish)


class _Pin(QObject):
    """Event filter: fixes its widget at the widget's size hint again once a font or style change
    is handled (the hint is read after the widget has updated it)."""

    def __init__(self, widget: QWidget) -> None:
        super().__init__(widget)
        self._widget = widget
        self._due = False

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if obj is self._widget and event.type() in _REPIN and not self._due:
            self._due = True
            QTimer.singleShot(0, self, self.pin)
        return False

    def pin(self) -> None:
        """Fix the widget at its size hint (a new size lays its surroundings out, once)."""
        self._due = False
        w = self._widget
        hint = w.sizeHint()
        if w.minimumSize() != hint or w.maximumSize() != hint:
            w.setFixedSize(hint)


def pin_to_hint(widget: QWidget) -> _Pin:
    """Fix ``widget`` at its size hint from now on (again after a font or style change; call
    ``pin()`` on the returned object after changing anything else its hint depends on). What it
    shows must fit that size whatever changes: give it a text that does not change."""
    pin = _Pin(widget)
    widget.installEventFilter(pin)
    pin.pin()
    return pin
