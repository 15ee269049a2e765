"""The Layout Explorer dock: every layout of the drawn cluster, ranked, plotted and compared.

The sweep runs in a worker thread on the frozen project through the application's one scheduler
(:class:`studio.gui.worker.ScheduledWork`; progress bar, Cancel); it re-runs debounced when the
cluster, model, workload or serving settings change and drops results of an older run. Clicking a row or a point previews the layout (its first TP group is selected on the
canvas, :attr:`ExplorerWidget.layoutPreview` fires) without changing the project; Pin, Unpin and
Apply are undoable project edits. With "Disaggregated pools" the prefill/decode candidates are
rows of the table too (tinted, ranked with the layouts) and diamonds on the plot; Apply on such a
row serves the project with its pools (one undo step, as "Apply pools").
"""

from __future__ import annotations

import html
from typing import cast

from PySide6.QtCore import QEvent, QItemSelectionModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QBoxLayout,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project, pinned_problem
from studio.engine import sweep
from studio.engine.plan.results import PlanResult
from studio.engine.search.placement import PlacementOption, compare_placements
from studio.engine.search.sweep import SweepResult
from studio.gui.document import ProjectDocument
from studio.gui.explorer.compare_view import MAX_PINNED, CompareView
from studio.gui.explorer.engines_view import EnginesView
from studio.gui.explorer.multiples import SmallMultiples
from studio.gui.explorer.pareto import ParetoPlot
from studio.gui.explorer.placement_view import PlacementView
from studio.gui.explorer.table_model import DISAGG_ROLE, ROW_ROLE, SweepFilterProxy, SweepTableModel
from studio.gui.toolkit.flow_layout import FlowRow, group
from studio.gui.views.timeline import TimelinePanel
from studio.gui.worker import ScheduledWork
from studio.service.disagg_slo import slo_verdicts
from studio.service.explore.disagg_explore import applied_pools, with_pools
from studio.service.explore.explorer_analysis import (
    COLUMNS,
    PLOT_MODES,
    SLO_KEYS,
    factorizations,
    first_tp_group,
    why_loses,
)
from studio.service.explore.explorer_work import Sweeper, explore_work
from studio.service.explore.pinned import pinned_plans
from studio.service.explore.recommend import sweep_kwargs, with_row
from studio.service.scheduler import Response
from studio.service.slo import Explored, SloReport, SloTargets, resolve_targets

DEBOUNCE_MS = 300
OBJECTIVE_TEXT = {
    "throughput": "Max throughput per GPU",
    "cost": "Min $ per M tokens",
    "latency": "Min latency",
}


#: The table column each objective ranks by; it is shown first.
OBJECTIVE_COLUMN = {"throughput": "tokens_per_s_per_gpu", "cost": "usd_per_million", "latency": "tpot_ms"}


def _sweep_inputs(p: Project) -> tuple:
    """What the sweep depends on: not the current layout, the pinned ones or the batch (the sweep
    tries every batch itself)."""
    return (p.cluster, p.model, p.workload.model_copy(update={"batch": "auto"}), p.serving, p.calibrations,
            p.explorer)


def no_pools_text(sw) -> str:
    """Why no disaggregated candidate is shown: none could be placed or costed (with the engine's
    most frequent reason), none runs, or none meets the targets (only when targets are set)."""
    wl = sw.project.workload
    if not sw.rows:
        why = max(sw.skipped.items(), key=lambda kv: kv[1])[0] if sw.skipped else "no split can be placed on these GPUs"
        return f"no pool split of {sw.combinations:,} tried can be costed: {why}"
    targets = [t for t in (f"TTFT ≤ {wl.ttft_ms:,.0f} ms" if wl.ttft_ms else "",
                           f"TPOT ≤ {wl.tpot_ms:,.1f} ms" if wl.tpot_ms else "") if t]
    if targets:
        return f"none of {len(sw.rows):,} pool splits × decode batches meets the targets ({', '.join(targets)})"
    rate = f" at {wl.load.rate_per_s:g} req/s" if wl.load.mode == "rate" and wl.load.rate_per_s else ""
    return f"all {len(sw.rows):,} pool splits × decode batches are saturated{rate}: lower the rate or add GPUs"
