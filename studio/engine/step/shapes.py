"""Per-GPU weight bytes, FLOPs and KV bytes of each pipeline stage, from the architecture.

Everything here depends only on (model, precision, kv dtype, tp, ep, stage split) — not on batch or
micro-batches — so the sweep computes it once per layout and vectorises the rest.
"""

from __future__ import annotations

import math

import numpy as np

from studio.core.architecture import LLMArchitecture, ModulePrecision
from studio.core.precision import DType
from studio.engine.step.records import Record

MODULES = ("attention", "mlp", "experts", "shared", "norms", "embeddings", "lm_head")


class LayerTable(Record, frozen=True):
    """Per-layer parameter counts (whole model) as arrays, with prefix sums for stage slicing."""

    attention_sharded: np.ndarray  # parameters split over TP
    kv_proj: np.ndarray  # K/V projection parameters (split over min(TP, kv heads), replicated beyond)
    kv_latent: np.ndarray  # MLA latent down-projection (replicated over TP)
    mlp: np.ndarray
    experts: np.ndarray  # all routed experts of the layer
    shared: np.ndarray  # shared experts + router
    norms: np.ndarray
    moe: np.ndarray  # 1 for MoE layers
    sliding: np.ndarray  # 1 for sliding-window layers
    prefix: dict[str, np.ndarray]

    def stage_sum(self, name: str, first: int, count: int) -> float:
        cs = self.prefix[name]
        return float(cs[first + count] - cs[first])


def layer_table(model: LLMArchitecture) -> LayerTable:
    """Tabulate the parameters of every layer by module group."""
    n = model.num_layers
    att = np.zeros(n)
    kvp = np.zeros(n)
    lat = np.zeros(n)
    mlp = np.zeros(n)
    exp = np.zeros(n)
    sh = np.zeros(n)
    nrm = np.zeros(n)
    moe = np.zeros(n)
    sl = np.zeros(n)
    attn_total = model.attention_params()
    if model.mla is not None:
        m = model.mla
        latent = model.hidden_size * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
        kv = 0
    else:
        latent = 0
        kv = 2 * model.hidden_size * model.kv_dim + (2 * model.kv_dim if model.attention_bias else 0)
    for i in range(n):
        p = model.layer_params(i)
        att[i] = attn_total - kv - latent
        kvp[i] = kv
        lat[i] = latent
        mlp[i] = p["mlp"]
        exp[i] = p["experts"]
        sh[i] = p["shared"]
        nrm[i] = p["norms"]
        moe[i] = 1.0 if model.is_moe_layer(i) else 0.0
        sl[i] = 1.0 if model.is_sliding_layer(i) else 0.0
    arrays = {
        "attention_sharded": att, "kv_proj": kvp, "kv_latent": lat, "mlp": mlp, "experts": exp,
        "shared": sh, "norms": nrm, "moe": moe, "sliding": sl,
    }
    prefix = {k: np.concatenate(([0.0], np.cumsum(v))) for k, v in arrays.items()}
    return LayerTable(**arrays, prefix=prefix)


class StageShape(Record, frozen=True):
    """One stage on one GPU of a TP group (all TP ranks are alike)."""

    first_layer: int
    layers: int
    moe_layers: int
    full_layers: int
    sliding_layers: int
    weights_by_module: dict[str, float]  # bytes per GPU
    expert_bytes: float  # routed-expert bytes per GPU (subset of weights)
    params_by_class: dict[str, float]  # active parameters per GPU per token, by compute class
    lm_head_params: float  # per GPU, computed once per sequence step (last stage)
    lm_head_class: str
    attn_flops_per_ctx: float  # FLOPs per token per context token (all stage layers, per GPU)
    attn_flops_per_ctx_sliding: float
    kv_full: float  # KV bytes per token per GPU, full-attention layers of the stage
    kv_sliding: float  # same, sliding layers (capped at the window)
    expert_params: float = 0.0  # routed-expert parameters per GPU per token (balanced), in params_by_class
    expert_class: str = "bf16"
    embeddings_are_head: bool = False  # tied embeddings on a one-stage model: the table is the LM head

    @property
    def weights(self) -> float:
        return sum(self.weights_by_module.values())

    @property
    def streamed_bytes(self) -> float:
        """Weight bytes one forward pass reads from memory: all but the embedding table, of which a
        pass gathers only its tokens' rows (unless the tied table also serves as the LM head)."""
        if self.embeddings_are_head:
            return self.weights
        return self.weights - self.weights_by_module.get("embeddings", 0.0)

    def kv_bytes_for(self, tokens: float | np.ndarray, window: int | None) -> float | np.ndarray:
        """KV bytes per GPU of one sequence of ``tokens`` tokens."""
        if self.kv_sliding == 0.0 or window is None:
            return (self.kv_full + self.kv_sliding) * tokens
        return self.kv_full * tokens + self.kv_sliding * np.minimum(tokens, window)


