"""Why the plan's prefix cache hits what it does (``--explain``, the metrics' tooltip)."""

from __future__ import annotations

from studio.engine.kv_tiers.tiers import load_overlaps
from studio.engine.plan.context import PlanContext
from studio.engine.plan.views import Explanation, Term


def prefix_cache_explanation(ctx: PlanContext) -> Explanation | None:
    """The hit rate, where the hits come from and what they save; None when prefix caching is off."""
    pc = ctx.prefix_cache
    if pc is None:
        return None
    r = ctx.project.workload.reuse
    tiers = ctx.project.serving.kv_tiers
    terms = (
        Term("system prompt", r.system_prompt_tokens, "tokens", "shared by every request, its blocks held once"),
        Term("history per turn", r.history_tokens_per_turn, "tokens", f"{r.turns} turns, {r.think_time_s:g} s think time"),
        Term("document share", r.document_share, "", f"of the rest of the prompt, {r.documents} documents"),
        Term("HBM KV cache", pc["capacity_tokens_hbm"], "tokens", "what the running batch leaves of it keeps prefixes"),
        Term("host tier", pc["capacity_tokens_host"], "tokens", f"{tiers.host_gib:g} GiB per node"),
        Term("NVMe tier", pc["capacity_tokens_disk"], "tokens", f"{tiers.disk_gib:g} GiB per node"),
        Term("hits in HBM", pc["hit_rate_hbm"], "of prompt tokens"),
        Term("hits in host memory", pc["hit_rate_host"], "of prompt tokens"),
        Term("hits on NVMe", pc["hit_rate_disk"], "of prompt tokens"),
        Term("prefilled", pc["prefilled_tokens"], "tokens per request", f"of {pc['prompt_tokens']:,.0f}"),
        Term("host/NVMe load", pc["tier_load_ms"], "ms per request",
             "hidden behind the missed tokens' prefill, layer by layer" if load_overlaps(ctx.project.serving.runtime)
             else "before the missed tokens' prefill, added to it"),
    )
    notes = ["the KV cache is an LRU: a prefix is still cached when it comes back within the time the traffic "
             "takes to fill the tiers up to it (Che's approximation); think times are exponential, documents "
             "re-read as Poisson arrivals" + (", each replica its share of them (prefix-aware routing)"
                                              if tiers.prefix_routing else ""),
             "a hit counts whole KV blocks and never the prompt's last token",
             "TTFT and throughput are computed with the prefilled tokens (attending to the cached prefix) and the "
             "host/NVMe loads; decode attends to the whole prompt"]
    if r.hit_rate is not None:
        notes.insert(0, f"hit rate given in the workload (reuse.hit_rate, served from {r.hit_tier}), not estimated")
    return Explanation(
        "prefix_cache.hit_rate", pc["hit_rate"], "of prompt tokens",
        "Σ reused parts × P(still cached when reused) / prompt tokens, tiers filled in order HBM → host → NVMe",
        terms, tuple(notes),
    )
