"""Evaluate one layout of a project: memory, compute, communication, pipeline, latency and cost."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from studio.core import parallelism
from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.core.layout import Layout, RankCoords
from studio.core.project import CalibrationProfile, Project
from studio.core.units import GIB
from studio.core.workload import Workload
from studio.engine.fabric.comm import Collective
from studio.engine.fabric.slow_hops import slow_tp_hops
from studio.engine.fabric.topology import topology_of
from studio.engine.kv_tiers.prefix_cache import batch_with_shared_prefix, tier_load_ms
from studio.engine.kv_tiers.tiers import load_gbps, prefix_cache_on, tier_tokens
from studio.engine.plan.context import PlanContext, tp_message_bytes
from studio.engine.plan.costs import (
    prefix_reuse,
    project_batch_limit,
    project_budget,
    project_costs,
    with_prefix_load,
)
from studio.engine.plan.fits import fits as layout_fits
from studio.engine.plan.fits import heads_split, memory_fit
from studio.engine.plan.results import CommCost, GpuMemory, LoadSummary, PlanResult, StageResult
from studio.engine.plan.rules import plan_warnings
from studio.engine.plan.validate import check_layout
from studio.engine.serving.serve_times import ServeTimes, serve_times
from studio.engine.step.constants import Constants, default_constants
from studio.engine.step.context_parallel import cp_comm_costs
from studio.engine.step.costing import LayoutCosts
from studio.engine.step.step_times import StepTimes, bubble_fraction

if TYPE_CHECKING:
    from studio.engine.plan.views import Explanation, Timeline

def resolve_calibration(project: Project, calibration: CalibrationProfile | None) -> CalibrationProfile | None:
    """The explicit profile, else the project's selected one (``serving.calibration``)."""
    if calibration is not None:
        return calibration
    name = project.serving.calibration
    if name is None:
        return None
    if name not in project.calibrations:
        allowed = ", ".join(sorted(project.calibrations)) or "none defined"
        raise StudioError(f"serving.calibration names profile '{name}', which is not in calibrations ({allowed})")
    return project.calibrations[name]


def constants_for(cal: CalibrationProfile | None, base: Constants | None = None) -> Constants:
    c = base or default_constants()
    return c.with_overrides(dict(cal.efficiency)) if cal and cal.efficiency else c


def _column(st: StepTimes, j: int) -> StepTimes:
    """The step times of one micro-batch size (column ``j``), keeping the (stages, 1) shape."""
    return StepTimes(**{k: (v[:, j:j + 1] if v.ndim == 2 else v[j:j + 1]) for k, v in st.values().items()})


def _comm_cost(col: Collective, phase: str, size: float) -> CommCost | None:
    algo = col.pick(size)
    if algo is None:
        return None
    return CommCost.of(col.kind, phase, col.group, size, algo)


def _worst(cols: list[Collective], size: float) -> Collective | None:
    if not cols:
        return None
    times: dict[tuple, float] = {}  # replicas with the same algorithms take the same time

    def time_of(col: Collective) -> float:
        t = times.get(col.cost_terms)
        if t is None:
            t = times[col.cost_terms] = float(col.time_us(size))
        return t

    return max(cols, key=time_of)


