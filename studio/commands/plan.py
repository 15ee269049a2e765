"""``layout-studio plan``: evaluate one layout and print every figure (table or ``--json``)."""

from __future__ import annotations

import argparse

from studio.commands.options.project_args import model_size_note, project_from_args
from studio.commands.options.project_flags import add_load_args, add_project_args, add_runtime_args
from studio.commands.output import fmt, format_pairs, print_json
from studio.core.project import Project


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``plan`` command."""
    p = subparsers.add_parser(
        "plan",
        help="memory, communication, latency, throughput and cost of one layout",
        description="Evaluate one layout of a project. Flags override the PROJECT file's values; "
        "without a PROJECT file the bundled example is the starting point.",
    )
    add_project_args(p, layout=True)
    add_runtime_args(p)
    add_load_args(p)
    from studio.commands.options.disagg_args import add_disagg_args

    add_disagg_args(p)
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object (the scripting contract)")
    out.add_argument("--explain", action="store_true", help="also print the breakdown of every figure")
    out.add_argument("--compare-engines", action="store_true",
                     help="the layout on vLLM, TensorRT-LLM and SGLang side by side (each with its own profile "
                          "and default memory fraction)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the project, evaluate it, print the result."""
    project = project_from_args(args)
    from studio.commands.options.disagg_args import serving_mode

    mode = serving_mode(args, project)
    if mode.disaggregated:
        return _run_disagg(args, project.replace(serving_mode=mode))
    from studio.engine import evaluate

    if args.compare_engines:
        return _compare_engines(args, project)
    plan = evaluate(project)
    from studio.service.over_lengths import over_lengths

    spread = over_lengths(project, plan)
    if args.json:
        from studio.commands.load_text import summary_json

        data = plan.to_json()
        data["load"] = summary_json(plan.load, project.workload.load)
        if spread is not None:
            data["over_lengths"] = spread.to_json()
        if "speculative" in plan.explanations:  # only with serving.speculative: E, k, step, TPOT
            data["speculative"] = explanation_json(plan.explanations["speculative"])
        if args.explain:
            data["explanations"] = {k: explanation_json(e) for k, e in plan.explanations.items()}
        print_json(data)
    else:
        text = format_plan(project, plan, explain=args.explain, model_note=model_size_note(args, project))
        if spread is not None:
            text = _with_lengths_section(text, project, plan, spread)
        print(text)
    return 0


def _compare_engines(args: argparse.Namespace, project: Project) -> int:
    """``plan --compare-engines``: one row per serving engine for the project's layout, then the
    profile values that differ between the engines (the why of the differences)."""
    from studio.commands.output import format_table
    from studio.service.explore.engine_compare import compare_engines, differing

    rows = compare_engines(project, details=True)
    diff = differing(rows)
    if args.json:
        print_json({"layout": project.layout.label, "differing_profile_values": diff, "engines": [
            {"engine": r.engine, "profile": r.profile, "memory_fraction": r.memory_fraction, "fits": r.plan.fits,
             "batch": r.plan.batch, "kv_capacity_tokens": r.plan.kv_capacity_tokens, "ttft_ms": r.plan.ttft_ms,
             "tpot_ms": r.plan.tpot_ms, "output_tokens_per_s": r.plan.output_tokens_per_s,
             "note": r.note,
             "profile_values": {v.name: {"value": v.value, "unit": v.unit, "source": v.source} for v in r.values}}
            for r in rows]})
        return 0
    headers = ["engine", "profile", "memory fraction", "fits", "batch", "KV tokens", "TTFT ms", "TPOT ms", "tok/s"]
    table = [[r.name, r.profile, f"{r.memory_fraction:g}", "yes" if r.plan.fits else "NO", fmt(r.plan.batch),
              fmt(r.plan.kv_capacity_tokens), fmt(r.plan.ttft_ms), fmt(r.plan.tpot_ms), fmt(r.plan.output_tokens_per_s)]
             for r in rows]
    text = (f"{project.layout.label} on each serving engine (`plan --runtime R --explain` for the why)\n"
            + format_table(headers, table, right={2, 4, 5, 6, 7, 8}))
    if diff:
        values = []
        for name in diff:
            cells = [r.value(name) for r in rows]
            unit = next((v.unit for v in cells if v is not None), "")
            values.append([f"{name} ({unit})" if unit else name] + [_profile_cell(name, v) for v in cells])
        text += ("\n\nProfile values that differ between the engines\n"
                 + format_table(["value"] + [r.name for r in rows], values, right={1, 2, 3}))
    print(text)
    return 0


