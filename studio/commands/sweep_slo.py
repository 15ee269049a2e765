"""``sweep --ttft-p99 MS --at-rate R``: a latency SLO as a percentile at a request rate.

The sweep ranks layouts as usual; then, in ranking order, each distinct layout (TP, PP, EP, DP,
micro-batches) that fits is served at R requests/s:

1. **closed form** (:func:`studio.engine.evaluate` under the rate): a layout whose saturation rate is
   at or below R, or whose *mean* TTFT already exceeds the target, is out (a p99 is never below the
   mean);
2. **simulation** (:func:`studio.engine.serving.simulate_plan`) of the first ``--slo-check K``
   survivors: p99 TTFT of the project's ``num_requests`` requests against the target.

The best layout meeting the SLO is the first in the sweep's ranking whose simulated p99 meets it.
"""

from __future__ import annotations

import argparse

from studio.commands.common import fmt, format_table, positive_float, positive_int
from studio.core.errors import StudioError

#: Distinct layouts looked at through the closed form (the sweep can hold hundreds).
MAX_SCREENED = 200


def add_slo_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--ttft-p99``, ``--at-rate`` and ``--slo-check`` to ``sweep``."""
    g = parser.add_argument_group("latency SLO as a percentile (see docs/load.md)")
    g.add_argument("--ttft-p99", type=positive_float, metavar="MS", help="p99 TTFT target, ms, at --at-rate")
    g.add_argument("--at-rate", type=positive_float, metavar="R",
                   help="request rate (req/s, all replicas, Poisson) the SLO is checked at (default: --rate)")
    g.add_argument("--slo-check", type=positive_int, default=5, metavar="K",
                   help="layouts passing the closed form that are simulated (default 5)")


def slo_rate(args: argparse.Namespace, project) -> float | None:  # noqa: ANN001
    """The rate of the SLO, or None without ``--ttft-p99``.

    Raises
    ------
    StudioError
        ``--at-rate`` without ``--ttft-p99``, or ``--ttft-p99`` without any request rate.
    """
    target = getattr(args, "ttft_p99", None)
    at_rate = getattr(args, "at_rate", None)
    if target is None:
        if at_rate is not None:
            raise StudioError("--at-rate is the rate of a percentile SLO; add --ttft-p99 MS")
        return None
    if at_rate is not None:
        return float(at_rate)
    load = project.workload.load
    if load.mode == "rate" and load.rate_per_s is not None:
        return float(load.rate_per_s)
    raise StudioError("--ttft-p99 needs the request rate it holds at: add --at-rate R (requests per second)")


def check_slo(project, result, target_ms: float, rate: float, check: int) -> dict:  # noqa: ANN001
    """Screen the sweep's layouts at ``rate`` and simulate the first ``check`` survivors.

    Returns
    -------
    dict
        ``{"ttft_p99_ms", "rate_per_s", "checked": [...], "best": index into checked or None}``;
        each checked entry names the layout and gives the closed form's saturation rate and mean
        TTFT, the simulated p50/p99 TTFT and p99 TPOT (or None when not simulated) and a verdict.
    """
    from studio.core.workload import Load
    from studio.engine import evaluate
    from studio.engine.serving import simulate_plan

    load = project.workload.load
    at = Load(mode="rate", rate_per_s=rate, arrival=load.arrival if load.mode == "rate" else "poisson",
              num_requests=load.num_requests, isl_dist=load.isl_dist, osl_dist=load.osl_dist, seed=load.seed)
    cols = result.columns
    seen: set[tuple[int, ...]] = set()
    checked: list[dict] = []
    simulated = 0
    for r in (int(i) for i in result.order):
        if not bool(cols["fits"][r]):
            continue
        layout = result.layout(r)
        key = (layout.tp, layout.pp, layout.ep, layout.dp, layout.micro_batches)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > MAX_SCREENED or simulated >= check:
            break
        wl = project.workload.replace(batch=int(cols["batch"][r]), load=at)
        p = project.replace(workload=wl)
        plan = evaluate(p, layout)
        s = plan.load
        entry = {
            "layout": layout.label, "micro_batches": layout.micro_batches, "row": r,
            "saturation_rate_per_s": s.saturation_rate_per_s, "ttft_mean_ms": plan.ttft_ms,
            "ttft_p50_ms": None, "ttft_p99_ms": None, "tpot_p99_ms": None,
            "tokens_per_s_per_gpu": plan.output_tokens_per_s_per_gpu, "meets": False,
        }
        if s.saturated:
            entry["verdict"] = f"saturated (saturation {s.saturation_rate_per_s:.3g} req/s)"
        elif plan.ttft_ms > target_ms:
            entry["verdict"] = f"mean TTFT {plan.ttft_ms:,.0f} ms already above the target"
        else:
            sim = simulate_plan(p, layout)
            simulated += 1
            entry.update(ttft_p50_ms=sim.ttft.p50, ttft_p99_ms=sim.ttft.p99, tpot_p99_ms=sim.tpot.p99)
            entry["meets"] = sim.ttft.p99 <= target_ms
            entry["verdict"] = "meets" if entry["meets"] else f"p99 TTFT {sim.ttft.p99:,.0f} ms misses"
        checked.append(entry)
    best = next((i for i, e in enumerate(checked) if e["meets"]), None)
    return {"ttft_p99_ms": target_ms, "rate_per_s": rate, "requests": at.num_requests, "checked": checked,
            "best": best}


def format_slo(slo: dict) -> str:
    """The SLO section of the readable sweep."""
    head = (f"SLO: p99 TTFT ≤ {fmt(slo['ttft_p99_ms'])} ms at {slo['rate_per_s']:g} req/s (Poisson; closed form "
            f"screens, {slo['requests']:,} simulated requests check)")
    rows = [
        [e["layout"], str(e["micro_batches"]), fmt(e["saturation_rate_per_s"]), fmt(e["ttft_mean_ms"]),
         fmt(e["ttft_p99_ms"]), fmt(e["tpot_p99_ms"]), e["verdict"]]
        for e in slo["checked"]
    ]
    table = format_table(["layout", "M", "sat. req/s", "TTFT mean", "TTFT p99", "TPOT p99", "verdict"], rows,
                         right={1, 2, 3, 4, 5})
    best = slo["best"]
    if best is None:
        tail = "Best meeting the SLO: none of the layouts checked (lower the rate, raise the target or add GPUs)"
    else:
        e = slo["checked"][best]
        tail = f"Best meeting the SLO: {e['layout']}, M={e['micro_batches']} (p99 TTFT {fmt(e['ttft_p99_ms'])} ms)"
    return "\n\n".join([head, table, tail])
