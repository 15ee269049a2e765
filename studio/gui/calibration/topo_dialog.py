"""File ▸ Import topology…: paste or open ``nvidia-smi topo -m`` text, pick the GPU model and node
count, see what was recognised (or the line and column of what was not), and replace the cluster."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.search.defaults import default_layout

AUTO = "(from the text)"

#: The row of each input an import error may name (:attr:`StudioError.field`).
_CONTROLS = {"gpu": "GPU model", "nodes": "Nodes"}


def fitting_layout(project: Project, cluster: Cluster) -> Layout:
    """The production default (:func:`studio.engine.search.defaults.default_layout`): TP = GPUs per node,
    lowered until the model allows it on this GPU count; DP fills the rest."""
    per_node = max(len(n.gpus) for n in cluster.nodes) if cluster.nodes else 1
    return default_layout(project.model, per_node, cluster.num_gpus)


class ImportTopologyDialog(QDialog):
    """Build a cluster from topology text; :attr:`cluster` holds it while the preview is valid.

    :meth:`accept` applies it to the document as one undo step ("Import topology").
    """

    def __init__(self, doc, catalog, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import topology")
        self.doc = doc
        self.catalog = catalog
        self.cluster: Cluster | None = None
        self.error = ""
        self._file: tuple[str, str] | None = None  # (path, text as read) of the last opened file
        self.text = QPlainTextEdit()
        self.text.setPlaceholderText("Paste the output of `nvidia-smi topo -m` here (add `nvidia-smi -L` to name the GPU)")
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        open_btn = QPushButton("Open file…")
        open_btn.clicked.connect(self.open_dialog)
        self.gpu = QComboBox()
        self.gpu.addItem(AUTO, None)
        for gid, spec in sorted(catalog.gpus.items()):
            self.gpu.addItem(f"{spec.name} ({gid})", gid)
        self.nodes = QSpinBox()
        self.nodes.setRange(1, 4096)
        self.preview = QLabel()
        self.preview.setWordWrap(True)
        self.preview.setMinimumHeight(60)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Replace cluster")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        form = QFormLayout()
        form.addRow(_CONTROLS["gpu"], self.gpu)
        form.addRow(_CONTROLS["nodes"], self.nodes)
        top = QHBoxLayout()
        top.addWidget(QLabel("nvidia-smi topo -m"))
        top.addStretch(1)
        top.addWidget(open_btn)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.text, 1)
        lay.addLayout(form)
        lay.addWidget(self.preview)
        lay.addWidget(self.buttons)
        self.resize(760, 560)

        self._timer = QTimer(self, singleShot=True, interval=150)
        self._timer.timeout.connect(self.refresh)
        self.text.textChanged.connect(self._timer.start)
        self.gpu.currentIndexChanged.connect(self.refresh)
        self.nodes.valueChanged.connect(self.refresh)
        self.refresh()

    # ------------------------------------------------------------------ input
    def set_text(self, text: str) -> None:
        """Put ``text`` in the editor and preview it now."""
        self.text.setPlainText(text)
        self.refresh()

    def set_gpu(self, gpu_id: str | None) -> None:
        i = self.gpu.findData(gpu_id)
        if i < 0:
            raise StudioError(f"GPU '{gpu_id}' is not in the catalogue")
        self.gpu.setCurrentIndex(i)

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open topology", "", "Text (*.txt *.log);;All files (*)")
        if path:
            self.open_path(path)

    def open_path(self, path: str | Path) -> None:
        from studio.io.importers.topo import MAX_TOPO_BYTES
        from studio.io.safe import read_text_limited

        try:
            text = read_text_limited(path, MAX_TOPO_BYTES, "topology file")
        except StudioError as exc:
            self._show(None, str(exc))
            return
        self._file = (str(path), text)
        self.set_text(text)

    def source_name(self) -> str:
        """Where the text came from, for error messages: the opened file (marked "edited" once
        the text differs from what was read), else "pasted text"."""
        if self._file is None:
            return "pasted text"
        path, original = self._file
        return path if self.text.toPlainText() == original else f"{path} (edited)"

    # ------------------------------------------------------------------ preview
    def refresh(self) -> None:
        """Parse the text and show what was recognised, or the error (with line and column)."""
        from studio.io.importers.topo import import_topology, parse_topo

        text = self.text.toPlainText()
        if not text.strip():
            self._show(None, "Paste or open a topology to preview it.", error=False)
            return
        source = self.source_name()
        try:
            m = parse_topo(text, source)
            cluster = import_topology(text, gpu_id=self.gpu.currentData(), nodes=self.nodes.value(),
                                      catalog=self.catalog, source=source)
        except StudioError as exc:
            control = _CONTROLS.get(exc.field or "")
            self._show(None, str(exc) + (f" (set {control} above)" if control else ""))
            return
        kinds = ", ".join(sorted(cluster.link_kinds))
        codes = sorted({c for c in m.relation.values()})
        spec = next(iter(cluster.gpu_specs.values()))
        self._show(cluster, (
            f"Recognised {len(m.gpus)} GPUs and {len(m.nics)} NICs per node ({', '.join(codes)}) → "
            f"{cluster.num_gpus}× {spec.name} in {self.nodes.value()} node(s); link kinds: {kinds}."
        ), error=False)

    def _show(self, cluster: Cluster | None, text: str, error: bool = True) -> None:
        self.cluster = cluster
        self.error = text if error else ""
        self.preview.setText(text)
        self.preview.setStyleSheet("color: #c92a2a;" if error else "")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(cluster is not None)

    # ------------------------------------------------------------------ apply
    def accept(self) -> None:
        self._timer.stop()
        self.refresh()
        if self.cluster is None:
            return
        project = self.doc.project
        new = project.replace(cluster=self.cluster, layout=fitting_layout(project, self.cluster), pinned=())
        self.doc.apply(new, "Import topology", "cluster")
        super().accept()
