"""Hugging Face config.json importer: families, quantisation formats, clear errors, robustness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.core.architecture import LLMArchitecture
from studio.core.errors import StudioError
from studio.core.precision import DType
from studio.io.importers.hf_config import (
    MAX_CONFIG_BYTES,
    SUPPORTED_MODEL_TYPES,
    architecture_from_config,
    load_model_config,
)
from tests.property_budget import examples

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"
LLAMA = DATA / "meta-llama--Meta-Llama-3.1-70B.config.json"


def _cfg(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _arch(cfg: dict) -> LLMArchitecture:
    return architecture_from_config(cfg, model_id="m", name="m", source="test.json")


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")), ids=lambda p: p.name)
def test_every_sample_config_loads(path: Path) -> None:
    arch = load_model_config(path)
    assert arch.num_params > 1e9
    assert arch.model_type == json.loads(path.read_text("utf-8"))["model_type"]


def test_folder_with_config_json_loads(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(LLAMA.read_bytes())
    arch = load_model_config(tmp_path)
    assert arch.id == tmp_path.name
    assert arch.num_params == 70_553_706_496
    assert arch.precision.describe() == "bf16"


def test_qwen3_fp8_block_quantisation() -> None:
    arch = load_model_config(DATA / "Qwen--Qwen3-32B-FP8.config.json")
    p = arch.precision
    assert (p.attention, p.mlp, p.embeddings, p.lm_head) == (DType.FP8, DType.FP8, DType.BF16, DType.BF16)
    assert arch.qk_norm and arch.head_dim == 128


def test_gpt_oss_mxfp4_keeps_attention_and_embeddings_bf16() -> None:
    arch = load_model_config(DATA / "openai--gpt-oss-120b.config.json")
    p = arch.precision
    assert p.experts == DType.FP4
    assert (p.attention, p.embeddings, p.lm_head) == (DType.BF16,) * 3
    assert arch.attention_sinks and arch.moe is not None and arch.moe.expert_bias


def test_fp8_per_tensor_with_ignored_layers() -> None:
    cfg = _cfg("meta-llama--Meta-Llama-3.1-70B.config.json")
    cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "static",
                                  "ignored_layers": ["re:.*self_attn.*"]}
    p = _arch(cfg).precision
    assert (p.attention, p.mlp) == (DType.BF16, DType.FP8)


@pytest.mark.parametrize(("bits", "dtype"), [(4, DType.INT4), (8, DType.INT8)])
@pytest.mark.parametrize("method", ["awq", "gptq"])
def test_awq_and_gptq(method: str, bits: int, dtype: DType) -> None:
    cfg = _cfg("meta-llama--Meta-Llama-3.1-70B.config.json")
    cfg["quantization_config"] = {"quant_method": method, "bits": bits, "group_size": 128}
    p = _arch(cfg).precision
    assert (p.attention, p.mlp, p.lm_head) == (dtype, dtype, DType.BF16)


def test_awq_unsupported_bits_is_clear() -> None:
    cfg = _cfg("meta-llama--Meta-Llama-3.1-70B.config.json")
    cfg["quantization_config"] = {"quant_method": "awq", "bits": 3}
    with pytest.raises(StudioError, match="supported: 4, 8"):
        _arch(cfg)


def test_compressed_tensors_fp8_ignores_lm_head() -> None:
    cfg = _cfg("meta-llama--Meta-Llama-3.1-70B.config.json")
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "float-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"],
                                      "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}},
        "ignore": ["lm_head"],
    }
    p = _arch(cfg).precision
    assert (p.attention, p.mlp, p.lm_head) == (DType.FP8, DType.FP8, DType.BF16)


def test_modelopt_hf_quant_config_next_to_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(LLAMA.read_bytes())
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({
        "producer": {"name": "modelopt", "version": "0.23.0"},
        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]},
    }))
    p = load_model_config(tmp_path).precision
    assert (p.attention, p.mlp, p.lm_head) == (DType.FP8, DType.FP8, DType.BF16)


def test_unknown_quant_method_names_supported_ones() -> None:
    cfg = _cfg("meta-llama--Meta-Llama-3.1-70B.config.json")
    cfg["quantization_config"] = {"quant_method": "bitsandbytes"}
    with pytest.raises(StudioError, match="'bitsandbytes' is not supported; supported: fp8, mxfp4"):
        _arch(cfg)


def test_unknown_model_type_names_file_and_supported_types(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mamba", "hidden_size": 768}))
    with pytest.raises(StudioError) as err:
        load_model_config(path)
    text = str(err.value)
    assert str(path) in text and "'mamba' is not supported" in text
    assert all(t in text for t in SUPPORTED_MODEL_TYPES)


def test_missing_fields_are_all_named(tmp_path: Path) -> None:
    cfg = _cfg("meta-llama--Meta-Llama-3.1-70B.config.json")
    del cfg["hidden_size"], cfg["vocab_size"]
    cfg["num_hidden_layers"] = "eighty"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(StudioError) as err:
        load_model_config(path)
    text = str(err.value)
    assert str(path) in text
    assert "'hidden_size' is missing" in text and "'vocab_size' is missing" in text
    assert "'num_hidden_layers' must be an integer" in text


def test_missing_model_type_lists_supported() -> None:
    with pytest.raises(StudioError, match="'model_type' is missing; supported model types: llama"):
        _arch({"hidden_size": 4096})


def test_heads_not_divisible_by_kv_heads_is_clear() -> None:
    cfg = _cfg("meta-llama--Meta-Llama-3.1-70B.config.json")
    cfg["num_key_value_heads"] = 7
    with pytest.raises(StudioError, match="num_kv_heads"):
        _arch(cfg)


def test_llama4_without_text_config_is_clear() -> None:
    with pytest.raises(StudioError, match="text_config"):
        _arch({"model_type": "llama4"})


def test_qwen2_sliding_window_layers_follow_max_window_layers() -> None:
    cfg = {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
           "max_position_embeddings": 1024, "use_sliding_window": True, "sliding_window": 256,
           "max_window_layers": 2}
    arch = _arch(cfg)
    assert arch.layer_types == ("full", "full", "sliding", "sliding") and arch.sliding_window == 256
    assert arch.attention_bias and not arch.attention_out_bias


def test_oversized_and_broken_files_are_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(StudioError, match="MiB"):
        load_model_config(big)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(StudioError, match="not valid JSON"):
        load_model_config(bad)
    with pytest.raises(StudioError, match="no such file"):
        load_model_config(tmp_path / "missing")
    with pytest.raises(StudioError, match="no config.json"):
        load_model_config(tmp_path)
    arr = tmp_path / "arr.json"
    arr.write_text("[1, 2]")
    with pytest.raises(StudioError, match="JSON object"):
        load_model_config(arr)


KEYS = [
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "head_dim", "intermediate_size", "vocab_size", "max_position_embeddings", "num_local_experts",
    "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
    "first_k_dense_replace", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "layer_types", "sliding_window", "use_sliding_window", "max_window_layers",
    "decoder_sparse_step", "mlp_only_layers", "interleave_moe_layer_step", "text_config",
    "quantization_config", "tie_word_embeddings", "attention_bias", "torch_dtype",
    "shared_expert_intermediate_size", "n_shared_experts", "attention_chunk_size", "no_rope_layers",
]
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-3, max_value=4096),
    st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True),
    st.sampled_from(SUPPORTED_MODEL_TYPES + ("mamba", "", "fp8", "mxfp4", "awq", "bfloat16")),
    st.text(max_size=8),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.sampled_from(KEYS + ["quant_method", "bits"]), inner, max_size=6),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), _values, max_size=20))
def test_random_dicts_raise_only_studio_error(cfg: dict) -> None:
    try:
        arch = _arch(cfg)
    except StudioError as exc:
        assert str(exc).startswith("test.json: ")
    else:
        assert arch.num_params > 0


@settings(max_examples=examples(300), deadline=None)
@given(
    st.sampled_from(sorted(p.name for p in DATA.glob("*.json"))),
    st.dictionaries(st.sampled_from(KEYS), _values, max_size=4),
)
def test_mutated_real_configs_raise_only_studio_error(name: str, changes: dict) -> None:
    cfg = _cfg(name)
    cfg.update(changes)
    try:
        arch = _arch(cfg)
    except StudioError as exc:
        assert str(exc).startswith("test.json: ")
    else:
        assert arch.num_params > 0 and arch.kv_bytes_per_token() > 0


def test_deepseek_v2_family_matches_published_totals() -> None:
    # Shape from models.md "other reference configs" (deepseek-ai/DeepSeek-V2 commit 4c2b2d1
    # config.json); published: 236B total, 21B active (DeepSeek-V2 model card).
    cfg = {"model_type": "deepseek_v2", "hidden_size": 5120, "num_hidden_layers": 60,
           "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 12288,
           "moe_intermediate_size": 1536, "n_routed_experts": 160, "n_shared_experts": 2,
           "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1,
           "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
           "v_head_dim": 128, "vocab_size": 102400, "max_position_embeddings": 163840,
           "topk_method": "group_limited_greedy"}
    arch = _arch(cfg)
    assert round(arch.num_params / 1e9) == 236
    assert round(arch.num_active_params / 1e9) == 21
    assert arch.moe is not None and not arch.moe.router_score_bias


def test_qwen2_moe_shared_expert_matches_published_totals() -> None:
    # Qwen/Qwen1.5-MoE-A2.7B config.json shape; published: 14.3B total, 2.7B activated
    # (Qwen1.5-MoE model card).
    cfg = {"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24,
           "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
           "moe_intermediate_size": 1408, "num_experts": 60, "num_experts_per_tok": 4,
           "shared_expert_intermediate_size": 5632, "vocab_size": 151936,
           "max_position_embeddings": 8192, "decoder_sparse_step": 1, "tie_word_embeddings": False}
    arch = _arch(cfg)
    assert round(arch.num_params / 1e8) == 143
    assert round(arch.num_active_params / 1e8) == 27
    cfg["mlp_only_layers"] = [0, 5]
    assert _arch(cfg).num_moe_layers == 22
