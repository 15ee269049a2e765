"""Disaggregated serving in the main window: typing pools in the Serving mode tab colours the pool
GPUs on the canvas, draws the KV-transfer arrow with its time, adds the timeline's request lanes
(prefill worker, KV transfer, decode worker) and the pools' line in Live metrics; undo takes all of
it back."""

from __future__ import annotations

import pytest
from gui_helpers import open_window
from PySide6.QtCore import Qt

from studio.engine.disagg.evaluate import evaluate_disaggregated
from studio.engine.disagg.timeline import request_timeline
from studio.engine.plan.views import SEGMENT_KINDS
from studio.service import units


@pytest.fixture
def window(editable_window):
    """The module's shared window on a fresh document (the edits of one test are not the next one's)."""
    assert editable_window.doc.result_is_current, editable_window.doc.error
    return editable_window


@pytest.fixture
def own_window(qtbot, project):
    """A window of the test's own, for a test that leaves a figure explained in Live metrics (the
    panel keeps explaining that figure; starting over on a new document does not undo that)."""
    return open_window(qtbot, project)


def _type_pools(qtbot, win, text):
    panel = win.serving_mode_panel
    win.setup_tabs.setCurrentIndex(2)
    with qtbot.waitSignal(panel.planned, timeout=30_000) as sig:
        panel.mode.setFocus()
        qtbot.keyClick(panel.mode, Qt.Key.Key_Down)  # "Disaggregated prefill / decode"
    if text != win.doc.project.serving_mode.spec():
        with qtbot.waitSignal(panel.planned, timeout=30_000) as sig:
            panel.spec.selectAll()
            qtbot.keyClicks(panel.spec, text)
            qtbot.keyClick(panel.spec, Qt.Key.Key_Return)
    return sig.args[0]


def _tile(win, gid):
    return win.scene.item_by_id(gid)


def test_pools_arrow_lanes_and_note_follow_the_serving_mode(qtbot, window):
    win = window
    steps = win.doc.undo_stack.count()
    res = _type_pools(qtbot, win, "2P:tp4,1D:tp8")
    assert res is not None and win.doc.project.serving_mode.spec() == "2P:tp4,1D:tp8"
    assert win.doc.undo_stack.count() == steps + 2  # the mode, then the pools: one step each

    # canvas: every GPU of a pool carries its pool's badge and colour
    pl = win.scene.placement
    prefill, decode = res.prefill.placement, res.decode.placement
    assert {pl.pool_of[g] for g in prefill} == {"prefill"} and {pl.pool_of[g] for g in decode} == {"decode"}
    assert _tile(win, prefill[0]).badge == "P0" and _tile(win, prefill[-1]).badge == "P1"
    assert _tile(win, decode[0]).badge == "D0"
    assert _tile(win, prefill[0]).badge_color != _tile(win, decode[0]).badge_color
    # the KV-transfer arrow, from the slowest flow's prefill GPU to its decode GPU, with its time
    arrow = win.scene.kv_arrow
    t = res.transfer
    assert arrow is not None and arrow.text == f"KV transfer {t.time_ms:.3g} ms"
    assert arrow.src == _tile(win, t.src_gpu).sceneBoundingRect().center()
    assert arrow.dst == _tile(win, t.dst_gpu).sceneBoundingRect().center()
    assert t.bottleneck_name in arrow.toolTip()
    # its label sits above the headers of the nodes it joins, not on their names
    nodes = [_tile(win, g).parentItem().sceneBoundingRect() for g in (t.src_gpu, t.dst_gpu)]
    label = arrow.mapRectToScene(arrow._label_rect())
    assert label.bottom() < min(r.top() for r in nodes)
    texts = [e.text for e in win.canvas.legend.entries]
    assert "prefill 2P(TP4)" in texts and "decode 1D(TP8)" in texts and "KV transfer (slowest flow)" in texts

    # timeline: the request view with the three lanes, shown on its own
    tl = win.timeline
    assert tl.phase == "request" and tl.phase_buttons["request"].isVisibleTo(tl)
    drawn = tl.plot.timeline
    assert drawn is not None and drawn.phase == "request"
    assert drawn.lanes[0].startswith("prefill worker TP4") and drawn.lanes[2].startswith("decode worker TP8")
    assert drawn.lanes[1] == f"KV transfer {t.time_ms:.3g} ms"
    kv = drawn.kind == SEGMENT_KINDS.index("kv_transfer")
    assert drawn.duration[kv].tolist() == [pytest.approx(t.time_ms)]

    # live metrics say the project is disaggregated and what the cards are
    note = win.metrics.serving_note
    assert note.isVisibleTo(win.metrics) and "Cards: disaggregated 2P(TP4)+1D(TP8)" in note.text()
    assert f"aggregated {win.doc.project.layout.label}" in note.text()

    # the user can look at the aggregated decode step and come back
    qtbot.mouseClick(tl.phase_buttons["decode"], Qt.MouseButton.LeftButton)
    assert tl.plot.timeline.phase == "decode"
    qtbot.mouseClick(tl.phase_buttons["request"], Qt.MouseButton.LeftButton)
    assert tl.plot.timeline.phase == "request"

    # undo back to aggregated: stages again, no arrow, no request view, no note
    with qtbot.waitSignal(win.serving_mode_panel.planned, timeout=30_000):
        win.doc.undo_stack.undo()  # the pools
    with qtbot.waitSignal(win.serving_mode_panel.planned, timeout=30_000) as sig:
        win.doc.undo_stack.undo()  # the mode
    assert sig.args[0] is None and not win.doc.project.serving_mode.disaggregated
    assert win.scene.kv_arrow is None and not win.scene.placement.pool_of
    assert _tile(win, prefill[0]).badge == "S0"
    assert not tl.phase_buttons["request"].isVisibleTo(tl) and tl.phase == "decode"
    assert not note.isVisibleTo(win.metrics)


