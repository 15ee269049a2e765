"""The report as HTML: one builder for both outputs.

The browser file embeds every picture as a ``data:`` URI; the PDF passes each picture to
:class:`QTextDocument` as a resource. Either way :func:`build_html` writes the same sections, in
the HTML subset QTextDocument understands (tables with attributes, simple CSS), so the two match.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from html import escape as _html_escape

from studio.core.units import GIB
from studio.gui.report.fleet_section import fleet_section
from studio.gui.report.reuse_section import reuse_section
from studio.service import units
from studio.service.report.report_content import ReportData
from studio.service.report.report_nodes import (
    CANVAS_MAX_GPUS,
    CANVAS_MAX_NODES,
    MAX_GROUP_ROWS,
    describe,
    draws_links,
    node_groups,
    node_names,
)
from studio.service.report.report_summary import (
    ROWS,
    cluster_name,
    cluster_phrase,
    executive_summary,
    report_title,
    unnest_brackets,
    winners,
)


def escape(text: str) -> str:
    """``text`` for an HTML cell: ``&``, ``<``, ``>`` and quotes as entities, and every control,
    format or bidirectional character but line feed and tab (U+202E, U+2066, U+2028, ESC) written
    as ``\\uXXXX``, as the terminal shows it (:func:`studio.core.shown_text.terminal_safe`): a project name
    from a file cannot reverse the text after it in the browser or the PDF."""
    from studio.core.shown_text import terminal_safe

    return _html_escape(terminal_safe(str(text)))


WIN_BG = "#d3f9d8"
HEAD_BG = "#e9ecef"
SEVERITY_BG = {"error": "#ffe3e3", "warning": "#fff3bf", "info": "#e7f5ff"}
#: The pictures a report needs, in order; ``mem-N`` is option N's memory bars.
PICTURES = ("cluster", "timeline-prefill", "timeline-decode", "pareto")

CSS = """
body { font-family: 'DejaVu Sans', Arial, Helvetica, sans-serif; color: #212529; font-size: 10pt; }
h1 { font-size: 20pt; margin-bottom: 2px; }
h2 { font-size: 14pt; color: #1864ab; margin-top: 18px; border-bottom: 1px solid #ced4da; }
h3 { font-size: 11pt; margin-top: 10px; }
p.meta { color: #495057; }
p.summary { font-size: 11pt; line-height: 140%; }
table.grid { border-collapse: collapse; margin: 6px 0; }
table.grid td, table.grid th { border: 1px solid #adb5bd; padding: 3px 6px; }
td.num { text-align: right; }
pre { font-family: 'DejaVu Sans Mono', monospace; font-size: 7.5pt; background: #f8f9fa;
      border: 1px solid #dee2e6; padding: 6px; white-space: pre-wrap; }
.caption { color: #495057; font-size: 9pt; }
.win { background: #d3f9d8; font-weight: bold; }
"""


@dataclass(frozen=True)
class Images:
    """How the builder refers to pictures: ``src(name)`` and the width to show them at."""

    src: Callable[[str], str]
    width: int


def data_uri(png: bytes) -> str:
    """A PNG as a ``data:`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _img(images: Images, name: str, alt: str, fraction: float = 1.0) -> str:
    return f'<p><img src="{escape(images.src(name))}" width="{int(images.width * fraction)}" alt="{escape(alt)}"></p>'


def _pairs(rows: list[tuple[str, str]]) -> str:
    body = "".join(f'<tr><td bgcolor="{HEAD_BG}"><b>{escape(k)}</b></td><td>{escape(v)}</td></tr>' for k, v in rows)
    return f'<table class="grid" border="1" cellspacing="0" cellpadding="4">{body}</table>'


def _model_rows(data: ReportData) -> list[tuple[str, str]]:
    p = data.project
    m = p.model
    wl = p.workload
    kind = (f"mixture of experts: {m.moe.num_experts} experts, {m.moe.experts_per_token} active per token"
            if m.moe else "dense")
    rows = [
        ("Model", m.name + (f" ({m.hf_model_id})" if m.hf_model_id else "")),
        ("Parameters", f"{m.num_params / 1e9:,.1f} B ({m.num_active_params / 1e9:,.1f} B active per token), {kind}"),
        ("Layers / hidden size", f"{m.num_layers} / {m.hidden_size:,}"),
        ("Attention heads (KV heads)", f"{m.num_attention_heads} ({m.num_kv_heads})" + (" · MLA" if m.mla else "")),
        ("Weights served as", p.serving.effective_precision(m.precision).describe()),
        ("KV cache format", p.serving.kv_dtype.value),
        ("Prompt / answer length", f"{wl.isl:,} / {wl.osl:,} tokens"),
        ("Concurrency per replica", "as many as the KV cache holds (auto, at most "
         f"{wl.max_batch:,})" if wl.batch == "auto" else f"{wl.batch:,}"),
        ("Targets", ", ".join(t for t in (
            f"TTFT ≤ {units.readable(wl.ttft_ms)} ms" if wl.ttft_ms else "",
            f"TPOT ≤ {units.readable(wl.tpot_ms)} ms" if wl.tpot_ms else "") if t) or "none set"),
        ("GPU memory the runtime may use", f"{p.serving.gpu_memory_utilization:.0%}"),
        ("Serving engine", _engine_row(p)),
    ]
    from studio.engine.step.speculative import plan_line

    if (spec := plan_line(data.chosen.plan)) is not None:
        rows.append(("Speculative decoding", spec))
    return rows


def _cluster_rows(data: ReportData) -> list[tuple[str, str]]:
    c = data.project.cluster
    kinds_used = sorted({lk.kind for lk in c.links})
    links = "; ".join(
        # "name: 450 GB/s", not "name (…) (450 GB/s)": many link kinds' names end in brackets already
        f"{c.link_kinds[k].name}: {units.readable(c.link_kinds[k].bandwidth_gbps)} GB/s" for k in kinds_used if k in c.link_kinds
    )
    price = data.chosen.plan.usd_per_hour / max(1, data.chosen.plan.gpus)
    return [
        ("Cluster", cluster_name(data)),
        ("GPUs", cluster_phrase(data)),
        ("Links drawn", links or "none"),
        ("Price", f"${price:,.2f} per GPU-hour"),
    ]


def _cluster_caption(data: ReportData) -> str:
    if draws_links(data.project.cluster):
        return ('<p class="caption">The drawn cluster. Tiles are GPUs coloured by the pipeline stage that runs on '
                "them (S0, S1, …); lines are the links the engine costs collectives over.</p>")
    c = data.project.cluster
    return (f'<p class="caption">The cluster as a map: each box is one of its {len(c.nodes):,} nodes, each cell one '
            f"of its {c.num_gpus:,} GPUs, coloured by the pipeline stage that runs on it. Too many to draw link by "
            f"link (the drawing shows every link up to {CANVAS_MAX_NODES} nodes and {CANVAS_MAX_GPUS:,} GPUs); the "
            "links drawn are listed above.</p>")


def _nodes_table(data: ReportData) -> str:
    """What runs on each node: one row per kind of node (nodes doing the same work slot by slot
    share a row), at most :data:`MAX_GROUP_ROWS` rows."""
    plan = data.chosen.plan
    groups = node_groups(data.project.cluster, plan)
    th = "".join(f'<th bgcolor="{HEAD_BG}">{h}</th>' for h in ("Nodes", "Count", "GPUs per node", "Runs",
                                                                 "Busiest GPU memory"))
    rows = []
    for g in groups[:MAX_GROUP_ROWS]:
        gpus = " + ".join(f"{n} × {escape(name)}" for name, n in g.gpu_types)
        mem = (f"{g.busiest.total / GIB:,.1f} of {g.busiest.capacity / GIB:,.1f} GiB" if g.busiest else "–")
        rows.append(f"<tr><td>{escape(node_names(g))}</td><td align=\"right\">{g.count:,}</td><td>{gpus}</td>"
                    f"<td>{escape(describe(g, plan))}</td><td align=\"right\">{mem}</td></tr>")
    rest = groups[MAX_GROUP_ROWS:]
    if rest:
        n = sum(g.count for g in rest)
        rows.append(f'<tr><td colspan="5">… {len(rest):,} more kinds of node ({n:,} nodes); '
                    "<code>layout-studio plan --json</code> lists every GPU</td></tr>")
    return (f'<table class="grid" border="1" cellspacing="0" cellpadding="4"><tr>{th}</tr>{"".join(rows)}</table>')


def _metric_label(label: str, better: str | None) -> str:
    """A comparison row's name with which way is better, in one pair of brackets:
    ``Time to first token (ms, lower is better)``, not ``(ms) (lower is better)``."""
    if better not in ("higher", "lower"):
        return escape(label)
    note = f'<span class="caption">{better} is better</span>'
    if label.endswith(")") and "(" in label:
        return f"{escape(label[:-1])}, {note})"
    return f"{escape(label)} ({note})"


def _comparison(data: ReportData) -> str:
    plans = [o.plan for o in data.options]
    head = "".join(
        f'<th bgcolor="{HEAD_BG}">{"Chosen<br>" if o.origin == "chosen" else ("Pinned<br>" if o.origin == "pinned" else "")}'
        f"{escape(o.name)}</th>"
        for o in data.options
    )
    body = []
    for row in ROWS:
        win = winners(row, plans)
        cells = []
        for i, p in enumerate(plans):
            text = escape(row.text(p))
            if i in win:
                cells.append(f'<td class="num win" bgcolor="{WIN_BG}" align="right"><b>★ {text}</b></td>')
            else:
                cells.append(f'<td class="num" align="right">{text}</td>')
        body.append(f"<tr><td>{_metric_label(row.label, row.better)}</td>{''.join(cells)}</tr>")
    return (f'<table class="grid" border="1" cellspacing="0" cellpadding="4"><tr><th bgcolor="{HEAD_BG}">Metric</th>'
            f"{head}</tr>{''.join(body)}</table>")


def _warnings(data: ReportData) -> str:
    rows = []
    for o in data.options:
        for w in o.plan.warnings:
            rows.append(
                f'<tr><td>{escape(o.plan.layout.label)}</td><td bgcolor="{SEVERITY_BG.get(w.severity, "#ffffff")}">'
                f"{escape(w.severity)}</td><td>{escape(unnest_brackets(w.message))}</td><td>{escape(unnest_brackets(w.fix))}</td></tr>"
            )
    if not rows:
        return "<p>No rule fired for any of the compared layouts.</p>"
    return (f'<table class="grid" border="1" cellspacing="0" cellpadding="4"><tr><th bgcolor="{HEAD_BG}">Layout</th>'
            f'<th bgcolor="{HEAD_BG}">Severity</th><th bgcolor="{HEAD_BG}">What</th><th bgcolor="{HEAD_BG}">Fix</th></tr>'
            + "".join(rows) + "</table>")


def _engine_row(p) -> str:
    """``vLLM 0.6.3: profile 'vllm-v0-async-output' (versions 0.6.0 – <0.8.0)`` (+ a fallback note);
    ``vLLM, newest profile: …`` when the project names no version."""
    from studio.engine.runtime import engine_setup

    s = engine_setup(p)
    version = f" {p.serving.runtime_version}" if p.serving.runtime_version else ", newest profile"
    text = f"{s.engine_name}{version}: profile '{s.profile.id}' (versions {s.profile.versions})"
    return text + (f"; {s.resolved.note}" if s.resolved.note else "")


def _assumptions(data: ReportData) -> str:
    plan = data.chosen.plan
    items = "".join(f"<li>{escape(a)}</li>" for a in plan.assumptions)
    if plan.calibration:
        prof = data.project.calibrations.get(plan.calibration)
        desc = f" — {prof.description}" if prof and prof.description else ""
        cal = f"Calibration profile in use: <b>{escape(plan.calibration)}</b>{escape(desc)}."
    else:
        cal = "Calibration profile in use: none — the engine's default link and efficiency figures."
    return f"<ul>{items}</ul><p>{cal}</p>"


def _p99(data: ReportData, figure: str) -> str:
    sim = data.simulation
    if sim is None:
        return ""
    d = getattr(sim, figure)
    return f"; p99 {units.readable(d.p99)} ms ({escape(data.simulation_note)})"


def _load_text(plan) -> str:
    ld = plan.load
    if ld is None:
        return "—"
    what = {"concurrency": f"{ld.users:,.0f} concurrent requests per replica (closed loop)",
            "rate": f"{ld.request_rate_per_s:,.3g} requests/s (open loop)",
            "offline": "all requests queued at once (offline)"}[ld.mode]
    sat = f"; saturation {ld.saturation_rate_per_s:,.3g} requests/s"
    return what + sat + (" — SATURATED: the queue grows without bound" if ld.saturated else "")


def _load_section(data: ReportData) -> list[str]:
    """Latency percentiles under the project's load (the request simulation)."""
    plan = data.chosen.plan
    out = ["<h2>Serving under load</h2>"]
    if plan.load is not None:
        out.append(f"<p>{escape(_load_text(plan))}. Definitions: {escape(plan.load.definition)}.</p>")
    sim = data.simulation
    if sim is None:
        out.append(f"<p>No percentiles: {escape(data.simulation_note or 'no simulation')}.</p>")
        return out
    rows = "".join(
        f"<tr><td>{name}</td><td>{units.readable(d.mean)}</td><td>{units.readable(d.p50)}</td><td>{units.readable(d.p90)}</td><td>{units.readable(d.p99)}</td></tr>"
        for name, d in (("TTFT (ms)", sim.ttft), ("TPOT (ms)", sim.tpot), ("ITL (ms)", sim.itl),
                        ("End to end (ms)", sim.e2e))
    )
    out.append("<table><tr><th>figure</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th></tr>" + rows + "</table>")
    out.append(f'<p class="caption">Request simulation of the project\'s load ({escape(data.simulation_note)}): '
               f"{units.readable(sim.output_tokens_per_s)} output tokens/s, {units.readable(sim.requests_per_s)} requests/s. "
               "The summary's means are the closed-form steady state (requests spread evenly); the percentiles come "
               "from this run, where requests of equal lengths that start together also finish together, so prompts "
               "arrive in clumps and TTFT can exceed the smooth steady state (a length spread in the workload's "
               "load evens them out).</p>")
    return out


def build_html(data: ReportData, images: Images, page_breaks: bool = False) -> str:
    """The whole report as one HTML string.

    Parameters
    ----------
    data:
        The gathered figures.
    images:
        How to reference the pictures named in :data:`PICTURES` and ``mem-0``, ``mem-1``, ...
    page_breaks:
        Start the big sections on a new page (the PDF).
    """
    p = data.project
    plan = data.chosen.plan
    brk = ' style="page-break-before: always"' if page_breaks else ""
    title = escape(report_title(data))
    out = [
        f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title} — Layout Studio report</title>"
        f"<style>{CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f'<p class="meta">Layout Studio plan report · {escape(data.created.strftime("%Y-%m-%d %H:%M"))}'
        + f" · project {escape(p.name)}" + "</p>",
        "<h2>Executive summary</h2>",
        f'<p class="summary">{escape(executive_summary(data))}</p>',
        _pairs([
            ("Layout", f"{plan.layout.label}, {plan.micro_batches} micro-batches, layers per stage "
                       + ",".join(str(s.layers) for s in plan.stages)),
            ("Fits", ("yes — " if plan.fits else "NO — ") + plan.fit_reason),
            ("Time to first token", f"{units.readable(plan.ttft_ms)} ms on average: waiting for token budget (and, under a "
                                    "request rate, for a free slot) + the scheduler iterations that prefill the "
                                    "new prompt beside the running requests' decode tokens"
                                    + _p99(data, "ttft")),
            ("Time per output token", f"{units.readable(plan.tpot_ms)} ms on average: one scheduler iteration with every running "
                                      "request's next token and the prompt chunks of new requests (prefill "
                                      "interference included)" + _p99(data, "tpot")),
            ("Load", _load_text(plan)),
            ("Throughput", f"{units.readable(plan.output_tokens_per_s)} output tokens/s ({units.readable(plan.output_tokens_per_s_per_gpu)} per GPU), "
                           "sustained, prefills included"),
            ("Cost", f"{units.usd(plan.usd_per_million_output_tokens)} per million output tokens"),
        ]),
        f"<h2{brk}>The cluster</h2>",
        _pairs(_cluster_rows(data)),
        # the table before the drawing: it fills the first page's foot, where the drawing does not fit
        "<h3>What runs on each node</h3>",
        _nodes_table(data),
        '<p class="caption">Nodes whose GPUs do the same work, slot by slot, share a row.</p>',
        _img(images, "cluster", "cluster drawing"),
        _cluster_caption(data),
        f"<h2{brk}>Model and workload</h2>",
        _pairs(_model_rows(data)),
        *_load_section(data),
        *reuse_section(data),
        *fleet_section(data),
        "<h2>Chosen layout and alternatives</h2>",
        "<p>Alternatives: "
        + ("the layouts pinned in the project." if any(o.origin == "pinned" for o in data.alternatives)
           else f"the sweep's best other splits for {escape(data.objective)}, each at its best batch size.")
        + " ★ marks the best value of each row among the layouts that fit.</p>",
        _comparison(data),
    ]
    reasons = "".join(f"<li>{escape(unnest_brackets(r))}</li>" for r in data.sweep.reasons)
    if reasons:
        out.append(f"<h3>Why the sweep ranks them this way</h3><ul>{reasons}</ul>")
    out.append(f"<h2{brk}>Memory per GPU</h2>")
    from studio.gui.views.memory_bars import (
        MAX_BARS,  # the bars' own rule (drawing needs Qt anyway)
    )

    per_stage = len(plan.memory) > MAX_BARS
    out.append(f'<p class="caption">Each bar is {"the busiest GPU of one pipeline stage" if per_stage else "one GPU"}: '
               "weights, KV cache, activations and runtime overhead against its capacity (the line at the top; red "
               "when over the usable share)"
               + (f"; with more than {MAX_BARS} GPUs the bars are grouped by stage." if per_stage else ".") + "</p>")
    for i, o in enumerate(data.options):
        peak = o.plan.peak_memory
        out.append(f"<h3>{'Chosen: ' if o.origin == 'chosen' else ''}{escape(o.name)} — busiest GPU "
                   f"{peak.total / GIB:,.1f} GiB of {peak.capacity / GIB:,.1f} GiB</h3>")
        out.append(_img(images, f"mem-{i}", f"memory bars of {o.name}", 0.85 if i else 1.0))
    out.append(f"<h2{brk}>Pipeline timelines</h2>")
    out.append('<p class="caption">All layouts on one shared time axis: bars further right take longer. Grey is '
               "idle time (the pipeline bubble), orange the tensor-parallel all-reduces.</p>")
    out.append("<h3>Prefill step: the prompts of the whole running batch, in micro-batches</h3>")
    out.append(_img(images, "timeline-prefill", "prefill timelines"))
    out.append(f"<h3{brk}>Decode step: one new token for every running request</h3>")
    out.append(_img(images, "timeline-decode", "decode timelines"))
    out.append(f"<h2{brk}>Every layout of this cluster (Pareto plot)</h2>")
    out.append(f'<p class="caption">Each dot is a layout and batch size that fits ({data.sweep.candidates:,} tried). '
               "Up and right is better; the line joins the layouts no other beats on both axes. The star is the "
               "chosen layout, diamonds the alternatives.</p>")
    out.append(_img(images, "pareto", "Pareto plot"))
    out.append("<h2>Warnings</h2>")
    out.append(_warnings(data))
    out.append("<h2>Assumptions</h2>")
    out.append(_assumptions(data))
    out.append(f"<h2{brk}>Appendix: launch commands</h2>")
    out.append("<p>What each serving engine needs to run the chosen layout "
               "(<code>layout-studio export --engine ENGINE</code> writes these with config files and scripts).</p>")
    for title_, text in data.exports:
        out.append(f"<h3>{escape(title_)}</h3><pre>{escape(text)}</pre>")
    out.append("</body></html>")
    return "\n".join(out)
