"""The report's words and tables, as plain data: the executive summary and the comparison rows.

Nothing here draws; :mod:`studio.gui.report.document` puts it into HTML.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from studio.core.units import GIB
from studio.engine.plan.results import PlanResult
from studio.service import units
from studio.service.report.report_content import ReportData, layout_key


@dataclass(frozen=True)
class Row:
    """One metric of the comparison table.

    ``better`` is ``"higher"``, ``"lower"`` or ``""`` (no winner: a fact, not a goal).
    """

    label: str
    better: str
    value: Callable[[PlanResult], float]
    text: Callable[[PlanResult], str]


def _peak_gib(p: PlanResult) -> float:
    return p.peak_memory.total / GIB


ROWS: tuple[Row, ...] = (
    Row("Fits in GPU memory", "", lambda p: float(p.fits), lambda p: "yes" if p.fits else "no"),
    Row("GPUs used", "", lambda p: float(p.gpus), lambda p: f"{p.gpus:,}"),
    Row("Concurrent sequences per replica", "", lambda p: float(p.batch), lambda p: f"{p.batch:,}"),
    Row("Time to first token (ms)", "lower", lambda p: p.ttft_ms, lambda p: units.readable(p.ttft_ms)),
    Row("Time per output token (ms)", "lower", lambda p: p.tpot_ms, lambda p: units.readable(p.tpot_ms)),
    Row("Output tokens/s, whole cluster", "higher", lambda p: p.output_tokens_per_s,
        lambda p: units.readable(p.output_tokens_per_s)),
    Row("Output tokens/s per GPU", "higher", lambda p: p.output_tokens_per_s_per_gpu,
        lambda p: units.readable(p.output_tokens_per_s_per_gpu)),
    Row("Output tokens/s per user", "higher", lambda p: p.tokens_per_s_per_user,
        lambda p: units.readable(p.tokens_per_s_per_user)),
    Row("$ per million output tokens", "lower", lambda p: p.usd_per_million_output_tokens,
        lambda p: units.usd(p.usd_per_million_output_tokens)),
    Row("Pipeline bubble", "lower", lambda p: p.bubble_fraction, lambda p: f"{p.bubble_fraction:.0%}"),
    Row("Busiest GPU memory (GiB)", "", _peak_gib,
        lambda p: f"{_peak_gib(p):,.1f} of {p.peak_memory.capacity / GIB:,.1f}"),
    Row("KV cache, sequences per replica", "higher", lambda p: float(p.max_concurrent_sequences),
        lambda p: f"{p.max_concurrent_sequences:,}"),
    Row("Warnings", "lower", lambda p: float(sum(w.severity != "info" for w in p.warnings)),
        lambda p: str(sum(w.severity != "info" for w in p.warnings))),
)


def winners(row: Row, plans: Sequence[PlanResult]) -> set[int]:
    """Columns that win ``row``: the best value among the layouts that fit (ties all win); none for
    rows without a direction, or when fewer than two layouts can be compared."""
    if not row.better or len(plans) < 2:
        return set()
    vals = [(i, row.value(p)) for i, p in enumerate(plans) if p.fits and math.isfinite(row.value(p))]
    if len(vals) < 1:
        return set()
    pick = max if row.better == "higher" else min
    best = pick(v for _i, v in vals)
    tol = 1e-9 * max(1.0, abs(best))
    return {i for i, v in vals if abs(v - best) <= tol}


def cluster_phrase(data: ReportData) -> str:
    """E.g. ``16 × H100 SXM on 2 nodes`` (GPU types counted)."""
    c = data.project.cluster
    counts: dict[str, int] = {}
    for g in c.gpus:
        name = c.gpu_specs[g.type].name if g.type in c.gpu_specs else g.type
        counts[name] = counts.get(name, 0) + 1
    gpus = " + ".join(f"{n:,} × {name}" for name, n in counts.items()) or "no GPUs"
    nodes = len(c.nodes)
    return f"{gpus} on {nodes} node{'s' if nodes != 1 else ''}"


def _targets(data: ReportData, plan: PlanResult) -> str:
    wl = data.project.workload
    parts = []
    for name, target, value in (("time-to-first-token", wl.ttft_ms, plan.ttft_ms),
                                ("time-per-output-token", wl.tpot_ms, plan.tpot_ms)):
        if target is not None:
            verdict = "meets" if value <= target else "misses"
            parts.append(f"{verdict} the {name} target of {units.readable(target)} ms")
    return ("It " + " and ".join(parts) + ". ") if parts else "No latency targets are set. "


def _recommendation(data: ReportData) -> str:
    s = data.sweep
    fitting = int(s.columns["fits"].sum())
    head = (f"Of the {s.candidates:,} layout and batch combinations the sweep tried on this cluster, "
            f"{fitting:,} fit. ")
    if s.recommended is None:
        return head + "None of them meets the targets, so the sweep recommends no layout. "
    rec = s.layout(s.recommended)
    if layout_key(rec) == layout_key(data.chosen.plan.layout):
        return head + f"The chosen split is also the sweep's pick for {data.objective}. "
    r_gpu = float(s.columns["tokens_per_s_per_gpu"][s.recommended])
    return head + (f"For {data.objective} the sweep recommends {rec.label} instead "
                   f"({units.readable(r_gpu)} output tokens/s per GPU vs {units.readable(data.chosen.plan.output_tokens_per_s_per_gpu)}). ")


def executive_summary(data: ReportData) -> str:
    """One paragraph in plain words: what runs on what, the layout, whether it fits, the headline
    figures, the targets and the sweep's verdict."""
    p = data.project
    plan = data.chosen.plan
    lay = plan.layout
    precision = weights_phrase(p.serving.effective_precision(p.model.precision).describe())
    split = (f"{lay.label}: each copy of the model is split over {lay.tp} GPU{'s' if lay.tp > 1 else ''} "
             f"by tensor parallelism and {lay.pp} pipeline stage{'s' if lay.pp > 1 else ''}")
    if lay.dp > 1:
        split += f", with {lay.dp} copies side by side"
    if lay.ep > 1:
        split += f", experts spread over {lay.ep} GPUs"
    peak = plan.peak_memory
    fit = (f"It fits: the busiest GPU holds {peak.total / GIB:,.1f} GiB of its {peak.usable / GIB:,.1f} GiB usable memory, "
           f"leaving room for {plan.max_concurrent_sequences:,} concurrent requests per copy. "
           if plan.fits else f"It does NOT fit: {plan.fit_reason}. ")
    wl = p.workload
    figures = (
        f"Serving {wl.isl:,}-token prompts with {wl.osl:,}-token answers at {plan.batch:,} concurrent requests per copy, "
        f"a user waits {units.readable(plan.ttft_ms)} ms for the first token and then gets a token every {units.readable(plan.tpot_ms)} ms "
        f"({units.readable(plan.tokens_per_s_per_user)} tokens/s); the cluster produces {units.readable(plan.output_tokens_per_s)} output "
        f"tokens/s ({units.readable(plan.output_tokens_per_s_per_gpu)} per GPU) at {units.usd(plan.usd_per_million_output_tokens)} per "
        f"million output tokens (${plan.usd_per_hour:,.2f} per hour). "
    )
    warn = sum(w.severity != "info" for w in plan.warnings)
    tail = (f"{warn} warning{'s' if warn != 1 else ''} {'need' if warn != 1 else 'needs'} attention (see Warnings)."
            if warn else "No warnings.")
    return (f"{p.model.name} ({precision}) is served on {cluster_phrase(data)} with layout {split}, "
            f"{lay.micro_batches} micro-batch{'es' if lay.micro_batches != 1 else ''} in flight. "
            + fit + figures + _targets(data, plan) + _recommendation(data) + tail)