def _profile_cell(name: str, v) -> str:
    """A profile value of ``plan --compare-engines``: on/off for switches, "none" for no limit."""
    if v is None:
        return "-"
    if name in ("chunked prefill", "prefix caching"):
        return "on" if v.value else "off"
    if name == "running-sequence limit" and not v.value:
        return "none"
    return fmt(v.value)


def _with_lengths_section(text: str, project: Project, plan, spread) -> str:
    """The plan's text with an "Over the length distribution" section after the Load section."""
    from studio.commands.load_text import describe_lengths

    wl = project.workload

    def row(name: str, d: dict, closed: float) -> tuple[str, str]:
        return (name, f"mean {fmt(d['mean'])}, p50 {fmt(d['p50'])}, p90 {fmt(d['p90'])}, p99 {fmt(d['p99'])} ms "
                      f"(at the means: {fmt(closed)} ms)")

    pairs = [
        ("lengths", f"ISL {describe_lengths(wl.load.isl_dist, wl.isl)}, OSL {describe_lengths(wl.load.osl_dist, wl.osl)}"),
        ("throughput", f"{fmt(spread.output_tokens_per_s)} tok/s over {spread.requests:,} simulated requests "
                       f"(at the means: {fmt(plan.output_tokens_per_s)} tok/s)"),
        row("TTFT", spread.ttft_ms, plan.ttft_ms),
        row("TPOT", spread.tpot_ms, plan.tpot_ms),
        row("E2E", spread.e2e_ms, plan.request_latency_ms),
        ("KV admission", f"{spread.not_admitted_share:.2%} of requests longer than one replica's KV cache or the "
                         f"model's context ({fmt(min(plan.kv_capacity_tokens, project.model.max_context))} tokens); "
                         f"longest drawn {fmt(spread.longest_tokens)}"),
    ]
    section = "Over the length distribution (request by request; `layout-studio simulate` for more)\n" + format_pairs(pairs)
    head, sep, rest = text.partition("\n\nMemory per GPU")
    return head + "\n\n" + section + sep + rest


def _run_disagg(args: argparse.Namespace, project: Project) -> int:
    """``plan --disagg``: cost the two pools and the KV transfer between them."""
    from studio.commands.options.disagg_args import format_disagg
    from studio.engine.disagg.evaluate import evaluate_disaggregated

    res = evaluate_disaggregated(project)
    if args.json:
        data = res.to_json()
        if args.explain:
            data["explanations"] = {k: explanation_json(e) for k, e in res.explanations.items()}
        print_json(data)
    else:
        print(format_disagg(project, res, explain=args.explain))
    return 0


def explanation_json(e) -> dict:
    """One :class:`~studio.engine.plan.views.Explanation` as a JSON object."""
    return {
        "figure": e.figure,
        "value": e.value,
        "unit": e.unit,
        "formula": e.formula,
        "terms": [{"name": t.name, "value": t.value, "unit": t.unit, "note": t.note} for t in e.terms],
        "notes": list(e.notes),
    }


def _worst(comm, kind: str, phase: str):
    hits = [c for c in comm if c.kind == kind and c.phase == phase]
    return max(hits, key=lambda c: c.time_us) if hits else None


def _bottleneck(c) -> str:
    if c is None:
        return "-"
    where = c.bottleneck_kind or "-"
    if c.bottleneck_link:
        where += f" (link {c.bottleneck_link})"
    return f"{where}, {c.algorithm}, {fmt(c.bandwidth_gbps)} GB/s effective"


