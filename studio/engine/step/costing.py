"""Batch-independent costs of one layout (per stage) and the vectorised step-time model.

:func:`layout_costs` gathers, for a resolved layout, everything that does not depend on batch or
micro-batches: per-GPU weight/KV shapes, the measured kernel curves of every stage
(:mod:`studio.engine.step.ops`), memory bandwidth, and the
collectives of every stage over the drawn links. :mod:`studio.engine.step.iteration` turns them
into the time of one scheduler iteration, :mod:`studio.engine.step.step_times` into per-stage
prefill and decode times, so :func:`evaluate` and :func:`sweep` share one model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from studio.core.architecture import LLMArchitecture, ModulePrecision
from studio.core.hardware import GpuSpec
from studio.core.layout import Layout
from studio.core.precision import DType
from studio.core.units import GIB
from studio.engine.fabric.comm import Collective, allgather, allreduce, alltoall, p2p
from studio.engine.fabric.topology import Topology
from studio.engine.runtime.reserves import ReserveShape, reserve_terms, sized_total
from studio.engine.step.constants import Constants
from studio.engine.step.context_parallel import CpCosts, cp_costs
from studio.engine.step.kernels import DEFAULT_ENGINE
from studio.engine.step.ops import StageOps, cached_stage_ops
from studio.engine.step.records import Record
from studio.engine.step.shapes import LayerTable, StageShape, stage_shapes

if TYPE_CHECKING:
    from studio.engine.kv_tiers.prefix_cache import PrefixLoad
    from studio.engine.runtime.setup import EngineSetup
    from studio.engine.runtime.step import RuntimeStep


class Drafter(Protocol):
    """What speculative decoding adds to a replica, as the step model reads it (the drafter is
    built by :func:`studio.engine.step.speculative.drafting`; this is its interface, so that the
    costs need not know how it is made)."""

    @property
    def weight_bytes(self) -> float: ...  # per GPU of the last stage

    @property
    def kv_per_token(self) -> float: ...  # per GPU of the last stage

    @property
    def draft(self) -> object | None: ...  # the draft pass's own costs; None: nothing to run

    @property
    def tokens_per_step(self) -> float: ...  # output tokens per iteration per sequence

    @property
    def verify_tokens(self) -> int: ...  # tokens verified per sequence per iteration

    def draft_ms(self, c: Constants, prefill_tokens: np.ndarray, decode_seqs: np.ndarray,
                 ctx: np.ndarray, prompt_len: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


class StepFeatures(Protocol):
    """What the engine features of a project change in a step (built by
    :func:`studio.engine.features.effects.with_features`; this is its interface, so that the step
    model need not know the features)."""

    def micro_batch_times(self, c: Constants, prefill_tokens: np.ndarray | float, decode_seqs: np.ndarray | float,
                          decode_ctx: np.ndarray | float, prompt_len: np.ndarray | float) -> Any: ...


class LayoutCosts(Record):
    """Per-stage, batch-independent figures of one layout (worst GPU / worst replica per stage)."""

    layout: Layout
    shapes: list[StageShape]
    groups: list[list[list[str]]]  # [replica][stage] -> GPU ids of the TP group
    specs: list[GpuSpec]  # slowest GPU spec of each stage
    capacity: np.ndarray  # bytes per GPU (smallest in the stage)
    usable: np.ndarray
    activations: np.ndarray
    overhead: np.ndarray
    overhead_terms: dict[str, float]
    activation_phases: dict[str, float]  # the engine's profiled phases of the last stage (empty: constants)
    sized_bytes: np.ndarray  # per GPU: the total the engine applies its memory fraction to
    hbm_bps: np.ndarray  # achievable memory bandwidth, bytes/s
    allreduce: list[list[Collective]]  # [stage][replica]
    p2p: list[list[Collective]]  # [boundary][replica]
    alltoall: list[list[Collective]]  # [stage][replica]
    window: int | None
    hidden: int
    experts_per_token: int
    num_experts: int
    a2a_bytes_per_token: float = 0.0  # bytes one GPU sends per token it routes, per all-to-all
    spec: Drafter | None = None  # speculative decoding (its drafter sits on the last stage)
    cp: CpCosts | None = None  # context parallelism (None when cp = 1)
    ops: list[StageOps] | None = None  # measured kernel curves of every stage (studio.engine.step.ops)
    runtime: RuntimeStep | None = None  # the serving engine's scheduler time and graph padding
    kernel_engine: tuple[str, str | None] = (DEFAULT_ENGINE, None)  # (engine, version) of the kernel tables
    features: StepFeatures | None = None  # dual-batch overlap, DP balancing (studio.engine.features)
    prefix: PrefixLoad | None = None  # prefix-cache hits: the suffix's attention to them, their tier loads

    @property
    def weights(self) -> np.ndarray:
        """Weight bytes per GPU per stage, the drafter's included."""
        out = np.array([s.weights for s in self.shapes])
        if self.spec is not None:
            out[-1] += self.spec.weight_bytes
        return out

    @property
    def expert_bytes(self) -> np.ndarray:
        return np.array([s.expert_bytes for s in self.shapes])

    def kv_seq_bytes(self, tokens: float) -> np.ndarray:
        """KV bytes per GPU of one sequence of ``tokens`` tokens, per stage (the drafter's KV cache
        included)."""
        out = np.array([float(s.kv_bytes_for(tokens, self.window)) for s in self.shapes])
        if self.spec is not None:
            out[-1] += self.spec.kv_per_token * float(tokens)
        return out


