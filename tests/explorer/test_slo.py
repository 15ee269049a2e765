"""The Explorer's percentile SLO under load: its controls edit the project (undoable, saved), the
check runs in the scheduler's worker, layouts meeting it rank first with their simulated p99s and
saturation rate, the filter keeps only those, and the best one meeting it is recommended."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from studio.gui.document import ProjectDocument
from studio.gui.explorer import ExplorerWidget
from studio.gui.explorer.table_model import ROW_ROLE
from studio.io.project_file import load_project
from studio.service import slo as slo_service
from studio.service.explore.explorer_analysis import COLUMNS


def _col(key: str) -> int:
    return [c.key for c in COLUMNS].index(key)


def _type(box, text: str) -> None:
    box.setFocus()
    box.lineEdit().selectAll()
    QTest.keyClicks(box, text)
    QTest.keyClick(box, Qt.Key.Key_Return)


@pytest.fixture
def explorer(qtbot, bridge70):
    doc = ProjectDocument(bridge70, threaded=False)
    w = ExplorerWidget(doc, threaded=False)
    qtbot.addWidget(w)
    w.resize(1400, 800)
    w.run_sweep()
    return w


def test_slo_controls_are_saved_undoable_project_edits(explorer, tmp_path):
    doc = explorer.doc
    start = doc.project
    assert explorer.slo is None
    assert all(explorer.table.isColumnHidden(_col(k)) for k in ("slo", "slo_ttft_p99_ms"))  # no SLO, no columns
    _type(explorer.ttft_p99, "2000")
    assert doc.project.explorer.ttft_p99_ms == 2000
    assert doc.undo_stack.undoText() == "p99 TTFT target"
    _type(explorer.tpot_p99, "60")
    _type(explorer.slo_rate, "1")
    ex = doc.project.explorer
    assert (ex.ttft_p99_ms, ex.tpot_p99_ms, ex.slo_rate_per_s) == (2000, 60, 1)
    assert doc.undo_stack.count() == 3
    doc.save(tmp_path / "slo.json")
    assert load_project(tmp_path / "slo.json").explorer == ex
    for _ in range(3):
        doc.undo_stack.undo()
    assert doc.project is start
    assert (explorer.ttft_p99.value(), explorer.tpot_p99.value(), explorer.slo_rate.value()) == (0, 0, 0)


def test_a_target_without_a_rate_says_so(explorer):
    _type(explorer.ttft_p99, "2000")  # the example's load is a closed loop: no rate to hold it at
    explorer.run_sweep()
    assert explorer.slo is None and explorer.result is not None
    text = explorer.reasons.toPlainText()
    assert "SLO not checked" in text and "the SLO's rate" in text


def test_slo_ranks_shows_and_filters_layouts(qtbot, bridge70):
    """Threaded, as in the window: the SLO check runs in the worker and the answer comes back by
    signal; the table agrees with the service's own check of the same sweep."""
    project = bridge70.replace(explorer=bridge70.explorer.replace(ttft_p99_ms=2000.0, tpot_p99_ms=60.0,
                                                                  slo_rate_per_s=1.0))
    threads = []
    real = slo_service.check_slo

    def recording(*a, **kw):
        threads.append(threading.current_thread())
        return real(*a, **kw)

    doc = ProjectDocument(project, threaded=False)
    w = ExplorerWidget(doc, debounce_ms=1)
    qtbot.addWidget(w)
    mp = pytest.MonkeyPatch()
    mp.setattr(slo_service, "check_slo", recording)
    try:
        with qtbot.waitSignal(w.resultShown, timeout=60_000):
            w.run_sweep()
    finally:
        mp.undo()
    assert threads and threads[0] is not threading.main_thread()  # not on the GUI thread
    rep, res = w.slo, w.result
    assert rep is not None and not rep.cancelled
    expected = real(project, res, rep.targets, simulate=32)
    assert [(e.layout, e.meets, e.ttft_p99_ms) for e in rep.checked] == [
        (e.layout, e.meets, e.ttft_p99_ms) for e in expected.checked]
    meeting = [e for e in rep.checked if e.meets]
    assert meeting and len(meeting) < len(rep.checked)  # some pass, some fail: ranking matters
    # rows meeting the SLO come first; the best of them is recommended and selected
    model = w.model
    n_meet = sum(model.slo_meets(model.sweep_row(k)) for k in range(model.rowCount()))
    assert all(model.slo_meets(model.sweep_row(k)) for k in range(n_meet))
    assert w.selected_row() == rep.best_row == model.recommended
    assert w.plot.recommended_row == rep.best_row  # the plot's star is the same layout
    assert "Best meeting the SLO (p99 TTFT ≤ 2,000 ms, p99 TPOT ≤ 60 ms at 1 req/s)" in w.reasons.toPlainText()
    # the SLO columns show the check's figures, right after the objective's column
    hh = w.table.horizontalHeader()
    assert [hh.logicalIndex(k) for k in range(5)] == [_col(k) for k in (
        "tokens_per_s_per_gpu", "slo", "slo_ttft_p99_ms", "slo_tpot_p99_ms", "slo_saturation_rate_per_s")]
    assert not w.table.isColumnHidden(_col("slo"))
    best = rep.checked[rep.best]
    idx = w.index_of_row(rep.best_row)
    cell = lambda key: w.proxy.data(idx.siblingAtColumn(_col(key)))  # noqa: E731
    assert cell("slo") == "pass"
    assert cell("slo_ttft_p99_ms") == f"{best.ttft_p99_ms:,.0f}"
    assert cell("slo_saturation_rate_per_s") == f"{best.saturation_rate_per_s:,.3g}"
    failing = next(e for e in rep.checked if not e.meets)
    assert w.proxy.data(w.index_of_row(failing.row).siblingAtColumn(_col("slo"))) == f"fail: {failing.verdict}"
    # "Meets SLO only" keeps exactly the rows whose layout meets it
    w.show()
    qtbot.waitExposed(w)
    QTest.mouseClick(w.slo_only, Qt.MouseButton.LeftButton)
    assert w.slo_only.isChecked()
    shown = {int(w.proxy.data(w.proxy.index(k, 0), ROW_ROLE)) for k in range(w.proxy.rowCount())}
    assert shown and all(model.slo_meets(r) for r in shown)
    assert len(shown) == n_meet
    assert w.wait_idle(30_000)


