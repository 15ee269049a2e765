"""The sweep's line on prompt reuse: how much of each prompt the recommended layout serves from the
prefix cache, from which tier, and what it then prefills, so a ranking that reuse changed says why."""

from __future__ import annotations

from studio.engine.kv_tiers.tiers import prefix_cache_on


def reuse_reason(result) -> str | None:
    """The line for ``result`` (a :class:`~studio.engine.search.sweep.SweepResult`); None when
    prefix caching is off, nothing repeats or no layout fits."""
    project = result.project
    if not prefix_cache_on(project) or not len(result.order):
        return None
    best = result.recommended if result.recommended is not None else int(result.order[0])
    if not bool(result.columns["fits"][best]):
        return None
    plan = result.plan(best, details=False)
    pc = plan.prefix_cache
    if pc is None:
        return None
    r = project.workload.reuse
    shared = (f"; its KV cache holds the {r.system_prompt_tokens:,}-token system prompt once for all "
              f"{plan.batch:,} running requests") if r.system_prompt_tokens else ""
    return (f"prefix cache: {plan.layout.label} serves {pc['hit_rate']:.0%} of each {pc['prompt_tokens']:,.0f}-token "
            f"prompt from the cache (HBM {pc['hit_rate_hbm']:.0%}, host DRAM {pc['hit_rate_host']:.0%}, NVMe "
            f"{pc['hit_rate_disk']:.0%}), so a request prefills {pc['prefilled_tokens']:,.0f} tokens and every layout "
            f"is ranked with its own prefill after its hits{shared}")
