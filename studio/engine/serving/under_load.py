"""Serving a plan under load: the request simulation and the latency–throughput curve of a layout.

:func:`simulate_plan` runs the discrete-event simulation (:mod:`studio.engine.serving.simulate`) for the
project's load (or another one) and gives means and p50/p90/p99; :func:`load_curve` sweeps the
request rate from light load to saturation with the closed form (and, when asked, the simulation
for percentiles). Both use the same iteration model, token budget, KV capacity and batch limit as
:func:`studio.engine.evaluate`, so their figures agree with the plan's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import CalibrationProfile, Project
from studio.core.workload import Load
from studio.engine.fabric.topology import topology_of
from studio.engine.plan.costs import project_budget, project_costs
from studio.engine.plan.evaluate import constants_for, resolve_calibration
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
    if max_seqs < 1:
        raise StudioError(
            f"the KV cache of layout TP{layout.tp}×PP{layout.pp} holds {cap_tokens:,} tokens, less than one "
            f"request of {wl.isl + wl.osl:,} (isl + osl): nothing can be served"
        )
    cap = max(1, min(wl.max_batch, max_seqs))
    batch = cap if wl.batch == "auto" else min(int(wl.batch), cap)
    m_eff = max(1, min(layout.micro_batches, batch))
    im = IterationModel(lc, c)
    return ServingSetup(
        model=im, replicas=layout.replicas, micro_batches=m_eff,
        budget=budget, running_cap=cap,
        kv_tokens=float(cap_tokens), isl=wl.isl, osl=wl.osl, batch=batch, gpus=layout.world_size,
    )


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
        micro_batches=s.micro_batches, replicas=s.replicas, default_concurrency=s.batch,
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
    _, lam_max = open_loop(s.model, 1e-9, s.micro_batches, s.isl, s.osl, s.budget, s.running_cap)
    fracs = np.linspace(0.05, 0.97, max(2, points))
    rates = fracs * lam_max * s.replicas
    cols: dict[str, list[float]] = {k: [] for k in ("ttft", "tpot", "e2e", "tps")}
    p99_ttft: list[float] = []
    p99_tpot: list[float] = []
    for r in rates:
        st, _ = open_loop(s.model, r / s.replicas, s.micro_batches, s.isl, s.osl, s.budget, s.running_cap)
        cols["ttft"].append(float(st.ttft_ms[0]))
        cols["tpot"].append(float(st.tpot_ms[0]))
        cols["e2e"].append(float(st.e2e_ms[0]))
        cols["tps"].append(float(st.output_tokens_per_s[0]) * s.replicas / s.gpus)
        if percentiles:
            sim = simulate(s.model, Load(mode="rate", rate_per_s=float(r), num_requests=requests), s.isl, s.osl,
                           budget=s.budget, running_cap=s.running_cap, kv_tokens=s.kv_tokens,
                           micro_batches=s.micro_batches, replicas=s.replicas)
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
