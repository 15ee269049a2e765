"""``layout-studio presets``: the bundled GPUs, models, link kinds and node templates, with their key
figures and the sources those figures come from."""

from __future__ import annotations

import argparse

from studio.commands.output import fmt, format_table, print_json

KINDS = ("gpus", "models", "links", "nodes", "workloads", "engines")
#: Kinds listed only when named (not part of the hardware and model catalogue printed by default).
EXTRA_KINDS = ("traffic",)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``presets`` command."""
    p = subparsers.add_parser(
        "presets",
        help="list the bundled GPUs, models, link kinds, node templates, workloads, engine profiles and traffic curves",
        description="List the bundled presets with their key figures and sources.",
    )
    p.add_argument("kind", nargs="?", choices=KINDS + EXTRA_KINDS,
                   help="one kind of preset (default: gpus, models, links and nodes; 'traffic' lists the bundled "
                   "day curves of `layout-studio capacity --traffic`)")
    p.add_argument("--json", action="store_true", help="print one JSON object keyed by kind")
    p.add_argument("--no-sources", action="store_true", help="table only, without the sources")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the presets of one kind, or of every kind."""
    if args.kind == "traffic":
        return _traffic(args)
    from studio.io.presets import load_catalog

    cat = load_catalog()
    kinds = (args.kind,) if args.kind else KINDS
    if args.json:
        print_json({k: _JSON[k](cat) for k in kinds})
        return 0
    blocks = [_TABLES[k](cat, not args.no_sources) for k in kinds]
    print("\n\n".join(blocks))
    return 0


# ----------------------------------------------------------------------------- JSON
def gpus_json(cat) -> list[dict]:
    return [g.model_dump(mode="json") for g in cat.gpus.values()]


def links_json(cat) -> list[dict]:
    return [k.model_dump(mode="json") | {"effective_gbps": k.effective_gbps} for k in cat.links.values()]


def nodes_json(cat) -> list[dict]:
    return [t.model_dump(mode="json") | {"gpus": t.gpus_per_node * t.trays} for t in cat.nodes.values()]


def models_json(cat) -> list[dict]:
    out = []
    for m in cat.models.values():
        a = m.architecture
        out.append({
            "id": m.id,
            "name": m.name,
            "hf_model_id": m.hf_model_id,
            "model_type": a.model_type,
            "params": a.num_params,
            "active_params": a.num_active_params,
            "layers": a.num_layers,
            "hidden_size": a.hidden_size,
            "attention_heads": a.num_attention_heads,
            "kv_heads": a.num_kv_heads,
            "head_dim": a.head_dim,
            "max_context": a.max_context,
            "moe": None if a.moe is None else {
                "experts": a.moe.num_experts,
                "experts_per_token": a.moe.experts_per_token,
                "shared_experts": a.moe.num_shared_experts,
            },
            "mla": a.mla is not None,
            "precision": a.precision.describe(),
            "kv_bytes_per_token_bf16": a.kv_bytes_per_token("bf16"),
            "sources": m.sources,
            "notes": m.notes,
        })
    return out


def _p(q: float, dist, nominal: int) -> float:
    """Quantile ``q`` of a length distribution (histogram or vLLM-random uniform)."""
    if dist.kind == "histogram" and dist.histogram:
        total = sum(w for _, w in dist.histogram)
        acc = 0.0
        for length, w in dist.histogram:
            acc += w
            if acc >= q * total:
                return float(length)
        return float(dist.histogram[-1][0])
    if dist.kind == "uniform":
        return nominal * (1 - dist.spread + 2 * dist.spread * q)
    return float(nominal)


