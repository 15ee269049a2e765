"""Pipeline bubble and timelines, layout validation, rules, calibration and constants."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import CalibrationProfile, LinkFit
from studio.core.workload import Workload
from studio.engine import default_constants, evaluate
from studio.engine.plan.views import SEGMENT_KINDS
from studio.engine.step.constants import constants_from_dict
from studio.engine.step.step_times import bubble_fraction
from tests.engine.fixtures import DGX_H100, LLAMA_8B, LLAMA_70B, MIXTRAL, cluster, project


def test_bubble_27_percent_at_p4_m8():
    assert bubble_fraction(4, 8) == pytest.approx(3 / 11)
    assert round(bubble_fraction(4, 8) * 100) == 27
    r = evaluate(project(cluster(DGX_H100, 1), LLAMA_70B, Layout(tp=2, pp=4, micro_batches=8),
                         workload=Workload(batch=64)))
    assert r.bubble_fraction == pytest.approx(3 / 11)
    assert r.timelines["decode"].bubble_fraction == pytest.approx(3 / 11)
    assert "BUBBLE_HIGH_INTERACTIVE" in {w.code for w in r.warnings}


def test_timeline_arrays_cover_every_lane_to_the_end():
    r = evaluate(project(cluster(DGX_H100, 1), LLAMA_70B, Layout(tp=2, pp=4, micro_batches=4),
                         workload=Workload(batch=32)))
    for tl in r.timelines.values():
        assert len(tl.lanes) == 4
        assert len(tl.lane) == len(tl.start) == len(tl.duration) == len(tl.kind) == len(tl.micro_batch)
        for lane in range(4):
            m = tl.lane == lane
            end = (tl.start[m] + tl.duration[m]).max()
            assert end == pytest.approx(tl.total_ms)
            assert (tl.duration[m] >= 0).all()
        assert tl.segments_of("compute").sum() == 16
        assert tl.segments_of("p2p").sum() == 12
        assert set(np.unique(tl.kind)) <= set(range(len(SEGMENT_KINDS)))


@pytest.mark.parametrize(
    ("layout", "match"),
    [
        (Layout(tp=4), "cluster has 8"),
        (Layout(tp=1, pp=8, layers_per_stage=(4,) * 8), "adds up to 32"),
        (Layout(tp=8, placement=tuple(f"n0/gpu{i}" for i in range(7)) + ("n0/gpux",)), "not in the cluster"),
    ],
)
def test_impossible_layouts_are_clear_errors(layout, match):
    with pytest.raises(StudioError, match=match):
        evaluate(project(cluster(DGX_H100, 1), LLAMA_70B), layout)


def test_ep_must_divide_experts_and_model_must_be_moe():
    with pytest.raises(StudioError, match="no experts"):
        evaluate(project(cluster(DGX_H100, 1), LLAMA_70B, Layout(tp=2, dp=4, ep=2)))
    with pytest.raises(StudioError, match="PP=40 exceeds"):
        evaluate(project(cluster(DGX_H100, 5), MIXTRAL, Layout(tp=1, pp=40)))


def test_placement_filled_in_cluster_order():
    r = evaluate(project(cluster(DGX_H100, 1), LLAMA_70B, Layout(tp=8)))
    assert r.layout.placement == tuple(f"n0/gpu{i}" for i in range(8)) or len(r.layout.placement) == 8


def test_rules_fire():
    c = cluster(DGX_H100, 1)
    r = evaluate(project(c, LLAMA_8B, Layout(tp=8), workload=Workload(isl=16000, osl=1000)))
    codes = {w.code for w in r.warnings}
    assert {"FITS_ONE_GPU_PREFER_DP", "LONG_CONTEXT_NO_SP"} <= codes
    r = evaluate(project(c, LLAMA_70B, Layout(tp=1, pp=8, micro_batches=8)).model_copy(), Layout(tp=1, pp=8))
    assert "BUBBLE_HIGH_INTERACTIVE" in {w.code for w in r.warnings}
    r = evaluate(project(cluster(DGX_H100, 3), LLAMA_70B, Layout(tp=8, pp=3)))
    assert "PP_LAYERS_UNEVEN" in {w.code for w in r.warnings}
    m = LLAMA_70B.replace(num_attention_heads=56, num_kv_heads=8, head_dim=128)
    r = evaluate(project(cluster(DGX_H100, 2), m, Layout(tp=16)))
    assert "TP_HEADS_NOT_DIVISIBLE" in {w.code for w in r.warnings}
    r = evaluate(project(c, LLAMA_70B.replace(max_context=4096), Layout(tp=8), workload=Workload(isl=4000, osl=200)))
    assert "CONTEXT_EXCEEDS_MODEL" in {w.code for w in r.warnings}
    r = evaluate(project(c, LLAMA_70B, Layout(tp=8), workload=Workload(ttft_ms=1, tpot_ms=0.5)))
    assert {"TTFT_TARGET_MISSED", "TPOT_TARGET_MISSED"} <= {w.code for w in r.warnings}
    for w in r.warnings:
        assert w.fix and w.message


def test_explanations_cover_headline_figures():
    r = evaluate(project(cluster(DGX_H100, 2), LLAMA_70B, Layout(tp=8, pp=2, micro_batches=2)))
    keys = {"memory.weights", "memory.kv_cache", "memory.activations", "memory.overhead",
            "kv_cache.bytes_per_token_per_gpu", "kv_cache.capacity_tokens", "comm.allreduce_decode",
            "comm.allreduce_prefill", "comm.p2p", "pipeline.bubble", "latency.ttft", "latency.tpot",
            "throughput", "cost"}
    assert keys <= set(r.explanations)
    assert r.explanations["latency.tpot"].value == pytest.approx(r.tpot_ms)
    assert r.explanations["throughput"].value == pytest.approx(r.output_tokens_per_s)
    assert "GiB" in r.explanations["memory.weights"].as_text()
    j = r.to_json()
    assert j["layout"]["pp"] == 2 and j["latency_ms"]["tpot"] == pytest.approx(r.tpot_ms)


def test_calibration_profile_overrides_links_and_efficiency():
    p = project(cluster(DGX_H100, 2), LLAMA_70B, Layout(tp=16), workload=Workload(batch=64))
    base = evaluate(p)
    slow = CalibrationProfile(name="slow-ib", link_fits={"ib-ndr": LinkFit(latency_us=50, bandwidth_gbps=5)},
                              efficiency={"decode_efficiency": 0.3})
    r = evaluate(p, calibration=slow)
    assert r.calibration == "slow-ib"
    assert r.allreduce_us_per_layer_decode > base.allreduce_us_per_layer_decode
    assert r.tpot_ms > base.tpot_ms
    with pytest.raises(StudioError, match="not an engine constant"):
        evaluate(p, calibration=CalibrationProfile(name="x", efficiency={"warp_speed": 2.0}))
    p2 = p.model_copy(update={"serving": p.serving.model_copy(update={"calibration": "missing"})})
    with pytest.raises(StudioError, match="missing"):
        evaluate(p2)


def test_constants_have_sources_and_overrides():
    c = default_constants()
    assert all(c.sources[n] for n in c.names())
    assert c.with_overrides({"hbm_efficiency:h100-sxm": 0.5}).per_gpu(
        c.with_overrides({"hbm_efficiency:h100-sxm": 0.5}).hbm_efficiency, "h100-sxm") == 0.5
    assert c.with_overrides({"prefill_efficiency": 0.4}).prefill_efficiency == 0.4
    with pytest.raises(StudioError, match="constants.matmul_efficiency_bf16"):
        constants_from_dict({"constants": {}})
