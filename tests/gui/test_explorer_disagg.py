"""The Explorer's disaggregated candidates: ticking "Disaggregated pools" sweeps every pool split
beside the layouts, plots them on the same Pareto plot under the same targets, names the best in
the reasons, and "Apply pools" serves the project with a clicked candidate in one undo step."""

from __future__ import annotations

from gui_helpers import engine_evaluate
from PySide6.QtCore import Qt

from studio.gui.explorer import ExplorerWidget


def test_pools_swept_plotted_and_applied(qtbot, doc):
    engine_evaluate()
    doc.edit("targets", "workload", lambda p: p.replace(workload=p.workload.replace(ttft_ms=1000.0, tpot_ms=50.0)))
    ex = ExplorerWidget(doc, threaded=False, debounce_ms=0)
    qtbot.addWidget(ex)
    ex.resize(1200, 700)
    ex.show()
    qtbot.waitExposed(ex)
    assert not ex.pools_box.isChecked()  # an aggregated project starts without them
    ex.run_sweep()
    assert ex.disagg is None and ex.plot.disagg == ()

    qtbot.mouseClick(ex.pools_box, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: ex.disagg is not None, timeout=60_000)
    sw = ex.disagg
    assert sw.rows and len(ex.plot.disagg) == len(sw.rows)
    x, y = ex.plot.disagg_xy()
    assert x.tolist() == [r.tokens_per_s_per_user for r in sw.rows]
    assert y.tolist() == [r.tokens_per_s_per_gpu for r in sw.rows]
    # the same targets decide both kinds: a candidate meets them iff its TTFT and TPOT do
    for r in sw.rows[:50]:
        assert r.meets_targets == (r.ttft_ms <= 1000.0 and r.tpot_ms <= 50.0)
    best = sw.best
    assert best is not None
    reasons = ex.reasons.toPlainText()
    assert "Best disaggregated:" in reasons and best.label in reasons and "KV transfer" in reasons

    steps = doc.undo_stack.count()
    assert not ex.apply_pools_button.isEnabled()
    ex.plot.disaggClicked.emit(0)  # a click on the candidate's diamond
    assert sw.rows[0].label in ex.reasons.toPlainText()
    qtbot.mouseClick(ex.apply_pools_button, Qt.MouseButton.LeftButton)
    mode = doc.project.serving_mode
    assert mode.disaggregated and mode.label == sw.rows[0].label
    assert mode.decode.max_batch == sw.rows[0].batch
    assert doc.undo_stack.count() == steps + 1
    doc.undo_stack.undo()
    assert not doc.project.serving_mode.disaggregated