def evaluate(
    project: Project,
    layout: Layout | None = None,
    *,
    calibration: CalibrationProfile | None = None,
    constants: Constants | None = None,
    details: bool = True,
    costs: dict | None = None,
) -> PlanResult:
    """Cost one layout of ``project``.

    Parameters
    ----------
    layout:
        The layout to cost; ``None`` = ``project.layout``.
    calibration:
        Profile whose link fits and efficiencies replace the defaults; ``None`` = the project's
        selected profile (``serving.calibration``), if any.
    constants:
        Base constants (tests); ``None`` = ``presets/engine.json``.
    details:
        False leaves out what only a plan's views read — ``explanations``, ``timelines`` and
        ``ranks`` come back empty — for a caller that prints :meth:`PlanResult.to_json` and the load
        summary only (``sweep --json``'s shown layouts); every figure, warning and assumption is the
        same.
    costs:
        A memo of the batch-independent layout costs (:func:`~studio.engine.plan.costs.project_costs`,
        by layout and placement) that a caller keeps across plans of one project at several
        batches — the sweep's shown layouts; the costs read nothing of the batch, so every figure
        is the same as without it. Only for plans of the same project but for its batch.

    Raises
    ------
    StudioError
        If the layout cannot exist on this cluster for this model (see
        :func:`studio.engine.plan.validate.check_layout`) or two GPUs of a group are not linked.
    """
    layout = project.layout if layout is None else layout
    cal = resolve_calibration(project, calibration)
    c = constants_for(cal, constants)
    model, wl, sv = project.model, project.workload, project.serving
    placement = check_layout(layout, project.cluster, model)
    if layout.placement != placement:
        layout = layout.model_copy(update={"placement": placement})
    topo = topology_of(project.cluster, cal.link_fits if cal else None)
    precision = sv.effective_precision(model.precision)
    budget = project_budget(project, layout, c)
    lc = costs.get((layout, placement)) if costs is not None else None
    if lc is None:
        lc = project_costs(project, layout, placement, topo, c)
        if costs is not None:
            costs[(layout, placement)] = lc
    seq_len = wl.isl + wl.osl
    pool, seq_bytes, max_seqs, cap_tokens, kv_tok = memory_fit(lc, seq_len)
    auto = wl.batch == "auto"
    if prefix_cache_on(project) and wl.reuse.system_prompt_tokens:  # the shared prompt's blocks are held once
        max_seqs = batch_with_shared_prefix(cap_tokens, seq_len, wl.reuse.system_prompt_tokens)
    batch = max(1, min(project_batch_limit(project, layout), max_seqs)) if auto else int(wl.batch)
    weights_fit = bool((pool > 0).all())
    if not weights_fit:
        s = int(np.argmin(pool))
        need = (lc.weights[s] + lc.activations[s] + lc.overhead[s]) / GIB
        if sv.runtime == "trtllm":
            fit_reason = (
                f"stage {s} needs {need:.1f} GiB per GPU for weights, activations and runtime, "
                f"more than the device's {lc.capacity[s] / GIB:.1f} GiB (TensorRT-LLM gives the KV cache "
                f"{sv.gpu_memory_utilization:.0%} of what is left)"
            )
        else:
            fit_reason = (
                f"stage {s} needs {need:.1f} GiB per GPU "
                f"for weights, activations and runtime, above the {lc.usable[s] / GIB:.1f} GiB usable "
                f"({sv.gpu_memory_utilization:.0%} of {lc.capacity[s] / GIB:.1f} GiB)"
            )
    elif max_seqs < 1:
        fit_reason = (f"weights fit, but the KV cache holds {cap_tokens:,} tokens, less than one "
                      f"{seq_len:,}-token sequence (isl+osl)")
    elif batch > max_seqs:
        fit_reason = f"batch {batch} needs KV for {batch} sequences; the cache holds {max_seqs}"
    elif not heads_split(model, layout.tp):
        fit_reason = f"memory fits, but {parallelism.heads_reason(model, layout.tp)}"
    elif seq_len > model.max_context:
        fit_reason = (f"memory fits, but isl+osl = {seq_len:,} tokens exceeds the model's context window "
                      f"of {model.max_context:,}")
    else:
        fit_reason = f"fits: KV cache holds {max_seqs:,} sequences of {seq_len:,} tokens per replica"
    fits = bool(layout_fits(pool, max_seqs, batch, model, layout.tp, seq_len))
    m_eff = max(1, min(layout.micro_batches, batch))
    mb = math.ceil(batch / m_eff)
    # the load model splits every iteration's tokens (a lone prompt's too) over the layout's
    # micro-batches whatever the batch, so one user's TTFT is the unloaded TTFT of the layout, not
    # that of a pipeline run one micro-batch deep (the micro-batch step times are the same:
    # ceil(batch / M) = 1 sequence once M > batch)
    m_load = max(1, layout.micro_batches)
    sv_t = serve_times(lc, np.array([float(batch)]), np.array([float(m_load)]), wl.isl, wl.osl, c, budget)
    cached = 0.0
    prefix = prefix_reuse(project, layout, cap_tokens, model.kv_bytes_per_token(sv.kv_dtype), batch,
                          float(sv_t.request_ms[0]))
    if prefix is not None:  # only the missed prompt tokens are prefilled, after their tier loads
        wl = wl.model_copy(update={"isl": max(1, round(prefix.computed_tokens))})
        cached = float(project.workload.isl - wl.isl)
        lc = with_prefix_load(project, layout, lc, prefix)
        sv_t = serve_times(lc, np.array([float(batch)]), np.array([float(m_load)]), wl.isl, wl.osl, c, budget,
                           cached)
    st = _column(sv_t.steps, int(sv_t.index[0]))
    ttft, tpot = float(sv_t.ttft_ms[0]), float(sv_t.tpot_ms[0])
    request = float(sv_t.request_ms[0])
    tps_replica = float(sv_t.tokens_per_s_replica[0])
    load = None
    if fits:
        from studio.engine.features.frontend import project_frontend

        load, figures = _under_load(lc, c, wl, layout, batch, max_seqs, m_load, budget, sv_t, cached,
                                    project_frontend(sv.runtime, sv.features.api_servers))
        if figures is not None:
            ttft, tpot, request, tps_replica = figures
    prefix_summary = None
    if prefix is not None:
        # hits in host memory / on NVMe are loaded over the node's links: the iteration model
        # (lc.prefix) hides the load behind the prefill or adds it, as the runtime does
        gpus = layout.tp * layout.pp
        kv_model = model.kv_bytes_per_token(sv.kv_dtype)
        load_ms = tier_load_ms(prefix, kv_model, load_gbps(gpus, sv.kv_tiers.host_link_gbps))
        host, disk = tier_tokens(project, gpus, kv_model)
        prefix_summary = {
            "hit_rate": prefix.hit_rate, "hit_rate_hbm": prefix.hit_by_tier[0],
            "hit_rate_host": prefix.hit_by_tier[1], "hit_rate_disk": prefix.hit_by_tier[2],
            "prompt_tokens": prefix.prompt_tokens, "prefilled_tokens": prefix.computed_tokens,
            "saved_prefill_tokens": prefix.saved_tokens, "shared_tokens": float(prefix.shared_tokens),
            "tier_load_ms": load_ms, "capacity_tokens_hbm": float(cap_tokens),
            "capacity_tokens_host": host, "capacity_tokens_disk": disk,
        }
    tps = layout.replicas * tps_replica if fits else 0.0
    price = sum(
        sv.price_per_gpu_hour if sv.price_per_gpu_hour is not None else project.cluster.gpu_specs[topo.gpu_type[g]].price_per_gpu_hour
        for g in placement
    )
    bubble = float(bubble_fraction(layout.pp, m_eff))
    ctx = PlanContext(
        project=project, precision=precision, constants=c, topo=topo, lc=lc, st=st, seq_len=seq_len,
        seq_bytes=seq_bytes, pool=pool, max_seqs=max_seqs, capacity_tokens=cap_tokens, kv_per_token_gpu=kv_tok,
        batch=batch, batch_auto=auto, micro_batches=m_eff, micro_batch_size=mb, fits=fits,
        fit_reason=fit_reason, ttft_ms=ttft, tpot_ms=tpot, request_ms=request, tokens_per_s=tps,
        usd_per_hour=price, bubble=bubble, load=load, prefix_cache=prefix_summary,
    )
    return _assemble(ctx, layout, cal, details)


