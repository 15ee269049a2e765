"""Engine selector beside the model: choosing an engine or a version is one undo step, moves the
memory fraction with it, and the plan (every view's result) follows; an unknown version falls
back to the nearest profile and says so."""

from __future__ import annotations

import pytest
from gui_helpers import engine_evaluate
from PySide6.QtCore import Qt


@pytest.fixture
def live_doc(qtbot, project):
    from studio.gui.document import ProjectDocument

    d = ProjectDocument(project, evaluate=engine_evaluate(), threaded=False)
    d.recompute_now()
    yield d
    d.wait_idle()


@pytest.fixture
def selector(qtbot, live_doc):
    from studio.gui.editors.engine_selector import EngineSelector

    w = EngineSelector(live_doc)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_switching_engine_is_one_undo_step_and_the_plan_follows(qtbot, selector, live_doc):
    stack = live_doc.undo_stack
    start = stack.count()
    before = live_doc.result
    assert live_doc.project.serving.runtime == "vllm"
    selector.engine.setFocus()
    qtbot.keyClick(selector.engine, Qt.Key.Key_End)  # vLLM → SGLang (the last item)
    sv = live_doc.project.serving
    assert sv.runtime == "sglang" and stack.count() == start + 1
    assert sv.gpu_memory_utilization < 0.9  # SGLang's reserve rule, not vLLM's 0.92
    live_doc.recompute_now()
    assert live_doc.result.kv_capacity_tokens != before.kv_capacity_tokens
    assert "sglang-overlap" in selector.profile.text()
    stack.undo()
    assert live_doc.project.serving.runtime == "vllm"
    assert selector.engine.currentData() == "vllm"


def test_typing_an_unknown_version_uses_the_nearest_profile(qtbot, selector, live_doc):
    edit = selector.version.lineEdit()
    edit.selectAll()
    qtbot.keyClicks(edit, "0.3.1")
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    assert live_doc.project.serving.runtime_version == "0.3.1"
    assert "older than every profile" in selector.profile.text()
    assert "vllm-v0-sync" in selector.profile.text()


def test_the_load_editor_draws_lengths_from_a_bundled_workload(qtbot, live_doc):
    from studio.gui.editors.load_editor import LoadEditor

    editor = LoadEditor(live_doc)
    qtbot.addWidget(editor)
    editor.show()
    qtbot.waitExposed(editor)
    start = live_doc.undo_stack.count()
    editor.lengths.setFocus()
    i = editor.lengths.findData("azure-code-2023")
    editor.lengths.setCurrentIndex(i - 1)
    qtbot.keyClick(editor.lengths, Qt.Key.Key_Down)  # onto the code-completion trace
    wl = live_doc.project.workload
    assert (wl.isl, wl.osl, wl.load.isl_dist.kind) == (2048, 28, "histogram")
    assert live_doc.undo_stack.count() == start + 1
    live_doc.undo_stack.undo()
    assert live_doc.project.workload.load.isl_dist.kind == "fixed"
    assert editor.lengths.currentData() is None


def test_the_load_editor_offers_the_summarisation_workload(qtbot, live_doc):
    from studio.gui.editors.load_editor import LoadEditor

    editor = LoadEditor(live_doc)
    qtbot.addWidget(editor)
    editor.show()
    qtbot.waitExposed(editor)
    i = editor.lengths.findData("arxiv-summarization-4k")
    assert i > 0 and "microsoft/vidur" in editor.lengths.itemData(i, Qt.ItemDataRole.ToolTipRole)
    editor.lengths.setFocus()
    editor.lengths.setCurrentIndex(0)
    for _ in range(i):
        qtbot.keyClick(editor.lengths, Qt.Key.Key_Down)
    wl = live_doc.project.workload
    assert (wl.isl, wl.osl, wl.load.osl_dist.kind) == (2588, 292, "histogram")
    assert editor.lengths.currentText().startswith("Long-document summarisation")
