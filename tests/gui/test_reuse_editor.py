"""Prompt reuse in the workload panel: typed values are one undo step each, the plan's hit rate and
saved prefill show under them, and a host tier above the node's memory is refused."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest


@pytest.fixture
def window(editable_window):
    assert editable_window.doc.result_is_current, editable_window.doc.error
    return editable_window


def _type(spin, text: str) -> None:
    spin.setFocus()
    spin.selectAll()
    QTest.keyClicks(spin, text)
    QTest.keyClick(spin, Qt.Key.Key_Return)


def test_system_prompt_and_host_tier_show_hit_rate(window):
    doc = window.doc
    panel = window.model_panel
    panel.load_section.set_expanded(True)
    editor = panel.reuse_editor
    ttft_before = doc.result.ttft_ms
    depth = doc.undo_stack.count()
    _type(editor.system, "500")
    doc.recompute_now()
    assert doc.project.workload.reuse.system_prompt_tokens == 500
    # vLLM counts a hit in whole 16-token blocks: 31 blocks of the 500-token prompt are reused
    assert "hit rate" in editor.result.text() and "saved prefill 496" in editor.result.text()
    assert doc.result.ttft_ms < ttft_before
    assert doc.undo_stack.count() == depth + 1  # one undo step for the edit
    _type(editor.host, "999999")
    doc.recompute_now()
    assert doc.project.serving.kv_tiers.host_gib == 0.0  # refused: more than the node's host memory
    assert editor.host.value() == 0.0
    _type(editor.host, "512")
    doc.recompute_now()
    assert doc.project.serving.kv_tiers.host_gib == 512.0
    assert "host" in editor.result.text()
