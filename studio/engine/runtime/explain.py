"""``plan --explain``'s engine section: the profile values behind what differs between engines.

:func:`engine_explanation` names, for one plan, the profile and version range, the token budget,
the running-sequence limit, how the KV cache was sized and from which fraction, the CUDA-graph size
the plan's decode batch runs at (and what padding costs), and the scheduler's CPU time at that batch
with the part the GPU step does not hide — each with the engine source the profile cites.
:func:`engine_line` is the one-line summary the plan's assumptions carry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from studio.core.units import GIB
from studio.engine.plan.views import Explanation, Term
from studio.engine.runtime.profile import GraphSizes, SchedulerCost
from studio.engine.runtime.setup import EngineSetup, engine_setup
from studio.engine.runtime.step import RuntimeStep

if TYPE_CHECKING:
    from studio.engine.plan.context import PlanContext

_MODES = {
    "total": "fraction × CUDA total − weights − activation peak − non-torch (− CUDA graphs where the version "
             "counts them) (vLLM gpu_memory_utilization)",
    "free": "fraction × (CUDA total − weights − activations − runtime) (TensorRT-LLM free_gpu_memory_fraction)",
    "static": "fraction × CUDA total − weights − TP communicators; activations and CUDA graphs in the reserve "
              "(SGLang mem_fraction_static)",
}


def _short(text: str, n: int = 160) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def engine_line(setup: EngineSetup) -> str:
    """``engine: vLLM profile 'vllm-v1-async' (versions 0.14.0 – <0.34.0), kernel table vllm 0.33.0``
    (+ the fallback note when the version had no profile of its own)."""
    p = setup.profile
    line = (f"engine: {setup.engine_name} profile '{p.id}' (versions {p.versions}; kernel table "
            f"{p.kernel_engine} {p.kernel_version}); {p.label}")
    if setup.resolved.note:
        line += f". Note: {setup.resolved.note}"
    return line


def tables_line(ctx: PlanContext) -> str:
    """``kernel tables used: h200, vLLM 0.24.0 (nearest to 0.33.0)`` — per distinct GPU of the
    plan's stages, the measured tables the step times came from."""
    ops = ctx.lc.ops or []
    used = dict.fromkeys(
        o.silicon.label + (f" ({o.silicon.substitute})" if o.silicon.substitute else "")
        + ("" if o.silicon.measured else f" for {o.silicon.gpu} (estimate)") for o in ops)
    return "kernel tables used: " + ("; ".join(used) if used else "none")


def _iteration_parts(ctx: PlanContext) -> tuple[float, float, float]:
    """(GPU step without the engine, + graph padding, + exposed scheduler) of a decode-only
    iteration of the plan's batch, ms."""
    from studio.engine.step.iteration import IterationModel

    lc, c = ctx.lc, ctx.constants
    rt = lc.runtime
    b = float(ctx.batch)
    m = float(ctx.micro_batches)
    wl = ctx.project.workload
    dctx = wl.isl + wl.osl / 2.0
    if rt is not None:
        # the per-step remainder this engine pays (step_overhead_us), the same in every part, so the
        # parts differ by the engine's own terms
        from studio.engine.step.iteration import step_overhead_us

        same = step_overhead_us(lc, c)
        c = c.with_overrides({"decode_step_overhead_us": same, "decode_step_overhead_sync_us": same})
    if rt is None:
        alone = float(IterationModel(lc, c).round_ms(0.0, b, dctx, wl.isl, m)[0])
        return alone, alone, alone
    quiet = RuntimeStep(scheduler=SchedulerCost(0.0, 0.0, 0.0, True, 0.0), graph_sizes=rt.graph_sizes,
                        padding=rt.padding)
    # the same GPU step (same graphs, same per-step remainder), costed once for the unpadded rows
    # and the padded ones, under both schedulers
    plain, padded, full = IterationModel(lc, c).rounds_under((quiet, rt), 0.0, b, dctx, wl.isl, m, bare=True)
    return float(plain[0]), float(padded[0]), float(full[0])


def _reserve_terms(ctx: PlanContext) -> tuple[Term, ...]:
    """What the engine keeps out of its KV cache on the tightest stage, each term with the source
    its profile cites (``memory.reserves``; none for a profile without them)."""
    p = engine_setup(ctx.project, ctx.lc.layout.tp, ctx.lc.layout.pp).profile
    if p.memory.reserves is None:
        return ()
    lc = ctx.lc
    s = int(ctx.pool.argmin())
    names = {"forward": "forward_profiled", "sampler": "sampler_bytes_per_logit", "non_torch": "non_torch_gib",
             "tp_communicators": "tp_comm_gib", "cuda_graphs": "graph_gib"}
    rows = [Term("reserve: activation peak", float(lc.activations[s]) / GIB, "GiB",
                 "; ".join(f"{k} {v / GIB:.2f} GiB" for k, v in lc.activation_phases.items())
                 + "; " + _short(p.source("memory.reserves.sampler_bytes_per_logit"
                                           if "sampler" in lc.activation_phases else "memory.reserves.forward_profiled")))]
    rows += [Term(f"reserve: {k}", v / GIB, "GiB", _short(p.source("memory.reserves." + names.get(k, k))))
             for k, v in lc.overhead_terms.items()]
    rows.append(Term("total the fraction applies to", float(lc.sized_bytes[s]) / GIB, "GiB",
                     "the CUDA runtime's total (GPU preset memory_visible_gib), less what is in use before the "
                     "engine reads it; " + _short(p.source("memory.reserves.before_start_gib"))))
    return tuple(rows)


