"""Layout panel: TP, PP, EP, DP, context parallelism (CP and its mode), micro-batches and layers per
stage, offered only with values that are valid for the drawn cluster and the model; "best layout for
my targets" from the sweep."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from studio.core import parallelism as par
from studio.core.errors import StudioError
from studio.core.project import Project
from studio.gui.document import ProjectDocument
from studio.service.explore.recommend import best_row, with_row
from studio.service.project_edits.layout_choices import (
    cp_refusal,
    valid_choices,
    with_cp_mode,
    with_field,
)

CP_MODES: tuple[tuple[str, str], ...] = (
    ("decode", "Decode (inside TP)"),
    ("prefill", "Prefill (ring over replicas)"),
)
CP_TIP = ("Context parallel: the KV cache of each sequence split along the sequence. Decode CP (vLLM "
          "--decode-context-parallel-size) removes the KV copies TP makes; prefill CP (ring attention) puts "
          "CP replicas on one sequence")


class LayoutPanel(QWidget):
    """Edits ``project.layout``."""

    def __init__(self, doc: ProjectDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self._updating = False
        self.combos: dict[str, QComboBox] = {}
        form = QFormLayout(self)
        tips = {
            "tp": "Tensor parallel: GPUs that split every layer (all-reduce per layer; keep inside NVLink)",
            "pp": "Pipeline parallel: consecutive layer groups on different GPUs (P2P between stages)",
            "ep": "Expert parallel (MoE): GPUs holding disjoint experts",
            "dp": "Data parallel: independent replicas; fills the GPUs that TP × PP leave",
            "cp": CP_TIP,
        }
        for key, label in (("tp", "TP"), ("pp", "PP"), ("ep", "EP"), ("dp", "DP"), ("cp", "CP")):
            c = QComboBox()
            c.setToolTip(tips[key])
            c.activated.connect(lambda _i, k=key: self._field(k))
            self.combos[key] = c
            form.addRow(label, c)
        self.cp_mode = QComboBox()
        for mode, text in CP_MODES:
            self.cp_mode.addItem(text, mode)
        self.cp_mode.setToolTip("Decode CP shards the KV cache inside the TP group (no extra GPUs); prefill CP "
                                "(ring attention) splits each prompt over CP data-parallel replicas")
        self.cp_mode.activated.connect(lambda _i: self._cp_mode())
        form.addRow("CP mode", self.cp_mode)
        self.micro = QSpinBox()
        self.micro.setRange(1, 4096)
        self.micro.setKeyboardTracking(False)
        self.micro.setToolTip("Micro-batches M in flight through the pipeline (more M, smaller bubble)")
        self.micro.valueChanged.connect(self._micro)
        form.addRow("Micro-batches", self.micro)
        self.layers = QLineEdit()
        self.layers.setPlaceholderText("even split")
        self.layers.setToolTip("Layers of each stage, comma separated (e.g. 40,40); empty = even split")
        self.layers.editingFinished.connect(self._layers)
        form.addRow("Layers / stage", self.layers)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setObjectName("hint")
        form.addRow(self.summary)
        self.best = QPushButton("Best layout for my targets")
        self.best.setToolTip("Sweep every valid layout and apply the recommended one (one undo step)")
        self.best.clicked.connect(self.apply_best)
        form.addRow(self.best)
        from studio.gui.editors.features_editor import FeaturesEditor  # engine features (issue 30)
        from studio.gui.panels.section import Section

        self.features_editor = FeaturesEditor(doc)
        self.features_section = Section("Engine features", self.features_editor, self.features_editor.summary)
        doc.projectChanged.connect(lambda _p, _k: self.features_section.refresh())
        form.addRow(self.features_section)
        self.refresh(doc.project)
        doc.projectChanged.connect(self._on_project)

    def _on_project(self, p: Project, _kind: str) -> None:
        self.refresh(p)

    def refresh(self, p: Project) -> None:
        self._updating = True
        try:
            choices = valid_choices(p)
            for key, combo in self.combos.items():
                if [combo.itemData(i) for i in range(combo.count())] != choices[key]:
                    combo.clear()
                    for v in choices[key]:
                        combo.addItem(str(v), v)
                combo.setCurrentIndex(combo.findData(getattr(p.layout, key)))
                combo.setEnabled(len(choices[key]) > 1)
            self.cp_mode.setCurrentIndex(self.cp_mode.findData(p.layout.cp_mode))
            why = cp_refusal(p)
            self.combos["cp"].setToolTip(CP_TIP + (f"\n\nNot offered here: {why}" if why else ""))
            self.micro.setValue(p.layout.micro_batches)
            split = p.layout.stage_layers(p.model.num_layers)
            self.layers.setText(",".join(map(str, p.layout.layers_per_stage)) if p.layout.layers_per_stage else "")
            self.layers.setPlaceholderText("even: " + ",".join(map(str, split)))
            used, n = p.layout.world_size, p.cluster.num_gpus
            idle = n - par.gpus_used(p.layout, n)
            self.summary.setText(
                f"{p.layout.label}: uses {used} of {n} GPUs"
                + ("" if used <= n else f" — {used - n} more than drawn")
                + (f" — {idle} idle (hatched on the canvas)" if idle > 0 and used < n else "")
            )
        finally:
            self._updating = False

    def _apply(self, text: str, fn) -> None:
        if not self._updating:
            self.doc.edit(text, "layout", lambda p: p.replace(layout=fn(p)))

    def _field(self, key: str) -> None:
        value = self.combos[key].currentData()
        if value is not None and value != getattr(self.doc.project.layout, key):
            self._apply(f"{key.upper()} = {value}", lambda p: with_field(p, key, value))

    def _cp_mode(self) -> None:
        mode = self.cp_mode.currentData()
        if mode is not None and mode != self.doc.project.layout.cp_mode:
            self._apply(f"CP mode = {mode}", lambda p: with_cp_mode(p, mode))

    def set_field(self, key: str, value: int) -> None:
        """Programmatic twin of choosing ``value`` in the ``key`` box."""
        self._apply(f"{key.upper()} = {value}", lambda p: with_field(p, key, value))

    def _micro(self, v: int) -> None:
        if v != self.doc.project.layout.micro_batches:
            self._apply(f"Micro-batches = {v}", lambda p: p.layout.replace(micro_batches=v))

    def _layers(self) -> None:
        text = self.layers.text().strip()
        p = self.doc.project
        if not text:
            if p.layout.layers_per_stage is not None:
                self._apply("Even layer split", lambda q: q.layout.replace(layers_per_stage=None))
            return
        try:
            split = tuple(int(x) for x in text.replace(" ", "").split(","))
        except ValueError:
            self.doc.message.emit(f"Layers per stage: '{text}' is not a comma-separated list of whole numbers")
            return
        why = par.split_reason(p.model, split, p.layout.pp)
        if why is not None:
            self.doc.message.emit(f"Layers per stage: {why} (got {text})")
            return
        if split != p.layout.layers_per_stage:
            self._apply(f"Layers per stage {text}", lambda q: q.layout.replace(layers_per_stage=split))

    def apply_best(self) -> bool:
        """Sweep with the project's objective, targets and percentile SLO (the Explorer's,
        :func:`studio.service.explore.recommend.best_row`) and apply the recommended layout, micro-batches
        and batch as one undo step."""
        p = self.doc.project
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            result, row, why = best_row(p)
            if row is None:
                self.doc.message.emit(why)
                return False
            best, batch = result.layout(row), int(result.columns["batch"][row])
        except StudioError as exc:
            self.doc.message.emit(f"Sweep failed: {exc.message}")
            return False
        finally:
            QApplication.restoreOverrideCursor()
        new = with_row(p, best, batch)
        if new == p:
            self.doc.message.emit(f"{best.label} is already the recommended layout")
            return True
        self.doc.apply(new, f"Best layout {best.label} M={best.micro_batches} batch {batch}", "layout")
        return True
