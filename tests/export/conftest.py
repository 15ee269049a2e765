"""Projects and plans for the export tests, built directly from the core types.

The model shapes are the published Hugging Face configs (meta-llama/Meta-Llama-3.1-70B,
mistralai/Mixtral-8x7B-v0.1); the GPU figures are the NVIDIA H100 SXM datasheet's. The plan
figures are inputs to the exporters, chosen by the test (the exporters only copy or divide them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.architecture import LLMArchitecture, MoEConfig
from studio.core.hardware import Cluster, GpuInstance, GpuSpec, Node
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import ServingConfig, Workload
from studio.engine.plan.results import GpuMemory, PlanResult, PlanWarning

GIB = 2.0**30
DATA = Path(__file__).resolve().parents[1] / "data" / "engines"
GOLDEN = Path(__file__).resolve().parent / "golden"

H100 = GpuSpec(
    id="h100-sxm", name="NVIDIA H100 SXM 80GB", memory_gb=80, hbm_bandwidth_gbps=3350,
    tflops_bf16=989, tflops_fp16=989, tflops_fp8=1979, price_per_gpu_hour=2.5,
)

LLAMA_70B = LLMArchitecture(
    id="llama-3.1-70b", name="Llama 3.1 70B", model_type="llama", hidden_size=8192, num_layers=80,
    num_attention_heads=64, num_kv_heads=8, head_dim=128, intermediate_size=28672,
    vocab_size=128256, max_context=131072, hf_model_id="meta-llama/Llama-3.1-70B",
)

MIXTRAL = LLMArchitecture(
    id="mixtral-8x7b", name="Mixtral 8x7B", model_type="mixtral", hidden_size=4096, num_layers=32,
    num_attention_heads=32, num_kv_heads=8, head_dim=128, intermediate_size=14336,
    vocab_size=32000, max_context=32768, hf_model_id="mistralai/Mixtral-8x7B-v0.1",
    moe=MoEConfig(num_experts=8, experts_per_token=2, expert_intermediate_size=14336),
)


def cluster(nodes: int, gpus: int = 8, names: list[str] | None = None) -> Cluster:
    """``nodes`` servers of ``gpus`` H100s each (no links: the exporters do not read them)."""
    out = []
    for i in range(nodes):
        out.append(
            Node(
                id=f"n{i}", name=(names[i] if names else f"node-{i}"), slots=gpus,
                gpus=tuple(GpuInstance(id=f"n{i}-g{s}", type=H100.id, slot=s) for s in range(gpus)),
            )
        )
    return Cluster(name=f"{nodes}x HGX H100", nodes=tuple(out), gpu_specs={H100.id: H100})


def project(model: LLMArchitecture, nodes: int, layout: Layout, *, names=None, gpus: int = 8,
            serving: ServingConfig | None = None, name: str = "Export test") -> Project:
    return Project(
        name=name, cluster=cluster(nodes, gpus, names), model=model, layout=layout,
        workload=Workload(isl=2048, osl=512, batch=64),
        serving=serving or ServingConfig(kv_dtype="fp8", gpu_memory_utilization=0.9),
    )


def plan(proj: Project, *, batch: int = 64, kv_tokens: int = 400_000, fits: bool = True,
         capacity: float | None = None) -> PlanResult:
    """A plan for ``proj.layout``: every GPU holds 30 GiB of weights, 2 GiB activations, 1 GiB
    overhead, and the rest of the serving fraction of its memory (``capacity`` bytes, default the
    project's first GPU spec) as KV cache. The figures are the test's, not the engine's."""
    lay = proj.layout
    cap = capacity if capacity is not None else next(iter(proj.cluster.gpu_specs.values())).memory_bytes
    usable = cap * proj.serving.gpu_memory_utilization
    mem = []
    for r in range(lay.world_size):
        d, rest = divmod(r, lay.tp * lay.pp)
        stage, t = divmod(rest, lay.tp)
        w, a, o = 30 * GIB, 2 * GIB, 1 * GIB
        mem.append(GpuMemory(gpu_id=f"rank{r}", rank=r, stage=stage, tp_rank=t, dp_index=d,
                             capacity=cap, usable=usable, weights=w, kv_cache=usable - w - a - o,
                             activations=a, overhead=o))
    return PlanResult(
        layout=lay, fits=fits, fit_reason="" if fits else "weights exceed GPU memory", batch=batch,
        batch_auto=False, memory=tuple(mem), kv_bytes_per_token_per_gpu=40960.0,
        kv_bytes_per_token_card=2.0 * 80 * 8192, kv_bytes_per_token_model=163840.0,
        kv_capacity_tokens=kv_tokens, max_concurrent_sequences=kv_tokens // 2560,
        allreduce_us_per_layer_prefill=120.0, allreduce_us_per_layer_decode=18.0,
        p2p_us_per_boundary_prefill=40.0, p2p_us_per_boundary_decode=9.0, bubble_fraction=0.0,
        micro_batches=lay.micro_batches, ttft_ms=350.0, tpot_ms=24.5, request_latency_ms=12900.0,
        output_tokens_per_s=2612.2, output_tokens_per_s_per_gpu=326.5, tokens_per_s_per_user=40.8,
        usd_per_hour=20.0, usd_per_million_output_tokens=2.127, stages=(), comm=(), timelines={},
        warnings=(PlanWarning(code="TP_CROSSES_NODE", severity="warning",
                              message="TP group spans nodes.", fix="Keep TP inside a node."),),
        explanations={}, assumptions=("Decode is memory-bound.",),
    )


@pytest.fixture
def make_project():
    return project


@pytest.fixture
def make_plan():
    return plan
