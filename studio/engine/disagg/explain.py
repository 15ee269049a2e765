"""What a disaggregated plan assumes, why it came out as it did, and the breakdown of its figures.

:func:`reasons` gives the lines the CLI, the Explorer and the report print under a disaggregated
plan (pools, their load, the KV transfer, the balance); :func:`explain` the "why" of each headline
figure (TTFT = queue + prefill + KV transfer, decode-only TPOT, throughput bound by the slower pool,
cost, KV capacity, batch, memory per pool), as :mod:`studio.engine.plan.explain` does for one layout.
"""

from __future__ import annotations

from studio.core.units import GIB, MIB
from studio.engine.disagg.pools import DecodeCurve, PrefillCurve, ServeState
from studio.engine.disagg.results import DisaggResult
from studio.engine.plan.views import Explanation, Term

ASSUMPTIONS = (
    "prefill workers run prompt-only iterations of up to the token budget; decode workers run decode-only "
    "iterations (no prefill interference)",
    "TTFT = prefill wait (half a batch when the worker is busy, or the M/D/c wait near saturation, scaled by the "
    "arrivals' variability at a worker) + the batch the prompt runs in + the KV transfer; the transfer starts when "
    "the prefill ends (no layer-by-layer overlap)",
    "KV transfer: each decode rank pulls its layers' and heads' share from the prefill ranks holding them, all flows "
    "at once, links shared equally by the flows crossing them; no software overhead beyond the link latencies",
    "throughput = the request rate both pools sustain at the load × OSL; a prefill worker sends one request's KV at a "
    "time (the transfer bound)",
    "requests are spread evenly over the workers of each pool (round-robin router)",
)


def reasons(res: DisaggResult, pf: PrefillCurve, dc: DecodeCurve) -> tuple[str, ...]:
    p, d, t = res.prefill, res.decode, res.transfer
    out = [res.why()]
    out.append(
        f"prefill pool {p.label} on {', '.join(p.gpu_types)}: {p.capacity_rps:.3g} req/s at saturation, "
        f"{p.utilisation:.0%} busy at the load"
    )
    out.append(
        f"decode pool {d.label} on {', '.join(d.gpu_types)}: {d.capacity_rps:.3g} req/s at {dc.cap} sequences "
        f"per worker, {d.utilisation:.0%} busy, {d.batch:.3g} sequences decoding per worker"
    )
    out.append(
        f"KV transfer: {t.bytes_per_request / MIB:,.1f} MiB per request in {t.flows} rank-to-rank flows; "
        f"slowest {t.src_gpu} → {t.dst_gpu} at {t.bandwidth_gbps:.3g} GB/s"
    )
    out.append(res.balance.describe(p.pool.workers, d.pool.workers))
    if res.unused_gpus:
        out.append(f"{res.unused_gpus} GPUs of the cluster are in neither pool")
    if res.prefix_cache is not None:
        out.append(prefix_line(res.prefix_cache, d.max_running))
    return tuple(out)


def prefix_line(pc: dict[str, float], decode_cap: int) -> str:
    """``prefix cache: each prefill worker serves 76% of each 16,000-token prompt …``."""
    line = (
        f"prefix cache: each prefill worker serves {pc['hit_rate']:.0%} of each {pc['prompt_tokens']:,.0f}-token "
        f"prompt from its cache (HBM {pc['hit_rate_hbm']:.0%}, host DRAM {pc['hit_rate_host']:.0%}, "
        f"NVMe {pc['hit_rate_disk']:.0%}), so it prefills {pc['prefilled_tokens']:,.0f} tokens "
        f"({pc['saved_prefill_tokens']:,.0f} saved per request); the KV transfer carries "
        f"{pc['kv_transfer_tokens']:,.0f} tokens"
    )
    if pc["shared_tokens"]:
        line += (
            f"; a decode worker holds the {pc['shared_tokens']:,.0f}-token system prompt once for its "
            f"{decode_cap:,} sequences"
        )
    return line


