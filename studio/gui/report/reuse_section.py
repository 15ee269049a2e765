"""The report's "Prompt reuse and KV tiers" section: what of each prompt repeats, the prefix cache's
hit rate per tier and the prefill it saves, the KV capacity of HBM, host DRAM and NVMe and what the
working set fills of them, and TTFT / throughput with and without reuse. The section is there when
the chosen plan caches prefixes (prefix caching on and something in the prompt repeats)."""

from __future__ import annotations

from html import escape

from studio.service import units
from studio.service.kv_tiers import tier_use
from studio.service.report.report_content import ReportData


def _gib(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}" if x >= 10 else f"{x:,.1f}"


def _workload_text(data: ReportData) -> str:
    r = data.project.workload.reuse
    parts = [f"system prompt {r.system_prompt_tokens:,} tokens shared by every request"]
    if r.turns > 1:
        parts.append(f"conversations of {r.turns} turns, the history growing {r.history_tokens_per_turn:,} tokens a "
                     f"turn, {r.think_time_s:g} s think time between turns")
    if r.document_share > 0:
        parts.append(f"{r.document_share:.0%} of the rest of the prompt one of {r.documents:,} re-read documents")
    if r.hit_rate is not None:
        parts.append(f"hit rate {r.hit_rate:.0%} as measured (given in the project, not estimated)")
    return "; ".join(parts) + f" (mean prompt {data.project.workload.isl:,} tokens)"


def reuse_section(data: ReportData) -> list[str]:
    """The section's HTML blocks; none when the chosen plan has no prefix cache."""
    plan = data.chosen.plan
    pc = plan.prefix_cache
    if pc is None:
        return []
    t = data.project.serving.kv_tiers
    cache = "on" if t.prefix_cache else "on (the engine's default)"
    rows = [
        ("Prompt reuse", _workload_text(data)),
        ("Prefix cache", f"{cache}: {pc['hit_rate']:.1%} of prompt tokens served from the cache — HBM "
                         f"{pc['hit_rate_hbm']:.1%}, host DRAM {pc['hit_rate_host']:.1%}, NVMe {pc['hit_rate_disk']:.1%}; "
                         f"{pc['prefilled_tokens']:,.0f} of {pc['prompt_tokens']:,.0f} prompt tokens prefilled per request "
                         f"(saves {pc['saved_prefill_tokens']:,.0f})"),
    ]
    if pc["tier_load_ms"] > 0:
        rows.append(("Host / NVMe loads", f"{units.readable(pc['tier_load_ms'])} ms per request over the node's links, "
                                          "overlapped with the missed tokens' prefill"))
    off = data.without_reuse
    if off is not None and off.fits and plan.fits:
        rows.append(("Effect", f"TTFT {units.readable(plan.ttft_ms)} ms instead of {units.readable(off.ttft_ms)} ms, "
                               f"{units.readable(plan.output_tokens_per_s)} output tokens/s instead of "
                               f"{units.readable(off.output_tokens_per_s)}, batch {plan.batch:,} instead of {off.batch:,} "
                               f"per replica ({units.usd(plan.usd_per_million_output_tokens)} instead of "
                               f"{units.usd(off.usd_per_million_output_tokens)} per million output tokens)"))
    sim = data.simulation
    if sim is not None and sim.prefix is not None:
        hbm, host, disk, miss = sim.prefix.requests
        ttft = [f"{units.readable(d.p99)} ms for {what}" for d, n, what in
                ((sim.prefix.ttft_hit, hbm + host + disk, "hits"), (sim.prefix.ttft_miss, miss, "misses")) if n]
        rows.append(("Simulated requests", f"reused part found in HBM by {hbm:,}, in host DRAM by {host:,}, on NVMe by "
                                           f"{disk:,}, missed by {miss:,}; TTFT p99 " + ", ".join(ttft)))
    pairs = "".join(f"<tr><td><b>{escape(k)}</b></td><td>{escape(v)}</td></tr>" for k, v in rows)
    tiers = "".join(
        f"<tr><td>{escape(u.name)}</td><td class=\"num\">{_gib(u.capacity_gib)}</td><td class=\"num\">{_gib(u.node_gib)}</td>"
        f"<td class=\"num\">{_gib(u.running_gib)}</td><td class=\"num\">{_gib(u.prefix_gib)}</td>"
        f"<td class=\"num\">{u.hit_rate:.1%}</td></tr>"
        for u in tier_use(data.project, plan)
    )
    return [
        "<h2>Prompt reuse and KV tiers</h2>",
        f"<table>{pairs}</table>",
        "<table class=\"grid\"><tr><th>KV tier</th><th>GiB per replica</th><th>node's own GiB</th><th>running batch GiB</th>"
        f"<th>reused prefixes GiB</th><th>prompt tokens served</th></tr>{tiers}</table>",
        '<p class="caption">The prefix cache is an LRU of KV blocks filled in order HBM, host DRAM, NVMe: a prefix is '
        "still cached when it comes back within the time the traffic takes to fill the tiers up to it. Reused "
        "prefixes: the system prompt once, the history of every conversation between turns, the re-read documents. "
        "The engine settings that turn it on at these sizes are in the appendix's launch commands.</p>",
    ]
