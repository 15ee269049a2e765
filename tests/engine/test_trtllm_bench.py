"""trtllm-bench's engine sizing, and the engine using it for TensorRT-LLM under offline load."""

from __future__ import annotations

import pytest

from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.precision import DType
from studio.core.project import Project
from studio.core.workload import Load, ServingConfig, Workload
from studio.engine import evaluate
from studio.engine.serving.trtllm_bench import bench_limits, token_budget
from studio.io.presets import load_catalog

H100_GIB = 81_559 / 1024  # driver-reported H100 SXM memory


def _model(name: str):
    return load_catalog().model(name).architecture


def test_memory_tight_70b_fp8_on_one_h100_builds_with_the_floor_budget():
    # ~14 GiB left after 70.6 B FP8 parameters (× 0.95): ~40 requests of 2,176 tokens, so
    # tokens = 40 × (1 + 2048/128) ≈ 680 → the 2,048 floor; batch rounds up to the 64 floor
    lim = bench_limits(_model("llama-3.1-70b"), DType.FP8, DType.FP8, 1, 1, 2048, 128, H100_GIB)
    assert 30 < lim.kv_requests < 50
    assert (lim.max_batch, lim.max_num_tokens) == (64, 2048)


def test_small_model_short_requests_hit_the_batch_cap():
    # 8B FP8 on 80 GB holds thousands of 256-token requests: batch capped at 4,096, tokens 2 × 4,096
    lim = bench_limits(_model("llama-3.1-8b"), DType.FP8, DType.FP8, 1, 1, 128, 128, H100_GIB)
    assert lim.kv_requests > 4096
    assert (lim.max_batch, lim.max_num_tokens) == (4096, 8192)


def test_pipeline_stages_divide_the_batch_and_tokens_cap_at_32k():
    one = bench_limits(_model("llama-3.1-8b"), DType.FP8, DType.FP8, 1, 1, 2048, 128, H100_GIB)
    two = bench_limits(_model("llama-3.1-8b"), DType.FP8, DType.FP8, 1, 2, 2048, 128, H100_GIB)
    assert two.max_batch <= one.max_batch
    assert one.max_num_tokens <= 32768 and one.max_num_tokens % 1024 == 0


def test_kv_heads_below_tp_are_counted_once_per_rank():
    # trtllm-bench counts max(TP, KV heads) heads per token: TP 16 on an 8-KV-head model doubles it
    m = _model("llama-3.1-405b")
    tp8 = bench_limits(m, DType.FP8, DType.FP8, 8, 1, 1024, 1024, H100_GIB)
    tp16 = bench_limits(m, DType.FP8, DType.FP8, 16, 1, 1024, 1024, H100_GIB)
    assert tp16.kv_requests < 2.5 * tp8.kv_requests


def _plan(runtime: str, mode: str, budget: int | None = None):
    wl = Workload(isl=2048, osl=128, max_batch=4096,
                  load=Load(mode=mode, num_requests=100) if mode == "offline" else Load(mode=mode, concurrency=8))
    sv = ServingConfig(weight_dtype="fp8", kv_dtype="fp8", runtime=runtime, gpu_memory_utilization=0.95,
                       max_num_batched_tokens=budget)
    cat = load_catalog()
    one_h100 = build_cluster(cat.template_for_gpu("h100-sxm").replace(gpus_per_node=1), 1, cat.gpu("h100-sxm"),
                             cat.links)
    return Project(cluster=one_h100, model=_model("llama-3.1-70b"), layout=Layout(tp=1), workload=wl, serving=sv)


@pytest.mark.parametrize(("runtime", "mode", "budget", "expected"), [
    ("trtllm", "offline", None, 2048),   # trtllm-bench's sizing
    ("trtllm", "offline", 4096, 4096),   # the project's own budget wins
    ("trtllm", "concurrency", None, 8192),  # served: the engines' default
    ("vllm", "offline", None, 8192),
])
def test_token_budget_by_runtime_and_load(runtime, mode, budget, expected):
    p = _plan(runtime, mode, budget)
    assert token_budget(p, 1, 1, 8192) == expected
    assert evaluate(p).load.token_budget == expected


def test_the_smaller_budget_leaves_a_larger_kv_cache():
    bench = evaluate(_plan("trtllm", "offline"))
    default = evaluate(_plan("trtllm", "offline", 8192))
    assert bench.memory[0].activations < 0.5 * default.memory[0].activations
    assert bench.kv_capacity_tokens > default.kv_capacity_tokens
