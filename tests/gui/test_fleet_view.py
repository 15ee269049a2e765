"""Fleet view: planned in the worker when shown, drawn as traffic over stacked replica capacity with
power and cost over the day; it follows a layout edit and a control typed in (real key events),
and the main window builds it when its tab is first raised."""

from __future__ import annotations

import numpy as np
import pytest
from gui_helpers import engine_evaluate
from PySide6.QtCore import Qt

from studio.core.layout import Layout


@pytest.fixture(scope="module")
def _plans():
    return {}


@pytest.fixture(autouse=True)
def _small_runs_once_each(monkeypatch, _plans):
    """Short simulations (the view's logic is tested, not their precision), each plan computed once
    per module: a plan is a pure function of the project and the settings (its simulation is seeded)."""
    from studio.gui.views import fleet_view
    from studio.io.project_file import project_to_json

    monkeypatch.setattr(fleet_view, "REQUESTS", 120)
    real = fleet_view.default_plan

    def once(project, settings):
        key = (project_to_json(project), settings)
        if key not in _plans:
            _plans[key] = real(project, settings)
        return _plans[key]

    monkeypatch.setattr(fleet_view, "default_plan", once)


@pytest.fixture
def live_doc(qtbot, project):
    from studio.gui.document import ProjectDocument

    d = ProjectDocument(project.replace(layout=Layout(tp=8, pp=1, dp=2)), evaluate=engine_evaluate(), threaded=False)
    d.recompute_now()
    yield d
    d.wait_idle()


@pytest.fixture
def view(qtbot, live_doc):
    from studio.gui.views.fleet_view import FleetView

    v = FleetView(live_doc)
    qtbot.addWidget(v)
    v.resize(1100, 380)
    with qtbot.waitSignal(v.planReady, timeout=60_000):
        v.show()
    yield v
    v.wait_idle()


def test_plan_drawn_as_traffic_over_stacked_replicas(view, live_doc):
    p = view.result.plan
    x, y = view.traffic_line.getData()
    assert len(x) == p.traffic.slots + 1 and np.allclose(y, p.traffic.rates_per_s)
    assert p.traffic.peak_per_s == pytest.approx(view.peak.value())
    base = view.reserved_bars.opts["height"]
    burst = view.burst_bars.opts["height"]
    assert np.allclose(np.asarray(base) + np.asarray(burst), p.replicas * p.replica_rate_per_s)
    assert np.all(np.asarray(base) + np.asarray(burst) >= p.traffic.rates_per_s)  # capacity covers the traffic
    _, kw = view.power_line.getData()
    assert np.allclose(kw, p.watts / 1e3)
    assert "kWh/day" in view.status.text() and "SLO met in every slot" in view.status.text()
    assert view.plan_revision == live_doc.revision


def test_layout_edit_replans_live(qtbot, view, live_doc):
    before = view.result.plan.gpus_per_replica
    with qtbot.waitSignal(view.planReady, timeout=60_000) as sig:
        live_doc.edit("Layout", "layout", lambda p: p.replace(layout=Layout(tp=4, pp=1, dp=4)))
        live_doc.recompute_now()
    assert sig.args[1] == live_doc.revision
    assert view.result.plan.gpus_per_replica == 4 != before


def test_reuse_edit_replans_with_the_reuse_adjusted_replica_rate(qtbot, view, live_doc):
    """Prompt reuse (a shared system prompt, conversations resent each turn) lets each replica hold
    more requests within the SLO, so the same traffic needs no more replicas and often fewer."""
    from studio.core.settings.reuse import Reuse

    before = view.result.plan
    reuse = Reuse(system_prompt_tokens=400, turns=4, history_tokens_per_turn=200)
    with qtbot.waitSignal(view.planReady, timeout=60_000):
        live_doc.edit("Reuse", "workload", lambda p: p.replace(workload=p.workload.replace(reuse=reuse)))
        live_doc.recompute_now()
    after = view.result.plan
    assert live_doc.result.prefix_cache is not None
    assert after.replica_rate_per_s > 1.2 * before.replica_rate_per_s
    assert np.all(after.replicas <= before.replicas)


def test_typed_peak_replans(qtbot, view):
    peak = view.result.plan.traffic.peak_per_s
    with qtbot.waitSignal(view.planReady, timeout=60_000):
        view.peak.setFocus()
        view.peak.selectAll()
        qtbot.keyClicks(view.peak, "20")
        qtbot.keyClick(view.peak, Qt.Key.Key_Return)
    assert view.result.plan.traffic.peak_per_s == pytest.approx(20) != peak


def test_a_plan_for_other_settings_is_dropped(view):
    drawn = view.result
    view._asked = None  # as if the controls changed after this job was asked for
    view._on_plan(object(), "")
    assert view.result is drawn


def test_error_clears(view):
    view._on_plan(None, "one replica misses the SLO")
    assert view.result is None and "misses the SLO" in view.status.text()


