"""MoE all-to-all is its own segment kind and figure ("All-to-all (EP)"), not drawn as AllReduce."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gui_helpers import engine_evaluate

from studio.gui.toolkit.colors import SEGMENT_LABELS
from studio.io.project_file import load_project

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"


@pytest.fixture(scope="module")
def moe():
    """DeepSeek-V3 on a GB200 NVL72 rack with EP 8 > TP 4: experts spread over two TP groups."""
    p = load_project(EXAMPLES / "gb200-nvl72-deepseek-v3.json")
    return p.replace(layout=p.layout.replace(tp=4, dp=18, ep=8))


def test_the_engine_draws_all_to_all_segments_and_reports_the_figure(moe):
    r = engine_evaluate()(moe)
    a2a = [c for c in r.comm if c.kind == "alltoall" and c.phase == "decode"]
    assert a2a and r.alltoall_us_per_layer_decode == max(c.time_us for c in a2a) > 0
    tl = r.timelines["decode"]
    seg = tl.segments_of("alltoall")
    assert seg.any()
    # the stage's work is unchanged: compute + all-reduce + all-to-all back to back
    per_stage = {k: tl.duration[tl.segments_of(k) & (tl.micro_batch == 0) & (tl.lane == 0)].sum()
                 for k in ("compute", "allreduce", "alltoall")}
    s0 = r.stages[0]
    assert per_stage["compute"] == pytest.approx(s0.decode_compute_ms)
    assert per_stage["allreduce"] + per_stage["alltoall"] == pytest.approx(s0.decode_allreduce_ms)


def test_the_card_and_the_timeline_name_the_all_to_all(qtbot, moe, project):
    from studio.gui.panels.metrics_panel import MetricsPanel, figure_value
    from studio.gui.views.timeline import TimelinePanel

    r = engine_evaluate()(moe)
    panel = MetricsPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.set_result(r)
    card = panel.cards["alltoall"]
    assert card.isVisibleTo(panel)
    assert card.value.text() == figure_value(r, "alltoall")[0] != "—"
    assert "dispatch" in card.toolTip() and "nvlink5-rack" in card.toolTip()
    tp = TimelinePanel()
    qtbot.addWidget(tp)
    tp.set_result(r)
    assert SEGMENT_LABELS["alltoall"] == "All-to-all (EP)"
    assert np.asarray(tp.plot.timeline.segments_of("alltoall")).any()
    dense = engine_evaluate()(project)
    panel.set_result(dense)
    assert not card.isVisibleTo(panel)  # a dense model has no expert all-to-all


def test_explorer_reasons_name_the_all_to_all_and_its_link(moe):
    from studio.engine import sweep

    r = sweep(moe)
    assert any("EP all-to-alls" in t and "nvlink5-rack" in t for t in r.reasons)
    assert not any("TP all-reduces cost 0.0 ms" in t for t in r.reasons)