def format_plan(project: Project, plan, explain: bool = False, model_note: str | None = None) -> str:
    """The readable report of one plan: aligned sections, warnings with their fixes.

    ``model_note`` (the checkpoint size check of ``--model-config``) is printed under the model."""
    from studio.core.units import GIB
    from studio.engine.step.speculative import plan_line

    lay = plan.layout
    wl = project.workload
    sv = project.serving
    precision = sv.effective_precision(project.model.precision).describe()
    sections: list[str] = []

    head = [
        ("project", project.name),
        ("model", f"{project.model.name} ({project.model_ref or project.model.id}), weights {precision}, "
                  f"KV {sv.kv_dtype.value}"),
        *([("checkpoint", model_note)] if model_note else []),
        *([("speculative", line)] if (line := plan_line(plan)) else []),
        ("cluster", f"{project.cluster.name}: {project.cluster.num_gpus} GPUs "
                    f"({', '.join(project.cluster.gpu_types())}) in {_count(len(project.cluster.nodes), 'node')}"),
        ("layout", f"{lay.label}  (TP {lay.tp}, PP {lay.pp}, EP {lay.ep}, DP {lay.dp}, "
                   f"{plan.gpus} GPUs{_idle(plan)}, micro-batches {_micro_batches(lay.micro_batches, plan.micro_batches)}, "
                   f"layers per stage {','.join(str(s.layers) for s in plan.stages)})"),
        ("workload", f"ISL {wl.isl}, OSL {wl.osl}, batch {plan.batch} per replica"
                     + (f" (auto, max {wl.max_batch})" if plan.batch_auto else "")),
        _engine_head(project, plan),
        ("fits", f"{'yes' if plan.fits else 'NO'} — {plan.fit_reason}"),
        _load_head(project, plan),
    ]
    if plan.calibration:
        head.append(("calibration", plan.calibration))
    sections.append("Plan\n" + format_pairs(head))
    if plan.load is not None:
        sections.append("Load\n" + format_pairs(_load_pairs(plan.load)))

    m = plan.peak_memory
    mem = [
        ("weights", f"{m.weights / GIB:9.2f} GiB"),
        ("KV cache", f"{m.kv_cache / GIB:9.2f} GiB"),
        ("activations", f"{m.activations / GIB:9.2f} GiB"),
        ("overhead", f"{m.overhead / GIB:9.2f} GiB"),
        ("total", f"{m.total / GIB:9.2f} GiB of {m.capacity / GIB:.2f} GiB "
                  f"(usable {m.usable / GIB:.2f} GiB at utilisation {sv.gpu_memory_utilization:g})"),
    ]
    sections.append(f"Memory per GPU (most loaded: {m.gpu_id}, rank {m.rank}, stage {m.stage})\n"
                    + format_pairs(mem))

    kv = [
        ("bytes per token per GPU", fmt(plan.kv_bytes_per_token_per_gpu)),
        ("bytes per token, model", f"{fmt(plan.kv_bytes_per_token_model)} (card formula "
                                   f"{fmt(plan.kv_bytes_per_token_card)})"),
        ("capacity", f"{fmt(plan.kv_capacity_tokens)} tokens per replica"),
        ("concurrent sequences", f"{fmt(plan.max_concurrent_sequences)} of ISL+OSL = {wl.isl + wl.osl} tokens"),
    ]
    sections.append("KV cache\n" + format_pairs(kv))

    ar_p, ar_d = _worst(plan.comm, "allreduce", "prefill"), _worst(plan.comm, "allreduce", "decode")
    p2p = _worst(plan.comm, "p2p", "prefill")
    a2a = _worst(plan.comm, "alltoall", "decode")
    comm = [
        ("AllReduce per layer", f"prefill {fmt(plan.allreduce_us_per_layer_prefill)} µs, "
                                f"decode {fmt(plan.allreduce_us_per_layer_decode)} µs"),
        ("  message", _message(plan, wl.isl)),
        ("  bottleneck (prefill)", _bottleneck(ar_p)),
        ("  bottleneck (decode)", _bottleneck(ar_d)),
        ("P2P per stage boundary", f"prefill {fmt(plan.p2p_us_per_boundary_prefill)} µs, "
                                   f"decode {fmt(plan.p2p_us_per_boundary_decode)} µs"),
        ("  bottleneck", _bottleneck(p2p)),
    ]
    if a2a is not None:
        comm.append(("EP all-to-all (decode)", f"{fmt(a2a.time_us)} µs over {_bottleneck(a2a)}"))
    sections.append("Communication\n" + format_pairs(comm))

    sections.append("Pipeline\n" + format_pairs([
        ("bubble", f"{plan.bubble_fraction * 100:.1f} % ((P-1)/(M+P-1), P={lay.pp}, M={plan.micro_batches})"),
    ]))
    status = plan.status
    if not status.ok:
        sections.append("Status\n" + format_pairs([("code", status.code), ("figures", status.headline),
                                                    ("why", status.reason)]))

    def shown(figure: str, value: float, unit: str) -> str:
        return f"{fmt(value)} {unit}" if status.shows(figure) else f"- ({status.headline})"

    sections.append("Latency\n" + format_pairs([
        ("TTFT", shown("ttft", plan.ttft_ms, "ms")),
        ("TPOT", shown("tpot", plan.tpot_ms, "ms")),
        ("end-to-end", shown("request", plan.request_latency_ms, "ms")),
    ] + _targets(wl, plan)))
    sections.append("Throughput (output tokens)\n" + format_pairs([
        ("total", f"{fmt(plan.output_tokens_per_s)} tok/s"),
        ("per GPU", f"{fmt(plan.output_tokens_per_s_per_gpu)} tok/s"),
        ("per user", shown("tpot", plan.tokens_per_s_per_user, "tok/s")),
    ]))
    sections.append("Cost\n" + format_pairs([
        ("cluster", f"${plan.usd_per_hour:,.2f} per hour"),
        ("per million output tokens", _usd_per_million(plan)),
    ]))

    if plan.warnings:
        lines = []
        for w in plan.warnings:
            lines.append(f"  [{w.severity}] {w.code}: {w.message}")
            if w.fix:
                lines.append(f"      fix: {w.fix}")
        sections.append(f"Warnings ({len(plan.warnings)})\n" + "\n".join(lines))
    else:
        sections.append("Warnings\n  none")

    if plan.assumptions:
        sections.append("Assumptions\n" + "\n".join(f"  - {a}" for a in plan.assumptions))
    if explain:
        body = "\n\n".join(e.as_text() for e in plan.explanations.values())
        sections.append("Explanations\n" + body)
    return "\n\n".join(sections)


