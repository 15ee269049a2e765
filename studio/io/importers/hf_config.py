"""Read a Hugging Face ``config.json`` into an :class:`~studio.core.architecture.LLMArchitecture`.

Supported families (``model_type``): Llama, Mistral, Mixtral, Qwen2, Qwen2-MoE, Qwen3, Qwen3-MoE,
DeepSeek-V2/V3 (MLA), gpt-oss and Llama-4 (its ``text_config``). The checkpoint's storage format
comes from ``quantization_config`` (FP8 block/per-tensor, MXFP4, AWQ, GPTQ, compressed-tensors) or
a ModelOpt ``hf_quant_config.json`` next to the config.

Files are read as JSON only (nothing is executed), at most :data:`MAX_CONFIG_BYTES` long, and every
problem becomes a :class:`~studio.core.errors.StudioError` that names the file and the field.
"""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from studio.core.architecture import LLMArchitecture, MLAConfig, MoEConfig
from studio.core.errors import StudioError, first_error_message
from studio.io.importers.hf_quant import SUPPORTED_QUANT_METHODS, precision_of_config
from studio.io.safe import load_json_file

MAX_CONFIG_BYTES = 4 * 1024 * 1024

SUPPORTED_MODEL_TYPES = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "deepseek_v2",
    "deepseek_v3",
    "gpt_oss",
    "llama4",
    "llama4_text",
)


_MOE_TYPES = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss", "llama4_text"}
_QK_NORM_TYPES = {"qwen3", "qwen3_moe"}


def _upper_limits() -> dict[str, int]:
    """The largest value the domain accepts for each config.json field read as an integer, taken
    from the :class:`LLMArchitecture` / :class:`MoEConfig` / :class:`MLAConfig` field limits, so a
    value is refused here — with the limit in the message — before anything is built from it
    (``num_hidden_layers: 1e12`` must not become a tuple of 10^12 layer types)."""
    def le(model: Any, name: str) -> int:
        for meta in model.model_fields[name].metadata:
            bound = getattr(meta, "le", None)
            if bound is not None:
                return int(bound)
        raise KeyError(name)  # pragma: no cover - every mapped field has a limit

    arch, moe, mla = LLMArchitecture, MoEConfig, MLAConfig
    return {
        "hidden_size": le(arch, "hidden_size"),
        "num_hidden_layers": le(arch, "num_layers"),
        "num_attention_heads": le(arch, "num_attention_heads"),
        "num_key_value_heads": le(arch, "num_kv_heads"),
        "head_dim": le(arch, "head_dim"),
        "intermediate_size": le(arch, "intermediate_size"),
        "intermediate_size_mlp": le(arch, "intermediate_size"),
        "vocab_size": le(arch, "vocab_size"),
        "max_position_embeddings": le(arch, "max_context"),
        "sliding_window": le(arch, "sliding_window"),
        "attention_chunk_size": le(arch, "sliding_window"),
        "max_window_layers": le(arch, "num_layers"),
        "no_rope_layer_interval": le(arch, "num_layers"),
        "num_local_experts": le(moe, "num_experts"),
        "num_experts": le(moe, "num_experts"),
        "n_routed_experts": le(moe, "num_experts"),
        "num_experts_per_tok": le(moe, "experts_per_token"),
        "experts_per_token": le(moe, "experts_per_token"),
        "moe_intermediate_size": le(moe, "expert_intermediate_size"),
        "shared_expert_intermediate_size": le(moe, "shared_intermediate_size"),
        "n_shared_experts": le(moe, "num_shared_experts"),
        "first_k_dense_replace": le(moe, "first_dense_layers"),
        "moe_layer_freq": le(moe, "layer_freq"),
        "decoder_sparse_step": le(moe, "layer_freq"),
        "interleave_moe_layer_step": le(moe, "layer_freq"),
        "q_lora_rank": le(mla, "q_lora_rank"),
        "kv_lora_rank": le(mla, "kv_lora_rank"),
        "qk_nope_head_dim": le(mla, "qk_nope_head_dim"),
        "qk_rope_head_dim": le(mla, "qk_rope_head_dim"),
        "v_head_dim": le(mla, "v_head_dim"),
        "num_nextn_predict_layers": le(arch, "mtp_layers"),
    }


#: Largest accepted value per integer field; fields not listed are capped at 2**40.
UPPER_LIMITS = _upper_limits()
#: Longest integer list read from a config (``no_rope_layers``, ``mlp_only_layers``).
MAX_INT_LIST = 10_000


