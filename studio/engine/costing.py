"""Batch-independent costs of one layout (per stage) and the vectorised step-time model.

:func:`layout_costs` gathers, for a resolved layout, everything that does not depend on batch or
micro-batches: per-GPU weight/KV shapes, compute seconds per token, memory bandwidth, and the
collectives of every stage over the drawn links. :func:`step_times` then turns arrays of batch sizes
and micro-batch counts into per-stage prefill and decode times with numpy, so :func:`evaluate` and
:func:`sweep` share one model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from studio.core.architecture import LLMArchitecture, ModulePrecision
from studio.core.hardware import GpuSpec
from studio.core.layout import Layout
from studio.core.precision import DType
from studio.engine.comm import Collective, allreduce, alltoall, p2p
from studio.engine.constants import Constants
from studio.engine.shapes import LayerTable, StageShape, stage_shapes
from studio.engine.topology import Topology

GIB = float(2**30)


@dataclass
class LayoutCosts:
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
    hbm_bps: np.ndarray  # achievable memory bandwidth, bytes/s
    sec_per_token: np.ndarray  # dense compute seconds per token per GPU
    sec_lm_head: np.ndarray  # per sequence step (last stage)
    sec_attn_ctx: np.ndarray  # seconds per token per attended token, full layers
    sec_attn_ctx_sliding: np.ndarray
    sec_expert: np.ndarray  # routed-expert share of sec_per_token (balanced routing)
    allreduce: list[list[Collective]]  # [stage][replica]
    p2p: list[list[Collective]]  # [boundary][replica]
    alltoall: list[list[Collective]]  # [stage][replica]
    window: int | None
    hidden: int
    experts_per_token: int
    num_experts: int

    @property
    def weights(self) -> np.ndarray:
        return np.array([s.weights for s in self.shapes])

    @property
    def expert_bytes(self) -> np.ndarray:
        return np.array([s.expert_bytes for s in self.shapes])

    def kv_seq_bytes(self, tokens: float) -> np.ndarray:
        """KV bytes per GPU of one sequence of ``tokens`` tokens, per stage."""
        return np.array([float(s.kv_bytes_for(tokens, self.window)) for s in self.shapes])


def resolve_groups(layout: Layout, placement: tuple[str, ...]) -> list[list[list[str]]]:
    """GPU ids of every TP group: ``[replica][stage] -> [gpu of tp rank 0, ...]``."""
    tp, pp = layout.tp, layout.pp
    return [
        [[placement[(d * pp + s) * tp + t] for t in range(tp)] for s in range(pp)] for d in range(layout.dp)
    ]


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
) -> LayoutCosts:
    """Batch-independent costs; ``replicas`` limits the DP replicas whose links are costed
    (the sweep samples a few on large clusters; :func:`evaluate` costs all)."""
    cluster = topo.cluster
    groups = resolve_groups(layout, placement)
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
    h = model.hidden_size
    moe = model.moe
    width = model.intermediate_size
    if moe is not None:
        width = max(width if moe.first_dense_layers or moe.layer_freq > 1 else 0,
                    moe.expert_intermediate_size * moe.experts_per_token
                    + (moe.shared_intermediate_size or moe.expert_intermediate_size) * moe.num_shared_experts)
    t_act = c.max_num_batched_tokens
    act = np.full(pp, c.activation_factor * t_act * (h + width / tp) * 2.0)
    act[-1] += min(t_act, max_batch) * model.vocab_size / tp * c.logits_bytes_per_token
    terms = {"cuda_context": c.cuda_context_gib * GIB, "cuda_graphs": c.cuda_graphs_gib * GIB,
             "nccl_buffers": c.nccl_buffers_gib * GIB if layout.world_size > 1 else 0.0}
    overhead = np.full(pp, sum(terms.values()))
    hbm = np.array([x.hbm_bandwidth_gbps * 1e9 * c.per_gpu(c.hbm_efficiency, x.id) for x in specs])
    sec_tok = np.zeros(pp)
    sec_lm = np.zeros(pp)
    sec_att = np.zeros(pp)
    sec_att_sl = np.zeros(pp)
    sec_exp = np.zeros(pp)
    for s, (sh, x) in enumerate(zip(shapes, specs, strict=True)):
        rate = {k: x.peak_tflops(k) * 1e12 * c.matmul_efficiency(x.id, k) * c.prefill_efficiency
                for k in ("bf16", "fp8", "fp4")}
        sec_tok[s] = sum(2.0 * p / rate[k] for k, p in sh.params_by_class.items())
        sec_lm[s] = 2.0 * sh.lm_head_params / rate[sh.lm_head_class]
        sec_att[s] = sh.attn_flops_per_ctx / rate["bf16"]
        sec_att_sl[s] = sh.attn_flops_per_ctx_sliding / rate["bf16"]
        sec_exp[s] = 2.0 * sh.expert_params / rate[sh.expert_class]
    ar = [[allreduce(topo, groups[d][s], c) for d in reps] for s in range(pp)]
    pt = [[p2p(topo, groups[d][s], groups[d][s + 1], c) for d in reps] for s in range(pp - 1)]
    a2a: list[list[Collective]] = [[] for _ in range(pp)]
    if moe is not None and ep > tp:
        per = ep // tp  # replicas in one EP group
        for s in range(pp):
            for d0 in range(0, layout.dp, per):
                if replicas is not None and d0 not in replicas:
                    continue
                members = [g for d in range(d0, d0 + per) for g in groups[d][s]]
                a2a[s].append(alltoall(topo, members, c))
    usable = cap * gpu_memory_utilization
    return LayoutCosts(
        layout=layout, shapes=shapes, groups=groups, specs=specs, capacity=cap, usable=usable,
        activations=act, overhead=overhead, overhead_terms=terms, hbm_bps=hbm, sec_per_token=sec_tok,
        sec_lm_head=sec_lm, sec_attn_ctx=sec_att, sec_attn_ctx_sliding=sec_att_sl, sec_expert=sec_exp, allreduce=ar, p2p=pt,
        alltoall=a2a, window=model.sliding_window, hidden=h,
        experts_per_token=moe.experts_per_token if moe else 0, num_experts=moe.num_experts if moe else 0,
    )


def _coll(colls: list[Collective], size: np.ndarray) -> np.ndarray:
    if not colls:
        return np.zeros_like(size, dtype=float)
    out = colls[0].time_us(size)
    for col in colls[1:]:
        out = np.maximum(out, col.time_us(size))
    return out


def _sliding_avg(n: np.ndarray | float, window: int | None) -> np.ndarray:
    """Average attended tokens per query over a causal prefill of ``n`` tokens with a window."""
    n = np.asarray(n, dtype=float)
    if window is None:
        return (n + 1) / 2
    w = float(window)
    return np.where(n <= w, (n + 1) / 2, w - w * (w - 1) / (2 * np.maximum(n, 1)))


@dataclass
class StepTimes:
    """Per-stage times (ms) for one micro-batch; arrays shaped (stages, N)."""

    prefill_compute: np.ndarray
    prefill_allreduce: np.ndarray
    prefill_alltoall: np.ndarray
    prefill_p2p: np.ndarray  # to the next stage (0 on the last)
    decode_compute: np.ndarray
    decode_allreduce: np.ndarray
    decode_alltoall: np.ndarray
    decode_p2p: np.ndarray
    ar_us_prefill: np.ndarray  # one all-reduce, worst stage, (N,)
    ar_us_decode: np.ndarray
    p2p_us_prefill: np.ndarray  # one boundary, worst, (N,)
    p2p_us_decode: np.ndarray

    @property
    def prefill_stage(self) -> np.ndarray:
        return self.prefill_compute + self.prefill_allreduce + self.prefill_alltoall

    @property
    def decode_stage(self) -> np.ndarray:
        return self.decode_compute + self.decode_allreduce + self.decode_alltoall


def step_times(lc: LayoutCosts, micro_batch: np.ndarray, isl: int, osl: int, c: Constants) -> StepTimes:
    """Stage times for micro-batches of ``micro_batch`` sequences (array, any shape (N,))."""
    b = np.asarray(micro_batch, dtype=float)
    pp = lc.layout.pp
    tp = lc.layout.tp
    n = b.shape[0]
    act_b = c.activation_bytes
    h = lc.hidden
    out = {k: np.zeros((pp, n)) for k in (
        "pc", "par", "pa2a", "pp2p", "dc", "dar", "da2a", "dp2p")}
    tok_pf = b * isl
    ctx = isl + osl / 2.0
    ar_pf_size = tok_pf * h * act_b
    ar_dec_size = b * h * act_b
    ar_pf_worst = np.zeros(n)
    ar_dec_worst = np.zeros(n)
    route = max(1, lc.layout.ep // tp) if lc.num_experts else 1
    skew = c.moe_imbalance_factor - 1.0 if lc.num_experts else 0.0
    for s, sh in enumerate(lc.shapes):
        # compute vs memory roofline; in decode the routed experts run at the pace of the most
        # loaded expert (few tokens per expert per step); prefill's large expert GEMMs stay balanced
        sec_tok = lc.sec_per_token[s] + skew * lc.sec_expert[s]
        cmp_pf = (tok_pf * lc.sec_per_token[s] + b * lc.sec_lm_head[s]
                  + tok_pf * (_sliding_avg(isl, None) * lc.sec_attn_ctx[s]
                              + _sliding_avg(isl, lc.window) * lc.sec_attn_ctx_sliding[s]))
        dense_w = sh.weights - sh.expert_bytes
        if lc.num_experts:
            miss = 1.0 - lc.experts_per_token / lc.num_experts
            frac_pf = 1.0 - miss ** (tok_pf * route)
            frac_dec = 1.0 - miss ** (b * route)
        else:
            frac_pf = frac_dec = np.zeros(n)
        mem_pf = (dense_w + sh.expert_bytes * frac_pf) / lc.hbm_bps[s]
        out["pc"][s] = np.maximum(cmp_pf, mem_pf) * 1e3
        ctx_sl = min(ctx, lc.window) if lc.window else ctx
        cmp_dec = b * (sec_tok + lc.sec_lm_head[s]
                       + ctx * lc.sec_attn_ctx[s] + ctx_sl * lc.sec_attn_ctx_sliding[s])
        kv_read = b * float(sh.kv_bytes_for(ctx, lc.window))
        mem_dec = (dense_w + sh.expert_bytes * frac_dec + kv_read) / (lc.hbm_bps[s] * c.decode_efficiency)
        out["dc"][s] = np.maximum(cmp_dec, mem_dec) * 1e3 + c.decode_step_overhead_us / 1e3
        ar_pf = _coll(lc.allreduce[s], ar_pf_size)
        ar_dec = _coll(lc.allreduce[s], ar_dec_size)
        ar_pf_worst = np.maximum(ar_pf_worst, ar_pf)
        ar_dec_worst = np.maximum(ar_dec_worst, ar_dec)
        out["par"][s] = 2 * sh.layers * ar_pf / 1e3
        out["dar"][s] = 2 * sh.layers * ar_dec / 1e3
        if lc.alltoall[s]:
            per_gpu = lc.experts_per_token * h * act_b / tp
            out["pa2a"][s] = 2 * sh.moe_layers * _coll(lc.alltoall[s], tok_pf * per_gpu) / 1e3
            out["da2a"][s] = 2 * sh.moe_layers * _coll(lc.alltoall[s], b * per_gpu) / 1e3
    p2p_pf_worst = np.zeros(n)
    p2p_dec_worst = np.zeros(n)
    for s, colls in enumerate(lc.p2p):
        t_pf = _coll(colls, ar_pf_size)
        t_dec = _coll(colls, ar_dec_size)
        out["pp2p"][s] = t_pf / 1e3
        out["dp2p"][s] = t_dec / 1e3
        p2p_pf_worst = np.maximum(p2p_pf_worst, t_pf)
        p2p_dec_worst = np.maximum(p2p_dec_worst, t_dec)
    return StepTimes(
        prefill_compute=out["pc"], prefill_allreduce=out["par"], prefill_alltoall=out["pa2a"],
        prefill_p2p=out["pp2p"], decode_compute=out["dc"], decode_allreduce=out["dar"],
        decode_alltoall=out["da2a"], decode_p2p=out["dp2p"], ar_us_prefill=ar_pf_worst,
        ar_us_decode=ar_dec_worst, p2p_us_prefill=p2p_pf_worst, p2p_us_decode=p2p_dec_worst,
    )


def pipeline_ms(stage: np.ndarray, hand_off: np.ndarray, micro_batches: np.ndarray) -> np.ndarray:
    """Time of M micro-batches through P stages (GPipe fill/drain, one step):
    Σ_s (t_s + p2p_s) + (M − 1) · max_s (t_s + p2p_s)."""
    per = stage + hand_off
    return per.sum(axis=0) + (np.asarray(micro_batches, dtype=float) - 1) * per.max(axis=0)


def bubble_fraction(pp: int | np.ndarray, micro_batches: int | np.ndarray) -> np.ndarray | float:
    """(P − 1) / (M + P − 1)."""
    p = np.asarray(pp, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    out = (p - 1) / (m + p - 1)
    return float(out) if out.ndim == 0 else out


@dataclass
class ServeTimes:
    """Latency and throughput per row (arrays shaped (N,)), and the step times behind them."""

    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    request_ms: np.ndarray
    prefill_round_ms: np.ndarray
    tokens_per_s_replica: np.ndarray
    steps: StepTimes  # for the unique micro-batch sizes
    index: np.ndarray  # row -> column of ``steps``
    one: int  # column of ``steps`` holding a micro-batch of one sequence
    decode_allreduce_ms: np.ndarray  # per row, all stages, one decode round


def serve_times(lc: LayoutCosts, batch: np.ndarray, micro_batches: np.ndarray, isl: int, osl: int,
                c: Constants) -> ServeTimes:
    """Steady-state serving model (continuous batching, pipeline kept full).

    * TPOT = one decode round of every sequence: max(Σ_s t_s(b), M · max_s t_s(b)), b = ⌈B / M⌉
      (stages overlap successive micro-batches; with M < P the pipeline runs partly empty).
    * TTFT = a new prompt prefilled alone through every stage, Σ_s t_prefill_s(1), plus one decode
      round of the running batch it joins.
    * Throughput per replica = B · osl / (prefill round of B prompts + osl · TPOT).
    """
    B = np.asarray(batch, dtype=float)
    M = np.asarray(micro_batches, dtype=float)
    mb = np.ceil(B / M)
    uniq, inv = np.unique(np.concatenate((mb, [1.0])), return_inverse=True)
    one = int(inv[-1])
    inv = inv[:-1]
    st = step_times(lc, uniq, isl, osl, c)
    pf = st.prefill_stage + st.prefill_p2p
    dec = st.decode_stage + st.decode_p2p
    pf_round = np.maximum(pf.sum(axis=0)[inv], M * pf.max(axis=0)[inv])
    tpot = np.maximum(dec.sum(axis=0)[inv], M * dec.max(axis=0)[inv])
    ttft = pf[:, one].sum() + tpot
    request = ttft + (osl - 1) * tpot
    tps = B * osl / ((pf_round + osl * tpot) / 1e3)
    ar = (st.decode_allreduce + st.decode_alltoall).sum(axis=0)[inv] * np.maximum(1.0, M / max(1, lc.layout.pp))
    return ServeTimes(ttft_ms=ttft, tpot_ms=tpot, request_ms=request, prefill_round_ms=pf_round,
                      tokens_per_s_replica=tps, steps=st, index=inv, one=one, decode_allreduce_ms=ar)
