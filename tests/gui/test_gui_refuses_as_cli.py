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
