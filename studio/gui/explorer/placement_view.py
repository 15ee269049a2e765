"""The Placement tab: candidate placements of one layout, ranked, with the reasons and Apply."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from studio.engine.search.placement import PlacementComparison, PlacementOption

HEADERS = ("Placement", "Slowest TP hop", "GB/s", "AllReduce µs/layer", "TPOT ms", "tok/s/GPU", "TP groups")
BEST_COLOR = QColor("#d3f9d8")


def _groups_text(o: PlacementOption, tp: int, limit: int = 4) -> str:
    short = list(o.placement)
    groups = [short[i:i + tp] for i in range(0, len(short), tp)]
    text = "  ".join("[" + " ".join(g) + "]" for g in groups[:limit])
    return text + (f"  … {len(groups) - limit} more" if len(groups) > limit else "")


class PlacementView(QWidget):
    """Table of :class:`PlacementComparison` options (best first).

    Signals
    -------
    applyRequested(object)
        The :class:`PlacementOption` to make the project's placement.
    """

    applyRequested = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.comparison: PlacementComparison | None = None
        self.title = QLabel("Select a layout to compare its placements.")
        self.title.setWordWrap(True)
        self.apply_button = QPushButton("Apply placement")
        self.apply_button.setEnabled(False)
        self.apply_button.setToolTip("make the layout with the selected placement the project's layout (one undo step)")
        self.apply_button.clicked.connect(self._apply)
        self.table = QTableWidget(0, len(HEADERS))
        self.table.setHorizontalHeaderLabels(list(HEADERS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setWordWrap(False)
        self.table.itemSelectionChanged.connect(lambda: self.apply_button.setEnabled(self.selected() is not None))
        self.reasons = QTextBrowser()
        self.reasons.setMaximumHeight(120)
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.apply_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.reasons)

    def set_comparison(self, comparison: PlacementComparison | None, message: str = "") -> None:
        self.comparison = comparison
        self.table.setRowCount(0)
        if comparison is None:
            self.title.setText(message or "Select a layout to compare its placements.")
            self.reasons.setPlainText("")
            self.apply_button.setEnabled(False)
            return
        lay = comparison.layout
        verdict = ("placements differ on this topology" if comparison.differs
                   else "every placement costs the same here (a regular topology)")
        self.title.setText(f"<b>{lay.label}</b> (M={lay.micro_batches}): {len(comparison.options)} distinct "
                           f"placements — {verdict}")
        self.table.setRowCount(len(comparison.options))
        for r, o in enumerate(comparison.options):
            plan = o.plan
            name = o.name + (f" (= {len(o.also)} more)" if o.also else "")
            cells = [
                name,
                o.tp_link_kind or "— (TP = 1)",
                f"{o.tp_bandwidth_gbps:,.0f}" if o.tp_link_kind else "—",
                f"{plan.allreduce_us_per_layer_decode:,.1f}" if plan else "—",
                f"{plan.tpot_ms:,.1f}" if plan else "—",
                f"{plan.output_tokens_per_s_per_gpu:,.1f}" if plan else o.error,
                _groups_text(o, lay.tp),
            ]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(o.candidate.description + (f"; same as {', '.join(o.also)}" if o.also else "")
                               if c == 0 else text)
                if r == 0 and plan is not None:
                    item.setBackground(QBrush(BEST_COLOR))
                self.table.setItem(r, c, item)
        self.reasons.setPlainText("\n".join(f"• {t}" for t in comparison.reasons))
        if comparison.options:
            self.table.selectRow(0)

    def selected(self) -> PlacementOption | None:
        if self.comparison is None:
            return None
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        o = self.comparison.options[rows[0].row()]
        return o if o.plan is not None else None

    def _apply(self) -> None:
        o = self.selected()
        if o is not None:
            self.applyRequested.emit(o)
