"""GUI half of import and calibration: the Import topology dialog and the Calibration panel, driven
through their widgets on a real document (offscreen Qt)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("PySide6")

from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.precision import DType
from studio.core.project import Project
from studio.core.workload import ServingConfig

from .conftest import DATA, data_text

L40S = "topo/l40s-4gpu-2nic-spaces.txt"
A100_LOG = DATA / "nccl" / "a100-8gpu-nvswitch-allreduce.txt"
H200_8B = DATA / "serving" / "trtllm-v0.17-h200-fp8-llama-3.1-8b.jsonl"


def _doc(project):
    from studio.gui.document import ProjectDocument

    return ProjectDocument(project, threaded=False)


@pytest.fixture
def a100_doc(qtbot, catalog_full):
    cat = catalog_full
    cluster = build_cluster(cat.node("dgx-a100"), 1, cat.gpu("a100-sxm-80g"), cat.links)
    project = Project(cluster=cluster, model=cat.model("llama-3.1-8b").architecture, model_ref="llama-3.1-8b",
                      layout=Layout(tp=8))
    doc = _doc(project)
    yield doc
    doc.wait_idle()


def test_import_topology_replaces_the_cluster_in_one_undo_step(qtbot, a100_doc, catalog_full):
    from studio.gui.calibration import ImportTopologyDialog

    doc = a100_doc
    before = doc.project
    dlg = ImportTopologyDialog(doc, catalog_full)
    qtbot.addWidget(dlg)
    dlg.set_text(data_text(L40S))
    assert dlg.cluster is None and "(set GPU model above)" in dlg.preview.text()  # the text does not name the GPU
    assert "--gpu" not in dlg.preview.text()  # the window names its own control, not a CLI flag
    dlg.set_gpu("l40s")
    assert "Recognised 4 GPUs and 2 NICs" in dlg.preview.text()
    dlg.accept()
    cluster = doc.project.cluster
    assert cluster.num_gpus == 4 and cluster.gpu_types() == ["l40s"]
    assert doc.project.layout.world_size == 4
    assert doc.undo_stack.undoText() == "Import topology"
    doc.undo_stack.undo()
    assert doc.project is before


def test_import_topology_shows_line_and_column_of_a_bad_cell(qtbot, a100_doc, catalog_full):
    from studio.gui.calibration import ImportTopologyDialog

    dlg = ImportTopologyDialog(a100_doc, catalog_full)
    qtbot.addWidget(dlg)
    dlg.set_gpu("l40s")
    bad = data_text(L40S).replace("NODE", "WHAT", 1)
    dlg.set_text(bad)
    assert dlg.cluster is None
    assert "line" in dlg.error and "column" in dlg.error and "WHAT" in dlg.error
    before = a100_doc.project
    dlg.accept()
    assert a100_doc.project is before and not dlg.buttons.buttons()[0].isEnabled()


def test_calibration_panel_fits_nccl_and_saves_a_profile(qtbot, a100_doc, tmp_path):
    from studio.gui.calibration import CalibrationPanel

    doc = a100_doc
    panel = CalibrationPanel(doc)
    qtbot.addWidget(panel)
    panel.load_nccl([A100_LOG])
    panel.link_kind.setCurrentText("nvlink3-nvswitch")
    assert panel._guard(panel.fit_nccl), panel.last_error
    assert "⚠" not in panel.status.text()  # an 8-rank NVSwitch log fits its link kind: no warning
    fit = panel.link_fits["nvlink3-nvswitch"]
    assert fit.points == 18 and fit.rms_rel_error < panel.fit_error["nvlink3-nvswitch.default_rms_rel_error"]
    items = panel.curve.main.getPlotItem().listDataItems()
    assert len(items) == 3 and len(items[2].xData) == 18  # default curve, fitted curve, measured points
    before = doc.project
    panel.save_profile("lab-a100")
    assert doc.project.calibrations["lab-a100"].link_fits["nvlink3-nvswitch"] == fit
    assert doc.project.serving.calibration == "lab-a100"
    assert panel.active.currentData() == "lab-a100" and "fit error" in panel.active.currentText()
    doc.recompute_now()
    doc.wait_idle()
    assert doc.result is not None, doc.error
    assert doc.result.calibration == "lab-a100"
    out = tmp_path / "calibration-panel.png"
    panel.tabs.setCurrentIndex(0)
    panel.resize(900, 720)
    assert panel.grab().save(str(out)) and out.stat().st_size > 10_000
    doc.undo_stack.undo()
    assert doc.project is before


def test_calibration_panel_serving_fit_export_import(qtbot, catalog_full, tmp_path):
    from studio.gui.calibration import CalibrationPanel

    cat = catalog_full
    cluster = build_cluster(cat.node("hgx-h200"), 1, cat.gpu("h200-sxm"), cat.links)
    serving = ServingConfig(weight_dtype=DType.FP8, kv_dtype=DType.FP8, gpu_memory_utilization=0.95)
    doc = _doc(Project(cluster=cluster, model=cat.model("llama-3.1-8b").architecture, serving=serving,
                       layout=Layout(tp=8)))
    panel = CalibrationPanel(doc)
    qtbot.addWidget(panel)
    assert not panel._guard(panel.fit_serving) and "load serving" in panel.last_error
    # four of the table's runs: the panel's fit, plot, save, export and import do not depend on how
    # many (the whole table's fit is tested in test_serving_fit.py)
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(line + "\n" for line in H200_8B.read_text().splitlines()[:4]))
    panel.load_serving([runs])
    assert panel._guard(panel.fit_serving), panel.last_error
    items = panel.scatter.plot.getPlotItem().listDataItems()
    assert len(items) == 3 and len(items[2].xData) == 4  # y = x, defaults, fitted: one point per run
    panel.save_profile("h200-8b")
    path = tmp_path / "p.json"
    panel.export_profile("h200-8b", path)
    data = json.loads(path.read_text())
    assert set(data["efficiency"]) == {"prefill_efficiency", "decode_efficiency"}
    data["name"] = "shared"
    path.write_text(json.dumps(data))
    panel.import_profile(path)
    assert doc.project.calibrations["shared"].efficiency == doc.project.calibrations["h200-8b"].efficiency
    panel.use_profile(None)
    assert doc.project.serving.calibration is None
    data["efficiency"] = {"warp_speed": 0.5}
    path.write_text(json.dumps(data))
    assert not panel._guard(lambda: panel.import_profile(path)) and "warp_speed" in panel.last_error
    doc.wait_idle()


def test_main_window_has_the_actions_and_shows_the_profile(qtbot, a100_doc, catalog_full):
    from studio.gui.calibration.hook import calibration_text
    from studio.gui.window.main_window import MainWindow

    win = MainWindow(a100_doc, catalog_full)
    qtbot.addWidget(win)
    assert win.import_topology_action.text() == "Import &topology…"
    assert win.calibration_action.text() == "&Calibration…"
    from studio.core.project import CalibrationProfile, LinkFit

    prof = CalibrationProfile(name="lab", link_fits={"nvlink3-nvswitch": LinkFit(latency_us=10, bandwidth_gbps=150)},
                              fit_error={"nvlink3-nvswitch.rms_rel_error": 0.12})
    p = a100_doc.project
    a100_doc.apply(p.replace(calibrations={"lab": prof}, serving=p.serving.replace(calibration="lab")), "cal", "serving")
    a100_doc.recompute_now()
    a100_doc.wait_idle()
    assert win.calibration_label.text() == "calibration: lab (fit error 12.0%)"
    assert calibration_text(a100_doc.result, a100_doc.project) == win.calibration_label.text()
    win.ask_save = lambda: "discard"
    win.close()