def weights_phrase(described: str) -> str:
    """A precision as :meth:`ModulePrecision.describe` gives it, as words for a sentence in
    brackets: ``fp8 (embeddings bf16, lm_head bf16)`` becomes ``FP8 weights; embeddings and LM head
    BF16``, never brackets inside the brackets it is written in."""
    common, _, rest = described.partition(" (")
    parts: dict[str, list[str]] = {}
    for item in rest.rstrip(")").split(", ") if rest else []:
        module, _, dtype = item.rpartition(" ")
        parts.setdefault(dtype.upper(), []).append(module.replace("lm_head", "LM head").replace("_", " "))
    tail = "; ".join(f"{' and '.join(mods)} {dtype}" for dtype, mods in parts.items())
    return f"{common.upper()} weights" + (f"; {tail}" if tail else "")


def unnest_brackets(text: str) -> str:
    """``text`` with brackets inside brackets written as a dash, for a reader:
    "(hierarchical (ring in node + 2-node ring per rail))" becomes
    "(hierarchical — ring in node + 2-node ring per rail)". Brackets at the top level are kept."""
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
            if depth > 1:
                if out and out[-1] == " ":
                    out.append("— ")
                else:
                    out.append(" — ")
                continue
        elif ch == ")" and depth > 0:
            depth -= 1
            if depth >= 1:
                continue
        out.append(ch)
    return "".join(out)


def report_title(data: ReportData) -> str:
    """The report's title from what the project holds now: its model on its GPUs (the project's
    name may still name the model it was made for, e.g. after the model was changed)."""
    return f"{data.project.model.name} on {cluster_phrase(data)}"


def cluster_name(data: ReportData) -> str:
    """The cluster by its nodes, e.g. ``2 × DGX/HGX H100 (8× H100 SXM)`` (each node's name less
    its number); not the cluster's stored name, which example projects share with the title."""
    import re

    counts: dict[str, int] = {}
    for n in data.project.cluster.nodes:
        base = re.sub(r"\s*(#\d+|tray \d+)$", "", n.name or n.id)
        counts[base] = counts.get(base, 0) + 1
    return " + ".join(f"{k:,} × {name}" for name, k in counts.items()) or data.project.cluster.name
