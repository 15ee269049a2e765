"""A section of a panel that folds: a header button with the section's name and a one-line summary
of its settings, and the section itself, shown when the header is clicked. The Plan panel folds its
advanced sections (load, speculative decoding) so that its common fields fit a 1366×768 screen
without scrolling."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSizePolicy, QToolButton, QVBoxLayout, QWidget


class Section(QWidget):
    """``body`` under a header that shows or hides it (folded by default); ``summary()`` says in
    the folded header what the section is set to."""

    def __init__(self, title: str, body: QWidget, summary: Callable[[], str] | None = None,
                 expanded: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = title
        self.body = body
        self._summary = summary
        self.header = QToolButton()
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
        self.header.setText(text)
        self.header.setToolTip("" if self.expanded else "click to show the section's settings")
