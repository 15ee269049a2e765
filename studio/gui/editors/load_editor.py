"""Load editor (in the model & workload panel): how the plan is served — a closed loop of users, a
request rate (Poisson or evenly spaced) or an offline batch — the number of requests and the
scheduler's token budget. Every change is one undo step on the document (``kind`` "workload" or
"serving"), like the other workload edits."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QStackedWidget,
    QWidget,
)

from studio.core.project import Project
from studio.core.workload import MAX_REQUESTS
from studio.gui.document import ProjectDocument

#: (label, Load.mode) in the order of the mode box.
MODES = (
    ("Users (closed loop)", "concurrency"),
    ("Request rate (open loop)", "rate"),
    ("Offline batch (all at t = 0)", "offline"),
)
ARRIVALS = (("Poisson", "poisson"), ("Evenly spaced", "constant"))
#: Rate the editor proposes when the user switches to a rate and the project has none yet.
DEFAULT_RATE = 1.0


class LoadEditor(QGroupBox):
    """Edits ``project.workload.load`` and ``project.serving.max_num_batched_tokens``."""

    def __init__(self, doc: ProjectDocument, parent: QWidget | None = None) -> None:
        super().__init__("Load", parent)
        self.doc = doc
        self._updating = False
        self.mode = QComboBox()
        for label, mode in MODES:
            self.mode.addItem(label, mode)
        self.mode.setToolTip("How requests arrive: the figures follow this load (see docs/load.md)")
        self.rate = QDoubleSpinBox()
        self.rate.setRange(0.001, 1e7)
        self.rate.setDecimals(3)
        self.rate.setSuffix(" req/s")
        self.rate.setKeyboardTracking(False)
        self.rate.setToolTip("Requests per second over all replicas (vLLM bench serve --request-rate)")
        self.arrival = QComboBox()
        for label, value in ARRIVALS:
            self.arrival.addItem(label, value)
        self.users = QSpinBox()
        self.users.setRange(0, 1_000_000)
        self.users.setSpecialValueText("the plan's batch")
        self.users.setGroupSeparatorShown(True)
        self.users.setKeyboardTracking(False)
        self.users.setToolTip("Users over all replicas, each sending its next request when one ends "
                              "(GenAI-Perf --concurrency)")
        self.requests = QSpinBox()
        self.requests.setRange(1, MAX_REQUESTS)
        self.requests.setGroupSeparatorShown(True)
        self.requests.setKeyboardTracking(False)
        self.requests.setToolTip("Requests simulated for percentiles (and queued at t = 0 offline)")
        self.budget = QSpinBox()
        self.budget.setRange(0, 10_000_000)
        self.budget.setSpecialValueText("engine default")
        self.budget.setSuffix(" tokens")
        self.budget.setGroupSeparatorShown(True)
        self.budget.setKeyboardTracking(False)
        self.budget.setToolTip("Token budget of one scheduler iteration (vLLM max_num_batched_tokens, "
                               "TensorRT-LLM max_num_tokens); at least 16")
        self.lengths = QComboBox()
        self.lengths.setToolTip("Request lengths: fixed at ISL/OSL, or drawn from a bundled workload "
                                "(presets/workloads; `layout-studio presets workloads`)")
        self._fill_lengths()
        # a long workload name would widen the whole Plan dock (and squeeze the canvas) when the
        # Load section opens: the box shows ~14 characters, its list the whole names
        self.lengths.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.lengths.setMinimumContentsLength(14)
        self.lengths.view().setMinimumWidth(self.lengths.view().sizeHintForColumn(0) + 24)
        self.summary = QLabel("")
        self.summary.setObjectName("hint")
        # one line that never widens the panel; the note and the definition are in its tooltip
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        # one row shows what the mode needs: the rate and its arrivals, the users, or nothing
        rate_row = QWidget()
        row = QHBoxLayout(rate_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.rate, 1)
        row.addWidget(self.arrival)
        self.offline_note = QLabel("all requests queued at t = 0")
        self.offline_note.setObjectName("hint")
        self.driver = QStackedWidget()
        for page in (self.users, rate_row, self.offline_note):
            self.driver.addWidget(page)
        self.driver.setSizePolicy(self.driver.sizePolicy().horizontalPolicy(), self.rate.sizePolicy().verticalPolicy())
        form = QFormLayout(self)
        form.addRow("Mode", self.mode)
        form.addRow("Users", self.driver)
        form.addRow("Requests", self.requests)
        form.addRow("Lengths", self.lengths)
        form.addRow("Token budget", self.budget)
        form.addRow(self.summary)
        self._driver_label = cast(QLabel, form.labelForField(self.driver))
        self._lengths_of: tuple | None = None  # the load's length distributions the Lengths box shows
        self.refresh(doc.project)
        doc.projectChanged.connect(lambda p, _k: self.refresh(p))
        doc.resultReady.connect(self._on_result)
        doc.errorChanged.connect(self._on_error)
        self.mode.currentIndexChanged.connect(self._mode_changed)
        self.rate.valueChanged.connect(lambda v: self._load("Request rate", rate_per_s=v))
        self.arrival.currentIndexChanged.connect(
            lambda _i: self._load("Arrivals", arrival=self.arrival.currentData()))
        self.users.valueChanged.connect(lambda v: self._load("Users", concurrency=v or None))
        self.requests.valueChanged.connect(lambda v: self._load("Requests", num_requests=v))
        self.lengths.activated.connect(lambda _i: self._lengths_chosen())
        self.budget.valueChanged.connect(lambda v: self._edit(
            "Token budget", "serving",
            lambda p: p.replace(serving=p.serving.replace(max_num_batched_tokens=v or None))))

    def refresh(self, p: Project) -> None:
        """Show ``p``'s load without emitting edits."""
        self._updating = True
        try:
            ld = p.workload.load
            self.mode.setCurrentIndex(max(0, self.mode.findData(ld.mode)))
            if ld.rate_per_s is not None:
                self.rate.setValue(ld.rate_per_s)
            self.arrival.setCurrentIndex(max(0, self.arrival.findData(ld.arrival)))
            self.users.setValue(ld.concurrency or 0)
            self.requests.setValue(ld.num_requests)
            self.budget.setValue(p.serving.max_num_batched_tokens or 0)
            self._show_lengths(p)
            self._enable(ld.mode)
        finally:
            self._updating = False

    def _fill_lengths(self) -> None:
        from studio.io.workloads import workload_presets

        self.lengths.addItem("fixed at ISL / OSL", None)
        for wid, w in workload_presets().items():
            self.lengths.addItem(w.name, wid)
            self.lengths.setItemData(self.lengths.count() - 1, w.source, Qt.ItemDataRole.ToolTipRole)

    def _show_lengths(self, p: Project) -> None:
        from studio.service.project_edits.lengths_choice import lengths_id

        ld = p.workload.load
        shown = self._lengths_of
        if shown is not None and shown[0] is ld.isl_dist and shown[1] is ld.osl_dist:
            return  # the same distributions as shown (an edit keeps unchanged parts): no preset lookup
        self._lengths_of = (ld.isl_dist, ld.osl_dist)
        custom = self.lengths.findData("custom")
        if custom >= 0:
            self.lengths.removeItem(custom)
        wid = lengths_id(p)
        if wid is not None:
            self.lengths.setCurrentIndex(self.lengths.findData(wid))
        elif ld.isl_dist.kind == "fixed" and ld.osl_dist.kind == "fixed":
            self.lengths.setCurrentIndex(0)
        else:  # a histogram file or a spread set elsewhere
            self.lengths.addItem("custom (histogram or spread)", "custom")
            self.lengths.setCurrentIndex(self.lengths.count() - 1)

    def _lengths_chosen(self) -> None:
        from studio.service.project_edits.lengths_choice import with_lengths

        wid = self.lengths.currentData()
        if wid == "custom":
            return
        name = self.lengths.currentText()
        self._edit(f"Lengths {name}", "workload", lambda p: with_lengths(p, wid))

    def _enable(self, mode: str) -> None:
        self.rate.setEnabled(mode == "rate")
        self.arrival.setEnabled(mode == "rate")
        self.users.setEnabled(mode == "concurrency")
        page = {"concurrency": 0, "rate": 1, "offline": 2}[mode]
        self.driver.setCurrentIndex(page)
        self._driver_label.setText(("Users", "Rate", "")[page])

    def _on_error(self, message: str) -> None:
        """The engine refused the project: no saturation or serving rate of an earlier plan stays."""
        if message:
            self.summary.setText("saturation: not computed (the plan is refused)")
            self.summary.setToolTip(message)

    def _on_result(self, result, _revision: int) -> None:
        s = getattr(result, "load", None)
        if s is None:
            fits = getattr(result, "fits", True)
            self.summary.setText("" if fits else "saturation: none (the layout does not fit)")
            self.summary.setToolTip("")
            return
        text = f"saturation {s.saturation_rate_per_s:.3g} req/s; serving {s.request_rate_per_s:.3g} req/s"
        if s.saturated:
            text = "SATURATED: " + text
        self.summary.setText(text)
        self.summary.setToolTip("\n".join(t for t in (s.note, s.definition) if t))

    def _edit(self, text: str, kind: str, fn: Callable[[Project], Project]) -> None:
        if self._updating:
            return
        if not self.doc.edit(text, kind, fn):
            self.refresh(self.doc.project)  # a refused value snaps back to the project's

    def _load(self, text: str, **changes) -> None:
        self._edit(text, "workload", lambda p: p.replace(workload=p.workload.replace(
            load=p.workload.load.replace(**changes))))

    def _proposed_rate(self) -> float:
        """Half the saturation rate of the current plan (a load with headroom), else 1 req/s."""
        s = getattr(self.doc.result, "load", None) if self.doc.result_is_current else None
        if s is not None and s.saturation_rate_per_s > 0:
            return float(f"{s.saturation_rate_per_s / 2:.3g}")
        return DEFAULT_RATE

    def _mode_changed(self, _index: int) -> None:
        mode = self.mode.currentData()
        changes: dict = {"mode": mode}
        if mode == "rate" and self.doc.project.workload.load.rate_per_s is None:
            changes["rate_per_s"] = self._proposed_rate()
        self._load("Load mode", **changes)
        self._enable(self.doc.project.workload.load.mode)