def _shown(value: int) -> str:
    """An integer for a message: in full up to 10^15, else in e-notation (or its digit count, past
    what a float holds), so a 4,000-digit value is neither an OverflowError nor a 4,000-character
    line."""
    if abs(value) < 10**15:
        return f"{value:,}"
    try:
        return f"{float(value):.3e}"
    except OverflowError:
        return f"a {'negative ' if value < 0 else ''}{len(str(abs(value))):,}-digit number"


class _Fields:
    """Typed reads from one config dict that collect every problem before failing."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.problems: list[str] = []
        # Checks across fields; told only when every field read well (a refused field is read as
        # its minimum, and "hidden_size (1) is not a multiple of ..." would follow from that).
        self.derived: list[str] = []

    def int(self, key: str, default: int | None = None, *, minimum: int = 1, aliases: tuple[str, ...] = ()) -> int:
        value = None
        for k in (key, *aliases):
            if self.cfg.get(k) is not None:
                key, value = k, self.cfg[k]
                break
        if value is None:
            if default is None:
                self.problems.append(f"'{key}' is missing")
                return minimum
            return default
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.problems.append(f"'{key}' must be an integer (got {value!r:.40})")
            return minimum
        if value < minimum:
            self.problems.append(f"'{key}' must be ≥ {minimum} (got {_shown(value)})")
            return minimum
        maximum = UPPER_LIMITS.get(key, 2**40)
        if value > maximum:
            self.problems.append(f"'{key}' must be ≤ {maximum:,} (got {_shown(value)})")
            return minimum
        return value

    def bool(self, key: str, default: bool = False) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problems.append(f"'{key}' must be true or false (got {value!r:.40})")
            return default
        return value

    def int_list(self, key: str) -> list[builtins.int]:  # `int` here is the method above
        value = self.cfg.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            self.problems.append(f"'{key}' must be a list of integers")
            return []
        if len(value) > MAX_INT_LIST:
            self.problems.append(f"'{key}' holds {len(value):,} entries; at most {MAX_INT_LIST:,}")
            return []
        return list(value)

    def check(self, source: str) -> None:
        problems = self.problems or self.derived
        if problems:
            raise StudioError(
                "cannot describe this model: " + "; ".join(problems) + ". "
                + "See the model's Hugging Face config.json for the expected fields.",
                source,
            )


def _model_type(cfg: dict[str, Any], source: str) -> str:
    mt = cfg.get("model_type")
    if not isinstance(mt, str) or not mt:
        raise StudioError(
            "field 'model_type' is missing; supported model types: " + ", ".join(SUPPORTED_MODEL_TYPES),
            source,
        )
    if mt not in SUPPORTED_MODEL_TYPES:
        raise StudioError(
            f"model_type '{mt:.60}' is not supported; supported model types: "
            + ", ".join(SUPPORTED_MODEL_TYPES),
            source,
        )
    return mt


def _text_config(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """Llama-4 keeps the language model in ``text_config``; other families are flat."""
    text = cfg.get("text_config")
    if not isinstance(text, dict):
        raise StudioError("field 'text_config' (an object) is missing for model_type 'llama4'", source)
    merged = dict(text)
    for key in ("tie_word_embeddings", "torch_dtype", "dtype", "quantization_config"):
        if key in cfg and key not in merged:
            merged[key] = cfg[key]
    merged["model_type"] = "llama4_text"
    return merged


def _layer_types(cfg: dict[str, Any], mt: str, layers: int, f: _Fields) -> tuple[tuple[str, ...] | None, int | None]:
    """Per-layer attention type ('full' / 'sliding') and the window, from the family's fields."""
    window_key = "attention_chunk_size" if mt == "llama4_text" else "sliding_window"
    raw_window = cfg.get(window_key)
    window = f.int(window_key) if raw_window is not None else None
    explicit = cfg.get("layer_types")
    if explicit is not None:
        if not isinstance(explicit, list) or len(explicit) != layers:
            f.problems.append(f"'layer_types' must be a list of {layers} entries")
            return None, None
        out = []
        for t in explicit:
            if t in ("full_attention", "full"):
                out.append("full")
            elif t in ("sliding_attention", "sliding", "chunked_attention"):
                out.append("sliding")
            else:
                f.problems.append(
                    f"'layer_types' holds {t!r:.40}; allowed: full_attention, sliding_attention"
                )
                return None, None
        if "sliding" in out and window is None:
            f.problems.append(f"'layer_types' has sliding layers but '{window_key}' is missing")
            return None, None
        return tuple(out), window if "sliding" in out else None
    if window is None:
        return None, None
    if mt in ("mistral", "mixtral"):
        return ("sliding",) * layers, window
    if mt in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        if not f.bool("use_sliding_window"):
            return None, None
        first = f.int("max_window_layers", layers, minimum=0)
        types = tuple("sliding" if i >= first else "full" for i in range(layers))
        return types, window if "sliding" in types else None
    if mt == "llama4_text":
        # Layers that use RoPE attend within chunks of attention_chunk_size tokens; every
        # no_rope_layer_interval-th layer (NoPE) attends to the whole context.
        rope = f.int_list("no_rope_layers")
        if len(rope) != layers:
            interval = f.int("no_rope_layer_interval", 4)
            rope = [int((i + 1) % interval != 0) for i in range(layers)]
        types = tuple("sliding" if r else "full" for r in rope)
        return types, window if "sliding" in types else None
    return None, None