def kv_bytes_per_token_layer(model: LLMArchitecture, tp: int, kv_dtype: DType) -> float:
    """KV bytes one GPU stores per token per layer: GQA heads split over TP (one head each when
    kv heads < TP, i.e. replicated), MLA latent not split."""
    b = DType(kv_dtype).bytes
    if model.mla is not None:
        return (model.mla.kv_lora_rank + model.mla.qk_rope_head_dim) * b
    return 2 * math.ceil(model.num_kv_heads / tp) * model.head_dim * b


def attn_flops_per_ctx_layer(model: LLMArchitecture, tp: int) -> float:
    """FLOPs per query token per attended token in one layer, per GPU (QKᵀ and PV)."""
    heads = math.ceil(model.num_attention_heads / tp)
    if model.mla is not None:
        m = model.mla
        return 2.0 * heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
    return 4.0 * heads * model.head_dim


def _cls(dtype: DType, has_fp8: bool, has_fp4: bool) -> str:
    c = dtype.compute_class
    if c == "fp4" and not has_fp4:
        c = "fp8"
    if c == "fp8" and not has_fp8:
        c = "bf16"
    return c


def stage_shapes(
    model: LLMArchitecture,
    table: LayerTable,
    precision: ModulePrecision,
    kv_dtype: DType,
    tp: int,
    ep: int,
    layers: tuple[int, ...] | list[int],
    has_fp8: bool = True,
    has_fp4: bool = False,
) -> list[StageShape]:
    """Shapes of every stage for a TP size, EP size and layer split."""
    h = model.hidden_size
    p_att, p_mlp, p_exp = precision.attention, precision.mlp, precision.experts
    kv_share = math.ceil(model.num_kv_heads / tp) / model.num_kv_heads
    kv_layer = kv_bytes_per_token_layer(model, tp, kv_dtype)
    attn_ctx = attn_flops_per_ctx_layer(model, tp)
    expert_split = max(tp, ep)
    k_active = model.moe.experts_per_token / model.moe.num_experts if model.moe else 0.0
    out: list[StageShape] = []
    first = 0
    last_stage = len(layers) - 1
    for s, count in enumerate(layers):
        ts = table.stage_sum
        att = ts("attention_sharded", first, count) / tp + ts("kv_proj", first, count) * kv_share
        att += ts("kv_latent", first, count)
        mlp = ts("mlp", first, count) / tp
        shared = ts("shared", first, count) / tp
        experts = ts("experts", first, count) / expert_split
        norms = ts("norms", first, count)
        moe_layers = int(round(ts("moe", first, count)))
        sliding = int(round(ts("sliding", first, count)))
        emb = model.embedding_params / tp if s == 0 else 0.0
        head = 0.0
        if s == last_stage:
            norms += h
            if not model.tie_word_embeddings or len(layers) > 1:
                head = model.vocab_size * h / tp
            elif s == 0:
                head = 0.0  # tied and one stage: the embedding matrix is reused
        wb = {
            "attention": att * p_att.bytes,
            "mlp": mlp * p_mlp.bytes,
            "experts": experts * p_exp.bytes,
            "shared": shared * p_mlp.bytes,
            "norms": norms * DType.BF16.bytes,
            "embeddings": emb * precision.embeddings.bytes,
            "lm_head": head * precision.lm_head.bytes,
        }
        classes: dict[str, float] = {}
        for params, dt in (
            (att, p_att),
            (mlp + shared, p_mlp),
            (ts("experts", first, count) * k_active / tp, p_exp),
        ):
            if params:
                c = _cls(dt, has_fp8, has_fp4)
                classes[c] = classes.get(c, 0.0) + params
        lm_params = model.vocab_size * h / tp if s == last_stage else 0.0
        out.append(
            StageShape(
                first_layer=first,
                layers=count,
                moe_layers=moe_layers,
                full_layers=count - sliding,
                sliding_layers=sliding,
                weights_by_module=wb,
                expert_bytes=wb["experts"],
                params_by_class=classes,
                lm_head_params=lm_params,
                lm_head_class=_cls(precision.lm_head, has_fp8, has_fp4),
                attn_flops_per_ctx=attn_ctx * (count - sliding),
                attn_flops_per_ctx_sliding=attn_ctx * sliding,
                kv_full=kv_layer * (count - sliding),
                kv_sliding=kv_layer * sliding,
                expert_params=ts("experts", first, count) * k_active / tp,
                expert_class=_cls(p_exp, has_fp8, has_fp4),
                embeddings_are_head=bool(model.tie_word_embeddings) and s == 0 and s == last_stage,
            )
        )
        first += count
    return out
