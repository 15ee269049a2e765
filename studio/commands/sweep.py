"""``layout-studio sweep``: every valid layout of the cluster, ranked, with the Pareto frontier."""

from __future__ import annotations

import argparse
from pathlib import Path

from studio.commands.options.arg_types import int_list, positive_int
from studio.commands.options.project_args import project_from_args
from studio.commands.options.project_flags import add_load_args, add_project_args, add_runtime_args
from studio.commands.output import fmt, format_table, print_json
from studio.core.errors import StudioError

OBJECTIVES = ("throughput", "cost", "latency")

#: Table columns: (header, column name in ``SweepResult.columns``).
TABLE_COLUMNS = (
    ("M", "micro_batches"),
    ("batch", "batch"),
    ("fits", "fits"),
    ("mem GiB", "mem_peak_gib"),
    ("TTFT ms", "ttft_ms"),
    ("TPOT ms", "tpot_ms"),
    ("tok/s", "tokens_per_s"),
    ("tok/s/GPU", "tokens_per_s_per_gpu"),
    ("tok/s/user", "tokens_per_s_per_user"),
    ("$/M tok", "usd_per_million"),
    ("bubble", "bubble"),
    ("targets", "meets_targets"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``sweep`` command."""
    p = subparsers.add_parser(
        "sweep",
        help="rank every TP × PP × EP × DP layout of the cluster",
        description="Enumerate every layout of the cluster (TP × PP × EP × DP, micro-batches, batch): those "
        "that use all GPUs and those on whole TP groups of each server that leave the rest idle; filter by the "
        "TTFT/TPOT targets, rank by the objective and mark the Pareto frontier of throughput per GPU against tokens/s per user.",
    )
    add_project_args(p, layout=False)
    add_runtime_args(p)
    add_load_args(p)
    g = p.add_argument_group("ranking and output")
    g.add_argument("--objective", choices=OBJECTIVES, default="throughput", help="what 'best' means (default throughput)")
    g.add_argument("--top", type=positive_int, default=10, metavar="K", help="layouts to show (default 10)")
    g.add_argument("--json", action="store_true", help="print one JSON object (the scripting contract)")
    g.add_argument("--csv", metavar="FILE", help="write every evaluated row with all its columns to FILE")
    g = p.add_argument_group("context parallelism (see docs/engine.md)")
    g.add_argument("--cp", dest="sweep_cp", type=int_list, metavar="C1,C2,...",
                   help="context-parallel sizes to try (default: every size the rules allow; 1 = none)")
    g.add_argument("--cp-mode", dest="sweep_cp_mode", choices=("decode", "prefill"),
                   help="try only this context-parallel mode (default both)")
    from studio.commands.sweep_slo import add_slo_args

    add_slo_args(p)
    from studio.commands.options.disagg_args import add_disagg_args

    add_disagg_args(p, sweep=True)
    from studio.commands.sweep_fleet import add_fleet_args

    add_fleet_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the project, sweep it, print the ranking."""
    project = project_from_args(args)
    from studio.commands.sweep_slo import format_slo, slo_targets
    from studio.engine import sweep

    targets = slo_targets(args, project)

    if args.csv:
        _check_writable(Path(args.csv))
    result = sweep(
        project,
        objective=args.objective,
        ttft_ms=project.workload.ttft_ms,
        tpot_ms=project.workload.tpot_ms,
        cp_sizes=_cp_sizes(args.sweep_cp),
        cp_modes=(args.sweep_cp_mode,) if args.sweep_cp_mode else ("decode", "prefill"),
    )
    rows = shown_rows(result, args.top)
    slo = None
    if targets is not None:
        from studio.service.slo import check_slo

        slo = check_slo(project, result, targets, simulate=args.slo_check)
    if args.csv:
        write_csv(result, Path(args.csv))
    # the p99 TTFT check of the pool splits reads the rows past the shown ones
    disagg = _disagg(args, project, result, full=targets is not None and targets.ttft_p99_ms is not None)
    from studio.commands.sweep_fleet import fleet_ranking

    fleet = fleet_ranking(args, project, result, args.top)
    disagg_slo = None
    if disagg is not None and targets is not None and targets.ttft_p99_ms is not None:
        from studio.service.disagg_slo import check_disagg_slo

        disagg_slo = check_disagg_slo(project, disagg, targets.ttft_p99_ms, targets.rate_per_s, args.slo_check)
    if args.json:
        data = sweep_json(result, rows, args.objective)
        if slo is not None:
            data["slo"] = slo.to_json()
        if disagg is not None:
            from studio.commands.options.disagg_args import (
                best_aggregated_per_gpu,
                disagg_sweep_json,
            )

            data["disaggregated"] = disagg_sweep_json(disagg, args.top, best_aggregated_per_gpu(result))
            if disagg_slo is not None:
                data["disaggregated"]["slo"] = disagg_slo
        if fleet is not None:
            data["fleet"] = fleet
        print_json(data)
    else:
        print(format_sweep(project, result, rows, args.objective))
        from studio.commands.load_text import sweep_load_section

        at_load = sweep_load_section(result, rows, _label)
        if at_load:
            print("\n" + at_load)
        if slo is not None:
            print("\n" + format_slo(slo))
        if disagg is not None:
            from studio.commands.options.disagg_args import (
                best_aggregated_per_gpu,
                disagg_sweep_section,
            )

            print("\n" + disagg_sweep_section(project, disagg, best_aggregated_per_gpu(result), args.top))
            if disagg_slo is not None:
                from studio.commands.options.disagg_args import format_disagg_slo

                print("\n" + format_disagg_slo(disagg_slo))
        if fleet is not None:
            from studio.commands.sweep_fleet import format_fleet_ranking

            print("\n" + format_fleet_ranking(fleet))
        if args.csv:
            print(f"\nwrote {result.candidates} rows to {args.csv}")
    return 0


def _disagg(args: argparse.Namespace, project, result, full: bool = False):
    """``--disagg``: the disaggregated candidates under the same targets and objective, or None;
    only the ``--top`` best rows unless ``full``."""
    if not getattr(args, "disagg", False):
        return None
    from studio.engine.disagg.sweep import sweep_disaggregated

    return sweep_disaggregated(project, objective=args.objective, ttft_ms=result.ttft_ms, tpot_ms=result.tpot_ms,
                               top=None if full else args.top)


def _cp_sizes(values: list[int] | None) -> list[int] | None:
    if values is None:
        return None
    bad = [v for v in values if v < 1]
    if bad:
        raise StudioError(f"--cp sizes must be positive integers (got {bad[0]})")
    return sorted(set(values))


def _check_writable(path: Path) -> None:
    if path.is_dir():
        raise StudioError(f"--csv {path}: is a folder; give a file name")
    if not path.parent.exists():
        raise StudioError(f"--csv {path}: folder '{path.parent}' does not exist")


def _ints(values) -> list[int]:
    return [int(v) for v in values]


def shown_rows(result, top: int) -> list[int]:
    """Rows to show, best first: the ``top`` best, plus every Pareto row and the recommended row
    (so that ``pareto`` and ``recommended`` can index the shown layouts)."""
    order = _ints(result.order)
    keep = set(order[:top]) | set(_ints(result.pareto))
    if result.recommended is not None:
        keep.add(int(result.recommended))
    rank = {r: i for i, r in enumerate(order)}
    return sorted(keep, key=lambda r: rank.get(r, len(order) + r))


def sweep_json(result, rows: list[int], objective: str) -> dict:
    """The ``sweep --json`` object: plans of the shown rows and indices into them."""
    from studio.commands.load_text import summary_json

    pos = {r: i for i, r in enumerate(rows)}
    layouts = []
    cols = result.columns
    for r in rows:
        plan_result = result.plan(r, details=False)  # to_json prints no explanations or timelines
        plan = plan_result.to_json()
        plan["load"] = summary_json(plan_result.load, result.project.workload.load)
        plan["sweep"] = {
            "row": r,
            "meets_targets": bool(cols["meets_targets"][r]) if "meets_targets" in cols else None,
            "reason_unfit": result.reasons_unfit[r] if r < len(result.reasons_unfit) else "",
            "idle_gpus": int(cols["idle_gpus"][r]) if "idle_gpus" in cols else 0,
        }
        layouts.append(plan)
    return {
        "candidates": int(result.candidates),
        "objective": objective,
        "layouts": layouts,
        "pareto": [pos[r] for r in _ints(result.pareto) if r in pos],
        "recommended": pos.get(int(result.recommended)) if result.recommended is not None else None,
        "reasons": list(result.reasons),
    }


def _label(cols, r: int) -> str:
    tp, pp, dp = int(cols["tp"][r]), int(cols["pp"][r]), int(cols["dp"][r])
    ep = int(cols["ep"][r]) if "ep" in cols else 1
    label = f"TP{tp}×PP{pp}"
    if dp > 1:
        label += f"×DP{dp}"
    if ep > 1:
        label += f"×EP{ep}"
    cp = int(cols["cp"][r]) if "cp" in cols else 1
    if cp > 1:
        label += f"×{'PCP' if bool(cols['cp_prefill'][r]) else 'DCP'}{cp}"
    idle = int(cols["idle_gpus"][r]) if "idle_gpus" in cols else 0
    if idle:
        label += f" ({idle} GPU{'s' if idle != 1 else ''} idle)"
    return label


def _cell(cols, name: str, r: int) -> str:
    if name not in cols:
        return "-"
    v = cols[name][r]
    if name == "bubble":
        return f"{float(v) * 100:.0f}%"
    if name in ("fits", "meets_targets"):
        return "yes" if bool(v) else "no"
    if name in ("micro_batches", "batch", "kv_capacity_tokens", "warnings_count"):
        return fmt(int(v))
    return fmt(float(v))


def format_sweep(project, result, rows: list[int], objective: str) -> str:
    """The readable ranking: one line per shown layout, marks for Pareto (P) and recommended (*)."""
    cols = result.columns
    pareto = set(_ints(result.pareto))
    rec = int(result.recommended) if result.recommended is not None else None
    order = {r: i for i, r in enumerate(_ints(result.order))}
    headers = ["#", "", "layout"] + [h for h, _ in TABLE_COLUMNS]
    table = []
    for r in rows:
        mark = ("*" if r == rec else "") + ("P" if r in pareto else "")
        table.append([str(order.get(r, r) + 1), mark, _label(cols, r)] + [_cell(cols, c, r) for _, c in TABLE_COLUMNS])
    wl = project.workload
    targets = []
    if wl.ttft_ms is not None:
        targets.append(f"TTFT ≤ {fmt(wl.ttft_ms)} ms")
    if wl.tpot_ms is not None:
        targets.append(f"TPOT ≤ {fmt(wl.tpot_ms)} ms")
    fitting = int(sum(bool(v) for v in cols["fits"])) if "fits" in cols else 0
    head = (
        f"Sweep of {project.model.name} on {project.cluster.name} ({project.cluster.num_gpus} GPUs), "
        f"ISL {wl.isl}, OSL {wl.osl}\n"
        f"{result.candidates} candidate layouts, {fitting} fit; objective: {objective}"
        + (f"; targets: {', '.join(targets)}" if targets else "")
    )
    parts = [head, format_table(headers, table, right=set(range(3, len(headers))) | {0}),
             "* recommended   P on the Pareto frontier (tok/s per GPU vs tok/s per user)"]
    if rec is not None:
        parts.append(f"Recommended: {_label(cols, rec)}, M={_cell(cols, 'micro_batches', rec)}, "
                     f"batch {_cell(cols, 'batch', rec)}")
    else:
        parts.append("Recommended: none — no layout fits and meets the targets")
    if result.reasons:
        parts.append("\n".join(f"  - {reason}" for reason in result.reasons))
    return "\n\n".join(parts)


def write_csv(result, path: Path) -> None:
    """Every evaluated row, best first, with all columns, its rank, Pareto flag and unfit reason."""
    cols = result.columns
    names = list(cols)
    pareto = set(_ints(result.pareto))
    order = _ints(result.order)
    seen = set(order)
    n_rows = len(next(iter(cols.values()))) if cols else 0
    ranked = order + [r for r in range(n_rows) if r not in seen]
    import csv  # only --csv writes one: not imported at start-up
    import io

    from studio.io.atomic import write_text_atomic

    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["rank", "row", "layout", *names, "pareto", "recommended", "reason_unfit"])
    for i, r in enumerate(ranked):
        values = [_csv_value(cols[n][r]) for n in names]
        reason = result.reasons_unfit[r] if r < len(result.reasons_unfit) else ""
        w.writerow([i + 1, r, _label(cols, r), *values, r in pareto, r == result.recommended, reason])
    # one atomic write: a device, FIFO or folder target is refused, a failure leaves no half file
    write_text_atomic(buf.getvalue(), path, what="--csv file")


def _csv_value(v):
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float):
        return f"{v:.6g}"
    return v
