"""The "why" of every headline figure: formula in words and the terms that went into it."""

from __future__ import annotations

from studio.core.units import GIB, MIB
from studio.engine.plan.context import PlanContext
from studio.engine.plan.views import Explanation, Term
from studio.engine.step.speculative import METHOD_NAMES, Drafting


def _peak_stage(ctx: PlanContext) -> int:
    lc = ctx.lc
    return int((lc.weights + lc.activations + lc.overhead + ctx.kv_batch_bytes).argmax())


def _reserve_explanations(ctx: PlanContext, s: int) -> tuple[Explanation, Explanation]:
    """The activation peak and the fixed terms the engine keeps out of its KV cache, each with the
    engine profile's source (``memory.reserves`` of presets/engines), or the cost constants'
    generic terms where the profile has none."""
    from studio.engine.runtime.setup import engine_setup

    lc, c = ctx.lc, ctx.constants
    act, over = float(lc.activations[s]) / GIB, float(lc.overhead[s]) / GIB
    setup = engine_setup(ctx.project, lc.layout.tp, lc.layout.pp)
    p = setup.profile
    if p.memory.reserves is None:
        return (Explanation(
            "memory.activations", act, "GiB",
            "activation_factor × max_num_batched_tokens × (hidden + MLP width / TP) × 2 B (+ fp32 logits on the last stage)",
            (Term("activation_factor", c.activation_factor, "", "fitted to vLLM V1 profiling (memory.md M13)"),
             Term("max_num_batched_tokens", c.max_num_batched_tokens, "tokens")),
        ), Explanation(
            "memory.overhead", over, "GiB",
            "CUDA context + CUDA graphs + NCCL buffers (when the GPU is in a group)",
            tuple(Term(k, v / GIB, "GiB") for k, v in lc.overhead_terms.items()),
            ("figures from reference/memory.md M4, M5, M13",),
        ))
    src = p.sources
    key = "memory.reserves."
    where = f"{p.file}, profile '{p.id}'"
    rule = p.memory.reserves
    light = rule.light_sampler_from is not None and setup.sampler_bytes_per_logit == rule.light_sampler_bytes_per_logit
    sampler_key = "light_sampler_bytes_per_logit" if light else "sampler_bytes_per_logit"
    phases = tuple(Term(k, v / GIB, "GiB", (f"{setup.sampler_bytes_per_logit:g} B per logit; " if k == "sampler" else "")
                        + src.get(key + ("forward_profiled" if k == "forward" else sampler_key), ""))
                   for k, v in lc.activation_phases.items())
    names = {"non_torch": "non_torch_gib", "tp_communicators": "tp_comm_gib", "cuda_graphs": "graphs_counted_from"}
    return (Explanation(
        "memory.activations", act, "GiB",
        f"{setup.engine_name}'s profiled activation peak: the larger of a forward of the token budget "
        "(tokens × (2·hidden + 3·MLP width / TP + top_k·hidden) × 2 B) and, on the last stage, its sampler run "
        "(sampler_bytes_per_logit × min(max_num_seqs, budget) × vocabulary); 0 where the engine keeps "
        "activations in the reserve its memory fraction leaves",
        phases, (f"reserve terms from {where}",),
    ), Explanation(
        "memory.overhead", over, "GiB",
        f"what {setup.engine_name} counts outside its tensors before sizing the KV cache: non-torch memory, the TP "
        "group's communicators (TP > 1 on NVLink) and CUDA graphs where the version counts them first",
        tuple(Term(k, v / GIB, "GiB", src.get(key + names.get(k, k), "")) for k, v in lc.overhead_terms.items()),
        (f"reserve terms from {where}",
         f"the memory fraction applies to {float(lc.sized_bytes[s]) / GIB:.2f} GiB per GPU, the CUDA runtime's "
         "total (GPU preset memory_visible_gib), not the driver's"),
    ))


