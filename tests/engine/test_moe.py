"""MoE decode: expert weight bytes follow the distinct experts touched; decode expert compute waits
for the most loaded expert (``moe_imbalance_factor``); prefill stays balanced."""

from __future__ import annotations

import pytest

from studio.core.layout import Layout
from studio.core.workload import Workload
from studio.engine import default_constants, evaluate
from tests.engine.fixtures import FP8, H200, HGX_H200, LLAMA_70B, MIXTRAL, cluster, project

BOX = cluster(HGX_H200, 1, H200)


def _run(model, batch, factor, tp=2, isl=1000, osl=1000, **overrides):
    c = default_constants().with_overrides({"moe_imbalance_factor": factor, **overrides})
    p = project(BOX, model, Layout(tp=tp, dp=8 // tp), workload=Workload(isl=isl, osl=osl, batch=batch), serving=FP8)
    return evaluate(p, constants=c)


def test_default_factor_comes_from_engine_json():
    c = default_constants()
    assert c.moe_imbalance_factor >= 1.0
    assert "fitted" in c.sources["moe_imbalance_factor"]


def test_large_batch_moe_decode_pays_the_imbalance():
    balanced = _run(MIXTRAL, 1024, 1.0, isl=128, osl=128)
    skewed = _run(MIXTRAL, 1024, 2.0, isl=128, osl=128)
    assert skewed.stages[0].decode_compute_ms > 1.3 * balanced.stages[0].decode_compute_ms
    # prefill's large expert GEMMs are not slowed
    assert skewed.stages[0].prefill_compute_ms == pytest.approx(balanced.stages[0].prefill_compute_ms)


def test_dense_model_ignores_the_factor():
    a = _run(LLAMA_70B, 256, 1.0)
    b = _run(LLAMA_70B, 256, 3.0)
    assert a.tpot_ms == pytest.approx(b.tpot_ms)


def test_batch_one_decode_reads_only_the_touched_experts():
    # GEMMs at full fill, so one token's compute stays far below its weight read and the step is
    # the memory time of what it touches
    r = _run(MIXTRAL, 1, 2.0, tp=8, gemm_half_tokens=1.0, expert_gemm_half_tokens=1.0)
    m = r.memory[0]
    experts = m.weights_by_module["experts"]
    dense = m.weights - experts
    c = default_constants()
    hbm = 4800e9 * c.per_gpu(c.hbm_efficiency, "h200-sxm") * c.decode_efficiency
    k_over_e = MIXTRAL.moe.experts_per_token / MIXTRAL.moe.num_experts
    touched = (dense + experts * k_over_e) / hbm * 1e3
    everything = (dense + experts) / hbm * 1e3
    layers = MIXTRAL.num_layers
    # one decoding token: the MoE layer's fixed cost at its fill 1 / (1 + moe_overhead_half_tokens)
    moe_fixed = c.moe_layer_overhead_us / (1.0 + c.moe_overhead_half_tokens)
    fixed = c.decode_step_overhead_us + layers * (c.layer_overhead_us + moe_fixed)
    t = r.stages[0].decode_compute_ms - fixed / 1e3
    assert t == pytest.approx(touched, rel=0.1)
    assert t < 0.6 * everything