def explain(
    res: DisaggResult, st: ServeState, pf: PrefillCurve, dc: DecodeCurve
) -> dict[str, Explanation]:
    t = res.transfer
    out = {
        "latency.ttft": Explanation(
            "latency.ttft",
            res.ttft_ms,
            "ms",
            "prefill queue + own prefill iterations + KV transfer",
            (
                Term(
                    "queue",
                    res.queue_ms,
                    "ms",
                    "until a prefill batch takes the prompt (half a batch, or M/D/c near saturation)",
                ),
                Term(
                    "prefill",
                    res.prefill_ms,
                    "ms",
                    f"a batch of the prompts that arrived meanwhile, {pf.chunks} iteration(s) on a "
                    f"{res.prefill.pool.worker_label()} worker",
                ),
                Term("KV transfer", t.time_ms, "ms", t.describe()),
            ),
        ),
        "latency.tpot": Explanation(
            "latency.tpot",
            res.tpot_ms,
            "ms",
            "one decode-only iteration of the decode worker",
            (
                Term("decoding sequences", res.decode.batch, "per worker"),
                Term("cap", dc.cap, "sequences", "KV cache and max_batch"),
            ),
            ("no prompt chunk joins a decode iteration: no prefill interference",),
        ),
        "throughput.output_tokens_per_s": Explanation(
            "throughput.output_tokens_per_s",
            res.output_tokens_per_s,
            "tok/s",
            "request rate × OSL",
            (
                Term("request rate", res.request_rate_per_s, "req/s"),
                Term("prefill pool capacity", res.prefill.capacity_rps, "req/s"),
                Term("decode pool capacity", res.decode.capacity_rps, "req/s"),
                Term(
                    "transfer capacity",
                    res.prefill.pool.workers / t.time_ms * 1e3 if t.time_ms > 0 else float("inf"),
                    "req/s",
                    "one KV transfer at a time per prefill worker",
                ),
            ),
            (f"limited by the {res.limited_by} at saturation",),
        ),
        "kv_transfer.time": Explanation(
            "kv_transfer.time",
            t.time_ms,
            "ms",
            "latency of the route + largest flow bytes / its share of the slowest link",
            (
                Term("bytes per request", t.bytes_per_request / MIB, "MiB"),
                Term("largest flow", t.bytes_per_flow / MIB, "MiB"),
                Term("flows", t.flows, ""),
                Term("bandwidth per flow", t.bandwidth_gbps, "GB/s", t.bottleneck_name),
                Term("latency", t.latency_us, "µs"),
            ),
            (
                f"mean over {t.pairs} (prefill worker, decode worker) pair(s); slowest {t.worst_ms:.3g} ms",
            ),
        ),
        "cost.usd_per_million_output_tokens": Explanation(
            "cost.usd_per_million_output_tokens",
            res.usd_per_million_output_tokens,
            "$/M tok",
            "$ per hour of both pools' GPUs / (output tok/s × 3600) × 10^6",
            (
                Term("GPUs", res.gpus, "", f"{res.prefill.gpus} prefill + {res.decode.gpus} decode"),
                Term("price", res.usd_per_hour, "$/hour"),
                Term("output throughput", res.output_tokens_per_s, "tok/s"),
            ),
        ),
        "kv_capacity.pools": Explanation(
            "kv_capacity.pools",
            float(res.decode.kv_sequences),
            "sequences per decode worker",
            "KV pool per GPU (usable − weights − activations − overhead) / KV bytes of one sequence",
            (
                Term("decode KV pool", res.decode.kv_pool_gib, "GiB per GPU", res.decode.label),
                Term("decode sequences", res.decode.kv_sequences, "per worker", "of ISL + OSL tokens"),
                Term("prefill KV pool", res.prefill.kv_pool_gib, "GiB per GPU", res.prefill.label),
                Term("prefill prompts", res.prefill.kv_sequences, "per worker", "of ISL tokens"),
            ),
        ),
        "batch.decode": Explanation(
            "batch.decode",
            res.decode.batch,
            "sequences per decode worker",
            "sequences decoding per decode worker at the load",
            (
                Term("cap", dc.cap, "sequences", "KV cache and max_batch"),
                Term("prompts per prefill iteration", pf.slots, "per prefill worker"),
            ),
        ),
    }
    if (pc := res.prefix_cache) is not None:
        out["prefix_cache.hit_rate"] = Explanation(
            "prefix_cache.hit_rate",
            pc["hit_rate"],
            "of prompt tokens",
            "hits in HBM + host DRAM + NVMe of one prefill worker (an LRU over its tiers, "
            "at the traffic its own capacity takes)",
            (
                Term("hits in HBM", pc["hit_rate_hbm"], "", f"{pc['capacity_tokens_hbm']:,.0f} tokens kept"),
                Term("hits in host memory", pc["hit_rate_host"], "", f"{pc['capacity_tokens_host']:,.0f} tokens kept"),
                Term("hits on NVMe", pc["hit_rate_disk"], "", f"{pc['capacity_tokens_disk']:,.0f} tokens kept"),
                Term("prefilled", pc["prefilled_tokens"], "tokens per request", "the missed tokens"),
                Term("saved prefill", pc["saved_prefill_tokens"], "tokens per request"),
                Term("tier load", pc["tier_load_ms"], "ms per request", "host / NVMe hits over the node's links"),
                Term("KV transfer", pc["kv_transfer_tokens"], "tokens per request",
                     "the prompt less the system-prompt blocks a decode worker caches (vLLM)"),
            ),
        )
    for role, p in (("prefill", res.prefill), ("decode", res.decode)):
        m = p.peak_memory
        if m is None:
            continue
        out[f"memory.{role}"] = Explanation(
            f"memory.{role}",
            m.total / GIB,
            "GiB",
            "weights + KV cache reserved for the running sequences + activations + runtime overhead",
            (
                Term("weights", m.weights / GIB, "GiB"),
                Term(
                    "KV cache",
                    m.kv_cache / GIB,
                    "GiB",
                    f"{p.max_running:,} {'prompts' if role == 'prefill' else 'sequences'} per worker",
                ),
                Term("activations", m.activations / GIB, "GiB"),
                Term("overhead", m.overhead / GIB, "GiB"),
                Term("capacity", m.capacity / GIB, "GiB", m.gpu_id),
            ),
            (f"{role} pool {p.label}: its most loaded GPU",),
        )
    return out
