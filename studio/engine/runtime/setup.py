"""The engine a plan assumes, for one project and layout: :func:`engine_setup`.

It resolves the project's ``serving.runtime`` / ``serving.runtime_version`` to a bundled profile
(:func:`~studio.engine.runtime.loader.resolve`) and reads off what the plan runs with: the token
budget of an iteration, the running-sequence limit, the memory fraction and how the KV cache is
sized, the CUDA-graph capture sizes and the scheduler's CPU cost. :func:`assumed_values` gives the
same figures as plain values for an exporter (``--max-num-batched-tokens``, ``--max-num-seqs``,
``--gpu-memory-utilization``, capture sizes) and for ``plan --explain``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.units import GIB
from studio.engine.runtime.loader import ENGINE_NAMES, Resolved, resolve
from studio.engine.runtime.profile import EngineProfile, MemoryMode, parse_version
from studio.engine.runtime.reserves import graphs_counted, sampler_rate
from studio.engine.runtime.step import RuntimeStep
from studio.engine.step.identity_cache import cached_by_identity
from studio.engine.step.records import Record


class EngineSetup(Record, frozen=True):
    """What one plan assumes of its serving engine (per DP replica; see :func:`engine_setup`)."""

    resolved: Resolved
    token_budget: int  # engine default; the project's max_num_batched_tokens wins in the plan
    max_num_seqs: int | None  # running sequences per replica (None: the KV cache decides)
    default_fraction: float  # the engine's own default memory fraction for this GPU and layout
    memory_mode: MemoryMode
    graphs_in_budget: bool  # CUDA-graph memory taken out before the KV cache (by profile and version)
    graph_sizes: tuple[int, ...]
    step: RuntimeStep
    sampler_bytes_per_logit: float = 0.0  # the sampler profile run's bytes per logit (by version and model)
    moe_backend: str = ""  # the fused-MoE backend whose own kernel table times the experts ("" = fastest measured)

    @property
    def profile(self) -> EngineProfile:
        return self.resolved.profile

    @property
    def engine_name(self) -> str:
        return ENGINE_NAMES.get(self.profile.engine, self.profile.engine)


def _device(project: Project) -> tuple[str, float]:
    """The smallest GPU of the cluster: its id and memory in GiB (engines size by the device)."""
    spec = min(project.cluster.gpu_specs.values(), key=lambda g: g.memory_bytes)
    return spec.id, spec.memory_bytes / GIB


#: Engine set-ups per project object (each a dict by (tp, pp)): one evaluation asks for the same
#: project's set-up from the costs, the budget, the batch limit and the explanations (six times).
_SETUPS: OrderedDict[int, tuple[Any, Any]] = OrderedDict()
_SETUPS_SIZE = 8


def engine_setup(project: Project, tp: int | None = None, pp: int | None = None) -> EngineSetup:
    """The engine ``project`` serves with, sized for a TP×PP instance (see :func:`_engine_setup`),
    remembered for the very same (frozen) project object."""
    tp = project.layout.tp if tp is None else tp
    pp = project.layout.pp if pp is None else pp
    per: dict[tuple[int, int], EngineSetup] = cached_by_identity(_SETUPS, project, _SETUPS_SIZE, lambda _p: {})
    hit = per.get((tp, pp))
    if hit is None:
        hit = per[(tp, pp)] = _engine_setup(project, tp, pp)
    return hit


def _engine_setup(project: Project, tp: int | None = None, pp: int | None = None) -> EngineSetup:
    """The engine ``project`` serves with, sized for a TP×PP instance (default: the project's
    layout) on the cluster's smallest GPU.

    Raises
    ------
    StudioError
        If the runtime version is not a version string (an unknown but well-formed version falls
        back to the nearest profile; ``resolved.note`` says so).
    """
    tp = project.layout.tp if tp is None else tp
    pp = project.layout.pp if pp is None else pp
    sv = project.serving
    res = resolve(sv.runtime, sv.runtime_version)
    p = res.profile
    gpu, gib = _device(project)
    d = p.defaults
    budget = int(d.max_num_batched_tokens.at(gpu, gib, tp) or 0)
    context = project.workload.isl + project.workload.osl
    if d.chunked_above_context is not None and d.chunked_budget is not None and context > d.chunked_above_context:
        budget = d.chunked_budget  # a long context turns chunked prefill on, with its own budget
    elif d.budget_at_least_context:
        budget = max(budget, context)
    seqs = d.max_num_seqs.at(gpu, gib, tp)
    sizes = d.graphs.sizes(gpu, gib, tp)
    frac = p.memory.fraction
    if frac is None:
        assert p.memory.reserve is not None  # the loader refuses a profile with neither
        graph_max = d.graphs.max.at(gpu, gib, tp) or 0.0
        gpu_mib = gib * 1024.0
        reserve = p.memory.reserve.reserve_mib(budget, graph_max, tp, pp, gib)
        frac = round((gpu_mib - reserve) / gpu_mib, 3)
    sched = p.scheduler_on(gpu, gib, tp)
    step = RuntimeStep(scheduler=sched, graph_sizes=sizes, padding=d.graphs.padding)
    if d.bench_graphs is not None and sv.runtime == "trtllm" and project.workload.load.mode == "offline":
        # trtllm-bench sets the graphs itself (profile defaults.bench_cuda_graphs): padded, up to the
        # largest pure-decode batch its batch limit and token budget allow
        from studio.engine.serving.trtllm_bench import token_budget

        per_micro_batch = max(1, min(project.workload.max_batch, int(seqs) if seqs else 10**9) // max(1, pp))
        cap = min(per_micro_batch, token_budget(project, tp, pp, budget))
        step = RuntimeStep(scheduler=sched, graph_sizes=d.bench_graphs.capped(cap),
                           padding=d.bench_graphs.padding)
    graphs = p.memory.graphs_in_budget
    sampler = 0.0
    if p.memory.reserves is not None:
        asked = parse_version(res.asked) if res.asked else None
        graphs = graphs_counted(p.memory.reserves, graphs, asked)
        sampler = sampler_rate(p.memory.reserves, asked, project.model.moe is not None)
    return EngineSetup(
        resolved=res, token_budget=budget, max_num_seqs=int(seqs) if seqs else None, default_fraction=float(frac),
        memory_mode=p.memory.mode, graphs_in_budget=graphs, graph_sizes=sizes, step=step,
        sampler_bytes_per_logit=sampler, moe_backend=_moe_backend(project, p),
    )


def _moe_backend(project: Project, profile: EngineProfile) -> str:
    """The fused-MoE backend the experts are timed as: the profile's default (``moe.backend``), unless
    the project names TensorRT-LLM's ``moe_config.backend`` itself (``serving.features.all2all_backend``):
    ``CUTLASS`` keeps the CUTLASS table, a backend that runs the TRTLLM-gen / DeepGEMM kernels the
    fastest measured. Any other name (``AUTO``, or another engine's all-to-all name such as vLLM's
    ``naive``, which the export refuses for TensorRT-LLM) leaves the profile's default."""
    named = (project.serving.features.all2all_backend or "").upper()
    if profile.engine != "trtllm" or not named:
        return profile.moe.backend
    if named == "CUTLASS":
        return "cutlass"
    return "" if named in _FAST_TRTLLM_MOE_BACKENDS else profile.moe.backend


