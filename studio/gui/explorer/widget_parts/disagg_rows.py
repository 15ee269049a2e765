"""The Explorer's disaggregated candidates: the prefill/decode pool splits swept beside the layouts,
as tinted rows of the table and diamonds on the Pareto plot; applying one serves the project with
its pools (one undo step)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QItemSelectionModel, QModelIndex
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QLineEdit,
    QPushButton,
    QTableView,
    QTextBrowser,
    QWidget,
)

from studio.engine.search.sweep import SweepResult
from studio.gui.explorer.table_model import DISAGG_ROLE, SweepFilterProxy, SweepTableModel
from studio.gui.explorer.widget_parts.reasons_text import no_pools_text
from studio.service.explore.disagg_explore import applied_pools

if TYPE_CHECKING:
    from studio.gui.document import ProjectDocument
    from studio.gui.explorer.pareto import ParetoPlot

    _ExplorerBase = QWidget
else:
    _ExplorerBase = object


class DisaggRows(_ExplorerBase):
    """Mixin of :class:`studio.gui.explorer.widget.ExplorerWidget`: selecting and applying its
    disaggregated candidates."""

    doc: ProjectDocument
    disagg: Any  # the DisaggSweep of the shown sweep (None when not swept)
    disagg_selected: int | None
    _disagg_error: str
    model: SweepTableModel
    proxy: SweepFilterProxy
    table: QTableView
    filter: QLineEdit
    hide_unfit: QCheckBox
    plot: ParetoPlot
    reasons: QTextBrowser
    apply_pools_button: QPushButton

    if TYPE_CHECKING:
        def selected_row(self) -> int | None: ...

        def apply_row(self, row: int | None) -> None: ...

    def disagg_line(self, r: SweepResult) -> str:
        """The reasons' line on the disaggregated candidates: the best one against the recommended
        layout ("" when they were not swept)."""
        if getattr(self, "_disagg_error", ""):
            return f"<b>Disaggregated pools not swept:</b> {html.escape(self._disagg_error)}"
        sw = self.disagg
        if sw is None:
            return ""
        best = sw.best
        if best is None:
            return f"<b>Disaggregated:</b> {html.escape(no_pools_text(sw))}"
        text = f"<b>Best disaggregated:</b> {html.escape(best.why())}; {best.tokens_per_s_per_gpu:,.1f} tok/s/GPU"
        rec = r.recommended
        if rec is not None:
            agg = float(r.columns["tokens_per_s_per_gpu"][rec])
            if agg > 0:
                text += f" = {best.tokens_per_s_per_gpu / agg:.2f}× the recommended layout"
        return text

    def select_disagg_row(self, k: int) -> None:
        """Select disaggregated candidate ``k`` (a diamond clicked on the Pareto plot) in the table,
        clearing the filter if it hides the row."""
        m = self.model.disagg_model_row(k)
        idx = self.proxy.mapFromSource(self.model.index(m, 0)) if m is not None else QModelIndex()
        if m is not None and not idx.isValid():
            self.filter.clear()
            self.hide_unfit.setChecked(False)
            idx = self.proxy.mapFromSource(self.model.index(m, 0))
        if not idx.isValid():  # hidden by "Meets SLO only" (the pools have no percentile check)
            self.select_disagg(k)
            return
        self.table.selectionModel().select(
            idx, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.table.setCurrentIndex(idx)
        self.table.scrollTo(idx, QAbstractItemView.ScrollHint.EnsureVisible)

    def selected_disagg(self) -> int | None:
        """The disaggregated candidate of the selected table row, or None."""
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        k = self.proxy.data(rows[0], DISAGG_ROLE)
        return None if k is None else int(k)

    def select_disagg(self, i: int) -> None:
        """Show disaggregated candidate ``i`` in the reasons, ring its diamond and offer to apply it."""
        if self.disagg is None or not 0 <= i < len(self.disagg.rows):
            return
        self.disagg_selected = i
        row = self.disagg.rows[i]
        self.apply_pools_button.setEnabled(True)
        self.plot.select_disagg(i)
        verdict = "meets" if row.meets_targets else "misses"
        self.reasons.setHtml(
            f"<b>{html.escape(row.label)}</b>, batch {row.batch} per decode worker ({verdict} the targets): "
            f"{html.escape(row.why())}; {row.tokens_per_s_per_gpu:,.1f} tok/s/GPU, "
            f"{row.tokens_per_s_per_user:,.1f} tok/s/user, TTFT {row.ttft_ms:,.0f} ms, limited by the "
            f"{html.escape(row.limited_by)}"
        )

    def apply_disagg(self, i: int | None) -> bool:
        """Serve the project with disaggregated candidate ``i`` (one undo step)."""
        if self.disagg is None or i is None or not 0 <= i < len(self.disagg.rows):
            return False
        row = self.disagg.rows[i]
        return self.doc.edit(f"Serving: {row.label}", "serving", lambda p: applied_pools(p, row.mode, row.batch))