def workloads_json(_cat) -> list[dict]:
    from studio.io.workloads import workload_presets

    out = []
    for w in workload_presets().values():
        out.append({"id": w.id, "name": w.name, "description": w.description, "source": w.source,
                    "derived": w.derived, "isl_mean": w.isl_mean, "osl_mean": w.osl_mean,
                    "isl_p50": _p(0.5, w.isl, w.isl_mean), "isl_p99": _p(0.99, w.isl, w.isl_mean),
                    "osl_p50": _p(0.5, w.osl, w.osl_mean), "osl_p99": _p(0.99, w.osl, w.osl_mean)})
    out.append({"id": "random:ISL:OSL[:RATIO]", "name": "vLLM bench serve random dataset",
                "description": "lengths uniform on [L x (1 - RATIO), L x (1 + RATIO)], RATIO default 0",
                "source": "vllm/benchmarks/datasets.py RandomDataset (--random-input-len, --random-output-len, "
                          "--random-range-ratio)"})
    return out


def engines_json(_cat) -> list[dict]:
    from studio.engine.runtime import ENGINES, engine_profiles

    return [{"engine": p.engine, "id": p.id, "label": p.label, "versions": p.versions,
             "kernel_table": f"{p.kernel_engine} {p.kernel_version}", "overlap": p.scheduler.overlap,
             "memory_mode": p.memory.mode, "file": p.file} for e in ENGINES for p in engine_profiles(e)]


_JSON = {"gpus": gpus_json, "models": models_json, "links": links_json, "nodes": nodes_json,
         "workloads": workloads_json, "engines": engines_json}


# ----------------------------------------------------------------------------- tables
def _params(n: float) -> str:
    return f"{n / 1e9:,.1f} B" if n >= 1e9 else f"{n / 1e6:,.0f} M"


def _sources(items, with_sources: bool) -> str:
    """Per preset, each distinct source with the fields it backs."""
    if not with_sources:
        return ""
    lines = ["", "Sources"]
    for ident, sources in items:
        by_text: dict[str, list[str]] = {}
        for field, text in sources.items():
            by_text.setdefault(text, []).append(field)
        if not by_text:
            lines.append(f"  {ident}: (no sources recorded)")
            continue
        lines.append(f"  {ident}:")
        lines += [f"    {', '.join(fields)}: {text}" for text, fields in by_text.items()]
    return "\n".join(lines)


def gpus_table(cat, with_sources: bool = True) -> str:
    headers = ["id", "name", "memory GB", "HBM GB/s", "BF16 TFLOPS", "FP8 TFLOPS", "FP4 TFLOPS",
               "scale-up link", "PCIe", "W", "$/GPU-h", "node template"]
    rows = [
        [g.id, g.name, fmt(g.memory_gb), fmt(g.hbm_bandwidth_gbps), fmt(g.tflops_bf16), fmt(g.tflops_fp8),
         fmt(g.tflops_fp4), g.scale_up_link or "-", f"Gen{g.host_pcie_gen}", fmt(g.power_w),
         f"{g.price_per_gpu_hour:.2f}", g.default_node_template or "-"]
        for g in cat.gpus.values()
    ]
    body = format_table(headers, rows, right={2, 3, 4, 5, 6, 9, 10})
    return f"GPUs ({len(rows)})\n{body}" + _sources(((g.id, g.sources) for g in cat.gpus.values()), with_sources)


def models_table(cat, with_sources: bool = True) -> str:
    headers = ["id", "type", "params", "active", "layers", "heads", "kv heads", "KV B/token (bf16)",
               "context", "experts", "precision"]
    rows = []
    for m in cat.models.values():
        a = m.architecture
        experts = f"{a.moe.experts_per_token}/{a.moe.num_experts}" if a.moe else "-"
        if a.moe and a.moe.num_shared_experts:
            experts += f" +{a.moe.num_shared_experts}"
        rows.append([m.id, a.model_type + (" (MLA)" if a.mla else ""), _params(a.num_params),
                     _params(a.num_active_params), str(a.num_layers), str(a.num_attention_heads),
                     str(a.num_kv_heads), fmt(a.kv_bytes_per_token("bf16")), fmt(a.max_context), experts,
                     a.precision.describe()])
    body = format_table(headers, rows, right={2, 3, 4, 5, 6, 7, 8})
    return f"Models ({len(rows)})\n{body}" + _sources(((m.id, m.sources) for m in cat.models.values()), with_sources)


