"""Engine-features editor (a folded section of the Layout tab): expert-parallel load balancing and
its redundant experts, the MoE routing skew, dual-batch overlap, the MoE all-to-all backend, data-
parallel load balancing, API-server processes, vLLM's CPU KV offloading, TensorRT-LLM's attention-DP
balancing and SGLang's InfiniBand devices (``project.serving.features``).

The backend and balancing boxes offer the names the project's engine accepts (``features`` in
``presets/engines/rules.json``, read from each engine's source); the MoE-only settings are greyed
out for a dense model. Every change is one undo step on the document (kind "serving"); under the
settings, the plan's own notes on how they enter its figures (``engine_features`` of the plan's
explanations, as ``plan --explain`` prints them)."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from studio.core.project import Project
from studio.gui.document import ProjectDocument

#: The first entry of the name boxes: the engine's own default (``None`` in the project).
DEFAULT = "engine default"


def _entry(feature: str, engine: str) -> dict | None:
    from studio.io.export.features import feature_rules

    entry = feature_rules().get(feature, {}).get(engine)
    return entry if isinstance(entry, dict) else None


def engine_has(feature: str, engine: str) -> bool:
    """Whether ``engine`` has a setting for ``feature`` at some version."""
    return _entry(feature, engine) is not None


def engine_choices(feature: str, engine: str) -> list[str]:
    """The values ``engine`` accepts for ``feature`` (empty: no such setting, or any value)."""
    entry = _entry(feature, engine)
    return [str(c) for c in entry.get("choices", [])] if entry is not None else []


_Box = TypeVar("_Box", QSpinBox, QDoubleSpinBox)


def _spin(box: _Box, lo: float, hi: float, suffix: str = "", special: str = "",
          tip: str = "", decimals: int | None = None) -> _Box:
    """``box`` set up as the form's number fields are: range, suffix, the text at its minimum (the
    project's "not set"), edits only on Return or focus out, tooltip."""
    if decimals is not None and isinstance(box, QDoubleSpinBox):
        box.setDecimals(decimals)
    box.setRange(lo, hi)  # type: ignore[arg-type]  # ints for a QSpinBox
    box.setSuffix(suffix)
    box.setSpecialValueText(special)
    box.setKeyboardTracking(False)
    box.setToolTip(tip)
    return box