def test_main_window_builds_the_fleet_tab_on_first_show(qtbot, live_doc, catalog, tmp_path):
    from PySide6.QtCore import QSettings

    from studio.gui.window.main_window import MainWindow

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    w = MainWindow(live_doc, catalog, settings=settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    assert "Fleet" in w.docks and w._fleet_view is None
    w.docks["Fleet"].raise_()
    assert w.docks["Fleet"].widget() is w.fleet_view
    qtbot.waitUntil(lambda: w.fleet_view.plan_revision == live_doc.revision, timeout=60_000)
    assert w.fleet_view.result is not None
    w.fleet_view.wait_idle()


def test_ranking_orders_the_explorers_layouts_by_cost_and_applies_one(qtbot, view, live_doc, monkeypatch):
    from studio.service import fleet

    real = fleet.sweep_layouts
    monkeypatch.setattr(fleet, "sweep_layouts", lambda p: fleet.replica_layouts(real(p))[:3])
    with qtbot.waitSignal(view.rankingReady, timeout=60_000):
        qtbot.mouseClick(view.rank_button, Qt.MouseButton.LeftButton)
    costs = [r.usd_per_day for r in view.ranking]
    assert len(costs) == 3 and costs == sorted(costs)
    assert view.ranking_table.rowCount() == 3 and view.ranking_table.isVisible()
    other = next(i for i, r in enumerate(view.ranking) if r.result is not None and r.layout != live_doc.project.layout)
    count = live_doc.undo_stack.count()
    table = view.ranking_table
    view.resize(1100, 800)
    table.scrollToItem(table.item(other, 0))
    qtbot.waitUntil(lambda: table.viewport().height() > 0 and not table.viewport().visibleRegion().isEmpty())
    rect = table.visualItemRect(table.item(other, 0))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # the item view's press first
    qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert live_doc.project.layout == view.ranking[other].layout
    assert live_doc.undo_stack.count() == count + 1


def test_settings_are_the_projects_saved_undone_and_restored(qtbot, view, live_doc, tmp_path):
    """A typed p99 TPOT and a price become the project's fleet settings (one undo step each), are
    written to the file, and a reopened file or an undo puts the controls back."""
    count = live_doc.undo_stack.count()
    with qtbot.waitSignal(view.planReady, timeout=60_000):
        view.tpot.setFocus()
        view.tpot.selectAll()
        qtbot.keyClicks(view.tpot, "60")
        qtbot.keyClick(view.tpot, Qt.Key.Key_Return)
    assert live_doc.project.fleet.tpot_p99_ms == 60 and live_doc.undo_stack.count() == count + 1
    price = view.optional["on_demand_usd_per_gpu_hour"]
    assert price.text() == "preset" and live_doc.project.fleet.on_demand_usd_per_gpu_hour is None
    with qtbot.waitSignal(view.planReady, timeout=60_000):
        price.setFocus()
        price.selectAll()
        qtbot.keyClicks(price, "4.5")
        qtbot.keyClick(price, Qt.Key.Key_Return)
    assert live_doc.project.fleet.on_demand_usd_per_gpu_hour == 4.5
    assert view.result.plan.pricing.burst_usd_per_gpu_hour == 4.5  # the plan drawn uses it
    path = live_doc.save(tmp_path / "fleet.json")
    live_doc.undo_stack.undo()
    assert price.text() == "preset" and view.tpot.value() == 60
    live_doc.undo_stack.undo()
    assert view.tpot.value() == 50
    live_doc.open(path)
    assert view.tpot.value() == 60 and price.value() == 4.5
    assert live_doc.project.fleet.tpot_p99_ms == 60


def test_explorer_button_ranks_by_cost_per_day_in_the_fleet_tab(qtbot, live_doc, catalog, tmp_path, monkeypatch):
    """Issue 35: the Explorer reaches the fleet objective: its *Cost per day…* button raises the
    Fleet tab, which lists the sweep's layouts cheapest per day first."""
    from PySide6.QtCore import QSettings

    from studio.gui.window.main_window import MainWindow
    from studio.service import fleet

    real = fleet.sweep_layouts
    monkeypatch.setattr(fleet, "sweep_layouts", lambda p: fleet.replica_layouts(real(p))[:3])
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    w = MainWindow(live_doc, catalog, settings=settings)
    qtbot.addWidget(w)
    w.resize(1366, 768)
    w.show()
    qtbot.waitExposed(w)
    w.docks["Explorer"].raise_()
    ex = w.explorer
    button = w.cost_rank_button
    assert button.text() == "Cost per day…"
    qtbot.waitUntil(button.isVisible, timeout=10_000)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    view = w.fleet_view
    qtbot.waitUntil(lambda: view.ranking is not None, timeout=120_000)
    costs = [r.usd_per_day for r in view.ranking]
    assert len(costs) == 3 and costs == sorted(costs)
    assert view.isVisible() and view.ranking_table.rowCount() == 3
    assert view.ranking_table.item(0, 4).text().startswith("$")
    view.wait_idle()
    ex.wait_idle()
