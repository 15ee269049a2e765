"""Disaggregated prefill/decode on the command line: ``plan --disagg``, ``sweep --disagg``, ``export --disagg``.

Syntax (one flag, documented in docs/cli.md)::

    --disagg 2P:tp4,1D:tp8                 2 prefill workers of TP4, 1 decode worker of TP8
    --disagg 1P:tp4pp2@h200-sxm,2D:tp2@l40s  pools on GPU types of a mixed cluster
    --disagg aggregated                    ignore a disaggregated mode stored in the PROJECT file

``sweep --disagg`` adds disaggregated candidates next to the aggregated ones. The mode is stored in
the project (``serving_mode``); a PROJECT file with a disaggregated ``serving_mode`` is planned
disaggregated without the flag.
"""

from __future__ import annotations

import argparse

from studio.commands.output import fmt, format_pairs, format_table
from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.serving_mode import SPEC_HELP, ServingMode, parse_pools
from studio.core.units import MIB


def add_disagg_args(parser: argparse.ArgumentParser, *, sweep: bool = False) -> None:
    """Add ``--disagg`` (a pool spec, or a flag on ``sweep``) and ``--kv-transfer-backend``."""
    g = parser.add_argument_group("disaggregated prefill/decode (see docs/cli.md)")
    if sweep:
        g.add_argument(
            "--disagg",
            action="store_true",
            help="also rank disaggregated candidates (x prefill + y decode workers, both layouts)",
        )
    else:
        g.add_argument(
            "--disagg",
            metavar="SPEC",
            help=f"serve with separate pools: {SPEC_HELP}; 'aggregated' = "
            "one pool (ignores a mode stored in PROJECT)",
        )
        g.add_argument(
            "--kv-transfer-backend",
            choices=("nixl", "mooncake", "ucx"),
            help="KV-transfer library the exports configure (default nixl)",
        )


def serving_mode(args: argparse.Namespace, project: Project) -> ServingMode:
    """The serving mode the command line asks for: ``--disagg`` SPEC, else the project's."""
    spec = getattr(args, "disagg", None)
    mode = project.serving_mode
    if isinstance(spec, str):
        mode = ServingMode() if spec.strip().lower() == "aggregated" else parse_pools(spec)
    backend = getattr(args, "kv_transfer_backend", None)
    if backend is not None:
        if not mode.disaggregated:
            raise StudioError(
                "--kv-transfer-backend configures disaggregated serving; add --disagg SPEC"
            )
        mode = mode.replace(transfer_backend=backend)
    return mode