class FeaturesEditor(QWidget):
    """Edits ``project.serving.features``."""

    def __init__(self, doc: ProjectDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self._updating = False
        self.eplb = QCheckBox("balance experts (EPLB)")
        self.eplb.setToolTip("Expert-parallel load balancing: hot experts replicated and packed on the least "
                             "loaded ranks (vLLM/SGLang EPLB, TensorRT-LLM MoE load balancer)")
        self.redundant = _spin(QSpinBox(), 0, 4096, " redundant", tip="Extra expert replicas per MoE layer that "
                               "EPLB may place (their weights are counted in memory)")
        self.skew = _spin(QDoubleSpinBox(), 1.0, 1024.0, " ×", "even", decimals=2, tip=(
            "Routing skew: the hottest expert's tokens over the mean expert's (a property of the model and "
            "the traffic); the plan costs the most loaded EP rank. Not exported"))
        self.dbo = QCheckBox("dual-batch overlap")
        self.dbo.setToolTip("vLLM --enable-dbo, SGLang --enable-two-batch-overlap: one half-batch's "
                            "all-to-all under the other's compute")
        self.a2a = QComboBox()
        self.a2a.setToolTip("The engine's MoE all-to-all backend (vLLM --all2all-backend, SGLang "
                            "--moe-a2a-backend, TensorRT-LLM moe_config.backend)")
        self.balance = QComboBox()
        self.balance.setToolTip("Data-parallel load balancing (vLLM internal / hybrid / external, SGLang "
                                "--load-balance-method)")
        self.api = _spin(QSpinBox(), 0, 512, special=DEFAULT,
                         tip="Front-end processes: vLLM --api-server-count, SGLang --tokenizer-worker-num")
        self.offload = _spin(QDoubleSpinBox(), 0.0, 1_000_000.0, " GiB", "off", decimals=0,
                             tip="vLLM KV-cache offloading to CPU memory, GiB (vLLM only)")
        self.adp_balance = QCheckBox("attention-DP balance")
        self.adp_balance.setToolTip("TensorRT-LLM attention_dp_config.enable_balance")
        self.ib = QLineEdit()
        self.ib.setPlaceholderText("e.g. mlx5_0,mlx5_1")
        self.ib.setToolTip("SGLang --disaggregation-ib-device: the HCAs the KV transfer uses")
        self.notes = QLabel("")
        self.notes.setWordWrap(True)
        self.notes.setObjectName("hint")
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Experts", self.eplb)
        form.addRow("", self.redundant)
        form.addRow("Routing skew", self.skew)
        form.addRow("Overlap", self.dbo)
        form.addRow("All-to-all", self.a2a)
        form.addRow("DP balancing", self.balance)
        form.addRow("API servers", self.api)
        form.addRow("KV offload", self.offload)
        form.addRow("Attention DP", self.adp_balance)
        form.addRow("IB devices", self.ib)
        form.addRow(self.notes)
        self.refresh(doc.project)
        doc.projectChanged.connect(lambda p, _k: self.refresh(p))
        doc.resultReady.connect(self._on_result)
        self.eplb.toggled.connect(lambda on: self._set("EPLB " + ("on" if on else "off"), eplb=on))
        self.redundant.valueChanged.connect(lambda v: self._set("Redundant experts", redundant_experts=v))
        self.skew.valueChanged.connect(lambda v: self._set("Routing skew", routing_skew=None if v <= 1.0 else v))
        self.dbo.toggled.connect(lambda on: self._set("Dual-batch overlap", dual_batch_overlap=on))
        self.a2a.activated.connect(lambda _i: self._set("All-to-all backend", all2all_backend=self.a2a.currentData()))
        self.balance.activated.connect(
            lambda _i: self._set("DP load balancing", load_balance=self.balance.currentData()))
        self.api.valueChanged.connect(lambda v: self._set("API servers", api_servers=v or None))
        self.offload.valueChanged.connect(lambda v: self._set("KV offload", kv_offload_gib=v or None))
        self.adp_balance.toggled.connect(lambda on: self._set("Attention-DP balance", attention_dp_balance=on))
        self.ib.editingFinished.connect(lambda: self._set("IB devices", ib_device=self.ib.text().strip() or None))

    def summary(self) -> str:
        """The section header's summary: the features that are on."""
        f = self.doc.project.serving.features
        on = [name for name, is_on in (
            ("EPLB", f.eplb), ("skew", f.routing_skew is not None), ("DBO", f.dual_batch_overlap),
            (f"a2a {f.all2all_backend}", f.all2all_backend is not None),
            (f"LB {f.load_balance}", f.load_balance is not None), (f"{f.api_servers} API servers", f.api_servers),
            (f"offload {f.kv_offload_gib:g} GiB" if f.kv_offload_gib else "", f.kv_offload_gib),
            ("ADP balance", f.attention_dp_balance), ("IB", f.ib_device)) if is_on]
        return ", ".join(on) if on else "engine defaults"

    def _set(self, text: str, **changes) -> None:
        if self._updating:
            return
        if not self.doc.edit(text, "serving", lambda p: p.replace(
                serving=p.serving.replace(features=p.serving.features.replace(**changes)))):
            self.refresh(self.doc.project)

    @staticmethod
    def _fill(box: QComboBox, names: list[str], current: str | None) -> None:
        items: list[tuple[str, str | None]] = [(DEFAULT, None), *((n, n) for n in names)]
        if current is not None and current not in names:  # a project file's name the engine lacks: shown
            items.append((f"{current} (not a {', '.join(names) or 'known'} name)", current))
        if [box.itemData(i) for i in range(box.count())] != [v for _t, v in items]:
            box.clear()
            for label, value in items:
                box.addItem(label, value)
        box.setCurrentIndex(max(0, box.findData(current)))

    def refresh(self, p: Project) -> None:
        """Show ``p`` without emitting edits."""
        self._updating = True
        try:
            f, engine, moe = p.serving.features, p.serving.runtime, p.model.moe is not None
            self.eplb.setChecked(f.eplb)
            self.redundant.setValue(f.redundant_experts)
            self.skew.setValue(f.routing_skew or 1.0)
            self.dbo.setChecked(f.dual_batch_overlap)
            self._fill(self.a2a, engine_choices("all2all_backend", engine), f.all2all_backend)
            self._fill(self.balance, engine_choices("load_balance", engine), f.load_balance)
            self.api.setValue(f.api_servers or 0)
            self.offload.setValue(f.kv_offload_gib or 0.0)
            self.adp_balance.setChecked(f.attention_dp_balance)
            if not self.ib.hasFocus():
                self.ib.setText(f.ib_device or "")
            # what the engine has no setting for (or a dense model has no use for) is greyed out,
            # with the reason in its tooltip; a value a project file set stays shown
            for w, feature, needs_moe in (
                    (self.eplb, "eplb", True), (self.dbo, "dual_batch_overlap", True),
                    (self.a2a, "all2all_backend", True), (self.balance, "load_balance", False),
                    (self.api, "api_servers", False), (self.offload, "kv_offload_gib", False),
                    (self.adp_balance, "attention_dp_balance", False), (self.ib, "ib_device", False)):
                has = engine_has(feature, engine)
                w.setEnabled(has and (moe or not needs_moe))
                w.setStatusTip("" if has else f"{engine} has no such setting")
            self.skew.setEnabled(moe)
            self.redundant.setEnabled(moe and f.eplb)
        finally:
            self._updating = False

    def _on_result(self, r, _revision: int) -> None:
        e = getattr(r, "explanations", {}).get("engine_features")
        self.notes.setText("" if e is None else "\n".join(e.notes))
