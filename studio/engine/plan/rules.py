"""Plan rules: each fires a :class:`PlanWarning` with a stable code and a one-line fix."""

from __future__ import annotations

import math

from studio.core.parallelism import heads_reason
from studio.core.precision import DType
from studio.core.units import GIB
from studio.engine.fabric.slow_hops import slow_tp_hops
from studio.engine.plan.context import PlanContext, tp_message_bytes
from studio.engine.plan.costs import cached_layer_table
from studio.engine.plan.results import PlanWarning
from studio.engine.step.shapes import LayerTable, stage_shapes


def plan_warnings(ctx: PlanContext) -> tuple[PlanWarning, ...]:
    """Every rule that applies to the evaluated layout, errors first."""
    out: list[PlanWarning] = []
    for rule in RULES:
        out.extend(rule(ctx))
    order = {"error": 0, "warning": 1, "info": 2}
    return tuple(sorted(out, key=lambda w: order[w.severity]))


def _tp_groups(ctx: PlanContext) -> list[list[str]]:
    return [g for rep in ctx.lc.groups for g in rep]


def _tp_crosses_node(ctx: PlanContext) -> list[PlanWarning]:
    if ctx.lc.layout.tp == 1:
        return []
    topo = ctx.topo
    groups = _tp_groups(ctx)
    bad = [g for g in groups if len(topo.islands_of(g)) > 1]
    if not bad:
        trays = [g for g in groups if len(topo.nodes_of(g)) > 1]
        if not trays:
            return []
        return [PlanWarning(
            "TP_SPANS_NODES_IN_NVLINK_DOMAIN", "info",
            f"{len(trays)} TP group(s) span nodes (trays) inside one NVLink domain: all-reduces stay on "
            f"NVLink ({ctx.st.ar_us_decode[0]:.0f} µs per decode all-reduce), no network hop",
            "nothing to change; TP may span the trays of an NVLink rack",
            gpus=tuple(g for grp in trays for g in grp),
        )]
    links = sorted({a.bottleneck_link for cols in ctx.lc.allreduce for col in cols for a in col.algos
                    if a.bottleneck_link and topo.link_family[topo.link_pos[a.bottleneck_link]].is_network})
    return [PlanWarning(
        "TP_CROSSES_NODE", "warning",
        f"{len(bad)} TP group(s) span nodes: every layer's two all-reduces cross the network "
        f"({ctx.st.ar_us_decode[0]:.0f} µs per decode all-reduce)",
        "keep TP within a node (TP ≤ GPUs per node) and use PP across nodes",
        gpus=tuple(g for grp in bad for g in grp), links=tuple(links[:16]),
    )]


def _tp_slow_link(ctx: PlanContext) -> list[PlanWarning]:
    topo = ctx.topo
    # groups that leave their scale-up island have a warning of their own (TP_CROSSES_NODE)
    hits = [(list(grp), link) for grp, link in slow_tp_hops(ctx.lc.allreduce, topo, tp_message_bytes(ctx))
            if len(topo.islands_of(list(grp))) <= 1]
    if not hits:
        return []
    kind = ctx.topo.link_kind[ctx.topo.link_pos[hits[0][1]]]
    return [PlanWarning(
        "TP_OVER_SLOW_LINK", "warning",
        f"TP all-reduce runs over {kind} (not NVLink): the slowest hop governs every layer",
        "use TP only across NVLink-joined GPUs; replicate (DP) or pipeline (PP) over PCIe",
        gpus=tuple(g for grp, _ in hits for g in grp), links=tuple(sorted({lk for _, lk in hits})),
    )]


def _heads(ctx: PlanContext) -> list[PlanWarning]:
    m, tp = ctx.project.model, ctx.lc.layout.tp
    out = []
    why = heads_reason(m, tp)
    if why is not None:
        ok = [t for t in range(1, 65) if heads_reason(m, t) is None]
        out.append(PlanWarning(
            "TP_HEADS_NOT_DIVISIBLE", "error",
            f"{why}; serving engines refuse this split",
            f"choose TP in {', '.join(map(str, ok))}",
        ))
    elif m.mla is None and m.num_kv_heads < tp:
        out.append(PlanWarning(
            "KV_HEADS_REPLICATED", "info",
            f"{m.num_kv_heads} KV heads < TP={tp}: each KV head is replicated on {tp // m.num_kv_heads} GPUs, "
            "so KV bytes per GPU stop shrinking with TP",
            f"TP ≤ {m.num_kv_heads} keeps every KV head on one GPU; add DP for more GPUs",
        ))
    return out


def _pp_uneven(ctx: PlanContext) -> list[PlanWarning]:
    lay = ctx.lc.layout
    layers = [s.layers for s in ctx.lc.shapes]
    if lay.pp == 1 or max(layers) == min(layers):
        return []
    return [PlanWarning(
        "PP_LAYERS_UNEVEN", "warning",
        f"stages hold {', '.join(map(str, layers))} layers: the slowest stage sets the pipeline pace",
        f"choose PP dividing {ctx.project.model.num_layers}, or set layers_per_stage to balance the "
        "first stage's embeddings and the last stage's LM head",
    )]