# ----------------------------------------------------------------------------- plan
def format_disagg(project: Project, res, explain: bool = False) -> str:
    """The readable report of one disaggregated plan."""
    wl, sv = project.workload, project.serving
    p, d, t = res.prefill, res.decode, res.transfer
    precision = sv.effective_precision(project.model.precision).describe()
    sections = [
        "Plan (disaggregated prefill/decode)\n"
        + format_pairs(
            [
                ("project", project.name),
                (
                    "model",
                    f"{project.model.name} ({project.model_ref or project.model.id}), weights {precision}, "
                    f"KV {sv.kv_dtype.value}",
                ),
                (
                    "cluster",
                    f"{project.cluster.name}: {project.cluster.num_gpus} GPUs ({', '.join(project.cluster.gpu_types())})",
                ),
                (
                    "serving mode",
                    f"{res.label}  (--disagg {res.mode.spec()}), {res.gpus} GPUs"
                    + (f", {res.unused_gpus} unused" if res.unused_gpus else ""),
                ),
                ("workload", f"ISL {wl.isl}, OSL {wl.osl}"),
                ("load", _load_text(res)),
                ("fits", f"yes — {res.fit_reason}"),
            ]
        )
    ]
    for pool, what in ((p, "prompt-only iterations"), (d, "decode-only iterations")):
        per = (
            f"{fmt(pool.batch)} prompts per full iteration of {fmt(pool.iteration_ms)} ms"
            if pool.role == "prefill"
            else f"{fmt(pool.batch)} sequences decoding per worker, iteration {fmt(pool.iteration_ms)} ms"
        )
        sections.append(
            f"{pool.role.capitalize()} pool: {pool.label}\n"
            + format_pairs(
                [
                    (
                        "workers",
                        f"{pool.pool.workers} × {pool.pool.worker_label()} on {', '.join(pool.gpu_types)} "
                        f"({pool.gpus} GPUs: {_gpus(pool.placement)})",
                    ),
                    (
                        "memory per GPU",
                        f"weights {pool.weights_gib:.2f} GiB, KV pool {pool.kv_pool_gib:.2f} GiB "
                        f"({fmt(pool.kv_sequences)} sequences per worker)",
                    ),
                    ("runs", f"{what}; {per}"),
                    (
                        "capacity",
                        f"{fmt(pool.capacity_rps)} req/s; {pool.utilisation:.0%} busy at the load",
                    ),
                ]
            )
        )
    sections.append(
        "KV transfer (prefill → decode)\n"
        + format_pairs(
            [
                (
                    "per request",
                    f"{t.bytes_per_request / MIB:,.1f} MiB in {t.flows} rank-to-rank flows "
                    f"(largest {t.bytes_per_flow / MIB:,.1f} MiB)",
                ),
                (
                    "time",
                    f"{fmt(t.time_ms)} ms (mean of {t.pairs} worker pair(s); slowest {fmt(t.worst_ms)} ms)",
                ),
                (
                    "slowest hop",
                    f"{t.bottleneck_name or '-'}"
                    + (f" (link {t.bottleneck_link})" if t.bottleneck_link else "")
                    + f", {fmt(t.bandwidth_gbps)} GB/s per flow, {t.src_gpu} → {t.dst_gpu}",
                ),
            ]
        )
    )
    status = res.status
    if not status.ok:
        sections.append("Status\n" + format_pairs([("code", status.code), ("figures", status.headline),
                                                    ("why", status.reason)]))
    gone = f"- ({status.headline})"
    from studio.engine.disagg.summary import figures  # not loaded by sweep --disagg

    said = figures(res)  # the same words as the Serving mode panel and the export's header
    lat = [
        ("TTFT", said["TTFT"]),
        ("TPOT", said["TPOT"]),
        ("end-to-end", f"{fmt(res.request_latency_ms)} ms" if status.shows("request") else gone),
    ]
    if wl.ttft_ms is not None:
        met = status.shows("ttft") and res.ttft_ms <= wl.ttft_ms
        lat.append(("TTFT target", f"{fmt(wl.ttft_ms)} ms — {'met' if met else 'MISSED'}"))
    if wl.tpot_ms is not None:
        met = status.shows("tpot") and res.tpot_ms <= wl.tpot_ms
        lat.append(("TPOT target", f"{fmt(wl.tpot_ms)} ms — {'met' if met else 'MISSED'}"))
    if "prefix cache" in said:
        sections.append("Prefix cache (prefill pool)\n  " + said["prefix cache"])
    sections.append("Latency\n" + format_pairs(lat))
    sections.append(
        "Throughput (output tokens)\n"
        + format_pairs(
            [
                (
                    "total",
                    f"{fmt(res.output_tokens_per_s)} tok/s at {fmt(res.request_rate_per_s)} req/s",
                ),
                ("per GPU", f"{fmt(res.output_tokens_per_s_per_gpu)} tok/s"),
                ("per user", f"{fmt(res.tokens_per_s_per_user)} tok/s"),
                (
                    "saturation",
                    f"{fmt(res.saturation_rate_per_s)} req/s, limited by the {res.limited_by}",
                ),
            ]
        )
    )
    sections.append("Balance\n  " + res.balance.describe(p.pool.workers, d.pool.workers))
    sections.append(
        "Cost\n"
        + format_pairs(
            [
                ("pools", f"${res.usd_per_hour:,.2f} per hour"),
                (
                    "per million output tokens",
                    f"${res.usd_per_million_output_tokens:,.3f}"
                    if res.output_tokens_per_s > 0
                    else "-",
                ),
            ]
        )
    )
    sections.append("Why\n" + "\n".join(f"  - {r}" for r in res.reasons))
    if res.load_note:
        sections.append("Note\n  " + res.load_note)
    sections.append("Assumptions\n" + "\n".join(f"  - {a}" for a in res.assumptions))
    if explain:
        sections.append(
            "Explanations\n" + "\n\n".join(e.as_text() for e in res.explanations.values())
        )
    return "\n\n".join(sections)


