"""Issue 34: on 15 GPUs (one deleted from the bundled example) the Explorer also offers layouts on
whole TP groups of each server that leave GPUs idle (TP4×PP3 on 12, TP8 on 8), says "N GPUs idle"
in the Layout and Idle columns, and Apply runs the project on exactly those GPUs (one undo step,
a computed plan, the status bar naming the idle GPUs)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from studio.core.edits import remove_items
from studio.gui.explorer import ExplorerWidget
from studio.service.explore.explorer_analysis import COLUMNS


def test_idle_rows_shown_and_applied_on_their_gpus(qtbot, doc):
    doc.edit_cluster("Delete GPU", lambda c: remove_items(c, ["n0/gpu3"]))
    doc.recompute_now()
    assert doc.project.cluster.num_gpus == 15
    ex = ExplorerWidget(doc, threaded=False, debounce_ms=0)
    qtbot.addWidget(ex)
    ex.resize(1366, 700)
    ex.show()
    qtbot.waitExposed(ex)
    ex.run_sweep()
    r = ex.result
    cols = r.columns
    idle_rows = [i for i in range(r.candidates) if cols["idle_gpus"][i] > 0]
    shapes = {(int(cols["tp"][i]), int(cols["pp"][i]) * int(cols["dp"][i]), int(cols["idle_gpus"][i])) for i in idle_rows}
    assert (4, 3, 3) in shapes and (8, 1, 7) in shapes  # TP4 on 12 GPUs, 3 idle; TP8 on 8, 7 idle
    assert any(cols["idle_gpus"][i] == 0 and cols["tp"][i] == 1 for i in range(r.candidates))  # and all 15 used

    # the TP4×PP3 row that fits, best first: its cells say how many GPUs stay idle
    row = next(int(i) for i in r.order if cols["idle_gpus"][i] == 3 and cols["pp"][i] == 3 and cols["fits"][i])
    col = {c.key: k for k, c in enumerate(COLUMNS)}
    ex.select_row(row)
    idx = ex.table.selectionModel().selectedRows()[0]
    assert ex.proxy.data(idx.siblingAtColumn(col["idle_gpus"])) == "3"
    assert ex.proxy.data(idx.siblingAtColumn(col["layout"])).startswith("TP4×PP3")
    assert "(3 GPUs idle)" in ex.proxy.data(idx.siblingAtColumn(col["layout"]))
    # a real click on that row's cell, then Apply
    ex.table.scrollTo(idx)
    rect = ex.table.visualRect(idx.siblingAtColumn(col["layout"]))
    QTest.mouseClick(ex.table.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.center()))
    assert ex.selected_row() == row
    steps = doc.undo_stack.count()
    qtbot.mouseClick(ex.apply_button, Qt.MouseButton.LeftButton)
    assert doc.undo_stack.count() == steps + 1
    lay = doc.project.layout
    assert (lay.tp, lay.pp, lay.dp, lay.world_size) == (4, 3, 1, 12)
    assert lay.placement is not None and "n0/gpu3" not in lay.placement and len(set(lay.placement)) == 12
    doc.recompute_now()
    plan = doc.result
    assert plan is not None and plan.fits and len(plan.idle_gpus) == 3
    assert plan.output_tokens_per_s == pytest.approx(float(cols["tokens_per_s"][row]), rel=1e-6)


def test_placements_of_an_idle_layout_are_compared(project):
    """A group grown past the end of a server (7 GPUs left in it, TP4) takes GPUs of the next one:
    the comparison costs every candidate instead of failing."""
    from studio.engine import sweep
    from studio.engine.search.placement import compare_placements
    from studio.service.project_edits.hardware_edits import follow_cluster

    p, _ = follow_cluster(project, remove_items(project.cluster, ["n0/gpu3"]))
    r = sweep(p)
    row = next(int(i) for i in r.order if r.columns["idle_gpus"][i] == 3 and r.columns["fits"][i])
    comp = compare_placements(p, r.layout(row))
    assert len(comp.options) >= 2 and all(len(o.placement) == 12 for o in comp.options)
    assert comp.best is not None and comp.best.plan is not None
