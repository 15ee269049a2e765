"""The layout panel's context-parallel controls, driven with real key events: only allowed CP values
are offered, the refusing rule is in the tooltip, and the mode switch keeps the layout valid."""

from __future__ import annotations

from gui_helpers import make_project
from PySide6.QtCore import Qt

from studio.core.layout import Layout


def _panel(qtbot, doc):
    from studio.gui.panels.layout_panel import LayoutPanel

    panel = LayoutPanel(doc)
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def _items(combo) -> list:
    return [combo.itemData(i) for i in range(combo.count())]


def _pick(qtbot, combo, steps: int = 1) -> None:
    """Move a closed combo box down with the keyboard (emits ``activated`` like a user's choice)."""
    combo.setFocus()
    for _ in range(steps):
        qtbot.keyClick(combo, Qt.Key.Key_Down)


def test_cp_not_offered_where_tp_makes_no_kv_copy(qtbot, doc):
    doc.apply(doc.project.replace(layout=Layout(tp=8, dp=2)), "TP8 DP2", "layout")
    panel = _panel(qtbot, doc)
    cp = panel.combos["cp"]
    assert _items(cp) == [1] and not cp.isEnabled()
    assert "does not duplicate the 8 KV heads" in cp.toolTip()


def test_prefill_mode_offers_cp_over_replicas_and_applies_it(qtbot, doc):
    doc.apply(doc.project.replace(layout=Layout(tp=8, dp=2)), "TP8 DP2", "layout")
    panel = _panel(qtbot, doc)
    with qtbot.waitSignal(doc.projectChanged, timeout=30_000):
        _pick(qtbot, panel.cp_mode)
    assert doc.project.layout.cp_mode == "prefill" and doc.project.layout.cp == 1
    cp = panel.combos["cp"]
    assert _items(cp) == [1, 2] and cp.isEnabled()
    with qtbot.waitSignal(doc.projectChanged, timeout=30_000):
        _pick(qtbot, cp)
    lay = doc.project.layout
    assert (lay.cp, lay.cp_mode, lay.replicas) == (2, "prefill", 1)
    assert "PCP2" in panel.summary.text()
    # TP 16 leaves one replica: prefill CP 2 no longer divides DP, so CP falls back to 1
    panel.set_field("tp", 16)
    assert doc.project.layout.dp == 1 and doc.project.layout.cp == 1
    assert _items(panel.combos["cp"]) == [1]
    assert "must divide DP=1" in panel.combos["cp"].toolTip()


def test_decode_cp_offered_for_gqa_when_tp_duplicates_kv_heads(qtbot, catalog, model):
    from studio.gui.document import ProjectDocument

    few_kv = model.replace(num_kv_heads=2, id="gqa-2kv", name="GQA 2 KV heads")
    proj = make_project(catalog, few_kv, layout=Layout(tp=8, dp=2))
    d = ProjectDocument(proj, evaluate=None, threaded=False)
    panel = _panel(qtbot, d)
    assert _items(panel.combos["cp"]) == [1, 2, 4]
    with qtbot.waitSignal(d.projectChanged, timeout=30_000):
        _pick(qtbot, panel.combos["cp"], 2)
    assert d.project.layout.cp == 4 and d.project.layout.cp_mode == "decode"
    assert "DCP4" in panel.summary.text()


def test_timeline_draws_the_cp_exchange_as_its_own_bars(qtbot, catalog, model):
    from studio.engine import evaluate
    from studio.gui.views.timeline import TimelinePlot

    few_kv = model.replace(num_kv_heads=2, id="gqa-2kv", name="GQA 2 KV heads")
    plain = evaluate(make_project(catalog, few_kv, layout=Layout(tp=8, dp=2)))
    dcp = evaluate(make_project(catalog, few_kv, layout=Layout(tp=8, dp=2, cp=4)))
    plot = TimelinePlot()
    qtbot.addWidget(plot)
    plot.set_timeline(plain.timelines["decode"])
    assert len(plot.bars["cp"].opts["x0"]) == 0
    plot.set_timeline(dcp.timelines["decode"])
    widths = plot.bars["cp"].opts["width"]
    assert len(widths) == 1 and widths[0] > 0
    assert widths[0] == dcp.stages[0].decode_cp_ms


def test_removing_a_node_keeps_decode_cp_and_drops_prefill_cp_that_no_longer_divides(
    catalog, model
):
    from studio.service.project_edits.hardware_edits import follow_cluster

    few_kv = model.replace(num_kv_heads=2, id="gqa-2kv", name="GQA 2 KV heads")
    one = make_project(catalog, few_kv, nodes=1).cluster
    dcp = make_project(catalog, few_kv, layout=Layout(tp=8, dp=2, cp=4))
    kept, _ = follow_cluster(dcp, one)
    assert (kept.layout.dp, kept.layout.cp) == (1, 4)
    pcp = make_project(catalog, few_kv, layout=Layout(tp=8, dp=2, cp=2, cp_mode="prefill"))
    dropped, _ = follow_cluster(pcp, one)
    assert (dropped.layout.dp, dropped.layout.cp) == (1, 1)


def test_cp_card_shows_the_exchange_and_its_why_only_with_cp(qtbot, catalog, model):
    from studio.engine import evaluate
    from studio.gui.panels.metrics_panel import MetricsPanel

    few_kv = model.replace(num_kv_heads=2, id="gqa-2kv", name="GQA 2 KV heads")
    panel = MetricsPanel()
    qtbot.addWidget(panel)
    panel.set_result(evaluate(make_project(catalog, few_kv, layout=Layout(tp=8, dp=2))))
    card = panel.cards["cp"]
    assert not card.isVisibleTo(panel)
    r = evaluate(make_project(catalog, few_kv, layout=Layout(tp=8, dp=2, cp=4)))
    panel.set_result(r)
    assert card.isVisibleTo(panel)
    assert card.caption.text().startswith("prefill ")
    assert "all-gather of the queries" in card.toolTip()
    panel.show_why("cp")
    assert "comm.cp =" in panel.why.toPlainText()