def engine_explanation(ctx: PlanContext) -> Explanation:
    """The engine's share of one plan (value: the engine's ms per decode iteration: padding +
    exposed scheduler time)."""
    lay = ctx.lc.layout
    setup = engine_setup(ctx.project, lay.tp, lay.pp)
    p = setup.profile
    sv = ctx.project.serving
    plain, padded, full = _iteration_parts(ctx)
    mb = ctx.micro_batch_size
    rt = setup.step
    bench = rt.graph_sizes != setup.graph_sizes or rt.padding != p.defaults.graphs.padding
    size = GraphSizes.next_size(mb, rt.graph_sizes)
    pad_note = ("no CUDA graphs captured" if not rt.graph_sizes else
                f"decode micro-batch {mb} runs eagerly (largest captured size {rt.graph_sizes[-1]})"
                if size is None else
                f"decode micro-batch {mb} runs as the captured size {size}" if rt.padding else
                f"decode micro-batch {mb} {'uses its graph' if size == mb else 'has no graph of its size (no padding)'}")
    graph_src = "defaults.bench_cuda_graphs.ranges" if bench else "defaults.cuda_graphs.ranges"
    sched = rt.scheduler
    slow = p.host_slowdown.at(*_device_of(ctx)) if p.host_slowdown is not None else None
    slow_note = (f"; ×{slow:g} on this GPU's host CPU ({_short(p.source('scheduler.host_slowdown'))})"
                 if slow and slow != 1.0 else "")
    cpu = float(sched.cpu_us(ctx.batch))
    budget_src = p.source("defaults.max_num_batched_tokens")
    terms = (
        Term("token budget", ctx.load.token_budget if ctx.load is not None else setup.token_budget, "tokens",
             "the project's max_num_batched_tokens" if sv.max_num_batched_tokens else _short(budget_src)),
        Term("running-sequence limit", float(setup.max_num_seqs or 0), "sequences",
             _short(p.source("defaults.max_num_seqs")) if setup.max_num_seqs else "none: the KV cache decides"),
        Term("memory fraction", sv.gpu_memory_utilization, "",
             f"the engine's default here {setup.default_fraction:g}; {_short(p.source('memory.fraction'))}"),
        Term("KV pool (tightest stage)", float(ctx.pool.min()) / GIB, "GiB", _MODES[setup.memory_mode]),
        Term("CUDA-graph memory before the KV cache", 1.0 if setup.graphs_in_budget else 0.0, "",
             _short(p.source("memory.reserves.graphs_counted_from" if p.memory.reserves is not None
                             and p.memory.reserves.graphs_counted_from else "memory.graphs_in_budget"))),
        *_reserve_terms(ctx),
        Term("CUDA-graph sizes captured", float(len(rt.graph_sizes)), "sizes",
             ("as trtllm-bench configures them under offline load, " if bench else "")
             + f"up to {rt.graph_sizes[-1] if rt.graph_sizes else 0}, "
             f"padding {'on' if rt.padding else 'off'}; {pad_note}"),
        Term("graph padding", padded - plain, "ms per decode iteration", _short(p.source(graph_src))),
        Term("scheduler CPU", cpu / 1e3, "ms per iteration",
             f"{sched.cpu_base_us:g} µs + {sched.cpu_per_seq_us + sched.detokenize_per_seq_us:g} µs × "
             f"{ctx.batch} sequences{slow_note}; {_short(p.source('scheduler.cpu_per_seq_us'))}"),
        Term("scheduler exposed", full - padded, "ms per decode iteration",
             ("overlapped with the GPU step: a residual plus what outlasts it; " if sched.overlap else
              "not overlapped: the GPU waits for all of it; ") + _short(p.source("scheduler.overlap"))),
        Term("pipeline host time", float(sched.pipeline_exposed_us(ctx.batch, ctx.micro_batches)) / 1e3
             if lay.pp > 1 else 0.0, "ms per decode iteration",
             (f"{sched.pipeline_per_seq_us:g} µs × {ctx.batch} sequences × {ctx.micro_batches} micro-batch "
              f"iterations, not hidden by the pipeline loop; {_short(p.source('scheduler.pipeline_per_seq_us'))}"
              if lay.pp > 1 else "PP = 1")
             if sched.pipeline_per_seq_us else "none: this engine's pipeline loop hides its host work"),
        Term("chunked prefill", 1.0 if p.defaults.chunked_prefill else 0.0, "", _short(p.source("defaults.chunked_prefill"))),
        Term("prefix caching", 1.0 if p.defaults.prefix_caching else 0.0, "",
             "on in the engine; the plan assumes no prefix hits"
             if p.defaults.prefix_caching else "off in the engine"),
    )
    notes = (engine_line(setup), f"profile file {p.file}", tables_line(ctx))
    return Explanation(
        "engine", full - plain, "ms per decode iteration",
        "what the serving engine adds to a decode iteration: CUDA-graph padding of the batch + the scheduler CPU "
        "time the GPU step does not hide; its defaults set the token budget, the batch limit and the KV cache",
        terms, notes,
    )


def _device_of(ctx: PlanContext) -> tuple[str, float, int]:
    """(GPU id, GiB, TP) the engine set-up of a plan was sized on (the cluster's smallest GPU)."""
    spec = min(ctx.project.cluster.gpu_specs.values(), key=lambda g: g.memory_bytes)
    return spec.id, spec.memory_bytes / GIB, ctx.lc.layout.tp


def engine_setup_of(ctx: PlanContext) -> EngineSetup:
    """:func:`engine_setup` of a plan's project and layout."""
    return engine_setup(ctx.project, ctx.lc.layout.tp, ctx.lc.layout.pp)


__all__ = ["engine_explanation", "engine_line", "engine_setup_of"]
