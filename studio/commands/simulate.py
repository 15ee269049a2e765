"""``layout-studio simulate``: serve a layout request by request and print the figures a serving
benchmark reports — mean, p50, p90 and p99 of TTFT, TPOT, ITL and end-to-end latency, throughput
and the saturation rate — each with the definition (and the tool) it follows."""

from __future__ import annotations

import argparse
import math

from studio.commands.options.project_args import project_from_args
from studio.commands.options.project_flags import add_load_args, add_project_args, add_runtime_args
from studio.commands.output import fmt, format_pairs, format_table, print_json

#: Each figure's definition, and the benchmark tool it matches.
DEFINITIONS = {
    "ttft": "arrival → first output token, queueing included (vLLM bench serve TTFT)",
    "tpot": "(last token − first token) / (output tokens − 1) per request, first token excluded "
            "(vLLM bench serve TPOT)",
    "itl": "gap between successive tokens of a sequence, weighted by tokens (vLLM bench serve ITL)",
    "e2e": "arrival → last token (vLLM bench serve E2EL, GenAI-Perf request latency)",
    "throughput": "all output tokens / (last completion − first arrival), the tail included "
                  "(trtllm-bench throughput, vLLM bench serve output_throughput)",
    "saturation": "highest request rate with a steady state: the closed loop at the most sequences "
                  "the KV cache and max_batch let run (closed form)",
    "prefix_cache": "each request draws a hit of its reusable prompt (history, documents) in HBM, host "
                    "memory or NVMe, or a miss, from the plan's hit rate per tier; the system prompt is a "
                    "hit for all; only missed tokens are prefilled, a host/NVMe hit's load added to (vLLM, TensorRT-LLM) "
                    "or hidden behind (SGLang) the iterations that prefill them",
}

FIGURES = (("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl"), ("E2E", "e2e"))


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``simulate`` command."""
    p = subparsers.add_parser(
        "simulate",
        help="percentiles of TTFT/TPOT/ITL/E2E under load (request-level simulation)",
        description="Simulate the requests of the project's load (or the load flags) through one layout "
        "with iteration-level continuous batching and print mean, p50, p90 and p99 of every latency, "
        "the throughput and the saturation rate. A request rate at or above saturation has no steady "
        "state: the command says so instead of printing numbers.",
    )
    add_project_args(p, layout=True)
    add_runtime_args(p)
    add_load_args(p)
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object (the scripting contract)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the project, check the load against saturation, simulate, print."""
    project = project_from_args(args)
    from studio.commands.load_text import describe_lengths, describe_load
    from studio.engine import evaluate

    plan = evaluate(project)
    load = project.workload.load
    summary = plan.load
    head = {
        "project": project.name,
        "layout": plan.layout.label,
        "gpus": plan.gpus,
        "replicas": plan.layout.replicas,
        "load": describe_load(load, summary.users * plan.layout.replicas if summary else None),
        "isl": describe_lengths(load.isl_dist, project.workload.isl),
        "osl": describe_lengths(load.osl_dist, project.workload.osl),
        "requests": load.num_requests,
        "saturation_rate_per_s": summary.saturation_rate_per_s if summary else None,
    }
    from studio.engine.step.speculative import plan_line

    if (spec := plan_line(plan)) is not None:  # tokens arrive E per iteration: ITL > TPOT
        head["speculative"] = spec
    if not plan.fits:
        raise_not_fitting(plan)
    if summary is not None and summary.saturated:
        message = saturated_message(load.rate_per_s or 0.0, summary.saturation_rate_per_s, plan.layout.replicas)
        if args.json:
            print_json({**head, "saturated": True, "message": message, "definitions": DEFINITIONS})
        else:
            print("Simulation\n" + format_pairs(list(_head_pairs(head))) + "\n\n" + message)
        return 0
    from studio.engine.serving.under_load import simulate_plan

    sim = simulate_plan(project)
    if args.json:
        print_json({**head, "saturated": False, **simulation_json(sim, plan), "definitions": DEFINITIONS})
    else:
        print(format_simulation(head, sim, plan))
    return 0


def raise_not_fitting(plan) -> None:
    """A layout that does not fit cannot serve anything: say why (exit 2)."""
    from studio.core.errors import StudioError

    raise StudioError(f"layout {plan.layout.label} does not fit, nothing can be simulated: {plan.fit_reason}")


def saturated_message(rate: float, saturation: float, dp: int) -> str:
    """The plain statement printed instead of numbers for a rate with no steady state."""
    return (
        f"SATURATED: {rate:g} req/s is at or above this layout's saturation rate of {saturation:.3g} req/s "
        f"({dp} replica{'s' if dp != 1 else ''}). The queue grows without bound, so TTFT and E2E have no "
        f"steady state and no figures are given. Lower --rate below {saturation:.3g}, add replicas (DP), "
        "or raise the KV capacity / --max-num-batched-tokens."
    )


