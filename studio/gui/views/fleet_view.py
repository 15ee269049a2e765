"""The "Fleet" view (a tab beside the timeline, the Explorer and the Load view): the replicas of the
current layout a day of traffic needs within a p99 SLO, and what they cost and draw.

Top: the traffic curve (req/s) over the capacity of the replicas each hour needs, stacked as the
reserved base and the burst above it (each replica holds the rate one replica sustains within the
SLO), with a mark per slot — green where the planned replicas meet the SLO. Below: power (kW) and
cost ($ per hour) over the day. The controls pick the traffic (a bundled curve, rescaled to a peak),
the SLO and the headroom; the line under them gives cost per day, per month and per million tokens,
kWh per day, joules per output token and kg CO2e per day.

The plan (:func:`studio.service.fleet.capacity_plan`: a request-simulation bisection, then the
slots) runs in a worker thread through the application's scheduler, like the Load view's curve: on
first show, after the edits pause (:data:`DEBOUNCE_MS`) while the view is on screen, and at once
when a control changes; a plan for an older project or older settings is dropped.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDockWidget,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.core.project import Project
from studio.core.settings.fleet import FleetSettings
from studio.gui.document import ProjectDocument
from studio.gui.toolkit.plain_plot import plain_plot
from studio.gui.worker import ScheduledWork

TRAFFIC_COLOR = "#1c1c1c"
RESERVED_COLOR = "#4c6ef5"
BURST_COLOR = "#91a7ff"
POWER_COLOR = "#e8590c"
COST_COLOR = "#2b8a3e"
MISS_COLOR = "#c92a2a"
#: Quiet time after the last result before the plan of an edited project starts (ms).
DEBOUNCE_MS = 300
#: Requests simulated per replica at each rate the bisection tries (the CLI's default is 400).
REQUESTS = 300


PlanFn = Callable[[Project, FleetSettings], object]
RANK_HEADERS = ("replica", "GPUs", "req/s each", "peak replicas", "$/day", "$/M tokens", "kWh/day", "J/token")


def _options(settings: FleetSettings):
    from studio.service.fleet import FleetOptions

    return FleetOptions(
        settings.ttft_p99_ms, settings.tpot_p99_ms, headroom=settings.headroom, requests=REQUESTS,
        storage_gbps=settings.storage_gbps, engine_start_s=settings.engine_start_s,
        graph_capture_s=settings.graph_capture_s, reserved_usd_per_gpu_hour=settings.reserved_usd_per_gpu_hour,
        on_demand_usd_per_gpu_hour=settings.on_demand_usd_per_gpu_hour,
        spot_usd_per_gpu_hour=settings.spot_usd_per_gpu_hour, burst=settings.burst,
        spot_preemptions_per_hour=settings.spot_preemptions_per_hour, pue=settings.pue,
        grid_g_co2e_per_kwh=settings.grid_g_co2e_per_kwh,
    )


def _traffic(settings: FleetSettings):
    from studio.io.fleet_presets import load_traffic

    traffic = load_traffic(settings.traffic)
    return traffic if settings.peak_per_s is None else traffic.scaled_to_peak(settings.peak_per_s)


def default_ranking(project: Project, settings: FleetSettings, job) -> object:
    """The sweep's layouts (the Explorer's), planned for ``settings`` and ranked by cost per day."""
    from studio.service.fleet import rank_layouts, sweep_layouts

    return rank_layouts(project, _traffic(settings), _options(settings), sweep_layouts(project), progress=job.progress)


def default_plan(project: Project, settings: FleetSettings) -> object:
    """:func:`studio.service.fleet.capacity_plan` of the project's layout for ``settings``."""
    from studio.service.fleet import capacity_plan

    return capacity_plan(project, _traffic(settings), _options(settings))


def _module_plan() -> PlanFn:
    """:func:`default_plan` as this module holds it now (a test may stand in for it)."""
    return default_plan


def _module_ranking():
    return default_ranking


def _plot(y_label: str, hours_a_tick: int = 3) -> pg.PlotWidget:
    w = plain_plot("hour of day", y_label)
    w.getPlotItem().getAxis("bottom").setTicks([[(h, f"{h:02d}") for h in range(0, 25, hours_a_tick)]])
    w.setXRange(0, 24, padding=0.02)  # always the whole day (x auto-range is off once it is set)
    return w


def _key(*entries: tuple[str, str, str]) -> str:
    return "&nbsp;&nbsp;".join(f'<span style="color:{c}">{m}</span>&nbsp;{t}' for m, c, t in entries)


