"""Prompt reuse in the workload panel: typed values are one undo step each, the plan's hit rate and
saved prefill show under them, and a host tier above the node's memory is refused."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest


@pytest.fixture
def window(editable_window):
    assert editable_window.doc.result_is_current, editable_window.doc.error
    yield editable_window
    # the open Load section keeps the Plan dock as wide as its rows: fold it as a fresh window has it
    editable_window.model_panel.load_section.set_expanded(False)


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


def test_documents_routing_and_a_measured_hit_rate(window):
    doc = window.doc
    panel = window.model_panel
    panel.load_section.set_expanded(True)
    editor = panel.reuse_editor
    assert editor.measured.text() == "estimate (LRU)" and not editor.hit_tier.isEnabled()
    depth = doc.undo_stack.count()
    _type(editor.doc_share, "50")
    _type(editor.documents, "20")
    doc.recompute_now()
    reuse = doc.project.workload.reuse
    assert (reuse.document_share, reuse.documents) == (0.5, 20)
    assert "hit rate" in editor.result.text()
    assert doc.undo_stack.count() == depth + 2
    editor.routing.setFocus()
    QTest.keyClick(editor.routing, Qt.Key.Key_Space)
    assert doc.project.serving.kv_tiers.prefix_routing is True
    assert doc.undo_stack.count() == depth + 3
    # a measured rate replaces the estimate; its tier can be chosen only then
    _type(editor.measured, "40")
    doc.recompute_now()
    assert doc.project.workload.reuse.hit_rate == 0.4 and editor.hit_tier.isEnabled()
    assert "hit rate 39%" in editor.result.text() and "saved prefill 400 of 1,024" in editor.result.text()  # whole 16-token blocks
    editor.hit_tier.setFocus()
    QTest.keyClick(editor.hit_tier, Qt.Key.Key_Down)
    QTest.keyClick(editor.hit_tier, Qt.Key.Key_Down)
    assert doc.project.workload.reuse.hit_tier == "disk"
    # NVMe hits need an NVMe tier: the plan says so; back to the estimate resets the tier in one step
    before = doc.undo_stack.count()
    _type(editor.measured, "-1")
    assert doc.project.workload.reuse.hit_rate is None and doc.project.workload.reuse.hit_tier == "hbm"
    assert doc.undo_stack.count() == before + 1 and not editor.hit_tier.isEnabled()
    doc.undo_stack.undo()
    assert doc.project.workload.reuse.hit_rate == 0.4 and editor.measured.value() == 40.0