def _modules(lc: LayoutCosts, stage: int) -> dict[str, float]:
    """Weight bytes per GPU by module of ``stage``, the speculative drafter as ``draft`` on the last."""
    out = dict(lc.shapes[stage].weights_by_module)
    if lc.spec is not None and stage == len(lc.shapes) - 1 and lc.spec.weight_bytes > 0:
        out["draft"] = lc.spec.weight_bytes
    return out


def _assemble(ctx: PlanContext, layout: Layout, cal: CalibrationProfile | None, details: bool = True) -> PlanResult:
    lc, st, project = ctx.lc, ctx.st, ctx.project
    cluster = project.cluster
    h = project.model.hidden_size
    act_b = ctx.constants.activation_bytes
    memory: list[GpuMemory] = []
    # per stage, read once: lc.weights and ctx.kv_batch_bytes are computed when read, and a plan
    # of 16 GPUs read them 16 times (a quarter of a plan's time; a 1,024-GPU plan's, 1,024 times)
    fraction = project.serving.gpu_memory_utilization
    usable = lc.usable.tolist()
    capacity = lc.capacity.tolist()
    weights = lc.weights.tolist()
    kv = np.asarray(ctx.kv_batch_bytes, dtype=float).tolist()
    activations = lc.activations.tolist()
    overhead = lc.overhead.tolist()
    modules = [_modules(lc, s) for s in range(len(lc.shapes))]
    for d, reps in enumerate(lc.groups):
        for s, group in enumerate(reps):
            for t, g in enumerate(group):
                cap = cluster.gpu_specs[ctx.topo.gpu_type[g]].memory_bytes
                memory.append(GpuMemory(
                    gpu_id=g, rank=layout.rank(d, s, t), stage=s, tp_rank=t, dp_index=d, capacity=cap,
                    usable=usable[s] + (cap - capacity[s]) * fraction,
                    weights=weights[s],
                    kv_cache=kv[s], activations=activations[s],
                    overhead=overhead[s], weights_by_module=dict(modules[s]),
                ))
    memory.sort(key=lambda m: m.rank)
    stages = tuple(
        StageResult(
            stage=s, layers=sh.layers, gpus=tuple(lc.groups[0][s]),
            prefill_compute_ms=float(st.prefill_compute[s, 0]),
            prefill_allreduce_ms=float(st.prefill_allreduce[s, 0] + st.prefill_alltoall[s, 0]),
            decode_compute_ms=float(st.decode_compute[s, 0]),
            decode_allreduce_ms=float(st.decode_allreduce[s, 0] + st.decode_alltoall[s, 0]),
            p2p_prefill_ms=float(st.prefill_p2p[s, 0]), p2p_decode_ms=float(st.decode_p2p[s, 0]),
            prefill_cp_ms=float(st.prefill_cp[s, 0]), decode_cp_ms=float(st.decode_cp[s, 0]),
        )
        for s, sh in enumerate(lc.shapes)
    )
    tok_pf = ctx.micro_batch_size * project.workload.isl
    sizes = {"prefill": tok_pf * h * act_b, "decode": ctx.micro_batch_size * h * act_b}
    comm: list[CommCost] = []
    for phase, size in sizes.items():
        for cols in lc.allreduce:
            w = _worst(cols, size)
            if w is not None and (cc := _comm_cost(w, phase, size)):
                comm.append(cc)
        for cols in lc.p2p:
            w = _worst(cols, size)
            if w is not None and (cc := _comm_cost(w, phase, size)):
                comm.append(cc)
        a2a_size = (tok_pf if phase == "prefill" else ctx.micro_batch_size) * lc.a2a_bytes_per_token
        for cols in lc.alltoall:
            w = _worst(cols, a2a_size)
            if w is not None and (cc := _comm_cost(w, phase, a2a_size)):
                comm.append(cc)
    comm.extend(cp_comm_costs(lc, ctx.micro_batch_size, project.workload.isl))
    timelines: dict[str, Timeline] = {}
    explained: dict[str, Explanation] = {}
    ranks: dict[str, RankCoords] = {}
    if details:  # the views' share of a plan: not imported or built for figures only
        from studio.engine.plan.explain import explanations
        from studio.engine.plan.pipeline import timeline

        timelines = {
            "prefill": timeline("prefill", st.prefill_compute[:, 0], st.prefill_allreduce[:, 0], st.prefill_p2p[:, 0],
                                ctx.micro_batches, alltoall_ms=st.prefill_alltoall[:, 0], cp_ms=st.prefill_cp[:, 0]),
            "decode": timeline("decode", st.decode_compute[:, 0], st.decode_allreduce[:, 0], st.decode_p2p[:, 0],
                               ctx.micro_batches, alltoall_ms=st.decode_alltoall[:, 0], cp_ms=st.decode_cp[:, 0]),
        }
        explained = explanations(ctx)
        ranks = {g: layout.coords(r) for r, g in enumerate(layout.placement or ())}
    a2a_us = {ph: max((cc.time_us for cc in comm if cc.kind == "alltoall" and cc.phase == ph), default=0.0)
              for ph in ("prefill", "decode")}
    world = layout.world_size
    tps = ctx.tokens_per_s
    usd_m = ctx.usd_per_hour / (tps * 3600.0) * 1e6 if tps > 0 else float("inf")
    model = project.model
    kv_dtype = project.serving.kv_dtype
    hops = slow_tp_hops(lc.allreduce, ctx.topo, tp_message_bytes(ctx))
    slow_links = frozenset(link for _, link in hops)
    slow_gpus = frozenset(g for grp, _ in hops for g in grp)
    return PlanResult(
        layout=layout, fits=ctx.fits, fit_reason=ctx.fit_reason, batch=ctx.batch, batch_auto=ctx.batch_auto,
        memory=tuple(memory), kv_bytes_per_token_per_gpu=ctx.kv_per_token_gpu,
        kv_bytes_per_token_card=model.card_kv_bytes_per_token(kv_dtype),
        kv_bytes_per_token_model=model.kv_bytes_per_token(kv_dtype),
        kv_capacity_tokens=ctx.capacity_tokens, max_concurrent_sequences=ctx.max_seqs,
        allreduce_us_per_layer_prefill=float(st.ar_us_prefill[0]),
        allreduce_us_per_layer_decode=float(st.ar_us_decode[0]),
        p2p_us_per_boundary_prefill=float(st.p2p_us_prefill[0]),
        p2p_us_per_boundary_decode=float(st.p2p_us_decode[0]),
        bubble_fraction=ctx.bubble, micro_batches=ctx.micro_batches, ttft_ms=ctx.ttft_ms, tpot_ms=ctx.tpot_ms,
        request_latency_ms=ctx.request_ms, output_tokens_per_s=tps, output_tokens_per_s_per_gpu=tps / world,
        tokens_per_s_per_user=1e3 / ctx.tpot_ms if ctx.tpot_ms > 0 else 0.0, usd_per_hour=ctx.usd_per_hour,
        usd_per_million_output_tokens=usd_m, stages=stages, comm=tuple(comm), timelines=timelines,
        warnings=plan_warnings(ctx), explanations=explained,
        assumptions=_assumptions(ctx), calibration=cal.name if cal else None, load=ctx.load,
        prefix_cache=ctx.prefix_cache,
        alltoall_us_per_layer_prefill=a2a_us["prefill"], alltoall_us_per_layer_decode=a2a_us["decode"],
        cp_us_per_layer_prefill=float(st.cp_us_prefill[0]), cp_us_per_layer_decode=float(st.cp_us_decode[0]),
        max_context_tokens=ctx.capacity_tokens,
        ranks=ranks,
        slow_links=slow_links, slow_gpus=slow_gpus, idle_gpus=_idle(project.cluster, layout),
    )


