"""The engine features' effects on the figures (studio.engine.features): routing skew and EPLB,
the all-to-all backend, dual-batch overlap, a load-blind DP balancer and the API servers."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core.engine_features import EngineFeatures
from studio.core.layout import Layout
from studio.core.workload import Load
from studio.engine.features import routing
from studio.engine.features.alltoall import backend_class, copies_per_rank_copy, low_latency_gbps
from studio.engine.features.frontend import capacity_per_s, wait_ms, with_frontend
from studio.engine.features.overlap import overlapped, split_rows
from studio.engine.plan.evaluate import evaluate
from studio.engine.step.iteration import IterationTimes

EP = Layout(tp=1, dp=8, ep=8)


def _project(features: EngineFeatures, layout: Layout = EP, **workload):
    from studio.cli import build_parser
    from studio.commands.options.project_args import project_from_args

    args = build_parser().parse_args(["plan", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--runtime", "vllm",
                                      "--kv-dtype", "fp8"])
    proj = project_from_args(args)
    serving = proj.serving.model_copy(update={"features": features})
    return proj.model_copy(update={"layout": layout, "serving": serving,
                                   "workload": proj.workload.model_copy(update=workload)})


def _plan(features: EngineFeatures, layout: Layout = EP, **workload):
    return evaluate(_project(features, layout, **workload))


# ------------------------------------------------------------------ routing skew and EPLB
@pytest.mark.parametrize("skew", [1.0, 1.5, 3.0, 8.0])
def test_expert_loads_have_the_asked_skew(skew):
    loads = np.asarray(routing.expert_loads(64, skew))
    assert loads.mean() == pytest.approx(1.0) and loads.max() == pytest.approx(skew, rel=1e-6)


def test_eplb_brings_the_most_loaded_rank_toward_the_mean():
    plain = routing.rank_skew_contiguous(256, 16, 4.0)
    packed = routing.rank_skew_eplb(256, 16, 4.0, 0)
    replicated = routing.rank_skew_eplb(256, 16, 4.0, 32)
    assert plain > packed > replicated >= 1.0 and replicated < 1.01
    # one expert per rank and no spare slot: the hottest expert's rank carries its whole skew
    assert routing.rank_skew_contiguous(8, 8, 3.0) == pytest.approx(3.0)
    assert routing.rank_skew_eplb(8, 8, 3.0, 0) == pytest.approx(3.0)
    assert routing.rank_skew_eplb(8, 8, 3.0, 8) < 2.0  # a replica of each hot expert halves its load
    assert routing.rank_skew(8, 8, None, True, 8) == 1.0  # no skew set: nothing to balance


def test_a_routing_skew_slows_the_moe_and_eplb_recovers_it_for_expert_weights():
    even = _plan(EngineFeatures())
    skewed = _plan(EngineFeatures(routing_skew=2.0))
    balanced = _plan(EngineFeatures(routing_skew=2.0, eplb=True, redundant_experts=8))
    assert skewed.tpot_ms > even.tpot_ms * 1.02
    assert even.tpot_ms <= balanced.tpot_ms < skewed.tpot_ms
    # the redundant experts' weights (8 more over 8 experts: twice the expert bytes) leave less KV cache
    assert balanced.memory[0].weights > even.memory[0].weights * 1.5


# ------------------------------------------------------------------ all-to-all backends
def test_backend_names_map_to_the_published_tables():
    assert backend_class("vllm", "deepep_low_latency") == "deepep_low_latency"
    assert backend_class("vllm", "deepep_high_throughput") == "deepep_normal"
    assert backend_class("sglang", "deepep") == "deepep_auto"
    assert backend_class("vllm", "pplx") is None and backend_class("vllm", "source") is None
    # DeepEP legacy table: EP 8 dispatch 98 GB/s, combine 127 GB/s; EP 256: 39 and 40
    assert low_latency_gbps(8) == pytest.approx(2 / (1 / 98 + 1 / 127))
    assert low_latency_gbps(256) == pytest.approx(2 / (1 / 39 + 1 / 40))
    assert copies_per_rank_copy(2, 8) == pytest.approx(2 / (8 * (1 - (7 / 8) ** 2)))


def test_a_backend_without_a_table_keeps_the_default_cost_and_deepep_changes_it():
    base = _plan(EngineFeatures())
    assert _plan(EngineFeatures(all2all_backend="pplx")).tpot_ms == base.tpot_ms
    ll = _plan(EngineFeatures(all2all_backend="deepep_low_latency"))
    assert ll.tpot_ms != base.tpot_ms
    assert ll.alltoall_us_per_layer_decode != base.alltoall_us_per_layer_decode


# ------------------------------------------------------------------ dual-batch overlap
def _times(compute, a2a):
    z = np.zeros((1, len(compute)))
    return IterationTimes(compute=np.array([compute], float), allreduce=z.copy(), alltoall=np.array([a2a], float),
                          p2p=z.copy(), ar_us=z[0], a2a_us=z[0], p2p_us=z[0], cp=z.copy(), cp_us=z[0])


def test_overlap_exposes_only_the_all_to_all_the_other_half_cannot_hide():
    whole = _times([10.0, 10.0], [4.0, 30.0])
    half = _times([6.0, 6.0], [2.5, 16.0])  # a half reads the weights again: 2 × 6 > 10
    out = overlapped(whole, half, np.array([True, True]))
    assert out.compute.tolist() == [[12.0, 12.0]]
    assert out.alltoall.tolist() == [[0.0, 20.0]]  # max(0, 5 - 12), max(0, 32 - 12)
    kept = overlapped(whole, half, np.array([False, True]))
    assert kept.compute[0, 0] == 10.0 and kept.alltoall[0, 0] == 4.0
    # vLLM splits a decode-only step from 32 tokens, a step with prompt tokens from 512
    assert split_rows(np.array([0.0, 0.0, 100.0, 600.0]), np.array([31.0, 32.0, 300.0, 0.0]), 32, 512).tolist() == [
        False, True, False, True]


def test_dbo_leaves_a_step_below_the_threshold_whole():
    from studio.engine.fabric.topology import topology_of
    from studio.engine.plan.costs import project_costs
    from studio.engine.plan.validate import check_layout
    from studio.engine.step.constants import default_constants
    from studio.engine.step.iteration import IterationModel

    proj = _project(EngineFeatures(dual_batch_overlap=True))
    c = default_constants()
    placement = check_layout(EP, proj.cluster, proj.model)
    lc = project_costs(proj, EP, placement, topology_of(proj.cluster), c)
    assert lc.features is not None and lc.features.dbo == (32.0, 512.0)
    on, off = IterationModel(lc, c), IterationModel(lc.features.plain, c)
    small_on, small_off = on.micro_batch_times(0.0, 16.0, 1000.0, 500.0), off.micro_batch_times(0.0, 16.0, 1000.0, 500.0)
    assert np.array_equal(small_on.stage, small_off.stage)
    big_on, big_off = on.micro_batch_times(0.0, 256.0, 1000.0, 500.0), off.micro_batch_times(0.0, 256.0, 1000.0, 500.0)
    assert big_on.alltoall.sum() < big_off.alltoall.sum() and big_on.compute.sum() > big_off.compute.sum()


# ------------------------------------------------------------------ DP load balancing
def test_a_load_blind_balancer_costs_the_busiest_attention_dp_rank():
    base = _plan(EngineFeatures())
    assert _plan(EngineFeatures(load_balance="internal")).tpot_ms == base.tpot_ms
    blind = _plan(EngineFeatures(load_balance="external"))
    assert blind.tpot_ms > base.tpot_ms
    # without an EP group spanning DP ranks there is nothing to wait for
    tp_only = Layout(tp=8, dp=1, ep=8)
    assert _plan(EngineFeatures(load_balance="external"), tp_only).tpot_ms == _plan(EngineFeatures(), tp_only).tpot_ms


# ------------------------------------------------------------------ API servers
def test_api_servers_wait_and_cap():
    # PR #17546: one API server served 76.5 req/s (13.07 ms each)
    assert capacity_per_s(1, 13.07) == pytest.approx(76.5, rel=1e-3)
    assert wait_ms(38.25, 1, 13.07) == pytest.approx(13.07 * 0.5 / (2 * 0.5), rel=1e-3)
    assert wait_ms(80.0, 1, 13.07) == float("inf")
    figs, rate, note = with_frontend((10.0, 5.0, 100.0, 1000.0), 153.0, 50.0, (1, 13.07))
    assert rate == pytest.approx(76.5, rel=1e-3) and figs[3] == pytest.approx(500.0, rel=1e-2) and "API server" in note
    assert figs[2] == pytest.approx(50.0 / 76.5 * 1e3, rel=1e-3)  # users / E2E = the cap (Little's law)


def test_more_api_servers_shorten_ttft_at_a_high_request_rate():
    load = Load(mode="rate", rate_per_s=60.0)
    one = _plan(EngineFeatures(api_servers=1), Layout(tp=2, dp=4), isl=200, osl=200, load=load)
    four = _plan(EngineFeatures(api_servers=4), Layout(tp=2, dp=4), isl=200, osl=200, load=load)
    unset = _plan(EngineFeatures(), Layout(tp=2, dp=4), isl=200, osl=200, load=load)
    assert one.ttft_ms > four.ttft_ms > unset.ttft_ms
    assert one.load.saturation_rate_per_s == pytest.approx(76.5, rel=1e-3)
