"""Issue 32: a single-layout plan is summed up once (studio/service/plan_summary.py), so the
window's status bar, the headless first-plan print, the export dialog's header and import-topo's
report say the same layout, status and figures — for the bundled example, a layout that does not
fit and an open loop past saturation."""

from __future__ import annotations

import pytest
from gui_helpers import engine_evaluate

from studio.core.layout import Layout
from studio.service.plan_summary import headline, plan_summary, status_line


@pytest.fixture
def base():
    from studio.commands.options.project_args import load_base_project

    return load_base_project(None)  # Llama-3.1-405B on 2× DGX H100


def _plans(base):
    evaluate = engine_evaluate()
    fits = evaluate(base)
    tight = evaluate(base.replace(layout=Layout(tp=1, pp=1, dp=16)))  # 405B in one H100: no
    sat = fits.load.saturation_rate_per_s
    load = base.workload.load.replace(mode="rate", rate_per_s=2 * sat)
    saturated = evaluate(base.replace(workload=base.workload.replace(load=load)))
    return {"OK": fits, "DOES_NOT_FIT": tight, "SATURATED": saturated}


def test_every_reader_says_the_same_for_each_status(qtbot, base):
    from PySide6.QtWidgets import QLabel

    from studio.gui.editors.export_dialog import ExportDialog
    from studio.gui.panels.metrics_panel import status_line as bar_line

    for code, plan in _plans(base).items():
        s = plan_summary(plan)
        assert s.code == code == plan.status.code
        bar, long = bar_line(plan), headline(plan)
        assert bar == status_line(plan)
        dlg = ExportDialog(base, plan)
        qtbot.addWidget(dlg)
        header = next(lb.text() for lb in dlg.findChildren(QLabel) if lb.text().startswith("<b>"))
        for text in (bar, long, header):
            assert s.layout in text and s.verdict in text, (code, text)
        assert f"on {s.gpus} GPUs" in long and f"{s.gpus} GPUs" in bar and f"{s.gpus} GPUs" in header
        if code == "OK":
            assert s.verdict == "fits" and s.ttft and s.tpot and s.throughput
            for text in (bar, long):
                assert f"TTFT {s.ttft}" in text and f"TPOT {s.tpot}" in text
            assert s.throughput in long
        elif code == "DOES_NOT_FIT":
            assert s.verdict == "does not fit" and s.reason == plan.fit_reason
            assert s.ttft is s.tpot is s.throughput is None
            assert "TTFT" not in bar + long and "tok/s" not in long
            assert s.reason in long
        else:
            assert s.verdict.startswith("Saturated at") and s.ttft is None and s.tpot
            for text in (bar, long):
                assert "no TTFT" in text and f"TPOT {s.tpot}" in text


def test_the_exit_print_and_import_topo_use_the_same_words(base, capsys, tmp_path):
    """The headless print and import-topo write the summary's text: the exit print is
    ``<name>: <headline>``; import-topo says the verdict of the plan it wrote."""
    from pathlib import Path

    from studio.cli import main
    from studio.engine.plan.evaluate import evaluate
    from studio.io.project_file import load_project

    topo = Path(__file__).resolve().parents[1] / "data" / "topo" / "h100-8gpu-nvswitch-8nic.txt"
    out = tmp_path / "p.json"
    for nodes in (2, 1):  # fits on two nodes, not on one
        assert main(["import-topo", str(topo), "--gpu", "h100-sxm", "--nodes", str(nodes), "-o", str(out)]) == 0
        s = plan_summary(evaluate(load_project(out)))
        said = capsys.readouterr().out
        assert f"layout {s.layout}, which {s.verdict}" in said
        assert (s.reason in said) if not s.runs else ("(" not in said.split("which", 1)[1])