def _moe(cfg: dict[str, Any], mt: str, layers: int, f: _Fields) -> MoEConfig | None:
    if mt not in _MOE_TYPES:
        return None
    experts_key = {"deepseek_v2": "n_routed_experts", "deepseek_v3": "n_routed_experts",
                   "qwen2_moe": "num_experts", "qwen3_moe": "num_experts"}.get(mt, "num_local_experts")
    aliases = ("num_local_experts",) if experts_key != "num_local_experts" else ("num_experts",)
    data: dict[str, Any] = {
        "num_experts": f.int(experts_key, aliases=aliases),
        "experts_per_token": f.int("num_experts_per_tok", aliases=("experts_per_token",)),
    }
    if mt in ("mixtral", "gpt_oss", "llama4_text"):
        data["expert_intermediate_size"] = f.int("intermediate_size")
    else:
        data["expert_intermediate_size"] = f.int("moe_intermediate_size")
    if mt in ("deepseek_v2", "deepseek_v3"):
        data["num_shared_experts"] = f.int("n_shared_experts", 0, minimum=0)
        data["first_dense_layers"] = f.int("first_k_dense_replace", 0, minimum=0)
        data["layer_freq"] = f.int("moe_layer_freq", 1)
        data["router_score_bias"] = mt == "deepseek_v3" and cfg.get("topk_method", "noaux_tc") == "noaux_tc"
    elif mt in ("qwen2_moe", "qwen3_moe"):
        step = f.int("decoder_sparse_step", 1)
        data["first_dense_layers"] = step - 1
        data["layer_freq"] = step
        data["dense_layers"] = tuple(sorted({i for i in f.int_list("mlp_only_layers") if 0 <= i < layers}))
        if mt == "qwen2_moe":
            shared = f.int("shared_expert_intermediate_size", 0, minimum=0)
            if shared:
                data["num_shared_experts"] = 1
                data["shared_intermediate_size"] = shared
                data["shared_expert_gate"] = True
    elif mt == "gpt_oss":
        data.update(expert_bias=True, router_bias=True)
    elif mt == "llama4_text":
        step = f.int("interleave_moe_layer_step", 1)
        data.update(num_shared_experts=1, first_dense_layers=step - 1, layer_freq=step)
    data["first_dense_layers"] = min(data.get("first_dense_layers", 0), layers)
    try:
        return MoEConfig(**data)
    except ValidationError as exc:
        f.derived.append("MoE: " + first_error_message(exc, quote_field=True))
        return None


def _mla(cfg: dict[str, Any], mt: str, f: _Fields) -> MLAConfig | None:
    if mt not in ("deepseek_v2", "deepseek_v3"):
        return None
    q_lora = cfg.get("q_lora_rank")
    return MLAConfig(
        q_lora_rank=f.int("q_lora_rank") if q_lora is not None else None,
        kv_lora_rank=f.int("kv_lora_rank"),
        qk_nope_head_dim=f.int("qk_nope_head_dim"),
        qk_rope_head_dim=f.int("qk_rope_head_dim", minimum=0),
        v_head_dim=f.int("v_head_dim"),
    )


