"""The engine limits ``trtllm-bench`` builds with: its token budget and batch limit per dataset.

TensorRT-LLM's offline benchmark (the tool behind its published perf-overview tables) does not run
with the library defaults (``max_num_tokens`` 8,192, ``max_batch_size`` 2,048). For every model,
parallel mapping and input/output length it sizes them itself from a rough KV-cache estimate
(``tensorrt_llm/bench/build/tuning.py``, functions ``calc_engine_setting`` and ``finetune_setting``):

1. bytes per KV token = 2 × layers × max(TP, KV heads) × head size × KV bytes;
2. memory for the KV cache = (device GiB × GPUs − parameters × weight bytes / GiB) × free fraction;
3. requests that fit = that memory / (bytes per token × (ISL + OSL));
4. batch = min(requests, 4,096) / PP, rounded up optimistically (at least 64; to 32, 128 or 256);
5. tokens = min(batch × (1 + ISL / OSL), 32,768), rounded up (at least 2,048; to 256, 512 or 1,024).

The token budget decides both how much prompt an iteration carries and how much activation memory
the runtime reserves, so a memory-tight layout (70B FP8 on one 80 GB GPU: budget 2,048) gets a much
larger KV cache than the library default would leave it. :func:`bench_limits` applies the same rule
to a model and layout of this program; the engine uses it for TensorRT-LLM under offline load when
the project sets no token budget of its own.
"""

from __future__ import annotations

import math

from studio.core.architecture import LLMArchitecture
from studio.core.precision import DType
from studio.core.project import Project
from studio.core.units import GIB
from studio.engine.step.records import Record

#: Bytes per weight element as trtllm-bench counts them (FP8 and FP8 block scales 1, NVFP4 0.5,
#: anything else 2) — ``BYTES_PER_ELEM`` in tensorrt_llm/bench/build/tuning.py.
_BENCH_BYTES = {DType.FP8: 1.0, DType.FP4: 0.5}
#: Caps of finetune_setting: batch 4,096 (decoder buffers), tokens 32,768 (activation buffer);
#: floors: batch 64, tokens 2,048 ("to ensure Ctx/Gen overlap efficiency").
MAX_BATCH, MAX_TOKENS, MIN_BATCH, MIN_TOKENS = 4096, 32768, 64, 2048


class BenchLimits(Record, frozen=True):
    """What trtllm-bench would build with, and the estimate it came from."""

    max_batch: int
    max_num_tokens: int
    kv_requests: float  # requests trtllm-bench estimates the KV cache holds


def _round_batch(raw: float) -> int:
    if raw < 256:
        return max(MIN_BATCH, 32 * math.ceil(raw / 32))
    if raw < 1024:
        return 128 * math.ceil(raw / 128)
    return 256 * math.ceil(raw / 256)


def _round_tokens(raw: float) -> int:
    if raw < 4096:
        return max(MIN_TOKENS, 256 * math.ceil(raw / 256))
    if raw < 8192:
        return 512 * math.ceil(raw / 512)
    return 1024 * math.ceil(raw / 1024)


def bench_limits(
    model: LLMArchitecture,
    weight_dtype: DType,
    kv_dtype: DType,
    tp: int,
    pp: int,
    isl: int,
    osl: int,
    device_gib: float,
    kv_fraction: float = 0.95,
) -> BenchLimits:
    """trtllm-bench's ``max_batch_size`` and ``max_num_tokens`` for one TP×PP instance.

    Parameters
    ----------
    model, weight_dtype, kv_dtype
        The model and the storage formats of its linear weights and KV cache.
    tp, pp
        The instance's tensor- and pipeline-parallel sizes.
    isl, osl
        The dataset's input and output lengths.
    device_gib
        Device memory in GiB as the driver reports it.
    kv_fraction
        ``kv_cache_free_gpu_mem_fraction`` (trtllm-bench default 0.95).
    """
    kv_b = 1.0 if DType(kv_dtype) is DType.FP8 else 2.0
    w_b = _BENCH_BYTES.get(DType(weight_dtype), 2.0)
    heads = max(tp, model.num_kv_heads)
    per_token_gib = 2 * model.num_layers * heads * model.head_dim * kv_b / GIB
    engine_gib = model.num_params * w_b / GIB
    free_gib = device_gib * tp * pp - engine_gib
    requests = max(0.0, free_gib * kv_fraction / (per_token_gib * (isl + osl)))
    raw_batch = min(requests, MAX_BATCH) / pp
    raw_tokens = min(raw_batch * (1 + isl / max(1, osl)), MAX_TOKENS)
    return BenchLimits(max_batch=_round_batch(raw_batch), max_num_tokens=_round_tokens(raw_tokens),
                       kv_requests=requests)


def token_budget(project: Project, tp: int, pp: int, default: int) -> int:
    """The prompt tokens one iteration may carry for ``project`` on a TP×PP instance.

    The project's own ``max_num_batched_tokens`` wins; TensorRT-LLM under offline load builds with
    trtllm-bench's budget (:func:`bench_limits`); otherwise the engines' default ``default``.
    """
    sv, wl = project.serving, project.workload
    if sv.max_num_batched_tokens:
        return int(sv.max_num_batched_tokens)
    if sv.runtime != "trtllm" or wl.load.mode != "offline":
        return int(default)
    model = project.model
    prec = sv.effective_precision(model.precision)
    weight = prec.experts if model.moe is not None else prec.mlp
    device_gib = min(g.memory_bytes for g in project.cluster.gpu_specs.values()) / GIB
    lim = bench_limits(model, weight, sv.kv_dtype, tp, pp, wl.isl, wl.osl, device_gib,
                       sv.gpu_memory_utilization)
    return lim.max_num_tokens
