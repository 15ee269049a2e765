"""The window refuses what the command line refuses for the same input: each workflow that both
run lives once in ``studio.service``, and each test here drives the window with real events and the
command line with the same input, and checks that both say no (the window without a flag name)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton

from studio.cli import main

NCCL = Path(__file__).resolve().parents[1] / "data" / "nccl" / "a100-8gpu-nvswitch-allreduce.txt"


def _cli_error(capsys, argv: list[str]) -> str:
    """The one error line the command line prints for ``argv`` (it must exit with 2)."""
    capsys.readouterr()
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _big_log(tmp_path, ranks: int):
    """The A100 all-reduce log with ``ranks`` rank lines in its header (its run had that many)."""
    rows = NCCL.read_text(encoding="utf-8")
    header = "".join(
        f"#  Rank {r:5d} Group  0 Pid   1234 on    host-a device  0 [0x18] NVIDIA A100\n" for r in range(ranks)
    )
    log = tmp_path / "big.log"
    log.write_text("# Using devices\n" + header + rows, encoding="utf-8")
    return log


@pytest.fixture
def panel(qtbot, doc):
    from studio.gui.calibration import CalibrationPanel

    p = CalibrationPanel(doc)
    qtbot.addWidget(p)
    p.show()
    return p


def _nccl_fit_button(panel) -> QPushButton:
    (button,) = [b for b in panel.tabs.widget(0).findChildren(QPushButton) if b.text() == "Fit"]
    return button


def test_nccl_fit_refuses_a_run_of_more_ranks_than_the_cli_fits(qtbot, panel, tmp_path, capsys):
    from studio.service.nccl_fit import MAX_FIT_RANKS

    log = _big_log(tmp_path, MAX_FIT_RANKS + 904)
    cli = _cli_error(capsys, ["calibrate", "nccl", str(log), "--link-kind", "nvlink4-nvswitch"])
    assert cli == "layout-studio: error: --ranks: the log's run has 5,000 ranks; calibrate nccl fits runs of 2 to 4,096 ranks"
    panel.load_nccl([log])
    panel.link_kind.setCurrentText("nvlink4-nvswitch")
    qtbot.mouseClick(_nccl_fit_button(panel), Qt.MouseButton.LeftButton)
    assert panel.status.text() == "the log's run has 5,000 ranks; calibrate nccl fits runs of 2 to 4,096 ranks"
    assert panel.link_fits == {}


def test_nccl_ranks_box_stops_where_the_cli_bound_does(qtbot, panel, capsys):
    cli = _cli_error(capsys, ["calibrate", "nccl", str(NCCL), "--link-kind", "nvlink4-nvswitch", "--ranks", "100000"])
    assert "expected a whole number from 2 to 4,096" in cli
    panel.ranks.lineEdit().selectAll()
    qtbot.keyClicks(panel.ranks, "100000")
    qtbot.keyClick(panel.ranks, Qt.Key.Key_Return)
    assert panel.ranks.maximum() == 4_096 and panel.ranks.value() <= 4_096
    # one rank: the command line's parser refuses it, the window's fit does too
    assert "from 2 to 4,096" in _cli_error(capsys, ["calibrate", "nccl", str(NCCL), "--link-kind",
                                                    "nvlink4-nvswitch", "--ranks", "1"])
    panel.load_nccl([NCCL])
    panel.link_kind.setCurrentText("nvlink4-nvswitch")
    panel.ranks.setValue(1)
    qtbot.mouseClick(_nccl_fit_button(panel), Qt.MouseButton.LeftButton)
    assert panel.status.text() == "the run is given 1 rank; calibrate nccl fits runs of 2 to 4,096 ranks"
    assert panel.link_fits == {}


# ----------------------------------------------------------------------------- layout choices
def _layout_panel(qtbot, doc):
    from studio.gui.panels.layout_panel import LayoutPanel

    panel = LayoutPanel(doc)
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def _project_file(doc, tmp_path) -> str:
    from studio.io.project_file import project_to_json

    path = tmp_path / "project.json"
    path.write_text(project_to_json(doc.project), encoding="utf-8")
    return str(path)


def test_layout_panel_offers_exactly_the_tp_values_the_cli_accepts(qtbot, doc, tmp_path, capsys):
    """Every TP the panel offers, chosen with the keyboard, gives a layout the command line plans;
    a TP it does not offer (3 of 16 GPUs) is one the command line refuses."""
    path = _project_file(doc, tmp_path)
    panel = _layout_panel(qtbot, doc)
    tp = panel.combos["tp"]
    offered = [tp.itemData(i) for i in range(tp.count())]
    assert offered == [1, 2, 4, 8, 16]
    for missing in sorted(set(range(1, 17)) - set(offered))[:3]:
        assert "does not divide the cluster's 16 GPUs" in _cli_error(
            capsys, ["plan", path, "--tp", str(missing), "--pp", "1", "--json"])
    tp.setFocus()
    qtbot.keyClick(tp, Qt.Key.Key_Home)
    for value in offered:
        if doc.project.layout.tp != value:
            with qtbot.waitSignal(doc.projectChanged, timeout=30_000):
                qtbot.keyClick(tp, Qt.Key.Key_Down)
        lay = doc.project.layout
        assert lay.tp == value
        capsys.readouterr()
        argv = ["plan", path, "--tp", str(lay.tp), "--pp", str(lay.pp), "--dp", str(lay.dp), "--json"]
        assert main(argv) == 0, capsys.readouterr().err


def test_layout_panel_refuses_context_parallelism_with_the_cli_s_rule(qtbot, doc, tmp_path, capsys):
    path = _project_file(doc, tmp_path)  # TP8 × PP2 of Llama-3.1-70B: 8 KV heads, no KV copy
    cli = _cli_error(capsys, ["plan", path, "--cp", "2", "--json"])
    panel = _layout_panel(qtbot, doc)
    cp = panel.combos["cp"]
    assert [cp.itemData(i) for i in range(cp.count())] == [1] and not cp.isEnabled()
    rule = cp.toolTip().split("Not offered here: ", 1)[1]
    assert rule.startswith("decode CP=2: TP=8 does not duplicate the 8 KV heads")
    assert cli.startswith("layout-studio: error: --cp 2: " + rule + "; allowed with TP=8, DP=1 (decode): 1")


# ----------------------------------------------------------------------------- pinned plans
def test_compare_tab_and_report_plan_the_pinned_layouts_at_the_same_batches(qtbot, doc, tmp_path, capsys):
    """The Explorer's Compare tab and ``layout-studio report`` take the pinned layouts from one
    function: the same layouts, at the batch each was pinned at (the workload's when none)."""
    from studio.core.layout import Layout
    from studio.gui.explorer import ExplorerWidget
    from studio.service.report.report_content import gather

    at_batch, plain = Layout(tp=4, pp=4, micro_batches=4), Layout(tp=16, pp=1)
    p = doc.project
    pinned = p.replace(workload=p.workload.replace(batch=8)).with_pin(at_batch, 24).with_pin(plain)
    doc.apply(pinned, "Pin two layouts", "pinned")
    w = ExplorerWidget(doc, threaded=False)
    qtbot.addWidget(w)
    w.show()
    bar = w.tabs.tabBar()
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(w.tabs.indexOf(w.compare)).center())
    assert w.tabs.currentWidget() is w.compare
    w.refresh_compare()
    shown = [w.compare.table.horizontalHeaderItem(k).text() for k in range(w.compare.table.columnCount())]
    assert shown == [f"{at_batch.label} M=4 batch 24", f"{plain.label} M=1"]
    report = gather(doc.project.replace(layout=Layout(tp=8, pp=2, micro_batches=2)))
    assert [o.origin for o in report.alternatives] == ["pinned", "pinned"]
    def key(plan):
        return plan.layout.label, plan.layout.micro_batches, plan.batch

    assert [key(o.plan) for o in report.alternatives] == [key(plan) for plan in w.compare.plans] == [
        (at_batch.label, 4, 24), (plain.label, 1, 8)
    ]
    assert [o.plan.tpot_ms for o in report.alternatives] == [plan.tpot_ms for plan in w.compare.plans]


