"""Warnings list with severity icons; clicking one selects the GPUs and links it names."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QStyle, QVBoxLayout, QWidget

from studio.engine.plan.results import PlanWarning
from studio.service.messages import one_line

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
SEVERITY_ICONS = {
    "error": QStyle.StandardPixmap.SP_MessageBoxCritical,
    "warning": QStyle.StandardPixmap.SP_MessageBoxWarning,
    "info": QStyle.StandardPixmap.SP_MessageBoxInformation,
}


class WarningsPanel(QWidget):
    """Lists :class:`PlanWarning` values, most severe first."""

    selectItems = Signal(tuple)  # ids of GPUs and links to highlight

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.list.setObjectName("warnings")
        self.list.itemClicked.connect(self._clicked)
        self.list.currentItemChanged.connect(lambda cur, _prev: self._clicked(cur) if cur is not None else None)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.list)
        self.warnings: tuple[PlanWarning, ...] = ()
        self._listed: tuple[PlanWarning, ...] | None = None  # what the rows show (None: an error, or nothing yet)
        self._icons: dict[QStyle.StandardPixmap, QIcon] = {}  # the style's icons, until the style changes

    def _icon(self, which: QStyle.StandardPixmap) -> QIcon:
        """The style's icon ``which``, asked of the style once: a link-kind edit changes the warnings,
        and every new row asked the style for its icon again (loaded anew, and rendered anew when
        painted: a new icon has no pixmap cached)."""
        icon = self._icons.get(which)
        if icon is None:
            icon = self._icons[which] = self.style().standardIcon(which)
        return icon

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API: another style, other icons
        if event.type() == QEvent.Type.StyleChange:
            self._icons.clear()
        super().changeEvent(event)

    def set_warnings(self, warnings: tuple[PlanWarning, ...]) -> None:
        """Show ``warnings``, most severe first; the rows are kept when they would read the same (an
        edit that leaves the warnings as they were repaints nothing, and keeps the selection)."""
        self.warnings = tuple(sorted(warnings, key=lambda w: SEVERITY_ORDER.get(w.severity, 3)))
        if self.warnings == self._listed:
            return
        self._listed = self.warnings
        self.list.blockSignals(True)
        self.list.clear()
        for w in self.warnings:
            item = QListWidgetItem(self._icon(SEVERITY_ICONS.get(w.severity, SEVERITY_ICONS["info"])), f"{w.message}\n→ {w.fix}")
            item.setToolTip(f"{w.code} ({w.severity})\n{w.message}\nFix: {w.fix}")
            item.setData(Qt.ItemDataRole.UserRole, (*w.gpus, *w.links))
            self.list.addItem(item)
        if not self.warnings:
            item = QListWidgetItem(self._icon(QStyle.StandardPixmap.SP_DialogApplyButton), "No warnings for this plan.")
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.list.addItem(item)
        self.list.blockSignals(False)

    def set_error(self, message: str) -> None:
        if not message:
            return
        self.warnings = ()
        self._listed = None
        self.list.clear()
        item = QListWidgetItem(self._icon(SEVERITY_ICONS["error"]), one_line(message))
        item.setToolTip(message)
        self.list.addItem(item)

    def click_row(self, row: int) -> None:
        """Act as if row ``row`` was clicked (keyboard users, tests)."""
        self.list.setCurrentRow(row)

    def _clicked(self, item: QListWidgetItem) -> None:
        ids = item.data(Qt.ItemDataRole.UserRole)
        if ids:
            self.selectItems.emit(tuple(ids))
