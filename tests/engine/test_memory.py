"""Memory: weights by module, KV bytes per token, fit, and the concept card's figures."""

from __future__ import annotations

import pytest

from studio.core.architecture import ModulePrecision
from studio.core.layout import Layout
from studio.core.workload import ServingConfig, Workload
from studio.engine import evaluate
from tests.engine.fixtures import (
    DGX_H100,
    H100,
    LLAMA_70B,
    LLAMA_405B,
    MHA_7B,
    MIXTRAL,
    cluster,
    project,
)

GIB = 2**30


def test_70b_fp16_weights_about_140_gb():
    p = project(cluster(DGX_H100, 1), LLAMA_70B, Layout(tp=8), serving=ServingConfig(weight_dtype="fp16"))
    r = evaluate(p)
    total = sum(m.weights for m in r.memory)
    assert 138e9 < total < 144e9  # concept card: "~140 GB"


def test_card_kv_formula_equals_model_when_kv_heads_equal_heads():
    p = project(cluster(DGX_H100, 1), MHA_7B, Layout(tp=1, dp=8), workload=Workload(isl=512, osl=512))
    r = evaluate(p)
    assert r.kv_bytes_per_token_card == r.kv_bytes_per_token_model == 32 * 4096 * 2 * 2
    assert r.kv_bytes_per_token_per_gpu == pytest.approx(r.kv_bytes_per_token_model)


def test_gqa_kv_sharded_then_replicated():
    c = cluster(DGX_H100, 1)
    w = Workload(isl=1000, osl=24)
    per_gpu = {tp: evaluate(project(c, LLAMA_70B, Layout(tp=tp, dp=8 // tp), workload=w)).kv_bytes_per_token_per_gpu
               for tp in (1, 2, 4, 8)}
    assert per_gpu[1] == 80 * 2 * 8 * 128 * 2  # 320 KiB (reference/models.md)
    assert per_gpu[8] == per_gpu[1] / 8
    p16 = project(cluster(DGX_H100, 2), LLAMA_70B, Layout(tp=16), workload=w)
    r = evaluate(p16)
    assert r.kv_bytes_per_token_per_gpu == per_gpu[8]  # one KV head per GPU: replicated
    assert "KV_HEADS_REPLICATED" in {x.code for x in r.warnings}


def test_405b_bf16_fits_tp8_pp2_on_16_not_tp8_on_8():
    r16 = evaluate(project(cluster(DGX_H100, 2), LLAMA_405B, Layout(tp=8, pp=2)))
    r8 = evaluate(project(cluster(DGX_H100, 1), LLAMA_405B, Layout(tp=8)))
    assert r16.fits and not r8.fits
    assert "DOES_NOT_FIT" in {w.code for w in r8.warnings}
    assert r8.output_tokens_per_s == 0.0


def test_405b_fp8_mixed_precision_matches_vllm_log():
    # reference/memory.md M1: 57.75 GiB per rank, FP8 MLP with BF16 attention and embeddings
    prec = ModulePrecision(attention="bf16", mlp="fp8", experts="fp8", embeddings="bf16", lm_head="bf16")
    r = evaluate(project(cluster(DGX_H100, 1), LLAMA_405B, Layout(tp=8), serving=ServingConfig(precision=prec)))
    gib = r.memory[0].weights / GIB
    assert abs(gib - 57.75) / 57.75 < 0.05


def test_memory_terms_add_up_and_module_split():
    r = evaluate(project(cluster(DGX_H100, 1), LLAMA_70B, Layout(tp=4, pp=2)))
    for m in r.memory:
        assert m.total == pytest.approx(m.weights + m.kv_cache + m.activations + m.overhead)
        assert sum(m.weights_by_module.values()) == pytest.approx(m.weights)
    first = [m for m in r.memory if m.stage == 0][0]
    last = [m for m in r.memory if m.stage == 1][0]
    assert first.weights_by_module["embeddings"] > 0 and first.weights_by_module["lm_head"] == 0
    assert last.weights_by_module["lm_head"] > 0 and last.weights_by_module["embeddings"] == 0


def test_moe_experts_split_by_ep():
    c = cluster(DGX_H100, 1)
    w1 = evaluate(project(c, MIXTRAL, Layout(tp=2, dp=4, ep=1))).memory[0].weights_by_module["experts"]
    w8 = evaluate(project(c, MIXTRAL, Layout(tp=2, dp=4, ep=8))).memory[0].weights_by_module["experts"]
    assert w8 == pytest.approx(w1 * 2 / 8)


def test_batch_auto_is_capacity_capped_by_max_batch():
    c = cluster(DGX_H100, 1)
    r = evaluate(project(c, LLAMA_70B, Layout(tp=8), workload=Workload(max_batch=100000)))
    assert r.batch == r.max_concurrent_sequences > 0
    r2 = evaluate(project(c, LLAMA_70B, Layout(tp=8), workload=Workload(max_batch=16)))
    assert r2.batch == 16 and r2.batch_auto


def test_kv_less_than_one_sequence():
    w = Workload(isl=400_000, osl=8_000)
    r = evaluate(project(cluster(DGX_H100, 1), LLAMA_405B.replace(max_context=1_000_000), Layout(tp=8),
                         workload=w, serving=ServingConfig(weight_dtype="fp8")))
    codes = {x.code for x in r.warnings}
    assert not r.fits and "KV_LESS_THAN_ONE_SEQUENCE" in codes, r.fit_reason


def test_more_gpu_memory_utilization_more_kv():
    c = cluster(DGX_H100, 1)
    lo = evaluate(project(c, LLAMA_70B, Layout(tp=8), serving=ServingConfig(gpu_memory_utilization=0.8)))
    hi = evaluate(project(c, LLAMA_70B, Layout(tp=8), serving=ServingConfig(gpu_memory_utilization=0.95)))
    assert hi.kv_capacity_tokens > lo.kv_capacity_tokens
    assert H100.memory_bytes == lo.memory[0].capacity