def architecture_from_config(
    cfg: dict[str, Any],
    *,
    model_id: str,
    name: str,
    source: str,
    hf_model_id: str | None = None,
    sources: tuple[str, ...] = (),
    quant_config: dict[str, Any] | None = None,
) -> LLMArchitecture:
    """Describe the model of a decoded ``config.json``.

    Parameters
    ----------
    cfg:
        The decoded ``config.json`` object.
    model_id, name:
        Identifier and display name of the result.
    source:
        File (or preset) the config came from; every error message names it.
    hf_model_id:
        Hugging Face repository id, if known.
    sources:
        Citations carried into :attr:`LLMArchitecture.sources`.
    quant_config:
        A decoded ModelOpt ``hf_quant_config.json`` found next to the config, if any.

    Raises
    ------
    StudioError
        Unknown ``model_type``, a missing or invalid field, or an unsupported quantisation method;
        the message names the file, the fields and what is allowed.
    """
    if not isinstance(cfg, dict):
        raise StudioError("a config.json must hold a JSON object at the top level", source)
    mt = _model_type(cfg, source)
    if mt == "llama4":
        cfg = _text_config(cfg, source)
        mt = "llama4_text"
    f = _Fields(cfg)
    hidden = f.int("hidden_size")
    layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    kv_heads = f.int("num_key_value_heads", heads)
    mla = None
    if mt in ("deepseek_v2", "deepseek_v3"):
        try:
            mla = _mla(cfg, mt, f)
        except ValidationError as exc:
            f.derived.append("MLA: " + first_error_message(exc, quote_field=True))
    if mla is not None:
        head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    elif cfg.get("head_dim") is not None:
        head_dim = f.int("head_dim")
    elif hidden % heads:
        f.derived.append(
            f"'head_dim' is missing and hidden_size ({hidden}) is not a multiple of "
            f"num_attention_heads ({heads})"
        )
        head_dim = 1
    else:
        head_dim = hidden // heads
    dense_key = "intermediate_size_mlp" if mt == "llama4_text" else "intermediate_size"
    intermediate = f.int(dense_key, aliases=("intermediate_size",))
    vocab = f.int("vocab_size")
    context = f.int("max_position_embeddings")
    moe = _moe(cfg, mt, layers, f)
    layer_types, window = _layer_types(cfg, mt, layers, f)
    attention_bias = f.bool("attention_bias", default=mt in ("qwen2", "qwen2_moe"))
    tie = f.bool("tie_word_embeddings")
    mtp = f.int("num_nextn_predict_layers", 0, minimum=0)
    f.check(source)
    precision = precision_of_config(cfg, quant_config, source)
    out_bias = attention_bias and mt in ("llama", "mistral", "gpt_oss", "llama4_text")
    try:
        return LLMArchitecture(
            id=model_id,
            name=name,
            model_type=mt,
            hidden_size=hidden,
            num_layers=layers,
            num_attention_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            intermediate_size=intermediate,
            vocab_size=vocab,
            max_context=context,
            tie_word_embeddings=tie,
            attention_bias=attention_bias,
            attention_out_bias=out_bias,
            attention_sinks=mt == "gpt_oss",
            qk_norm=mt in _QK_NORM_TYPES,
            moe=moe,
            mla=mla,
            layer_types=layer_types,
            sliding_window=window,
            mtp_layers=mtp,
            precision=precision,
            hf_model_id=hf_model_id,
            sources=sources,
        )
    except ValidationError as exc:
        raise StudioError(f"cannot describe this model: {first_error_message(exc, quote_field=True)}", source) from None


# --------------------------------------------------------------------------- files
def read_config_json(path: Path, what: str) -> Any:
    """A JSON file through the bounded reader (regular files only, size cap before reading,
    UTF-8 with or without a byte-order mark or UTF-16, nesting and number limits)."""
    return load_json_file(path, MAX_CONFIG_BYTES, what=what)


def load_model_config(path: str | os.PathLike[str]) -> LLMArchitecture:
    """Load a ``config.json`` file, or a folder holding one (and maybe ``hf_quant_config.json``).

    Raises
    ------
    StudioError
        The path does not exist, holds no ``config.json``, is too large, is not JSON, or describes
        a model this importer cannot (see :func:`architecture_from_config`).
    """
    p = Path(path)
    if p.is_dir():
        folder, file = p, p / "config.json"
        if not file.exists():  # a FIFO or device of that name is refused by the reader, by its kind
            raise StudioError("folder holds no config.json", str(p))
    elif p.exists():  # a file, or a FIFO/device the bounded reader refuses with its kind named
        folder, file = p.parent, p
    else:
        raise StudioError("no such file or folder", str(p))
    cfg = read_config_json(file, "config.json")
    quant_file = folder / "hf_quant_config.json"
    quant = read_config_json(quant_file, "hf_quant_config.json") if quant_file.is_file() else None
    model_id = folder.name if file.name == "config.json" else file.name.removesuffix(".json")
    model_id = model_id.removesuffix(".config") or "model"
    name_or_path = cfg.get("_name_or_path") if isinstance(cfg, dict) else None
    hf_id = name_or_path if isinstance(name_or_path, str) and name_or_path.count("/") == 1 else None
    return architecture_from_config(
        cfg,
        model_id=model_id,
        name=hf_id or model_id,
        source=str(file),
        hf_model_id=hf_id,
        sources=(f"config.json: {file}",),
        quant_config=quant if isinstance(quant, dict) else None,
    )


__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "SUPPORTED_QUANT_METHODS",
    "architecture_from_config",
    "load_model_config",
]