def links_table(cat, with_sources: bool = True) -> str:
    headers = ["id", "family", "GB/s per direction", "latency µs", "efficiency", "effective GB/s", "name"]
    rows = [
        [k.id, k.family.value, fmt(k.bandwidth_gbps), fmt(k.latency_us), f"{k.efficiency:.2f}",
         fmt(k.effective_gbps), k.name]
        for k in cat.links.values()
    ]
    body = format_table(headers, rows, right={2, 3, 4, 5})
    return f"Link kinds ({len(rows)})\n{body}" + _sources(((k.id, k.sources) for k in cat.links.values()), with_sources)


def nodes_table(cat, with_sources: bool = True) -> str:
    headers = ["id", "GPU", "GPUs", "trays", "fabric", "scale-up link", "NICs", "name"]
    rows = [
        [t.id, t.gpu_type, str(t.gpus_per_node * t.trays), str(t.trays), t.fabric, t.scale_up_link or "-",
         f"{t.nics}× {t.nic_kind}" if t.nic_kind else "-", t.name]
        for t in cat.nodes.values()
    ]
    body = format_table(headers, rows, right={2, 3})
    return f"Node templates ({len(rows)})\n{body}" + _sources(((t.id, t.sources) for t in cat.nodes.values()), with_sources)


def workloads_table(cat, with_sources: bool = True) -> str:
    rows = [[w["id"], fmt(w.get("isl_mean")), fmt(w.get("isl_p50")), fmt(w.get("isl_p99")), fmt(w.get("osl_mean")),
             fmt(w.get("osl_p50")), fmt(w.get("osl_p99")), w["name"]] for w in workloads_json(cat)]
    headers = ["id (--lengths)", "ISL mean", "p50", "p99", "OSL mean", "p50", "p99", "name"]
    body = format_table(headers, rows, right={1, 2, 3, 4, 5, 6})
    items = ((w["id"], {"lengths": w["source"]}) for w in workloads_json(cat))
    return f"Workloads ({len(rows)})\n{body}" + _sources(items, with_sources)


def engines_table(cat, with_sources: bool = True) -> str:
    rows = [[e["engine"], e["id"], e["versions"], e["kernel_table"], "overlapped" if e["overlap"] else "synchronous",
             e["memory_mode"], e["label"]] for e in engines_json(cat)]
    headers = ["engine (--runtime)", "profile", "versions (--runtime-version)", "kernel table", "scheduler",
               "KV sizing", "label"]
    note = "\n  every value and its source: presets/engines/<engine>.json; `plan --explain` shows those a plan used"
    return f"Engine profiles ({len(rows)})\n{format_table(headers, rows, right=set())}" + (note if with_sources else "")


_TABLES = {"gpus": gpus_table, "models": models_table, "links": links_table, "nodes": nodes_table,
           "workloads": workloads_table, "engines": engines_table}


# ----------------------------------------------------------------------------- traffic
def _traffic(args: argparse.Namespace) -> int:
    """``presets traffic``: the bundled day curves with their peak, volume and how they were made."""
    from studio.io.fleet_presets import traffic_presets

    presets = traffic_presets()
    if args.json:
        print_json({"traffic": [
            {"id": p.id, "name": p.name, "description": p.description, "source": p.source,
             "slot_minutes": p.traffic.slot_s / 60.0, "rates_per_s": p.traffic.rates_per_s.tolist(),
             "peak_rate_per_s": p.traffic.peak_per_s, "requests_per_day": p.traffic.requests_per_day}
            for p in presets.values()
        ]})
        return 0
    rows = [[p.id, p.name, f"{p.traffic.slots} × {fmt(p.traffic.slot_s / 60)} min", fmt(p.traffic.peak_per_s),
             fmt(float(p.traffic.rates_per_s.min())), fmt(p.traffic.requests_per_day)] for p in presets.values()]
    body = format_table(["id", "name", "slots", "peak req/s", "lowest req/s", "requests/day"], rows, right={3, 4, 5})
    text = f"Traffic curves ({len(rows)})\n{body}"
    if not args.no_sources:
        text += "\n\nHow they were made\n" + "\n".join(f"  {p.id}: {p.description} {p.source}" for p in presets.values())
    print(text)
    return 0