def _fit(ctx: PlanContext) -> list[PlanWarning]:
    if ctx.fits:
        return []
    if (ctx.pool > 0).all() and ctx.max_seqs < 1:
        return [PlanWarning(
            "KV_LESS_THAN_ONE_SEQUENCE", "error",
            f"KV cache holds {ctx.capacity_tokens:,} tokens per replica, less than one sequence of "
            f"{ctx.seq_len:,} (isl+osl)",
            "add GPUs to the stage (higher TP/PP), use an FP8 KV cache, or shorten the context",
        )]
    if (ctx.pool > 0).all():
        return [PlanWarning(
            "BATCH_ABOVE_KV_CAPACITY", "error",
            f"batch {ctx.batch} needs KV for {ctx.batch} sequences; the cache holds {ctx.max_seqs}",
            f"set batch ≤ {ctx.max_seqs} or 'auto'",
        )]
    s = int(ctx.pool.argmin())
    return [PlanWarning(
        "DOES_NOT_FIT", "error", ctx.fit_reason, _fit_advice(ctx),
        gpus=tuple(g for rep in ctx.lc.groups for g in rep[s]),
    )]


#: Weight formats narrower than FP8: nothing left to suggest below them.
_NARROW = {DType.FP4, DType.INT4}
_QUANTISED = {DType.FP8, DType.INT8} | _NARROW


def _fit_advice(ctx: PlanContext) -> str:
    """Only the remedies the project does not use yet: a narrower weight format when the linear
    weights are wider than it, a higher memory share when it is below 95 %."""
    p = ctx.precision
    linear = {p.attention, p.mlp} | ({p.experts} if ctx.project.model.moe is not None else set())
    steps = ["use more GPUs per stage (TP or PP)"]
    if not linear <= _QUANTISED:
        steps.append("quantise the weights (FP8)")
    elif not linear <= _NARROW:
        steps.append("quantise the weights further (FP4/INT4) if the serving engine supports it")
    util = ctx.project.serving.gpu_memory_utilization
    if util < 0.95:
        steps.append(f"raise gpu_memory_utilization (now {util:.0%})")
    return ", ".join(steps[:-1]) + (" or " if len(steps) > 1 else "") + steps[-1]


def _bubble(ctx: PlanContext) -> list[PlanWarning]:
    lim = ctx.constants.bubble_interactive_max
    if not ctx.project.workload.interactive or ctx.bubble <= lim:
        return []
    p = ctx.lc.layout.pp
    need = math.ceil((p - 1) * (1 - lim) / lim)
    return [PlanWarning(
        "BUBBLE_HIGH_INTERACTIVE", "warning",
        f"pipeline bubble {ctx.bubble:.0%} (P={p}, M={ctx.micro_batches}) is above {lim:.0%} for an interactive workload",
        f"use ≥ {need} micro-batches, or lower PP in favour of TP within NVLink",
    )]


def _long_context(ctx: PlanContext) -> list[PlanWarning]:
    lim = ctx.constants.long_context_tokens
    lay = ctx.lc.layout
    if ctx.seq_len <= lim or lay.cp > 1:
        return []
    from studio.core import parallelism

    model = ctx.project.model
    opts = {m: [c for c in parallelism.cp_options(model, lay.tp, lay.dp, m) if c > 1] for m in ("decode", "prefill")}
    offered = "; ".join(f"{m} CP {', '.join(map(str, v))}" for m, v in opts.items() if v)
    fix = (f"set context parallelism (CP and its mode) in the layout: {offered}" if offered else
           "context parallelism needs TP > KV heads (or MLA) for decode CP, or DP ≥ 2 for prefill CP; "
           "use chunked prefill meanwhile")
    return [PlanWarning(
        "LONG_CONTEXT_NO_SP", "info",
        f"context {ctx.seq_len:,} tokens exceeds {lim:,.0f} and the layout has no sequence/context parallelism: "
        "each GPU of a stage holds the whole sequence's KV shard and prefill activations",
        fix,
    )]


def _nvswitch(ctx: PlanContext) -> list[PlanWarning]:
    lay = ctx.lc.layout
    lim = ctx.constants.tp_max_without_nvswitch
    if lay.tp <= lim:
        return []
    bad = [g for g in _tp_groups(ctx) if ctx.topo.nvswitch_domain(g) is None]
    if not bad:
        return []
    return [PlanWarning(
        "TP_GT4_NO_NVSWITCH", "warning",
        f"TP={lay.tp} > {lim:.0f} on GPUs not all joined by one NVSwitch: all-reduces go through slower hops",
        f"keep TP ≤ {lim:.0f} here, or use an NVSwitch system for TP={lay.tp}",
        gpus=tuple(g for grp in bad for g in grp),
    )]