def test_pools_the_gpus_cannot_hold_draw_nothing_and_say_so(qtbot, window):
    win = window
    res = _type_pools(qtbot, win, "1P:tp8,2D:tp8")  # 24 GPUs on 16
    assert res is None
    assert win.scene.kv_arrow is None and not win.scene.placement.pool_of
    assert "not costed" in win.metrics.serving_note.text()
    # nothing costed: the cards stay the aggregated layout's, as the note says
    assert "Cards: aggregated" in win.metrics.serving_note.text() and win.metrics.disagg is None
    r = win.metrics.result
    assert win.metrics.cards["ttft"].value.text() == units.duration_ms(r.ttft_ms)
    assert "serving_mode.decode" in win.serving_mode_panel.view.toPlainText()


def test_request_timeline_adds_up_to_ttft(project):
    from studio.core.serving_mode import parse_pools

    p = project.replace(serving_mode=parse_pools("2P:tp4,1D:tp8"))
    res = evaluate_disaggregated(p)
    tl = request_timeline(res, osl=p.workload.osl, decode_steps=4)
    prefill = tl.lane == 0
    assert tl.duration[prefill].tolist() == [pytest.approx(res.prefill_ms)]
    first_token = tl.start[tl.lane == 2][0]
    assert first_token + res.queue_ms == pytest.approx(res.ttft_ms)
    assert tl.duration[tl.lane == 2].tolist() == [pytest.approx(res.tpot_ms)] * 4


