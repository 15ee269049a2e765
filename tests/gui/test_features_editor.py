"""Engine features in the Layout tab: each setting is one undo step on ``serving.features``, the
name boxes offer what the project's engine accepts, the plan's own notes show under them, and a
dense model or an engine without a setting greys it out."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from studio.io.project_file import load_project

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"


@pytest.fixture
def moe_doc(qtbot):
    """DeepSeek-V3 on a GB200 NVL72 rack, EP 8 over two TP-4 groups, served with vLLM."""
    from gui_helpers import engine_evaluate

    from studio.gui.document import ProjectDocument

    p = load_project(EXAMPLES / "gb200-nvl72-deepseek-v3.json")
    p = p.replace(layout=p.layout.replace(tp=4, dp=18, ep=8), serving=p.serving.replace(runtime="vllm"))
    d = ProjectDocument(p, evaluate=engine_evaluate(), threaded=False)
    yield d
    d.wait_idle()


def _editor(qtbot, doc):
    from studio.gui.editors.features_editor import FeaturesEditor

    e = FeaturesEditor(doc)
    qtbot.addWidget(e)
    e.show()
    return e


def _choose(box, name: str) -> int:
    """Pick ``name`` with the arrow keys on the closed box, as a user tabbing through the form
    would; each step activates the item it reaches (Qt), so each is an edit. Returns the steps."""
    box.setFocus()
    steps = 0
    while box.currentText() != name:
        before = box.currentIndex()
        QTest.keyClick(box, Qt.Key.Key_Down)
        steps += 1
        assert box.currentIndex() != before, f"{name} is not offered: {[box.itemText(i) for i in range(box.count())]}"
    return steps


def test_eplb_skew_and_backend_are_undo_steps_and_the_plan_says_what_they_do(qtbot, moe_doc):
    doc = moe_doc
    e = _editor(qtbot, doc)
    assert e.summary() == "engine defaults" and not e.redundant.isEnabled()
    depth = doc.undo_stack.count()
    e.eplb.setFocus()
    QTest.keyClick(e.eplb, Qt.Key.Key_Space)
    assert doc.project.serving.features.eplb and e.redundant.isEnabled()
    e.skew.setFocus()
    e.skew.selectAll()
    QTest.keyClicks(e.skew, "3")
    QTest.keyClick(e.skew, Qt.Key.Key_Return)
    assert doc.project.serving.features.routing_skew == 3.0
    names = [e.a2a.itemText(i) for i in range(e.a2a.count())]
    assert names[0] == "engine default" and "deepep_low_latency" in names and "deepep" not in names
    steps = _choose(e.a2a, "deepep_low_latency")
    assert doc.project.serving.features.all2all_backend == "deepep_low_latency"
    assert doc.undo_stack.count() == depth + 2 + steps
    doc.recompute_now()
    assert "most loaded rank" in e.notes.text() and "deepep_low_latency" in e.notes.text()
    assert e.summary() == "EPLB, skew, a2a deepep_low_latency"
    doc.undo_stack.undo()  # back to the backend the previous arrow step chose
    assert doc.project.serving.features.all2all_backend == e.a2a.currentText() == "deepep_high_throughput"


def test_the_boxes_follow_the_engine_and_a_dense_model_greys_the_experts(qtbot, moe_doc, doc):
    e = _editor(qtbot, moe_doc)
    assert e.offload.isEnabled() and not e.ib.isEnabled() and not e.adp_balance.isEnabled()
    moe_doc.edit("SGLang", "serving", lambda p: p.replace(serving=p.serving.replace(runtime="sglang")))
    names = [e.a2a.itemText(i) for i in range(e.a2a.count())]
    assert "deepep" in names and "deepep_low_latency" not in names
    assert e.ib.isEnabled() and not e.offload.isEnabled()
    dense = _editor(qtbot, doc)  # Llama: no experts to balance, route or exchange
    assert not dense.eplb.isEnabled() and not dense.a2a.isEnabled() and not dense.skew.isEnabled()
    assert dense.api.isEnabled() and dense.balance.isEnabled()