def test_changing_the_slo_resweeps_and_an_impossible_rate_meets_nothing(qtbot, bridge70):
    project = bridge70.replace(explorer=bridge70.explorer.replace(ttft_p99_ms=2000.0, slo_rate_per_s=1.0))
    doc = ProjectDocument(project, threaded=False)
    w = ExplorerWidget(doc, debounce_ms=1)
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.resultShown, timeout=60_000):
        w.run_sweep()
    assert w.slo.best is not None
    with qtbot.waitSignal(w.resultShown, timeout=60_000):
        _type(w.slo_rate, "500")  # far above every layout's saturation
    assert w.slo.targets.rate_per_s == 500 and w.slo.best is None
    assert all(e.verdict.startswith("saturated") for e in w.slo.checked)
    assert "none of the" in w.reasons.toPlainText()
    assert w.model.recommended == int(w.result.recommended)  # the sweep's own recommendation stays
    assert w.wait_idle(30_000)


def test_cancel_stops_the_slo_check_at_its_next_layout(qtbot, bridge70):
    """The worker is held inside the SLO check (after the sweep); Cancel stops it there."""
    project = bridge70.replace(explorer=bridge70.explorer.replace(ttft_p99_ms=2000.0, slo_rate_per_s=1.0))
    entered, release = threading.Event(), threading.Event()
    answers = []
    real = slo_service.check_slo

    def held(*a, progress=None, **kw):
        def step(f):
            if not entered.is_set():
                entered.set()
                assert release.wait(30)
            go_on = progress(f)
            answers.append(go_on)
            return go_on

        return real(*a, progress=step, **kw)

    doc = ProjectDocument(project, threaded=False)
    w = ExplorerWidget(doc, debounce_ms=1)
    qtbot.addWidget(w)
    mp = pytest.MonkeyPatch()
    mp.setattr(slo_service, "check_slo", held)
    try:
        w.run_sweep()
        qtbot.waitUntil(entered.is_set, timeout=60_000)  # the sweep is done, the check has begun
        assert w.running and w.progress.value() <= 500
        with qtbot.waitSignal(w.jobs.responded, timeout=60_000) as done:
            w.cancel()
            release.set()
    finally:
        mp.undo()
    assert done.args[0].cancelled
    assert answers == [False]  # stopped before simulating a single layout
    assert w.result is None and w.slo is None and w.status.text() == "sweep cancelled"