def layout_costs(
    model: LLMArchitecture,
    table: LayerTable,
    precision: ModulePrecision,
    kv_dtype: DType,
    layout: Layout,
    placement: tuple[str, ...],
    topo: Topology,
    c: Constants,
    gpu_memory_utilization: float,
    max_batch: int,
    replicas: list[int] | None = None,
    fraction_of_free: bool = False,
    token_budget: int | None = None,
    kernel_engine: tuple[str, str | None] | None = None,
    engine: EngineSetup | None = None,
) -> LayoutCosts:
    """Batch-independent costs; ``replicas`` limits the DP replicas whose links are costed
    (the sweep samples a few on large clusters; :func:`evaluate` costs all).

    ``gpu_memory_utilization`` is a fraction of the device memory (vLLM
    ``--gpu-memory-utilization``, SGLang ``--mem-fraction-static``), or with ``fraction_of_free`` of the
    memory left after weights, activations and runtime (TensorRT-LLM
    ``kv_cache_free_gpu_mem_fraction``). ``token_budget`` (default: the constants' engine default)
    is the most tokens one iteration carries, which sizes the activation reserve.

    A project's costs are built by :func:`studio.engine.plan.costs.project_costs`, which also adds
    the drafter of speculative decoding (:func:`studio.engine.step.speculative.with_drafter`).

    ``kernel_engine`` = (serving engine, version or None) names the measured kernel tables the step
    times come from (:mod:`studio.engine.step.kernels`; the nearest shipped version when that one
    has none). Default: the tables ``engine``'s profile names (vLLM's kernels for vLLM, SGLang's
    for SGLang), or TensorRT-LLM's newest without an engine.

    ``engine`` (:func:`studio.engine.runtime.engine_setup`) sizes the KV cache the way that engine
    does, replacing ``fraction_of_free``: ``total`` (vLLM), ``free`` (TensorRT-LLM) or ``static``
    (SGLang, the activations in the reserve the fraction leaves); CUDA-graph memory counts only where
    the engine takes it out before sizing the KV cache. Its scheduler time and graph padding ride on
    the costs (``runtime``) for :class:`~studio.engine.step.iteration.IterationModel`."""
    if kernel_engine is None:
        kernel_engine = ((engine.profile.kernel_engine, engine.profile.kernel_version) if engine is not None
                         else (DEFAULT_ENGINE, None))
    cluster = topo.cluster
    groups = layout.gpu_groups(placement)
    reps = list(range(layout.dp)) if replicas is None else replicas
    pp, tp, ep = layout.pp, layout.tp, layout.ep
    specs: list[GpuSpec] = []
    cap = np.empty(pp)
    for s in range(pp):
        stage_specs = {topo.gpu_type[g] for d in range(layout.dp) for g in groups[d][s]}
        ss = [cluster.gpu_specs[t] for t in stage_specs]
        cap[s] = min(x.memory_bytes for x in ss)
        specs.append(min(ss, key=lambda x: (x.hbm_bandwidth_gbps, x.tflops_bf16)))
    has_fp8 = all(x.tflops_fp8 for x in specs)
    has_fp4 = all(x.tflops_fp4 for x in specs)
    shapes = stage_shapes(model, table, precision, kv_dtype, tp, ep, layout.stage_layers(model.num_layers),
                          has_fp8=has_fp8, has_fp4=has_fp4)
    if layout.cp > 1:  # the KV cache of every GPU is split along the sequence
        shapes = [sh.replace(kv_full=sh.kv_full / layout.cp, kv_sliding=sh.kv_sliding / layout.cp)
                  for sh in shapes]
    h = model.hidden_size
    moe = model.moe
    width = model.intermediate_size
    if moe is not None:
        width = max(width if moe.first_dense_layers or moe.layer_freq > 1 else 0,
                    moe.expert_intermediate_size * moe.experts_per_token
                    + (moe.shared_intermediate_size or moe.expert_intermediate_size) * moe.num_shared_experts)
    t_act = float(token_budget or c.max_num_batched_tokens)
    rule = engine.profile.memory.reserves if engine is not None else None
    sized = cap.copy()
    phases: dict[str, float] = {}
    if engine is not None and rule is not None:  # the engine's own terms (studio.engine.runtime.reserves)
        # an engine sizes against the CUDA runtime's total, not the driver's
        sized = sized_total(rule, np.array([min(cluster.gpu_specs[t].visible_bytes for t in {
            topo.gpu_type[g] for d in range(layout.dp) for g in groups[d][s]}) for s in range(pp)]))
        shape = ReserveShape(hidden=h, width=width, moe_top_k=moe.experts_per_token if moe else 0,
                             vocab=model.vocab_size, tp=tp, stages=pp,
                             nvlink=all(x.scale_up_link is not None for x in specs))
        seqs = float(engine.max_num_seqs or max_batch)
        act, terms, phases = reserve_terms(rule, shape, t_act, seqs, engine.graphs_in_budget,
                                           engine.sampler_bytes_per_logit)
    else:
        act = np.full(pp, c.activation_factor * t_act * (h + width / tp) * 2.0)
        act[-1] += min(t_act, max_batch) * model.vocab_size / tp * c.logits_bytes_per_token
        terms = {"cuda_context": c.cuda_context_gib * GIB, "cuda_graphs": c.cuda_graphs_gib * GIB,
                 "nccl_buffers": c.nccl_buffers_gib * GIB if layout.world_size > 1 else 0.0}
        if engine is not None and not engine.graphs_in_budget:
            del terms["cuda_graphs"]  # captured after the KV cache, or inside SGLang's reserve
    mode = engine.memory_mode if engine is not None else ("free" if fraction_of_free else "total")
    overhead = np.full(pp, sum(terms.values()))
    hbm = np.array([x.hbm_bandwidth_gbps * 1e9 * c.per_gpu(c.hbm_efficiency, x.id) for x in specs])
    # an engine that captures no CUDA graph at all launches every all-reduce eagerly
    eager = engine is not None and not engine.step.graph_sizes
    ar = [[allreduce(topo, groups[d][s], c, kernel_engine, eager) for d in reps] for s in range(pp)]
    pt = [[p2p(topo, groups[d][s], groups[d][s + 1], c) for d in reps] for s in range(pp - 1)]
    a2a: list[list[Collective]] = [[] for _ in range(pp)]
    gathers = moe is not None and ep > tp and engine is not None and engine.profile.moe.gathers(
        specs[0].id, ep, moe.experts_per_token)
    if moe is not None and ep > tp:
        per = ep // tp  # replicas in one EP group
        for s in range(pp):
            for d0 in range(0, layout.dp, per):
                if replicas is not None and d0 not in replicas:
                    continue
                members = [g for d in range(d0, d0 + per) for g in groups[d][s]]
                a2a[s].append(_gather_exchange(topo, members, c) if gathers else alltoall(topo, members, c))
    if mode == "free":
        fixed = np.array([sh.weights for sh in shapes]) + act + overhead
        usable = fixed + (sized - fixed) * gpu_memory_utilization
    elif mode == "static":  # the activations sit in the reserve (1 - fraction) the KV pool leaves
        usable = sized * gpu_memory_utilization + act
    else:
        usable = sized * gpu_memory_utilization
    a2a_bytes = 0.0
    if gathers:
        assert moe is not None
        a2a_bytes = gather_bytes_per_token(h, moe.experts_per_token, ep // tp, shapes[0].expert_class,
                                           c.activation_bytes) / tp
    elif moe is not None and ep > tp:
        # each token goes to the distinct EP ranks that hold its k experts (not k copies), minus the
        # share that stays on its own rank; dispatch runs in FP8 when the experts compute in FP8/FP4
        # (TensorRT-LLM / DeepEP low-precision dispatch), else in the activation format
        k, n_ep = moe.experts_per_token, ep // tp
        distinct = n_ep * (1.0 - (1.0 - 1.0 / n_ep) ** k)
        remote = distinct * (n_ep - 1) / n_ep
        elem = 1.0 if shapes[0].expert_class in ("fp8", "fp4") else c.activation_bytes
        a2a_bytes = remote * h * elem / tp
    out = LayoutCosts(
        layout=layout, shapes=shapes, groups=groups, specs=specs, capacity=cap, usable=usable,
        activations=act, overhead=overhead, overhead_terms=terms, activation_phases=phases, sized_bytes=sized,
        hbm_bps=hbm, allreduce=ar, p2p=pt,
        alltoall=a2a, window=model.sliding_window, hidden=h,
        experts_per_token=moe.experts_per_token if moe else 0, num_experts=moe.num_experts if moe else 0,
        a2a_bytes_per_token=a2a_bytes,
        cp=cp_costs(model, kv_dtype, layout, groups, topo, c, reps),
        ops=[cached_stage_ops(model, table, sh, precision, kv_dtype, x, c, tp, ep, has_fp8, has_fp4, *kernel_engine,
                              moe_backend=engine.moe_backend if engine is not None else "")
             for sh, x in zip(shapes, specs, strict=True)],
        runtime=engine.step if engine is not None else None,
        kernel_engine=kernel_engine,
    )
    return out


