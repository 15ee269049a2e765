"""``layout-studio report``: exit 0 on the bundled example, 2 on bad input."""

from __future__ import annotations

import pytest

from studio.cli import main
from tests.report.conftest import EXAMPLE


def test_report_command_writes_html(tmp_path, capsys, shared_build):
    out = tmp_path / "report.html"
    assert main(["report", str(EXAMPLE), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "Executive summary" in text
    assert str(out) in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "{tmp}/report.txt"], "name the file *.html or *.pdf"),
        (["-o", "{tmp}/missing/report.html"], "does not exist"),
        (["{tmp}/nope.json", "-o", "{tmp}/r.html"], "no such project file"),
        (["--tp", "3", "-o", "{tmp}/r.html"], "does not divide"),
        (["--model", "no-such-model", "-o", "{tmp}/r.pdf"], "no-such-model"),
        (["--traffic", "flat-batch", "-o", "{tmp}/r.html"], "needs both --ttft-p99-ms and --tpot-p99-ms"),
        (["--ttft-p99-ms", "900", "-o", "{tmp}/r.html"], "add --traffic"),
    ],
)
def test_bad_input_exits_2_with_a_message(tmp_path, capsys, args, message):
    argv = ["report", *[a.format(tmp=tmp_path) for a in args]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not list(tmp_path.glob("r.*"))


def test_report_needs_an_output(capsys):
    assert main(["report"]) == 2
    assert "-o" in capsys.readouterr().err


def test_main_window_exports_the_report(tmp_path, example, qtbot, shared_build):
    from studio.gui.report.action import export_report
    from studio.gui.window.app import build_window

    win = build_window(example, threaded=False)
    qtbot.addWidget(win)
    texts = [a.text() for a in win.menuBar().actions()[0].menu().actions()]
    assert "Export &report…" in texts
    out = export_report(win, tmp_path / "plan.html")
    assert out is not None and "Executive summary" in out.read_text(encoding="utf-8")
    errors = []
    win.show_error = lambda title, text: errors.append(text)
    assert export_report(win, tmp_path / "plan.docx") is None
    assert errors and ".html or .pdf" in errors[0]
    win.doc.undo_stack.setClean()
