"""Serving a plan under load: the request simulation and the latency–throughput curve of a layout.

:func:`simulate_plan` runs the discrete-event simulation (:mod:`studio.engine.serving.simulate`) for the
project's load (or another one) and gives means and p50/p90/p99; :func:`load_curve` sweeps the
request rate from light load to saturation with the closed form (and, when asked, the simulation
for percentiles). Both use the same iteration model, token budget, KV capacity and batch limit as
:func:`studio.engine.evaluate`, so their figures agree with the plan's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import CalibrationProfile, Project
from studio.core.workload import Load
from studio.engine.fabric.topology import topology_of
from studio.engine.kv_tiers.draws import PrefixDraws
from studio.engine.kv_tiers.prefix_cache import PrefixCacheEstimate, batch_with_shared_prefix
from studio.engine.plan.costs import (
    project_batch_limit,
    project_budget,
    project_costs,
    with_prefix_load,
)
from studio.engine.plan.evaluate import constants_for, evaluate, resolve_calibration
from studio.engine.plan.fits import memory_fit
from studio.engine.plan.validate import check_layout
from studio.engine.serving.load import open_loop
from studio.engine.serving.simulate import SimulationResult, simulate
from studio.engine.step.constants import Constants
from studio.engine.step.iteration import IterationModel


@dataclass(frozen=True)
class ServingSetup:
    """What the load models need of one layout of a project."""

    model: IterationModel
    replicas: int
    micro_batches: int
    budget: int
    running_cap: int  # sequences one replica runs at once
    kv_tokens: float  # KV capacity of one replica, tokens
    isl: int
    osl: int
    batch: int  # the plan's batch per replica
    gpus: int
    prefix: PrefixDraws | None = None  # prefix caching's per-request hits (None: off, or nothing repeats)
    cached: float = 0.0  # mean prompt tokens per request served from the prefix cache

    @property
    def prefill_isl(self) -> int:
        """Prompt tokens the mean request prefills (``isl`` less what the prefix cache serves), for
        the closed-form load models; the simulation draws each request's own."""
        return max(1, round(self.isl - self.cached))


def serving_setup(
    project: Project,
    layout: Layout | None = None,
    *,
    calibration: CalibrationProfile | None = None,
    constants: Constants | None = None,
) -> ServingSetup:
    """The iteration model and limits of ``layout`` (default: the project's).

    Raises
    ------
    StudioError
        If the layout cannot exist, or its weights leave no KV cache for one request.
    """
    layout = project.layout if layout is None else layout
    cal = resolve_calibration(project, calibration)
    c = constants_for(cal, constants)
    model, wl = project.model, project.workload
    placement = check_layout(layout, project.cluster, model)
    topo = topology_of(project.cluster, cal.link_fits if cal else None)
    budget = project_budget(project, layout, c)
    lc = project_costs(project, layout, placement, topo, c)
    _, _, max_seqs, cap_tokens, _ = memory_fit(lc, wl.isl + wl.osl)
    planned = planned_prefix(project, layout, calibration=cal, constants=constants)
    prefix = planned[0] if planned is not None else None
    if planned is not None:  # the plan's iteration model: the suffix attends to the hits, their mean loads
        lc = with_prefix_load(project, layout, lc, planned[1])
    if prefix is not None and prefix.shared_tokens and max_seqs >= 1:  # the system prompt is held once
        max_seqs = batch_with_shared_prefix(cap_tokens, wl.isl + wl.osl, prefix.shared_tokens)
    if max_seqs < 1:
        raise StudioError(
            f"the KV cache of layout TP{layout.tp}×PP{layout.pp} holds {cap_tokens:,} tokens, less than one "
            f"request of {wl.isl + wl.osl:,} (isl + osl): nothing can be served"
        )
    cap = max(1, min(project_batch_limit(project, layout), max_seqs))
    batch = cap if wl.batch == "auto" else min(int(wl.batch), cap)
    im = IterationModel(lc, c)
    return ServingSetup(  # the layout's micro-batches whatever the batch, as in evaluate's load model
        model=im, replicas=layout.replicas, micro_batches=max(1, layout.micro_batches),
        budget=budget, running_cap=cap,
        kv_tokens=float(cap_tokens), isl=wl.isl, osl=wl.osl, batch=batch, gpus=layout.world_size,
        prefix=prefix, cached=_cached_tokens(prefix, wl.isl),
    )


def _cached_tokens(prefix: PrefixDraws | None, isl: int) -> float:
    if prefix is None:
        return 0.0
    return isl * (prefix.shared_share + sum(prefix.tier_share))


