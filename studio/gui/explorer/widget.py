"""The Layout Explorer dock: every layout of the drawn cluster, ranked, plotted and compared.

The sweep runs in a worker thread on the frozen project through the application's one scheduler
(:class:`studio.gui.worker.ScheduledWork`; progress bar, Cancel); it re-runs debounced when the
cluster, model, workload or serving settings change and drops results of an older run. Clicking a row or a point previews the layout (its first TP group is selected on the
canvas, :attr:`ExplorerWidget.layoutPreview` fires) without changing the project; Pin, Unpin and
Apply are undoable project edits. With "Disaggregated pools" the prefill/decode candidates are
rows of the table too (tinted, ranked with the layouts) and diamonds on the plot; Apply on such a
row serves the project with its pools (one undo step, as "Apply pools").

This module holds the widget, its sweeps and the table's columns and reasons; its other parts are
mixins beside it: the objective, targets and SLO (:mod:`~studio.gui.explorer.widget_parts.targets`), the row
selection and its preview (:mod:`~studio.gui.explorer.widget_parts.row_selection`), the disaggregated rows
(:mod:`~studio.gui.explorer.widget_parts.disagg_rows`), the lazily refreshed tabs
(:mod:`~studio.gui.explorer.widget_parts.detail_tabs`), pins and applies (:mod:`~studio.gui.explorer.widget_parts.pins`) and
the narrow-dock layout (:mod:`~studio.gui.explorer.widget_parts.compact`).
"""

from __future__ import annotations

import html
from typing import cast

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from studio.core.project import Project
from studio.engine import sweep
from studio.engine.search.sweep import SweepResult
from studio.gui.document import ProjectDocument
from studio.gui.explorer.compare_view import MAX_PINNED, CompareView
from studio.gui.explorer.engines_view import EnginesView
from studio.gui.explorer.multiples import SmallMultiples
from studio.gui.explorer.pareto import ParetoPlot
from studio.gui.explorer.placement_view import PlacementView
from studio.gui.explorer.table_model import SweepFilterProxy, SweepTableModel
from studio.gui.explorer.widget_parts.compact import REASONS_MAX_H, CompactLayout
from studio.gui.explorer.widget_parts.detail_tabs import DetailTabs
from studio.gui.explorer.widget_parts.disagg_rows import DisaggRows
from studio.gui.explorer.widget_parts.pins import Pins
from studio.gui.explorer.widget_parts.reasons_text import slo_line
from studio.gui.explorer.widget_parts.row_selection import RowSelection
from studio.gui.explorer.widget_parts.targets import OBJECTIVE_TEXT, TargetControls
from studio.gui.toolkit.flow_layout import FlowRow
from studio.gui.views.timeline import TimelinePanel
from studio.gui.worker import ScheduledWork
from studio.service.disagg_slo import slo_verdicts
from studio.service.explore.disagg_explore import with_pools
from studio.service.explore.explorer_analysis import (
    COLUMNS,
    PLOT_MODES,
    SLO_KEYS,
)
from studio.service.explore.explorer_work import Sweeper, explore_work
from studio.service.explore.recommend import sweep_kwargs
from studio.service.scheduler import Response
from studio.service.slo import Explored, SloReport, SloTargets

DEBOUNCE_MS = 300


#: The table column each objective ranks by; it is shown first.
OBJECTIVE_COLUMN = {"throughput": "tokens_per_s_per_gpu", "cost": "usd_per_million", "latency": "tpot_ms"}


def _sweep_inputs(p: Project) -> tuple:
    """What the sweep depends on: not the current layout, the pinned ones or the batch (the sweep
    tries every batch itself)."""
    return (p.cluster, p.model, p.workload.model_copy(update={"batch": "auto"}), p.serving, p.calibrations,
            p.explorer)