def _spin(lo: float, hi: float, value: float, decimals: int, suffix: str) -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setDecimals(decimals)
    s.setValue(value)
    s.setSuffix(suffix)
    s.setKeyboardTracking(False)  # one plan per value typed, not per keystroke
    return s


#: Optional figures of the second row: (field, label, lowest valid, highest, decimals, suffix, tooltip).
#: Each box's minimum, one step below the lowest valid value, reads "preset" and means the default
#: (``None`` in :class:`FleetSettings`).
OPTIONAL_FIELDS = (
    ("storage_gbps", "weights at", 0.01, 1e4, 2, " GB/s", "weight-loading bandwidth of a new replica "
     "(preset: presets/fleet.json's cold load)"),
    ("on_demand_usd_per_gpu_hour", "on-demand", 0.0, 1e4, 2, " $/GPU-h", "on-demand GPU-hour price (preset: the GPU's)"),
    ("reserved_usd_per_gpu_hour", "reserved", 0.0, 1e4, 2, " $/GPU-h", "reserved GPU-hour price (preset: on-demand)"),
    ("pue", "PUE", 1.0, 10.0, 2, "", "facility power usage effectiveness (preset: presets/power.json)"),
    ("grid_g_co2e_per_kwh", "grid", 0.0, 1e5, 0, " g/kWh", "grid carbon intensity, g CO2e per kWh "
     "(preset: presets/power.json)"),
)


def _optional_spin(lo: float, hi: float, decimals: int, suffix: str, tip: str) -> QDoubleSpinBox:
    s = _spin(lo - 10.0 ** -decimals, hi, lo - 10.0 ** -decimals, decimals, suffix)
    s.setSpecialValueText("preset")
    s.setToolTip(tip)
    return s