def _idle(cluster: Cluster, layout: Layout) -> tuple[str, ...]:
    """The drawn GPUs ``layout``'s placement leaves unused, in cluster order."""
    used = set(layout.placement or ())
    return tuple(g.id for g in cluster.gpus if g.id not in used) if used else ()



_DEFINITIONS = {
    "concurrency": "closed loop of N users (GenAI-Perf / NIM --concurrency, vLLM bench serve --max-concurrency): "
                   "TTFT from request to first token, TPOT = (end − first token)/(output − 1), throughput = output tokens/s",
    "rate": "open loop at a request rate (vLLM bench serve --request-rate): TTFT includes queueing, TPOT excludes "
            "the first token, throughput = output tokens/s at that rate",
    "offline": "all requests queued at t = 0 (trtllm-bench throughput): throughput = output tokens / total time; "
               "steady-state means shown, the tail is in `layout-studio simulate`",
}


def _under_load(lc: LayoutCosts, c: Constants, wl: Workload, layout: Layout, batch: int, max_seqs: int, m_eff: int,
                budget: int, sv_t: ServeTimes, cached: float = 0.0, frontend: tuple[int, float] | None = None,
                ) -> tuple[LoadSummary, tuple[float, float, float, float] | None]:
    """The load summary and, when the load is not simply ``batch`` users, its (TTFT, TPOT, E2E,
    tok/s per replica); ``frontend`` (API servers, ms per request) adds their wait and cap
    (:func:`studio.engine.features.frontend.with_frontend`)."""
    from studio.engine.serving.load import closed_loop, open_loop
    from studio.engine.step.iteration import IterationModel

    ld = wl.load
    dp = layout.replicas  # prefill CP: cp replicas serve one request stream together
    cap = float(max(1, min(wl.max_batch, max_seqs)))
    im = IterationModel(lc, c)
    sat = None
    if ld.mode == "rate" or batch != cap:
        sat = closed_loop(im, np.array([cap]), np.array([float(m_eff)]), wl.isl, wl.osl, budget, cached=cached)
        sat_rate = float(sat.requests_per_s[0]) * dp
    else:  # the plan's own closed loop (serve_times) already runs at the saturating batch
        sat_rate = float(sv_t.tokens_per_s_replica[0]) / wl.osl * dp
    figures = None
    note = ""
    busy_share = 1.0  # share of the replicas that have work (a closed loop of fewer users than replicas)
    if ld.mode == "rate":
        assert ld.rate_per_s is not None  # Workload refuses mode 'rate' without a rate
        state, _ = open_loop(im, float(ld.rate_per_s) / dp, m_eff, wl.isl, wl.osl, budget, cap,
                             poisson=ld.arrival == "poisson", saturation=sat, cached=cached)
        if bool(state.saturated[0]):
            note = (f"{ld.rate_per_s:g} req/s is at or above saturation ({sat_rate:.3g} req/s): the queue grows "
                    "without bound, so TTFT has no steady state; figures shown are at saturation")
    elif ld.mode == "concurrency" and ld.concurrency is not None:
        # fewer users than replicas keep only that many replicas busy, each with one user
        busy = min(float(dp), float(ld.concurrency))
        per_replica = ld.concurrency / busy
        state = closed_loop(im, np.array([per_replica]), np.array([float(m_eff)]), wl.isl, wl.osl,
                            budget, running_cap=np.array([cap]), cached=cached)
        busy_share = busy / dp
        if per_replica > cap:
            note = (f"{per_replica:.0f} users per replica but {cap:.0f} can run at once: the rest wait, "
                    "which TTFT includes")
        elif busy < dp:
            note = f"{ld.concurrency} users keep {busy:.0f} of the {dp} replicas busy; the others idle"
    else:
        state = None
    if state is not None:
        # a served request also spends the front end's time (HTTP, tokenising, streaming) before its
        # first token reaches the client
        front = c.request_overhead_ms
        figures = (float(state.ttft_ms[0]) + front, float(state.tpot_ms[0]), float(state.e2e_ms[0]) + front,
                   float(state.output_tokens_per_s[0]) * busy_share)
        users, running = float(state.concurrency[0]), float(min(state.concurrency[0], cap))
        dec, pre = float(state.decode_seqs[0]), float(state.prefill_tokens[0])
        it, bound = float(state.iteration_ms[0]), bool(state.budget_bound[0])
        rate = float(state.requests_per_s[0]) * dp * busy_share
        saturated = bool(state.saturated[0])
        if frontend is not None:
            from studio.engine.features.frontend import with_frontend

            figures, rate, fe_note = with_frontend(figures, rate, None if ld.mode == "rate" else users, frontend)
            saturated = saturated or (bool(fe_note) and ld.mode == "rate")
            note = "; ".join(n for n in (note, fe_note) if n)
        arrival = state.arrival if not saturated else None
    else:
        users = running = float(batch)
        dec, pre = float(sv_t.decode_seqs[0]), float(sv_t.prefill_tokens[0])
        it, bound = float(sv_t.iteration_ms[0]), bool(sv_t.budget_bound[0])
        rate = float(sv_t.tokens_per_s_replica[0]) / wl.osl * dp
        saturated = False
        arrival = None
        if ld.mode == "offline":
            note = f"{ld.num_requests:,} requests queued at t = 0, {batch} running per replica"
    if ld.mode != "rate":
        # a closed loop issues its next request when one ends: it saturates at users / request time
        # (one user at one request per end-to-end time), whatever more the KV cache could run
        sat_rate = rate
    if frontend is not None:
        from studio.engine.features.frontend import capacity_per_s

        sat_rate = min(sat_rate, capacity_per_s(*frontend))
    summary = LoadSummary(
        mode=ld.mode, definition=_DEFINITIONS[ld.mode], users=users, running=running, decode_seqs=dec,
        prefill_tokens_per_iteration=pre, iteration_ms=it, token_budget=budget, budget_bound=bound,
        request_rate_per_s=rate, saturation_rate_per_s=sat_rate, saturated=saturated, note=note,
        asked_rate_per_s=float(ld.rate_per_s) if ld.mode == "rate" and ld.rate_per_s is not None else None,
        arrival_idle_share=arrival.idle_share if arrival else None,
        arrival_wait_ms=arrival.wait_ms if arrival else None,
        arrival_prompts=arrival.prompts if arrival else None,
    )
    return summary, figures