# TensorRT-LLM MoeConfig.backend values (tensorrt_llm/llmapi/llm_args.py) whose experts run the kernels
# the tables keep as the fastest measured (TRTLLM-gen, CuTe DSL, DeepGEMM; WIDEEP's grouped GEMM).
_FAST_TRTLLM_MOE_BACKENDS = frozenset({"TRTLLM", "CUTEDSL", "WIDEEP", "DEEPGEMM", "MEGAMOE_DEEPGEMM"})


def batch_limit(max_batch: int, setup: EngineSetup) -> int:
    """Running sequences one replica may hold: the workload's ``max_batch`` and the engine's
    ``max_num_seqs`` (vLLM), ``max_batch_size`` (TensorRT-LLM), whichever is smaller."""
    return min(max_batch, setup.max_num_seqs) if setup.max_num_seqs else max_batch


def assumed_values(project: Project, layout: Layout | None = None) -> dict[str, Any]:
    """The engine values a plan of ``project`` assumed, as an exporter writes them.

    Returns a dict with ``engine``, ``version`` (asked, or None = newest profile), ``profile`` (id),
    ``note`` (the fallback note, or None), ``max_num_batched_tokens`` (the project's own budget if
    it sets one, else the engine default the plan used), ``max_num_seqs`` (per DP replica; None =
    the KV cache decides), ``memory_fraction`` (the project's ``gpu_memory_utilization``, which is
    vLLM's ``gpu_memory_utilization``, TensorRT-LLM's ``free_gpu_memory_fraction``, SGLang's
    ``mem_fraction_static``), ``engine_default_fraction``, ``memory_mode``, ``cuda_graph_sizes``
    (ascending), ``cuda_graph_padding``, ``chunked_prefill`` and ``prefix_caching``.

    The budget is the one of the plan's iteration model: with the project's
    ``max_num_batched_tokens`` unset, TensorRT-LLM under offline load uses trtllm-bench's
    (:func:`studio.engine.serving.trtllm_bench.token_budget`).
    """
    from studio.engine.serving.trtllm_bench import token_budget

    layout = project.layout if layout is None else layout
    s = engine_setup(project, layout.tp, layout.pp)
    p = s.profile
    return {
        "engine": p.engine,
        "version": s.resolved.asked,
        "profile": p.id,
        "note": s.resolved.note,
        "max_num_batched_tokens": token_budget(project, layout.tp, layout.pp, s.token_budget),
        "max_num_seqs": s.max_num_seqs,
        "memory_fraction": project.serving.gpu_memory_utilization,
        "engine_default_fraction": s.default_fraction,
        "memory_mode": s.memory_mode,
        "cuda_graph_sizes": list(s.graph_sizes),
        "cuda_graph_padding": p.defaults.graphs.padding,
        "chunked_prefill": p.defaults.chunked_prefill,
        "prefix_caching": p.defaults.prefix_caching,
    }
