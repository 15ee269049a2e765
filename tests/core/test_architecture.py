"""Parameter and KV-cache counts of the preset models against the reference totals.

Expected figures are the totals computed from each model's config.json in the reference table
(models.md, see ``presets/models/*.json`` ``sources.total_params``); they agree with the published
totals (8.03B / 70.6B / 405.9B / 46.7B / 141B / 235B-A22B / 671B-A37B / 116.8B-5.1B).
"""

from __future__ import annotations

import pytest

from studio.core.architecture import LLMArchitecture, MoEConfig
from studio.io.presets import load_catalog

# id -> (total params, active params, KV bytes per token in BF16 over full-attention layers)
REFERENCE = {
    "llama-3.1-8b": (8_030_261_248, 8_030_261_248, 131_072),
    "llama-3.1-70b": (70_553_706_496, 70_553_706_496, 327_680),
    "llama-3.3-70b": (70_553_706_496, 70_553_706_496, 327_680),
    "llama-3.1-405b": (405_853_388_800, 405_853_388_800, 516_096),
    "qwen2.5-72b": (72_706_203_648, 72_706_203_648, 327_680),
    "mistral-large-2407": (122_610_069_504, 122_610_069_504, 360_448),
    "mixtral-8x7b": (46_702_792_704, 12_879_925_248, 131_072),
    "mixtral-8x22b": (140_630_071_296, 39_161_468_928, 229_376),
    "qwen3-235b-a22b": (235_093_634_560, 22_190_763_520, 192_512),
    "deepseek-v3": (671_026_419_200, 37_552_282_624, 70_272),
    "gpt-oss-120b": (116_829_156_672, None, 36_864),
}


def _arch(model_id: str) -> LLMArchitecture:
    return load_catalog().model(model_id).architecture


@pytest.mark.parametrize("model_id", sorted(REFERENCE))
def test_total_params_match_reference_exactly(model_id: str) -> None:
    assert _arch(model_id).num_params == REFERENCE[model_id][0]


@pytest.mark.parametrize("model_id", sorted(k for k, v in REFERENCE.items() if v[1] is not None))
def test_active_params_match_reference_exactly(model_id: str) -> None:
    assert _arch(model_id).num_active_params == REFERENCE[model_id][1]


def test_gpt_oss_active_params_excluding_input_embedding() -> None:
    # models.md: 5.13B active excluding the input-embedding table, 5.71B with both tables.
    a = _arch("gpt-oss-120b")
    assert a.num_active_params == 5_711_982_912
    assert a.num_active_params - a.embedding_params == 5_132_849_472


@pytest.mark.parametrize("model_id", sorted(REFERENCE))
def test_kv_bytes_per_token_of_full_attention_layers(model_id: str) -> None:
    a = _arch(model_id)
    full_layers = a.num_layers - a.num_sliding_layers
    assert full_layers * a.kv_elements_per_token_per_layer * 2 == REFERENCE[model_id][2]


def test_gpt_oss_sliding_layers_counted_in_whole_model_kv() -> None:
    a = _arch("gpt-oss-120b")
    assert a.num_sliding_layers == 18 and a.sliding_window == 128
    assert a.kv_bytes_per_token("bf16") == 2 * 36_864
    assert a.kv_bytes_per_token("fp8") == 36_864


def test_mla_cache_is_latent_not_heads() -> None:
    a = _arch("deepseek-v3")
    assert a.kv_heads_stored == 1
    assert a.kv_elements_per_token_per_layer == 512 + 64
    assert a.card_kv_bytes_per_token() > 10 * a.kv_bytes_per_token()


def test_deepseek_moe_layers_skip_first_three() -> None:
    a = _arch("deepseek-v3")
    assert [a.is_moe_layer(i) for i in range(4)] == [False, False, False, True]
    assert a.num_moe_layers == 58


def test_llama4_maverick_interleaves_moe_and_dense_layers() -> None:
    a = _arch("llama-4-maverick")
    assert [a.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    assert a.num_moe_layers == 24
    assert a.layer_params(0)["mlp"] == 3 * 5120 * 16384
    assert a.layer_params(1)["experts"] == 128 * 3 * 5120 * 8192


def test_llama4_scout_every_fourth_layer_is_full_attention() -> None:
    a = _arch("llama-4-scout")
    assert a.num_moe_layers == 48
    assert a.layer_types is not None
    assert [i for i, t in enumerate(a.layer_types) if t == "full"] == list(range(3, 48, 4))
    assert a.sliding_window == 8192


def _toy(**changes) -> LLMArchitecture:
    base = dict(
        id="toy", name="toy", model_type="llama", hidden_size=64, num_layers=4,
        num_attention_heads=4, num_kv_heads=4, head_dim=16, intermediate_size=128,
        vocab_size=100, max_context=256,
    )
    base.update(changes)
    return LLMArchitecture(**base)


def test_card_kv_formula_equals_kv_when_kv_heads_equal_heads() -> None:
    a = _toy()
    assert a.card_kv_bytes_per_token() == a.kv_bytes_per_token() == 4 * 64 * 2 * 2
    assert _toy(num_kv_heads=2).kv_bytes_per_token() == a.kv_bytes_per_token() / 2


def test_dense_layers_and_shared_expert_gate_change_counts() -> None:
    moe = MoEConfig(num_experts=4, experts_per_token=1, expert_intermediate_size=32,
                    num_shared_experts=1, shared_intermediate_size=16)
    a = _toy(moe=moe)
    b = _toy(moe=moe.replace(dense_layers=(2,)))
    c = _toy(moe=moe.replace(shared_expert_gate=True))
    assert a.num_moe_layers == 4 and b.num_moe_layers == 3 and not b.is_moe_layer(2)
    assert b.layer_params(2)["mlp"] == 3 * 64 * 128
    assert c.num_params - a.num_params == 4 * 64
    assert a.num_active_params == a.num_params - 4 * 3 * (3 * 64 * 32)
