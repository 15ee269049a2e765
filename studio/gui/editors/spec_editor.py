"""Speculative-decoding editor (in the model & workload panel): the drafter, the tokens it proposes
per step, the acceptance and, for a separate draft model, which one. Every change is one undo step
on the document (kind "serving"); a setting the model cannot run (MTP without MTP layers, a draft
model with another vocabulary, a draft model without an acceptance) is refused with the engine's
one-line message and the editor snaps back. The line under the fields shows tokens per step and
TPOT both ways from the last result (docs/engine.md, "Speculative decoding")."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QWidget,
)

from studio.core.architecture import LLMArchitecture
from studio.core.project import Project
from studio.core.workload import SpeculativeConfig
from studio.gui.document import ProjectDocument

#: (label, SpeculativeConfig.method or None for off) in the order of the method box.
METHODS = (
    ("Off", None),
    ("EAGLE-3 head", "eagle3"),
    ("EAGLE-1/2 head", "eagle"),
    ("MTP layers of the model", "mtp"),
    ("n-gram (prompt lookup)", "ngram"),
    ("Draft model", "draft"),
)


def draft_candidates(model: LLMArchitecture) -> list[tuple[str, LLMArchitecture]]:
    """Model presets that can draft for ``model``: same vocabulary, fewer parameters, smallest first."""
    from studio.io.presets import load_catalog

    cat = load_catalog()
    out = []
    for pid in sorted(cat.models):
        arch = cat.model(pid).architecture
        if arch.vocab_size == model.vocab_size and arch.num_params < model.num_params:
            out.append((pid, arch))
    return sorted(out, key=lambda x: x[1].num_params)


def _checked(p: Project, spec: SpeculativeConfig | None) -> Project:
    """``p`` with ``spec``, refused (StudioError) when the engine cannot run it on ``p``'s model."""
    if spec is not None:
        from studio.engine.step.speculative import acceptance, check_speculative

        check_speculative(p.model, spec)
        acceptance(spec)
    return p.replace(serving=p.serving.replace(speculative=spec))