def _gpus(placement: tuple[str, ...]) -> str:
    return ", ".join(placement) if len(placement) <= 4 else f"{placement[0]} … {placement[-1]}"


def _load_text(res) -> str:
    if res.load_mode == "rate":
        head = f"open loop at {fmt(res.request_rate_per_s)} req/s"
    else:
        what = "offline batch as" if res.load_mode == "offline" else "closed loop of"
        head = f"{what} {fmt(res.users)} users over both pools"
    return (
        head
        + f"; pools saturate at {fmt(res.saturation_rate_per_s)} req/s"
        + (" — SATURATED" if res.saturated else "")
    )


# ----------------------------------------------------------------------------- export
def run_export(args: argparse.Namespace, project: Project, hosts: list[str] | None) -> int:
    """``export --disagg``: one server per worker of each pool and the router, or ``--check`` them."""
    from pathlib import Path

    from studio.engine.disagg.evaluate import evaluate_disaggregated
    from studio.io.export.checks.safety import escape_for_terminal
    from studio.io.export.disaggregated.disagg import export_disaggregated

    if args.fmt not in ("command", "yaml"):
        raise StudioError(
            f"--format {args.fmt}: a disaggregated export writes commands and config files; "
            "use --format command or yaml"
        )
    if isinstance(args.check, str):
        raise StudioError(
            "--check CONFIG checks one engine config file; with --disagg use --check alone"
        )
    res = evaluate_disaggregated(project)
    bundle, recipe = export_disaggregated(
        project, res, engine=args.engine, model_path=args.model_path, hosts=hosts
    )
    if args.check is not None:
        from studio.commands.options.check_output import print_check
        from studio.io.export.checks.disagg_check import check_disaggregated

        python = getattr(args, "engine_python", None)
        report = check_disaggregated(recipe, python=python, timeout_s=getattr(args, "engine_timeout", None))
        print_check(report.lines())
        if python is not None and report.engine_checked is None:
            return 2  # the engine's validation was asked for and gave no verdict: not a pass
        return 0 if report.ok else 2
    if args.output:
        from studio.io.export.write import write_files

        for path in write_files(bundle.files, Path(args.output)):
            print(escape_for_terminal(str(path)))
        return 0
    for name, text in bundle.files.items():
        print(f"# ===== {name} =====")
        print(escape_for_terminal(text, keep="\n\t"), end="" if text.endswith("\n") else "\n")
    return 0


# ----------------------------------------------------------------------------- sweep
def disagg_sweep_section(project: Project, sw, agg_best: float | None, top: int) -> str:
    """The sweep's disaggregated table, and how the best compares with the best aggregated row."""
    rows = list(sw.rows[:top])
    table = [
        [
            str(i + 1),
            "*" if r is sw.best else "",
            r.label,
            str(r.gpus),
            fmt(r.batch),
            fmt(r.ttft_ms),
            fmt(r.tpot_ms),
            fmt(r.transfer_ms),
            fmt(r.tokens_per_s_per_gpu),
            fmt(r.tokens_per_s_per_user),
            fmt(r.usd_per_million),
            r.limited_by,
            "yes" if r.meets_targets else "no",
        ]
        for i, r in enumerate(rows)
    ]
    head = (
        f"Disaggregated candidates: {sw.combinations:,} pool splits × decode batches = {sw.n_rows:,} rows "
        "(batch = sequences per decode worker)"
    )
    parts = [
        head,
        format_table(
            [
                "#",
                "",
                "pools",
                "GPUs",
                "batch",
                "TTFT ms",
                "TPOT ms",
                "KV ms",
                "tok/s/GPU",
                "tok/s/user",
                "$/M tok",
                "limit",
                "targets",
            ],
            table,
            right={0, 3, 4, 5, 6, 7, 8, 9, 10},
        ),
    ]
    best = sw.best
    if best is None:
        parts.append("Best disaggregated: none meets the targets")
    else:
        line = f"Best disaggregated: {best.label}, batch {best.batch}: {best.why()}"
        if agg_best:
            line += (
                f"\n  {fmt(best.tokens_per_s_per_gpu)} tok/s per GPU = {best.tokens_per_s_per_gpu / agg_best:.2f}× "
                f"the best aggregated layout ({fmt(agg_best)} tok/s per GPU)"
            )
        if (pc := _best_prefix_cache(sw)) is not None:
            from studio.engine.disagg.explain import prefix_line

            line += "\n  " + prefix_line(pc, best.batch)
        parts.append(line)
    if sw.skipped:
        parts.append(
            "Worker layouts left out:\n" + "\n".join(f"  - {k}" for k in sorted(sw.skipped)[:6])
        )
    return "\n\n".join(parts)


