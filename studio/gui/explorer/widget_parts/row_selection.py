"""The Explorer's row selection: a table row or a Pareto point selected previews its layout (the
timeline and why it loses to the recommended one, its first TP group selected on the canvas,
``layoutPreview`` fired) without changing the project."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QItemSelectionModel, QModelIndex
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QWidget,
)

from studio.core.errors import StudioError
from studio.engine.search.sweep import SweepResult
from studio.gui.explorer.table_model import ROW_ROLE, SweepFilterProxy, SweepTableModel
from studio.gui.views.timeline import TimelinePanel
from studio.service.explore.explorer_analysis import first_tp_group, why_loses

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

    from studio.gui.document import ProjectDocument
    from studio.gui.explorer.pareto import ParetoPlot

    _ExplorerBase = QWidget
else:
    _ExplorerBase = object


class RowSelection(_ExplorerBase):
    """Mixin of :class:`studio.gui.explorer.widget.ExplorerWidget`: which sweep row is selected,
    and its preview."""

    doc: ProjectDocument
    result: SweepResult | None
    disagg: Any  # the DisaggSweep of the shown sweep (None when not swept)
    model: SweepTableModel
    proxy: SweepFilterProxy
    table: QTableView
    filter: QLineEdit
    hide_unfit: QCheckBox
    plot: ParetoPlot
    timeline: TimelinePanel
    why: QLabel
    pin_button: QPushButton
    apply_button: QPushButton
    _dirty_tabs: set[str]

    if TYPE_CHECKING:
        layoutPreview: SignalInstance

        def selected_disagg(self) -> int | None: ...

        def select_disagg(self, i: int) -> None: ...

        def _refresh_visible_tab(self) -> None: ...

    def selected_row(self) -> int | None:
        """Sweep row of the selected table row, or None."""
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        row = self.proxy.data(rows[0], ROW_ROLE)
        return None if row is None else int(row)  # None: a disaggregated candidate's row

    def select_row(self, row: int) -> None:
        """Select sweep row ``row`` in the table (clearing the filter if it hides the row)."""
        m = self.model.model_row(row)
        if m is None:
            return
        src = self.model.index(m, 0)
        idx = self.proxy.mapFromSource(src)
        if not idx.isValid():
            self.filter.clear()
            self.hide_unfit.setChecked(False)
            idx = self.proxy.mapFromSource(src)
        self.table.selectionModel().select(
            idx, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.table.setCurrentIndex(idx)
        self.table.scrollTo(idx, QAbstractItemView.ScrollHint.EnsureVisible)

    def show_recommended(self) -> None:
        if self.result is not None and self.model.recommended is not None:
            self.select_row(self.model.recommended)

    def _on_row_selected(self) -> None:
        k = self.selected_disagg()
        if k is not None and self.disagg is not None:
            self.pin_button.setEnabled(False)  # pins are layouts
            self.apply_button.setEnabled(True)
            self.select_disagg(k)
            cand = self.disagg.rows[k]
            self.timeline.clear(f"{cand.label}: its request lanes are in the main window once applied")
            self.why.setText(html.escape(cand.why()))
            return
        row = self.selected_row()
        for b in (self.pin_button, self.apply_button):
            b.setEnabled(row is not None)
        self.plot.select_row(row)
        self._dirty_tabs.update(("placement", "engines"))
        if row is None or self.result is None:
            self.timeline.clear("select a layout")
            self.why.setText("")
            return
        res = self.result
        if not res.columns["fits"][row]:
            self.timeline.clear(f"{res.label(row)} does not fit")
            self.why.setText(html.escape(why_loses(res, row, row)))
            self._refresh_visible_tab()
            return
        try:
            plan = res.plan(row)
        except StudioError as exc:
            self.timeline.clear(exc.message)
            return
        self.timeline.set_timelines(plan.timelines, plan.micro_batches)
        ref = self.model.recommended if self.model.recommended is not None else int(res.order[0])
        self.why.setText(why_loses(res, row, int(ref)))
        self.doc.set_selection(first_tp_group(plan))
        self.layoutPreview.emit(plan)
        self._refresh_visible_tab()

    def index_of_row(self, row: int) -> QModelIndex:
        """Proxy index of sweep row ``row`` (tests)."""
        m = self.model.model_row(row)
        return self.proxy.mapFromSource(self.model.index(m, 0)) if m is not None else QModelIndex()
