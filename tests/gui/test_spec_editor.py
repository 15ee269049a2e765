"""Speculative-decoding editor: each edit is one undo step on the document (real key events), a
setting the model cannot run is refused with a message and snaps back, the summary follows the
result, and the model panel holds the editor."""

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
def editor(qtbot, live_doc):
    from studio.gui.editors.spec_editor import SpecEditor

    e = SpecEditor(live_doc)
    qtbot.addWidget(e)
    e.show()
    qtbot.waitExposed(e)
    return e


def _type(qtbot, spin, text: str) -> None:
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, text)
    qtbot.keyClick(spin, Qt.Key.Key_Return)


def test_method_tokens_acceptance_are_one_undo_step_each(qtbot, editor, live_doc):
    stack = live_doc.undo_stack
    start = stack.count()
    plain = live_doc.result.tpot_ms
    editor.method.setFocus()
    qtbot.keyClick(editor.method, Qt.Key.Key_Down)  # Off → EAGLE-3 head
    spec = live_doc.project.serving.speculative
    assert spec is not None and spec.method == "eagle3" and spec.num_tokens == 3
    assert stack.count() == start + 1
    _type(qtbot, editor.tokens, "4")
    _type(qtbot, editor.acceptance, "0.8")
    spec = live_doc.project.serving.speculative
    assert (spec.num_tokens, spec.acceptance) == (4, pytest.approx(0.8))
    assert stack.count() == start + 3
    live_doc.recompute_now()
    assert live_doc.result.tpot_ms < plain
    assert "EAGLE-3 head, k=4" in editor.summary.text()
    stack.undo()
    assert live_doc.project.serving.speculative.acceptance is None
    assert editor.acceptance.value() == 0.0  # "published default"
    stack.undo()
    stack.undo()
    assert live_doc.project.serving.speculative is None
    assert editor.method.currentData() is None


def test_mtp_on_a_model_without_mtp_layers_is_refused_and_snaps_back(qtbot, editor, live_doc):
    messages: list[str] = []
    live_doc.message.connect(messages.append)
    count = live_doc.undo_stack.count()
    editor.method.setCurrentIndex(editor.method.findData("mtp"))
    assert live_doc.project.serving.speculative is None
    assert live_doc.undo_stack.count() == count
    assert editor.method.currentData() is None
    assert messages and "needs a model with multi-token-prediction layers" in messages[-1]


def test_draft_model_needs_an_acceptance_then_is_accepted(qtbot, editor, live_doc):
    messages: list[str] = []
    live_doc.message.connect(messages.append)
    assert editor.draft.findData("llama-3.1-8b") >= 0  # same vocabulary, smaller than the 70B
    editor.method.setCurrentIndex(editor.method.findData("draft"))
    assert live_doc.project.serving.speculative is None
    assert "no published default" in messages[-1]
    _type(qtbot, editor.acceptance, "0.6")  # kept for the next method chosen
    editor.method.setCurrentIndex(editor.method.findData("draft"))
    spec = live_doc.project.serving.speculative
    assert (
        spec.method == "draft"
        and spec.draft_model == "llama-3.1-8b"
        and spec.acceptance == pytest.approx(0.6)
    )
    live_doc.recompute_now()
    assert any(m.weights_by_module.get("draft", 0) > 0 for m in live_doc.result.memory)


def test_model_panel_holds_the_editor(qtbot, doc):
    from studio.gui.panels.model_panel import ModelPanel

    panel = ModelPanel(doc)
    qtbot.addWidget(panel)
    assert panel.spec_editor.title() == "Speculative decoding"