def _fits_one_gpu(ctx: PlanContext) -> list[PlanWarning]:
    lay = ctx.lc.layout
    if lay.tp * lay.pp == 1:
        return []
    lc = ctx.lc
    one = stage_shapes(ctx.project.model, _table(ctx), ctx.precision, ctx.project.serving.kv_dtype, 1, 1,
                       (ctx.project.model.num_layers,))[0]
    kv = float(one.kv_bytes_for(ctx.seq_len, lc.window))
    fixed = sum(v for k, v in lc.overhead_terms.items() if k not in ("nccl_buffers", "tp_communicators"))
    need = one.weights + float(lc.activations.max()) * lay.tp + fixed  # one GPU has no TP communicators
    if need + kv > float(lc.usable.min()):
        return []
    return [PlanWarning(
        "FITS_ONE_GPU_PREFER_DP", "info",
        f"the model fits one GPU ({one.weights / GIB:.1f} GiB of weights): replicas avoid all TP/PP communication",
        f"try tp=1, pp=1, dp={lay.world_size} (compare throughput per GPU)",
    )]


def _table(ctx: PlanContext) -> LayerTable:
    return cached_layer_table(ctx.project.model)


def _context(ctx: PlanContext) -> list[PlanWarning]:
    m = ctx.project.model
    if ctx.seq_len <= m.max_context:
        return []
    return [PlanWarning(
        "CONTEXT_EXCEEDS_MODEL", "error",
        f"isl+osl = {ctx.seq_len:,} tokens exceeds the model's context window of {m.max_context:,}",
        f"keep isl+osl ≤ {m.max_context:,}",
    )]


def _targets(ctx: PlanContext) -> list[PlanWarning]:
    wl = ctx.project.workload
    out = []
    if wl.ttft_ms is not None and ctx.ttft_ms > wl.ttft_ms:
        out.append(PlanWarning(
            "TTFT_TARGET_MISSED", "warning",
            f"TTFT {ctx.ttft_ms:,.0f} ms exceeds the {wl.ttft_ms:,.0f} ms target at batch {ctx.batch}",
            "lower the batch, raise TP within NVLink, or run the sweep with the target",
        ))
    if wl.tpot_ms is not None and ctx.tpot_ms > wl.tpot_ms:
        out.append(PlanWarning(
            "TPOT_TARGET_MISSED", "warning",
            f"TPOT {ctx.tpot_ms:,.1f} ms exceeds the {wl.tpot_ms:,.1f} ms target at batch {ctx.batch}",
            "lower the batch or the pipeline depth, or raise TP within NVLink",
        ))
    return out


def _cp_crosses_node(ctx: PlanContext) -> list[PlanWarning]:
    cpx = ctx.lc.cp
    if cpx is None:
        return []
    from studio.engine.step.context_parallel import cp_groups

    lay = ctx.lc.layout
    every = cp_groups(lay, ctx.lc.groups, list(range(lay.dp)), sample=False)
    bad = [g for st in every for g in st if len(ctx.topo.islands_of(g)) > 1]
    if not bad:
        return []
    link, kind, _ = cpx.bottleneck()
    return [PlanWarning(
        "CP_CROSSES_NODE", "info",
        f"{len(bad)} context-parallel group(s) span nodes: every full-attention layer's CP exchange crosses "
        f"{kind or 'the network'} ({ctx.st.cp_us_decode[0]:.0f} µs per decode layer)",
        "keep each CP group inside a node (decode CP inside an in-node TP group; prefill CP over replicas "
        "of one node)",
        gpus=tuple(g for grp in bad for g in grp), links=(link,) if link else (),
    )]


def _saturated(ctx: PlanContext) -> list[PlanWarning]:
    ld = ctx.load
    if ld is None or not ld.saturated:
        return []
    return [PlanWarning(
        "SATURATED", "warning",
        f"{ld.asked_rate_per_s or ld.request_rate_per_s:.3g} req/s is at or above the saturation rate "
        f"{ld.saturation_rate_per_s:.3g} req/s: the queue grows without bound, TTFT has no value",
        f"serve at most {ld.saturation_rate_per_s:.3g} req/s on this layout, or add replicas (DP) or GPUs",
    )]


def _idle_gpus(ctx: PlanContext) -> list[PlanWarning]:
    placement = set(ctx.lc.layout.placement or ())
    idle = [g.id for g in ctx.project.cluster.gpus if placement and g.id not in placement]
    if not idle:
        return []
    n = len(idle)
    return [PlanWarning(
        "GPUS_IDLE", "info",
        f"{n} GPU{'s' if n != 1 else ''} idle: the layout runs on {len(placement)} of the "
        f"{len(placement) + n} drawn GPUs ({', '.join(idle[:4])}{', …' if n > 4 else ''})",
        "keep them as spares, or choose a layout that uses every GPU (Layout tab)",
        gpus=tuple(idle),
    )]


RULES = (_fit, _saturated, _idle_gpus, _context, _heads, _tp_crosses_node, _tp_slow_link, _nvswitch, _pp_uneven, _bubble,
         _long_context, _fits_one_gpu, _targets, _cp_crosses_node)
