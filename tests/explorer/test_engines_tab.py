"""The Explorer's Engines tab: one layout on vLLM, TensorRT-LLM and SGLang side by side, reached by
clicking its tab; the figures and the profile values behind them per engine; "Serve with" is one
undo step that every view follows."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from studio.core.layout import Layout
from studio.gui.document import ProjectDocument
from studio.gui.explorer import ExplorerWidget
from studio.service.explore.engine_compare import compare_engines, differing


@pytest.fixture
def explorer(qtbot, dgx405):
    doc = ProjectDocument(dgx405, threaded=False)
    w = ExplorerWidget(doc, threaded=False)
    qtbot.addWidget(w)
    w.resize(1400, 800)
    w.show()
    qtbot.waitExposed(w)
    return w


def _click_tab(qtbot, w, widget) -> None:
    bar = w.tabs.tabBar()
    rect = bar.tabRect(w.tabs.indexOf(widget))
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=rect.center())
    assert w.tabs.currentWidget() is widget


def test_the_service_compares_figures_and_names_the_profile_values_that_differ(dgx405):
    rows = compare_engines(dgx405, Layout(tp=8, pp=2, micro_batches=2), details=True)
    assert [r.engine for r in rows] == ["vllm", "trtllm", "sglang"]
    for attr in ("tpot_ms", "ttft_ms", "output_tokens_per_s", "kv_capacity_tokens"):
        assert len({r.figure(attr) for r in rows}) == 3, attr
    diff = differing(rows)
    # the values behind the differences: how the KV cache is sized, the sequence limit, the graphs
    assert {"memory fraction", "KV pool (tightest stage)", "running-sequence limit", "CUDA-graph sizes captured"} <= set(diff)
    vllm = rows[0].value("memory fraction")
    assert vllm is not None and "gpu_memory_utilization" in vllm.source


def test_the_engines_tab_shows_the_layout_on_each_engine(qtbot, explorer):
    _click_tab(qtbot, explorer, explorer.engines)
    view = explorer.engines
    lay = explorer.doc.project.layout
    assert view.title.text().startswith(f"{lay.label} on each serving engine")
    headers = [view.table.horizontalHeaderItem(i).text() for i in range(view.table.columnCount())]
    assert headers == ["vLLM (project)", "TensorRT-LLM", "SGLang"]
    rows = compare_engines(explorer.doc.project, lay, details=True)
    for r in rows:
        assert view.cell_text("KV capacity", r.engine) == f"{r.plan.kv_capacity_tokens:,} tokens"
        assert view.cell_text("memory fraction", r.engine) == f"{r.memory_fraction:g}"
    tpots = {view.cell_text("TPOT", e) for e in ("vllm", "trtllm", "sglang")}
    assert len(tpots) == 3
    assert "TensorRT-LLM" not in view.cell_text("running-sequence limit", "sglang")
    assert "Differ between engines: " in view.why.text() and "memory fraction" in view.why.text()
    # a differing profile value is bold, and its tooltip is the engine source it comes from
    names = [view.table.verticalHeaderItem(i).text() for i in range(view.table.rowCount())]
    item = view.table.item(names.index("memory fraction"), 2)
    assert item.font().bold() and "mem_fraction_static" in item.toolTip()


def test_selecting_a_sweep_row_compares_that_layout(qtbot, explorer):
    explorer.run_sweep()
    r = explorer.result
    row = next(i for i in map(int, r.order) if r.columns["fits"][i] and r.layout(i) != explorer.doc.project.layout)
    explorer.table.selectRow(explorer.index_of_row(row).row())
    _click_tab(qtbot, explorer, explorer.engines)
    assert explorer.engines.title.text().startswith(r.layout(row).label + " on each")


def test_serve_with_an_engine_is_one_undo_step_and_the_views_follow(qtbot, explorer):
    _click_tab(qtbot, explorer, explorer.engines)
    view = explorer.engines
    doc = explorer.doc
    start = doc.undo_stack.count()
    assert not view.use_button.isEnabled()
    header = view.table.horizontalHeader()
    x = header.sectionViewportPosition(2) + header.sectionSize(2) // 2
    QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, 5))  # the SGLang column
    assert view.selected_engine() == "sglang" and view.use_button.text() == "Serve with SGLang"
    qtbot.mouseClick(view.use_button, Qt.MouseButton.LeftButton)
    assert doc.project.serving.runtime == "sglang" and doc.undo_stack.count() == start + 1
    assert doc.project.serving.gpu_memory_utilization < 0.9  # SGLang's reserve rule moved the fraction
    headers = [view.table.horizontalHeaderItem(i).text() for i in range(view.table.columnCount())]
    assert headers[2] == "SGLang (project)"  # the tab followed the project
    doc.undo_stack.undo()
    assert doc.project.serving.runtime == "vllm"
    assert view.table.horizontalHeaderItem(0).text() == "vLLM (project)"
