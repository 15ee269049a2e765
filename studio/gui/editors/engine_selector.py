"""The serving-engine selector beside the model: engine (vLLM / TensorRT-LLM / SGLang) and
version. A change is one undo step (:func:`studio.service.project_edits.engine_choice.with_engine`: engine,
version and that engine's default memory fraction together), and every view follows the
recomputed plan."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from studio.core.project import Project
from studio.gui.document import ProjectDocument
from studio.service.project_edits.engine_choice import ENGINE_NAMES, engine_versions, with_engine

NEWEST = "newest"


class EngineSelector(QWidget):
    """Engine and version combos; the profile in use (and any version fallback) underneath."""

    def __init__(self, doc: ProjectDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self._updating = False
        self.engine = QComboBox()
        for key, name in ENGINE_NAMES.items():
            self.engine.addItem(name, key)
        self.engine.setToolTip("Serving engine: its scheduler cost, defaults, CUDA graphs and KV-cache sizing "
                               "(presets/engines/<engine>.json)")
        self.version = QComboBox()
        self.version.setEditable(True)
        self._versions_of: str | None = None  # the engine whose versions the version box lists
        self.version.setToolTip("Engine version; any version uses the profile that covers it (else the nearest)")
        self.profile = QLabel("")
        self.profile.setObjectName("hint")
        self.profile.setWordWrap(True)
        self.profile.setVisible(False)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.engine, 1)
        row.addWidget(self.version, 1)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(row)
        box.addWidget(self.profile)
        self.refresh(doc.project)
        doc.projectChanged.connect(lambda p, _kind: self.refresh(p))
        self.engine.activated.connect(lambda _i: self.choose(self.engine.currentData(), None))
        self.version.activated.connect(lambda _i: self._version_chosen())
        edit = self.version.lineEdit()
        assert edit is not None  # the version box is editable
        edit.editingFinished.connect(self._version_chosen)

    def refresh(self, p: Project) -> None:
        """Show ``p``'s engine without emitting edits."""
        from studio.engine.runtime import engine_setup

        self._updating = True
        try:
            sv = p.serving
            self.engine.setCurrentIndex(max(0, self.engine.findData(sv.runtime)))
            if sv.runtime != self._versions_of:  # the list is the engine's: rebuilt (and repainted) when it changes
                self._versions_of = sv.runtime
                self.version.clear()
                self.version.addItem(NEWEST, None)
                for v, label in engine_versions(sv.runtime):
                    self.version.addItem(v, v)
                    self.version.setItemData(self.version.count() - 1, label)
            i = self.version.findData(sv.runtime_version) if sv.runtime_version else 0
            if i < 0:
                self.version.setEditText(sv.runtime_version or NEWEST)
            elif i != self.version.currentIndex() or self.version.currentText() != self.version.itemText(i):
                self.version.setCurrentIndex(i)
                self.version.setEditText(self.version.itemText(i))
            s = engine_setup(p)
            # one short line keeps the Plan panel's common fields on screen at 1366x768; the profile's
            # label is the tooltip, and a version fallback is always shown in full
            text = f"profile '{s.profile.id}' · memory fraction {sv.gpu_memory_utilization:g}"
            if s.resolved.note:
                text += f"\n{s.resolved.note}"
            self.profile.setText(text)
            self.profile.setToolTip(f"{s.profile.label}; memory fraction {sv.gpu_memory_utilization:g}")
            tip = f"{text}\n{s.profile.label}"
            self.engine.setToolTip(tip)
            self.version.setToolTip(tip)
            self.profile.setVisible(bool(s.resolved.note))  # the profile in use is the selectors' tooltip
        finally:
            self._updating = False

    def _version_chosen(self) -> None:
        text = self.version.currentText().strip()
        version = None if text in ("", NEWEST) else text
        if version != self.doc.project.serving.runtime_version:
            self.choose(self.doc.project.serving.runtime, version)

    def choose(self, runtime: str, version: str | None) -> bool:
        """Serve with ``runtime`` at ``version`` (None = newest): one undo step."""
        if self._updating:
            return False
        name = ENGINE_NAMES.get(runtime, runtime)
        text = f"Engine {name}" + (f" {version}" if version else "")
        done = self.doc.edit(text, "serving", lambda p: engine_keeping_tiers(p, runtime, version))
        if not done:  # refused (a KV tier the engine version has no setting for): show the project's
            self.refresh(self.doc.project)
        return done


def engine_keeping_tiers(p: Project, runtime: str, version: str | None) -> Project:
    """:func:`with_engine`, refused (``StudioError`` naming the field) when the project keeps a host
    or NVMe KV tier that engine version has no setting for."""
    from studio.service.kv_tiers import checked_tiers

    new = with_engine(p, runtime, version)
    tiers = new.serving.kv_tiers
    if tiers.host_gib or tiers.disk_gib:
        checked_tiers(new, tiers)
    return new