class FleetView(QWidget):
    """Replicas, cost and power of the current layout over a day of traffic.

    Signals
    -------
    planReady(object, int)
        A plan was drawn for the given document revision.
    """

    planReady = Signal(object, int)
    rankingReady = Signal(object)

    def __init__(self, doc: ProjectDocument, plan: PlanFn | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.result: object | None = None
        self.plan_revision = -1
        self._asked: tuple[int, FleetSettings] | None = None
        self._dock: QDockWidget | None = None
        def work(payload: tuple[Project, FleetSettings], _job: object) -> object:
            return (plan or _module_plan())(*payload)

        self.jobs = ScheduledWork(work, self._payload, debounce_ms=DEBOUNCE_MS,
                                  name="the fleet plan", parent=self)
        self.jobs.responded.connect(lambda r: self._on_plan(r.result, r.error))

        from studio.io.fleet_presets import traffic_presets

        self.traffic = QComboBox()
        for p in traffic_presets().values():
            self.traffic.addItem(p.name, p.id)
            self.traffic.setItemData(self.traffic.count() - 1, f"{p.description} {p.source}", 3)  # tooltip role
        s = doc.project.fleet
        self.traffic.setCurrentIndex(max(0, self.traffic.findData(s.traffic)))
        self.peak = _spin(0.01, 1e6, s.peak_per_s if s.peak_per_s is not None else 0.01, 2, " req/s")
        self.ttft = _spin(1.0, 1e7, s.ttft_p99_ms, 0, " ms")
        self.tpot = _spin(0.1, 1e5, s.tpot_p99_ms, 1, " ms")
        self.headroom = _spin(0.0, 300.0, s.headroom * 100, 0, " %")
        form = QFormLayout()
        # three short rows, so the view fits between the side docks at 1366x768 without widening
        # the window: the traffic, the SLO (with the ranking button), then the optional inputs
        self.traffic.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.traffic.setMinimumContentsLength(24)
        row0 = QHBoxLayout()
        for label, w in (("traffic", self.traffic), ("peak", self.peak), ("headroom", self.headroom)):
            row0.addWidget(QLabel(label))
            row0.addWidget(w)
        row0.addStretch(1)
        form.addRow(row0)
        row = QHBoxLayout()
        for label, w in (("p99 TTFT ≤", self.ttft), ("p99 TPOT ≤", self.tpot)):
            row.addWidget(QLabel(label))
            row.addWidget(w)
        row.addStretch(1)
        form.addRow(row)
        self.optional: dict[str, QDoubleSpinBox] = {}
        for start in range(0, len(OPTIONAL_FIELDS), 3):  # three optional inputs a row
            more = QHBoxLayout()
            for name, label, lo, hi, decimals, suffix, tip in OPTIONAL_FIELDS[start:start + 3]:
                self.optional[name] = _optional_spin(lo, hi, decimals, suffix, tip)
                more.addWidget(QLabel(label))
                more.addWidget(self.optional[name])
            more.addStretch(1)
            form.addRow(more)
        self._show_settings(s)
        self.traffic.currentIndexChanged.connect(self._on_settings)
        for spin in (self.peak, self.ttft, self.tpot, self.headroom, *self.optional.values()):
            spin.valueChanged.connect(self._on_settings)
        doc.projectChanged.connect(lambda p, _kind: self._show_settings(p.fleet))

        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.busy = QLabel("planning the fleet…")
        self.busy.setObjectName("hint")
        self.busy.hide()
        self.demand = _plot("req/s")
        # the key in two lines: in one it is wider than the plot at 1366x768 and pushes the plot out
        self.demand.setTitle(_key(("━", TRAFFIC_COLOR, "traffic"), ("█", RESERVED_COLOR, "reserved replicas")) + "<br>"
                             + _key(("█", BURST_COLOR, "burst replicas"), ("●", COST_COLOR, "SLO met"),
                                    ("●", MISS_COLOR, "missed")), size="9pt")
        self.reserved_bars = pg.BarGraphItem(x=[], height=[], width=1.0, brush=RESERVED_COLOR, pen=pg.mkPen("w"))
        self.burst_bars = pg.BarGraphItem(x=[], height=[], y0=[], width=1.0, brush=BURST_COLOR, pen=pg.mkPen("w"))
        self.demand.addItem(self.reserved_bars)
        self.demand.addItem(self.burst_bars)
        self.traffic_line = self.demand.plot([], [], pen=pg.mkPen(TRAFFIC_COLOR, width=2), stepMode="center")
        self.slo_marks = pg.ScatterPlotItem(size=7, pen=pg.mkPen(None))
        self.demand.addItem(self.slo_marks)
        self.power = _plot("kW", 6)  # the narrow plots: a tick every 6 h keeps the labels apart
        self.power.setTitle(_key(("━", POWER_COLOR, "GPU power")), size="9pt")
        self.power_line = self.power.plot([], [], pen=pg.mkPen(POWER_COLOR, width=2), stepMode="center")
        self.cost = _plot("$ per hour", 6)
        self.cost.setTitle(_key(("━", COST_COLOR, "cost")), size="9pt")
        self.cost_line = self.cost.plot([], [], pen=pg.mkPen(COST_COLOR, width=2), stepMode="center")

        # the Explorer's layouts ranked by cost per day at the SLO (on request: seconds of simulation)
        self.rank_button = QPushButton("Rank layouts by cost per day")
        self.rank_button.setToolTip("plan the day for every replica layout of the cluster's sweep (the Explorer's) "
                                    "and order them by cost per day at this SLO; double-click a row to apply it")
        self.rank_button.clicked.connect(self.rank)
        row.insertWidget(row.count() - 1, self.rank_button)
        self.ranking_table = QTableWidget(0, len(RANK_HEADERS))
        self.ranking_table.setHorizontalHeaderLabels(list(RANK_HEADERS))
        self.ranking_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.ranking_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.ranking_table.cellDoubleClicked.connect(self._apply_row)
        self.ranking_table.hide()
        self.ranking: list | None = None
        self._rank_key: tuple[int, FleetSettings] | None = None
        self.rank_jobs = ScheduledWork(lambda payload, job: (_module_ranking())(*payload, job),
                                       self._payload, name="the fleet ranking", parent=self)
        self.rank_jobs.responded.connect(lambda r: self._on_ranking(r.result, r.error))

        box = QVBoxLayout(self)
        box.addLayout(form)
        head = QHBoxLayout()
        head.addWidget(self.status, 1)
        head.addWidget(self.busy)
        box.addLayout(head)
        plots = QHBoxLayout()
        plots.addWidget(self.demand, 2)
        plots.addWidget(self.power, 1)
        plots.addWidget(self.cost, 1)
        box.addLayout(plots, 1)
        box.addWidget(self.ranking_table)
        doc.resultReady.connect(self._on_result)
        doc.errorChanged.connect(self._on_error)

    # ------------------------------------------------------------------ settings
    @property
    def settings(self) -> FleetSettings:
        """The project's fleet settings (the controls write them as undo steps)."""
        return self.doc.project.fleet

    def controls_settings(self) -> FleetSettings:
        """What the controls show, as settings (the project's, with the controls' values)."""
        optional = {name: (None if box.value() == box.minimum() else box.value()) for name, box in self.optional.items()}
        return self.doc.project.fleet.replace(
            traffic=str(self.traffic.currentData()), peak_per_s=self.peak.value(), ttft_p99_ms=self.ttft.value(),
            tpot_p99_ms=self.tpot.value(), headroom=self.headroom.value() / 100.0, **optional)

    def _show_settings(self, s: FleetSettings) -> None:
        """Set the controls to ``s`` without treating it as an edit (a file opened, an undo)."""
        boxes = (self.traffic, self.peak, self.ttft, self.tpot, self.headroom, *self.optional.values())
        for w in boxes:
            w.blockSignals(True)
        try:
            self.traffic.setCurrentIndex(max(0, self.traffic.findData(s.traffic)))
            if s.peak_per_s is not None:
                self.peak.setValue(s.peak_per_s)
            self.ttft.setValue(s.ttft_p99_ms)
            self.tpot.setValue(s.tpot_p99_ms)
            self.headroom.setValue(s.headroom * 100.0)
            for name, box in self.optional.items():
                value = getattr(s, name)
                box.setValue(box.minimum() if value is None else value)
        finally:
            for w in boxes:
                w.blockSignals(False)

    def _payload(self) -> tuple[Project, FleetSettings]:
        return self.doc.project, self.settings

    def _on_settings(self) -> None:
        """A control changed: the project takes the new settings (one undo step, saved with it)."""
        new = self.controls_settings()
        if new != self.doc.project.fleet:
            self.doc.apply(self.doc.project.replace(fleet=new), "Fleet settings", "fleet")
        if self.seen():
            self.refresh()

    # ------------------------------------------------------------------ compute
    def _on_result(self, _result: object, _revision: int) -> None:
        if self.seen():
            self.refresh(debounced=True)

    def seen(self) -> bool:
        """On screen: shown, and not a dock tab behind another one."""
        return self.isVisible() and not self.visibleRegion().isEmpty()

    def follow_dock(self, dock: QDockWidget) -> None:
        """Plan when ``dock``'s tab is raised; drop a waiting plan when another tab covers it."""
        self._dock = dock
        dock.visibilityChanged.connect(lambda shown: self._on_shown() if shown else self._on_hidden())
        dock.topLevelChanged.connect(lambda _floating: QTimer.singleShot(0, self.refresh_if_seen))

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if self._dock is None:
            self._on_shown()

    def hideEvent(self, event: QHideEvent) -> None:  # noqa: N802 - Qt API
        super().hideEvent(event)
        self._on_hidden()

    def _on_shown(self) -> None:
        if self.doc.result_is_current and self._asked != (self.doc.revision, self.settings):
            self.refresh()

    def refresh_if_seen(self) -> None:
        """Plan the current project now if the view is on screen and has no plan for it."""
        if self.seen():
            self._on_shown()

    def _on_hidden(self) -> None:
        if self.jobs.pending:
            self.jobs.timer.stop()
            self._asked = None
            self.busy.hide()

    def refresh(self, debounced: bool = False) -> None:
        """Plan the current project and settings in the worker (no-op if already asked)."""
        key = (self.doc.revision, self.settings)
        if self._asked == key:
            return
        self._asked = key
        self.busy.show()
        if debounced:
            self.jobs.schedule()
        else:
            self.jobs.start()

    def wait_idle(self, msecs: int = 30_000) -> bool:
        """Block until the plan (and a ranking) being computed is done (tests, shutdown)."""
        return self.jobs.wait_idle(msecs) and self.rank_jobs.wait_idle(msecs)

    # ------------------------------------------------------------------ ranking
    def rank(self) -> None:
        """Plan every layout of the sweep for the current settings, cheapest per day first."""
        self._rank_key = (self.doc.revision, self.settings)
        self.rank_button.setEnabled(False)
        self.rank_button.setText("Ranking the Explorer's layouts…")
        self.rank_jobs.start()

    def _on_ranking(self, ranked: object | None, error: str) -> None:
        self.rank_button.setEnabled(True)
        self.rank_button.setText("Rank layouts by cost per day")
        if self._rank_key != (self.doc.revision, self.settings):
            return  # the project or the settings changed meanwhile: rank again to see the new order
        if ranked is None:
            self.status.setText(f"No ranking: {error}")
            return
        self.ranking = list(ranked)  # type: ignore[call-overload]
        t = self.ranking_table
        t.setRowCount(len(self.ranking))
        for i, r in enumerate(self.ranking):
            if r.result is None:
                cells = [r.layout.replace(dp=1).label, "-", "-", "-", "-", "-", "-", r.reason]
            else:
                p = r.result.plan
                cells = [r.layout.replace(dp=1).label, str(p.gpus_per_replica), f"{r.result.capacity.rate_per_s:.3g}",
                         str(int(p.replicas.max())), f"${p.usd_per_day:,.0f}", f"${p.usd_per_million_output_tokens:,.2f}",
                         f"{p.kwh_per_day:,.0f}", f"{p.j_per_output_token:.3g}"]
            for j, text in enumerate(cells[: len(RANK_HEADERS)]):
                t.setItem(i, j, QTableWidgetItem(text))
            first = t.item(i, 0)
            if r.result is None and first is not None:
                first.setToolTip(r.reason)
        t.resizeColumnsToContents()
        t.show()
        self.rankingReady.emit(self.ranking)

    def _apply_row(self, row: int, _column: int) -> None:
        """Double-click: the project takes that row's layout (one undo step)."""
        if self.ranking is None or not 0 <= row < len(self.ranking) or self.ranking[row].result is None:
            return
        layout = self.ranking[row].layout
        p = self.doc.project
        if layout != p.layout:
            self.doc.apply(p.replace(layout=layout), f"Layout {layout.label} (cheapest fleet)", "layout")

    def _on_plan(self, result: object | None, error: str) -> None:
        if self._asked != (self.doc.revision, self.settings):
            return  # the project or the controls changed since it was asked for
        self.busy.hide()
        if result is None:
            self._clear(f"No fleet plan: {error}")
            return
        self.result = result
        self.plan_revision = self.doc.revision
        self._draw(result)
        self.planReady.emit(result, self.doc.revision)

    def _on_error(self, message: str) -> None:
        if message:
            self._clear(f"No fleet plan: {message}")

    # ------------------------------------------------------------------ draw
    def _clear(self, text: str) -> None:
        self.result = None
        self.reserved_bars.setOpts(x=[], height=[])
        self.burst_bars.setOpts(x=[], height=[], y0=[])
        for item in (self.traffic_line, self.power_line, self.cost_line):
            item.setData([], [])
        self.slo_marks.setData([], [])
        self.status.setText(text)

    def _draw(self, result) -> None:
        p = result.plan
        tr = p.traffic
        hours = tr.starts_s / 3600.0
        width = tr.slot_s / 3600.0
        mid = hours + width / 2
        edges = np.append(hours, 24.0)
        r = p.replica_rate_per_s
        base = np.minimum(p.replicas, p.reserved_replicas) * r
        self.reserved_bars.setOpts(x=mid, height=base, width=width)
        self.burst_bars.setOpts(x=mid, y0=base, height=p.replicas * r - base, width=width)
        self.traffic_line.setData(edges, tr.rates_per_s)
        top = float((p.replicas * r).max()) * 1.04
        ok = p.slo_met
        self.slo_marks.setData(mid, np.full(mid.size, top),
                               brush=[pg.mkBrush(COST_COLOR if m else MISS_COLOR) for m in ok])
        self.power_line.setData(edges, p.watts / 1e3)
        price = p.pricing.burst_usd_per_gpu_hour
        reserved = np.minimum(p.replicas, p.reserved_replicas) * p.gpus_per_replica * p.pricing.reserved_usd_per_gpu_hour
        burst = np.maximum(p.replicas - p.reserved_replicas, 0) * p.gpus_per_replica * price
        self.cost_line.setData(edges, reserved + burst)
        self.status.setText(summary_text(result))


def summary_text(result) -> str:
    """One paragraph: the replica, the fleet's peak, cost, energy, emissions and the SLO per slot."""
    p, c = result.plan, result.capacity
    missed = int((~p.slo_met).sum())
    slo = "SLO met in every slot" if missed == 0 else f"SLO MISSED in {missed} slot{'s' if missed != 1 else ''}"
    return (f"One {result.layout.replace(dp=1).label} replica ({p.gpus_per_replica} GPUs) holds {c.rate_per_s:.3g} req/s "
            f"within the SLO; peak {int(p.replicas.max())} replicas ({int(p.gpus.max())} GPUs), ready in "
            f"{p.ready.total_s:,.0f} s. ${p.usd_per_day:,.0f}/day, ${p.usd_per_day * 365.25 / 12:,.0f}/month, "
            f"${p.usd_per_million_output_tokens:,.2f} per million output tokens; {p.kwh_per_day:,.0f} kWh/day "
            f"({p.j_per_output_token:.3g} J per output token), {p.kg_co2e_per_day:,.0f} kg CO2e/day. {slo}.")
