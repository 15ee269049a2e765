"""Context parallelism (CP): the layout rules, the KV split, the per-layer exchange over the drawn
links, the sweep and the refusals. Models built in code from their Hugging Face config.json values."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core import parallelism as par
from studio.core.architecture import LLMArchitecture, MLAConfig, MoEConfig
from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.workload import ServingConfig, Workload
from studio.engine import evaluate, sweep
from tests.engine.fixtures import DGX_H100, H100, H200, HGX_H200, LLAMA_70B, cluster, llama, project

# deepseek-ai/DeepSeek-V3 config.json: hidden 7168, 61 layers, 128 heads, kv_lora_rank 512,
# qk_rope 64, qk_nope 128, v_head 128, q_lora 1536, 256 routed experts (8 active, 2048 wide),
# 1 shared expert, first 3 layers dense (18432 wide), vocab 129280, context 163840
DSV3 = LLMArchitecture(
    id="deepseek-v3",
    name="DeepSeek-V3",
    model_type="deepseek_v3",
    hidden_size=7168,
    num_layers=61,
    num_attention_heads=128,
    num_kv_heads=128,
    head_dim=128,
    intermediate_size=18432,
    vocab_size=129280,
    max_context=163840,
    mla=MLAConfig(
        q_lora_rank=1536,
        kv_lora_rank=512,
        qk_nope_head_dim=128,
        qk_rope_head_dim=64,
        v_head_dim=128,
    ),
    moe=MoEConfig(
        num_experts=256,
        experts_per_token=8,
        expert_intermediate_size=2048,
        num_shared_experts=1,
        first_dense_layers=3,
    ),
)
FP8 = ServingConfig(weight_dtype="fp8", kv_dtype="fp8")
LONG = Workload(isl=100_000, osl=2_000, batch="auto", max_batch=256)


def _plan(model, layout, cl=None, wl=LONG, sv=FP8):
    return evaluate(project(cl or cluster(HGX_H200, 1, H200), model, layout, wl, sv))


# ---------------------------------------------------------------------------------------- rules
def test_decode_cp_rules_follow_vllm_checks():
    # MLA: one latent head on every TP rank, so any CP dividing TP is allowed
    assert par.cp_options(DSV3, 8, 1, "decode") == [1, 2, 4, 8]
    assert "must divide TP=8" in par.cp_reason(DSV3, 3, 8, 1, "decode")
    # GQA with TP = KV heads: no KV copy to remove
    why = par.cp_reason(LLAMA_70B, 2, 8, 1, "decode")
    assert "does not duplicate the 8 KV heads" in why
    # 2 KV heads at TP 8: 4 copies, so CP up to 4
    two_kv = llama(4096, 8, 32, 2, 14336, "two-kv")
    assert par.cp_options(two_kv, 8, 1, "decode") == [1, 2, 4]
    assert "exceeds TP / KV heads = 8 / 2 = 4" in par.cp_reason(two_kv, 8, 8, 1, "decode")
    # vLLM's uneven-query-heads case: 6 heads, 2 KV heads, TP 6, DCP 2 -> 3 query heads per KV head
    uneven = llama(768, 4, 6, 2, 2048, "uneven")
    assert "does not divide the 3 query heads" in par.cp_reason(uneven, 2, 6, 1, "decode")


def test_prefill_cp_divides_dp_and_sliding_models_are_refused():
    assert par.cp_options(LLAMA_70B, 4, 2, "prefill") == [1, 2]
    assert "must divide DP=3" in par.cp_reason(LLAMA_70B, 2, 4, 3, "prefill")
    sliding = LLAMA_70B.replace(sliding_window=4096, layer_types=("sliding", "full") * 40)
    assert "sliding-window layers" in par.cp_reason(sliding, 2, 8, 2, "prefill")
    assert par.cp_reason(LLAMA_70B, 2, 4, 2, "sideways").startswith("CP mode 'sideways'")


def test_layout_reason_and_evaluate_refuse_a_bad_cp_with_the_rule():
    bad = Layout(tp=8, cp=2)
    assert "does not duplicate" in par.layout_reason(LLAMA_70B, bad, 8)
    with pytest.raises(
        StudioError, match=r"layout\.cp: decode CP=2: TP=8 does not duplicate.*allowed decode CP: 1"
    ):
        _plan(LLAMA_70B, bad)


def test_with_field_keeps_cp_allowed_when_tp_changes():
    lay = Layout(tp=8, cp=8)
    moved = par.with_field(DSV3, lay, 8, "tp", 4)
    assert (moved.tp, moved.cp) == (4, 4)
    assert par.with_field(DSV3, lay, 8, "cp", 2).cp == 2


# ------------------------------------------------------------------------------------- memory
def test_decode_cp_splits_the_kv_cache_and_multiplies_capacity():
    base = _plan(DSV3, Layout(tp=8))
    dcp = _plan(DSV3, Layout(tp=8, cp=8))
    # MLA: the 576-wide latent (FP8, 1 B) of 61 layers on every GPU, then 1/8 of it
    assert base.kv_bytes_per_token_per_gpu == pytest.approx(61 * 576)
    assert dcp.kv_bytes_per_token_per_gpu == pytest.approx(61 * 576 / 8)
    assert dcp.memory[0].weights == pytest.approx(base.memory[0].weights)
    assert dcp.kv_capacity_tokens == pytest.approx(8 * base.kv_capacity_tokens, rel=1e-6)
    assert dcp.max_context_tokens == dcp.kv_capacity_tokens
    assert dcp.max_concurrent_sequences >= 8 * base.max_concurrent_sequences
    # more sequences fit, so more tokens per GPU at this long context
    assert dcp.output_tokens_per_s_per_gpu > base.output_tokens_per_s_per_gpu


def test_decode_cp_on_gqa_removes_the_kv_copies_tp_makes():
    two_kv = llama(8192, 80, 64, 2, 28672, "gqa-2kv")
    base = _plan(two_kv, Layout(tp=8))
    dcp = _plan(two_kv, Layout(tp=8, cp=4))
    head = 2 * 128 * 1.0 * 80  # one K and V head of 128 dims per layer, FP8
    assert base.kv_bytes_per_token_per_gpu == pytest.approx(
        head
    )  # 1 head per GPU: 4 copies of 2 heads
    assert dcp.kv_bytes_per_token_per_gpu == pytest.approx(head / 4)  # no copy left


# ------------------------------------------------------------------------------------ time
def test_decode_cp_exchange_is_costed_over_the_drawn_links():
    base = _plan(DSV3, Layout(tp=8))
    dcp = _plan(DSV3, Layout(tp=8, cp=8))
    assert base.cp_us_per_layer_decode == 0.0 and not [c for c in base.comm if c.kind == "cp"]
    assert dcp.cp_us_per_layer_decode > 0.0
    cps = {c.phase: c for c in dcp.comm if c.kind == "cp"}
    assert set(cps) == {"prefill", "decode"}
    assert cps["decode"].bottleneck_kind == "nvlink4-nvswitch"
    assert cps["decode"].algorithm == "ring all-gather"
    # the exchange sits in every stage's decode time
    assert dcp.stages[0].decode_cp_ms > 0.0 and base.stages[0].decode_cp_ms == 0.0
    why = dcp.explanations["comm.cp"]
    assert "all-gather of the queries" in why.formula
    assert any("nvlink4-nvswitch" in t.note for t in why.terms)


def test_prefill_cp_over_two_nodes_names_the_network_and_halves_long_prompts():
    cl = cluster(DGX_H100, 2, H100)
    wl = Workload(isl=120_000, osl=500, batch=1, max_batch=64)
    sv = ServingConfig(weight_dtype="fp8", kv_dtype="fp8")
    plain = _plan(LLAMA_70B, Layout(tp=8, dp=2), cl, wl, sv)
    pcp = _plan(LLAMA_70B, Layout(tp=8, dp=2, cp=2, cp_mode="prefill"), cl, wl, sv)
    assert pcp.fits and plain.fits
    cps = {c.phase: c for c in pcp.comm if c.kind == "cp"}
    assert cps["prefill"].bottleneck_kind == "ib-ndr"  # the ring joins the two nodes
    assert cps["prefill"].algorithm == "ring pass"
    # each GPU takes half of the prompt: TTFT well under the single-replica prefill
    assert pcp.ttft_ms < 0.7 * plain.ttft_ms
    # two replicas cooperate on one sequence: one independent replica left
    assert pcp.layout.replicas == 1 and plain.layout.replicas == 2
    assert pcp.kv_capacity_tokens == pytest.approx(2 * plain.kv_capacity_tokens, rel=1e-6)


def test_cp_segments_in_the_timeline_only_with_cp():
    base = _plan(DSV3, Layout(tp=8))
    dcp = _plan(DSV3, Layout(tp=8, cp=8))
    assert not base.timelines["decode"].segments_of("cp").any()
    tl = dcp.timelines["decode"]
    seg = tl.segments_of("cp")
    assert seg.sum() == 1
    assert float(tl.duration[seg][0]) == pytest.approx(dcp.stages[0].decode_cp_ms)


def test_plan_json_reports_cp():
    d = _plan(DSV3, Layout(tp=8, cp=4)).to_json()
    assert d["layout"]["cp"] == 4 and d["layout"]["cp_mode"] == "decode"
    assert d["comm"]["cp_us_per_layer"]["decode"] > 0
    assert d["kv_cache"]["max_context_tokens"] > 0


# ------------------------------------------------------------------------------------ sweep
def test_sweep_picks_decode_cp_for_long_contexts_on_few_gpus():
    proj = project(cluster(HGX_H200, 1, H200), DSV3, Layout(tp=8), LONG, FP8)
    res = sweep(proj, objective="throughput")
    cps = res.columns["cp"]
    assert (cps > 1).any() and (cps == 1).any()
    rec = res.recommended
    assert rec is not None and cps[rec] > 1, res.reasons[0]
    assert "context-parallel exchanges" in res.reasons[0]
    lay = res.layout(rec)
    assert lay.cp == cps[rec] and lay.cp_mode == (
        "prefill" if res.columns["cp_prefill"][rec] else "decode"
    )


def test_sweep_can_be_limited_to_no_cp():
    proj = project(cluster(HGX_H200, 1, H200), DSV3, Layout(tp=8), LONG, FP8)
    res = sweep(proj, cp_sizes=[1])
    assert np.all(res.columns["cp"] == 1)


def test_short_contexts_gain_nothing_from_decode_cp():
    wl = Workload(isl=1024, osl=256, batch=64, max_batch=64)
    base = _plan(DSV3, Layout(tp=8), wl=wl)
    dcp = _plan(DSV3, Layout(tp=8, cp=8), wl=wl)
    # same batch, so the exchange only adds time
    assert dcp.tpot_ms > base.tpot_ms


def test_a_cp_group_across_nodes_is_named_in_a_warning():
    cl = cluster(DGX_H100, 2, H100)
    wl = Workload(isl=120_000, osl=500, batch=1, max_batch=64)
    across = _plan(LLAMA_70B, Layout(tp=8, dp=2, cp=2, cp_mode="prefill"), cl, wl)
    hit = [w for w in across.warnings if w.code == "CP_CROSSES_NODE"]
    assert len(hit) == 1 and "ib-ndr" in hit[0].message and len(hit[0].gpus) == 16
    inside = _plan(LLAMA_70B, Layout(tp=4, dp=4, cp=2, cp_mode="prefill"), cl, wl)
    assert not [w for w in inside.warnings if w.code == "CP_CROSSES_NODE"]


def test_short_context_sweeps_try_cp_only_when_asked():
    wl = Workload(isl=2048, osl=512, batch="auto", max_batch=64)
    proj = project(cluster(HGX_H200, 1, H200), DSV3, Layout(tp=8), wl, FP8)
    assert np.all(sweep(proj).columns["cp"] == 1)
    asked = sweep(proj, cp_sizes=[1, 8], cp_modes=("decode",)).columns["cp"]
    assert set(np.unique(asked)) == {1, 8}