class SpecEditor(QGroupBox):
    """Edits ``project.serving.speculative``."""

    def __init__(self, doc: ProjectDocument, parent: QWidget | None = None) -> None:
        super().__init__("Speculative decoding", parent)
        self.doc = doc
        self._updating = False
        self.method = QComboBox()
        for label, value in METHODS:
            self.method.addItem(label, value)
        self.method.setToolTip(
            "Who drafts the tokens the model verifies in one pass (docs/engine.md)"
        )
        self.tokens = QSpinBox()
        self.tokens.setRange(1, 16)
        self.tokens.setValue(3)
        self.tokens.setKeyboardTracking(False)
        self.tokens.setToolTip(
            "Tokens proposed per step (k); the model verifies k + 1 per sequence"
        )
        self.acceptance = QDoubleSpinBox()
        self.acceptance.setRange(0.0, 1.0)
        self.acceptance.setDecimals(3)
        self.acceptance.setSingleStep(0.05)
        self.acceptance.setSpecialValueText("published default")
        self.acceptance.setKeyboardTracking(False)
        self.acceptance.setToolTip(
            "Per-token acceptance rate in (0, 1]; 0 = the method's published "
            "figure (presets/speculative.json, with its source)"
        )
        self.draft = QComboBox()
        self.draft.setToolTip("Model preset that drafts (same vocabulary as the model, smaller)")
        self.summary = QLabel("")
        self.summary.setObjectName("hint")
        self.summary.setWordWrap(True)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        form = QFormLayout(self)
        form.addRow("Drafter", self.method)
        form.addRow("Tokens per step", self.tokens)
        form.addRow("Acceptance", self.acceptance)
        form.addRow("Draft model", self.draft)
        form.addRow(self.summary)
        self._draft_model_of: LLMArchitecture | None = None
        self.refresh(doc.project)
        doc.projectChanged.connect(lambda p, _k: self.refresh(p))
        doc.resultReady.connect(self._on_result)
        self.method.currentIndexChanged.connect(self._method_changed)
        self.tokens.valueChanged.connect(lambda v: self._spec("Speculative tokens", num_tokens=v))
        self.acceptance.valueChanged.connect(self._acceptance_changed)
        self.draft.currentIndexChanged.connect(self._draft_changed)

    # ------------------------------------------------------------------ view
    def refresh(self, p: Project) -> None:
        """Show ``p``'s setting without emitting edits."""
        self._updating = True
        try:
            if self._draft_model_of is not p.model:
                self.draft.clear()
                for pid, _arch in draft_candidates(p.model):
                    self.draft.addItem(pid, pid)
                self._draft_model_of = p.model
            spec = p.serving.speculative
            self.method.setCurrentIndex(max(0, self.method.findData(spec.method if spec else None)))
            if spec is not None:
                self.tokens.setValue(spec.num_tokens)
                self.acceptance.setValue(spec.acceptance or 0.0)
                if spec.draft_model:
                    self.draft.setCurrentIndex(max(0, self.draft.findData(spec.draft_model)))
            self._enable(spec)
        finally:
            self._updating = False

    def _enable(self, spec: SpeculativeConfig | None) -> None:
        on = spec is not None
        self.tokens.setEnabled(on)
        self.acceptance.setEnabled(True)  # kept for the next method chosen while off
        self.draft.setEnabled(self.method.currentData() == "draft")
        if not on:
            self.summary.setText("")

    def _on_result(self, result, _revision: int) -> None:
        from studio.engine.step.speculative import plan_line

        line = plan_line(result) if hasattr(result, "explanations") else None
        self.summary.setText(line or "")
        ex = getattr(result, "explanations", {}).get("speculative") if line else None
        self.summary.setToolTip(ex.as_text() if ex is not None else "")

    # ------------------------------------------------------------------ edits
    def _edit(self, text: str, fn: Callable[[Project], Project]) -> None:
        if self._updating:
            return
        if not self.doc.edit(text, "serving", fn):
            self.refresh(self.doc.project)  # a refused value snaps back to the project's

    def _spec(self, text: str, **changes) -> None:
        def apply(p: Project) -> Project:
            cur = p.serving.speculative
            if cur is None:
                return p
            data = {name: getattr(cur, name) for name in type(cur).model_fields}
            data.update(changes)
            return _checked(p, SpeculativeConfig(**data))

        if self.doc.project.serving.speculative is not None:
            self._edit(text, apply)

    def _new_spec(self, method: str) -> SpeculativeConfig:
        acc = self.acceptance.value() or None
        if method != "draft":
            return SpeculativeConfig(method=method, num_tokens=self.tokens.value(), acceptance=acc)
        from studio.io.presets import load_catalog

        pid = self.draft.currentData()
        arch = load_catalog().model(pid).architecture if pid else None
        return SpeculativeConfig(
            method="draft",
            num_tokens=self.tokens.value(),
            acceptance=acc,
            draft_model=pid,
            draft=arch,
        )

    def _method_changed(self, _index: int) -> None:
        method = self.method.currentData()
        self.draft.setEnabled(method == "draft")
        if self._updating:
            return
        label = self.method.currentText()
        if method is None:
            self._edit("Speculative decoding off", lambda p: _checked(p, None))
        else:
            self._edit(
                f"Speculative decoding: {label}", lambda p: _checked(p, self._new_spec(method))
            )

    def _acceptance_changed(self, value: float) -> None:
        self._spec(
            "Speculative acceptance",
            acceptance=value or None,
            acceptance_by_position=None,
            accepted_length=None,
        )

    def _draft_changed(self, _index: int) -> None:
        pid = self.draft.currentData()
        cur = self.doc.project.serving.speculative
        if self._updating or pid is None or cur is None or cur.method != "draft":
            return
        from studio.io.presets import load_catalog

        self._spec("Draft model", draft_model=pid, draft=load_catalog().model(pid).architecture)
