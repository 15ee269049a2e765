"""A one-line label that never clips mid-glyph: when it is narrower than its text it shows the text
elided with "…" and the full text in its tooltip."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class FitLabel(QLabel):
    """``text()`` is always the full text; what is painted is elided to the label's width."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self._tip = ""
        self._fitted: tuple | None = None  # (text, width, font) the elided text below is for
        self._elided = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setText(text)

    def text(self) -> str:
        return self._full

    def setText(self, text: str) -> None:  # noqa: N802 - Qt API
        self._full = text
        self.updateGeometry()
        self._fit()

    def setToolTip(self, tip: str) -> None:  # noqa: N802 - an explicit tooltip wins
        self._tip = tip
        super().setToolTip(tip)

    @property
    def is_elided(self) -> bool:
        """Whether the painted text is shorter than the full text."""
        return QLabel.text(self) != self._full

    def sizeHint(self) -> QSize:  # noqa: N802 - room for the full text
        m = self.contentsMargins()
        fm = self.fontMetrics()
        return QSize(fm.horizontalAdvance(self._full) + m.left() + m.right() + 2, fm.height() + m.top() + m.bottom())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - may shrink: it elides
        return QSize(self.fontMetrics().horizontalAdvance("…") * 3, self.sizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event) -> None:  # noqa: N802 - font or style changed: refit
        super().changeEvent(event)
        if event.type() in (event.Type.FontChange, event.Type.StyleChange):
            self._fit()

    def _fit(self) -> None:
        """Elide the text to the width. A label is told of every style change around it (each
        reparenting under the application's style sheet sends one to the whole subtree: a metric
        card's labels get ~20 while the window is built), so the text is elided again only when
        the text, the width or the font differ from the last time."""
        m = self.contentsMargins()
        width = max(0, self.width() - m.left() - m.right())
        key = (self._full, width, self.font())
        if key != self._fitted:
            self._fitted = key
            self._elided = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, width)
        shown = self._elided
        if shown != QLabel.text(self):
            QLabel.setText(self, shown)
        tip = self._tip or (self._full if shown != self._full else "")
        if self.toolTip() != tip:
            super().setToolTip(tip)