def _dist(d) -> dict:
    return {"mean": d.mean, "p50": d.p50, "p90": d.p90, "p99": d.p99}


def simulation_json(sim, plan) -> dict:
    """The figures of ``simulate --json`` (milliseconds, tokens per second)."""
    return {
        "latency_ms": {key: _dist(getattr(sim, key)) for _, key in FIGURES},
        "throughput": {
            "output_tokens_per_s": sim.output_tokens_per_s,
            "output_tokens_per_s_per_gpu": sim.output_tokens_per_s / max(plan.gpus, 1),
            "requests_per_s": sim.requests_per_s,
        },
        "run": {
            "requests": sim.requests,
            "output_tokens": sim.output_tokens,
            "duration_ms": sim.duration_ms,
            "mean_running_per_replica": sim.mean_running,
            "peak_waiting_per_replica": sim.peak_waiting,
        },
        "closed_form_ms": {"ttft": plan.ttft_ms, "tpot": plan.tpot_ms, "e2e": plan.request_latency_ms},
    } | ({"prefix_cache": prefix_json(sim.prefix)} if sim.prefix is not None else {})


def prefix_json(p) -> dict:
    """``simulate --json``'s ``prefix_cache``: requests by where their reusable prompt was found, the
    share of prompt tokens served from the cache, and TTFT of the hits and of the misses."""
    hbm, host, disk, miss = p.requests
    return {
        "requests": {"hbm": hbm, "host": host, "disk": disk, "miss": miss},
        "hit_rate": p.hit_rate,
        "ttft_ms_hit": _dist(p.ttft_hit),
        "ttft_ms_miss": _dist(p.ttft_miss),
    }


def _prefix_pairs(p) -> list[tuple[str, str]]:
    hbm, host, disk, miss = p.requests
    total = max(hbm + host + disk + miss, 1)
    def ttft(d, count: int) -> str:
        return f"p50 {fmt(d.p50)} ms, p99 {fmt(d.p99)} ms" if count else "no such request"

    return [
        ("reused part", f"found in HBM by {hbm:,}, in host memory by {host:,}, on NVMe by {disk:,}; missed by "
                        f"{miss:,} ({(hbm + host + disk) / total:.0%} of {total:,} requests hit; the system "
                        "prompt is a hit for all)"),
        ("hit rate", f"{p.hit_rate:.1%} of prompt tokens served from the cache"),
        ("TTFT hit", ttft(p.ttft_hit, hbm + host + disk)),
        ("TTFT miss", ttft(p.ttft_miss, miss)),
    ]


def _head_pairs(head: dict):
    yield "project", head["project"]
    yield "layout", f"{head['layout']} ({head['gpus']} GPUs, {head['replicas']} replica{'s' if head['replicas'] != 1 else ''})"
    yield "load", head["load"]
    yield "lengths", f"ISL {head['isl']}, OSL {head['osl']}"
    yield "requests", f"{head['requests']:,}"
    sat = head["saturation_rate_per_s"]
    yield "saturation", "-" if sat is None or not math.isfinite(sat) else f"{sat:.3g} req/s"
    if head.get("speculative"):
        yield "speculative", head["speculative"] + " (ITL is the gap between iterations, each bringing E tokens)"


def format_simulation(head: dict, sim, plan) -> str:
    """The readable report: the load, a table of mean/p50/p90/p99, throughput, definitions."""
    rows = [
        [f"{name} (ms)", *(fmt(getattr(getattr(sim, key), q)) for q in ("mean", "p50", "p90", "p99"))]
        for name, key in FIGURES
    ]
    parts = [
        "Simulation\n" + format_pairs(list(_head_pairs(head))),
        "Latency\n" + _indent(format_table(["figure", "mean", "p50", "p90", "p99"], rows)),
        "Throughput\n" + format_pairs([
            ("output", f"{fmt(sim.output_tokens_per_s)} tok/s ({fmt(sim.output_tokens_per_s / max(plan.gpus, 1))} per GPU)"),
            ("requests", f"{fmt(sim.requests_per_s)} req/s"),
            ("run", f"{sim.requests:,} requests, {fmt(sim.output_tokens)} output tokens in {fmt(sim.duration_ms / 1e3)} s"),
            ("batch", f"{fmt(sim.mean_running)} sequences running per replica on average, "
                      f"at most {sim.peak_waiting:,} waiting"),
        ]),
        *(["Prefix cache (per request)\n" + format_pairs(_prefix_pairs(sim.prefix))] if sim.prefix is not None else []),
        "Closed form (the plan's means)\n" + format_pairs([
            ("TTFT", f"{fmt(plan.ttft_ms)} ms"),
            ("TPOT", f"{fmt(plan.tpot_ms)} ms"),
            ("E2E", f"{fmt(plan.request_latency_ms)} ms"),
        ]),
        "Definitions\n" + format_pairs([(k, v) for k, v in DEFINITIONS.items()]),
    ]
    return "\n\n".join(parts)


def _indent(text: str, n: int = 2) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())