def _engine_head(project: Project, plan) -> tuple[str, str]:
    """The ``engine`` line of the Plan section: engine, profile, version range, and the fallback note."""
    from studio.engine.runtime import engine_setup

    s = engine_setup(project, plan.layout.tp, plan.layout.pp)
    text = (f"{s.engine_name} {project.serving.runtime_version or '(newest)'}: profile '{s.profile.id}' "
            f"(versions {s.profile.versions}), memory fraction {project.serving.gpu_memory_utilization:g}")
    if s.resolved.note:
        text += f" — {s.resolved.note}"
    return ("engine", text)


def _load_head(project: Project, plan) -> tuple[str, str]:
    """The ``load`` line of the Plan section: mode, rate or users, saturation rate."""
    from studio.commands.load_text import load_line

    return ("load", load_line(project.workload.load, plan.load, plan.layout.replicas))


def _load_pairs(s) -> list[tuple[str, str]]:
    """The Load section: the definition the figures follow, how a replica runs, any note."""
    out = [
        ("definition", s.definition),
        ("per replica", f"{fmt(s.users)} requests in the system, {fmt(s.running)} running, "
                        f"{fmt(s.decode_seqs)} decoding per iteration of {fmt(s.iteration_ms)} ms"),
        ("token budget", f"{s.token_budget:,} tokens per iteration"
                         + (" (it limits decoding)" if s.budget_bound else "")),
    ]
    if s.note:
        out.append(("note", s.note))
    return out


def _idle(plan) -> str:
    """`` + 3 idle`` when the layout leaves drawn GPUs unused."""
    return f" + {len(plan.idle_gpus)} idle" if plan.idle_gpus else ""


def _count(n: int, noun: str) -> str:
    """``1 node``, ``2 nodes``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _micro_batches(asked: int, used: int) -> str:
    """The layout's micro-batches, and the count the plan used when the batch capped it."""
    return str(asked) if asked == used else f"{asked} (the batch allows {used})"


def _message(plan, isl: int) -> str:
    """What one all-reduce / hand-off carries: the hidden states of one micro-batch."""
    per_micro = -(-plan.batch // max(plan.micro_batches, 1))
    prompts = _count(per_micro, "prompt")
    return (f"hidden states of one micro-batch: prefill {prompts} × {isl:,} tokens, "
            f"decode {_count(per_micro, 'token')}")


def _usd_per_million(plan) -> str:
    """$ per million output tokens; a plan that produces no tokens has no price per token."""
    import math

    value = plan.usd_per_million_output_tokens
    if not math.isfinite(value) or plan.output_tokens_per_s <= 0:
        return "- (no output tokens: the layout does not fit)" if not plan.fits else "- (no output tokens)"
    return f"${value:,.3f}"


def _targets(wl, plan) -> list[tuple[str, str]]:
    out = []
    if wl.ttft_ms is not None:
        ok = plan.status.shows("ttft") and plan.ttft_ms <= wl.ttft_ms
        out.append(("TTFT target", f"{fmt(wl.ttft_ms)} ms — {'met' if ok else 'MISSED'}"))
    if wl.tpot_ms is not None:
        ok = plan.status.shows("tpot") and plan.tpot_ms <= wl.tpot_ms
        out.append(("TPOT target", f"{fmt(wl.tpot_ms)} ms — {'met' if ok else 'MISSED'}"))
    return out
