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