def _assumptions(ctx: PlanContext) -> tuple[str, ...]:
    out = [
        "iteration-level continuous batching: each iteration carries the decode token of every running sequence plus "
        "prompt chunks within the token budget; stages overlap successive micro-batches",
        "TTFT = waiting for token budget + the iterations that carry the new prompt (under a request rate: "
        "+ the end of the iteration in progress unless the engine is idle, sharing the first iteration with "
        "the prompts that arrived during it)",
        "TPOT = the mean iteration under the load (prefill interference included): max(Σ stages, M × slowest stage)",
        f"decode context averaged at isl + osl/2 = {ctx.project.workload.isl + ctx.project.workload.osl / 2:,.0f} tokens",
        "two TP all-reduces per layer; PP hands full hidden states from each TP rank to the next stage",
    ]
    lay = ctx.lc.layout
    if lay.cp > 1:
        out.append(
            f"context parallelism CP={lay.cp} ({lay.cp_mode}): each GPU keeps 1/{lay.cp} of every sequence's KV cache; "
            + ("queries all-gathered and partial outputs + log-sum-exp reduce-scattered per layer (vLLM DCP ag_rs)"
               if lay.cp_mode == "decode" else
               f"prompts split {lay.cp} ways with ring passes of KV blocks behind the attention; "
               f"{lay.replicas} independent replicas of {lay.dp}")
        )
    if ctx.micro_batches != ctx.lc.layout.micro_batches:
        out.append(f"micro-batches capped at the batch: {ctx.lc.layout.micro_batches} → {ctx.micro_batches}")
    return tuple(out)
