"""The Explorer's Engines tab: one layout on vLLM, TensorRT-LLM and SGLang side by side.

One column per engine (:func:`studio.service.explore.engine_compare.compare_engines`): the headline
figures (TPOT, TTFT, throughput, KV capacity, batch) with the best of each row tinted, then the
profile values behind them (token budget, running-sequence limit, memory fraction, KV pool, CUDA
graphs, scheduler time, chunked prefill, prefix caching), those that differ between engines in bold.
A cell's tooltip is the source the engine profile cites. "Serve with …" makes the chosen column's
engine the project's (one undo step, as the engine selector does).
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.service.explore.engine_compare import FIGURES, PROFILE_TERMS, EngineRow, differing

BEST_COLOR = QColor("#d3f9d8")
_FLAGS = ("chunked prefill", "prefix caching")


def fmt(v: float) -> str:
    """A figure as the table shows it: whole numbers and those from 1,000 with thousands separators,
    one decimal from 1, three significant digits below."""
    if float(v).is_integer() or abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:,.1f}"
    return f"{v:.3g}"


def _cell(value: float, unit: str, name: str) -> str:
    if name in _FLAGS:
        return "on" if value else "off"
    if name == "memory fraction":
        return f"{value:g}"
    if name == "running-sequence limit" and not value:
        return "KV cache decides"
    return f"{fmt(value)} {unit.split(' per ')[0]}".strip()  # "ms per decode iteration": the tooltip says


class EnginesView(QWidget):
    """Figures and profile values of one layout per engine.

    Signals
    -------
    engineRequested(str)
        The engine ("vllm", "trtllm", "sglang") to make the project's runtime.
    """

    engineRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[EngineRow] = []
        self.title = QLabel("Select a layout to compare it on each serving engine.")
        self.title.setWordWrap(True)
        self.title.setObjectName("engines-title")
        self.table = QTableWidget(0, 0)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectColumns)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.why = QLabel("")
        self.why.setObjectName("engines-why")
        self.why.setWordWrap(True)
        self.why.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.use_button = QPushButton("Serve with the selected engine")
        self.use_button.setEnabled(False)
        self.use_button.setToolTip("make the selected column's engine the project's serving engine, with its "
                                   "default memory fraction (one undo step)")
        self.use_button.clicked.connect(self._use)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        bar = QHBoxLayout()
        bar.addWidget(self.title, 1)
        bar.addWidget(self.use_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 2)
        lay.addLayout(bar)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.why)

    # ------------------------------------------------------------------ content
    def set_rows(self, rows: list[EngineRow], title: str, current: str | None = None) -> None:
        """Show ``rows`` (one per engine) under ``title``; ``current`` is the project's engine."""
        self.rows = rows
        self.title.setText(title)
        t = self.table
        t.clear()
        t.setColumnCount(len(rows))
        t.setHorizontalHeaderLabels([r.name + (" (project)" if r.engine == current else "") for r in rows])
        diff = set(differing(rows))
        names = [label for label, *_ in FIGURES] + [n for n in PROFILE_TERMS if any(r.value(n) for r in rows)]
        t.setRowCount(len(names))
        t.setVerticalHeaderLabels(names)
        for i, (_label, attr, unit, higher) in enumerate(FIGURES):
            values = [r.figure(attr) if r.plan.fits else None for r in rows]
            present = [v for v in values if v is not None]
            best = (max(present) if higher else min(present)) if present else None
            for j, (r, v) in enumerate(zip(rows, values, strict=True)):
                item = QTableWidgetItem(f"{fmt(v)} {unit}" if v is not None else f"does not fit: {r.plan.fit_reason}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if v is not None and best is not None and v == best and len(set(present)) > 1:
                    item.setBackground(QBrush(BEST_COLOR))
                item.setToolTip(f"{r.name}, profile '{r.profile}', memory fraction {r.memory_fraction:g}")
                t.setItem(i, j, item)
        bold = QFont()
        bold.setBold(True)
        for i, name in enumerate(names[len(FIGURES):], start=len(FIGURES)):
            for j, r in enumerate(rows):
                pv = r.value(name)
                item = QTableWidgetItem("" if pv is None else _cell(pv.value, pv.unit, name))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if pv is not None:
                    item.setToolTip(f"{fmt(pv.value)} {pv.unit}: {pv.source}")
                if name in diff:
                    item.setFont(bold)
                t.setItem(i, j, item)
        notes = [f"{r.name}: {r.note}" for r in rows if r.note]
        self.why.setText(html.escape(
            ("Differ between engines: " + ", ".join(sorted(diff, key=PROFILE_TERMS.index)) if diff else
             "The engines' profile values agree for this layout")
            + ". Hover a value for the engine source it comes from." + ("  " + " ".join(notes) if notes else "")))
        self._selection_changed()

    def clear_rows(self, message: str) -> None:
        """No comparison (no layout, or one that cannot be costed): ``message`` instead."""
        self.rows = []
        self.table.clear()
        self.table.setRowCount(0)
        self.table.setColumnCount(0)
        self.title.setText(message)
        self.why.setText("")
        self._selection_changed()

    def cell_text(self, row_name: str, engine: str) -> str:
        """What the table shows for ``row_name`` (a figure label or profile value name) on ``engine``."""
        names = [self.table.verticalHeaderItem(i).text() for i in range(self.table.rowCount())]
        col = [r.engine for r in self.rows].index(engine)
        item = self.table.item(names.index(row_name), col)
        return item.text() if item is not None else ""

    # ------------------------------------------------------------------ serve with
    def selected_engine(self) -> str | None:
        cols = {i.column() for i in self.table.selectedItems()}
        return self.rows[cols.pop()].engine if len(cols) == 1 and self.rows else None

    def _selection_changed(self) -> None:
        engine = self.selected_engine()
        self.use_button.setEnabled(engine is not None)
        name = next((r.name for r in self.rows if r.engine == engine), None)
        self.use_button.setText(f"Serve with {name}" if name else "Serve with the selected engine")

    def _use(self) -> None:
        engine = self.selected_engine()
        if engine is not None:
            self.engineRequested.emit(engine)


__all__ = ["EnginesView"]