def coll_time_us(colls: list[Collective], size: np.ndarray | float) -> np.ndarray:
    """Time (µs) of the slowest of ``colls`` (one per replica) for messages of ``size`` bytes."""
    size = np.asarray(size, dtype=float)
    if not colls:
        return np.zeros_like(size, dtype=float)
    out = colls[0].time_us(size)
    seen = {colls[0].cost_terms}
    for col in colls[1:]:
        terms = col.cost_terms
        if terms not in seen:  # replicas with the same algorithms take the same time
            seen.add(terms)
            out = np.maximum(out, col.time_us(size))
    return out


def sliding_avg(n: np.ndarray | float, window: int | None) -> np.ndarray:
    """Average attended tokens per query over a causal prefill of ``n`` tokens with a window."""
    n = np.asarray(n, dtype=float)
    if window is None:
        return (n + 1) / 2
    w = float(window)
    return np.where(n <= w, (n + 1) / 2, w - w * (w - 1) / (2 * np.maximum(n, 1)))


def _gather_exchange(topo: Topology, members: list[str], c: Constants) -> Collective:
    """The all-gather / reduce-scatter pair of an MoE layer as one collective of kind ``alltoall``
    (it takes the all-to-all's place in the step and the timeline): a ring over the EP group."""
    ring = allgather(topo, members, c)
    algos = tuple(a.replace(**{
        "name": "all-gather + reduce-scatter",
        "note": f"{a.note}; the tokens of every attention-DP rank gathered before the experts, the outputs "
                "reduce-scattered after (TensorRT-LLM 1.0 without an all-to-all backend)"}) for a in ring.algos)
    return Collective("alltoall", ring.group, algos)