# ----------------------------------------------------------------------------- disaggregated SLO
def test_explorer_screens_the_pools_against_the_slo_as_the_cli_does(qtbot, catalog, tmp_path, capsys):
    """With *Disaggregated pools* ticked (a real click) and a p99 TTFT target at a rate, the
    Explorer's SLO column says of each pool split what ``sweep --disagg --ttft-p99 --at-rate``
    says: one screening (:mod:`studio.service.disagg_slo`) for both."""
    import json

    from studio.core.building.builders import build_cluster
    from studio.core.layout import Layout
    from studio.core.project import Project
    from studio.core.workload import Load, Workload
    from studio.gui.document import ProjectDocument
    from studio.gui.explorer import ExplorerWidget
    from studio.gui.explorer.table_model import COLUMNS
    from studio.io.project_file import project_to_json

    t = catalog.node("hgx-h200")
    project = Project(
        cluster=build_cluster(t, 1, catalog.gpu(t.gpu_type), catalog.links),
        model=catalog.model("llama-3.1-8b").architecture,
        model_ref="llama-3.1-8b",
        layout=Layout(tp=8),
        workload=Workload(isl=2048, osl=256, batch=8, tpot_ms=30, load=Load(num_requests=300)),
    )
    project = project.replace(explorer=project.explorer.replace(ttft_p99_ms=400, slo_rate_per_s=20))
    path = tmp_path / "p.json"
    path.write_text(project_to_json(project), encoding="utf-8")
    capsys.readouterr()
    assert main(["sweep", str(path), "--disagg", "--ttft-p99", "400", "--at-rate", "20", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["disaggregated"]["slo"]
    assert cli["checked"], "the CLI screened no pool split"

    doc = ProjectDocument(project, threaded=False)
    w = ExplorerWidget(doc, threaded=False)
    qtbot.addWidget(w)
    w.show()
    w.pools_box.setFocus()
    qtbot.keyClick(w.pools_box, Qt.Key.Key_Space)
    assert w.pools_box.isChecked()
    w.run_sweep()
    w.wait_idle()
    assert w.disagg is not None and w.disagg_slo is not None
    model = w.model
    slo_col = [c.key for c in COLUMNS].index("slo")
    shown = {}
    for r in range(model.rowCount()):
        k = model.disagg_index(r)
        if k is not None:
            shown[model.disagg_rows[k].mode.spec()] = model.data(model.index(r, slo_col))
    for entry in cli["checked"]:
        assert shown[entry["spec"]] == entry["verdict"], entry["pools"]
    assert w.disagg_slo["checked"] == cli["checked"]


# ----------------------------------------------------------------------------- plan summary
def test_serving_mode_panel_voids_a_saturated_ttft_as_the_cli_does(qtbot, doc, tmp_path, capsys):
    """Pools served past their saturation rate have no TTFT: ``plan --disagg`` and the Serving mode
    panel (pools typed with real keys) say so in the same words, from
    :func:`studio.engine.disagg.summary.figures`, and the export's header does not claim one either."""
    from studio.core.workload import Load
    from studio.gui.panels.serving_mode_panel import ServingModePanel

    p = doc.project
    doc.apply(p.replace(workload=p.workload.replace(load=Load(mode="rate", rate_per_s=10_000))), "Rate", "workload")
    path = _project_file(doc, tmp_path)
    capsys.readouterr()
    assert main(["plan", path, "--disagg", "2P:tp4,1D:tp8"]) == 0
    cli = next(line.split("TTFT", 1)[1].strip() for line in capsys.readouterr().out.splitlines()
               if line.strip().startswith("TTFT") and "target" not in line)
    assert cli.startswith("- (saturated")

    panel = ServingModePanel(doc, threaded=False)
    qtbot.addWidget(panel)
    panel.show()
    panel.mode.setFocus()
    qtbot.keyClick(panel.mode, Qt.Key.Key_Down)
    panel.spec.selectAll()
    qtbot.keyClicks(panel.spec, "2P:tp4,1D:tp8")
    qtbot.keyClick(panel.spec, Qt.Key.Key_Return)
    assert doc.project.serving_mode.spec() == "2P:tp4,1D:tp8"
    assert f"TTFT {cli}" in panel.view.toPlainText().splitlines()