def test_pools_are_rows_of_the_table_sortable_filterable_and_applied(qtbot, doc):
    """The disaggregated candidates are table rows beside the layouts: their figures in the same
    columns, ranked with the layouts, sorted and filtered like them; Apply on one serves the
    project with its pools (one undo step). Without the pools the table is the layouts only."""
    from PySide6.QtCore import QPoint
    from PySide6.QtTest import QTest

    from studio.gui.explorer.table_model import DISAGG_ROLE, ROW_ROLE
    from studio.service.explore.explorer_analysis import COLUMNS

    engine_evaluate()
    doc.edit("targets", "workload", lambda p: p.replace(workload=p.workload.replace(ttft_ms=1000.0, tpot_ms=50.0)))
    ex = ExplorerWidget(doc, threaded=False, debounce_ms=0)
    qtbot.addWidget(ex)
    ex.resize(1366, 700)
    ex.show()
    qtbot.waitExposed(ex)
    ex.run_sweep()
    r = ex.result
    assert ex.proxy.rowCount() == r.candidates  # layouts only
    col = {c.key: k for k, c in enumerate(COLUMNS)}

    qtbot.mouseClick(ex.pools_box, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: ex.disagg is not None, timeout=60_000)
    rows = ex.disagg.rows
    assert ex.proxy.rowCount() == r.candidates + len(rows)
    best = ex.disagg.best
    m = ex.model.disagg_model_row(0)
    idx = ex.proxy.mapFromSource(ex.model.index(m, 0))
    cell = lambda key: ex.proxy.data(idx.siblingAtColumn(col[key]))  # noqa: E731
    assert cell("layout") == best.label and "+" in best.label and "P(" in best.label
    assert cell("tokens_per_s_per_gpu") == f"{best.tokens_per_s_per_gpu:,.1f}"
    assert cell("tpot_ms") == f"{best.tpot_ms:,.1f}" and cell("ttft_ms") == f"{best.ttft_ms:,.0f}"
    assert cell("meets_targets") == "yes" and cell("reason") == best.why()
    assert cell("tp") == "—" and cell("bubble") == "—"  # a single layout's columns
    assert ex.proxy.data(idx, ROW_ROLE) is None and ex.proxy.data(idx, DISAGG_ROLE) == 0
    # ranked with the layouts: the best candidate sits among the layouts by tok/s per GPU
    hh = ex.table.horizontalHeader()
    assert [hh.logicalIndex(k) for k in range(3)] == [col["tokens_per_s_per_gpu"], col["layout"],
                                                      col["meets_targets"]]
    per_gpu = [float(ex.proxy.data(ex.proxy.index(k, col["tokens_per_s_per_gpu"]), ex.proxy.sortRole()))
               for k in range(ex.proxy.rowCount())]
    meets = [ex.proxy.data(ex.proxy.index(k, col["meets_targets"])) == "yes" for k in range(ex.proxy.rowCount())]
    n = meets.index(False)
    assert all(meets[:n]) and per_gpu[:n] == sorted(per_gpu[:n], reverse=True)

    # sorted like the others: by TPOT, real key clicks on the header
    x = hh.sectionViewportPosition(col["tpot_ms"]) + 5
    QTest.mouseClick(hh.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, 5))
    tpot = [float(ex.proxy.data(ex.proxy.index(k, col["tpot_ms"]), ex.proxy.sortRole()))
            for k in range(ex.proxy.rowCount())]
    assert tpot == sorted(tpot) or tpot == sorted(tpot, reverse=True)
    # filtered like the others: typed words match the pools' label
    ex.filter.setFocus()
    QTest.keyClicks(ex.filter, "disagg tp8")
    shown = [ex.proxy.data(ex.proxy.index(k, col["layout"])) for k in range(ex.proxy.rowCount())]
    assert shown and len(shown) == sum("TP8" in c.label for c in rows)
    assert all("TP8" in s and "D(" in s for s in shown)
    ex.filter.clear()
    QTest.mouseClick(ex.hide_unfit, Qt.MouseButton.LeftButton)  # the pools all fit: they stay
    assert ex.proxy.rowCount() == int(r.columns["fits"].sum()) + len(rows)
    QTest.mouseClick(ex.hide_unfit, Qt.MouseButton.LeftButton)

    # a click on a diamond selects its row; Apply on the row serves the project with its pools
    k = len(rows) - 1
    ex.plot.disaggClicked.emit(k)
    assert ex.selected_disagg() == k and ex.selected_row() is None
    assert ex.plot.disagg_selected == k and rows[k].label in ex.reasons.toPlainText()
    assert ex.apply_button.isEnabled() and not ex.pin_button.isEnabled()
    steps = doc.undo_stack.count()
    qtbot.mouseClick(ex.apply_button, Qt.MouseButton.LeftButton)
    mode = doc.project.serving_mode
    assert mode.disaggregated and mode.label == rows[k].label and mode.decode.max_batch == rows[k].batch
    assert doc.undo_stack.count() == steps + 1
    doc.undo_stack.undo()
    assert not doc.project.serving_mode.disaggregated
    # a layout row still applies a layout
    ex.run_sweep()
    ex.show_recommended()
    assert ex.selected_row() == ex.model.recommended and ex.selected_disagg() is None
    qtbot.mouseClick(ex.apply_button, Qt.MouseButton.LeftButton)
    assert doc.project.layout.label == ex.result.layout(ex.model.recommended).label
    assert not doc.project.serving_mode.disaggregated