def gather_bytes_per_token(hidden: int, top_k: int, ranks: int, expert_class: str, activation_bytes: float) -> float:
    """Bytes per token of one of the two ring passes an all-gather MoE exchange costs, such that
    two passes of ``tokens ×`` this (the step's ``2 × all-to-all`` of a MoE layer) carry the
    all-gather of the quantized tokens and their routing plus the reduce-scatter of the outputs.

    Each rank's ``T`` tokens become a gathered message of ``ranks × T × (quantized hidden + routing)``
    bytes, and the outputs a reduce-scattered one of ``ranks × T × hidden × activation bytes``
    (tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py of TensorRT-LLM 1.0, forward_chunk:
    FP8 e4m3 or NVFP4 values with one e4m3 scale per 16 before the all-gather, int32 expert ids and
    fp32 weights per selected expert, the output in the activation dtype). A ring pass's time is
    ``α + (n − 1)/n × message / bandwidth`` (:func:`studio.engine.fabric.comm.allgather`), so the
    pair is two passes of half the summed message each.
    """
    quant = {"fp4": 0.5 + 1.0 / 16.0, "fp8": 1.0}.get(expert_class, activation_bytes)
    routing = top_k * (4 + 4)
    gathered = hidden * quant + routing
    scattered = hidden * activation_bytes
    return ranks * (gathered + scattered) / 2.0
