"""Tools ▸ Calibration…: fit link kinds to nccl-tests logs and efficiency factors to serving
benchmarks, then save the result as a named profile of the project (one undo step), choose the
profile plans use, and export/import profiles as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import StudioError
from studio.core.project import CalibrationProfile, LinkFit
from studio.gui.calibration.plots import CurvePlot, ScatterPlot
from studio.service.nccl_fit import MAX_FIT_RANKS

NONE = "(engine defaults)"


def _spin(maximum: int, special: str) -> QSpinBox:
    s = QSpinBox()
    s.setRange(0, maximum)
    s.setSpecialValueText(special)
    return s


class CalibrationPanel(QWidget):
    """The calibration tool of one :class:`~studio.gui.document.ProjectDocument`.

    Methods usable without dialogs (tests, scripts): :meth:`load_nccl`, :meth:`fit_nccl`,
    :meth:`load_serving`, :meth:`fit_serving`, :meth:`save_profile`, :meth:`use_profile`,
    :meth:`export_profile`, :meth:`import_profile`. Errors go to :attr:`status` (and
    :attr:`last_error`), never to a traceback.
    """

    def __init__(self, doc, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Calibration")
        self.doc = doc
        self.nccl_logs: list = []
        self.serving_files: list[str] = []
        self.link_fits: dict[str, LinkFit] = {}
        self.efficiency: dict[str, float] = {}
        self.fit_error: dict[str, float] = {}
        self.sources: list[str] = []
        self.last_error = ""

        tabs = QTabWidget()
        tabs.addTab(self._nccl_tab(), "NCCL links")
        tabs.addTab(self._serving_tab(), "Serving benchmarks")
        self.tabs = tabs
        self.status = QLabel("Load nccl-tests logs or serving-benchmark results, then Fit.")
        self.status.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addWidget(tabs, 1)
        lay.addWidget(self.status)
        lay.addWidget(self._profile_box())
        doc.projectChanged.connect(lambda *_: self._refresh_project())
        self._refresh_project()
        self.resize(900, 720)

    # ------------------------------------------------------------------ layout
    def _nccl_tab(self) -> QWidget:
        w = QWidget()
        load = QPushButton("Load logs…")
        load.clicked.connect(self._open_nccl)
        self.link_kind = QComboBox()
        self.link_kind.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.ranks = _spin(MAX_FIT_RANKS, "from the log")
        fit = QPushButton("Fit")
        fit.clicked.connect(lambda: self._guard(self.fit_nccl))
        self.nccl_info = QLabel("no logs")
        row = QHBoxLayout()
        for x in (load, QLabel("link kind"), self.link_kind, QLabel("ranks"), self.ranks, fit):
            row.addWidget(x)
        row.addStretch(1)
        self.curve = CurvePlot()
        lay = QVBoxLayout(w)
        lay.addLayout(row)
        lay.addWidget(self.nccl_info)
        lay.addWidget(self.curve, 1)
        return w

    def _serving_tab(self) -> QWidget:
        w = QWidget()
        load = QPushButton("Load results…")
        load.clicked.connect(self._open_serving)
        fit = QPushButton("Fit")
        fit.clicked.connect(lambda: self._guard(self.fit_serving))
        self.tp, self.pp = _spin(4096, "file"), _spin(4096, "file / 1")
        self.isl, self.osl = _spin(10_000_000, "file"), _spin(10_000_000, "file")
        self.concurrency = _spin(1_000_000, "file / as fits")
        form = QHBoxLayout()
        for label, s in (("TP", self.tp), ("PP", self.pp), ("ISL", self.isl), ("OSL", self.osl),
                         ("concurrency", self.concurrency)):
            form.addWidget(QLabel(label))
            form.addWidget(s)
        self.measure = QComboBox()
        self.measure.currentIndexChanged.connect(lambda *_: self._draw_serving())
        row = QHBoxLayout()
        row.addWidget(load)
        row.addLayout(form)
        row.addWidget(fit)
        row.addStretch(1)
        self.serving_info = QLabel("no results (values the files do not record come from the boxes)")
        self.serving_info.setWordWrap(True)
        self.scatter = ScatterPlot()
        lay = QVBoxLayout(w)
        lay.addLayout(row)
        lay.addWidget(self.serving_info)
        lay.addWidget(self.measure)
        lay.addWidget(self.scatter, 1)
        self._serving_fit = None
        return w

    def _profile_box(self) -> QWidget:
        box = QGroupBox("Profile")
        self.name = QLineEdit()
        self.name.setPlaceholderText("profile name, e.g. lab-h200")
        save = QPushButton("Save in project")
        save.clicked.connect(lambda: self._guard(lambda: self.save_profile(self.name.text())))
        self.active = QComboBox()
        self.active.activated.connect(lambda *_: self._guard(lambda: self.use_profile(self.active.currentData())))
        exp = QPushButton("Export…")
        exp.clicked.connect(self._export_dialog)
        imp = QPushButton("Import…")
        imp.clicked.connect(self._import_dialog)
        form = QFormLayout(box)
        row = QHBoxLayout()
        row.addWidget(self.name, 1)
        row.addWidget(save)
        form.addRow("Save fit as", row)
        row2 = QHBoxLayout()
        row2.addWidget(self.active, 1)
        row2.addWidget(exp)
        row2.addWidget(imp)
        form.addRow("Plans use", row2)
        return box

    # ------------------------------------------------------------------ helpers
    def _guard(self, fn) -> bool:
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            fn()
            self.last_error = ""
            return True
        except StudioError as exc:
            self.last_error = str(exc)
            self.status.setText(str(exc))
            self.status.setStyleSheet("color: #c92a2a;")
            return False
        finally:
            QApplication.restoreOverrideCursor()

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.status.setStyleSheet("")

    def _refresh_project(self) -> None:
        p = self.doc.project
        cur = self.link_kind.currentText()
        self.link_kind.clear()
        self.link_kind.addItems(sorted(p.cluster.link_kinds))
        if cur:
            self.link_kind.setCurrentText(cur)
        self.active.clear()
        self.active.addItem(NONE, None)
        for name, prof in sorted(p.calibrations.items()):
            err = _headline_error(prof)
            self.active.addItem(name + (f"  (fit error {err:.1%})" if err is not None else ""), name)
        i = self.active.findData(p.serving.calibration)
        self.active.setCurrentIndex(max(0, i))

    # ------------------------------------------------------------------ NCCL
    def _open_nccl(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "nccl-tests logs", "", "Logs (*.txt *.log *.out);;All files (*)")
        if paths:
            self._guard(lambda: self.load_nccl(paths))

    def load_nccl(self, paths) -> None:
        from studio.io.importers.nccl_log import read_nccl_log
        from studio.service.nccl_fit import one_collective

        logs = [read_nccl_log(str(p)) for p in paths]
        collective = one_collective(logs)
        self.nccl_logs = logs
        n = sum(len(log.rows) for log in logs)
        self.nccl_info.setText(f"{len(logs)} log(s), {collective}, {n} sizes, ranks {logs[0].group_size or '?'}")
        self._say("Logs loaded; choose the link kind the test ran over and Fit.")

    def fit_nccl(self) -> None:
        """Fit the chosen link kind to the loaded logs on the project's cluster
        (:func:`studio.service.nccl_fit.fit_nccl`, as ``layout-studio calibrate nccl`` does)."""
        from studio.engine.search.calibration import engine_times
        from studio.io.presets import load_catalog
        from studio.service.nccl_fit import fit_nccl

        cluster = self.doc.project.cluster
        kind = self.link_kind.currentText()
        result = fit_nccl(cluster, self.nccl_logs, kind, self.ranks.value() or None,
                          list(load_catalog().nodes.values()))
        fit, coll, group = result.fit, result.collective, list(result.gpus)
        grid = np.geomspace(fit.sizes.min(), fit.sizes.max(), 80)
        curve = engine_times(cluster, group, grid, collective=coll, link_fits={kind: fit.link_fit})
        base = engine_times(cluster, group, grid, collective=coll)
        self.curve.show_fit(fit.sizes, fit.times_us, grid, curve, base, fit.residuals, fit.default_residuals)
        self.link_fits[kind] = fit.link_fit
        self.fit_error.update(result.fit_error)
        self.sources += [log.source for log in self.nccl_logs]
        if not self.name.text():
            self.name.setText(f"nccl-{kind}")
        self._say(f"{kind}: {fit.link_fit.latency_us:.3g} µs per hop, {fit.link_fit.bandwidth_gbps:.4g} GB/s per "
                  f"link; RMS relative error {result.before:.1%} → {result.after:.1%}")
        if result.warnings:  # the same warnings as `layout-studio calibrate nccl`
            self.status.setText(self.status.text() + "\n" + "\n".join(f"⚠ {w}" for w in result.warnings))
            self.status.setStyleSheet("color: #e8590c;")

    # ------------------------------------------------------------------ serving
    def _open_serving(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Serving results", "",
                                                "Results (*.json *.jsonl *.txt *.log);;All files (*)")
        if paths:
            self._guard(lambda: self.load_serving(paths))

    def _defaults(self) -> dict[str, int | None]:
        return {k: (s.value() or None) for k, s in (("tp", self.tp), ("pp", self.pp), ("isl", self.isl),
                                                    ("osl", self.osl), ("concurrency", self.concurrency))}

    def load_serving(self, paths) -> None:
        from studio.io.importers.serving_bench import read_serving_file

        runs = [r for p in paths for r in read_serving_file(p)]
        self.serving_files = [str(p) for p in paths]
        self.serving_info.setText(f"{len(runs)} run(s) from {len(paths)} file(s): "
                                  + ", ".join(sorted({r.format for r in runs})))
        self._say("Results loaded; Fit adjusts the engine's efficiency factors for this project's GPUs and model.")

    def fit_serving(self) -> None:
        from studio.io.importers.serving_bench import fit_files

        if not self.serving_files:
            raise StudioError("load serving-benchmark results first")
        fit = fit_files(self.doc.project, self.serving_files, **self._defaults())
        self._serving_fit = fit
        self.efficiency.update(fit.efficiency)
        self.fit_error.update(fit.fit_error())
        self.sources += self.serving_files
        self.measure.blockSignals(True)
        self.measure.clear()
        self.measure.addItems(list(fit.measures()))
        self.measure.blockSignals(False)
        self._draw_serving()
        if not self.name.text():
            self.name.setText(f"serving-{self.doc.project.cluster.gpu_types()[0]}")
        err = fit.fit_error()
        self._say(", ".join(f"{k} = {v:.3g}" for k, v in fit.efficiency.items())
                  + f"; output tok/s RMS relative error {err['serving.output_tok_s.default_rms_rel_error']:.1%} → "
                  f"{err['serving.output_tok_s.rms_rel_error']:.1%}"
                  + (f"; {len(fit.skipped)} run(s) skipped (do not fit in memory)" if fit.skipped else ""))

    def _draw_serving(self) -> None:
        fit = self._serving_fit
        m = self.measure.currentText()
        if fit is None or not m:
            return
        rows = [(p.measured(m), d[m], f[m]) for p, d, f in zip(fit.points, fit.default_pred, fit.fitted_pred, strict=True)
                if p.measured(m)]
        meas, dflt, fitted = (np.array(c) for c in zip(*rows, strict=True))
        unit = {"output_tok_s": "tok/s", "ttft_ms": "ms", "tpot_ms": "ms"}[m]
        self.scatter.show_points(meas, dflt, fitted, unit)

    # ------------------------------------------------------------------ profiles
    def current_profile(self, name: str) -> CalibrationProfile:
        """The fits made in this panel as a profile named ``name``."""
        if not (self.link_fits or self.efficiency):
            raise StudioError("nothing fitted yet: fit NCCL logs or serving results first")
        name = name.strip()
        if not name:
            raise StudioError("give the profile a name")
        parts = [f"link kinds {', '.join(sorted(self.link_fits))}"] if self.link_fits else []
        parts += [f"efficiency {', '.join(sorted(self.efficiency))}"] if self.efficiency else []
        return CalibrationProfile(
            name=name[:120], description="fitted in the Calibration panel: " + "; ".join(parts),
            link_fits=dict(self.link_fits), efficiency=dict(self.efficiency), fit_error=dict(self.fit_error),
            source_files=tuple(dict.fromkeys(self.sources)),
        )

    def save_profile(self, name: str, use: bool = True) -> CalibrationProfile:
        """Store the fit in the project as ``name`` (and make plans use it): one undo step."""
        prof = self.current_profile(name)
        p = self.doc.project
        calib = {**p.calibrations, prof.name: prof}
        serving = p.serving.replace(calibration=prof.name) if use else p.serving
        self.doc.apply(p.replace(calibrations=calib, serving=serving), f"Save calibration '{prof.name}'", "serving")
        self._say(f"Saved profile '{prof.name}' in the project" + (" and made plans use it." if use else "."))
        return prof

    def use_profile(self, name: str | None) -> None:
        """Make plans use profile ``name`` (None: the engine's defaults): one undo step."""
        p = self.doc.project
        if name is not None and name not in p.calibrations:
            raise StudioError(f"no profile '{name}' in this project; known: {', '.join(sorted(p.calibrations)) or 'none'}")
        if p.serving.calibration != name:
            self.doc.apply(p.replace(serving=p.serving.replace(calibration=name)),
                           f"Use calibration '{name or 'defaults'}'", "serving")

    def export_profile(self, name: str, path: str | Path) -> None:
        p = self.doc.project
        if name not in p.calibrations:
            raise StudioError(f"no profile '{name}' in this project")
        from studio.io.atomic import write_text_atomic

        # the one atomic writer, as `calibrate -o` writes a profile: a failed write leaves the old
        # file, a link at the target is replaced rather than written through
        write_text_atomic(json.dumps(p.calibrations[name].model_dump(), indent=2) + "\n", path, what="profile")
        self._say(f"Exported '{name}' to {path}")

    def import_profile(self, path: str | Path) -> CalibrationProfile:
        """Add a profile JSON file (as written by Export or ``layout-studio calibrate -o``): one undo step."""
        from pydantic import ValidationError

        from studio.io.project_file import validation_message
        from studio.io.safe import load_json_file

        data = load_json_file(path, 4 * 1024 * 1024, "calibration profile")
        try:
            prof = CalibrationProfile.model_validate(data)
        except ValidationError as exc:
            raise StudioError(f"not a calibration profile: {validation_message(exc)}", str(path)) from None
        from studio.engine.step.constants import default_constants

        default_constants().with_overrides(dict(prof.efficiency))  # unknown names: clear error now
        p = self.doc.project
        self.doc.apply(p.replace(calibrations={**p.calibrations, prof.name: prof}),
                       f"Import calibration '{prof.name}'", "serving")
        self._say(f"Imported profile '{prof.name}'.")
        return prof

    def _export_dialog(self) -> None:
        name = self.active.currentData()
        if name is None:
            self._guard(lambda: (_ for _ in ()).throw(StudioError("choose a saved profile to export")))
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export profile", f"{name}.json", "JSON (*.json)")
        if path:
            self._guard(lambda: self.export_profile(name, path))

    def _import_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import profile", "", "JSON (*.json)")
        if path:
            self._guard(lambda: self.import_profile(path))


def _headline_error(prof: CalibrationProfile) -> float | None:
    """The profile's own fit error: output tok/s if fitted, else the worst link kind's."""
    e = prof.fit_error
    if "serving.output_tok_s.rms_rel_error" in e:
        return e["serving.output_tok_s.rms_rel_error"]
    links = [v for k, v in e.items() if k.endswith(".rms_rel_error") and not k.endswith("default_rms_rel_error")]
    return max(links) if links else None


def headline_error(prof: CalibrationProfile) -> float | None:
    """Public alias used by the status-bar label."""
    return _headline_error(prof)
