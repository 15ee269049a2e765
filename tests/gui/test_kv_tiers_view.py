"""Prompt reuse seen in the window: under the memory bars the prefix cache's hit rate and saved
prefill, and the KV tier bars (HBM / host DRAM / NVMe: capacity and what the working set fills); the
KV-tier band on each node of the canvas; all following the reuse editor's typed values, with the
window still fitting a 1366×768 screen."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest


@pytest.fixture
def window(editable_window):
    assert editable_window.doc.result_is_current, editable_window.doc.error
    editable_window.model_panel.load_section.set_expanded(True)
    yield editable_window
    editable_window.model_panel.load_section.set_expanded(False)  # as a fresh window has it


def _type(spin, text: str) -> None:
    spin.setFocus()
    spin.selectAll()
    QTest.keyClicks(spin, text)
    QTest.keyClick(spin, Qt.Key.Key_Return)


def _badges(win) -> list[str]:
    return [win.scene.kv_badges[nid].text() for nid in win.scene.nodes]


def test_reuse_shows_hit_rate_tier_bars_and_node_bands(window):
    doc, metrics, editor = window.doc, window.metrics, window.model_panel.reuse_editor
    tiers = metrics.tiers
    assert not tiers.isVisible()  # nothing repeats yet
    assert _badges(window) == ["", ""]
    _type(editor.system, "300")
    _type(editor.turns, "4")
    _type(editor.history, "200")
    doc.recompute_now()
    assert tiers.isVisible()
    pc = doc.result.prefix_cache
    head, hbm, host, nvme = tiers.lines()
    saved = f"{pc['saved_prefill_tokens']:,.0f}"
    assert head == f"Prefix cache {pc['hit_rate']:.0%} hit · saves {saved} of 1,024 prompt tokens' prefill"
    assert hbm.startswith("HBM: ") and "GiB" in hbm and host == "host DRAM: none" and nvme == "NVMe: none"
    assert "serves" in tiers.toolTip()
    tiers.grab()  # paints: the forms that fit the dock
    assert tiers.shown[0].startswith(f"Prefix cache {pc['hit_rate']:.0%} hit") and len(tiers.shown) == 4
    QTest.mouseClick(tiers, Qt.MouseButton.LeftButton, pos=QPoint(20, 5))
    assert metrics.why.toPlainText().startswith("prefix_cache.hit_rate = ")

    _type(editor.host, "512")
    doc.recompute_now()
    host = tiers.lines()[2]
    assert host.startswith("host DRAM: ") and "(node 1,907)" in host, host
    # the TP8×PP2 replica spans both nodes: 2 × 512 GiB of host KV
    assert " of 1,024 GiB" in host, host
    assert _badges(window) == ["KV host 512 GiB / 1.9 TiB · NVMe —"] * 2
    assert window.minimumSizeHint().height() <= 700  # still fits a 1366×768 screen (as test_legibility)

    _type(editor.host, "0")
    doc.recompute_now()
    assert _badges(window) == ["", ""] and tiers.lines()[2] == "host DRAM: none"
    editor.cache.setFocus()
    QTest.keyClick(editor.cache, Qt.Key.Key_End)  # "Off"
    doc.recompute_now()
    assert doc.project.serving.kv_tiers.prefix_cache is False
    assert not tiers.isVisible()


def test_an_engine_version_without_the_host_tier_is_refused(window):
    doc, editor = window.doc, window.model_panel.reuse_editor
    _type(editor.system, "300")
    _type(editor.host, "512")
    doc.recompute_now()
    assert doc.project.serving.kv_tiers.host_gib == 512.0
    version = window.model_panel.engine.version
    before = doc.project.serving.runtime_version
    _type(version.lineEdit(), "0.20.0")
    assert doc.project.serving.runtime_version == before  # refused, nothing changed
    message = window.statusBar().currentMessage()
    assert "kv_tiers.host_gib: vLLM 0.20.0 has no kv-offloading-size" in message, message
    assert version.currentText() != "0.20.0"  # the selector shows the project's version again