def planned_prefix(
    project: Project,
    layout: Layout,
    *,
    calibration: CalibrationProfile | None = None,
    constants: Constants | None = None,
) -> tuple[PrefixDraws, PrefixCacheEstimate] | None:
    """What the simulation draws each request's prefix hit from: the plan's hit rate per tier
    (:func:`studio.engine.evaluate`'s ``prefix_cache``) split into the system prompt every request
    finds and the rest of the reusable prompt, and the node's links a host / NVMe hit is loaded
    over; with the plan's mean estimate (for the closed-form models). None when prefix caching is
    off or nothing repeats (the figures are then those without)."""
    from studio.engine.kv_tiers.tiers import block_tokens, load_gbps, load_overlaps, prefix_cache_on

    if not prefix_cache_on(project):
        return None
    plan = evaluate(project.replace(layout=layout), calibration=calibration, constants=constants, details=False)
    pc = plan.prefix_cache
    if pc is None:
        return None
    wl, sv = project.workload, project.serving
    isl = float(wl.isl)
    r = wl.reuse
    tiers = [pc["hit_rate_hbm"], pc["hit_rate_host"], pc["hit_rate_disk"]]
    # the system prompt is found by every request once a tier holds it: take it from the first tiers
    shared = min(r.system_prompt_tokens / isl, sum(tiers)) if r.hit_rate is None else 0.0
    left = shared
    for k in range(3):
        take = min(left, tiers[k])
        tiers[k] -= take
        left -= take
    history_and_docs = r.mean_history_tokens() + r.document_share * max(isl - r.system_prompt_tokens - r.mean_history_tokens(), 0.0)
    reusable = history_and_docs / isl if r.hit_rate is None else 1.0
    gpus = layout.tp * layout.pp
    kv = project.model.kv_bytes_per_token(sv.kv_dtype)
    host_gbps, disk_gbps = load_gbps(gpus, sv.kv_tiers.host_link_gbps)
    est = PrefixCacheEstimate(
        hit_rate=pc["hit_rate"], hit_by_tier=(pc["hit_rate_hbm"], pc["hit_rate_host"], pc["hit_rate_disk"]),
        prompt_tokens=pc["prompt_tokens"], computed_tokens=pc["prefilled_tokens"],
        shared_tokens=int(pc["shared_tokens"]), window_s=(math.inf, math.inf, math.inf),
    )
    return PrefixDraws(
        shared_share=shared, reusable_share=max(reusable, sum(tiers)), tier_share=(tiers[0], tiers[1], tiers[2]),
        load_ms_per_token=(kv / (host_gbps * 1e9) * 1e3, kv / (disk_gbps * 1e9) * 1e3),
        shared_tokens=int(pc["shared_tokens"]) if shared > 0 else 0,
        overlaps=load_overlaps(sv.runtime), block_tokens=block_tokens(sv.runtime),
    ), est


def simulate_plan(
    project: Project,
    layout: Layout | None = None,
    *,
    load: Load | None = None,
    calibration: CalibrationProfile | None = None,
    constants: Constants | None = None,
) -> SimulationResult:
    """Simulate ``load`` (default: the project's workload load) on ``layout``.

    A closed loop without a concurrency runs the plan's batch per replica.
    """
    s = serving_setup(project, layout, calibration=calibration, constants=constants)
    ld = load or project.workload.load
    return simulate(
        s.model, ld, s.isl, s.osl, budget=s.budget, running_cap=s.running_cap, kv_tokens=s.kv_tokens,
        micro_batches=s.micro_batches, replicas=s.replicas, default_concurrency=s.batch, prefix=s.prefix,
    )


@dataclass(frozen=True)
class LoadCurve:
    """Figures against the request rate (all replicas); arrays of equal length."""

    rate_per_s: np.ndarray
    ttft_ms: np.ndarray  # mean (closed form)
    tpot_ms: np.ndarray
    e2e_ms: np.ndarray
    tokens_per_s_per_gpu: np.ndarray
    tokens_per_s_per_user: np.ndarray
    saturation_rate_per_s: float
    ttft_p99_ms: np.ndarray | None = None  # from the simulation, when asked
    tpot_p99_ms: np.ndarray | None = None


def load_curve(
    project: Project,
    layout: Layout | None = None,
    *,
    points: int = 16,
    percentiles: bool = False,
    requests: int = 600,
    calibration: CalibrationProfile | None = None,
    constants: Constants | None = None,
) -> LoadCurve:
    """Latency and throughput from 5 % to 97 % of the saturation rate (Poisson arrivals).

    Parameters
    ----------
    percentiles:
        Also simulate ``requests`` requests at each rate for p99 TTFT/TPOT (slower: ~tens of ms each).
    """
    s = serving_setup(project, layout, calibration=calibration, constants=constants)
    _, lam_max = open_loop(s.model, 1e-9, s.micro_batches, s.prefill_isl, s.osl, s.budget, s.running_cap,
                           cached=s.cached)
    fracs = np.linspace(0.05, 0.97, max(2, points))
    rates = fracs * lam_max * s.replicas
    cols: dict[str, list[float]] = {k: [] for k in ("ttft", "tpot", "e2e", "tps")}
    p99_ttft: list[float] = []
    p99_tpot: list[float] = []
    for r in rates:
        st, _ = open_loop(s.model, r / s.replicas, s.micro_batches, s.prefill_isl, s.osl, s.budget, s.running_cap,
                          cached=s.cached)
        cols["ttft"].append(float(st.ttft_ms[0]))
        cols["tpot"].append(float(st.tpot_ms[0]))
        cols["e2e"].append(float(st.e2e_ms[0]))
        cols["tps"].append(float(st.output_tokens_per_s[0]) * s.replicas / s.gpus)
        if percentiles:
            sim = simulate(s.model, Load(mode="rate", rate_per_s=float(r), num_requests=requests), s.isl, s.osl,
                           budget=s.budget, running_cap=s.running_cap, kv_tokens=s.kv_tokens,
                           micro_batches=s.micro_batches, replicas=s.replicas, prefix=s.prefix)
            p99_ttft.append(sim.ttft.p99)
            p99_tpot.append(sim.tpot.p99)
    tpot = np.array(cols["tpot"])
    return LoadCurve(
        rate_per_s=rates, ttft_ms=np.array(cols["ttft"]), tpot_ms=tpot, e2e_ms=np.array(cols["e2e"]),
        tokens_per_s_per_gpu=np.array(cols["tps"]), tokens_per_s_per_user=np.where(tpot > 0, 1e3 / tpot, 0.0),
        saturation_rate_per_s=lam_max * s.replicas,
        ttft_p99_ms=np.array(p99_ttft) if percentiles else None,
        tpot_p99_ms=np.array(p99_tpot) if percentiles else None,
    )
