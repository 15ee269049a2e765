"""Capacity planning of a project for a day of traffic: one implementation for
``layout-studio capacity``, the Fleet view, the Explorer's cost ranking and the report.

:func:`capacity_plan` finds the highest rate one replica of the layout holds the SLO at (request
simulation, bisection), the replicas per slot, cost, power and energy
(:mod:`studio.engine.fleet`); :func:`rank_layouts` does it for several candidate layouts and
orders them by cost per day; :func:`compare_gpus` plans the same traffic on other GPU presets,
each on its cheapest single-node replica layout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.fleet.plan import Facility, FleetPlan, Pricing, ReadyTime, plan_fleet
from studio.engine.fleet.power import PowerPoint, power_at_rate, power_curve
from studio.engine.fleet.replica import (
    ReplicaCapacity,
    Slo,
    max_rate_within_slo,
    replica_setup,
    replica_shape,
)
from studio.engine.fleet.traffic import Traffic

#: GPUs set side by side by ``capacity --compare-gpus`` (presets/gpus.json ids).
COMPARED_GPUS = ("h100-sxm", "h200-sxm", "b200", "l40s")


@dataclass(frozen=True)
class FleetOptions:
    """Everything a capacity plan takes besides the project, its layout and the traffic.

    ``None`` means the default: prices from the GPU preset (on-demand, also for the reserved base),
    start-up figures from ``presets/fleet.json``, PUE and carbon intensity from ``presets/power.json``.
    """

    ttft_p99_ms: float
    tpot_p99_ms: float
    headroom: float = 0.2
    requests: int = 400
    seed: int = 0
    min_replicas: int = 1
    storage_gbps: float | None = None
    engine_start_s: float | None = None
    graph_capture_s: float | None = None
    reserved_usd_per_gpu_hour: float | None = None
    on_demand_usd_per_gpu_hour: float | None = None
    spot_usd_per_gpu_hour: float | None = None
    burst: Literal["on-demand", "spot"] = "on-demand"
    spot_preemptions_per_hour: float = 0.0
    reserved_replicas: int | None = None
    pue: float | None = None
    grid_g_co2e_per_kwh: float | None = None

    @property
    def slo(self) -> Slo:
        return Slo(self.ttft_p99_ms, self.tpot_p99_ms)


@dataclass(frozen=True)
class FleetResult:
    """One layout's capacity plan."""

    layout: Layout
    gpu_id: str
    capacity: ReplicaCapacity
    plan: FleetPlan
    at_capacity: PowerPoint  # one replica at its highest rate within the SLO
    #: Share of prompt tokens the prefix cache serves in the simulation (None: caching off or
    #: nothing repeats); the replica rate above is found with it.
    prefix_hit_rate: float | None = None

    def to_json(self) -> dict[str, Any]:
        c = self.capacity
        replica = {
            "layout": self.layout.replace(dp=1).label, "gpu": self.gpu_id, "gpus": self.plan.gpus_per_replica,
            "max_rate_per_s": c.rate_per_s, "failing_rate_per_s": c.failing_rate_per_s,
            "saturation_rate_per_s": c.saturation_rate_per_s, "ttft_p99_ms": c.ttft_p99_ms,
            "tpot_p99_ms": c.tpot_p99_ms, "simulated_requests": c.requests, "seed": c.seed,
            "watts_at_max_rate": self.at_capacity.watts,
            "j_per_output_token_at_max_rate": self.at_capacity.j_per_output_token,
        } | ({"prefix_cache_hit_rate": self.prefix_hit_rate} if self.prefix_hit_rate is not None else {})
        return {"replica": replica, **self.plan.to_json()}


def _defaults():
    from studio.io.fleet_presets import power_params, startup_defaults

    params, facility = power_params()
    startup, sources = startup_defaults()
    return params, facility, startup, sources


def capacity_plan(project: Project, traffic: Traffic, options: FleetOptions, layout: Layout | None = None) -> FleetResult:
    """The fleet ``traffic`` needs with replicas of ``layout`` (default: the project's).

    Raises
    ------
    StudioError
        The layout does not fit, the SLO cannot be met at any rate, a slot needs more replicas
        than any fleet has, or an option is out of range.
    """
    layout = project.layout if layout is None else layout
    params, facility_d, startup, sources = _defaults()
    setup = replica_setup(project, layout)
    shape = replica_shape(project, layout)
    cap = max_rate_within_slo(setup, project, options.slo, requests=options.requests, seed=options.seed)
    rates, watts = power_curve(setup, shape, params, cap.rate_per_s)

    def replica_watts(r: np.ndarray) -> np.ndarray:
        return np.interp(r, rates, watts)

    gpu_id = shape.spec.id
    preset_price = float(shape.spec.price_per_gpu_hour)
    on_demand = options.on_demand_usd_per_gpu_hour if options.on_demand_usd_per_gpu_hour is not None else preset_price
    reserved = options.reserved_usd_per_gpu_hour if options.reserved_usd_per_gpu_hour is not None else on_demand
    if options.burst == "spot":
        if options.spot_usd_per_gpu_hour is None:
            raise StudioError("a spot burst needs the spot price per GPU-hour", field="spot_price")
        burst_price = options.spot_usd_per_gpu_hour
    else:
        burst_price = on_demand
    ready = ReadyTime(
        weights_gb=shape.weight_bytes / 1e9,
        storage_gbps=options.storage_gbps if options.storage_gbps is not None else startup["storage_gbps"],
        engine_start_s=options.engine_start_s if options.engine_start_s is not None else startup["engine_start_s"],
        graph_capture_s=options.graph_capture_s if options.graph_capture_s is not None else startup["graph_capture_s"],
        sources=sources,
    )
    if not ready.storage_gbps > 0:
        raise StudioError(f"storage bandwidth must be > 0 GB/s, not {ready.storage_gbps}", field="storage_gbps")
    pricing = Pricing(reserved, burst_price, options.burst, options.spot_preemptions_per_hour, options.reserved_replicas)
    facility = Facility(options.pue if options.pue is not None else facility_d["pue"],
                        options.grid_g_co2e_per_kwh if options.grid_g_co2e_per_kwh is not None
                        else facility_d["grid_g_co2e_per_kwh"])
    plan = plan_fleet(traffic, cap.rate_per_s, shape.gpus, replica_watts, float(setup.osl), headroom=options.headroom,
                      ready=ready, pricing=pricing, facility=facility, min_replicas=options.min_replicas)
    hit = setup.cached / setup.isl if setup.prefix is not None else None
    return FleetResult(layout, gpu_id, cap, plan, power_at_rate(setup, shape, params, cap.rate_per_s), hit)


