"""The Explorer in a narrow dock: below :data:`COMPACT_BELOW_PX` its table and the recommendation's
reasons become tabs beside the plots instead of being squeezed side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QBoxLayout, QSplitter, QTabWidget, QTextBrowser, QWidget

if TYPE_CHECKING:
    _ExplorerBase = QWidget
else:
    _ExplorerBase = object

#: Below this width (px) of its dock the Explorer shows its table and the recommendation's reasons
#: as tabs (:meth:`CompactLayout._set_compact`).
COMPACT_BELOW_PX = 900
#: Height of the recommendation's reasons above the table (px), when they are not a tab.
REASONS_MAX_H = 96


class CompactLayout(_ExplorerBase):
    """Mixin of :class:`studio.gui.explorer.widget.ExplorerWidget`: follows its holder's width."""

    compact: bool
    tabs: QTabWidget
    reasons: QTextBrowser
    _split: QSplitter
    _left: QWidget

    def _follow_holder(self) -> None:
        """Follow the width of what holds the Explorer (the dock's scroll area), which the
        Explorer's own minimum width can exceed."""
        holder = self.parentWidget()
        if holder is not None and getattr(self, "_watching", None) is not holder:
            holder.installEventFilter(self)
            self._watching = holder
        self._set_compact(self._room() < COMPACT_BELOW_PX)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        if obj is getattr(self, "_watching", None) and event.type() == QEvent.Type.Resize:
            self._set_compact(self._room() < COMPACT_BELOW_PX)
        return False

    def _room(self) -> int:
        holder = self.parentWidget()
        return holder.width() if holder is not None else self.width()

    def _set_compact(self, on: bool) -> None:
        """In a dock narrower than :data:`COMPACT_BELOW_PX` the recommendation's reasons and the table
        become the first tabs ("Recommended", "Layouts") beside the Pareto plot and the timelines,
        each then as wide and as tall as the dock allows, instead of squeezed side by side behind
        scroll bars."""
        if on == self.compact:
            return
        self.compact = on
        if on:  # the recommendation's reasons become a tab too: their rows go to the plots
            self.reasons.setMaximumHeight(16_777_215)
            self.tabs.insertTab(0, self.reasons, "Recommended")
            self.tabs.insertTab(1, self._left, "Layouts")
            self.tabs.setCurrentIndex(1)
        else:
            for w in (self._left, self.reasons):
                self.tabs.removeTab(self.tabs.indexOf(w))
            self._split.insertWidget(0, self._left)
            self.reasons.setMaximumHeight(REASONS_MAX_H)
            box = cast(QBoxLayout, self.layout())
            box.insertWidget(box.indexOf(self._split), self.reasons)
            self._left.show()
            self.reasons.show()
