"""The Explorer's objective, latency targets and percentile SLO: the project's own (saved and
undoable); the boxes show them and every change is one undo step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLabel, QLineEdit, QWidget

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.gui.toolkit.flow_layout import FlowRow, group
from studio.service.slo import SloTargets, resolve_targets

if TYPE_CHECKING:
    from studio.gui.document import ProjectDocument

    _ExplorerBase = QWidget
else:
    _ExplorerBase = object

OBJECTIVE_TEXT = {
    "throughput": "Max throughput per GPU",
    "cost": "Min $ per M tokens",
    "latency": "Min latency",
}


class TargetControls(_ExplorerBase):
    """Mixin of :class:`studio.gui.explorer.widget.ExplorerWidget`: its objective, target and SLO boxes."""

    doc: ProjectDocument
    objective: QComboBox
    ttft: QDoubleSpinBox
    tpot: QDoubleSpinBox
    ttft_p99: QDoubleSpinBox
    tpot_p99: QDoubleSpinBox
    slo_rate: QDoubleSpinBox
    slo_only: QCheckBox
    hide_unfit: QCheckBox
    pools_box: QCheckBox
    filter: QLineEdit
    slo_error: str

    def _build_targets(self) -> FlowRow:
        """The row of the objective, the targets, the filters and the SLO under load (wrapping)."""
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
        self.objective.currentIndexChanged.connect(lambda _i: self._set_objective(self.objective.currentData()))
        self.ttft.valueChanged.connect(lambda v: self._set_target("TTFT target", ttft_ms=v or None))
        self.tpot.valueChanged.connect(lambda v: self._set_target("TPOT target", tpot_ms=v or None))
        self.ttft_p99.valueChanged.connect(lambda v: self._set_slo("p99 TTFT target", ttft_p99_ms=v or None))
        self.tpot_p99.valueChanged.connect(lambda v: self._set_slo("p99 TPOT target", tpot_p99_ms=v or None))
        self.slo_rate.valueChanged.connect(lambda v: self._set_slo("SLO request rate", slo_rate_per_s=v or None))
        # the targets and the SLO under load share one wrapping row ("SLO p99 …": the SLO under
        # load, its tooltips say so), packed in as few lines as the dock allows
        return FlowRow(
            group(QLabel("Objective"), self.objective), group(QLabel("TTFT ≤"), self.ttft),
            group(QLabel("TPOT ≤"), self.tpot), self.hide_unfit, self.pools_box, self.filter,
            group(QLabel("SLO p99 TTFT ≤"), self.ttft_p99),
            group(QLabel("p99 TPOT ≤"), self.tpot_p99), group(QLabel("at"), self.slo_rate), self.slo_only,
        )

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
