"""``sweep --traffic ID|FILE --ttft-p99-ms X --tpot-p99-ms Y``: the sweep's fitting layouts ranked by
cost per day at a p99 SLO for a day of traffic (the fleet objective, docs/fleet.md).

Each distinct replica shape among the sweep's fitting rows (best first for the objective, at most
``--top`` of them) gets a capacity plan (:func:`studio.service.fleet.rank_layouts`: request
simulation, replicas per slot with headroom and the autoscaler's lag, cost, energy); the table and
the JSON's ``fleet.ranked`` list them cheapest per day first.
"""

from __future__ import annotations

import argparse

from studio.commands.options.arg_types import non_negative_float, positive_float, positive_int
from studio.core.errors import StudioError

__all__ = ["add_fleet_args", "fleet_ranking", "format_fleet_ranking"]


def add_fleet_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--traffic``, ``--peak``, ``--ttft-p99-ms``, ``--tpot-p99-ms``, ``--headroom`` and
    ``--fleet-requests`` to ``sweep``."""
    g = parser.add_argument_group("cost per day for a day of traffic (see docs/fleet.md)")
    g.add_argument("--traffic", metavar="ID|FILE",
                   help="rank the fitting layouts by cost per day for this traffic: a bundled curve "
                        "(`layout-studio presets traffic`) or a CSV/JSON file")
    g.add_argument("--peak", type=positive_float, metavar="R", help="rescale the curve so its busiest slot is R req/s")
    g.add_argument("--ttft-p99-ms", type=positive_float, metavar="X", help="p99 TTFT of the fleet SLO, ms (with --traffic)")
    g.add_argument("--tpot-p99-ms", type=positive_float, metavar="Y", help="p99 TPOT of the fleet SLO, ms (with --traffic)")
    g.add_argument("--headroom", type=non_negative_float, default=0.2, metavar="F",
                   help="spare capacity per slot, a fraction (default 0.2)")
    g.add_argument("--fleet-requests", type=positive_int, default=400, metavar="N",
                   help="requests simulated per replica at each rate tried (default 400)")


def fleet_ranking(args: argparse.Namespace, project, result, top: int) -> dict | None:
    """The ranking asked for by ``--traffic`` as a JSON-ready dict, or None without it.

    Raises
    ------
    StudioError
        A p99 target is missing, a target is given without ``--traffic``, or the traffic is bad.
    """
    traffic_arg = getattr(args, "traffic", None)
    ttft, tpot = getattr(args, "ttft_p99_ms", None), getattr(args, "tpot_p99_ms", None)
    if traffic_arg is None:
        if ttft is not None or tpot is not None or getattr(args, "peak", None) is not None:
            raise StudioError("--ttft-p99-ms, --tpot-p99-ms and --peak rank layouts by cost per day; "
                              "add --traffic ID|FILE (`layout-studio presets traffic` lists the bundled curves)")
        return None
    if ttft is None or tpot is None:
        raise StudioError("--traffic ranks layouts by cost per day at a p99 SLO: add --ttft-p99-ms X and --tpot-p99-ms Y")
    from studio.commands.capacity import _rank_json
    from studio.io.fleet_presets import load_traffic
    from studio.service.fleet import FleetOptions, rank_layouts, replica_layouts

    traffic = load_traffic(traffic_arg)
    if args.peak is not None:
        traffic = traffic.scaled_to_peak(args.peak)
    options = FleetOptions(ttft, tpot, headroom=args.headroom, requests=args.fleet_requests)
    fits = result.columns["fits"]
    layouts = replica_layouts(result.layout(int(i)) for i in result.order if fits[int(i)])[:top]
    ranked = rank_layouts(project, traffic, options, layouts)
    return {"traffic": traffic_arg, "peak_rate_per_s": float(traffic.rates_per_s.max()),
            "slo": {"ttft_p99_ms": ttft, "tpot_p99_ms": tpot}, "headroom": args.headroom,
            "ranked": [_rank_json(r) for r in ranked]}


def format_fleet_ranking(doc: dict) -> str:
    """The ranking as a table, cheapest per day first."""
    from studio.commands.capacity import _indent, _rank_table
    from studio.commands.output import fmt

    slo = doc["slo"]
    head = (f"Layouts by cost per day at the SLO ({doc['traffic']}, peak {fmt(doc['peak_rate_per_s'])} req/s, "
            f"p99 TTFT ≤ {fmt(slo['ttft_p99_ms'])} ms, p99 TPOT ≤ {fmt(slo['tpot_p99_ms'])} ms, "
            f"headroom {doc['headroom']:.0%})")
    return head + "\n" + _indent(_rank_table(doc["ranked"]))
