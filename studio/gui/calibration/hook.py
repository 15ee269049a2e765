"""Adds File ▸ Import topology…, Tools ▸ Calibration… and a status-bar label naming the calibration
profile the current plan uses (with its fit error) to a main window: ``install(window)``."""

from __future__ import annotations

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDialog, QLabel, QMenu, QVBoxLayout


def _menu(window, title: str) -> QMenu:
    for act in window.menuBar().actions():
        if act.menu() is not None and act.text().replace("&", "") == title.replace("&", ""):
            return act.menu()
    help_menu = next((a for a in window.menuBar().actions() if a.text().replace("&", "") == "Help"), None)
    menu = QMenu(title, window)
    if help_menu is not None:
        window.menuBar().insertMenu(help_menu, menu)
    else:
        window.menuBar().addMenu(menu)
    return menu


def open_import_topology(window) -> None:
    from studio.gui.calibration.topo_dialog import ImportTopologyDialog
    from studio.io.presets import load_catalog

    dlg = ImportTopologyDialog(window.doc, window.catalog or load_catalog(), window)
    if dlg.exec() == QDialog.DialogCode.Accepted and hasattr(window, "canvas"):
        window.canvas.fit()


def open_calibration(window) -> None:
    from studio.gui.calibration.panel import CalibrationPanel

    dlg = getattr(window, "calibration_dialog", None)
    if dlg is None:
        dlg = QDialog(window)
        dlg.setWindowTitle("Calibration")
        lay = QVBoxLayout(dlg)
        lay.setContentsMargins(4, 4, 4, 4)
        panel = CalibrationPanel(window.doc, dlg)
        dlg.panel = panel  # type: ignore[attr-defined]  # the dialog's panel, for the window and tests
        lay.addWidget(panel)
        dlg.resize(920, 760)
        window.calibration_dialog = dlg
    dlg.show()
    dlg.raise_()


def calibration_text(result, project) -> str:
    """'calibration: NAME (fit error X %)' or 'engine defaults' for a plan result."""
    from studio.gui.calibration.panel import headline_error

    name = getattr(result, "calibration", None)
    if not name:
        return "calibration: engine defaults"
    prof = project.calibrations.get(name)
    err = headline_error(prof) if prof is not None else None
    return f"calibration: {name}" + (f" (fit error {err:.1%})" if err is not None else "")


def install(window) -> None:
    """Add the two actions and the status-bar calibration label to ``window`` (a MainWindow with
    ``doc``, ``catalog``, ``menuBar()`` and ``statusBar()``)."""
    imp = QAction("Import &topology…", window)
    imp.setStatusTip("Build the cluster from `nvidia-smi topo -m` output")
    imp.triggered.connect(lambda _=False: open_import_topology(window))
    cal = QAction("&Calibration…", window)
    cal.setStatusTip("Fit links and efficiencies to your own NCCL and serving benchmarks")
    cal.triggered.connect(lambda _=False: open_calibration(window))
    file_menu = _menu(window, "&File")
    anchor = next((a for a in file_menu.actions() if a.isSeparator()), None)
    file_menu.insertAction(anchor, imp) if anchor else file_menu.addAction(imp)
    _menu(window, "&Tools").addAction(cal)
    window.import_topology_action, window.calibration_action = imp, cal
    label = QLabel("calibration: engine defaults")
    window.statusBar().addPermanentWidget(label)
    window.calibration_label = label
    window.doc.resultReady.connect(lambda r, _rev: label.setText(calibration_text(r, window.doc.project)))
