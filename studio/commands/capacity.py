"""``layout-studio capacity``: how many replicas of a layout a day's traffic needs within a p99
SLO, what they cost per day, per month and per million tokens, and what they draw (kW, kWh per day,
joules per output token, kg CO2e per day). See docs/fleet.md."""

from __future__ import annotations

import argparse
import math

from studio.commands.options.arg_types import non_negative_float, positive_float, positive_int
from studio.commands.options.project_args import project_from_args
from studio.commands.options.project_flags import add_project_args
from studio.commands.output import fmt, format_pairs, format_table, print_json
from studio.core.errors import StudioError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``capacity`` command."""
    p = subparsers.add_parser(
        "capacity",
        help="replicas, cost and energy for a day of traffic within a p99 SLO",
        description="Find the highest request rate one replica of the layout holds within p99 TTFT and p99 "
        "TPOT (request simulation, bisection with a fixed seed), then the replicas each time slot of the "
        "traffic needs (headroom, the autoscaler's lag), GPU-hours, cost (reserved base + on-demand or spot "
        "burst), power, energy and emissions. See docs/fleet.md.",
    )
    add_project_args(p, layout=True)
    g = p.add_argument_group("traffic")
    src = g.add_mutually_exclusive_group(required=True)
    src.add_argument("--rate", dest="constant_rate", type=positive_float, metavar="R",
                     help="the same R requests per second all day")
    src.add_argument("--traffic", metavar="ID|FILE",
                     help="a bundled curve (`layout-studio presets traffic`) or a CSV/JSON file (docs/fleet.md)")
    g.add_argument("--peak", type=positive_float, metavar="R", help="rescale the curve so its busiest slot is R req/s")
    g.add_argument("--slot-minutes", type=positive_int, metavar="N",
                   help="bin a CSV into slots of N minutes (a divisor of 1,440; default 60 for timestamps)")
    g = p.add_argument_group("SLO (p99 of the simulated requests, every slot)")
    g.add_argument("--ttft-p99-ms", type=positive_float, metavar="X", required=True, help="p99 time to first token, ms")
    g.add_argument("--tpot-p99-ms", type=positive_float, metavar="Y", required=True, help="p99 time per output token, ms")
    g.add_argument("--requests", type=positive_int, metavar="N", default=400,
                   help="requests simulated per replica at each rate tried (default 400)")
    g.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the simulated arrivals (default 0)")
    g = p.add_argument_group("fleet")
    g.add_argument("--headroom", type=non_negative_float, default=0.2, metavar="F",
                   help="spare capacity per slot, a fraction (default 0.2 = 20 %%)")
    g.add_argument("--min-replicas", type=positive_int, default=1, metavar="N", help="replicas kept in any slot (default 1)")
    g.add_argument("--storage-gbps", type=positive_float, metavar="GBPS",
                   help="weight-loading bandwidth of a new replica, GB/s (default: presets/fleet.json)")
    g.add_argument("--engine-start-s", type=non_negative_float, metavar="S", help="engine start-up, seconds")
    g.add_argument("--graph-capture-s", type=non_negative_float, metavar="S", help="CUDA-graph capture, seconds")
    g = p.add_argument_group("cost")
    g.add_argument("--price-reserved", type=non_negative_float, metavar="USD",
                   help="reserved GPU-hour price (default: the on-demand price)")
    g.add_argument("--price-on-demand", type=non_negative_float, metavar="USD",
                   help="on-demand GPU-hour price (default: the GPU preset's price)")
    g.add_argument("--price-spot", type=non_negative_float, metavar="USD", help="spot GPU-hour price (with --burst spot)")
    g.add_argument("--burst", choices=("on-demand", "spot"), default="on-demand",
                   help="what replicas above the reserved base run on (default on-demand)")
    g.add_argument("--spot-preemptions-per-hour", type=non_negative_float, default=0.0, metavar="P",
                   help="preemptions per spot replica per hour; each lost replica is replaced after the ready time")
    g.add_argument("--reserved-replicas", type=int, metavar="N",
                   help="reserved base (default: the fewest replicas of any slot)")
    g = p.add_argument_group("energy")
    g.add_argument("--pue", type=positive_float, metavar="F", help="facility PUE (default: presets/power.json)")
    g.add_argument("--grid-g-per-kwh", type=non_negative_float, metavar="G",
                   help="grid carbon intensity, g CO2e per kWh (default: presets/power.json)")
    g = p.add_argument_group("compare")
    g.add_argument("--compare-gpus", action="store_true",
                   help="also plan the same traffic on H100, H200, B200 and L40S (one node each, cheapest TP)")
    g.add_argument("--rank", action="store_true",
                   help="plan every replica layout of the sweep of the cluster and rank them by cost per day")
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object (the scripting contract)")
    p.set_defaults(func=run)


def _options(args: argparse.Namespace):
    from studio.service.fleet import FleetOptions

    if args.reserved_replicas is not None and args.reserved_replicas < 0:
        raise StudioError(f"--reserved-replicas: {args.reserved_replicas} is negative")
    if args.burst == "spot" and args.price_spot is None:
        raise StudioError("--burst spot needs --price-spot USD (the spot price per GPU-hour)")
    return FleetOptions(
        ttft_p99_ms=args.ttft_p99_ms, tpot_p99_ms=args.tpot_p99_ms, headroom=args.headroom, requests=args.requests,
        seed=args.seed, min_replicas=args.min_replicas, storage_gbps=args.storage_gbps,
        engine_start_s=args.engine_start_s, graph_capture_s=args.graph_capture_s,
        reserved_usd_per_gpu_hour=args.price_reserved, on_demand_usd_per_gpu_hour=args.price_on_demand,
        spot_usd_per_gpu_hour=args.price_spot, burst=args.burst,
        spot_preemptions_per_hour=args.spot_preemptions_per_hour, reserved_replicas=args.reserved_replicas,
        pue=args.pue, grid_g_co2e_per_kwh=args.grid_g_per_kwh,
    )


def traffic_from_args(args: argparse.Namespace):
    """The traffic of ``--rate`` or ``--traffic`` (rescaled by ``--peak``)."""
    from studio.engine.fleet.traffic import constant

    if args.constant_rate is not None:
        if args.slot_minutes is not None:
            raise StudioError("--slot-minutes bins a --traffic CSV file; --rate is one rate all day")
        tr = constant(args.constant_rate)
    else:
        from studio.io.fleet_presets import load_traffic

        tr = load_traffic(args.traffic, args.slot_minutes)
    return tr.scaled_to_peak(args.peak) if args.peak is not None else tr


def run(args: argparse.Namespace) -> int:
    """Plan the fleet and print it."""
    try:
        return _run(args)
    except StudioError as exc:
        if exc.field == "traffic" and args.constant_rate is not None:  # the rate came from --rate
            raise StudioError(f"--rate: {exc.message}", exc.source) from None
        raise


def _run(args: argparse.Namespace) -> int:
    from studio.service.fleet import capacity_plan, compare_gpus

    traffic = traffic_from_args(args)
    options = _options(args)
    project = project_from_args(args)
    result = capacity_plan(project, traffic, options)
    doc = {"project": project.name, "model": project.model.name, "slo": {"ttft_p99_ms": options.ttft_p99_ms,
                                                                          "tpot_p99_ms": options.tpot_p99_ms},
           **result.to_json()}
    ranked = None
    if args.rank:
        from studio.service.fleet import rank_layouts, sweep_layouts

        ranked = rank_layouts(project, traffic, options, sweep_layouts(project))
        doc["ranked"] = [_rank_json(r) for r in ranked]
    compared = None
    if args.compare_gpus:
        compared = compare_gpus(project, traffic, options)
        doc["gpus"] = [{"gpu": gpu, **_rank_json(r)} for gpu, r in compared]
    if args.json:
        print_json(doc)
    else:
        print(format_capacity(doc, ranked, compared))
    return 0


def _rank_json(r) -> dict:
    if r.result is None:
        return {"layout": r.layout.label, "planned": False, "reason": r.reason}
    p = r.result.plan
    return {"layout": r.layout.replace(dp=1).label, "planned": True, "gpus_per_replica": p.gpus_per_replica,
            "max_rate_per_s": r.result.capacity.rate_per_s, "peak_replicas": int(p.replicas.max()),
            "gpu_hours_per_day": p.gpu_hours_per_day, "usd_per_day": p.usd_per_day,
            "usd_per_million_output_tokens": p.usd_per_million_output_tokens, "kwh_per_day": p.kwh_per_day,
            "j_per_output_token": p.j_per_output_token}


def _money(v: float) -> str:
    return "-" if not math.isfinite(v) else f"${v:,.0f}" if v >= 100 else f"${v:,.2f}"


def format_capacity(doc: dict, ranked=None, compared=None) -> str:
    """The readable report: replica, slots, cost, energy, and the comparisons asked for."""
    r, f, c, e = doc["replica"], doc["fleet"], doc["cost"], doc["energy"]
    tr = doc["traffic"]
    head = format_pairs([
        ("project", doc["project"]),
        ("traffic", f"{tr['name']} ({fmt(tr['slot_minutes'])}-minute slots, peak {fmt(tr['peak_rate_per_s'])} req/s, "
                    f"{fmt(tr['requests_per_day'])} requests/day)"),
        ("SLO", f"p99 TTFT ≤ {fmt(doc['slo']['ttft_p99_ms'])} ms, p99 TPOT ≤ {fmt(doc['slo']['tpot_p99_ms'])} ms"),
        ("replica", f"{r['layout']} on {r['gpus']} × {r['gpu']}: {fmt(r['max_rate_per_s'])} req/s within the SLO "
                    f"(simulated p99 TTFT {fmt(r['ttft_p99_ms'])} ms, TPOT {fmt(r['tpot_p99_ms'])} ms; "
                    f"saturation {fmt(r['saturation_rate_per_s'])} req/s"
                    + (f"; prefix cache serves {r['prefix_cache_hit_rate']:.0%} of prompt tokens)"
                       if "prefix_cache_hit_rate" in r else ")")),
        ("ready time", f"{fmt(f['ready_s'])} s = {fmt(f['ready']['weights_gb'])} GB at {fmt(f['ready']['storage_gbps'])} "
                       f"GB/s + {fmt(f['ready']['engine_start_s'])} s start-up + {fmt(f['ready']['graph_capture_s'])} s "
                       "CUDA graphs"),
    ])
    slots = doc["slots"]
    rows = [[s["start"], fmt(s["rate_per_s"]), str(s["needed"]), str(s["replicas"]), str(s["gpus"]),
             f"{s['rate_per_replica_per_s'] / r['max_rate_per_s'] * 100:.0f} %", fmt(s["watts"] / 1e3),
             "yes" if s["slo_met"] else "NO"] for s in slots]
    if len(rows) > 48:  # a per-minute day: the hour boundaries only, the JSON has every slot
        step = len(rows) // 24
        rows = rows[::step]
    table = format_table(["start", "req/s", "needed", "replicas", "GPUs", "load", "kW", "SLO"], rows)
    parts = [
        "Capacity plan\n" + head,
        "Slots (needed: for the slot's own rate with headroom; replicas: asked for a ready time ahead, spot spares "
        "included; load: share of one replica's rate within the SLO)\n" + _indent(table),
        "Cost\n" + format_pairs([
            ("per day", f"{_money(c['usd_per_day'])} ({fmt(f['gpu_hours_per_day'])} GPU-hours: {c['reserved_replicas']} "
                        f"reserved replicas all day {_money(c['reserved_usd_per_day'])}, {c['burst']} burst "
                        f"{fmt(c['burst_gpu_hours_per_day'])} GPU-hours {_money(c['burst_usd_per_day'])})"),
            ("per month", _money(c["usd_per_month"])),
            ("per million output tokens", _money(c["usd_per_million_output_tokens"])),
            ("peak", f"{f['peak_replicas']} replicas, {f['peak_gpus']} GPUs"),
        ]),
        "Energy\n" + format_pairs([
            ("GPUs", f"{fmt(e['kwh_per_day'])} kWh/day, peak {fmt(e['peak_kw'])} kW, "
                     f"{fmt(e['j_per_output_token'])} J per output token"),
            ("facility", f"{fmt(e['facility_kwh_per_day'])} kWh/day at PUE {fmt(e['pue'])}"),
            ("emissions", f"{fmt(e['kg_co2e_per_day'])} kg CO2e/day at {fmt(e['grid_g_co2e_per_kwh'])} g/kWh"),
        ]),
    ]
    if ranked is not None:
        parts.append("Layouts by cost per day at the SLO\n" + _indent(_rank_table(doc["ranked"])))
    if compared is not None:
        parts.append("Other GPUs (one node each, cheapest TP, preset prices)\n" + _indent(_rank_table(doc["gpus"], gpu=True)))
    return "\n\n".join(parts)


def _rank_table(rows: list[dict], gpu: bool = False) -> str:
    out = []
    for x in rows:
        first = [x["gpu"]] if gpu else []
        if not x["planned"]:
            out.append([*first, x["layout"], "-", "-", "-", "-", "-", "-", x["reason"][:70]])
            continue
        out.append([*first, x["layout"], fmt(x["max_rate_per_s"]), str(x["peak_replicas"]), fmt(x["gpu_hours_per_day"]),
                    _money(x["usd_per_day"]), _money(x["usd_per_million_output_tokens"]), fmt(x["kwh_per_day"]), ""])
    heads = [*(["GPU"] if gpu else []), "replica", "req/s each", "peak replicas", "GPU-h/day", "$/day", "$/M tok",
             "kWh/day", "note"]
    return format_table(heads, out)


def _indent(text: str, n: int = 2) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())
