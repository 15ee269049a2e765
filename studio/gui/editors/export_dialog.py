"""File ▸ Export launch config…: the open plan as vLLM / TensorRT-LLM / SGLang commands, config
YAML, a launch script or a Kubernetes manifest, previewed file by file before it is copied or
saved. The files come from :func:`studio.io.export.export_plan`; this module only shows them."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase, QGuiApplication, QStandardItemModel
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.io.export import (
    ENGINE_FORMATS,
    ENGINE_LABELS,
    ENGINE_VERSIONS,
    FORMAT_LABELS,
    ExportBundle,
    export_plan,
)
from studio.io.export.checks.check import CheckReport, check
from studio.io.export.write import write_files
from studio.service.export_layout import ExportedLayoutVerdict, verdict_for
from studio.service.plan_summary import plan_summary

NOTES_STYLE = (
    "QLabel { background: #fff4ce; color: #4a3b00; border: 1px solid #e0c060; border-radius: 4px; padding: 6px; }"
)
OK_STYLE = (
    "QLabel { background: #e6f4ea; color: #0b3d1a; border: 1px solid #8cc79b; border-radius: 4px; padding: 6px; }"
)
ERROR_STYLE = (
    "QLabel { background: #fde7e9; color: #7a0010; border: 1px solid #e08a94; border-radius: 4px; padding: 6px; }"
)


def parse_hosts(text: str) -> tuple[str, ...] | None:
    """Host names from the hosts field: separated by commas or white space; None when empty."""
    hosts = tuple(h for h in re.split(r"[,\s]+", text.strip()) if h)
    return hosts or None


def current_plan(doc) -> PlanResult:
    """The document's latest result when it is current, else a fresh evaluation of its project.

    Raises
    ------
    StudioError
        The engine cannot evaluate the project (the message says why).
    """
    if doc.result_is_current and isinstance(doc.result, PlanResult):
        return doc.result
    from studio.engine import evaluate

    return evaluate(doc.project)


class ExportDialog(QDialog):
    """Choose engine, format, model path and hosts; preview every generated file; copy or save.

    Hooks for tests and embedders: :attr:`choose_folder` (returns a folder or None) and
    :attr:`confirm_overwrite` (the files that exist → whether to replace them) and
    :attr:`confirm_problems` (a check report with errors → whether to write the files anyway).
    """

    def __init__(self, project: Project, plan: PlanResult, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export launch config")
        self.project = project
        self.plan = plan
        self.bundle: ExportBundle | None = None
        #: The verdict on the layout the files run, when not the plan's.
        self.nearest_verdict: ExportedLayoutVerdict | None = None
        self.choose_folder: Callable[[], str | None] = self._choose_folder_dialog
        self.confirm_overwrite: Callable[[Sequence[Path]], bool] = self._confirm_overwrite_dialog
        self.confirm_problems: Callable[[CheckReport], bool] = self._confirm_problems_dialog
        self.report: CheckReport | None = None  # the check of the previewed recipe, once it ran

        self.engine = QComboBox()
        for eid, label in ENGINE_LABELS.items():
            self.engine.addItem(label, eid)
            self.engine.setItemData(self.engine.count() - 1, f"flags checked against {ENGINE_VERSIONS[eid]}",
                                    Qt.ItemDataRole.ToolTipRole)
        self.format = QComboBox()
        for fid, label in FORMAT_LABELS.items():
            self.format.addItem(label, fid)
        self.model_path = QLineEdit(project.model.hf_model_id or "")
        self.model_path.setPlaceholderText("checkpoint folder or Hugging Face id")
        self.model_path.setToolTip("Written quoted: the text stays one word in every generated command")
        self.hosts = QLineEdit()
        used = _used_node_names(plan, project)
        self.hosts.setPlaceholderText(
            f"{len(used)} host name(s) or IPs, comma separated, for: {', '.join(used)}" if used else "host names"
        )
        self.hosts.setToolTip(
            "Host name or IP address of each node the plan uses, in rank order; empty: commands show "
            "<HOST_i> placeholders and scripts read HOST_i variables"
        )
        from studio.io.export.checks.engine_run import ENGINE_PYTHON_ENV

        self.engine_python = QLineEdit(os.environ.get(ENGINE_PYTHON_ENV, ""))
        self.engine_python.setPlaceholderText("this Python (when the engine is installed here)")
        self.engine_python.setToolTip(
            "Python interpreter of an environment that has the engine installed: Check runs the engine's own "
            f"argument parser and config validators with it (default: ${ENGINE_PYTHON_ENV}, else this Python)"
        )
        facts = plan_summary(plan)
        head = QLabel(
            f"<b>{_esc(facts.layout)}</b> · {facts.gpus} GPUs · "
            + (_esc(facts.verdict) if facts.runs
               else f"<span style='color:#a00'>{_esc(facts.verdict)}</span> ({_esc(facts.reason)})")
        )
        head.setWordWrap(True)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setStyleSheet(NOTES_STYLE)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setTextFormat(Qt.TextFormat.PlainText)  # messages quote user text such as '<HOST_0>'
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.status = QLabel()
        self.status.setObjectName("hint")
        self.status.setWordWrap(True)

        form = QFormLayout()
        form.addRow("Engine", self.engine)
        form.addRow("Format", self.format)
        form.addRow("Model", self.model_path)
        form.addRow("Hosts", self.hosts)
        form.addRow("Engine Python", self.engine_python)
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the file shown to the clipboard")
        self.save_button = QPushButton("Save to folder…")
        self.save_button.setToolTip(
            "Check the recipe, show the verdict, then write every file into a folder (asks before writing "
            "a recipe the check refuses, and before replacing a file)"
        )
        self.check_button = QPushButton("Check")
        self.check_button.setToolTip(
            "Check the recipe against the engine's run-time rules, then with the engine's own argument parser "
            "and config validators when the engine is installed (here or in the Engine Python's environment), "
            "without starting a server or needing a GPU"
        )
        self.check_result = QLabel()
        self.check_result.setWordWrap(True)
        self.check_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.check_result.hide()
        close = QPushButton("Close")
        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        buttons.addWidget(self.check_button)
        buttons.addWidget(self.copy_button)
        buttons.addWidget(self.save_button)
        buttons.addWidget(close)
        box = QVBoxLayout(self)
        box.addWidget(head)
        box.addLayout(form)
        box.addWidget(self.error)
        box.addWidget(self.notes)
        box.addWidget(self.check_result)
        box.addWidget(self.tabs, 1)
        box.addLayout(buttons)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(200)
        self._timer.timeout.connect(self.refresh)
        self.engine.currentIndexChanged.connect(self._engine_changed)
        self.format.currentIndexChanged.connect(lambda _i: self.refresh())
        self.model_path.textChanged.connect(lambda _t: self._timer.start())
        self.hosts.textChanged.connect(lambda _t: self._timer.start())
        self.engine_python.textChanged.connect(lambda _t: self._forget_check())
        self.copy_button.clicked.connect(self.copy_current)
        self.check_button.clicked.connect(self.check_current)
        self.save_button.clicked.connect(lambda: self.save_to())
        close.clicked.connect(self.reject)
        self.resize(900, 680)
        self._engine_changed()

    # ------------------------------------------------------------------ choices
    def set_choice(self, engine: str, fmt: str | None = None) -> None:
        """Select ``engine`` (and ``fmt``) as a user would; the preview follows."""
        i = self.engine.findData(engine)
        if i < 0:
            raise StudioError(f"engine '{engine}' is not offered; allowed: {', '.join(ENGINE_LABELS)}")
        self.engine.setCurrentIndex(i)
        if fmt is not None:
            j = self.format.findData(fmt)
            if j < 0 or not self.format_enabled(fmt):
                raise StudioError(
                    f"format '{fmt}' is not offered for {ENGINE_LABELS[engine]}; allowed: "
                    + ", ".join(ENGINE_FORMATS[engine])
                )
            self.format.setCurrentIndex(j)
        self.refresh()

    def format_enabled(self, fmt: str) -> bool:
        """Whether ``fmt`` can be chosen for the current engine (greyed out otherwise)."""
        model = self.format.model()
        item = model.item(self.format.findData(fmt)) if isinstance(model, QStandardItemModel) else None
        return item is not None and item.isEnabled()

    def _engine_changed(self) -> None:
        engine = self.engine.currentData()
        model = self.format.model()
        for i in range(self.format.count()):
            fid = self.format.itemData(i)
            allowed = fid in ENGINE_FORMATS[engine]
            if isinstance(model, QStandardItemModel):
                model.item(i).setEnabled(allowed)
            tip = "" if allowed else f"{ENGINE_LABELS[engine]} has no {FORMAT_LABELS[fid]} export"
            self.format.setItemData(i, tip or None, Qt.ItemDataRole.ToolTipRole)
        if self.format.currentData() not in ENGINE_FORMATS[engine]:
            self.format.setCurrentIndex(self.format.findData("command"))
        self.refresh()

    # ------------------------------------------------------------------ preview
    def refresh(self) -> None:
        """Export again with the current choices and show the files, the notes or the error."""
        self._timer.stop()
        engine, fmt = self.engine.currentData(), self.format.currentData()
        path = self.model_path.text().strip() or None
        try:
            bundle = export_plan(self.project, self.plan, engine=engine, fmt=fmt, model_path=path,
                                 hosts=parse_hosts(self.hosts.text()))
        except StudioError as exc:
            self.bundle = None
            self.error.setText(str(exc))
            self.error.show()
            self.notes.hide()
            self.tabs.clear()
            self.copy_button.setEnabled(False)
            self.save_button.setEnabled(False)
            self.check_button.setEnabled(False)
            self.check_result.hide()
            return
        self.bundle = bundle
        self.report = None
        self.check_result.hide()
        self.error.hide()
        self._show_notes(bundle)
        current = self.tabs.tabText(self.tabs.currentIndex()) if self.tabs.count() else None
        self.tabs.clear()
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        for name, text in bundle.files.items():
            view = QPlainTextEdit(text)
            view.setReadOnly(True)
            view.setFont(font)
            view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            self.tabs.addTab(view, name)
            if name == current:
                self.tabs.setCurrentIndex(self.tabs.count() - 1)
        self.copy_button.setEnabled(bool(bundle.files))
        self.save_button.setEnabled(bool(bundle.files))
        self.check_button.setEnabled(bundle.recipe is not None)
        self.status.setText(f"{len(bundle.files)} file(s) for {ENGINE_VERSIONS[engine]}")

    def _show_notes(self, bundle: ExportBundle) -> None:
        self.nearest_verdict = None
        lines = [f"• {_esc(n)}" for n in bundle.notes]
        if bundle.nearest_layout is not None:
            v = verdict_for(self.project, bundle.nearest_layout)
            if v.fits:
                lines.append(f"• The files run <b>{_esc(v.layout.label)}</b>, the nearest layout this "
                             f"engine can express; it fits ({_esc(v.reason)}).")
            else:
                way_out = (f" A layout that fits: <b>{_esc(v.proposal)}</b> (Best layout for my targets)."
                           if v.proposal else "")
                lines.append(f"• The files run <b>{_esc(v.layout.label)}</b>, the nearest layout this engine "
                             f"can express, and it <span style='color:#a00'>does not fit</span>: "
                             f"{_esc(v.reason)}.{way_out}")
            self.nearest_verdict = v
        self.notes.setText("<b>Notes: what the engine cannot express, and what to check</b><br>" + "<br>".join(lines) if lines else "")
        self.notes.setVisible(bool(lines))

    def _forget_check(self) -> None:
        """Another engine interpreter: the verdict shown is no longer this check's."""
        self.report = None
        self.check_result.hide()

    def check_current(self) -> CheckReport | None:
        """Check the previewed recipe (the Check button): the engine's run-time rules, then its own
        parser and config validators when it is installed (run by the Engine Python field's
        interpreter, else this one); the verdict, every finding and whether the engine's own
        validation ran are shown above the files. Returns the report (``None`` without a recipe)."""
        if self.bundle is None or self.bundle.recipe is None:
            return None
        python = self.engine_python.text().strip() or None
        self.status.setText("Checking (the engine's own validation takes a few seconds)…")
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        QApplication.processEvents()
        try:
            report = check(self.bundle.recipe, python=python)
        except StudioError as exc:
            self.check_result.setStyleSheet(ERROR_STYLE)
            self.check_result.setText(_esc(str(exc)))
            self.check_result.show()
            return None
        finally:
            QApplication.restoreOverrideCursor()
        self.report = report
        lines = report.lines()
        self.check_result.setStyleSheet(OK_STYLE if report.ok else ERROR_STYLE)
        self.check_result.setText(f"<b>{_esc(lines[0])}</b><br>" + "<br>".join(_esc(ln) for ln in lines[1:]))
        self.check_result.show()
        self.status.setText("Check passed" if report.ok else "Check found problems")
        return report

    def file_texts(self) -> dict[str, str]:
        """The previewed files (name → text), as the tabs show them."""
        return {self.tabs.tabText(i): cast(QPlainTextEdit, self.tabs.widget(i)).toPlainText() for i in range(self.tabs.count())}

    # ------------------------------------------------------------------ copy / save
    def copy_current(self) -> str | None:
        """Put the file shown into the clipboard; returns its name."""
        if self.bundle is None or not self.tabs.count():
            return None
        name = self.tabs.tabText(self.tabs.currentIndex())
        QGuiApplication.clipboard().setText(self.bundle.files[name])
        self.status.setText(f"Copied {name} to the clipboard")
        return name

    def save_to(self, folder: str | Path | None = None) -> list[Path]:
        """Check the recipe (its verdict shown above the files), then write every file of the export
        into ``folder`` (asks for one when None). A recipe the check refuses is written only after
        :attr:`confirm_problems` agrees; files that exist are replaced only after
        :attr:`confirm_overwrite` agrees, all together (see :func:`studio.io.export.write.write_files`);
        returns the files written."""
        if self.bundle is None:
            return []
        report = self.report if self.report is not None else self.check_current()
        if report is not None and not report.ok and not self.confirm_problems(report):
            self.status.setText("Nothing written: the check found problems (see above)")
            return []
        if folder is None:
            folder = self.choose_folder()
            if not folder:
                return []
        target = Path(folder)
        try:
            if not target.is_dir():
                raise StudioError("not a folder (choose an existing folder)", str(target))
            paths = [target / name for name in self.bundle.files]
            existing = [p for p in paths if p.exists()]
            if existing and not self.confirm_overwrite(existing):
                self.status.setText("Nothing written: the files exist and were kept")
                return []
            paths = write_files(self.bundle.files, target)
        except OSError as exc:
            self._save_failed(f"cannot write to {target} ({exc.strerror or exc})")
            return []
        except StudioError as exc:
            self._save_failed(str(exc))
            return []
        self.status.setText(f"Saved {len(paths)} file(s) to {target}")
        return paths

    def _save_failed(self, message: str) -> None:
        self.status.setText("Not saved")
        QMessageBox.warning(self, "Cannot save the export", message)

    def _choose_folder_dialog(self) -> str | None:
        folder = QFileDialog.getExistingDirectory(self, "Save the export into a folder", str(Path.home()))
        return folder or None

    def _confirm_problems_dialog(self, report: CheckReport) -> bool:
        errors = sum(f.severity == "error" for f in report.findings)
        answer = QMessageBox.question(
            self,
            "Write a recipe the check refuses?",
            f"The check found {errors} problem(s) that would stop the engine or change the layout "
            "(shown above the files).\n\nWrite the files anyway?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def _confirm_overwrite_dialog(self, existing: Sequence[Path]) -> bool:
        names = "\n".join(p.name for p in existing)
        answer = QMessageBox.question(
            self,
            "Replace files?",
            f"These files exist in {existing[0].parent}:\n{names}\n\nReplace them?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _used_node_names(plan: PlanResult, project: Project) -> list[str]:
    """Names of the drawn nodes the plan runs on, in rank order (the default hosts)."""
    from studio.io.export.common import deployment

    try:
        return [n.name for n in deployment(project, plan, None).nodes]
    except StudioError:
        return []  # the export itself says why when it is tried


def open_export_dialog(window) -> ExportDialog | None:
    """File ▸ Export launch config… of the studio window: a dialog on the open document's plan.

    ``window`` has ``doc`` and ``show_error(title, text)``; a project the engine cannot evaluate
    gives an error dialog instead. The dialog is kept as ``window.export_dialog``.
    """
    try:
        plan = current_plan(window.doc)
    except StudioError as exc:
        window.show_error("Export launch config: cannot do that", str(exc))
        return None
    dlg = ExportDialog(window.doc.project, plan, window)
    dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    window.export_dialog = dlg
    dlg.open()
    return dlg
