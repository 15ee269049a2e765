"""Model & workload panel: model preset (searchable) or a config.json, precision, ISL/OSL, batch,
latency targets, price per GPU-hour. Every change is one undo step on the document."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from studio.core.edits import with_model
from studio.core.errors import StudioError
from studio.core.precision import WEIGHT_DTYPES, DType
from studio.core.project import Project
from studio.gui.document import ProjectDocument

KV_DTYPES = ("bf16", "fp16", "fp8")


def _spin(lo: int, hi: int, suffix: str = "") -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    s.setKeyboardTracking(False)
    s.setSuffix(suffix)
    s.setGroupSeparatorShown(True)
    return s


def _dspin(lo: float, hi: float, decimals: int, suffix: str, none_text: str) -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setDecimals(decimals)
    s.setKeyboardTracking(False)
    s.setSuffix(suffix)
    s.setSpecialValueText(none_text)  # shown at the minimum (0) = no value
    return s


class ModelPanel(QWidget):
    """Edits ``project.model``, ``project.workload`` and ``project.serving``."""

    def __init__(self, doc: ProjectDocument, catalog=None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.catalog = catalog
        self._updating = False
        self._size_note: tuple[str, str] | None = None  # (config path, checkpoint size check)
        self._info_of: tuple[object, str] = (None, "")  # the model and note the model line shows
        self.model = QComboBox()
        self.model.setEditable(True)
        self.model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        completer = self.model.completer()
        assert completer is not None  # an editable combo box has one
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
        self.model.setToolTip("Model preset (type to search)")
        if catalog is not None:
            for mid, m in sorted(catalog.models.items(), key=lambda kv: kv[1].name.lower()):
                self.model.addItem(m.name, mid)
        self.load_button = QPushButton("Load config.json…")
        self.load_button.setToolTip("Use a Hugging Face config.json as the model")
        self.model_info = QLabel("")
        self.model_info.setWordWrap(True)
        self.model_info.setObjectName("hint")
        self.weight = QComboBox()
        self.weight.addItem("checkpoint's own", None)
        for d in WEIGHT_DTYPES:
            self.weight.addItem(d.upper(), d)
        self.kv = QComboBox()
        for d in KV_DTYPES:
            self.kv.addItem(d.upper(), d)
        self.isl = _spin(1, 10_000_000, " tokens")
        self.osl = _spin(1, 10_000_000, " tokens")
        self.batch_auto = QCheckBox("auto (fill the KV cache, ≤ max batch)")
        self.batch = _spin(0, 1_000_000)
        self.batch.setSpecialValueText("—")  # 0: "auto" without a computed plan (no batch to show)
        self.ttft = _dspin(0, 1e6, 0, " ms", "no target")
        self.tpot = _dspin(0, 1e5, 1, " ms", "no target")
        self.price = _dspin(0, 10_000, 2, " $/GPU·h", "each GPU's own")
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        # 4 px between rows (the style's default is 6): with the engine row the common fields still
        # fit a 1366x768 window without scrolling (tests/gui/test_legibility.py)
        form.setVerticalSpacing(4)
        row = QHBoxLayout()
        row.addWidget(self.model, 1)
        form.addRow("Model", row)
        form.addRow("", self.load_button)
        form.addRow("", self.model_info)
        from studio.gui.editors.engine_selector import (
            EngineSelector,  # the serving engine (issue 29)
        )

        self.engine = EngineSelector(doc)
        form.addRow("Engine", self.engine)
        form.addRow("Weights", self.weight)
        form.addRow("KV cache", self.kv)
        form.addRow("Input (ISL)", self.isl)
        form.addRow("Output (OSL)", self.osl)
        form.addRow("Batch", self.batch)
        form.addRow("", self.batch_auto)
        form.addRow("TTFT target", self.ttft)
        form.addRow("TPOT target", self.tpot)
        form.addRow("Price", self.price)
        from studio.gui.editors.load_editor import LoadEditor  # how the plan is served (issue 10)
        from studio.gui.editors.reuse_editor import (
            ReuseEditor,  # prefix caching, KV tiers (issue 36)
        )
        from studio.gui.panels.section import Section

        # the advanced sections fold (their settings summed up in the header), so the common
        # fields above fit a 1366×768 screen without scrolling; prompt reuse folds with the load
        # (a header row of its own would push the common fields past that screen). The section
        # is in its row before its editors are built in it: under the style sheet each reparenting
        # restyles the subtree it moves, and the editors were moved twice (body, section, row).
        load_body = QWidget()
        self.load_section = Section("Load", load_body)
        form.addRow(self.load_section)
        body = QVBoxLayout(load_body)
        body.setContentsMargins(0, 0, 0, 0)
        self.load_editor = LoadEditor(doc, load_body)
        self.reuse_editor = ReuseEditor(doc, load_body)
        body.addWidget(self.load_editor)
        body.addWidget(self.reuse_editor)
        self.load_section.set_summary(
            lambda: f"{self.load_editor.mode.currentText()}; reuse {self.reuse_editor.summary()}")
        doc.projectChanged.connect(lambda _p, _k: self.load_section.refresh())
        self.load_editor.mode.currentIndexChanged.connect(lambda _i: self.load_section.refresh())
        from studio.gui.editors.spec_editor import SpecEditor  # speculative decoding (issue 15)

        self.spec_editor = SpecEditor(doc)
        self.spec_section = Section("Speculative decoding", self.spec_editor,
                                    lambda: self.spec_editor.method.currentText())
        self.spec_editor.method.currentIndexChanged.connect(lambda _i: self.spec_section.refresh())
        form.addRow(self.spec_section)
        self.refresh(doc.project)
        doc.projectChanged.connect(self._on_project)
        doc.resultReady.connect(self._on_result)
        doc.errorChanged.connect(self._on_error)
        self.model.activated.connect(self._model_chosen)
        self.load_button.clicked.connect(self._load_config)
        self.weight.currentIndexChanged.connect(lambda _i: self._serving("Weight precision", weight_dtype=self.weight.currentData()))
        self.kv.currentIndexChanged.connect(lambda _i: self._serving("KV precision", kv_dtype=self.kv.currentData()))
        self.isl.valueChanged.connect(lambda v: self._workload("Input length", isl=v))
        self.osl.valueChanged.connect(lambda v: self._workload("Output length", osl=v))
        self.batch.valueChanged.connect(lambda v: self._workload("Batch", batch=v) if v else self.refresh(doc.project))
        self.batch_auto.toggled.connect(lambda on: self._workload(
            "Batch auto", batch="auto" if on else (self.batch.value() or doc.project.workload.max_batch)))
        self.ttft.valueChanged.connect(lambda v: self._workload("TTFT target", ttft_ms=v or None))
        self.tpot.valueChanged.connect(lambda v: self._workload("TPOT target", tpot_ms=v or None))
        self.price.valueChanged.connect(lambda v: self._serving("Price per GPU-hour", price_per_gpu_hour=v or None))

    def _on_project(self, p: Project, _kind: str) -> None:
        self.refresh(p)

    def _on_error(self, message: str) -> None:
        """A refused plan has no batch: "auto" shows "—", not the batch of an earlier plan."""
        if not message or self.doc.project.workload.batch != "auto":
            return
        self._updating = True
        try:
            self.batch.setValue(0)
            self.batch.setToolTip("no batch: the plan is not computed")
        finally:
            self._updating = False

    def _on_result(self, r, _revision: int) -> None:
        """With batch 'auto', the (disabled) box shows the batch the engine chose, so turning auto
        off keeps it."""
        if not r.batch_auto or self.batch.value() == r.batch:
            return
        self._updating = True
        try:
            self.batch.setValue(r.batch)
            self.batch.setToolTip(f"batch in use: {r.batch:,} sequences per replica, chosen by 'auto'")
        finally:
            self._updating = False

    def refresh(self, p: Project) -> None:
        """Show ``p`` without emitting edits."""
        self._updating = True
        try:
            i = self.model.findData(p.model_ref) if p.model_ref else -1
            if i >= 0 and p.model_ref != p.model.id:
                i = -1  # the reference names another preset than the model the project holds
            if i < 0:
                i = self.model.findData(p.model.id)
            if i < 0:
                self.model.setEditText(p.model.name)
            else:
                self.model.setCurrentIndex(i)
            m = p.model
            note = self._size_note[1] if self._size_note and self._size_note[0] == p.model_ref else ""
            if m is not self._info_of[0] or note != self._info_of[1]:  # counting parameters takes 0.5 ms
                self._info_of = (m, note)
                self.model_info.setText(
                    f"{m.num_params / 1e9:,.1f} B parameters"
                    + (f" ({m.num_active_params / 1e9:,.1f} B active)" if m.is_moe else "")
                    + f", {m.num_layers} layers, {m.num_attention_heads} heads / {m.num_kv_heads} KV heads"
                    + (f"\n{note}" if note else "")
                )
            self.weight.setCurrentIndex(max(0, self.weight.findData(p.serving.weight_dtype.value if p.serving.weight_dtype else None)))
            self.kv.setCurrentIndex(max(0, self.kv.findData(DType(p.serving.kv_dtype).value)))
            w = p.workload
            _show_value(self.isl, w.isl)
            _show_value(self.osl, w.osl)
            auto = w.batch == "auto"
            self.batch_auto.setChecked(auto)
            self.batch.setEnabled(not auto)
            if not auto:
                _show_value(self.batch, int(w.batch))
            _show_value(self.ttft, w.ttft_ms or 0)
            _show_value(self.tpot, w.tpot_ms or 0)
            _show_value(self.price, p.serving.price_per_gpu_hour or 0)
        finally:
            self._updating = False

    def _edit(self, text: str, kind: str, fn: Callable[[Project], Project]) -> None:
        if not self._updating:
            self.doc.edit(text, kind, fn)

    def _workload(self, text: str, **changes) -> None:
        self._edit(text, "workload", lambda p: p.replace(workload=p.workload.replace(**changes)))

    def _serving(self, text: str, **changes) -> None:
        self._edit(text, "serving", lambda p: p.replace(serving=p.serving.replace(**changes)))

    def _model_chosen(self, index: int) -> None:
        mid = self.model.itemData(index)
        if mid is None or self.catalog is None or mid not in self.catalog.models:
            return
        arch = self.catalog.models[mid].architecture
        self.set_model(arch, mid, f"Model {arch.name}")

    def set_model(self, arch, ref: str | None, text: str) -> None:
        """Swap the model (:func:`studio.core.edits.with_model`), one undo step."""
        self._edit(text, "model", lambda p: with_model(p, arch, ref))

    def _load_config(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load a Hugging Face config.json", "", "config.json (*.json)")
        if path:
            self.load_config(path)

    def load_config(self, path: str) -> bool:
        """Use ``path`` (a Hugging Face config.json) as the model; a file that cannot be used is
        reported in a dialog naming the file and the field (the model is left as it was). The
        parameter count checked against the checkpoint's size hints in that folder is shown under
        the model."""
        from studio.io.importers.checkpoint_size import size_note
        from studio.io.importers.hf_config import load_model_config

        try:
            arch = load_model_config(path)
        except StudioError as exc:
            self.doc.report_problem("Cannot load config.json", str(exc))
            return False
        note = size_note(path, arch)  # the checkpoint's own size hints next to the config
        self._size_note = (path, note) if note else None
        self.set_model(arch, path, f"Model from {path}")
        self.refresh(self.doc.project)  # the note also when the model itself did not change
        return True


def _show_value(box: QSpinBox | QDoubleSpinBox, value: float) -> None:
    """Set ``box`` to ``value`` unless it shows it (a spin box repaints on every set, even the same)."""
    if box.value() != value:
        box.setValue(value)  # type: ignore[arg-type]  # an int for a QSpinBox