def _best_prefix_cache(sw) -> dict | None:
    """The prefill pool's prefix cache of the best disaggregated row (None without prefix caching)."""
    from studio.engine.kv_tiers.tiers import prefix_cache_on

    if sw.best is None or not prefix_cache_on(sw.project):
        return None
    return sw.result(sw.best).prefix_cache


def disagg_sweep_json(sw, top: int, agg_best: float | None) -> dict:
    """The ``disaggregated`` object of ``sweep --disagg --json`` (``prefix_cache``: the best row's
    prefill pool cache, only when the project caches prefixes)."""
    best = sw.best
    out = {
        "combinations": sw.combinations,
        "rows": sw.n_rows,
        "candidates": [
            {
                "pools": r.label,
                "spec": r.mode.spec(),
                "gpus": r.gpus,
                "batch": r.batch,
                "ttft_ms": r.ttft_ms,
                "tpot_ms": r.tpot_ms,
                "kv_transfer_ms": r.transfer_ms,
                "kv_transfer_over": r.transfer_over,
                "tokens_per_s": r.tokens_per_s,
                "tokens_per_s_per_gpu": r.tokens_per_s_per_gpu,
                "tokens_per_s_per_user": r.tokens_per_s_per_user,
                "usd_per_million": r.usd_per_million,
                "limited_by": r.limited_by,
                "saturated": r.saturated,
                "meets_targets": r.meets_targets,
                "why": r.why(),
            }
            for r in sw.rows[:top]
        ],
        "best": 0 if best is not None else None,
        "vs_best_aggregated": (best.tokens_per_s_per_gpu / agg_best)
        if best is not None and agg_best
        else None,
        "skipped": dict(sw.skipped),
    }
    if (pc := _best_prefix_cache(sw)) is not None:
        out["prefix_cache"] = pc
    return out


def format_disagg_slo(slo: dict) -> str:
    """The disaggregated SLO section of the readable sweep."""
    head = (
        f"SLO, disaggregated: p99 TTFT ≤ {fmt(slo['ttft_p99_ms'])} ms at {slo['rate_per_s']:g} req/s "
        f"(closed form screens, {slo['requests']:,} simulated requests check)"
    )
    rows = [
        [
            e["pools"],
            fmt(e["batch"]),
            fmt(e["saturation_rate_per_s"]),
            fmt(e["ttft_mean_ms"]),
            fmt(e["ttft_p99_ms"]),
            fmt(e["tpot_ms"]),
            e["verdict"],
        ]
        for e in slo["checked"]
    ]
    table = format_table(
        ["pools", "batch", "sat. req/s", "TTFT mean", "TTFT p99", "TPOT", "verdict"],
        rows,
        right={1, 2, 3, 4, 5},
    )
    best = slo["best"]
    if best is None:
        tail = "Best disaggregated meeting the SLO: none of the pools checked"
    else:
        e = slo["checked"][best]
        tail = (
            f"Best disaggregated meeting the SLO: {e['pools']}, batch {e['batch']} "
            f"(p99 TTFT {fmt(e['ttft_p99_ms'])} ms)"
        )
    return "\n\n".join([head, table, tail])


def best_aggregated_per_gpu(result) -> float | None:
    """Tokens/s per GPU of the aggregated sweep's recommended row (None when none is recommended)."""
    if result.recommended is None:
        return None
    return float(result.columns["tokens_per_s_per_gpu"][int(result.recommended)])
