"""Pinned layouts side by side: metrics with each row's winner marked, memory bars and timelines
aligned in columns (timelines on one linked time axis), Apply / Unpin per layout."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.engine.plan.results import PlanResult
from studio.gui.views.memory_bars import MemoryBarsWidget
from studio.gui.views.timeline import TimelinePlot
from studio.service.explore.explorer_analysis import compare_plans

WIN_COLOR = QColor("#d3f9d8")
MAX_PINNED = 4


class CompareView(QWidget):
    """Shows up to :data:`MAX_PINNED` pinned plans.

    Signals
    -------
    applyRequested(int), unpinRequested(int)
        Index of the pinned layout whose button was pressed.
    """

    applyRequested = Signal(int)
    unpinRequested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.titles: list[str] = []
        self.plans: list[PlanResult] = []
        self.hint = QLabel("Pin 2–4 layouts (select a row, press Pin) to compare them here.")
        self.hint.setStyleSheet("color: #495057; padding: 6px;")
        self.table = QTableWidget(0, 0)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self._bold = QFont()
        self._bold.setBold(True)
        self._charts = QWidget()
        self._grid = QGridLayout(self._charts)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setSpacing(4)
        self.buttons: list[tuple[QPushButton, QPushButton]] = []
        self.memory: list[MemoryBarsWidget] = []
        self.timelines: list[TimelinePlot] = []
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self._charts)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 2)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.hint)
        lay.addWidget(split, 1)

    def set_pinned(self, titles: list[str], plans: list[PlanResult]) -> None:
        """Show ``plans`` (one column each) under ``titles``."""
        self.titles, self.plans = list(titles), list(plans)
        n = len(plans)
        self.hint.setVisible(n < 2)
        rows = compare_plans(plans) if plans else []
        self.table.clear()
        self.table.setColumnCount(n)
        self.table.setRowCount(len(rows))
        self.table.setHorizontalHeaderLabels(self.titles)
        self.table.setVerticalHeaderLabels([r.name for r in rows])
        for i, r in enumerate(rows):
            for k in range(n):
                win = r.winner == k
                item = QTableWidgetItem(("★ " if win else "") + r.text[k])
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if win:
                    item.setBackground(QBrush(WIN_COLOR))
                    item.setFont(self._bold)
                    item.setToolTip(f"best {r.name} of the pinned layouts")
                self.table.setItem(i, k, item)
        full = self.table.horizontalHeader().height() + 22 * len(rows) + 6
        self.table.setMinimumHeight(min(full, 340))  # every metric readable; charts take the rest
        self.table.setMaximumHeight(full)
        self._build_charts(n)
        longest = max((p.timelines["decode"].total_ms for p in plans if "decode" in p.timelines), default=0.0)
        for k, plan in enumerate(plans):
            self.memory[k].set_memory(plan.memory)
            self.timelines[k].set_timeline(plan.timelines.get("decode"))
        if plans and longest > 0:
            self.timelines[0].setXRange(0, longest * 1.02, padding=0)

    def winners(self) -> dict[str, int | None]:
        """Metric name -> index of the winning pinned layout (for tests and the report)."""
        return {r.name: r.winner for r in compare_plans(self.plans)} if self.plans else {}

    def _build_charts(self, n: int) -> None:
        while self._grid.count():
            taken = self._grid.takeAt(0)
            w = taken.widget() if taken is not None else None
            if w is not None:
                w.deleteLater()
        self.buttons, self.memory, self.timelines = [], [], []
        for k in range(n):
            head = QWidget()
            hl = QHBoxLayout(head)
            hl.setContentsMargins(2, 0, 2, 0)
            title = QLabel(f"<b>{self.titles[k]}</b>")
            apply_b = QPushButton("Apply")
            apply_b.setToolTip("make this the project's layout (one undo step)")
            apply_b.clicked.connect(lambda _c=False, i=k: self.applyRequested.emit(i))
            unpin_b = QPushButton("Unpin")
            unpin_b.clicked.connect(lambda _c=False, i=k: self.unpinRequested.emit(i))
            hl.addWidget(title, 1)
            hl.addWidget(apply_b)
            hl.addWidget(unpin_b)
            mem = MemoryBarsWidget()
            mem.setMinimumHeight(150)
            tl = TimelinePlot()
            tl.setMinimumHeight(150)
            if tl.legend is not None:
                tl.legend.setVisible(False)
            if self.timelines:
                tl.setXLink(self.timelines[0])
            self._grid.addWidget(head, 0, k)
            self._grid.addWidget(mem, 1, k)
            self._grid.addWidget(tl, 2, k)
            self.buttons.append((apply_b, unpin_b))
            self.memory.append(mem)
            self.timelines.append(tl)