@dataclass(frozen=True)
class RankedLayout:
    """A candidate layout's plan, or why it has none."""

    layout: Layout
    result: FleetResult | None
    reason: str = ""

    @property
    def usd_per_day(self) -> float:
        return self.result.plan.usd_per_day if self.result is not None else float("inf")


def replica_layouts(layouts: Iterable[Layout]) -> list[Layout]:
    """The first of each replica shape (TP, PP, EP within a replica, micro-batches, CP) among
    ``layouts``, in order: a fleet scales by replicas, so layouts that differ only in DP are one
    candidate (each keeps its DP: the cluster it is costed on is the one drawn)."""
    seen: dict[tuple, Layout] = {}
    for lay in layouts:
        key = (lay.tp, lay.pp, min(lay.ep, lay.tp * lay.pp), lay.micro_batches, lay.cp, lay.cp_mode)
        seen.setdefault(key, lay)
    return list(seen.values())


def rank_layouts(project: Project, traffic: Traffic, options: FleetOptions, layouts: Iterable[Layout],
                 *, progress: Callable[[float], bool] | None = None) -> list[RankedLayout]:
    """Each distinct replica layout's plan, cheapest per day first (those without a plan last).

    ``progress(fraction)`` is called before each layout; it returns False to stop (what is planned
    so far is returned)."""
    out: list[RankedLayout] = []
    todo = replica_layouts(layouts)
    for i, lay in enumerate(todo):
        if progress is not None and not progress(i / max(len(todo), 1)):
            break
        try:
            out.append(RankedLayout(lay, capacity_plan(project, traffic, options, lay)))
        except StudioError as exc:
            out.append(RankedLayout(lay, None, exc.message))
    return sorted(out, key=lambda r: r.usd_per_day)


def sweep_layouts(project: Project) -> list[Layout]:
    """The layouts of the cluster's sweep that fit, best first for the project's objective (the
    Explorer's ranking), as candidates for :func:`rank_layouts`."""
    from studio.engine import sweep
    from studio.service.explore.recommend import sweep_kwargs

    result = sweep(project, **sweep_kwargs(project))
    fits = result.columns["fits"]
    return [result.layout(int(i)) for i in result.order if fits[int(i)]]


def _gpu_project(project: Project, gpu_id: str) -> Project:
    """``project`` on one node of ``gpu_id``'s usual node template (its own price)."""
    from studio.core.building.builders import build_cluster
    from studio.io.presets import load_catalog

    cat = load_catalog()
    template = cat.template_for_gpu(gpu_id)
    cluster = build_cluster(template, 1, cat.gpu(gpu_id), cat.links)
    return project.replace(cluster=cluster, layout=Layout(), pinned=(), pinned_batches=())


def compare_gpus(project: Project, traffic: Traffic, options: FleetOptions,
                 gpu_ids: Iterable[str] = COMPARED_GPUS) -> list[tuple[str, RankedLayout]]:
    """The same traffic on each GPU: the cheapest replica of TP 1, 2, 4 or 8 (PP 1) within one node
    of that GPU, at that GPU's preset price (the options' prices apply to the project's own GPU only)."""
    rows = []
    opts = FleetOptions(**{**options.__dict__, "reserved_usd_per_gpu_hour": None, "on_demand_usd_per_gpu_hour": None,
                           "spot_usd_per_gpu_hour": None, "burst": "on-demand"})
    for gpu in gpu_ids:
        try:
            p = _gpu_project(project, gpu)
        except StudioError as exc:
            rows.append((gpu, RankedLayout(Layout(), None, exc.message)))
            continue
        gpus = p.cluster.num_gpus
        tps = [t for t in (1, 2, 4, 8) if t <= gpus and gpus % t == 0 and project.model.num_attention_heads % t == 0]
        ranked = rank_layouts(p, traffic, opts, [Layout(tp=t, pp=1, dp=gpus // t) for t in tps])
        best = ranked[0] if ranked and ranked[0].result is not None else None
        reason = "; ".join(f"{r.layout.label}: {r.reason}" for r in ranked if r.result is None)
        rows.append((gpu, best or RankedLayout(Layout(), None, reason or "no layout fits one node")))
    return rows