def explanations(ctx: PlanContext) -> dict[str, Explanation]:
    """Explanations keyed by figure name (see docs/engine.md)."""
    lc, st, c = ctx.lc, ctx.st, ctx.constants
    lay, model, wl = lc.layout, ctx.project.model, ctx.project.workload
    s = _peak_stage(ctx)
    sh = lc.shapes[s]
    out: dict[str, Explanation] = {}
    draft_w = lc.spec.weight_bytes if lc.spec is not None and s == len(lc.shapes) - 1 else 0.0
    out["memory.weights"] = Explanation(
        "memory.weights", (sh.weights + draft_w) / GIB, "GiB",
        f"Σ modules of stage {s} (layers {sh.first_layer}..{sh.first_layer + sh.layers - 1}): parameters / "
        f"shards × bytes; attention, MLP and shared experts split over TP={lay.tp}, routed experts over "
        f"max(TP, EP)={max(lay.tp, lay.ep)}, embeddings on the first stage and LM head on the last",
        tuple(Term(k, v / GIB, "GiB") for k, v in sh.weights_by_module.items() if v)
        + ((Term("draft", draft_w / GIB, "GiB", "speculative drafter, on the last stage"),) if draft_w else ()),
        (f"precision: {ctx.precision.describe()}",),
    )
    shared = ctx.prefix_cache["shared_tokens"] if ctx.prefix_cache and ctx.batch > 1 else 0.0
    out["memory.kv_cache"] = Explanation(
        "memory.kv_cache", float(ctx.kv_batch_bytes[s]) / GIB, "GiB",
        "batch × KV bytes per GPU of one sequence of isl+osl tokens"
        + (", less (batch − 1) × the shared system prompt's (its blocks are held once)" if shared else ""),
        (Term("batch", ctx.batch, "sequences"), Term("sequence", ctx.seq_len, "tokens"),
         Term("per sequence per GPU", float(ctx.seq_bytes[s]) / MIB, "MiB"))
        + ((Term("shared system prompt", shared, "tokens", "prefix caching holds it once"),) if shared else ()),
    )
    out["memory.activations"], out["memory.overhead"] = _reserve_explanations(ctx, s)
    kvl = (sh.kv_full + sh.kv_sliding) / max(sh.layers, 1)
    cp_note = (f" / CP {lay.cp} (every {lay.cp}-th token on each GPU of the "
               f"{'TP group' if lay.cp_mode == 'decode' else 'replica group'})") if lay.cp > 1 else ""
    out["kv_cache.bytes_per_token_per_gpu"] = Explanation(
        "kv_cache.bytes_per_token_per_gpu", ctx.kv_per_token_gpu, "B",
        "Σ stage layers of per-layer KV bytes per GPU (sliding layers capped at the window), averaged over isl+osl",
        (Term("per layer per GPU", kvl, "B",
              ("MLA latent (not split by TP)" if model.mla else
               f"2 × ceil({model.num_kv_heads} KV heads / TP {lay.tp}) × {model.head_dim} × "
               f"{ctx.project.serving.kv_dtype.value}") + cp_note),
         Term("layers on the stage", sh.layers, ""),
         Term("sliding layers", sh.sliding_layers, "", f"window {model.sliding_window}" if model.sliding_window else ""),
         Term("card formula (whole model)", model.card_kv_bytes_per_token(ctx.project.serving.kv_dtype), "B",
              "layers × hidden × 2 × bytes"),
         Term("GQA/MLA-aware (whole model)", model.kv_bytes_per_token(ctx.project.serving.kv_dtype), "B")),
    )
    out["kv_cache.capacity_tokens"] = Explanation(
        "kv_cache.capacity_tokens", ctx.capacity_tokens, "tokens",
        "min over stages of (usable − weights − activations − overhead) / KV bytes per token per GPU",
        (Term("usable", float(lc.usable[s]) / GIB, "GiB", f"{ctx.project.serving.gpu_memory_utilization:.0%} of "
              f"{float(lc.sized_bytes[s]) / GIB:.2f} GiB the engine sizes against"),
         Term("KV pool (tightest stage)", float(ctx.pool.min()) / GIB, "GiB"),
         Term("sequences of isl+osl", ctx.max_seqs, ""))
        + ((Term("context parallelism", lay.cp, "ways",
                 f"{lay.cp_mode}: each GPU keeps 1/{lay.cp} of every sequence, so the pool holds {lay.cp}× the tokens"),)
           if lay.cp > 1 else ()),
    )
    for phase, size, us in (("decode", ctx.micro_batch_size, st.ar_us_decode[0]),
                            ("prefill", ctx.micro_batch_size * wl.isl, st.ar_us_prefill[0])):
        msg = size * lc.hidden * c.activation_bytes
        terms = [Term("message", msg / 1024, "KiB", f"{size:,} tokens × hidden {lc.hidden} × 2 B")]
        notes: list[str] = []
        for cols in lc.allreduce[:1]:
            for col in cols[:1]:
                pick = col.pick(msg)
                for a in col.algos:
                    terms.append(Term(a.name, a.alpha_us + msg * a.us_per_byte, "µs",
                                      f"α {a.alpha_us:.1f} µs + bytes / {a.bandwidth_gbps:.0f} GB/s; bottleneck {a.bottleneck_kind}"))
                if col.measured is not None:  # the measured tables, not the α–β terms above, set the time
                    notes.append(f"timed from the tables: {col.measured.provenance}")
                elif pick:
                    notes.append(f"chosen: {pick.name} — {pick.note}")
        notes.append("two all-reduces per layer (after attention and after the MLP)")
        out[f"comm.allreduce_{phase}"] = Explanation(
            f"comm.allreduce_{phase}", float(us), "µs",
            "min over algorithms of (α + message / bottleneck bandwidth), worst TP group",
            tuple(terms), tuple(notes) if lay.tp > 1 else ("TP = 1: no all-reduce",),
        )
    out["comm.cp"] = _cp_explanation(ctx)
    out["comm.p2p"] = Explanation(
        "comm.p2p", float(st.p2p_us_decode[0]), "µs",
        "α (launch + hop latencies) + hidden states of the micro-batch / bandwidth of the link joining the stages",
        (Term("prefill hand-off", float(st.p2p_us_prefill[0]), "µs"),
         Term("decode hand-off", float(st.p2p_us_decode[0]), "µs")),
        ("PP = 1: no hand-off",) if lay.pp == 1 else (),
    )
    out["comm.moe_exchange"] = _moe_exchange(ctx)
    out["pipeline.bubble"] = Explanation(
        "pipeline.bubble", ctx.bubble, "fraction", "(P − 1) / (M + P − 1)",
        (Term("P", lay.pp, "stages"), Term("M", ctx.micro_batches, "micro-batches")),
    )
    ld = ctx.load
    load_terms: tuple[Term, ...] = ()
    load_notes: tuple[str, ...] = ()
    if ld is not None:
        load_terms = (
            Term("load", ld.users, "requests per replica", ld.mode),
            Term("decoding per iteration", ld.decode_seqs, "sequences"),
            Term("prompt tokens per iteration", ld.prefill_tokens_per_iteration, "tokens"),
            Term("token budget", ld.token_budget, "tokens", "bound" if ld.budget_bound else "not binding"),
        )
        if ld.arrival_idle_share is not None:
            load_terms += (
                Term("arrivals finding the engine idle", ld.arrival_idle_share, "fraction",
                     "exp(−λ · E2E): no request in the system, so the prompt runs at once and alone"),
                Term("wait for the iteration in progress", ld.arrival_wait_ms or 0.0, "ms",
                     "E[T²] / 2E[T] of the iterations (prompt-carrying ones are the long ones), averaged over all arrivals "
                     "(an idle engine has none)"),
                Term("prompts in its first iteration", ld.arrival_prompts or 1.0, "prompts",
                     "its own + those that arrived during the same iteration, within the token budget"),
            )
        load_notes = (ld.definition,) + ((ld.note,) if ld.note else ())
    dc = st.decode_stage[:, 0] + st.decode_p2p[:, 0]
    out["latency.ttft"] = Explanation(
        "latency.ttft", ctx.ttft_ms, "ms",
        "waiting for token budget (and, under a request rate, for a free sequence slot) + the scheduler "
        "iterations that carry the new prompt's chunks beside the running sequences' decode tokens "
        "(under a request rate: an idle engine starts the request at once and alone, a busy one first ends "
        "the iteration in progress — the length-biased one, E[T²]/2E[T] — and prefills the prompts that "
        "arrived during it together) (+ the front end's request overhead when requests are served at a "
        "rate or concurrency)",
        (Term("prompt", wl.isl, "tokens"),) + load_terms
        + ((Term("request overhead", ctx.constants.request_overhead_ms, "ms",
                 "HTTP, tokenising, streaming; request_overhead_ms " + (
                     "still fitted — " if ctx.constants.sources.get("request_overhead_ms", "").startswith("fitted")
                     else "") + ctx.constants.sources.get("request_overhead_ms", "")),)
           if ld is not None and ld.mode in ("rate", "concurrency") else ())
        + _kernel_terms(ctx, 0, 0.0, float(wl.isl)),
        ("compute = Σ kernels of the prompt pass (GEMMs at m = the prompt's tokens, MoE, causal attention), each "
         "timed from measured kernel tables (the source of each is on its line) + fixed costs",)
        + load_notes,
    )
    out["latency.tpot"] = Explanation(
        "latency.tpot", ctx.tpot_ms, "ms",
        "the mean scheduler iteration under the load: every decoding sequence's token plus the prompt chunks "
        "of arriving requests (prefill interference), max(Σ stages, M × slowest stage)",
        (Term("decode-only step", float(max(dc.sum(), ctx.micro_batches * dc.max())), "ms",
              f"micro-batches of {ctx.micro_batch_size} sequences, no prompt"),)
        + tuple(Term(f"stage {i} decode", float(v), "ms") for i, v in enumerate(dc))
        + (Term("M", ctx.micro_batches, "micro-batches"),
           Term("all-reduce share per step", float(st.decode_allreduce[:, 0].sum()), "ms"))
        + ((Term("mean iteration", ld.iteration_ms, "ms", "what TPOT is"),) if ld is not None else ())
        + _kernel_terms(ctx, int(dc.argmax()), float(ctx.micro_batch_size), 0.0),
        ("decode step = Σ kernels at the step's real sizes — GEMMs at m = the micro-batch's tokens (a small-m "
         "GEMM costs its weight bytes once), the MoE layer over the experts its tokens touch, paged attention "
         "over every running sequence's KV — each timed from measured kernel tables (the source of each is on "
         "its line) + fixed costs per iteration and layer",) + load_notes,
    )
    if lc.spec is not None:
        _speculative(out, ctx, dc)
    out["throughput"] = Explanation(
        "throughput", ctx.tokens_per_s, "output tok/s",
        "DP × requests in the system × osl / request latency (Little's law); under a request rate below "
        "saturation, rate × osl",
        (Term("DP", lay.dp, "replicas"), Term("batch", ctx.batch, "sequences"), Term("osl", wl.osl, "tokens"),
         Term("request latency", ctx.request_ms, "ms"), Term("TPOT", ctx.tpot_ms, "ms"))
        + ((Term("saturation", ld.saturation_rate_per_s, "req/s"),) if ld is not None else ()),
        ("0 when the layout does not fit",) if not ctx.fits else load_notes,
    )
    if ctx.project.serving.features.any:
        out["engine_features"] = _features(ctx)
    from studio.engine.kv_tiers.explain import prefix_cache_explanation

    if (pc := prefix_cache_explanation(ctx)) is not None:
        out["prefix_cache"] = pc
    from studio.engine.runtime.explain import engine_explanation

    out["engine"] = engine_explanation(ctx)
    out["cost"] = Explanation(
        "cost", ctx.usd_per_hour / (ctx.tokens_per_s * 3600) * 1e6 if ctx.tokens_per_s else float("inf"),
        "USD per million output tokens", "Σ GPU prices per hour / (output tok/s × 3600) × 1e6",
        (Term("cluster price", ctx.usd_per_hour, "USD/h"), Term("output", ctx.tokens_per_s, "tok/s")),
    )
    return out


