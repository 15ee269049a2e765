"""A section of a panel that folds: a header button with the section's name and a one-line summary
of its settings, and the section itself, shown when the header is clicked. The Plan panel folds its
advanced sections (load, speculative decoding) so that its common fields fit a 1366×768 screen
without scrolling."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QSizePolicy, QToolButton, QVBoxLayout, QWidget


class SectionHeader(QToolButton):
    """The header button: asks only for the width of the section's name, and shortens a longer
    summary with "…" to the width it gets (the whole text in its tooltip), so a long summary (a
    workload with prompt reuse) never widens the panel and narrows the docks beside it."""

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title = title
        self.full_text = title

    def set_full_text(self, text: str) -> None:
        self.full_text = text
        self._fit()

    def _fit(self) -> None:
        room = self.width() - self.iconSize().width() - 16
        shown = self.fontMetrics().elidedText(self.full_text, Qt.TextElideMode.ElideRight, max(room, 10))
        if shown != self.text():
            self.setText(shown)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        hint = super().sizeHint()
        width = self.fontMetrics().horizontalAdvance(self.title) + self.iconSize().width() + 24
        return QSize(min(hint.width(), width), hint.height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return self.sizeHint()


class Section(QWidget):
    """``body`` under a header that shows or hides it (folded by default); ``summary()`` says in
    the folded header what the section is set to."""

    def __init__(self, title: str, body: QWidget, summary: Callable[[], str] | None = None,
                 expanded: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = title
        self.body = body
        self._summary = summary
        self.header = SectionHeader(title)
        self.header.setObjectName(f"section-{title.lower().replace(' ', '-')}")
        self.header.setCheckable(True)
        self.header.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.header.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.header.setStyleSheet("QToolButton { border: none; text-align: left; font-weight: 600; }")
        self.header.toggled.connect(self.set_expanded)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(self.header)
        lay.addWidget(body)
        self.header.setChecked(expanded)
        self.set_expanded(expanded)

    def set_summary(self, summary: Callable[[], str] | None) -> None:
        """What the folded header says the section is set to (a section built before what its
        summary reads gets it here)."""
        self._summary = summary
        self.refresh()

    @property
    def expanded(self) -> bool:
        return self.header.isChecked()

    def set_expanded(self, on: bool) -> None:
        """Show (``on``) or fold the section."""
        if self.header.isChecked() != on:
            self.header.setChecked(on)  # comes back here through toggled
            return
        self.body.setVisible(on)
        self.header.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.refresh()

    def refresh(self) -> None:
        """Write the header: the name, and while folded the summary of the settings."""
        text = self.title
        if not self.expanded and self._summary is not None:
            summary = self._summary()
            if summary:
                text = f"{self.title}: {summary}"
        self.header.set_full_text(text)
        click = "click to show the section's settings"
        self.header.setToolTip("" if self.expanded else click if text == self.title else f"{text}\n{click}")