def test_live_metrics_cards_are_the_pools_plan_with_their_why(qtbot, own_window):
    """A disaggregated project's headline cards are the pools' plan (TTFT = queue + prefill + KV
    transfer, decode-only TPOT, throughput of the slower pool), the memory bars the pools' workers;
    the collective cards stay the aggregated layout's, marked; undo brings the aggregated cards back."""
    win = own_window
    m = win.metrics
    agg = m.result
    agg_ttft = m.cards["ttft"].value.text()
    assert agg_ttft == units.duration_ms(agg.ttft_ms)
    res = _type_pools(qtbot, win, "2P:tp4,1D:tp8")
    assert m.disagg is res

    cards = m.cards
    assert cards["ttft"].value.text() == units.duration_ms(res.ttft_ms) != agg_ttft
    assert cards["ttft"].caption.text() == (
        f"q {res.queue_ms:,.0f} + P {res.prefill_ms:,.0f} + KV {res.transfer.time_ms:.2g}")
    assert res.ttft_ms == pytest.approx(res.queue_ms + res.prefill_ms + res.transfer.time_ms)
    assert cards["tpot"].value.text() == units.duration_ms(res.tpot_ms, 2)
    assert cards["tpot"].caption.text() == "decode only"
    assert cards["throughput"].caption.text() == f"{res.output_tokens_per_s_per_gpu:,.3g}/GPU, {res.limited_by}-bound"
    assert cards["cost"].value.text() == units.usd(res.usd_per_million_output_tokens)
    assert cards["kv"].value.text() == f"{res.decode.kv_sequences:,} seq"
    assert cards["memory"].value.text() == units.size_bytes(res.decode.peak_memory.total)
    # the collective cards are the aggregated layout's, and say so
    for key in ("allreduce", "p2p", "bubble"):
        assert cards[key].caption.text().startswith("agg. · ")
    assert not cards["ttft"].caption.text().startswith("agg.")

    # the why of each headline card is the engine's explanation of the pools' figure
    qtbot.mouseClick(cards["ttft"], Qt.MouseButton.LeftButton)
    why = m.why.toPlainText()
    assert "queue + prefill on the prefill pool + KV transfer" in why and "latency.ttft" in why
    assert res.transfer.describe() in why
    qtbot.mouseClick(cards["tpot"], Qt.MouseButton.LeftButton)
    assert "no prefill interference" in m.why.toPlainText()
    qtbot.mouseClick(cards["throughput"], Qt.MouseButton.LeftButton)
    why = m.why.toPlainText()
    assert f"the {res.limited_by} limits at {res.saturation_rate_per_s:.3g} req/s" in why
    assert f"prefill {res.prefill.capacity_rps:.3g} req/s, decode {res.decode.capacity_rps:.3g} req/s" in why
    qtbot.mouseClick(cards["memory"], Qt.MouseButton.LeftButton)
    assert "memory.decode" in m.why.toPlainText() and "memory.prefill" in m.why.toPlainText()
    qtbot.mouseClick(cards["allreduce"], Qt.MouseButton.LeftButton)  # still the aggregated breakdown
    assert "latency.ttft" not in m.why.toPlainText()

    # memory bars: every GPU of the first prefill worker (P…), then of the first decode worker (D…)
    labels = [b.label for b in m.memory.bars]
    assert labels == [f"P{t}" for t in range(4)] + [f"D{t}" for t in range(8)]
    assert [b.memory for b in m.memory.bars] == [*res.prefill.memory, *res.decode.memory]
    assert m.memory_title.isVisibleTo(m) and "P prefill TP4" in m.memory_title.text()

    # undo to aggregated: the aggregated cards, bars and no marks
    with qtbot.waitSignal(win.serving_mode_panel.planned, timeout=30_000):
        win.doc.undo_stack.undo()
    with qtbot.waitSignal(win.serving_mode_panel.planned, timeout=30_000):
        win.doc.undo_stack.undo()
    win.doc.recompute_now()
    assert m.disagg is None
    assert cards["ttft"].value.text() == units.duration_ms(m.result.ttft_ms)
    assert not cards["allreduce"].caption.text().startswith("agg.")
    assert not m.memory_title.isVisibleTo(m) and len(m.memory.bars) == len(m.result.memory)


def test_pool_memory_adds_up(project):
    from studio.core.serving_mode import parse_pools

    p = project.replace(serving_mode=parse_pools("2P:tp4,1D:tp8"))
    res = evaluate_disaggregated(p)
    for pool, tp in ((res.prefill, 4), (res.decode, 8)):
        assert len(pool.memory) == tp and {m.gpu_id for m in pool.memory} <= set(pool.placement)
        peak = pool.peak_memory
        assert peak.total == peak.weights + peak.kv_cache + peak.activations + peak.overhead
        assert peak.weights / 2**30 == pytest.approx(pool.weights_gib)
        assert peak.total <= peak.usable
    # the decode pool reserves KV for the sequences one worker runs at most
    assert res.explanations["memory.decode"].value == pytest.approx(res.decode.peak_memory.total / 2**30)
    cost = res.explanations["cost.usd_per_million_output_tokens"]
    assert cost.value == res.usd_per_million_output_tokens


def test_status_bar_follows_the_plan_live_metrics_show(qtbot, window):
    """The status bar's plan line is the pools' plan once the project is served disaggregated (as
    the headline cards), the layout's again after undo; pools that cannot be costed leave it on the
    aggregated layout, as the cards."""
    win = window
    label = win.engine_label
    agg = win.metrics.result
    agg_text = (f"{agg.layout.label} · {agg.gpus} GPUs · fits · TTFT {agg.ttft_ms:,.0f} ms · "
                f"TPOT {agg.tpot_ms:,.1f} ms")
    assert label.text() == agg_text
    res = _type_pools(qtbot, win, "2P:tp4,1D:tp8")
    want = (f"disaggregated 2P(TP4)+1D(TP8) · {res.gpus} GPUs · fits · TTFT {res.ttft_ms:,.0f} ms · "
            f"TPOT {res.tpot_ms:,.1f} ms")
    assert label.text() == want and want != agg_text
    win.doc.recompute_now()  # the aggregated plan computed again keeps the line on the pools
    assert label.text() == want

    with qtbot.waitSignal(win.serving_mode_panel.planned, timeout=30_000):
        win.doc.undo_stack.undo()  # the pools
    with qtbot.waitSignal(win.serving_mode_panel.planned, timeout=30_000):
        win.doc.undo_stack.undo()  # the mode
    win.doc.recompute_now()
    assert label.text() == agg_text

    assert _type_pools(qtbot, win, "1P:tp8,2D:tp8") is None  # 24 GPUs on 16: not costed
    win.doc.recompute_now()
    assert label.text() == agg_text