def _features(ctx: PlanContext) -> Explanation:
    """How the engine features of the project (``serving.features``) enter the figures
    (:func:`studio.engine.features.explain.features_explanation`)."""
    from studio.engine.features.explain import features_explanation

    return features_explanation(ctx)


def _kernel_terms(ctx: PlanContext, stage: int, decode_seqs: float, prompt_tokens: float) -> tuple[Term, ...]:
    """One term per kernel of ``stage`` for a step of ``decode_seqs`` decoding sequences (at the
    mean decode context) and ``prompt_tokens`` prompt tokens, each naming its measured table or
    estimate; then the fixed costs, which are fitted and say so."""
    from studio.engine.step.ops import breakdown

    lc, c, wl = ctx.lc, ctx.constants, ctx.project.workload
    if lc.ops is None:
        return ()
    sh = lc.shapes[stage]
    route = max(1, lc.layout.ep // lc.layout.tp) if lc.num_experts else 1
    ops = breakdown(lc.ops[stage], sh, decode_seqs, wl.isl + wl.osl / 2.0, prompt_tokens, float(wl.isl),
                    route, lc.window)
    terms = tuple(Term(f"stage {stage} {name}", ms, "ms", prov) for name, ms, prov in ops)
    def still(name: str) -> str:
        src = c.sources.get(name, "")
        return ("still fitted — " if src.startswith("fitted") else "") + src

    from studio.engine.step.iteration import step_overhead_name, step_overhead_us

    step_us, name = step_overhead_us(lc, c), step_overhead_name(lc)
    what = ("the host loop of an engine that neither cites nor overlaps it, and the GPU work outside the layers"
            if name == "decode_step_overhead_sync_us" else
            "the GPU work outside the layers (embedding, final norm, sampling); the host time is the engine's "
            "scheduler (see 'engine')")
    out = terms + (Term(f"stage {stage} fixed per step", step_us / 1e3, "ms", f"{name} ({what}): " + still(name)),)
    if c.layer_overhead_us:  # 0 by default: a layer's non-GEMM kernels are timed above
        out += (Term(f"stage {stage} fixed per layer × {sh.layers}", sh.layers * c.layer_overhead_us / 1e3, "ms",
                     "layer_overhead_us: " + still("layer_overhead_us")),)
    return out


def _speculative(out: dict[str, Explanation], ctx: PlanContext, dc) -> None:
    """TPOT with speculative decoding: the step (drafter's k passes + verification of k + 1 tokens
    per sequence) divided by the tokens it yields; the figures both ways are shown."""
    lc = ctx.lc
    sp = lc.spec
    assert isinstance(sp, Drafting)  # the only drafter the step model is given
    step = float(max(dc.sum(), ctx.micro_batches * dc.max()))
    tpot = out["latency.tpot"]
    out["latency.tpot"] = Explanation(
        tpot.figure, tpot.value, tpot.unit,
        tpot.formula + f"; with speculative decoding ({METHOD_NAMES[sp.spec.method]}) divided by the "
        f"{sp.tokens_per_step:.2f} tokens each step yields per sequence",
        tpot.terms + (Term("tokens per step E", sp.tokens_per_step, "tokens", sp.accept.source),
                      Term("decode step / E", step / sp.tokens_per_step, "ms", "the decode-only TPOT")),
        tpot.notes,
    )
    terms = [
        Term("k (tokens proposed per step)", sp.k, "tokens"),
        Term("verified per sequence", sp.verify_tokens, "tokens", "k + 1, through the whole model"),
        Term("tokens per step E", sp.tokens_per_step, "tokens", sp.accept.source),
        Term("decode step", step, "ms", f"drafter + verification, micro-batches of {ctx.micro_batch_size} sequences"),
        Term("TPOT without load", step / sp.tokens_per_step, "ms", "decode step / E"),
        *((Term("iteration under the load", ctx.load.iteration_ms, "ms", "TPOT = this / E"),)
          if ctx.load is not None else ()),
        Term("draft weights per GPU", sp.weight_bytes / GIB, "GiB", "last stage"),
        Term("draft KV per token per GPU", sp.kv_per_token, "B"),
    ]
    if sp.accept.alpha is not None:
        terms.insert(3, Term("acceptance α", sp.accept.alpha, "per token"))
    out["speculative"] = Explanation(
        "speculative", sp.tokens_per_step, "tokens per step",
        "E = (1 − α^(k+1)) / (1 − α) for a per-token acceptance α (1 + Σ p_i for per-position rates); each "
        "step runs the drafter k times and verifies k + 1 tokens per sequence in one pass of the model",
        tuple(terms),
        (f"drafter: {METHOD_NAMES[sp.spec.method]}",
         "verification reads the weights and each sequence's KV once: nearly free while decode is memory-bound "
         "(small batch), k + 1 times the compute once it is compute-bound, so the gain shrinks with batch",),
    )


def _cp_explanation(ctx: PlanContext) -> Explanation:
    """Why context parallelism costs what it does: the per-layer exchange, its bytes, its link."""
    lc, st, lay = ctx.lc, ctx.st, ctx.lc.layout
    cpx = lc.cp
    if cpx is None:
        return Explanation("comm.cp", 0.0, "µs", "no context parallelism (CP = 1)", (),
                           ("the KV cache of each sequence sits whole on every GPU that holds its heads",))
    link, kind, algo = cpx.bottleneck()
    mb = ctx.micro_batch_size
    n = cpx.degree
    terms = [
        Term("CP", n, "GPUs", f"{lay.cp_mode} context parallelism"),
        Term("KV per token per layer per GPU before the split", cpx.kv_layer_bytes, "B"),
        Term("query per token per GPU", cpx.q_bytes, "B"),
        Term("partial output + log-sum-exp per token per GPU", cpx.out_bytes, "B"),
        Term("decode exchange, one layer", float(st.cp_us_decode[0]), "µs",
             f"micro-batch of {mb} sequences; slowest hop {kind or 'none'} ({link or '-'}), {algo}"),
        Term("prefill exchange, one layer (exposed)", float(st.cp_us_prefill[0]), "µs"),
        Term("per decode step, all stages", float(st.decode_cp[:, 0].sum()), "ms"),
    ]
    if lay.cp_mode == "decode":
        formula = ("per full-attention layer: all-gather of the queries over the CP ranks (CP × query bytes) + "
                   "all-gather of the log-sum-exp + reduce-scatter of the partial outputs (CP × output bytes) for "
                   "each decoding token, and an all-gather of the prompt chunk's KV shards for prompt tokens")
        notes = ("decode CP adds no GPUs: attention FLOPs per GPU stay (CP × the heads over 1/CP of the tokens); "
                 "KV bytes stored and read per GPU fall by CP",
                 "vLLM --decode-context-parallel-size, dcp_comm_backend ag_rs; SGLang --dcp-size; "
                 "TensorRT-LLM Helix (cp_type HELIX)")
    else:
        formula = ("per full-attention layer: (CP − 1) ring passes of each GPU's KV block (prompt / CP tokens) minus "
                   "the block attention they hide behind, and an all-gather of the partial outputs and log-sum-exp "
                   "of each decoding token")
        notes = (f"{n} replicas serve one sequence: prompts and contexts split {n} ways, dense layers of a decode "
                 f"step replicated; {lay.replicas} independent replicas of DP {lay.dp}",
                 "vLLM --prefill-context-parallel-size (with --decode-context-parallel-size over the PCP axis); "
                 "TensorRT-LLM context_parallel_size with cp_type RING")
    return Explanation("comm.cp", float(st.cp_us_decode[0]), "µs", formula, tuple(terms), notes)


def _moe_exchange(ctx: PlanContext) -> Explanation:
    """How the MoE layers move tokens between the ranks of an EP group wider than TP: an all-to-all,
    or (TensorRT-LLM 1.0 with attention DP) an all-gather of every rank's tokens and a
    reduce-scatter of the outputs; the rule and its source come from the engine profile."""
    from studio.engine.runtime.explain import engine_setup_of

    lc = ctx.lc
    cols = [col for cols in lc.alltoall for col in cols if col.algos]
    if not cols:
        return Explanation("comm.moe_exchange", 0.0, "µs", "no exchange", (),
                           ("no expert-parallel group wider than TP: the experts' outputs are summed in the TP "
                            "all-reduce",))
    mb = float(ctx.micro_batch_size)
    msg = mb * lc.a2a_bytes_per_token
    col = max(cols, key=lambda x: float(x.time_us(msg)))
    algo = col.pick(msg) or col.algos[0]
    t = float(col.time_us(msg))
    moe_layers = max(sh.moe_layers for sh in lc.shapes)
    gathered = algo.name.startswith("all-gather")
    terms = (
        Term("EP group", len(col.group), "GPUs"),
        Term("tokens per rank", mb, "tokens", "the decode micro-batch"),
        Term("bytes per token per pass", lc.a2a_bytes_per_token, "B",
             "half of (every rank's quantized tokens and routing gathered + the outputs reduce-scattered)"
             if gathered else "the distinct remote EP ranks a token's experts sit on × hidden × dispatch bytes"),
        Term("one pass", t, "µs", f"α {algo.alpha_us:.1f} µs + bytes / {algo.bandwidth_gbps:.0f} GB/s; "
                                   f"bottleneck {algo.bottleneck_kind}"),
        Term("per MoE layer (two passes)", 2 * t, "µs", f"×{moe_layers} MoE layers on the busiest stage"),
    )
    setup = engine_setup_of(ctx)
    notes = [f"{algo.name}: {algo.note}"]
    src = setup.profile.source("moe.dp_exchange")
    if src:
        notes.append(f"rule of {setup.engine_name} profile '{setup.profile.id}' ({setup.profile.versions}): {src}")
    formula = ("all-gather of every attention-DP rank's tokens before the local experts + reduce-scatter of the "
               "outputs, each a ring over the EP group" if gathered else
               "dispatch + combine all-to-all of each token to the EP ranks holding its experts")
    return Explanation("comm.moe_exchange", 2 * t, "µs", formula, terms, tuple(notes))