#: Below this width (px) of its dock the Explorer shows its table and the recommendation's reasons
#: as tabs (:meth:`ExplorerWidget._set_compact`).
COMPACT_BELOW_PX = 900
#: Height of the recommendation's reasons above the table (px), when they are not a tab.
REASONS_MAX_H = 96


class ExplorerWidget(QWidget):
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
        self.objective = QComboBox()
        for key, text in OBJECTIVE_TEXT.items():
            self.objective.addItem(text, key)
        self.objective.setToolTip("what the recommendation optimises")
        self.ttft = self._limit_box("TTFT limit in ms (0 = none)")
        self.tpot = self._limit_box("TPOT limit in ms (0 = none)")
        self.hide_unfit = QCheckBox("Hide unfit")
        self.pools_box = QCheckBox("Disaggregated pools")
        self.pools_box.setToolTip("also sweep every prefill/decode pool split of the cluster and plot them "
                                  "beside the layouts (diamonds; filled when they meet the targets)")
        self.pools_box.setChecked(self.doc.project.serving_mode.disaggregated)
        # the latency SLO as percentiles under load (the project's, saved and undoable)
        self.ttft_p99 = self._limit_box("p99 TTFT target in ms at the SLO's request rate (0 = none)")
        self.tpot_p99 = self._limit_box("p99 TPOT target in ms at the SLO's request rate (0 = none)")
        self.tpot_p99.setDecimals(1)
        self.slo_rate = QDoubleSpinBox()
        self.slo_rate.setRange(0, 1e7)
        self.slo_rate.setDecimals(2)
        self.slo_rate.setSingleStep(0.5)
        self.slo_rate.setSpecialValueText("load's")
        self.slo_rate.setSuffix(" req/s")
        self.slo_rate.setToolTip("request rate (all replicas, Poisson) the p99 targets hold at; "
                                 "\"load's\" = the workload's request rate")
        self.slo_rate.setMaximumWidth(110)
        self.slo_rate.setKeyboardTracking(False)
        self.slo_only = QCheckBox("Meets SLO only")
        self.slo_only.setToolTip("show only the layouts whose simulated p99s meet the SLO")
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("filter: tp8 pp2 …")
        self.filter.setClearButtonEnabled(True)
        self.filter.setMaximumWidth(170)
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
        # the targets and the SLO under load share one wrapping row ("SLO p99 …": the SLO under
        # load, its tooltips say so), packed in as few lines as the dock allows
        targets = FlowRow(
            group(QLabel("Objective"), self.objective), group(QLabel("TTFT ≤"), self.ttft),
            group(QLabel("TPOT ≤"), self.tpot), self.hide_unfit, self.pools_box, self.filter,
            group(QLabel("SLO p99 TTFT ≤"), self.ttft_p99),
            group(QLabel("p99 TPOT ≤"), self.tpot_p99), group(QLabel("at"), self.slo_rate), self.slo_only,
        )
        self.reasons = QTextBrowser()
        self.reasons.setObjectName("explorer-reasons")
        self.reasons.setMaximumHeight(REASONS_MAX_H)
        self.reasons.setOpenLinks(False)

        self.model = SweepTableModel(self)
        self.proxy = SweepFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(False)
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.verticalHeader().setVisible(False)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        hh.setResizeContentsPrecision(40)  # size columns from the first rows, not thousands
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
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.table, 1)
        row = QHBoxLayout()
        for b in (self.best_button, self.pin_button, self.apply_button, self.apply_pools_button):
            row.addWidget(b)
        row.addStretch(1)
        ll.addLayout(row)

        self.tabs = QTabWidget()
        pareto_tab = QWidget()
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
        self.tabs.addTab(pareto_tab, "Pareto")
        tl_tab = QWidget()
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
        self.tabs.addTab(tl_tab, "Timeline")
        self.multiples = SmallMultiples()
        self.tabs.addTab(self.multiples, "Small multiples")
        self.compare = CompareView()
        self.tabs.addTab(self.compare, "Compare")
        self.placement = PlacementView()
        self.tabs.addTab(self.placement, "Placement")
        self.engines = EnginesView()
        self.tabs.addTab(self.engines, "Engines")

        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        self._split, self._left = split, left
        self.compact = False  # the table is a tab beside the plots (a narrow dock: _set_compact)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.setSpacing(2)
        lay.addWidget(bar)
        lay.addWidget(targets)
        lay.addWidget(self.reasons)
        lay.addWidget(split, 1)

        self.objective.currentIndexChanged.connect(lambda _i: self._set_objective(self.objective.currentData()))
        self.ttft.valueChanged.connect(lambda v: self._set_target("TTFT target", ttft_ms=v or None))
        self.tpot.valueChanged.connect(lambda v: self._set_target("TPOT target", tpot_ms=v or None))
        self.ttft_p99.valueChanged.connect(lambda v: self._set_slo("p99 TTFT target", ttft_p99_ms=v or None))
        self.tpot_p99.valueChanged.connect(lambda v: self._set_slo("p99 TPOT target", tpot_p99_ms=v or None))
        self.slo_rate.valueChanged.connect(lambda v: self._set_slo("SLO request rate", slo_rate_per_s=v or None))
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

    @staticmethod
    def _limit_box(tip: str) -> QDoubleSpinBox:
        box = QDoubleSpinBox()
        box.setRange(0, 1e7)
        box.setDecimals(0)
        box.setSingleStep(10)
        box.setSpecialValueText("none")
        box.setSuffix(" ms")
        box.setToolTip(tip)
        box.setMaximumWidth(100)
        box.setKeyboardTracking(False)  # one project edit on Return / focus out, not per keystroke
        return box

    def _load_targets(self, p: Project) -> None:
        """Show the project's objective and targets (they are the project's, saved and undoable)."""
        ex = p.explorer
        for box, v in ((self.ttft, p.workload.ttft_ms), (self.tpot, p.workload.tpot_ms),
                       (self.ttft_p99, ex.ttft_p99_ms), (self.tpot_p99, ex.tpot_p99_ms),
                       (self.slo_rate, ex.slo_rate_per_s)):
            if box.value() != float(v or 0):
                box.blockSignals(True)
                box.setValue(float(v or 0))
                box.blockSignals(False)
        i = self.objective.findData(p.explorer.objective)
        if i != self.objective.currentIndex():
            self.objective.blockSignals(True)
            self.objective.setCurrentIndex(i)
            self.objective.blockSignals(False)

    def _set_objective(self, objective: str) -> None:
        p = self.doc.project
        if objective != p.explorer.objective:
            self.doc.apply(p.replace(explorer=p.explorer.replace(objective=objective)),
                           f"Objective: {OBJECTIVE_TEXT[objective]}", "explorer")

    def _set_target(self, text: str, **changes: float | None) -> None:
        self.doc.edit(text, "workload", lambda p: p.replace(workload=p.workload.replace(**changes)))

    def _set_slo(self, text: str, **changes: float | None) -> None:
        """Change the project's percentile SLO (one undo step, saved with the project)."""
        self.doc.edit(text, "explorer", lambda p: p.replace(explorer=p.explorer.replace(**changes)))

    def slo_targets(self) -> SloTargets | None:
        """The project's percentile SLO, or None; a target without a rate sets :attr:`slo_error`."""
        p = self.doc.project
        ex = p.explorer
        self.slo_error = ""
        try:
            return resolve_targets(p, ex.ttft_p99_ms, ex.tpot_p99_ms, ex.slo_rate_per_s,
                                   names=("p99 TTFT", "p99 TPOT", "the SLO's rate (at … req/s)"))
        except StudioError as exc:
            self.slo_error = exc.message
            return None

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
        self._show_reasons(result, slo, slo_error)
        self._dirty_tabs = {"multiples", "placement", "engines"}
        if self.model.recommended is not None:
            self.select_row(self.model.recommended)
        self._refresh_visible_tab()
        self.resultShown.emit(result)

    def _objective_column_first(self, objective: str, slo: bool = False) -> None:
        """Move the column the objective ranks by to the front, and with an SLO its four columns
        right after it (the SLO verdict, p99 TTFT, p99 TPOT, saturation rate).

        The header sizes its columns to their contents once, after the moves: in that mode every
        move measured every column again (0.5 s of the 0.8 s a sweep took to show)."""
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        try:
            self._move_columns(hh, objective, slo)
        finally:
            hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)

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

    def apply_selected(self) -> None:
        """Apply the selected row: a layout (:meth:`apply_row`) or a disaggregated candidate's pools
        (:meth:`apply_disagg`), one undo step either way."""
        k = self.selected_disagg()
        if k is not None:
            self.apply_disagg(k)
        else:
            self.apply_row(self.selected_row())

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

    def _on_project(self, project: Project, kind: str) -> None:
        self._load_targets(project)
        if _sweep_inputs(project) != self._inputs:
            self.schedule()
        self.refresh_compare()
        self._dirty_tabs.add("engines")  # the project's engine, version or fraction may have changed
        self._refresh_visible_tab()

    # ------------------------------------------------------------------ selection
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

    # ------------------------------------------------------------------ narrow docks
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

    # ------------------------------------------------------------------ tabs
    def _refresh_visible_tab(self) -> None:
        w = self.tabs.currentWidget()
        if w is self.multiples and "multiples" in self._dirty_tabs:
            self.refresh_multiples()
        elif w is self.placement and "placement" in self._dirty_tabs:
            self.refresh_placement()
        elif w is self.engines and "engines" in self._dirty_tabs:
            self.refresh_engines()

    def refresh_multiples(self) -> None:
        """Timelines of every TP × PP factorization of the cluster (DP = 1)."""
        self._dirty_tabs.discard("multiples")
        res = self.result
        if res is None:
            self.multiples.set_plans([])
            return
        plans = []
        for i in factorizations(res):
            if res.columns["fits"][i]:
                plans.append((res.label(i), res.plan(i)))
        self.multiples.set_plans(plans)

    def refresh_placement(self) -> None:
        """Compare placements of the selected layout (else the project's)."""
        self._dirty_tabs.discard("placement")
        row = self.selected_row()
        layout = self.result.layout(row) if (self.result is not None and row is not None) else self.doc.project.layout
        project = self.doc.project
        if self.result is not None and row is not None:
            wl = project.workload.model_copy(update={"batch": int(self.result.columns["batch"][row])})
            project = project.model_copy(update={"workload": wl})
        try:
            self.placement.set_comparison(compare_placements(project, layout))
        except StudioError as exc:
            self.placement.set_comparison(None, f"Placements of {layout.label} cannot be compared: {exc.message}")

    def refresh_engines(self) -> None:
        """The selected layout (else the project's) on each serving engine
        (:func:`studio.gui.explorer.engines_tab.refresh_engines`)."""
        from studio.gui.explorer.engines_tab import refresh_engines

        self._dirty_tabs.discard("engines")
        row = self.selected_row()
        layout = self.result.layout(row) if (self.result is not None and row is not None) else self.doc.project.layout
        refresh_engines(self.engines, self.doc.project, layout)

    def serve_with(self, engine: str) -> bool:
        """Make ``engine`` the project's serving engine (one undo step)."""
        from studio.gui.explorer.engines_tab import serve_with

        return serve_with(self.doc, engine)

    # ------------------------------------------------------------------ pin / apply
    def pinned_plans(self) -> list[tuple[str, PlanResult]]:
        """(title, plan) of every pinned layout the engine plans, at the batch it was pinned with
        (:func:`studio.service.explore.pinned.pinned_plans`, as the report lists them)."""
        return [(pin.title, pin.plan) for pin in pinned_plans(self.doc.project) if pin.plan is not None]

    def refresh_compare(self) -> None:
        pairs = self.pinned_plans()
        self.compare.set_pinned([t for t, _ in pairs], [p for _, p in pairs])
        self.tabs.setTabText(self.tabs.indexOf(self.compare), f"Compare ({len(pairs)})")

    def pin_row(self, row: int | None) -> bool:
        """Pin sweep row ``row`` (one undo step). Returns whether it was pinned."""
        if row is None or self.result is None:
            return False
        lay = self.result.layout(row)
        p = self.doc.project
        if lay in p.pinned:
            self.doc.message.emit(f"{lay.label} is already pinned")
            return False
        if len(p.pinned) >= MAX_PINNED:
            self.doc.message.emit(f"at most {MAX_PINNED} layouts can be pinned; unpin one first")
            return False
        pinned = p.with_pin(lay, int(self.result.columns["batch"][row]))
        problem = pinned_problem(pinned, len(pinned.pinned) - 1)
        if problem is not None:  # the file could not be opened again with it
            self.doc.message.emit(f"{lay.label} cannot be pinned: {problem[1]}")
            return False
        self.doc.apply(pinned, f"Pin layout {lay.label}", "pinned")
        self.tabs.setCurrentWidget(self.compare)
        return True

    def unpin(self, k: int) -> None:
        p = self.doc.project
        if 0 <= k < len(p.pinned):
            lay = p.pinned[k]
            self.doc.apply(p.replace(pinned=p.pinned[:k] + p.pinned[k + 1:]), f"Unpin layout {lay.label}", "pinned")

    def apply_layout(self, layout: Layout, text: str) -> None:
        """Make ``layout`` the project's current layout (one undo step)."""
        self.doc.apply(self.doc.project.replace(layout=layout), text, "layout")

    def apply_row(self, row: int | None) -> None:
        """Apply sweep row ``row`` as shown: its layout, micro-batches and batch (one undo step)."""
        if row is None or self.result is None:
            return
        lay, batch = self.result.layout(row), int(self.result.columns["batch"][row])
        self.doc.apply(with_row(self.doc.project, lay, batch),
                       f"Apply layout {lay.label} M={lay.micro_batches} batch {batch}", "layout")

    def apply_pinned(self, k: int) -> None:
        """Apply pinned layout ``k``, with the batch it was pinned at when known (one undo step)."""
        p = self.doc.project
        if not 0 <= k < len(p.pinned):
            return
        lay = p.pinned[k]
        batch = p.pinned_batch(lay)
        if batch is None:
            self.apply_layout(lay, f"Apply layout {lay.label}")
        else:
            self.doc.apply(with_row(p, lay, batch), f"Apply layout {lay.label} M={lay.micro_batches} batch {batch}",
                           "layout")

    def apply_placement(self, option: PlacementOption) -> None:
        comp = self.placement.comparison
        if comp is None:
            return
        lay = comp.layout.replace(placement=option.placement)
        self.apply_layout(lay, f"Apply placement '{option.name}' to {lay.label}")

    def index_of_row(self, row: int) -> QModelIndex:
        """Proxy index of sweep row ``row`` (tests)."""
        m = self.model.model_row(row)
        return self.proxy.mapFromSource(self.model.index(m, 0)) if m is not None else QModelIndex()


def slo_line(slo: SloReport) -> str:
    """The reasons' first line under an SLO: the best layout meeting it, with its figures, or none."""
    head = f"<b>Best meeting the SLO ({html.escape(slo.targets.text)}):</b> "
    if slo.best is None:
        return head + (f"none of the {len(slo.checked)} layouts checked (lower the rate, raise the targets or "
                       "add GPUs)")
    e = slo.checked[slo.best]
    return head + html.escape(f"{e.layout} M={e.micro_batches}: p99 TTFT {e.ttft_p99_ms:,.0f} ms, p99 TPOT "
                              f"{e.tpot_p99_ms:,.1f} ms, saturation {e.saturation_rate_per_s:.3g} req/s")
