"""Prompt-reuse editor (in the model & workload panel): the shared system prompt, multi-turn
conversations, re-read documents (with prefix-aware routing), a measured hit rate in place of the
estimate, prefix caching and the KV tiers beyond HBM, with the plan's hit rate and saved prefill. Every change is one undo step on the document (kind "workload" or "serving"); a tier the
node or engine version cannot hold is refused with the message naming the field."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QSpinBox,
    QWidget,
)

from studio.core.project import Project
from studio.gui.document import ProjectDocument

#: (label, KVTiers.prefix_cache) in the order of the prefix-cache box.
CACHE = (("Engine default", None), ("On", True), ("Off", False))
#: (label, Reuse.hit_tier) in the order of the hit-tier box.
TIERS = (("HBM", "hbm"), ("Host DRAM", "host"), ("NVMe", "disk"))
#: The measured-hit-rate box shows this at its minimum: the plan estimates the hit rate (LRU).
ESTIMATE = "estimate (LRU)"


def _percent(special: str = "") -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(-1.0 if special else 0.0, 100.0)
    s.setDecimals(1)
    s.setSuffix(" %")
    if special:
        s.setSpecialValueText(special)
    s.setKeyboardTracking(False)
    return s


def _spin(hi: int, suffix: str) -> QSpinBox:
    s = QSpinBox()
    s.setRange(0, hi)
    s.setSuffix(suffix)
    s.setKeyboardTracking(False)
    return s


def _gib() -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(0.0, 1_000_000.0)
    s.setDecimals(0)
    s.setSuffix(" GiB/node")
    s.setSpecialValueText("none")
    s.setKeyboardTracking(False)
    return s


def _tiers(p: Project, **changes) -> Project:
    from studio.service.kv_tiers import checked_tiers

    tiers = p.serving.kv_tiers.replace(**changes)
    if tiers.host_gib or tiers.disk_gib:
        tiers = checked_tiers(p, tiers.replace(host_link_gbps=None))
    return p.replace(serving=p.serving.replace(kv_tiers=tiers))


class ReuseEditor(QGroupBox):
    """Edits ``project.workload.reuse`` and ``project.serving.kv_tiers``."""

    def __init__(self, doc: ProjectDocument, parent: QWidget | None = None) -> None:
        super().__init__("Prompt reuse", parent)
        self.doc = doc
        self._updating = False
        self.system = _spin(10_000_000, " tokens")
        self.system.setToolTip("A system prompt every request shares (part of the input length)")
        self.turns = _spin(10_000, " turns")
        self.turns.setMinimum(1)
        self.history = _spin(10_000_000, " tokens/turn")
        self.history.setToolTip("Tokens a conversation's history grows by per turn (message + answer)")
        self.think = QDoubleSpinBox()
        self.think.setRange(0.0, 86_400.0)
        self.think.setSuffix(" s")
        self.think.setKeyboardTracking(False)
        self.doc_share = _percent()
        self.doc_share.setToolTip("Share of the rest of each prompt (after system prompt and history) that is "
                                  "one of the re-read documents")
        self.documents = _spin(10_000_000, "")
        self.documents.setMinimum(1)
        self.documents.setToolTip("Distinct documents, equally popular, that requests re-read")
        self.routing = QCheckBox("prefix-aware")
        self.routing.setToolTip("Prefix-aware routing (llm-d prefix-cache scorer, SGLang router's cache-aware "
                                "policy): requests go to the replica holding their document, so each replica "
                                "re-reads only its share of the documents")
        self.measured = _percent(ESTIMATE)
        self.measured.setToolTip("A hit rate you measured (share of prompt tokens served from the cache); "
                                 "it replaces the LRU estimate")
        self.hit_tier = QComboBox()
        for label, tier in TIERS:
            self.hit_tier.addItem(label, tier)
        self.hit_tier.setToolTip("Where the measured hits are served from")
        self.cache = QComboBox()
        for label, value in CACHE:
            self.cache.addItem(label, value)
        self.host = _gib()
        self.host.setToolTip("KV cache kept in host DRAM, loaded over the node's PCIe / NVLink-C2C link")
        self.disk = _gib()
        self.disk.setToolTip("KV cache on local NVMe (TensorRT-LLM)")
        self.result = QLabel("prefix cache off")
        self.result.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow("System prompt", self.system)
        form.addRow("Turns", self.turns)
        form.addRow("History", self.history)
        form.addRow("Think time", self.think)
        form.addRow("Document share", self.doc_share)
        form.addRow("Distinct docs", self.documents)
        form.addRow("Routing", self.routing)
        form.addRow("Measured hits", self.measured)
        form.addRow("Hits served from", self.hit_tier)
        form.addRow("Prefix cache", self.cache)
        form.addRow("Host tier", self.host)
        form.addRow("NVMe tier", self.disk)
        form.addRow(self.result)
        self.refresh(doc.project)
        doc.projectChanged.connect(lambda p, _k: self.refresh(p))
        doc.resultReady.connect(self._on_result)
        self.system.valueChanged.connect(lambda v: self._reuse("System prompt", system_prompt_tokens=v))
        self.turns.valueChanged.connect(lambda v: self._reuse("Turns", turns=v))
        self.history.valueChanged.connect(lambda v: self._reuse("History per turn", history_tokens_per_turn=v))
        self.think.valueChanged.connect(lambda v: self._reuse("Think time", think_time_s=v))
        self.doc_share.valueChanged.connect(lambda v: self._reuse("Document share", document_share=v / 100.0))
        self.documents.valueChanged.connect(lambda v: self._reuse("Distinct documents", documents=v))
        self.routing.toggled.connect(
            lambda on: self._edit("Prefix-aware routing", "serving", lambda p: _tiers(p, prefix_routing=on)))
        self.measured.valueChanged.connect(self._on_measured)
        self.hit_tier.currentIndexChanged.connect(
            lambda _i: self._reuse("Hit tier", hit_tier=self.hit_tier.currentData()))
        self.cache.currentIndexChanged.connect(
            lambda _i: self._edit("Prefix cache", "serving", lambda p: _tiers(p, prefix_cache=self.cache.currentData())))
        self.host.valueChanged.connect(lambda v: self._edit("Host KV tier", "serving", lambda p: _tiers(p, host_gib=v)))
        self.disk.valueChanged.connect(lambda v: self._edit("NVMe KV tier", "serving", lambda p: _tiers(p, disk_gib=v)))

    def summary(self) -> str:
        """The section header's summary."""
        r = self.doc.project.workload.reuse
        return "off" if not r.active else f"{r.system_prompt_tokens:,} shared, {r.turns} turns"

    def _edit(self, text: str, kind: str, fn) -> None:
        if not self._updating and not self.doc.edit(text, kind, fn):
            self.refresh(self.doc.project)

    def _reuse(self, text: str, **changes) -> None:
        self._edit(text, "workload",
                   lambda p: p.replace(workload=p.workload.replace(reuse=p.workload.reuse.replace(**changes))))

    def _on_measured(self, value: float) -> None:
        if value < 0:  # back to the estimate: a tier only places a measured rate
            self._reuse("Measured hit rate", hit_rate=None, hit_tier="hbm")
        else:
            self._reuse("Measured hit rate", hit_rate=value / 100.0)

    def refresh(self, p: Project) -> None:
        """Show ``p`` without emitting edits."""
        self._updating = True
        try:
            r, t = p.workload.reuse, p.serving.kv_tiers
            self.system.setValue(r.system_prompt_tokens)
            self.turns.setValue(r.turns)
            self.history.setValue(r.history_tokens_per_turn)
            self.think.setValue(r.think_time_s)
            self.doc_share.setValue(r.document_share * 100.0)
            self.documents.setValue(r.documents)
            self.routing.setChecked(t.prefix_routing)
            self.measured.setValue(-1.0 if r.hit_rate is None else r.hit_rate * 100.0)
            self.hit_tier.setCurrentIndex(max(0, self.hit_tier.findData(r.hit_tier)))
            self.hit_tier.setEnabled(r.hit_rate is not None)
            self.cache.setCurrentIndex(max(0, self.cache.findData(t.prefix_cache)))
            self.host.setValue(t.host_gib)
            self.disk.setValue(t.disk_gib)
        finally:
            self._updating = False

    def _on_result(self, r, _revision: int) -> None:
        pc = r.prefix_cache
        if pc is None:
            self.result.setText("prefix cache off or nothing repeats")
            return
        self.result.setText(
            f"hit rate {pc['hit_rate']:.0%} (HBM {pc['hit_rate_hbm']:.0%}, host {pc['hit_rate_host']:.0%}, "
            f"NVMe {pc['hit_rate_disk']:.0%}); saved prefill {pc['saved_prefill_tokens']:,.0f} of "
            f"{pc['prompt_tokens']:,.0f} tokens per request"
        )