class ExplorerWidget(TargetControls, RowSelection, DisaggRows, DetailTabs, Pins, CompactLayout, QWidget):
    """Dockable explorer bound to a :class:`ProjectDocument`.

    Parameters
    ----------
    threaded:
        Run sweeps in a worker thread (the GUI); ``False`` runs them synchronously when started
        (deterministic tests, benchmarks).
    sweeper:
        ``sweep``-compatible function (tests inject slow or failing ones).

    Signals
    -------
    resultShown(object)
        A :class:`SweepResult` was put on screen.
    layoutPreview(object)
        The :class:`PlanResult` of the layout the user is looking at (a preview for the canvas;
        the project is unchanged).
    ownWindowToggled(bool)
        The "Own window" button: show the Explorer in a large window of its own (True) or docked.
    """

    resultShown = Signal(object)
    layoutPreview = Signal(object)
    ownWindowToggled = Signal(bool)

    def __init__(self, document: ProjectDocument, *, threaded: bool = True, sweeper: Sweeper | None = None,
                 debounce_ms: int = DEBOUNCE_MS, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("explorer")
        self.doc = document
        self.threaded = threaded
        self._sweeper: Sweeper = sweeper or sweep
        self.result: SweepResult | None = None
        #: The percentile SLO check of the shown sweep (None without an SLO).
        self.slo: SloReport | None = None
        self.slo_error = ""
        self._inputs: tuple | None = None
        self._dirty_tabs: set[str] = {"engines"}  # shows the project's layout before any sweep
        self._closed = False  # the dock or window was closed: no sweeps until it is shown again
        self._rerun_on_show = False
        #: The sweeps: newest only, debounced, in a worker thread (or synchronous when not threaded).
        #: The disaggregated candidates of the shown sweep (a DisaggSweep; None when not swept).
        self.disagg = None
        #: The disaggregated candidates' SLO check (studio.service.disagg_slo; None when not checked).
        self.disagg_slo: dict | None = None
        self.disagg_selected: int | None = None
        self.jobs = ScheduledWork(with_pools(explore_work(self._sweeper)), self._request, threaded=threaded,
                                  debounce_ms=debounce_ms, max_threads=2, name="the sweep", parent=self)
        self.jobs.started.connect(self._on_started)
        self.jobs.progressed.connect(self._on_progress)
        self.jobs.responded.connect(self._on_done)
        self._build()
        self._load_targets(document.project)
        document.projectChanged.connect(self._on_project)
        self.refresh_compare()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.run_button = QPushButton("Run sweep")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setMaximumWidth(160)
        self.progress.setFormat("%p%")
        self.status = QLabel("")
        self.own_window = QPushButton("Own window")
        self.own_window.setCheckable(True)
        self.own_window.setToolTip("Show the Explorer in its own large window (click again to dock it back)")
        self.own_window.toggled.connect(self.ownWindowToggled)
        # Run, Cancel and the progress come first so they stay visible in a narrow dock; every row
        # wraps (FlowLayout) instead of being clipped or widening the window at 1366×768
        bar = FlowRow(self.run_button, self.cancel_button, self.progress, self.own_window, self.status)
        # Built from the outside in: each container is in its place before what it holds is added,
        # and filled before the next one is added (the focus chain is the one it was). Under the
        # application's style sheet every reparenting restyles the whole subtree it moves: the
        # views, built into tabs handed to a splitter handed to this widget, were restyled thrice.
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.setSpacing(2)
        lay.addWidget(bar)
        targets = self._build_targets()
        lay.addWidget(targets)
        self.reasons = QTextBrowser()
        self.reasons.setObjectName("explorer-reasons")
        self.reasons.setMaximumHeight(REASONS_MAX_H)
        self.reasons.setOpenLinks(False)
        lay.addWidget(self.reasons)
        split = QSplitter(Qt.Orientation.Horizontal)
        lay.addWidget(split, 1)

        self.model = SweepTableModel(self)
        self.proxy = SweepFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.table = _SweepTable(self._fit_columns_if_stale)
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(False)
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.verticalHeader().setVisible(False)
        hh = self.table.horizontalHeader()
        # columns sized to their contents when the rows change (a result, a sort, a filter: see
        # _fit_columns), not in the header's ResizeToContents mode, which measured every column
        # again at each show, resize or move of the table (docking, floating, tabs in a narrow dock)
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hh.setResizeContentsPrecision(40)  # size columns from the first rows, not thousands
        self._fit_pending = False
        for signal in (self.proxy.layoutChanged, self.proxy.rowsInserted, self.proxy.rowsRemoved):
            signal.connect(self._fit_columns_soon)
        hh.setStretchLastSection(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # keep the ranking order
        self.pin_button = QPushButton("Pin")
        self.pin_button.setToolTip(f"keep this layout for side-by-side comparison (up to {MAX_PINNED})")
        self.apply_button = QPushButton("Apply")
        self.apply_button.setToolTip("make this the project's layout (one undo step)")
        self.best_button = QPushButton("Show recommended")
        self.apply_pools_button = QPushButton("Apply pools")
        self.apply_pools_button.setToolTip("serve the project with the disaggregated candidate clicked on the "
                                           "Pareto plot (one undo step)")
        self.apply_pools_button.setEnabled(False)
        for b in (self.pin_button, self.apply_button):
            b.setEnabled(False)
        left = QWidget()
        split.addWidget(left)
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.table, 1)
        row = QHBoxLayout()
        for b in (self.best_button, self.pin_button, self.apply_button, self.apply_pools_button):
            row.addWidget(b)
        row.addStretch(1)
        ll.addLayout(row)

        self.tabs = QTabWidget()
        split.addWidget(self.tabs)
        pareto_tab = QWidget()
        self.tabs.addTab(pareto_tab, "Pareto")
        pl = QVBoxLayout(pareto_tab)
        pl.setContentsMargins(0, 0, 0, 0)
        self.plot_mode = QComboBox()
        for key, (title, *_rest) in PLOT_MODES.items():
            self.plot_mode.addItem(title, key)
        top = QHBoxLayout()
        top.setContentsMargins(4, 2, 4, 0)
        top.addWidget(QLabel("Axes"))
        top.addWidget(self.plot_mode)
        top.addStretch(1)
        pl.addLayout(top)
        self.plot = ParetoPlot()
        pl.addWidget(self.plot, 1)
        tl_tab = QWidget()
        self.tabs.addTab(tl_tab, "Timeline")
        tl = QVBoxLayout(tl_tab)
        tl.setContentsMargins(0, 0, 0, 0)
        self.timeline = TimelinePanel()
        self.why = QLabel("")
        self.why.setObjectName("explorer-why")
        self.why.setWordWrap(True)
        self.why.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.why.setStyleSheet("padding: 4px;")
        tl.addWidget(self.timeline, 1)
        tl.addWidget(self.why)
        self.multiples = SmallMultiples()
        self.tabs.addTab(self.multiples, "Small multiples")
        self.compare = CompareView()
        self.tabs.addTab(self.compare, "Compare")
        self.placement = PlacementView()
        self.tabs.addTab(self.placement, "Placement")
        self.engines = EnginesView()
        self.tabs.addTab(self.engines, "Engines")

        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        self._split, self._left = split, left
        self.compact = False  # the table is a tab beside the plots (a narrow dock: _set_compact)

        self.slo_only.toggled.connect(self.proxy.set_slo_only)
        self.hide_unfit.toggled.connect(self.proxy.set_hide_unfit)
        self.filter.textChanged.connect(self.proxy.set_text)
        self.run_button.clicked.connect(self.run_sweep)
        self.cancel_button.clicked.connect(self.cancel)
        self.best_button.clicked.connect(self.show_recommended)
        self.pin_button.clicked.connect(lambda: self.pin_row(self.selected_row()))
        self.apply_button.clicked.connect(self.apply_selected)
        self.plot_mode.currentIndexChanged.connect(lambda _i: self.plot.set_mode(self.plot_mode.currentData()))
        self.plot.rowClicked.connect(self.select_row)
        self.plot.disaggClicked.connect(self.select_disagg_row)
        self.pools_box.toggled.connect(lambda _on: self.schedule())
        self.apply_pools_button.clicked.connect(lambda: self.apply_disagg(self.disagg_selected))
        self.table.selectionModel().selectionChanged.connect(lambda *_a: self._on_row_selected())
        self.tabs.currentChanged.connect(lambda _i: self._refresh_visible_tab())
        self.compare.applyRequested.connect(self.apply_pinned)
        self.compare.unpinRequested.connect(self.unpin)
        self.placement.applyRequested.connect(self.apply_placement)
        self.engines.engineRequested.connect(self.serve_with)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        """Sweep the first time the dock is shown (a hidden dock costs nothing), and again when it
        is reopened after a close cancelled a sweep or skipped a change."""
        super().showEvent(event)
        self._follow_holder()
        self._closed = False
        rerun, self._rerun_on_show = self._rerun_on_show, False
        if rerun or (self.result is None and not self.running and not self.jobs.pending):
            self.schedule()

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt API
        """Closing the dock or the window cancels the sweep in flight and any pending one.

        A dock tabbed away behind another (or a minimised window) is not closed: the sweep
        goes on. Closed means this widget or one of its parents was hidden explicitly.
        """
        super().hideEvent(event)
        if not event.spontaneous() and self._closed_by_ancestor():
            self.close_down()

    def _closed_by_ancestor(self) -> bool:
        w: QWidget | None = self
        while w is not None:
            if w.isHidden():
                return True
            w = w.parentWidget()
        return False

    def close_down(self) -> None:
        """The dock or window closed: stop the sweep in flight and the debounce timer; the
        sweep runs again when the Explorer is shown next."""
        self._closed = True
        if self.jobs.pending or self.running:
            self._rerun_on_show = True
        if self.jobs.stop():
            self.status.setText("cancelling…")

    # ------------------------------------------------------------------ sweeping
    def sweep_kwargs(self) -> dict:
        """The sweep's objective and targets: the project's (:func:`studio.service.explore.recommend.sweep_kwargs`)."""
        return sweep_kwargs(self.doc.project)

    def schedule(self) -> None:
        """Re-run the sweep after the debounce interval (restarted on every call; a sweep of the
        old inputs in flight is cancelled and its result dropped); while the Explorer is closed,
        only note that it must run when shown again."""
        if self._closed:
            self._rerun_on_show = True
            return
        self.jobs.schedule()

    def run_sweep(self) -> None:
        """Start a sweep of the current project now (cancelling one in flight)."""
        self.jobs.start()

    def _request(self) -> tuple[Project, dict, SloTargets | None, bool]:
        """The frozen request of a sweep: the current project, its objective and targets, its
        percentile SLO, and whether the disaggregated candidates are swept too."""
        project = self.doc.project
        self._inputs = _sweep_inputs(project)
        return project, self.sweep_kwargs(), self.slo_targets(), self.pools_box.isChecked()

    def _on_started(self, _revision: int) -> None:
        self.progress.setValue(0)
        self.cancel_button.setEnabled(True)
        self.status.setText(f"sweeping {self.doc.project.cluster.num_gpus} GPUs…")

    def cancel(self) -> None:
        """Stop the sweep in flight (its partial result is dropped)."""
        if self.jobs.cancel():
            self.status.setText("cancelling…")

    @property
    def running(self) -> bool:
        """A sweep of the current inputs is in flight."""
        return self.jobs.running

    def wait_idle(self, msecs: int = 30_000) -> bool:
        """Block until sweeps in flight finish (tests, shutdown)."""
        return self.jobs.wait_idle(msecs)

    def _on_progress(self, fraction: float, _revision: int) -> None:
        self.progress.setValue(int(fraction * 1000))

    def _on_done(self, response: Response) -> None:
        """A current response (the scheduler drops those of older runs)."""
        self.cancel_button.setEnabled(False)
        if not response.ok:
            self.progress.setValue(0)
            self.status.setText("sweep cancelled" if response.cancelled else "")
            if not response.cancelled:
                self.reasons.setPlainText(f"The sweep could not run: {response.error}")
            return
        self.progress.setValue(1000)
        out = cast(Explored, response.result)
        self.disagg = getattr(out, "disagg", None)
        self.disagg_slo = getattr(out, "disagg_slo", None)
        self._disagg_error = getattr(out, "disagg_error", "")
        self.disagg_selected = None
        self.apply_pools_button.setEnabled(False)
        self.plot.set_disagg(self.disagg.rows if self.disagg is not None else ())
        self.show_result(out.sweep, out.slo, out.slo_error or self.slo_error)

    def show_result(self, result: SweepResult, slo: SloReport | None = None, slo_error: str = "") -> None:
        """Fill the table, the plot and the reasons from a finished sweep (and its SLO check)."""
        self.result = result
        self.slo = slo
        self.model.set_result(result, slo, self.disagg.rows if self.disagg is not None else (),
                              slo_verdicts(self.disagg_slo))
        for key in SLO_KEYS:
            self.table.setColumnHidden([c.key for c in COLUMNS].index(key), slo is None)
        self._objective_column_first(result.objective, slo is not None)
        self.plot.set_result(result, self.model.recommended)
        fits = int(result.columns["fits"].sum()) if result.candidates else 0
        self.status.setText(f"{result.candidates:,} candidates, {fits:,} fit")
        if self.disagg is not None:
            self.status.setText(self.status.text() + f" + {len(self.disagg.rows):,} disaggregated (tinted rows)")
        if slo is not None:
            meets = sum(e.meets for e in slo.checked)
            self.status.setText(self.status.text() + f"; {meets} of {len(slo.checked)} layouts checked meet the SLO")
        self._fit_columns()
        self._show_reasons(result, slo, slo_error)
        self._dirty_tabs = {"multiples", "placement", "engines"}
        if self.model.recommended is not None:
            self.select_row(self.model.recommended)
        self._refresh_visible_tab()
        self.resultShown.emit(result)

    def _fit_columns(self, *_args) -> None:
        """Size the table's columns to their contents (the rows about the top; the header's
        precision), once per change of the rows shown; a hidden table's when it is shown."""
        self._fit_pending = False
        self._columns_stale = not self.table.isVisible()
        if not self._columns_stale:
            self.table.horizontalHeader().resizeSections(QHeaderView.ResizeMode.ResizeToContents)

    def _fit_columns_if_stale(self) -> None:
        if getattr(self, "_columns_stale", False):
            self._fit_columns()

    def _fit_columns_soon(self, *_args) -> None:
        """:meth:`_fit_columns` once the sort or filter has finished: a filter change removes and
        inserts rows range by range."""
        if not self._fit_pending:
            self._fit_pending = True
            QTimer.singleShot(0, self, self._fit_columns_due)

    def _fit_columns_due(self) -> None:
        if self._fit_pending:  # not measured meanwhile (a result shown)
            self._fit_columns()

    def _objective_column_first(self, objective: str, slo: bool = False) -> None:
        """Move the column the objective ranks by to the front, and with an SLO its four columns
        right after it (the SLO verdict, p99 TTFT, p99 TPOT, saturation rate).

        The columns are sized to their contents after the moves (:meth:`_fit_columns`), once: in
        the header's ResizeToContents mode every move measured every column again (0.5 s of the
        0.8 s a sweep took to show)."""
        self._move_columns(self.table.horizontalHeader(), objective, slo)

    @staticmethod
    def _move_columns(hh: QHeaderView, objective: str, slo: bool) -> None:
        keys = [c.key for c in COLUMNS]
        for logical in range(len(keys)):  # every column back where it was
            hh.moveSection(hh.visualIndex(logical), logical)
        lead = keys.index(OBJECTIVE_COLUMN[objective])
        hh.moveSection(hh.visualIndex(lead), 0)
        nxt = 1
        if slo:
            for k, key in enumerate(SLO_KEYS, start=1):
                hh.moveSection(hh.visualIndex(keys.index(key)), k)
            nxt = 1 + len(SLO_KEYS)
        for k, key in enumerate(("layout", "meets_targets"), start=nxt):  # what the row is, and its verdict
            hh.moveSection(hh.visualIndex(keys.index(key)), k)

    def _show_reasons(self, r: SweepResult, slo: SloReport | None = None, slo_error: str = "") -> None:
        head = (f"<b>Recommended for {html.escape(OBJECTIVE_TEXT[r.objective].lower())}:</b> "
                + (html.escape(r.label(r.recommended)) if r.recommended is not None else "none"))
        if slo is not None:
            head = f"{slo_line(slo)}<br>{head}"
        elif slo_error:
            head = f"<b>SLO not checked:</b> {html.escape(slo_error)}<br>{head}"
        items = "".join(f"<li>{html.escape(t)}</li>" for t in r.reasons)
        pools = self.disagg_line(r)
        if pools:
            head = f"{head}<br>{pools}"
        self.reasons.setHtml(f"{head}<ul style='margin-top:2px; margin-left:-20px'>{items}</ul>")

    def apply_selected(self) -> None:
        """Apply the selected row: a layout (:meth:`apply_row`) or a disaggregated candidate's pools
        (:meth:`apply_disagg`), one undo step either way."""
        k = self.selected_disagg()
        if k is not None:
            self.apply_disagg(k)
        else:
            self.apply_row(self.selected_row())

    def _on_project(self, project: Project, kind: str) -> None:
        self._load_targets(project)
        if _sweep_inputs(project) != self._inputs:
            self.schedule()
        self.refresh_compare()
        self._dirty_tabs.add("engines")  # the project's engine, version or fraction may have changed
        self._refresh_visible_tab()


class _SweepTable(QTableView):
    """The Explorer's table; calls ``shown`` each time it is shown (its columns are measured then
    when the rows changed while it was hidden: :meth:`ExplorerWidget._fit_columns`)."""

    def __init__(self, shown) -> None:
        super().__init__()
        self._shown = shown

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        self._shown()
