"""The kernels of one pipeline stage on one GPU, each timed from the measured tables.

For a stage :func:`stage_ops` lists the GEMMs every token goes through (QKV and output projections,
dense MLP, shared experts and router) at their per-GPU shapes, the LM head, the fused MoE layer
and the two attention kernels, and turns each into a :class:`~studio.engine.step.kernels.Curve`
(time against the tokens of the iteration, or the bytes / FLOPs of one attention call). The
iteration model (:mod:`studio.engine.step.iteration`) only evaluates these curves at the iteration's
real sizes: a GEMM of m tokens costs what the table says for m (its weight bytes once at small m, its
FLOPs at large m), never a roofline plus a blend.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np

from studio.core.architecture import LLMArchitecture, ModulePrecision
from studio.core.hardware import GpuSpec
from studio.core.precision import DType
from studio.engine.step.constants import Constants
from studio.engine.step.identity_cache import cached_by_identity
from studio.engine.step.kernels import (
    DEFAULT_ENGINE,
    TOKENS,
    Curve,
    Silicon,
    Target,
    decode_attention_curve,
    gemm_curve,
    moe_curve,
    prefill_attention_curve,
    silicon_for,
)
from studio.engine.step.records import Record
from studio.engine.step.shapes import LayerTable, StageShape, compute_class

_ZERO = Curve(TOKENS, TOKENS * 0.0 + 1e-12, "")


class StageOps(Record):
    """Kernel curves of one stage on one GPU (all the stage's layers)."""

    dense: Curve  # every GEMM a token goes through on the stage, ms against the tokens
    lm_head: Curve | None  # against the sequences that emit a token (last stage)
    moe: Curve | None  # the stage's MoE layers, ms against the tokens routed in the EP group
    decode_attention: Curve  # one layer's paged decode call, ms against the KV bytes it reads
    prefill_attention: Curve  # one layer's causal prefill call, ms against its FLOPs
    kv_layer_full: float  # KV bytes per token per full-attention layer per GPU
    kv_layer_sliding: float
    attn_flops_layer: float  # FLOPs per query token per attended token, one layer, per GPU
    provenance: dict[str, str]  # op -> "measured: …" / "estimate: …"
    silicon: Silicon
    dense_one: float = 0.0  # dense(1): the one-token (weight-streaming) floor, ms
    moe_one: float = 0.0
    elementwise: Curve = _ZERO  # the stage's norms, activations, RoPE / KV writes, routing, ms against tokens
    per_token: Curve = _ZERO  # dense + elementwise: every kernel a token goes through but MoE (one lookup)
    per_token_one: float = 0.0  # per_token(1)


_OPS: OrderedDict[int, tuple[Any, Any]] = OrderedDict()
#: The layer-table sums :func:`stage_ops` reads over a stage's layers (its only use of where the
#: stage starts).
_STAGE_SUMS = ("attention_sharded", "kv_latent", "kv_proj", "mlp")


def cached_stage_ops(
    model: LLMArchitecture,
    table: LayerTable,
    sh: StageShape,
    precision: ModulePrecision,
    kv_dtype: DType,
    spec: GpuSpec,
    c: Constants,
    tp: int,
    ep: int,
    has_fp8: bool,
    has_fp4: bool,
    engine: str = DEFAULT_ENGINE,
    version: str | None = None,
    moe_backend: str = "",
) -> StageOps:
    """:func:`stage_ops`, kept per layer table (the model's, cached by identity) and per stage,
    precision, GPU, parallelism, tables and the constants the curves read: a sweep asks for the same
    stage many times. A stage is keyed by everything :func:`stage_ops` reads of it (its layer
    counts, table sums, KV and attention figures), so equal stages at different depths are one.

    The constants enter the curves only through the lookup target (:func:`target_of`: the GPU's
    MAMF and STREAM fractions) and ``moe_imbalance_factor``, so those values key the memo rather
    than the constants object itself: a serving fit, which makes new constants for every trial of
    its efficiencies (read after the curves, by the iteration model), reuses the stage's curves.
    """
    memo: dict[tuple, StageOps] = cached_by_identity(_OPS, table, 16, lambda _t: {})
    tgt = target_of(spec, silicon_for(spec, engine, version), c)
    # the stage enters by what stage_ops reads of it, not by where it starts: the stages of a
    # uniform model that hold the same number of layers share their curves (a sweep's PP splits)
    first, count = sh.first_layer, sh.layers
    sums = tuple(table.stage_sum(name, first, count) for name in _STAGE_SUMS)
    key = (count, sums, sh.moe_layers, sh.full_layers, sh.sliding_layers, sh.lm_head_params, sh.lm_head_class,
           sh.expert_class, sh.attn_flops_per_ctx, sh.attn_flops_per_ctx_sliding, sh.kv_full, sh.kv_sliding,
           tuple(str(v) for v in precision.model_dump().values()), str(kv_dtype),
           spec.id, spec.hbm_bandwidth_gbps, spec.tflops_bf16, spec.tflops_fp8, spec.tflops_fp4, tp, ep,
           has_fp8, has_fp4, engine, version, moe_backend, tgt, c.moe_imbalance_factor)
    hit = memo.get(key)
    if hit is not None:
        return hit
    out = stage_ops(model, table, sh, precision, kv_dtype, spec, c, tp, ep, has_fp8, has_fp4, engine, version,
                    moe_backend)
    if len(memo) > 4096:
        memo.clear()
    memo[key] = out
    return out


def target_of(spec: GpuSpec, sil: Silicon, c: Constants) -> Target:
    """``spec`` as a lookup target: peaks scaled by its measured MAMF relative to the reference
    silicon's (GPU ids of the manifest), bandwidth by its STREAM fraction relative to the reference."""
    if sil.measured:
        return Target.of(spec)
    ref = next((g for g, e in _manifest_gpus().items() if e["silicon"] == sil.silicon and e["measured"]), sil.silicon)
    cs = {k: c.matmul_efficiency(spec.id, k) / c.matmul_efficiency(ref, k) for k in ("bf16", "fp8", "fp4")}
    ms = c.per_gpu(c.hbm_efficiency, spec.id) / c.per_gpu(c.hbm_efficiency, ref)
    return Target.of(spec, cs, ms)


def _manifest_gpus() -> dict:
    from studio.engine.step.kernels import manifest

    return manifest()["gpus"]


def _table_dtype(dtype: DType, cls: str) -> tuple[str, float | None]:
    """(kernel-table format, weight bytes when they differ from it) of weights stored as ``dtype``
    and computed in class ``cls``."""
    if cls == "fp4":
        return "fp4", None
    if cls == "fp8":
        return "fp8", None
    b = DType(dtype).bytes
    return "bf16", (None if b == 2.0 else b)


def stage_ops(
    model: LLMArchitecture,
    table: LayerTable,
    sh: StageShape,
    precision: ModulePrecision,
    kv_dtype: DType,
    spec: GpuSpec,
    c: Constants,
    tp: int,
    ep: int,
    has_fp8: bool,
    has_fp4: bool,
    engine: str = DEFAULT_ENGINE,
    version: str | None = None,
    moe_backend: str = "",
) -> StageOps:
    """The kernel curves of stage ``sh`` on a GPU of ``spec`` (TP ``tp``, EP ``ep``), from the tables
    of serving ``engine`` (``version`` None = the shipped one); ``moe_backend`` names the fused-MoE
    backend whose own table times the experts where the tables split it (e.g. ``cutlass``)."""
    sil = silicon_for(spec, engine, version)
    tgt = target_of(spec, sil, c)
    h = float(model.hidden_size)
    prov: dict[str, str] = {}
    curves: list[Curve] = []
    first, count = sh.first_layer, sh.layers
    ts = table.stage_sum

    def add(name: str, params: float, n: float, k: float, layers: float, dt: DType, cls: str) -> None:
        if params <= 0 or layers <= 0 or n <= 0 or k <= 0:
            return
        fmt, wb = _table_dtype(dt, cls)
        cv = gemm_curve(sil, tgt, fmt, n, k, wb)
        curves.append(Curve(TOKENS, layers * (cv(TOKENS)), cv.provenance))
        prov[name] = f"{cv.provenance} ({fmt}, n={n:.0f}, k={k:.0f}, ×{layers:g} layers)"

    att_cls = compute_class(precision.attention, has_fp8, has_fp4)
    # attention projections: output (k = this GPU's heads × head dim) and the rest (QKV, MLA latents)
    heads = math.ceil(model.num_attention_heads / tp)
    vdim = model.mla.v_head_dim if model.mla is not None else model.head_dim
    att_layer = (ts("attention_sharded", first, count) / tp + ts("kv_latent", first, count)
                 + ts("kv_proj", first, count) * math.ceil(model.num_kv_heads / tp) / model.num_kv_heads) / max(count, 1)
    o_k = heads * vdim
    add("attention output GEMM", o_k * h, h, o_k, count, precision.attention, att_cls)
    add("QKV GEMM", att_layer - o_k * h, (att_layer - o_k * h) / h, h, count, precision.attention, att_cls)
    mlp_cls = compute_class(precision.mlp, has_fp8, has_fp4)
    dense_layers = count - sh.moe_layers
    if dense_layers > 0:
        per = ts("mlp", first, count) / tp / dense_layers
        width = model.intermediate_size / tp
        add("MLP down GEMM", width * h, h, width, dense_layers, precision.mlp, mlp_cls)
        add("MLP up/gate GEMM", per - width * h, (per - width * h) / h, h, dense_layers, precision.mlp, mlp_cls)
    moe = model.moe
    moe_cv: Curve | None = None
    if moe is not None and sh.moe_layers:
        if moe.num_shared_experts:
            sw = (moe.shared_intermediate_size or moe.expert_intermediate_size) * moe.num_shared_experts / tp
            sp = model.shared_expert_params() / tp
            add("shared-expert down GEMM", sw * h, h, sw, sh.moe_layers, precision.mlp, mlp_cls)
            add("shared-expert up/gate GEMM", sp - sw * h, (sp - sw * h) / h, h, sh.moe_layers, precision.mlp, mlp_cls)
        add("router GEMM", moe.num_experts * h, moe.num_experts, h, sh.moe_layers, DType.BF16, "bf16")
        split = max(tp, ep)
        ep_ranks = max(1, min(ep, split))
        moe_tp = split / ep_ranks
        fmt = sh.expert_class
        if fmt == "bf16" and DType(precision.experts).bytes < 1.0:
            fmt = "w4a16"
        cv = moe_curve(sil, tgt, fmt, h, moe.expert_intermediate_size / moe_tp, moe.experts_per_token,
                       moe.num_experts, ep_ranks, c.moe_imbalance_factor, moe_backend)
        moe_cv = Curve(TOKENS, sh.moe_layers * cv(TOKENS), cv.provenance)
        prov["MoE experts"] = (f"{cv.provenance} ({fmt}, {moe.num_experts} experts over {ep_ranks} EP ranks, "
                               f"width {moe.expert_intermediate_size / moe_tp:.0f} per GPU, ×{sh.moe_layers} layers)")
    lm: Curve | None = None
    if sh.lm_head_params:
        lcls = sh.lm_head_class
        fmt, wb = _table_dtype(precision.lm_head, lcls)
        lv = gemm_curve(sil, tgt, fmt, sh.lm_head_params / h, h, wb)
        lm = lv
        prov["LM head GEMM"] = f"{lv.provenance} ({fmt}, n={sh.lm_head_params / h:.0f}, k={h:.0f})"
    kvd = "fp8" if DType(kv_dtype).bytes == 1.0 else "bf16"
    dec = decode_attention_curve(sil, tgt, kvd)
    att_dt = "fp8" if DType(kv_dtype).compute_class == "fp8" and has_fp8 else "bf16"
    pre = prefill_attention_curve(sil, tgt, att_dt)
    prov["decode attention"] = f"{dec.provenance} (KV {kvd})"
    prov["prefill attention"] = f"{pre.provenance} ({att_dt})"
    ew = elementwise_curve(model, sh, sil, tgt, tp)
    prov["elementwise kernels"] = ew.provenance
    full = max(sh.full_layers, 1)
    slid = max(sh.sliding_layers, 1)
    dense = Curve.total(curves) if curves else _ZERO
    per_token = Curve.total([dense, ew])
    return StageOps(
        dense=dense, lm_head=lm, moe=moe_cv, decode_attention=dec, prefill_attention=pre,
        kv_layer_full=sh.kv_full / full, kv_layer_sliding=sh.kv_sliding / slid,
        attn_flops_layer=(sh.attn_flops_per_ctx / full if sh.full_layers else sh.attn_flops_per_ctx_sliding / slid),
        provenance=prov, silicon=sil, dense_one=float(dense(1.0)),
        moe_one=float(moe_cv(1.0)) if moe_cv is not None else 0.0, elementwise=ew,
        per_token=per_token, per_token_one=float(per_token(1.0)),
    )


#: Memory-bound kernels of one layer besides its GEMMs, attention and fused MoE, as the engines
#: launch them in a decode step: (name, kernels, bytes per token as a function of the per-GPU widths).
#: Two fused residual-add + RMSNorm (read the hidden state and the residual, write both), one RoPE +
#: KV-cache write (read Q and K, write them and the new K and V), and per layer either the MLP's
#: SiLU-and-multiply (read gate and up, write their product) or, in an MoE layer, the router's
#: top-k softmax (its activation runs inside the fused MoE kernel); shared experts add their own
#: activation. Activations are BF16 (2 bytes).
_ACT_BYTES = 2.0


def elementwise_curve(model: LLMArchitecture, sh: StageShape, sil: Silicon, tgt: Target, tp: int) -> Curve:
    """Time (ms) of the stage's memory-bound non-GEMM kernels against the iteration's tokens.

    Each kernel costs the smallest kernel the silicon's GEMM table measured (m = 1, 32 × 32 × 32:
    the launch-to-launch time of a kernel that does almost nothing, inside the timing loop) plus its
    bytes at the best bandwidth the silicon's decode-attention table measured (a streaming kernel);
    a GPU without tables scales that bandwidth by its own. Neither figure is fitted."""
    a = sil.arrays()
    floor_ms = float(np.min(a["gemm_bf16"][0]))
    key = "gen_bf16_gbps" if "gen_bf16_gbps" in a else None
    gbps = float(np.max(a[key])) if key else float(sil.peaks["mem_bw_gbps"]) * 0.85
    if not sil.measured:
        gbps *= tgt.gbps / float(sil.peaks["mem_bw_gbps"])
    h = float(model.hidden_size)
    d = float(model.head_dim)
    q = math.ceil(model.num_attention_heads / tp) * d
    kv = math.ceil(model.num_kv_heads / tp) * d
    moe = model.moe
    dense_layers = sh.layers - sh.moe_layers
    kernels = 3.0 * sh.layers + dense_layers + sh.moe_layers  # norms ×2, RoPE/KV, then act or top-k
    per_token = sh.layers * (2 * 4 * h + 2 * (q + kv) + 2 * kv)
    per_token += dense_layers * 3 * model.intermediate_size / tp
    if moe is not None and sh.moe_layers:
        per_token += sh.moe_layers * moe.num_experts * 2  # router logits read, weights written (fp32/2)
        if moe.num_shared_experts:
            sw = (moe.shared_intermediate_size or moe.expert_intermediate_size) * moe.num_shared_experts / tp
            kernels += sh.moe_layers
            per_token += sh.moe_layers * 3 * sw
    per_token *= _ACT_BYTES
    t = kernels * floor_ms + TOKENS * per_token / (gbps * 1e9) * 1e3
    prov = sil.provenance("smallest GEMM and decode-attention bandwidth", scaled=(
        f"{int(kernels)} memory-bound kernels (norms, RoPE/KV write, activation or routing), each the smallest "
        f"measured kernel ({floor_ms * 1e3:.2f} µs) + {per_token:.0f} B per token at the measured streaming "
        f"bandwidth ({gbps:.0f} GB/s)"))
    return Curve(TOKENS, t, prov)



def breakdown(o: StageOps, sh: StageShape, decode_seqs: float, ctx: float, prompt_tokens: float,
              prompt_len: float, route: int = 1, window: int | None = None) -> list[tuple[str, float, str]]:
    """(op, ms, provenance) of every kernel of stage ``sh`` for one iteration of ``decode_seqs``
    decoding sequences at context ``ctx`` plus ``prompt_tokens`` prompt tokens (prompts of
    ``prompt_len``): what ``plan --explain`` and the GUI's "why" list per op."""
    tokens = decode_seqs + prompt_tokens
    out: list[tuple[str, float, str]] = []
    if tokens <= 0:
        return out
    out.append(("dense GEMMs (QKV, output, MLP, shared experts, router)", float(o.dense(tokens)),
                "; ".join(f"{k}: {v}" for k, v in o.provenance.items() if "GEMM" in k and "LM head" not in k)))
    if o.moe is not None:
        out.append(("MoE experts (fused grouped GEMMs)", float(o.moe(tokens * route)), o.provenance["MoE experts"]))
    out.append(("elementwise kernels (norms, RoPE/KV write, activation, routing)", float(o.elementwise(tokens)),
                o.provenance.get("elementwise kernels", "")))
    logits = decode_seqs + (prompt_tokens / max(prompt_len, 1.0))
    if o.lm_head is not None and logits > 0:
        out.append(("LM head GEMM", float(o.lm_head(logits)), o.provenance["LM head GEMM"]))
    if decode_seqs > 0:
        full = sh.full_layers * float(o.decode_attention(decode_seqs * ctx * o.kv_layer_full)) if sh.full_layers else 0.0
        sl = (sh.sliding_layers * float(o.decode_attention(decode_seqs * min(ctx, window or ctx) * o.kv_layer_sliding))
              if sh.sliding_layers else 0.0)
        out.append(("decode attention (paged KV read)", full + sl, o.provenance["decode attention"]))
    if prompt_tokens > 0:
        att = (prompt_len + 1) / 2
        t = float(o.prefill_attention(prompt_tokens * att * o.attn_flops_layer)) * sh.layers
        out.append(("prefill attention (causal)", t, o.provenance["prefill attention"]))
    return out
